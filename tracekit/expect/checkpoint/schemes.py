"""The scheme vocabulary every format reader shares: format words, WxAy names, expected paths,
and the rules that say which modules a scheme applies to.

A reader turns its format's fields into :class:`LayerScheme` values (weights and activations as
format words: ``nvfp4``, ``fp8``, ``int4`` …; None activations = 16-bit, i.e. weight-only) and
:class:`ModuleRule` values (which modules get which scheme, which stay 16-bit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tracekit.expect.checkpoint.declaration import (
    Declaration,
    LayerScheme,
    ModuleRule,
    combine,
    strings,
)

#: the groups a class target ("Linear", a method that quantizes every linear layer) reaches;
#: lm_head, embeddings, routers and vision towers stay 16-bit unless a target names them
LINEAR_GROUPS = ("attention", "mlp", "moe_experts")


def args_kind(args: Mapping[str, Any] | None) -> str | None:
    """A compressed-tensors QuantizationArgs block → a format word; None means 16-bit."""
    if not isinstance(args, Mapping):
        return None
    bits = args.get("num_bits")
    kind = str(args.get("type", "int")).lower()
    group = args.get("group_size")
    if not isinstance(bits, int) or bits >= 16:
        return None
    if kind == "float":
        if bits == 4:
            return {16: "nvfp4", 32: "mxfp4"}.get(group if isinstance(group, int) else 0, "fp4")
        if bits == 8:
            return "mxfp8" if group == 32 else "fp8"
        if bits == 6:
            return "mxfp6" if group == 32 else "fp6"
        return f"fp{bits}"
    return f"int{bits}"


def activation_path(activations: str | None) -> str:
    """The path a GEMM with these quantized activations computes (None: weight-only)."""
    if activations is None:
        return "weight_only"
    if activations in {"nvfp4", "mxfp4", "fp4"}:
        return "fp4"
    if activations.startswith(("fp8", "mxfp8", "fp6", "mxfp6")):
        return "fp8"  # FP6 MMA runs at FP8 rate (kind::f8f6f4)
    if activations in {"int8", "q8_1"}:
        return "int8"
    return "unknown"


def bits_of(word: str | None) -> str:
    if word is None:
        return "16"
    digits = "".join(ch for ch in word if ch.isdigit())
    if word.startswith("mx") or word.startswith("nv"):
        digits = digits[:1]
    return digits or "?"


def scheme(weights: str | None, activations: str | None, quant: str | None = None,
           targets: tuple[str, ...] = ("*",)) -> LayerScheme:
    """A LayerScheme from format words: ``W<bits>A<bits>`` and the path it computes."""
    path = activation_path(activations) if weights is not None else "unknown"
    return LayerScheme(
        targets=targets,
        weights=weights,
        activations=activations,
        scheme=f"W{bits_of(weights)}A{bits_of(activations)}",
        path=path,
        quant=quant or (weights or activations or "?").upper(),
    )


def excluded(patterns: Iterable[str], match: str, entry: str) -> tuple[ModuleRule, ...]:
    """Rules keeping the modules named by ``patterns`` in 16-bit math."""
    return tuple(ModuleRule(str(p), match, None, entry) for p in patterns if str(p))


def everywhere(layer: LayerScheme, entry: str,
               groups: tuple[str, ...] = LINEAR_GROUPS) -> ModuleRule:
    """A class rule: ``layer`` for every linear module of ``groups``."""
    return ModuleRule("*", "class", layer, entry, groups=groups)


def single(layer: LayerScheme, format_name: str, method: str, source: Path,
           config: Mapping[str, Any], rules: tuple[ModuleRule, ...],
           kv_cache: str | None = None) -> Declaration:
    """A declaration with one scheme (plus its exclusions)."""
    names = tuple(rule.pattern for rule in rules if rule.scheme is None)
    return combine((layer,), format_name, method, source, names, kv_cache, rules)


def ignore_lists(config: Mapping[str, Any], *keys: str) -> list[str]:
    found: list[str] = []
    for key in keys:
        found += strings(config.get(key))
    return found
