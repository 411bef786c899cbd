"""The roofline model of a run: where each phase's GEMMs sit against the GPU's roofs.

For a group of GEMM launches with known work (FLOPs F, bytes B, GPU time T) on a GPU with peak
throughput P for their datatype path and memory bandwidth W:

- achieved throughput F/T and bandwidth B/T, arithmetic intensity I = F/B;
- the roof over that intensity is min(P, I·W); the group is **compute-bound** when I ≥ P/W (the
  ridge point) and **bandwidth-bound** below it;
- the roofline bound on its time is max(F/P, B/W): no kernel doing that work on that GPU can be
  faster. The achieved share of the roof is that bound divided by T.

The peak of ``weight_only`` is its 16-bit math's (the activations' type): Marlin and its kin
dequantize 4- or 8-bit weights and multiply in BF16/FP16.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tracekit.gpus import GpuModel
from tracekit.roofline.families import Family
from tracekit.vocabulary import HALF_TYPES


@dataclass(frozen=True)
class Roof:
    """The compute roof of one path on one GPU, with the bandwidth slope it meets."""

    path: str  # the path word the points carry (weight_only included)
    math: str  # the path whose peak applies (bf16 for weight_only with BF16 activations)
    peak_flops: float  # FLOP/s
    bandwidth: float  # bytes/s

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the bandwidth slope meets the compute roof."""
        return self.peak_flops / self.bandwidth

    def attainable(self, intensity: float) -> float:
        """The highest FLOP/s any kernel of this intensity can reach."""
        return min(self.peak_flops, intensity * self.bandwidth)

    def bound(self, intensity: float) -> str:
        """``compute`` at or above the ridge point, ``bandwidth`` below it."""
        return "compute" if intensity >= self.ridge else "bandwidth"

    def bound_ns(self, flops: float, bytes_: float) -> float:
        """The roofline lower bound of the time this work takes, in ns."""
        return max(flops / self.peak_flops, bytes_ / self.bandwidth) * 1e9


def math_path(path: str, activations: str | None, model: GpuModel) -> str | None:
    """The path whose peak bounds ``path``'s math on ``model`` (None when undetermined)."""
    if path != "weight_only":
        return path
    if activations in HALF_TYPES:
        return activations
    rates = {model.tflops.get(p) for p in HALF_TYPES}
    # BF16 or FP16 math, unknown which: equal rates (every product in the table) decide it.
    return "bf16" if len(rates) == 1 and None not in rates else None


def roof_for(path: str, activations: str | None, model: GpuModel | None) -> Roof | None:
    """The roof of ``path`` on ``model``, or None when the table lists no peak for it."""
    if model is None or path == "unknown":
        return None
    math = math_path(path, activations, model)
    peak = model.peak_flops(math) if math else None
    if peak is None:
        return None
    return Roof(path=path, math=math or path, peak_flops=peak, bandwidth=model.bandwidth)


@dataclass(frozen=True)
class Point:
    """Summed work and time of some families, and where they sit against their roof."""

    time_ns: int  # GPU time of the families with known work
    flops: float
    bytes: float
    roof: Roof | None

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.time_ns * 1e9 if self.time_ns else 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.time_ns * 1e9 if self.time_ns else 0.0

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    @property
    def bound(self) -> str | None:
        return self.roof.bound(self.intensity) if self.roof else None

    @property
    def bound_ns(self) -> float | None:
        return self.roof.bound_ns(self.flops, self.bytes) if self.roof else None

    @property
    def roof_share(self) -> float | None:
        """Achieved throughput as a share of the roof at this intensity (bound time / time)."""
        bound = self.bound_ns
        return bound / self.time_ns if bound is not None and self.time_ns else None


def summed(families: Iterable[Family], roof: Roof | None) -> Point:
    """The point of the families with known work (the others only count in coverage)."""
    known = [f for f in families if f.known]
    return Point(time_ns=sum(f.time_ns for f in known),
                 flops=sum(f.flops or 0.0 for f in known),
                 bytes=sum(f.bytes or 0.0 for f in known), roof=roof)


@dataclass(frozen=True)
class PathSummary:
    """One phase × path: its GEMM time, how much of it has known work, and its point."""

    phase: str
    path: str
    time_ns: int
    point: Point
    unknown_reasons: dict[str, int]  # reason -> GPU ns without known work

    @property
    def coverage(self) -> float:
        return self.point.time_ns / self.time_ns if self.time_ns else 0.0


def by_phase_and_path(families: Iterable[Family], model: GpuModel | None
                      ) -> list[PathSummary]:
    """Families summed per (phase, path), each against its path's roof on ``model``."""
    groups: dict[tuple[str, str], list[Family]] = defaultdict(list)
    for family in families:
        groups[(family.phase, family.path)].append(family)
    result = []
    for (phase, path), members in groups.items():
        activations = _main_activations(members)
        reasons: dict[str, int] = defaultdict(int)
        for family in members:
            if not family.known:
                reasons[family.reason or "no work known"] += family.time_ns
        result.append(PathSummary(
            phase=phase, path=path, time_ns=sum(f.time_ns for f in members),
            point=summed(members, roof_for(path, activations, model)),
            unknown_reasons=dict(sorted(reasons.items(), key=lambda kv: -kv[1]))))
    return result


def _main_activations(families: list[Family]) -> str | None:
    weights: dict[str | None, int] = defaultdict(int)
    for family in families:
        weights[family.activations] += family.time_ns
    return max(weights, key=lambda key: weights[key]) if weights else None
