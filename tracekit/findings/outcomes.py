"""The rules for one cell of the layer table: what a path that ran means for a layer group.

``outcome_of`` is the whole decision for one (layer declaration, expected path, path that ran):
the expected path ran (``as_declared``; ``hardware_limited`` where no native path exists,
``engine_limited`` where the engine's documented choice here is a lower one), an excluded
layer stayed 16-bit (``excluded``), the engine chose better (``better``), a worse path ran
(``silent_fallback`` / ``logged_fallback`` where the expected path was native, ``degraded``
where it was itself a fallback or weight-only by design), or a quantized path the layer does
not declare (``mismatch``). Also the weight family a kernel's weight type belongs to, which
narrows the layers a kernel can be (FP8-weight Marlin is not an NVFP4 layer).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from tracekit.datafiles import load_table
from tracekit.expect.checkpoint.layers import LayerDeclaration
from tracekit.expect.kernel_paths import ExpectedPath, rank
from tracekit.expect.logs import LogEvidence
from tracekit.vocabulary import DEFAULT_16BIT_LAYERS, WIDE_PATHS

SIXTEEN_BIT_PATHS = frozenset(WIDE_PATHS)
#: outcomes that are not a problem
FINE = frozenset({"as_declared", "excluded", "better", "hardware_limited", "engine_limited",
                  "no_declaration"})
#: outcomes of a path worse than the layer's expected one
FALLBACKS = frozenset({"silent_fallback", "logged_fallback", "degraded"})
#: which reading of an uncertain cell is the more plausible: the fine ones, then a fallback,
#: and a mismatch (the declaration is wrong) last
PLAUSIBILITY = {word: i for i, word in enumerate((
    "as_declared", "excluded", "better", "hardware_limited", "engine_limited", "no_declaration",
    "unknown",
    "undetermined", "logged_fallback", "silent_fallback", "degraded", "mismatch"))}
#: expected-path kind → the outcome of running it, when it is a fallback the GPU or the
#: engine imposes
_LIMITED = {"hardware_fallback": "hardware_limited", "engine_fallback": "engine_limited"}
_FALLBACK_LOG_KINDS = frozenset({"fallback-warning", "emulation"})
_SELECTION_LOG_KINDS = frozenset({"kernel-selected", "moe-backend"})

@cache
def _operand_classes() -> dict[str, str]:
    return {str(k): str(v) for k, v in load_table("_paths.toml").get("operand_types",
                                                                      {}).items()}


def weight_family(word: str | None) -> str | None:
    """The family of a weight type word: ``fp4`` (e2m1, nvfp4, mxfp4), ``fp8``, ``int8``,
    ``int`` (sub-8-bit integers), ``16`` (16-bit or wider), None when unknown."""
    if not word:
        return None
    kind = _operand_classes().get(word.lower())
    if kind in {"fp4", "fp8", "int8"}:
        return kind
    if kind == "weight_only":
        return "int"
    if kind in WIDE_PATHS or word.lower() in WIDE_PATHS:
        return "16"
    return None


def announcement(logs: Sequence[LogEvidence], layer: LayerDeclaration,
                 expected: ExpectedPath) -> LogEvidence | None:
    """The engine log line that announced this layer's fallback, if any: a line whose own
    words say the engine runs less than declared (``announces_fallback``: the Marlin and
    emulation warnings), or a kernel choice whose path is worse than the expected one (vLLM
    "Using MarlinNvFp4LinearKernel for NVFP4 GEMM") — about this layer's format family and
    scope (``LogEvidence.speaks_of``; a line that names neither speaks of any layer)."""
    scope = "moe" if layer.layer == "moe_experts" else "linear"
    family = expected.family
    for line in logs:
        if line.kind in _SELECTION_LOG_KINDS and not line.announces_fallback:
            if line.path is None or rank(line.path) >= rank(expected.path):
                continue
        elif not (line.announces_fallback or line.kind in _FALLBACK_LOG_KINDS):
            continue
        if family and not line.speaks_of(family, scope):
            continue
        if not family and line.scope is not None and line.scope != scope:
            continue
        return line
    return None


def outcome_of(ran: str, layer: LayerDeclaration, expected: ExpectedPath,
               logs: Sequence[LogEvidence] = (), *, quantized_model: bool = True
               ) -> tuple[str, LogEvidence | None]:
    """The outcome of ``ran`` in a layer declared ``layer`` expected to run ``expected``."""
    if ran == "unknown":
        return "unknown", None
    if layer.sixteen_bit:
        if ran in SIXTEEN_BIT_PATHS:
            excluded = layer.status == "excluded" or (
                quantized_model and layer.layer in DEFAULT_16BIT_LAYERS)
            return ("excluded" if excluded else "as_declared"), None
        return "mismatch", None
    scheme = layer.scheme
    declared_path = scheme.path if scheme is not None else expected.path
    if expected.kind in {"unknown", "unsupported"}:
        if ran == declared_path:
            return "as_declared", None
        return "undetermined", None
    if ran == expected.path:
        return _LIMITED.get(expected.kind, "as_declared"), None
    if ran in expected.better:
        return "better", None
    if ran == declared_path:
        return "as_declared", None
    if rank(ran) < rank(expected.path):
        if expected.kind == "native":
            line = announcement(logs, layer, expected)
            return ("logged_fallback" if line else "silent_fallback"), line
        return "degraded", None
    if rank(ran) > rank(expected.path):
        return "better", None
    return "mismatch", None
