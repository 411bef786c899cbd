"""The judgement per layer group, made once and read by the findings and the verdict sentences.

Each phase's GEMM time is split by layer group (``layer_times``: attention, MLP, MoE experts,
router, lm_head, …) and by the path that ran. Every (layer, path) cell is judged against what
*that layer* declares (``tracekit.expect.checkpoint.layers``), on this GPU, in this engine
(``tracekit.expect.kernel_paths.expected_path``); what a path means for one layer is
``outcomes.outcome_of``.

A cell whose layer the evidence does not tell (``unknown``; ``decoder_layers``: attention or
MLP) is judged against every group it could be — narrowed by the weight family its kernels
state: when all readings agree, that outcome; when one is fine and another a fallback,
``undetermined`` (16-bit GEMMs next to native ones may be lm_head or a partial fallback). One
inference is certain without layers: the declared quantized layers had to run somewhere, so a
group whose path took no time in a phase at all is among its undetermined cells.

Each phase gets a headline state (a key of ``[verdict]`` in ``rules/_findings.toml``) from its
most severe outcome, the fields of its sentence (``wording``), and the verdict of every cell
for the layer table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracekit.expect.checkpoint.layers import DECLARED_LAYERS, LayerDeclaration, declare_layers
from tracekit.expect.kernel_paths import ExpectedPath, expected_path, rank
from tracekit.expect.logs import LogEvidence
from tracekit.findings.model import FindingContext, LayerTime, LayerVerdict, PathTime
from tracekit.findings.outcomes import (
    FALLBACKS,
    FINE,
    PLAUSIBILITY,
    outcome_of,
    weight_family,
)
from tracekit.findings.rules import FindingRules
from tracekit.findings.wording import native_possible, rest, verdict_fields
from tracekit.vocabulary import PHASES, QUANTIZED_PATHS

#: layer words whose group the evidence leaves open, judged against several groups
UNCERTAIN_LAYERS = frozenset({"unknown", "decoder_layers"})
#: outcome → headline state of the phase (a [verdict] key); as_declared depends on the path
_STATES = {
    "silent_fallback": "fallback",
    "logged_fallback": "logged_fallback",
    "degraded": "degraded",
    "mismatch": "mismatch",
    "hardware_limited": "hardware_limited",
    "engine_limited": "engine_limited",
    "undetermined": "undetermined",
    "better": "opted_in",
    "unknown": "unknown",
    "no_declaration": "no_declaration",
}
@dataclass(frozen=True)
class PhaseTime:
    """A phase's GEMM time by path, and by (layer, path) in ``rows``."""

    phase: str
    total: int
    by_path: dict[str, int]
    groups: tuple[PathTime, ...]
    rows: tuple[LayerTime, ...] = ()

    def ns(self, paths: Iterable[str]) -> int:
        return sum(self.by_path.get(p, 0) for p in paths)

    @property
    def known(self) -> int:
        return self.total - self.by_path.get("unknown", 0)

    def dominant(self, exclude: Iterable[str] = ()) -> tuple[str, int]:
        skip = set(exclude)
        candidates = [(ns, p) for p, ns in self.by_path.items() if p not in skip and ns > 0]
        if not candidates:
            return "unknown", 0
        ns, path = max(candidates)
        return path, ns


@dataclass(frozen=True)
class Judgement:
    """One phase judged: its headline state (a key of ``[verdict]``), the fields its sentence
    and findings are written from, and the verdict of every (layer, path) cell."""

    phase: str
    state: str
    observed: str
    share: float
    fields: dict[str, Any]
    verdicts: tuple[LayerVerdict, ...] = field(default=())


@dataclass(frozen=True)
class RunJudgement:
    """Every judged phase of a run with its judgement, in phase order."""

    phases: tuple[PhaseTime, ...]
    judgements: tuple[Judgement, ...]

    @property
    def verdicts(self) -> tuple[LayerVerdict, ...]:
        return tuple(v for j in self.judgements for v in j.verdicts)


def phase_times(rows: Sequence[LayerTime]) -> list[PhaseTime]:
    """The phases with GEMM time, in phase order, with their rows."""
    grouped: dict[str, list[LayerTime]] = defaultdict(list)
    for row in rows:
        grouped[row.phase or "unattributed"].append(row)
    result = []
    order = {p: i for i, p in enumerate(PHASES)}
    for phase in sorted(grouped, key=lambda p: order.get(p, len(order))):
        members = grouped[phase]
        by_path: dict[str, int] = defaultdict(int)
        paths: dict[tuple[str, str | None, str | None], int] = defaultdict(int)
        for row in members:
            by_path[row.path] += row.ns
            paths[(row.path, row.library, row.activations)] += row.ns
        total = sum(by_path.values())
        if total > 0:
            groups = tuple(PathTime(phase, path, ns, library, activations)
                           for (path, library, activations), ns in paths.items())
            result.append(PhaseTime(phase, total, dict(by_path), groups, tuple(members)))
    return result


def judged_phases(phases: list[PhaseTime], rules: FindingRules) -> list[PhaseTime]:
    """Phases worth a verdict: a sliver of unattributed GEMM time next to real phases (warm-up,
    GEMMs outside step markers) is left out, so 16-bit odds and ends there cannot pose as a
    fallback."""
    grand = sum(p.total for p in phases)
    minor = rules.setting("minor_unattributed_share", 0.1)
    if len(phases) < 2:
        return phases
    return [p for p in phases if p.phase != "unattributed" or p.total >= minor * grand]


# --- one cell ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cell:
    layer: str
    path: str
    weights: str | None  # the weight family the kernels state (fp4, fp8, int8, int), if any
    ns: int
    rows: tuple[LayerTime, ...]


def _cells(phase: PhaseTime) -> list[_Cell]:
    grouped: dict[tuple[str, str, str | None], list[LayerTime]] = defaultdict(list)
    for row in phase.rows:
        grouped[(row.layer, row.path, weight_family(row.weights))].append(row)
    cells = [_Cell(layer, path, weights, sum(r.ns for r in rows), tuple(rows))
             for (layer, path, weights), rows in grouped.items()]
    return sorted(cells, key=lambda c: -c.ns)


def _weights_fit(cell: _Cell, layer: LayerDeclaration) -> bool:
    """Whether the kernels' weight type can be this layer's: FP8-weight Marlin is not the
    NVFP4 layers of a mixed checkpoint."""
    if cell.weights is None or cell.weights == "16" or layer.scheme is None:
        return True
    declared = weight_family(layer.scheme.weights)
    return declared is None or declared == cell.weights


def _layer_candidates(layer: str, declared: dict[str, LayerDeclaration],
                      has_experts: bool) -> list[str]:
    """The declared groups an uncertain layer word could be: for ``decoder_layers`` the
    linears of the transformer blocks, for ``unknown`` any GEMM-running group — less the
    groups the model does not have (``LayerDeclaration.present``)."""
    if layer == "decoder_layers":
        wanted = ["attention", "mlp"] + (["moe_experts"] if has_experts else [])
    else:
        wanted = [w for w in DECLARED_LAYERS if w not in {"vision", "embedding"}]
        if not has_experts:
            wanted = [w for w in wanted if w not in {"moe_experts", "moe_router"}]
        vision = declared.get("vision")
        if vision is not None and (vision.present or vision.status in {"quantized", "mixed"}):
            wanted.append("vision")
    return [w for w in wanted if w in declared and declared[w].present is not False]


def _has_experts(ctx: FindingContext, declared: dict[str, LayerDeclaration]) -> bool:
    """Whether the model has MoE experts: the attribution found some, or the declaration's
    model has them (its config's architecture or dimensions say; without a config, when the
    declaration names the experts)."""
    if any(row.layer in {"moe_experts", "moe_router"} for row in ctx.layer_times()):
        return True
    experts = declared.get("moe_experts")
    if experts is None or experts.present is False:
        return False
    if experts.present:
        return True
    return experts.status in {"quantized", "mixed", "excluded"} and (
        "expert" in experts.reason.lower())


def _mixed_readings(layer: LayerDeclaration) -> list[LayerDeclaration]:
    """A mixed group read as each of its schemes."""
    if layer.status != "mixed":
        return [layer]
    return [LayerDeclaration(layer.layer, "quantized", scheme, layer.reason)
            for scheme in layer.schemes]


def _best_reading(readings: list[tuple[str, str, LayerDeclaration, ExpectedPath,
                                       LogEvidence | None]]
                  ) -> tuple[str, str, LayerDeclaration, ExpectedPath, LogEvidence | None]:
    return min(readings, key=lambda r: PLAUSIBILITY.get(r[1], len(PLAUSIBILITY)))


# --- one phase ---------------------------------------------------------------------------------


def _cell_facts(rows: Sequence[LayerTime]) -> tuple[tuple[str, ...], tuple[str, ...],
                                                    str | None, tuple[str, ...]]:
    """Sources, libraries (by time), weight-only math type, largest kernel names."""
    sources: dict[str, int] = defaultdict(int)
    libraries: dict[str, int] = defaultdict(int)
    math: dict[str, int] = defaultdict(int)
    names: dict[str, int] = defaultdict(int)
    for row in rows:
        sources[row.source] += row.ns
        if row.library:
            libraries[row.library] += row.ns
        if row.path == "weight_only" and row.activations:
            math[row.activations] += row.ns
        if row.name:
            names[row.name] += row.ns
    by_time = lambda d: tuple(k for k, _ in sorted(d.items(), key=lambda kv: -kv[1]))  # noqa: E731
    return (by_time(sources), by_time(libraries),
            max(math, key=lambda k: math[k]) if math else None, by_time(names)[:3])


def judge(phase: PhaseTime, ctx: FindingContext, rules: FindingRules) -> Judgement:
    """Judge every (layer, path) cell of one phase, then the phase's headline."""
    decl = ctx.declaration
    understood = decl is not None and not decl.not_understood
    verdicts: list[LayerVerdict] = []
    mixed_fine: dict[int, LayerVerdict] = {}  # index → its reading if no layer is forced
    declared = declare_layers(decl) if decl is not None and understood else {}
    has_experts = _has_experts(ctx, declared) if declared else False
    quantized_model = any(rank(scheme.path) >= 1 for d in declared.values()
                          for scheme in (*d.schemes, *([d.scheme] if d.scheme else [])))
    logs = tuple(ctx.log_evidence)
    for cell in _cells(phase):
        sources, libraries, math, names = _cell_facts(cell.rows)
        common: dict[str, Any] = {
            "phase": phase.phase, "layer": cell.layer, "ran": cell.path, "ns": cell.ns,
            "share": cell.ns / phase.total, "sources": sources, "libraries": libraries,
            "math": math, "names": names, "weights": cell.weights}
        if decl is None or not understood:
            reason = ("no checkpoint declaration to compare with" if decl is None
                      else f"the declaration was not understood: {decl.not_understood}")
            verdicts.append(LayerVerdict(**common, outcome="no_declaration", severity=None,
                                         declared=None, expected=None, reason=reason))
            continue
        if cell.layer in UNCERTAIN_LAYERS:
            candidates = _layer_candidates(cell.layer, declared, has_experts)
        else:
            candidates = [cell.layer] if cell.layer in declared else []
        options = [(candidate, reading) for candidate in candidates
                   for reading in _mixed_readings(declared[candidate])]
        fitting = [(c, r) for c, r in options if _weights_fit(cell, r)]
        readings = []
        for candidate, reading in fitting or options:
            expected = expected_path(reading, ctx.gpu_arch, ctx.engine)
            outcome, line = outcome_of(cell.path, reading, expected, logs,
                                       quantized_model=quantized_model)
            readings.append((candidate, outcome, reading, expected, line))
        if not readings:
            verdicts.append(LayerVerdict(**common, outcome="undetermined", severity=None,
                                         declared=None, expected=None,
                                         reason="no declared layer group to judge it against"))
            continue
        layer_name, outcome, reading, expected, line = _best_reading(readings)
        outcomes = {r[1] for r in readings}
        reason = expected.reason
        if outcomes & FINE and outcomes & FALLBACKS:
            outcome = "undetermined"
            reason = _undetermined_reason(cell, readings)
        elif cell.layer in UNCERTAIN_LAYERS and len(candidates) > 1:
            reason = (f"{reason}; the layer is not known: judged as "
                      + ", ".join(sorted({r[0] for r in readings})))
        if expected.kind == "unknown" and outcome == "undetermined":
            reason = expected.reason
        if outcome == "undetermined" and cell.layer not in UNCERTAIN_LAYERS:
            # a known group whose modules are declared both ways (a mixed group): this path
            # is one of its schemes, unless that scheme's layers ran nowhere (_somewhere)
            fine = min((r for r in readings if r[1] in FINE),
                       key=lambda r: PLAUSIBILITY.get(r[1], len(PLAUSIBILITY)))
            mixed_reason = (f"{rules.layer_word(cell.layer)} is declared "
                            + " and ".join(dict.fromkeys(_scheme_word(r[2]) for r in readings))
                            + f" (a mixed group): the {cell.path} GEMMs are its "
                            f"{_scheme_word(fine[2])} modules")
            mixed_fine[len(verdicts)] = LayerVerdict(
                **common, outcome=fine[1], severity=rules.outcome_severity(fine[1]),
                declared=fine[2], expected=fine[3], reason=mixed_reason, log=fine[4],
                readings=tuple((r[0], r[1]) for r in readings))
        verdicts.append(LayerVerdict(
            **common, outcome=outcome, severity=rules.outcome_severity(outcome, cell.ns /
                                                                       phase.total),
            declared=None if outcome == "undetermined" and len(readings) > 1 else reading,
            expected=expected, reason=reason, log=line,
            readings=tuple((r[0], r[1]) for r in readings) if len(readings) > 1 else ()))
    verdicts = _somewhere(verdicts, phase, rules, ctx, declared, quantized_model, logs)
    verdicts = [mixed_fine[i] if i in mixed_fine and v.outcome == "undetermined" else v
                for i, v in enumerate(verdicts)]
    return _headline(phase, verdicts, ctx, rules)


def _scheme_word(layer: LayerDeclaration) -> str:
    scheme = layer.scheme
    if scheme is None:
        return "16-bit"
    if rank(scheme.path) < 1:
        return scheme.path.upper()
    return f"{scheme.scheme} {scheme.quant}"


def _undetermined_reason(cell: _Cell, readings: Sequence[tuple[str, str, Any, Any, Any]]
                         ) -> str:
    fine = sorted({r[0] for r in readings if r[1] in FINE})
    bad = sorted({r[0] for r in readings if r[1] not in FINE})
    where = "layer" if cell.layer == "unknown" else "group (attention or MLP)"
    return (f"{cell.path} GEMMs whose {where} is not known: fine as {', '.join(fine)}, not as "
            f"{', '.join(bad)} — operand shapes (torch.profiler record_shapes=True), module "
            "frames (with_modules=True) or --model with the config's dimensions would decide")


def _somewhere(verdicts: list[LayerVerdict], phase: PhaseTime, rules: FindingRules,
               ctx: FindingContext, declared: dict[str, LayerDeclaration],
               quantized_model: bool, logs: Sequence[LogEvidence]) -> list[LayerVerdict]:
    """The declared quantized layers had to run somewhere. A group whose expected path (or a
    better one) took no time in the phase, and that no cell is already a certain fallback of,
    is among the undetermined cells that read as its fallback: those cells are that fallback
    (a mixed checkpoint's FP8 attention on Marlin next to its W4A16 MLP; every layer 16-bit
    with no quantized or weight-only GEMM at all: dequantize + 16-bit emulation)."""
    if not quantized_model:
        return verdicts
    absent_share = rules.setting("native_absent_share", 0.02)
    limit = absent_share * max(phase.known, 1)
    certain = {layer for v in verdicts if v.outcome in FALLBACKS
               for layer in ([v.layer] if not v.readings else
                             [r[0] for r in v.readings if r[1] in FALLBACKS])}
    absent: dict[str, tuple[LayerDeclaration, ExpectedPath]] = {}
    for name, layer in declared.items():
        for reading in _mixed_readings(layer):
            if reading.scheme is None or rank(reading.scheme.path) < 1:
                continue
            expected = expected_path(reading, ctx.gpu_arch, ctx.engine)
            if expected.kind not in {"native", "hardware_fallback", "engine_fallback",
                                     "by_design"}:
                continue
            # GEMMs of unknown path may be this group's (an untyped MoE kernel), and GEMMs
            # of another quantized format are these layers in another format (a mismatch)
            present = sum(ns for path, ns in phase.by_path.items()
                          if path == "unknown" or outcome_of(path, reading, expected)[0]
                          in FINE | {"mismatch"})
            if present <= limit and name not in certain:
                absent.setdefault(name, (reading, expected))
    if not absent:
        return verdicts
    result = []
    for verdict in verdicts:
        forced = None
        if verdict.outcome == "undetermined":
            for name, outcome in verdict.readings or ((verdict.layer, verdict.outcome),):
                if name in absent and outcome in FALLBACKS:
                    forced = (name, outcome)
                    break
        if forced is None:
            result.append(verdict)
            continue
        name, outcome = forced
        reading, expected = absent[name]
        _, line = outcome_of(verdict.ran, reading, expected, logs)
        scheme = reading.scheme
        label = f"{scheme.scheme} {scheme.quant}" if scheme else ""
        reason = (f"the {label} {rules.layer_word(name)} ran no {expected.path} GEMM in "
                  f"{phase.phase}: they are among these {verdict.ran} GEMMs; {expected.reason}")
        result.append(LayerVerdict(
            phase=verdict.phase, layer=verdict.layer, ran=verdict.ran, ns=verdict.ns,
            share=verdict.share, outcome=outcome,
            severity=rules.outcome_severity(outcome, verdict.share), declared=reading,
            expected=expected, reason=reason, readings=verdict.readings,
            sources=verdict.sources, libraries=verdict.libraries, math=verdict.math,
            names=verdict.names, log=line, weights=verdict.weights))
    return result


#: headline order: the most severe problem first, then the plain readings
_HEADLINE_ORDER = ("degraded", "silent_fallback", "logged_fallback", "mismatch",
                   "undetermined", "hardware_limited", "engine_limited", "better",
                   "as_declared", "excluded",
                   "unknown", "no_declaration")


def _headline(phase: PhaseTime, verdicts: Sequence[LayerVerdict], ctx: FindingContext,
              rules: FindingRules) -> Judgement:
    """The phase's state and sentence fields from its cells: the most severe outcome that
    carries at least ``fallback_min_share`` of the GEMM time, else the largest reading."""
    min_share = rules.setting("fallback_min_share", 0.05)
    by_outcome: dict[str, list[LayerVerdict]] = defaultdict(list)
    for verdict in verdicts:
        by_outcome[verdict.outcome].append(verdict)
    share = {outcome: sum(v.share for v in rows) for outcome, rows in by_outcome.items()}
    decl = ctx.declaration
    unknown_share = phase.by_path.get("unknown", 0) / phase.total
    if unknown_share > 0.5:
        chosen = "unknown"
    else:
        # undetermined GEMMs lead only when they weigh as a warning (more than lm_head and
        # the routers usually take); below that the sentence reads what is known
        warning_share = rules.setting("undetermined_warning_share", 0.3)
        problems = [o for o in _HEADLINE_ORDER[:5] if share.get(o, 0) >= (
            warning_share if o == "undetermined" else min_share)]
        if problems:
            chosen = problems[0]
        else:
            fine = [o for o in by_outcome if o != "unknown"] or list(by_outcome)
            chosen = max(fine, key=lambda o: (share[o], -_HEADLINE_ORDER.index(o)))
            if chosen == "excluded" and "as_declared" in by_outcome:
                chosen = "as_declared"
    rows = by_outcome.get(chosen, [])
    state = _state(chosen, rows, ctx)
    if chosen == "as_declared" and decl is not None and decl.path in QUANTIZED_PATHS:
        quantized_rows = [v for v in rows if v.ran in QUANTIZED_PATHS]
        if quantized_rows:  # "ran fp4 (CUTLASS), as the checkpoint declares"
            rows = quantized_rows
    fields = verdict_fields(phase.phase, rows, ctx, rules, state=state)
    fields["rest"] = rest(verdicts, rows, rules)
    return Judgement(phase.phase, state, fields["observed"], fields["share"], fields,
                     tuple(verdicts))


def _state(outcome: str, rows: Sequence[LayerVerdict], ctx: FindingContext) -> str:
    if outcome == "undetermined" and any(
            v.expected is not None and v.expected.kind == "unknown" for v in rows):
        return "unverified"
    if outcome in _STATES:
        return _STATES[outcome]
    decl = ctx.declaration
    if outcome in {"as_declared", "excluded"} and decl is not None:
        if decl.path in QUANTIZED_PATHS:
            return "confirmed"
        if decl.path == "weight_only":
            return "native_unused" if native_possible(rows, ctx) else "weight_only_declared"
    return "as_declared"


def judge_run(ctx: FindingContext, rules: FindingRules) -> RunJudgement:
    """Judge each phase with GEMM time worth a verdict, once."""
    phases = judged_phases(phase_times(ctx.layer_times()), rules)
    return RunJudgement(tuple(phases), tuple(judge(phase, ctx, rules) for phase in phases))
