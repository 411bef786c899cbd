"""Colours shared by every view of a run, so a path looks the same in each chart and page.

The fallback paths (``weight_only``, 16-bit) are warm and loud; the low-precision paths a
checkpoint usually promises (``fp4``, ``fp8``, ``int8``) are cool; ``unknown`` is a dark grey
and non-GEMM kernels a light one, so the eye goes to the GEMMs.
"""

from __future__ import annotations

PATH_COLORS: dict[str, str] = {
    "fp4": "#7b3fe4",
    "fp8": "#1f77d0",
    "int8": "#12a37f",
    "weight_only": "#e4572e",
    "bf16": "#f2a516",
    "fp16": "#d98324",
    "tf32": "#17becf",
    "fp32": "#8c564b",
    "fp64": "#444f5a",
    "unknown": "#5f6b73",
    "non-GEMM": "#c9ced6",
}

PHASE_COLORS: dict[str, str] = {
    "prefill": "#2b8cbe",
    "decode": "#31a354",
    "mixed": "#e6ab02",
    "unattributed": "#bdbdbd",
}

SEVERITY_COLORS: dict[str, str] = {"error": "#c62828", "warning": "#ef6c00", "info": "#1565c0"}

#: display order of paths in legends and stacked bars
PATH_ORDER: tuple[str, ...] = tuple(PATH_COLORS)


def path_rank(path: str) -> int:
    """Sort key that puts paths in ``PATH_ORDER`` and anything new after them."""
    return PATH_ORDER.index(path) if path in PATH_ORDER else len(PATH_ORDER)
