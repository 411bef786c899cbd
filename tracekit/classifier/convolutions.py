"""Which GEMM-classified kernel names compute a convolution (``rules/_convolutions.toml``).

cuDNN and CUTLASS compute many convolutions as implicit GEMMs: the kernels multiply matrices,
and their datatype path is a GEMM's, but the op is a convolution. The reports keep their time
in GEMM time and say how much of it is convolutions. Decided per unique name, from the name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from tracekit.datafiles import load_table, require

CONVOLUTIONS_FILE = "_convolutions.toml"


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    rows = load_table(CONVOLUTIONS_FILE).get("family", [])
    return tuple(re.compile(str(require(row, "regex", CONVOLUTIONS_FILE,
                                        f"[[family]] {row.get('family', '?')}")))
                 for row in rows)


def is_convolution(name: str) -> bool:
    """Whether a kernel name is one of a convolution computed as a GEMM."""
    return any(pattern.search(name) for pattern in _patterns())


def convolution_names(names: Iterable[str]) -> set[str]:
    """The names among ``names`` (unique kernel names) that compute convolutions."""
    return {name for name in names if is_convolution(name)}
