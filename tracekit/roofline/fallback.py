"""What a silent fallback costs, as an estimate that says it is one.

For a phase with a ``silent-fallback`` finding, the GEMMs that fell back (their FLOPs, bytes
and GPU time known from their shapes) are re-costed on the path the checkpoint declares, with
the roofline lower bound on the same GPU:

    time ≥ max(FLOPs / peak(expected path), bytes(expected path) / bandwidth)

The FLOPs are the same. The bytes are not: on the expected path the activations and weights
are read in the declared format (NVFP4: 4.5 bits per value, block scales included — see
``[expected_bits]`` in ``rules/_roofline.toml``), the output keeps its observed size, and the
activations must first be quantized (read once at their observed size, written once in the
format). A weight-only kernel already reads 4-bit weights, so in a bandwidth-bound decode the
bound barely moves, while in a compute-bound prefill the FP4 roof is several times the BF16
one. Observed time minus that bound is the most the expected path could save.

GEMMs without shapes (no linked op), with counters only, or without a weight operand (batched
matmuls) are not re-costed: the estimate covers the rest and says how much of the phase's
fallback time that is; with nothing covered it abstains, with the reason.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from tracekit.formatting import format_ns
from tracekit.gpus import GpuModel
from tracekit.roofline.families import Family
from tracekit.roofline.model import Roof, roof_for
from tracekit.roofline.work import expected_bits
from tracekit.store.sql import text_with_lists

FALLBACK_RULES = ("silent-fallback", "logged-fallback")


@dataclass(frozen=True)
class FallbackClaim:
    """A fallback finding: the phase, the paths that ran, the path the checkpoint declares."""

    rule: str
    phase: str
    observed: tuple[str, ...]
    expected: str
    weight_format: str | None = None
    activation_format: str | None = None
    #: the layer groups that fell back (empty: the whole phase's GEMMs of the observed paths)
    layers: tuple[str, ...] = ()


@dataclass
class FallbackEstimate:
    """The roofline bound of one phase's fallback GEMMs on the expected path."""

    phase: str
    rule: str
    observed_paths: tuple[str, ...]
    expected_path: str
    time_ns: int  # GEMM time of the fallback paths in the phase
    covered_ns: int = 0  # of which the estimate covers (shapes with a weight operand)
    flops: float = 0.0
    observed_bytes: float = 0.0
    expected_bytes: float = 0.0
    observed_bound_ns: float | None = None
    observed_bound: str | None = None  # "compute" / "bandwidth" (of the largest observed path)
    observed_peak_flops: float | None = None
    expected_bound_ns: float | None = None
    expected_bound: str | None = None
    expected_peak_flops: float | None = None
    bandwidth: float | None = None
    bits: dict[str, float] = field(default_factory=dict)  # operand -> bits per value assumed
    abstained: str | None = None
    sentence: str = ""

    @property
    def coverage(self) -> float:
        return self.covered_ns / self.time_ns if self.time_ns else 0.0

    @property
    def saving_at_most(self) -> float | None:
        """1 − bound(expected) / observed time, over the covered GEMMs (never below 0)."""
        if self.expected_bound_ns is None or not self.covered_ns:
            return None
        return max(0.0, 1.0 - self.expected_bound_ns / self.covered_ns)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the document's ``roofline.fallback`` list)."""
        achieved = self.flops / self.covered_ns * 1e9 if self.covered_ns else None
        bandwidth = self.observed_bytes / self.covered_ns * 1e9 if self.covered_ns else None
        return {
            "phase": self.phase, "finding": self.rule, "observed_paths": list(self.observed_paths),
            "expected_path": self.expected_path, "estimate": True,
            "time_ns": self.time_ns, "covered_ns": self.covered_ns, "coverage": self.coverage,
            "flops": self.flops, "observed_bytes": self.observed_bytes,
            "expected_bytes": self.expected_bytes,
            "achieved_flops_per_s": achieved, "achieved_bytes_per_s": bandwidth,
            "observed_bound": self.observed_bound, "observed_bound_ns": self.observed_bound_ns,
            "observed_peak_flops": self.observed_peak_flops,
            "expected_bound": self.expected_bound, "expected_bound_ns": self.expected_bound_ns,
            "expected_peak_flops": self.expected_peak_flops, "bandwidth": self.bandwidth,
            "saving_at_most": self.saving_at_most, "bits_per_value": self.bits,
            "abstained": self.abstained, "model": MODEL_TEXT, "sentence": self.sentence,
        }


MODEL_TEXT = ("roofline lower bound: time ≥ max(FLOPs / peak of the path, bytes / memory "
              "bandwidth), with this GPU's dense peaks from rules/_gpus.toml; the same FLOPs; "
              "bytes with activations and weights in the declared format (block scales "
              "included), the observed output, plus quantizing the activations")


def fallback_claims(connection: Connection, run_id: int) -> list[FallbackClaim]:
    """The run's fallback findings, with what ran and what the checkpoint declares."""
    claims = []
    rows = connection.execute(text_with_lists(
        "SELECT rule, phase, evidence_json FROM findings WHERE run_id = :run_id "
        "AND rule IN :rules ORDER BY id", rules=FALLBACK_RULES), {"run_id": run_id})
    for rule, phase, evidence_json in rows:
        evidence = json.loads(evidence_json) if evidence_json else []
        judged = next((e for e in evidence if isinstance(e, dict)
                       and e.get("source") == "judgement"), None)
        if judged is None or not phase or not judged.get("expected"):
            continue
        claims.append(FallbackClaim(
            rule=rule, phase=phase, observed=tuple(judged.get("observed") or ()),
            expected=judged["expected"], weight_format=judged.get("weights"),
            activation_format=judged.get("activations"),
            layers=tuple(judged.get("layers") or ())))
    return claims


#: (phase, name_id) → GEMM time per layer group (``layer_times``: one row per name, phase,
#: layer and source, a few thousand per run)
LayerShares = dict[tuple[str, int], dict[str, int]]


def layer_shares(connection: Connection, run_id: int) -> LayerShares:
    """Each GEMM name's time per layer group in each phase (``layer_times``)."""
    shares: LayerShares = defaultdict(lambda: defaultdict(int))
    for phase, name_id, layer, ns in connection.execute(text(
            "SELECT phase, name_id, layer, SUM(total_ns) FROM layer_times WHERE run_id = :r "
            "GROUP BY phase, name_id, layer"), {"r": run_id}):
        shares[(str(phase), int(name_id))][str(layer)] += int(ns or 0)
    return shares


def _in_layers(family: Family, claim: FallbackClaim, shares: LayerShares | None) -> bool:
    """Whether most of a family's kernel-name time in its phase is in the layers that fell
    back (an excluded 16-bit lm_head is not re-costed as a fallback)."""
    if not claim.layers or shares is None:
        return True
    per_layer = shares.get((family.phase, family.name_id))
    if not per_layer:
        return True
    inside = sum(ns for layer, ns in per_layer.items() if layer in claim.layers)
    return 2 * inside >= sum(per_layer.values())


def _bits(format_word: str | None, path: str) -> float | None:
    table = expected_bits()
    for word in (format_word, path):
        if word and word.lower() in table:
            return table[word.lower()]
    return None


def estimate(claim: FallbackClaim, families: Sequence[Family], model: GpuModel | None,
             gpu_reason: str | None = None, shares: LayerShares | None = None
             ) -> FallbackEstimate:
    """The expected-path bound of one claim's GEMMs (or an abstention with the reason): the
    families of the observed paths in the claim's phase, of the layers that fell back."""
    members = [f for f in families if f.phase == claim.phase and f.path in claim.observed
               and _in_layers(f, claim, shares)]
    result = FallbackEstimate(phase=claim.phase, rule=claim.rule,
                              observed_paths=claim.observed, expected_path=claim.expected,
                              time_ns=sum(f.time_ns for f in members))
    expected_roof = roof_for(claim.expected, None, model)
    a_bits = _bits(claim.activation_format, claim.expected)
    w_bits = _bits(claim.weight_format, claim.expected)
    if model is None:
        result.abstained = f"the GPU's limits are unknown: {gpu_reason or 'no product matched'}"
    elif expected_roof is None:
        result.abstained = (f"rules/_gpus.toml lists no {claim.expected.upper()} peak for the "
                            f"{model.name}: {model.missing_reason(claim.expected)}")
    elif a_bits is None or w_bits is None:
        result.abstained = f"no bits per value known for the {claim.expected} format"
    covered = [f for f in members if f.known and f.source == "shapes" and f.work is not None
               and f.work.weight_bytes is not None]
    if result.abstained is None and not covered:
        result.abstained = "no shapes for these GEMMs: " + _top_reason(members)
    if result.abstained is not None or model is None or expected_roof is None:
        result.sentence = _abstention(result)
        return result
    assert a_bits is not None and w_bits is not None
    result.bits = {"activations": a_bits, "weights": w_bits}
    result.bandwidth = model.bandwidth
    result.covered_ns = sum(f.time_ns for f in covered)
    result.flops = sum(f.flops or 0.0 for f in covered)
    result.observed_bytes = sum(f.bytes or 0.0 for f in covered)
    result.expected_bytes = sum(_expected_bytes(f, a_bits, w_bits) for f in covered)
    _observed_bounds(result, covered, model)
    result.expected_peak_flops = expected_roof.peak_flops
    result.expected_bound_ns = expected_roof.bound_ns(result.flops, result.expected_bytes)
    result.expected_bound = ("compute" if result.flops / expected_roof.peak_flops
                             >= result.expected_bytes / expected_roof.bandwidth else "bandwidth")
    result.sentence = _sentence(result, model)
    return result


def _expected_bytes(family: Family, a_bits: float, w_bits: float) -> float:
    """Bytes of one family's ops on the expected path (see the module docstring)."""
    work = family.work
    assert work is not None
    a_values = work.batch * work.m * work.k
    w_values = work.k * work.n * work.batch
    per_op = (a_values * a_bits / 8 * 2  # the GEMM reads them; quantizing writes them
              + work.a_bytes  # quantizing reads the observed activations
              + w_values * w_bits / 8 + work.out_bytes)
    return per_op * family.op_share


def _observed_bounds(result: FallbackEstimate, covered: Iterable[Family], model: GpuModel
                     ) -> None:
    """The observed paths' own roofline bound of the covered GEMMs (summed over paths)."""
    by_path: dict[tuple[str, str | None], list[Family]] = defaultdict(list)
    for family in covered:
        by_path[(family.path, family.activations)].append(family)
    total = 0.0
    largest: tuple[int, Roof | None, float, float] = (-1, None, 0.0, 0.0)
    for (path, activations), members in by_path.items():
        roof = roof_for(path, activations, model)
        flops = sum(f.flops or 0.0 for f in members)
        bytes_ = sum(f.bytes or 0.0 for f in members)
        time_ns = sum(f.time_ns for f in members)
        if roof is None:
            return  # an observed path without a peak: no observed bound to state
        total += roof.bound_ns(flops, bytes_)
        if time_ns > largest[0]:
            largest = (time_ns, roof, flops, bytes_)
    _, roof, flops, bytes_ = largest
    if roof is not None:
        result.observed_bound_ns = total
        result.observed_peak_flops = roof.peak_flops
        result.observed_bound = roof.bound(flops / bytes_ if bytes_ else 0.0)


def _top_reason(families: Sequence[Family]) -> str:
    reasons: dict[str, int] = defaultdict(int)
    for family in families:
        if family.source != "shapes" or family.work is None:
            reasons[family.reason or f"{family.source}: no operand shapes"] += family.time_ns
        elif family.work.weight_bytes is None:
            reasons[f"{family.op_name} has no weight operand to re-cost"] += family.time_ns
    return max(reasons, key=lambda r: reasons[r]) if reasons else "no fallback GEMM time"


def _ns(value: float) -> str:
    return format_ns(value)


def _tflops(value: float) -> str:
    return f"{value / 1e12:,.0f} TFLOP/s" if value >= 1e13 else f"{value / 1e12:.2g} TFLOP/s"


def _tbps(value: float) -> str:
    return f"{value / 1e12:.2f} TB/s" if value >= 1e11 else f"{value / 1e9:.1f} GB/s"


def _abstention(result: FallbackEstimate) -> str:
    paths = " + ".join(result.observed_paths)
    return (f"{result.phase}: {_ns(result.time_ns)} of {paths} GEMMs; no estimate of the "
            f"{result.expected_path.upper()} path — {result.abstained}.")


def _sentence(result: FallbackEstimate, model: GpuModel) -> str:
    paths = " + ".join(result.observed_paths)
    achieved = result.flops / result.covered_ns * 1e9
    bandwidth = result.observed_bytes / result.covered_ns * 1e9
    if result.observed_bound == "bandwidth":
        where = f"bandwidth-bound at {_tbps(bandwidth)} of {_tbps(model.bandwidth)}"
    elif result.observed_bound == "compute" and result.observed_peak_flops:
        where = f"compute-bound, roof {_tflops(result.observed_peak_flops)}"
    else:
        where = "no roof known for that path"
    saving = result.saving_at_most or 0.0
    covered = ("" if result.coverage >= 0.995 else
               f"; covers {100 * result.coverage:.0f}% of that time, the rest has no shapes")
    expected_bound = result.expected_bound_ns or 0.0
    return (f"{result.phase}: {_ns(result.covered_ns)} of {paths} GEMMs at {_tflops(achieved)} "
            f"({where}); the same GEMMs as native {result.expected_path.upper()} on the "
            f"{model.name} are bounded below by ~{_ns(expected_bound)} "
            f"({result.expected_bound}-bound) — the expected path would save at most "
            f"~{100 * saving:.0f}% (estimate: roofline bound, same FLOPs, "
            f"{result.expected_path.upper()} operand bytes, this GPU's peak{covered}).")
