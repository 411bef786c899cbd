"""Which GEMM-classified kernel names compute a convolution (``rules/_convolutions.toml``).

cuDNN, CUTLASS, Composable Kernel and MIOpen compute many convolutions as implicit GEMMs,
and some direct convolution kernels get the op gemm from their rule (a convolution's
multiply-adds, for want of a convolution op): the kernels' datatype path is a GEMM's, but
the op is a convolution. The reports keep their time in GEMM time and say how much of it is
convolutions. Decided per unique name, from the name.

The reports pass the stored name, which is mangled where the trace kept it so (rocprof and
many ROCm Kineto traces do). A row's regex is searched in the name as given and in the text
the rules see (``tracekit.classifier.names.prepare``: demangled, rocprof's ``.kd`` dropped),
so rows are written against demangled text; a name no demangler reads is still matched when a
row's words survive mangling (``kernel_grouped_conv_fwd_``, ``ImplicitGemmConvolution``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from tracekit.classifier.names import prepare, prepare_all
from tracekit.datafiles import load_table, require

CONVOLUTIONS_FILE = "_convolutions.toml"


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    rows = load_table(CONVOLUTIONS_FILE).get("family", [])
    return tuple(re.compile(str(require(row, "regex", CONVOLUTIONS_FILE,
                                        f"[[family]] {row.get('family', '?')}")))
                 for row in rows)


def _matches(*texts: str) -> bool:
    return any(pattern.search(text) for pattern in _patterns() for text in texts)


def is_convolution(name: str) -> bool:
    """Whether a kernel name (mangled or not) is one of a convolution computed as a GEMM."""
    return _matches(name, prepare(name).text)


def convolution_names(names: Iterable[str]) -> set[str]:
    """The names among ``names`` (unique kernel names, mangled or not) that compute
    convolutions; the mangled ones are demangled together, once."""
    prepared = prepare_all(names)
    return {name for name, kernel in prepared.items() if _matches(name, kernel.text)}
