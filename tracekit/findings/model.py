"""The values the findings work on: aggregated time (no per-record data) and what they say.

``FindingContext`` is built from the store by ``tracekit.findings.stage``; everything else in
this package is pure functions over it, so every judgement is unit-testable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracekit.expect.checkpoint import Declaration
from tracekit.expect.checkpoint.layers import LayerDeclaration
from tracekit.expect.kernel_paths import ExpectedPath
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
class LayerVerdict:
    """One (phase, layer group, path that ran) judged: a row of the layer table."""

    phase: str
    layer: str
    ran: str
    ns: int
    share: float  # of the phase's GEMM time
    outcome: str  # a word of tracekit.vocabulary.OUTCOMES
    severity: str | None
    declared: LayerDeclaration | None  # None: no declaration, or an uncertain layer
    expected: ExpectedPath | None
    reason: str
    #: the declared groups an uncertain layer was judged against, with their outcomes
    readings: tuple[tuple[str, str], ...] = ()
    sources: tuple[str, ...] = ()  # what told the layer (LAYER_SOURCES)
    libraries: tuple[str, ...] = ()  # by GPU time
    math: str | None = None  # the 16-bit type of weight-only kernels' math
    names: tuple[str, ...] = ()  # the largest kernels, by GPU time
    log: LogEvidence | None = None  # the line that announced the fallback
    weights: str | None = None  # the weight family the kernels state (weight_family)

    @property
    def declared_label(self) -> str | None:
        """"W4A4 NVFP4", "16-bit (excluded: lm_head)", or None."""
        if self.declared is None:
            return None
        scheme = self.declared.scheme
        if scheme is not None:
            return scheme.quant if scheme.scheme == scheme.quant else \
                f"{scheme.scheme} {scheme.quant}"
        if self.declared.status == "mixed":
            return " / ".join(dict.fromkeys(f"{s.scheme} {s.quant}"
                                            for s in self.declared.schemes))
        return "16-bit"

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready row (``--json`` ``layers``, ``layer_verdicts.evidence_json``)."""
        return {
            "phase": self.phase,
            "layer": self.layer,
            "declared": self.declared_label,
            "declared_status": self.declared.status if self.declared else None,
            "declared_reason": self.declared.reason if self.declared else None,
            "expected": self.expected.path if self.expected else None,
            "expected_kind": self.expected.kind if self.expected else None,
            "expected_kernels": self.expected.kernels if self.expected else None,
            "ran": self.ran,
            "weights": self.weights,
            "ns": self.ns,
            "share": self.share,
            "outcome": self.outcome,
            "severity": self.severity,
            "reason": self.reason,
            "readings": [{"layer": layer, "outcome": outcome}
                         for layer, outcome in self.readings],
            "sources": list(self.sources),
            "libraries": list(self.libraries),
            "kernels": list(self.names),
            "log": self.log.as_dict() if self.log else None,
        }


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
