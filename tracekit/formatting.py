"""How tracekit writes numbers for people: durations, rates, shares and counted nouns.

A leaf module (the standard library only): the terminal summary, the HTML report, the
roofline's sentences and the command line all format with these, so a duration reads the same
everywhere and no report module has to import another one for a helper.
"""

from __future__ import annotations


def format_ns(ns: int | float) -> str:
    """Human duration: 1.23 s, 45.6 ms, 789 µs, 12 ns."""
    value = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}" if value / scale < 100 else \
                f"{value / scale:.0f} {unit}"
    return f"{value:.0f} ns"


def format_rate(value: float | None, unit: str) -> str:
    """A throughput from its base unit per second: 1.23 TB/s, 456 GB/s, 12.3 TFLOP/s."""
    if value is None:
        return "–"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}/s"
    return f"{value:.3g} {unit}/s"


def format_share(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole`` with one decimal (``–`` when whole is zero)."""
    return f"{100 * part / whole:.1f}%" if whole else "–"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and its noun, singular for exactly one: 1 kernel, 2,800 kernels, 0 steps.

    ``plural`` where adding an s is wrong (``counted(n, "process", "processes")``).
    """
    word = noun if count == 1 else plural or f"{noun}s"
    return f"{count:,} {word}"


def roof_label(bound: str | None, roof_math: str | None, roof_tflops: float | None,
               memory_gbps: float | None) -> str:
    """The roof a roofline row sits against, named for its bound: the path's compute roof
    when it is compute-bound (``compute (BF16 roof 210 TFLOP/s)``), the memory bandwidth when
    it is bandwidth-bound (``bandwidth (1.79 TB/s roof)``)."""
    if bound is None:
        return "–"
    if bound == "bandwidth" and memory_gbps:
        return f"bandwidth ({format_rate(memory_gbps * 1e9, 'B')} roof)"
    if roof_tflops is None or roof_math is None:
        return bound
    return f"{bound} ({roof_math.upper()} roof {roof_tflops:,.0f} TFLOP/s)"
