"""Kineto times as exact integer nanoseconds.

``ts``/``dur`` are µs decimals with ns resolution and must stay exact. Kineto's times relative
to ``baseTimeNanoseconds`` (weeks in µs) survive a float parse: below 2^41 µs
``round(ts * 1000)`` is the written value (numpy's ``rint`` of the same product, for a column
of them), below 2^43 µs ``repr`` gives it back. Old traces with epoch µs (~1.7e15) do not, so a
file whose first ``ts`` is that large is parsed with ``Decimal`` instead (slower, exact).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

#: below this many µs, round(ts * 1000) of a parsed float is the exact ns (parse error
#: ≤ ulp/2 ≤ 0.122 ns, product rounding ≤ 0.125 ns; both < 0.5)
FLOAT_EXACT_US = 2.0**41
#: below this, ns are still distinct doubles: repr() gives back the written decimal. Files
#: whose first ``ts`` is beyond it (old epoch-µs traces) are parsed with Decimal instead.
FLOAT_DISTINCT_US = 2.0**43
FIRST_TS = re.compile(rb'"ts"\s*:\s*"?(-?[0-9.]+)')


def to_ns(value: Any) -> int:
    """A Kineto µs value (int, Decimal, float or numeric string) as integer ns, exactly."""
    kind = type(value)
    if kind is int:
        return value * 1000
    if kind is Decimal:
        return round(value * 1000)
    if kind is float:
        if -FLOAT_EXACT_US < value < FLOAT_EXACT_US:
            return round(value * 1000)
        return round(Decimal(repr(value)) * 1000)
    if kind is str:
        return round(Decimal(value) * 1000)
    raise TypeError(f"not a time: {value!r}")


def floats_are_exact(head: bytes) -> bool:
    """Whether parsing this file's numbers as floats keeps every ns (see FLOAT_DISTINCT_US).

    Floats parse much faster than Decimal; Kineto's relative times (weeks in µs) stay exact.
    """
    found = FIRST_TS.search(head)
    try:
        return found is not None and abs(float(found.group(1))) < FLOAT_DISTINCT_US
    except ValueError:
        return False
