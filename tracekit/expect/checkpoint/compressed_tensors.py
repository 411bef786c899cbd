"""compressed-tensors (llm-compressor) and AMD Quark configs: config groups of quantization
arguments, their targets and the names they ignore.

compressed-tensors: ``config_groups.<g>`` = ``{targets, weights, input_activations}``;
``ignore`` first, then a group's target: an exact module name, a ``re:`` regex, or a class name
(``Linear``) — in that order of precedence when several groups match (compressed-tensors
``quantization/lifecycle/apply.py`` ``find_name_or_class_matches``; vLLM
``compressed_tensors.py`` ``get_scheme``). Older checkpoints keep the same block under the
``compression_config`` key (still read by vLLM and SGLang), which is why a config with only
that key is compressed-tensors, not "unquantized".

Quark: ``exclude`` (names and ``re:`` patterns), then ``layer_quant_config`` (per-name
wildcards), ``layer_type_quant_config`` (per module class), then ``global_quant_config``
(vLLM ``quark/quark.py`` ``_find_matched_config``). A weight spec may be a list (W4A8:
FP8 then INT4): the stored weights are the narrowest.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracekit.expect.checkpoint.declaration import (
    Declaration,
    LayerScheme,
    ModuleRule,
    combine,
    main_layer,
    not_understood,
    strings,
)
from tracekit.expect.checkpoint.matching import CLASS_TARGETS
from tracekit.expect.checkpoint.schemes import args_kind, bits_of, everywhere, excluded, scheme


def compressed_tensors(config: Mapping[str, Any], source: Path,
                       legacy: bool = False) -> Declaration:
    method = "compressed-tensors"
    groups = config.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return not_understood(method, "compressed-tensors config without config_groups", source)
    ignore = excluded(strings(config.get("ignore")), "ct", "ignore")
    named: list[ModuleRule] = []
    regexes: list[ModuleRule] = []
    classes: list[ModuleRule] = []
    layers: list[LayerScheme] = []
    for name, group in groups.items():
        if not isinstance(group, Mapping):
            continue
        weights = args_kind(group.get("weights"))
        activations = args_kind(group.get("input_activations"))
        if weights is None:
            continue  # output/KV-only groups quantize no GEMM operand
        targets = tuple(strings(group.get("targets"))) or ("Linear",)
        layer = scheme(weights, activations, targets=targets)
        layers.append(layer)
        entry = f"config_groups.{name}.targets"
        for target in targets:
            if target in CLASS_TARGETS:
                classes.append(everywhere(layer, f"{entry} {target}"))
            elif target.startswith("re:"):
                regexes.append(ModuleRule(target, "ct", layer, entry))
            else:
                named.append(ModuleRule(target, "ct", layer, entry))
    if not layers:
        return not_understood(method, "compressed-tensors config_groups quantize no weights",
                              source)
    kv = args_kind(config.get("kv_cache_scheme"))
    fmt = config.get("format")
    main = main_layer(tuple(layers))
    label = f"{main.quant} {main.scheme} (compressed-tensors"
    label += f", {fmt})" if isinstance(fmt, str) and fmt else ")"
    declaration = combine(tuple(layers), label, method, source,
                          tuple(r.pattern for r in ignore), kv,
                          (*ignore, *named, *regexes, *classes))
    if legacy:
        from dataclasses import replace

        declaration = replace(declaration, notes=(
            "read from the legacy compression_config key (older compressed-tensors exports)",))
    return declaration


_QUARK_DTYPES = {
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "int8": "int8",
    "uint8": "int8",
    "int4": "int4",
    "uint4": "int4",
    "fp4": "mxfp4",
    "mx_fp4": "mxfp4",
    "mxfp4": "mxfp4",
    "fp6_e2m3": "mxfp6",
    "fp6_e3m2": "mxfp6",
    "mx_fp6": "mxfp6",
    "mxfp6": "mxfp6",
}


def _quark_kind(block: Any) -> str | None:
    specs = block if isinstance(block, list) else [block]
    kinds = [
        _QUARK_DTYPES.get(str(spec.get("dtype", "")).lower(), str(spec.get("dtype")).lower())
        for spec in specs if isinstance(spec, Mapping) and spec.get("dtype")
    ]
    if not kinds:
        return None
    return min(kinds, key=lambda k: int(bits_of(k)) if bits_of(k).isdigit() else 99)


def _quark_scheme(spec: Any) -> LayerScheme | None:
    if not isinstance(spec, Mapping):
        return None
    weights = _quark_kind(spec.get("weight"))
    if weights is None:
        return None
    return scheme(weights, _quark_kind(spec.get("input_tensors")))


def quark(config: Mapping[str, Any], source: Path) -> Declaration:
    method = "quark"
    rules: list[ModuleRule] = list(excluded(strings(config.get("exclude")), "ct", "exclude"))
    layers: list[LayerScheme] = []
    per_name = config.get("layer_quant_config")
    if isinstance(per_name, Mapping):
        for pattern, spec in per_name.items():
            layer = _quark_scheme(spec)
            if layer is not None:
                layers.append(layer)
                rules.append(ModuleRule(str(pattern), "wildcard", layer, "layer_quant_config"))
    per_type = config.get("layer_type_quant_config")
    if isinstance(per_type, Mapping):
        for class_name, spec in per_type.items():
            layer = _quark_scheme(spec)
            if layer is not None:
                layers.append(layer)
                rules.append(everywhere(layer, f"layer_type_quant_config {class_name}"))
    glob = _quark_scheme(config.get("global_quant_config"))
    if glob is not None:
        layers.append(glob)
        rules.append(everywhere(glob, "global_quant_config"))
    if not layers:
        return not_understood(method, "a Quark config whose global_quant_config and "
                              "layer_quant_config give no weight dtype", source)
    kv = None
    kv_block = config.get("kv_cache_quant_config")
    if isinstance(kv_block, Mapping) and kv_block:
        first = next(iter(kv_block.values()))
        kv = _quark_kind(first.get("output_tensors") if isinstance(first, Mapping) else None)
    main = main_layer(tuple(layers))
    names = tuple(rule.pattern for rule in rules if rule.scheme is None)
    return combine(tuple(layers), f"{main.quant} {main.scheme} (Quark)", method, source, names,
                   kv, tuple(rules))
