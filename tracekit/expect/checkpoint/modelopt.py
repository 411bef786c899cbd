"""NVIDIA ModelOpt and TensorRT-LLM checkpoint configs: ``quant_algo`` and its exclusions.

Two layouts carry the same fields: ``hf_quant_config.json`` (``{"producer": …, "quantization":
{"quant_algo", "kv_cache_quant_algo", "exclude_modules", …}}``, the older export) and
``config.json`` ``quantization_config`` with ``quant_method: modelopt`` (newer exports; ``ignore``
instead of ``exclude_modules``, often compressed-tensors style ``config_groups`` beside). One
``quant_algo`` applies to every linear layer not excluded; ``MIXED_PRECISION`` instead lists
each module's algorithm in ``quantized_layers`` — inline, or in a ``quant_cfg.json`` beside the
config (TensorRT-LLM checkpoints) — and modules it does not list stay unquantized (vLLM
``modelopt.py`` ``ModelOptMixedPrecisionConfig``). Patterns are ModelOpt wildcards
(:mod:`tracekit.expect.checkpoint.matching`, kind ``wildcard``). The algorithms are the
``quant_algo`` table of ``rules/_checkpoints.toml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from tracekit.datafiles import load_table
from tracekit.expect.checkpoint.declaration import (
    CHECKPOINTS_FILE,
    Declaration,
    LayerScheme,
    ModuleRule,
    combine,
    not_understood,
    strings,
)
from tracekit.expect.checkpoint.schemes import args_kind, everywhere, excluded

#: quant_algo values meaning "this module is not quantized"
_UNQUANTIZED = frozenset({"", "NONE", "NO_QUANT", "UNQUANTIZED", "BF16", "FP16"})


@cache
def _quant_algos() -> dict[str, dict[str, Any]]:
    return dict(load_table(CHECKPOINTS_FILE).get("quant_algo", {}))


def modelopt_kv(section: Mapping[str, Any]) -> str | None:
    algo = section.get("kv_cache_quant_algo")
    if isinstance(algo, str) and algo.upper() not in {"", "NONE", "NO_QUANT"}:
        return algo.lower()
    kv_scheme = section.get("kv_cache_scheme")
    if isinstance(kv_scheme, Mapping):
        return args_kind(kv_scheme)
    if isinstance(kv_scheme, str) and kv_scheme.upper() not in {"", "NONE"}:
        return kv_scheme.lower()
    return None


def algo_scheme(algo: str, targets: tuple[str, ...] = ("*",)) -> LayerScheme | None:
    """The scheme of a ModelOpt/TensorRT-LLM ``quant_algo`` (None: not in the table)."""
    row = _quant_algos().get(algo.upper())
    if row is None:
        return None
    return LayerScheme(
        targets=targets,
        weights=row.get("weights"),
        activations=row.get("activations"),
        scheme=row["scheme"],
        path=row["path"],
        quant=row["quant"],
    )


def modelopt(section: Mapping[str, Any], source: Path, producer: str = "modelopt",
             side_layers: Mapping[str, Any] | None = None) -> Declaration:
    """A ModelOpt (or TensorRT-LLM) declaration; ``side_layers`` is a ``quant_cfg.json``'s."""
    inner = section.get("quantization")
    if isinstance(inner, Mapping) and "quant_algo" in inner:
        section = {**section, **inner}
    method = "modelopt"
    display = "ModelOpt" if producer.lower() == "modelopt" else producer
    algo = section.get("quant_algo")
    if not isinstance(algo, str) or not algo:
        return not_understood(method, "a ModelOpt config without a quant_algo", source)
    kv = modelopt_kv(section)
    exclusions = (excluded(strings(section.get("exclude_modules")), "wildcard", "exclude_modules")
                  + excluded(strings(section.get("ignore")), "wildcard", "ignore"))
    names = tuple(rule.pattern for rule in exclusions)

    if algo.upper() == "MIXED_PRECISION":
        per_layer = section.get("quantized_layers")
        if not isinstance(per_layer, Mapping) or not per_layer:
            per_layer = (side_layers or {}).get("quantized_layers")
        if not isinstance(per_layer, Mapping) or not per_layer:
            return not_understood(method, "MIXED_PRECISION without quantized_layers (neither "
                                  "inline nor in a quant_cfg.json beside the config)", source)
        rules: list[ModuleRule] = list(exclusions)
        grouped: dict[str, list[str]] = {}
        for name, entry in per_layer.items():
            layer_algo = entry.get("quant_algo") if isinstance(entry, Mapping) else entry
            word = str(layer_algo or "")
            if word.upper() in _UNQUANTIZED:
                rules.append(ModuleRule(str(name), "wildcard", None, "quantized_layers",
                                        status="not_targeted"))
                continue
            grouped.setdefault(word, []).append(str(name))
        layers: list[LayerScheme] = []
        for word, module_names in grouped.items():
            layer = algo_scheme(word, tuple(module_names))
            if layer is None:
                return not_understood(method, f"quantized_layers uses quant_algo {word!r}, "
                                      "which is not in rules/_checkpoints.toml", source)
            layers.append(layer)
            rules += [ModuleRule(name, "wildcard", layer, f"quantized_layers: {word}")
                      for name in module_names]
        if not layers:
            return not_understood(method, "MIXED_PRECISION whose quantized_layers quantize "
                                  "nothing", source)
        return combine(tuple(layers), f"mixed precision ({display})", method, source, names,
                       kv, tuple(rules))

    layer = algo_scheme(algo)
    if layer is None:
        return not_understood(method, f"quant_algo {algo!r} is not in rules/_checkpoints.toml "
                              f"(known: {', '.join(sorted(_quant_algos()))})", source)
    notes: list[str] = []
    groups = section.get("config_groups")
    if (
        layer.path == "fp4"
        and isinstance(groups, Mapping)
        and groups
        and all(
            isinstance(g, Mapping) and g.get("input_activations") is None for g in groups.values()
        )
    ):
        # vLLM modelopt.py re-routes NVFP4 whose every config group has no activations to W4A16.
        layer = algo_scheme("W4A16_NVFP4") or layer
        notes.append("quant_algo NVFP4 but every config group has input_activations null: W4A16")
    rules_all = (*exclusions, everywhere(layer, f"quant_algo {algo} (every linear layer not "
                                                "excluded)"))
    declaration = combine((layer,), f"{layer.quant} {layer.scheme} ({display})", method, source,
                          names, kv, rules_all)
    return replace(declaration, notes=tuple(notes))
