"""The words tracekit answers in: one definition every module imports.

These are a public contract (docs/vocabulary.md; the JSON Schemas in docs/schema/ list the
same words and a test compares them): CI scripts and notebooks match on them, so a word is
changed here or nowhere. ``rules/_paths.toml`` documents each path and operand type for rule
authors and must list exactly ``PATHS``.
"""

from __future__ import annotations

#: what the math unit multiplies (``unknown``: the evidence does not determine it)
PATHS: tuple[str, ...] = ("fp4", "fp8", "int8", "weight_only", "bf16", "fp16", "tf32", "fp32",
                          "fp64", "unknown")
#: paths whose activations are quantized at run time: the math itself runs below 16 bits
QUANTIZED_PATHS = frozenset({"fp4", "fp8", "int8"})
#: paths of plain math in a 16-bit or wider type: what a quantized checkpoint falls back to
WIDE_PATHS: tuple[str, ...] = ("bf16", "fp16", "tf32", "fp32", "fp64")
#: the 16-bit float types (weight-only kernels compute in one of them)
HALF_TYPES: tuple[str, ...] = ("bf16", "fp16")

#: what a kernel does
OPS: tuple[str, ...] = ("gemm", "grouped_gemm", "gemv", "attention", "quantize", "dequantize",
                        "comm", "memory", "other")
#: ops that are matrix products (GEMM time, the verdict, the roofline)
GEMM_OPS: tuple[str, ...] = ("gemm", "grouped_gemm", "gemv")
#: ops whose path describes their math (matrix products and attention)
MATH_OPS = frozenset({*GEMM_OPS, "attention"})

#: the phase a kernel's time belongs to
PHASES: tuple[str, ...] = ("prefill", "decode", "mixed", "unattributed")
#: the phases an engine step can have
STEP_PHASES: tuple[str, ...] = ("prefill", "decode", "mixed")

#: the layer group of the model a GEMM launch belongs to (docs/vocabulary.md#layer-groups):
#: ``decoder_layers`` is a linear of the transformer blocks whose group (attention or MLP) the
#: evidence does not tell; ``unknown`` says nothing tells (the reason is kept beside it)
LAYERS: tuple[str, ...] = ("attention", "mlp", "moe_experts", "moe_router", "lm_head",
                           "embedding", "vision", "decoder_layers", "unknown")
#: the layer groups a checkpoint's quantization usually leaves in 16 bits unless it names them
DEFAULT_16BIT_LAYERS = frozenset({"lm_head", "embedding", "moe_router", "vision"})
#: what told a launch's layer group, strongest first
LAYER_SOURCES: tuple[str, ...] = ("module", "nvtx", "shapes", "kernel_name", "launch_count",
                                  "inherited", "none")

#: the engines whose kernel choices tracekit knows (``--engine``, ``tracekit expect``)
ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llama.cpp")

#: what the judgement of one layer group in one phase found (docs/vocabulary.md#outcomes)
OUTCOMES: tuple[str, ...] = ("as_declared", "excluded", "better", "hardware_limited",
                             "engine_limited",
                             "logged_fallback", "silent_fallback", "degraded", "mismatch",
                             "undetermined", "unknown", "no_declaration")

#: which source decided a classification, strongest first
EVIDENCE: tuple[str, ...] = ("counters", "name", "op_dtypes", "neighbour", "log", "feasibility",
                             "none")
CONFIDENCE: tuple[str, ...] = ("high", "medium", "low")

#: finding severities, most severe first (``--fail-on`` takes one)
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
#: severity -> rank, higher is more severe
SEVERITY_RANK: dict[str, int] = {word: len(SEVERITIES) - i for i, word in enumerate(SEVERITIES)}


def at_or_above(severity: str, level: str) -> bool:
    """Whether a finding of ``severity`` counts for ``--fail-on level``."""
    return SEVERITY_RANK.get(severity, 0) >= SEVERITY_RANK[level]
