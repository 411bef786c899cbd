"""Readers of the other ``quant_method`` values: HF ``fp8``, ``mxfp4`` (gpt-oss), GPTQ and
GPTQModel, AWQ, AutoRound/INC, bitsandbytes, HQQ, torchao, FP-Quant, and the methods whose
scheme is fixed by their name (``rules/_checkpoints.toml`` ``[quant_method.*]``).

Each returns a :class:`Declaration` with its :class:`ModuleRule` list in the order the engine
resolves a module: the format's exclusions first, then per-module overrides, then the scheme
for every linear layer. How each list's names match modules (exact, substring, dot-separated
parts, wildcards, regexes) follows the engines, see :mod:`tracekit.expect.checkpoint.matching`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from tracekit.expect.checkpoint.declaration import (
    TORCH_DTYPES,
    Declaration,
    LayerScheme,
    ModuleRule,
    combine,
    not_understood,
    strings,
)
from tracekit.expect.checkpoint.schemes import everywhere, excluded, ignore_lists, scheme, single

# ---------------------------------------------------------------------------------------------
# HF fp8 (DeepSeek, Qwen3-FP8, MiniMax …) and its relatives


def fp8(config: Mapping[str, Any], source: Path, method: str) -> Declaration:
    """W8A8 FP8; ``weight_block_size`` [128, 128] = DeepSeek-style block scales, activations
    quantized per 1×128 group at run time. ``modules_to_not_convert`` / ``ignored_layers``
    name modules by dot-separated parts."""
    block = config.get("weight_block_size")
    dynamic = str(config.get("activation_scheme", "dynamic"))
    quant = "FP8 block-128" if block else "FP8"
    if method == "fbgemm_fp8":
        quant = "FP8 per-channel"
    elif method == "ptpc_fp8":
        quant = "FP8 per-token/per-channel"
    layer = LayerScheme(("*",), "fp8", "fp8", "W8A8", "fp8", quant)
    rules = (*excluded(ignore_lists(config, "modules_to_not_convert", "ignored_layers"),
                       "dotted", "modules_to_not_convert"),
             everywhere(layer, f"quant_method {method} (every linear layer not converted)"))
    declaration = single(layer, f"{quant} W8A8 ({method}, {dynamic} activations)", method,
                         source, config, rules)
    if config.get("scale_fmt"):
        declaration = replace(declaration, notes=(f"scale_fmt {config['scale_fmt']}",))
    return declaration


def mxfp4(config: Mapping[str, Any], source: Path) -> Declaration:
    """gpt-oss: MXFP4 MoE expert weights, 16-bit activations; vLLM builds every other linear
    layer unquantized ("MXFP4 linear layer is not implemented", ``mxfp4.py``)."""
    layer = LayerScheme(("experts",), "mxfp4", None, "W4A16", "weight_only", "MXFP4")
    rules = (*excluded(strings(config.get("modules_to_not_convert")), "wildcard",
                       "modules_to_not_convert"),
             everywhere(layer, "quant_method mxfp4 (the MoE experts)", groups=("moe_experts",)))
    declaration = single(layer, "MXFP4 W4A16 (mxfp4, gpt-oss)", "mxfp4", source, config, rules)
    # vLLM may run MXFP4 x MXFP8 on sm100 and llama.cpp native W4A4 on Blackwell (`opted_in`:
    # docs/engines.md#checkpoint-declarations).
    return replace(
        declaration,
        alternatives=frozenset({"fp8", "fp4"}),
        notes=("MXFP4 is weight-only by declaration; engines may opt into MXFP8/FP4 activations",),
    )


# ---------------------------------------------------------------------------------------------
# Integer weight-only: GPTQ / GPTQModel / AWQ / AutoRound / INC / Marlin / BitBLAS / MoE-WNA16


def _int_layer(bits: Any, group: Any, quant: str) -> LayerScheme:
    """An integer weight-only scheme (the group size is in the declaration's format string)."""
    return LayerScheme(("*",), f"int{bits}", None, f"W{bits}A16", "weight_only",
                       f"INT{bits}" if quant == "INT" else quant)


def int_weight_only(config: Mapping[str, Any], source: Path, method: str,
                    label: str | None = None) -> Declaration:
    """GPTQ-family and AWQ-family checkpoints: ``bits`` (``w_bit``), ``group_size``
    (``q_group_size``); AWQ ``modules_to_not_convert`` (substrings, vLLM
    ``is_layer_skipped_awq``); GPTQ ``lm_head: true`` (vLLM quantizes ParallelLMHead then),
    ``modules_in_block_to_quantize`` (only those leaves), and GPTQModel ``dynamic``: ``-:regex``
    skips matching modules, ``+:regex`` or a plain regex overrides bits/group size (vLLM
    ``gptq_utils.get_dynamic_override``; SGLang ``test_gptqmodel_dynamic.py``)."""
    bits = config.get("bits", config.get("w_bit", config.get("weight_bits", 4)))
    group = config.get("group_size", config.get("q_group_size"))
    label = label or method.upper()
    base = _int_layer(bits, group, "INT")
    rules: list[ModuleRule] = []
    layers = [base]
    dynamic = config.get("dynamic")
    if isinstance(dynamic, Mapping):
        for key, override in dynamic.items():
            key = str(key)
            if key.startswith("-:"):
                rules.append(ModuleRule(key[2:], "regex", None, "dynamic (-: skips)"))
                continue
            pattern = key[2:] if key.startswith("+:") else key
            values = override if isinstance(override, Mapping) else {}
            layer = _int_layer(values.get("bits", bits), values.get("group_size", group), "INT")
            layers.append(layer)
            rules.append(ModuleRule(pattern, "regex", layer, "dynamic (override)"))
    rules += excluded(strings(config.get("modules_to_not_convert")), "substring",
                      "modules_to_not_convert")
    if config.get("lm_head") is True:
        rules.append(ModuleRule("lm_head", "dotted", base, "lm_head: true"))
    in_block = config.get("modules_in_block_to_quantize")
    if isinstance(in_block, list) and in_block:
        leaves = [leaf for row in in_block for leaf in (row if isinstance(row, list) else [row])]
        rules += [ModuleRule(str(leaf), "dotted", base, "modules_in_block_to_quantize")
                  for leaf in leaves]
        rules.append(ModuleRule("*", "class", None, "not in modules_in_block_to_quantize",
                                status="not_targeted", groups=("attention", "mlp",
                                                               "moe_experts")))
    else:
        rules.append(everywhere(base, f"quant_method {method} (every linear layer)"))
    detail = f", group {group}" if group else ""
    distinct = tuple(dict.fromkeys(layers))
    declaration = combine(distinct, f"INT{bits} W{bits}A16 ({label}{detail})", method,
                          source, tuple(r.pattern for r in rules if r.scheme is None), None,
                          tuple(rules))
    return declaration


def auto_round(config: Mapping[str, Any], source: Path, method: str) -> Declaration:
    """AutoRound / Intel Neural Compressor: ``bits``, ``group_size``, ``data_type`` (``int``,
    ``nv_fp``, ``mx_fp``), ``act_bits`` (16: weight-only), ``extra_config`` per-module
    overrides (vLLM ``inc.py`` / ``auto_round.py``)."""
    bits = config.get("bits", 4)
    act_bits = config.get("act_bits", 16)
    kind = str(config.get("data_type", "int")).lower()
    act_kind = str(config.get("act_data_type", kind)).lower()
    weights = _round_word(kind, bits)
    activations = _round_word(act_kind, act_bits) if isinstance(act_bits, int) and act_bits < 16 \
        else None
    layer = scheme(weights, activations, quant=f"{weights.upper()} ({kind})")
    rules: list[ModuleRule] = []
    extra = config.get("extra_config")
    if isinstance(extra, Mapping):
        for name, values in extra.items():
            if not isinstance(values, Mapping):
                continue
            b = values.get("bits", bits)
            if isinstance(b, int) and b >= 16:
                rules.append(ModuleRule(str(name), "dotted", None, "extra_config"))
            else:
                rules.append(ModuleRule(str(name), "dotted",
                                        scheme(_round_word(kind, b), activations),
                                        "extra_config"))
    rules += excluded(ignore_lists(config, "modules_to_not_convert", "ignore_layers"),
                      "dotted", "modules_to_not_convert")
    rules.append(everywhere(layer, f"quant_method {method}"))
    return single(layer, f"{layer.quant} {layer.scheme} ({method})", method, source, config,
                  tuple(rules))


def _round_word(kind: str, bits: Any) -> str:
    if "nv" in kind and "fp" in kind:
        return "nvfp4" if bits == 4 else f"fp{bits}"
    if "mx" in kind:
        return f"mxfp{bits}"
    if "fp" in kind:
        return f"fp{bits}"
    return f"int{bits}"


def moe_wna16(config: Mapping[str, Any], source: Path) -> Declaration:
    """vLLM MoE-WNA16: GPTQ/AWQ-quantized experts run by a Triton WNA16 kernel; the other
    linear layers follow ``linear_quant_method`` (vLLM ``moe_wna16.py``)."""
    linear = str(config.get("linear_quant_method", "gptq"))
    declaration = int_weight_only(config, source, linear, linear.upper())
    return replace(declaration, method="moe_wna16",
                   format=declaration.format.replace("(", "(moe_wna16, ", 1))


def experts_int8(config: Mapping[str, Any], source: Path) -> Declaration:
    """vLLM ExpertsInt8: MoE experts quantized to INT8 weights at load (W8A16), other layers
    unquantized (``experts_int8.py``)."""
    layer = LayerScheme(("experts",), "int8", None, "W8A16", "weight_only", "INT8 experts")
    rules = (everywhere(layer, "quant_method experts_int8 (the MoE experts)",
                        groups=("moe_experts",)),)
    return single(layer, "INT8 W8A16 experts (experts_int8)", "experts_int8", source, config,
                  rules)


# ---------------------------------------------------------------------------------------------
# bitsandbytes, HQQ, torchao, FP-Quant


def bitsandbytes(config: Mapping[str, Any], source: Path) -> Declaration:
    """``llm_int8_skip_modules`` are substrings of module names (transformers'
    ``replace_with_bnb_linear``)."""
    skips = excluded(strings(config.get("llm_int8_skip_modules")), "substring",
                     "llm_int8_skip_modules")
    compute = TORCH_DTYPES.get(
        str(config.get("bnb_4bit_compute_dtype", "")).removeprefix("torch.")
    )
    if config.get("load_in_4bit") or config.get("_load_in_4bit"):
        kind = str(config.get("bnb_4bit_quant_type", "fp4")).lower()
        layer = LayerScheme(("*",), kind, None, "W4A16", "weight_only", kind.upper())
        declaration = single(layer, f"{kind.upper()} W4A16 (bitsandbytes)", "bitsandbytes",
                             source, config, (*skips, everywhere(layer, "load_in_4bit")))
        return replace(declaration, compute_dtype=compute)
    if config.get("load_in_8bit") or config.get("_load_in_8bit"):
        # LLM.int8(): activations are quantized to int8 per vector for an int8 matmul, outlier
        # columns stay 16-bit (Dettmers et al. 2022, arXiv:2208.07339).
        layer = LayerScheme(("*",), "int8", "int8", "W8A8", "int8", "INT8 LLM.int8()")
        return single(layer, "INT8 W8A8 LLM.int8() (bitsandbytes)", "bitsandbytes", source,
                      config, (*skips, everywhere(layer, "load_in_8bit")))
    return not_understood("bitsandbytes", "a bitsandbytes config that sets neither "
                          "load_in_4bit nor load_in_8bit", source)


def hqq(config: Mapping[str, Any], source: Path) -> Declaration:
    """HQQ: ``quant_config.weight_quant_params.nbits`` / ``group_size``; ``skip_modules``
    (vLLM ``hqq_marlin.py`` runs 4-bit HQQ through Marlin: weight-only)."""
    inner = config.get("quant_config") if isinstance(config.get("quant_config"), Mapping) else {}
    params = inner.get("weight_quant_params", inner) if isinstance(inner, Mapping) else {}
    bits = params.get("nbits", config.get("nbits", 4)) if isinstance(params, Mapping) else 4
    group = params.get("group_size") if isinstance(params, Mapping) else None
    layer = _int_layer(bits, group, "INT")
    rules = (*excluded(ignore_lists(config, "skip_modules"), "dotted", "skip_modules"),
             everywhere(layer, "quant_method hqq"))
    return single(layer, f"INT{bits} W{bits}A16 (HQQ)", "hqq", source, config, rules)


#: torchao config class names (``quant_type.default._type``) → weights, activations
_TORCHAO = {
    "Int4WeightOnlyConfig": ("int4", None),
    "Int8WeightOnlyConfig": ("int8", None),
    "UIntXWeightOnlyConfig": ("int4", None),
    "Int8DynamicActivationInt8WeightConfig": ("int8", "int8"),
    "Int8DynamicActivationInt4WeightConfig": ("int4", "int8"),
    "Float8WeightOnlyConfig": ("fp8", None),
    "Float8DynamicActivationFloat8WeightConfig": ("fp8", "fp8"),
    "Float8StaticActivationFloat8WeightConfig": ("fp8", "fp8"),
    "Float8DynamicActivationInt4WeightConfig": ("int4", "fp8"),
    "NVFP4InferenceConfig": ("nvfp4", "nvfp4"),
    "MXFPInferenceConfig": ("mxfp4", "mxfp4"),
}


def torchao(config: Mapping[str, Any], source: Path) -> Declaration:
    """torchao: ``quant_type`` = ``{"default": {"_type": "<Config class>", …}}`` (transformers
    ``TorchAoConfig`` serialization, vLLM ``torchao.py``); the class name says the scheme."""
    quant_type = config.get("quant_type")
    entry = quant_type.get("default") if isinstance(quant_type, Mapping) else quant_type
    name = entry.get("_type") if isinstance(entry, Mapping) else entry
    found = _TORCHAO.get(str(name)) if name else None
    if found is None:
        return not_understood("torchao", f"torchao quant_type {name!r} is not one tracekit "
                              "reads (known: " + ", ".join(sorted(_TORCHAO)) + ")", source)
    layer = scheme(*found, quant=str(name).removesuffix("Config"))
    rules = (*excluded(ignore_lists(config, "modules_to_not_convert"), "dotted",
                       "modules_to_not_convert"),
             everywhere(layer, f"quant_type {name}"))
    return single(layer, f"{layer.quant} {layer.scheme} (torchao)", "torchao", source, config,
                  rules)


def fp_quant(config: Mapping[str, Any], source: Path) -> Declaration:
    """FP-Quant (QuTLASS): ``forward_dtype`` ``mxfp4`` / ``nvfp4`` weights and activations
    (W4A4 on Blackwell); ``pseudoquantization`` = emulated (vLLM ``fp_quant.py``)."""
    kind = str(config.get("forward_dtype", "mxfp4")).lower()
    weights = "nvfp4" if "nv" in kind else "mxfp4"
    layer = scheme(weights, weights, quant=f"{weights.upper()} (FP-Quant)")
    rules = (*excluded(ignore_lists(config, "modules_to_not_convert"), "dotted",
                       "modules_to_not_convert"),
             everywhere(layer, f"forward_dtype {kind}"))
    declaration = single(layer, f"{layer.quant} {layer.scheme} (fp_quant)", "fp_quant", source,
                         config, rules)
    if config.get("pseudoquantization"):
        declaration = replace(declaration, notes=("pseudoquantization: emulated in 16-bit",))
    return declaration


def aqlm(config: Mapping[str, Any], source: Path) -> Declaration:
    """AQLM additive codebooks: weight-only, ``num_codebooks × nbits_per_codebook /
    in_group_size`` bits per weight."""
    codebooks = config.get("num_codebooks", 1)
    nbits = config.get("nbits_per_codebook", 16)
    group = config.get("in_group_size", 8)
    try:
        bits = max(1, round(int(codebooks) * int(nbits) / int(group)))
    except (TypeError, ValueError, ZeroDivisionError):
        bits = 2
    layer = LayerScheme(("*",), f"aqlm{bits}", None, f"W{bits}A16", "weight_only", "AQLM")
    rules = (*excluded(ignore_lists(config, "linear_weights_not_to_quantize"), "dotted",
                       "linear_weights_not_to_quantize"),
             everywhere(layer, "quant_method aqlm"))
    return single(layer, f"AQLM W{bits}A16", "aqlm", source, config, rules)


def fixed(config: Mapping[str, Any], source: Path, method: str,
          row: Mapping[str, Any]) -> Declaration:
    """A method whose name fixes the scheme (``[quant_method.<m>]`` of ``_checkpoints.toml``)."""
    layer = scheme(row.get("weights"), row.get("activations"), quant=row.get("quant"))
    groups = tuple(row.get("groups", ())) or None
    rules: tuple[ModuleRule, ...] = excluded(
        ignore_lists(config, "ignore", "ignored_layers", "modules_to_not_convert"),
        "dotted", "ignored_layers")
    if row.get("linear"):  # a second scheme for the non-expert linear layers (SGLang w4afp8)
        linear = scheme(*row["linear"])
        rules += (everywhere(layer, f"quant_method {method} (the MoE experts)",
                             groups=("moe_experts",)),
                  everywhere(linear, f"quant_method {method} (linear layers)",
                             groups=("attention", "mlp")))
        return combine((layer, linear), f"{layer.quant} {layer.scheme} ({method})", method,
                       source, tuple(r.pattern for r in rules if r.scheme is None), None, rules)
    rules += (everywhere(layer, f"quant_method {method}", **({"groups": groups} if groups
                                                            else {})),)
    return single(layer, f"{layer.quant} {layer.scheme} ({method})", method, source, config,
                  rules)

