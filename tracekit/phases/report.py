"""What the phases stage did to a run: the method (markers, heuristics, none) and its counts.

Its own module so that the stage and the heuristics both return it without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PhaseReport:
    """What the stage did, for logs, tests and the analysis document."""

    method: str  # "marker" | "heuristic" | "none"
    message: str
    engines: list[str] = field(default_factory=list)
    marker_ranges: int = 0
    idle_markers: int = 0
    nested_dropped: int = 0
    steps: dict[str, int] = field(default_factory=dict)
    kernels_by_launch: int = 0
    kernels_by_gpu_time: int = 0
    kernels_heuristic: int = 0
    signals: dict[str, int] = field(default_factory=dict)
    #: False when the stage left the kernel records as they were (steps attributed while
    #: copying and no GPU-time fallback, or nothing to attribute): sums taken before hold.
    kernels_rewritten: bool = True

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready)."""
        return dict(self.__dict__)
