"""One reader per ``quant_method``: the layer groups and path each declares.

ModelOpt / TensorRT-LLM (``quant_algo``, mixed precision), compressed-tensors
(``config_groups`` of QuantizationArgs), HF ``fp8`` / ``fbgemm_fp8``, ``mxfp4`` (gpt-oss), GPTQ /
AWQ / AutoRound, bitsandbytes and AMD Quark. ModelOpt's algorithms are the ``quant_algo`` table
of ``rules/_checkpoints.toml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from tracekit.datafiles import load_table
from tracekit.errors import ConfigError
from tracekit.expect.checkpoint.declaration import (
    CHECKPOINTS_FILE,
    TORCH_DTYPES,
    Declaration,
    LayerScheme,
    combine,
    main_layer,
    strings,
)

# ---------------------------------------------------------------------------------------------
# ModelOpt / TensorRT-LLM


@cache
def _quant_algos() -> dict[str, dict[str, Any]]:
    return dict(load_table(CHECKPOINTS_FILE).get("quant_algo", {}))


def modelopt_kv(section: Mapping[str, Any]) -> str | None:
    algo = section.get("kv_cache_quant_algo")
    if isinstance(algo, str) and algo.upper() not in {"", "NONE", "NO_QUANT"}:
        return algo.lower()
    scheme = section.get("kv_cache_scheme")
    if isinstance(scheme, Mapping):
        return args_kind(scheme)
    return None


def _algo_layer(algo: str, source: Path, targets: tuple[str, ...]) -> LayerScheme:
    row = _quant_algos().get(algo.upper())
    if row is None:
        raise ConfigError(
            f"{source}: unknown ModelOpt/TensorRT-LLM quant_algo {algo!r}",
            hint="known: " + ", ".join(sorted(_quant_algos())),
        )
    return LayerScheme(
        targets=targets,
        weights=row.get("weights"),
        activations=row.get("activations"),
        scheme=row["scheme"],
        path=row["path"],
        quant=row["quant"],
    )


def modelopt(section: Mapping[str, Any], source: Path, producer: str = "modelopt") -> Declaration:
    inner = section.get("quantization")
    if isinstance(inner, Mapping) and "quant_algo" in inner:
        section = {**section, **inner}
    algo = section.get("quant_algo")
    if not isinstance(algo, str) or not algo:
        raise ConfigError(f"{source}: ModelOpt config without a quant_algo")
    excluded = tuple(strings(section.get("exclude_modules")) + strings(section.get("ignore")))
    kv = modelopt_kv(section)
    display = "ModelOpt" if producer.lower() == "modelopt" else producer
    notes: list[str] = []

    if algo.upper() == "MIXED_PRECISION":
        per_layer = section.get("quantized_layers")
        if not isinstance(per_layer, Mapping) or not per_layer:
            raise ConfigError(f"{source}: MIXED_PRECISION without quantized_layers")
        grouped: dict[str, list[str]] = {}
        for name, entry in per_layer.items():
            layer_algo = entry.get("quant_algo") if isinstance(entry, Mapping) else entry
            grouped.setdefault(str(layer_algo), []).append(str(name))
        layers = tuple(_algo_layer(a, source, tuple(names)) for a, names in grouped.items())
        return combine(layers, f"mixed precision ({display})", "modelopt", source, excluded, kv)

    layer = _algo_layer(algo, source, ("*",))
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
        layer = _algo_layer("W4A16_NVFP4", source, ("*",))
        notes.append("quant_algo NVFP4 but every config group has input_activations null: W4A16")
    declaration = combine(
        (layer,), f"{layer.quant} {layer.scheme} ({display})", "modelopt", source, excluded, kv
    )
    return replace(declaration, notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# compressed-tensors (llm-compressor)


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


def _activation_path(activations: str | None) -> str:
    if activations is None:
        return "weight_only"
    if activations in {"nvfp4", "mxfp4", "fp4"}:
        return "fp4"
    if activations.startswith(("fp8", "mxfp8", "fp6", "mxfp6")):
        return "fp8"  # FP6 MMA runs at FP8 rate (kind::f8f6f4)
    if activations == "int8":
        return "int8"
    return "unknown"


def _bits(word: str | None) -> str:
    if word is None:
        return "16"
    digits = "".join(ch for ch in word if ch.isdigit())
    return digits or "?"


def _ct_layer(group: Mapping[str, Any], name: str) -> LayerScheme | None:
    weights = args_kind(group.get("weights"))
    activations = args_kind(group.get("input_activations"))
    if weights is None and activations is None:
        return None
    targets = tuple(strings(group.get("targets"))) or (name,)
    path = _activation_path(activations) if weights is not None else "unknown"
    scheme = f"W{_bits(weights)}A{_bits(activations)}"
    return LayerScheme(
        targets=targets,
        weights=weights,
        activations=activations,
        scheme=scheme,
        path=path,
        quant=(weights or activations or "?").upper(),
    )


def compressed_tensors(config: Mapping[str, Any], source: Path) -> Declaration:
    groups = config.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ConfigError(f"{source}: compressed-tensors config without config_groups")
    layers = tuple(
        layer
        for name, group in groups.items()
        if isinstance(group, Mapping) and (layer := _ct_layer(group, str(name))) is not None
    )
    if not layers:
        raise ConfigError(f"{source}: compressed-tensors config_groups quantize nothing")
    kv = args_kind(config.get("kv_cache_scheme"))
    fmt = config.get("format")
    main = main_layer(layers)
    name = f"{main.quant} {main.scheme} (compressed-tensors"
    name += f", {fmt})" if isinstance(fmt, str) and fmt else ")"
    return combine(
        layers, name, "compressed-tensors", source, tuple(strings(config.get("ignore"))), kv
    )


# ---------------------------------------------------------------------------------------------
# Other quant_method values


def fp8(config: Mapping[str, Any], source: Path, method: str) -> Declaration:
    block = config.get("weight_block_size")
    dynamic = str(config.get("activation_scheme", "dynamic"))
    quant = "FP8 block-128" if block else "FP8"
    if method == "fbgemm_fp8":
        quant = "FP8 per-channel"
    layer = LayerScheme(("*",), "fp8", "fp8", "W8A8", "fp8", quant)
    excluded = strings(config.get("modules_to_not_convert")) + strings(
        config.get("ignored_layers")
    )
    declaration = combine(
        (layer,),
        f"{quant} W8A8 ({method}, {dynamic} activations)",
        method,
        source,
        tuple(excluded),
        None,
    )
    return declaration


def mxfp4(config: Mapping[str, Any], source: Path) -> Declaration:
    layer = LayerScheme(("experts",), "mxfp4", None, "W4A16", "weight_only", "MXFP4")
    declaration = combine(
        (layer,),
        "MXFP4 W4A16 (mxfp4, gpt-oss)",
        "mxfp4",
        source,
        tuple(strings(config.get("modules_to_not_convert"))),
        None,
    )
    # vLLM may run MXFP4 x MXFP8 on sm100 and llama.cpp native W4A4 on Blackwell (`opted_in`:
    # docs/engines.md#checkpoint-declarations).
    return replace(
        declaration,
        alternatives=frozenset({"fp8", "fp4"}),
        notes=("MXFP4 is weight-only by declaration; engines may opt into MXFP8/FP4 activations",),
    )


def int_weight_only(config: Mapping[str, Any], source: Path, method: str) -> Declaration:
    bits = config.get("bits", config.get("w_bit", 4))
    group = config.get("group_size", config.get("q_group_size"))
    layer = LayerScheme(("*",), f"int{bits}", None, f"W{bits}A16", "weight_only", f"INT{bits}")
    detail = f", group {group}" if group else ""
    excluded = strings(config.get("modules_to_not_convert"))
    return combine(
        (layer,),
        f"INT{bits} W{bits}A16 ({method}{detail})",
        method.lower(),
        source,
        tuple(excluded),
        None,
    )


def bitsandbytes(config: Mapping[str, Any], source: Path) -> Declaration:
    excluded = tuple(strings(config.get("llm_int8_skip_modules")))
    compute = TORCH_DTYPES.get(
        str(config.get("bnb_4bit_compute_dtype", "")).removeprefix("torch.")
    )
    if config.get("load_in_4bit"):
        kind = str(config.get("bnb_4bit_quant_type", "fp4")).lower()
        layer = LayerScheme(("*",), kind, None, "W4A16", "weight_only", kind.upper())
        declaration = combine(
            (layer,), f"{kind.upper()} W4A16 (bitsandbytes)", "bitsandbytes", source, excluded, None
        )
        return replace(declaration, compute_dtype=compute)
    if config.get("load_in_8bit"):
        # LLM.int8(): activations are quantized to int8 per vector for an int8 matmul, outlier
        # columns stay 16-bit (Dettmers et al. 2022, arXiv:2208.07339).
        layer = LayerScheme(("*",), "int8", "int8", "W8A8", "int8", "INT8 LLM.int8()")
        return combine(
            (layer,), "INT8 W8A8 LLM.int8() (bitsandbytes)", "bitsandbytes", source, excluded, None
        )
    raise ConfigError(f"{source}: bitsandbytes config sets neither load_in_4bit nor load_in_8bit")


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
    "fp6_e2m3": "fp6",
    "fp6_e3m2": "fp6",
}


def quark(config: Mapping[str, Any], source: Path) -> Declaration:
    glob = config.get("global_quant_config")
    if not isinstance(glob, Mapping):
        raise ConfigError(f"{source}: quark config without global_quant_config")

    def kind(block: Any) -> str | None:
        if isinstance(block, list):
            block = block[0] if block else None
        if not isinstance(block, Mapping):
            return None
        return _QUARK_DTYPES.get(str(block.get("dtype", "")).lower(), str(block.get("dtype")))

    weights, activations = kind(glob.get("weight")), kind(glob.get("input_tensors"))
    if weights is None:
        raise ConfigError(f"{source}: quark global_quant_config has no weight dtype")
    layer = LayerScheme(
        ("*",),
        weights,
        activations,
        f"W{_bits(weights)}A{_bits(activations)}",
        _activation_path(activations),
        weights.upper(),
    )
    kv = None
    kv_block = config.get("kv_cache_quant_config")
    if isinstance(kv_block, Mapping) and kv_block:
        first = next(iter(kv_block.values()))
        kv = kind(first.get("output_tensors") if isinstance(first, Mapping) else None)
    return combine(
        (layer,),
        f"{layer.quant} {layer.scheme} (Quark)",
        "quark",
        source,
        tuple(strings(config.get("exclude"))),
        kv,
    )
