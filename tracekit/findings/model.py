"""The values the findings work on: aggregated time (no per-record data) and what they say.

``FindingContext`` is built from the store by ``tracekit.findings.stage``; everything else in
this package is pure functions over it, so every judgement is unit-testable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracekit.expect.checkpoint import Declaration
from tracekit.expect.logs import LogEvidence


@dataclass(frozen=True)
class PathTime:
    """GEMM time of one (phase, path, library, activations) group."""

    phase: str
    path: str
    ns: int
    library: str | None = None
    activations: str | None = None


@dataclass(frozen=True)
class LayerTime:
    """GEMM time of one kernel name in one phase and layer group, with its classification and
    what told the layer (``tracekit.vocabulary.LAYER_SOURCES``)."""

    phase: str
    layer: str
    path: str
    ns: int
    library: str | None = None
    activations: str | None = None
    weights: str | None = None
    source: str = "none"
    name: str = ""


@dataclass(frozen=True)
class GraphGap:
    """CUDA-graph launches whose node kernels the trace does not have (an nsys report recorded
    without ``--cuda-graph-trace=node``)."""

    graph_launches: int
    steps_without_kernels: int = 0


@dataclass(frozen=True)
class AttentionTime:
    """Attention-kernel time of one (path, weights, activations) group, with an example name."""

    path: str
    ns: int
    weights: str | None = None
    activations: str | None = None
    example: str | None = None
    quantized_name: bool = False  # a kernel name in the group carries fp8/e4m3/fp4… (quantized KV)


@dataclass(frozen=True)
class KernelTime:
    """One unique kernel name on one device: its time, whether it is a GEMM, its path."""

    name: str
    ns: int
    device_arch: str | None = None
    is_gemm: bool = False
    phase: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class Finding:
    """A verdict item. ``share`` is the share of GEMM time affected (0..1) when it applies."""

    rule: str
    severity: str
    message: str
    phase: str | None = None
    share: float | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    hint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json`` findings list)."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "phase": self.phase,
            "share": self.share,
            "hint": self.hint,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class FindingContext:
    """Everything the findings need, already aggregated (no per-record data)."""

    gemm: tuple[PathTime, ...] = ()
    #: GEMM time per layer group (``layer_times``); empty: every GEMM's layer is unknown
    layers: tuple[LayerTime, ...] = ()
    attention: tuple[AttentionTime, ...] = ()
    kernels: tuple[KernelTime, ...] = ()  # unique names (for arch tokens and examples)
    declaration: Declaration | None = None
    gpu_arch: str | None = None
    gpu_name: str | None = None
    marker_steps: int = 0
    heuristic_steps: int = 0
    nvtx_domains: tuple[str, ...] = ()
    nvtx_ranges: int = 0
    log_evidence: tuple[LogEvidence, ...] = ()
    unknown_threshold: float = 0.2
    #: ids the ingest found naming several launches / ops (``ambiguous_links`` of the run meta)
    ambiguous_correlation_ids: int = 0
    ambiguous_external_ids: int = 0
    #: the engine that ran the trace (``--engine``, step markers or log lines), when known
    engine: str | None = None
    #: why ``--model`` could not be read (file and line), when it could not
    model_error: str | None = None
    graph_gap: GraphGap | None = None

    def layer_times(self) -> tuple[LayerTime, ...]:
        """GEMM time per layer group; from ``gemm`` with every layer unknown when the run has
        no layer attribution (contexts built by hand)."""
        if self.layers:
            return self.layers
        return tuple(LayerTime(phase=row.phase or "unattributed", layer="unknown",
                               path=row.path, ns=row.ns, library=row.library,
                               activations=row.activations)
                     for row in self.gemm)
