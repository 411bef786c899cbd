"""What an engine can legally launch for one declared layer group on one GPU: the expected path.

The judgement compares what ran with this, never with the declaration alone: an NVFP4 W4A4
layer on an H100 is expected to run Marlin (4-bit weights, 16-bit math) because no FP4 MMA
exists there — that is hardware-limited, not a fallback — while the same layer on a B200 is
expected to run FP4. ``expected_path`` is the one owner of that answer; the verdict and
``tracekit expect`` both ask it.

Outcome words the judgement derives from an :class:`ExpectedPath`:

- the expected path ran: ``as_declared`` (kind ``native`` or ``by_design``) or
  ``hardware_limited`` (kind ``hardware_fallback``);
- a path in ``better`` ran: ``better`` (the engine chose more quantized math than declared);
- a worse path ran (see :func:`rank`): ``silent_fallback`` / ``logged_fallback`` when the
  expected path was native, ``degraded`` when the expected path was itself a fallback or
  weight-only by design (emulation, dequantize-at-load);
- a quantized path neither expected nor better ran: ``mismatch``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracekit.expect.checkpoint.layers import LayerDeclaration
from tracekit.gpus import native_paths
from tracekit.vocabulary import ENGINES, QUANTIZED_PATHS, WIDE_PATHS

__all__ = ["ENGINES", "KINDS", "ExpectedPath", "expected_path", "rank"]
KINDS = ("native", "by_design", "hardware_fallback", "unsupported", "unknown")


@dataclass(frozen=True)
class ExpectedPath:
    """The path the best kernel an engine can launch for a layer group computes on a GPU."""

    path: str  # a PATHS word; "unknown" when the GPU or the declaration is unknown
    kind: str  # one of KINDS
    kernels: str  # the kernel family in words: "FP4 GEMMs (FlashInfer, CUTLASS)", "Marlin W4A16"
    better: frozenset[str] = frozenset()  # paths the engine may choose that beat the declaration
    cite: str = ""  # the engine source or document that says so
    reason: str = ""  # why, in words ("the H100 (sm90) has no FP4 MMA")


def rank(path: str) -> int:
    """Quality of a path for a quantized declaration: quantized math above weight-only above
    16-bit or wider math. A lower rank than the expected path's is a fallback or degraded."""
    if path in QUANTIZED_PATHS:
        return 2
    if path == "weight_only":
        return 1
    if path in WIDE_PATHS:
        return 0
    return -1  # unknown


def expected_path(layer: LayerDeclaration, arch: str | None,
                  engine: str | None = None) -> ExpectedPath:
    """The expected path of ``layer`` on ``arch`` in ``engine`` (None: vLLM/SGLang's choices).

    First version: capability only (``rules/_gpus.toml``); the engines' cited choices per
    format and architecture replace it (``rules/_kernel_paths.toml``).
    """
    if layer.sixteen_bit or layer.scheme is None:
        return ExpectedPath("bf16", "by_design", "16-bit GEMMs", reason=layer.reason)
    scheme = layer.scheme
    if scheme.path == "weight_only":
        return ExpectedPath("weight_only", "by_design", "weight-only GEMMs (e.g. Marlin)",
                            reason=f"{scheme.scheme} {scheme.quant} is weight-only by design")
    if scheme.path not in QUANTIZED_PATHS:
        return ExpectedPath(scheme.path, "by_design", f"{scheme.path} GEMMs")
    if arch is None:
        return ExpectedPath("unknown", "unknown", "", reason="the GPU's architecture is unknown")
    native = native_paths(arch)
    if not native:
        return ExpectedPath("unknown", "unknown", "",
                            reason=f"{arch} is not in the capability table")
    if scheme.path in native:
        return ExpectedPath(scheme.path, "native", f"{scheme.path.upper()} GEMMs",
                            reason=f"{arch} computes {scheme.path.upper()} natively")
    return ExpectedPath("weight_only", "hardware_fallback", "weight-only GEMMs (Marlin)",
                        reason=f"{arch} has no native {scheme.path.upper()}")
