"""The judgement per layer group, made once and read by the findings and the verdict sentences.

Each phase's GEMM time is split by layer group (``layer_times``: attention, MLP, MoE experts,
router, lm_head, …) and by the path that ran. Every (layer, path) cell is judged against what
*that layer* declares (``tracekit.expect.checkpoint.layers``), on this GPU, in this engine
(``tracekit.expect.kernel_paths.expected_path``): the expected path ran (``as_declared``,
``hardware_limited``), an excluded layer stayed 16-bit (``excluded``), the engine chose better
(``better``), a worse path ran (``silent_fallback`` / ``logged_fallback`` where the expected path
was native, ``degraded`` where it was itself a fallback or weight-only by design), or a
quantized path the layer does not declare ran (``mismatch``).

A cell whose layer the evidence does not tell (``unknown``; ``decoder_layers``: attention or
MLP) is judged against every group it could be: when all agree, that outcome; when one reading
is fine and another is not, ``undetermined`` (16-bit GEMMs next to native ones may be lm_head or
a partial fallback). One inference is certain without layers: the declared quantized layers had
to run somewhere, so when no quantized or weight-only GEMM ran in a phase at all, its 16-bit
GEMMs are those layers (dequantize + 16-bit emulation).

Each phase gets a headline state (a key of ``[verdict]`` in ``rules/_findings.toml``) from its
most severe outcome, and the verdicts of every cell for the layer table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from tracekit.datafiles import load_table
from tracekit.expect.checkpoint import Declaration
from tracekit.expect.checkpoint.layers import DECLARED_LAYERS, LayerDeclaration, declare_layers
from tracekit.expect.kernel_paths import ExpectedPath, expected_path, rank
from tracekit.expect.logs import LogEvidence
from tracekit.findings.model import FindingContext, LayerTime, PathTime
from tracekit.findings.rules import FindingRules
from tracekit.gpus import native_paths, short_gpu_name
from tracekit.vocabulary import DEFAULT_16BIT_LAYERS, PHASES, QUANTIZED_PATHS, WIDE_PATHS

SIXTEEN_BIT_PATHS = frozenset(WIDE_PATHS)
#: layer words whose group the evidence leaves open, judged against several groups
UNCERTAIN_LAYERS = frozenset({"unknown", "decoder_layers"})
#: outcomes that are not a problem
FINE = frozenset({"as_declared", "excluded", "better", "hardware_limited", "no_declaration"})
#: outcomes of a path worse than the layer's expected one
FALLBACKS = frozenset({"silent_fallback", "logged_fallback", "degraded"})
#: which reading of an uncertain cell is the more plausible: the fine ones, then a fallback,
#: and a mismatch (the declaration is wrong) last
_PLAUSIBILITY = {word: i for i, word in enumerate((
    "as_declared", "excluded", "better", "hardware_limited", "no_declaration", "unknown",
    "undetermined", "logged_fallback", "silent_fallback", "degraded", "mismatch"))}
#: outcome → headline state of the phase (a [verdict] key); as_declared depends on the path
_STATES = {
    "silent_fallback": "fallback",
    "logged_fallback": "logged_fallback",
    "degraded": "degraded",
    "mismatch": "mismatch",
    "hardware_limited": "hardware_limited",
    "undetermined": "undetermined",
    "better": "opted_in",
    "unknown": "unknown",
    "no_declaration": "no_declaration",
}
_FALLBACK_LOG_KINDS = frozenset({"fallback-warning", "emulation"})
_SELECTION_LOG_KINDS = frozenset({"kernel-selected", "moe-backend"})
_WEIGHT_FORMATS_NATIVE = {  # weight format of a weight-only layer → path that would use it
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4": "fp4",
    "fp8": "fp8",
    "mxfp8": "fp8",
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


@cache
def _operand_classes() -> dict[str, str]:
    return {str(k): str(v) for k, v in load_table("_paths.toml").get("operand_types",
                                                                      {}).items()}


def weight_family(word: str | None) -> str | None:
    """The family of a weight type word: ``fp4`` (e2m1, nvfp4, mxfp4), ``fp8``, ``int8``,
    ``int`` (sub-8-bit integers), ``16`` (16-bit or wider), None when unknown."""
    if not word:
        return None
    kind = _operand_classes().get(word.lower())
    if kind in {"fp4", "fp8", "int8"}:
        return kind
    if kind == "weight_only":
        return "int"
    if kind in WIDE_PATHS or word.lower() in WIDE_PATHS:
        return "16"
    return None


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


def _announcement(logs: Sequence[LogEvidence], layer: LayerDeclaration,
                  expected: ExpectedPath) -> LogEvidence | None:
    """The engine log line that announced this layer's fallback, if any: a fallback or
    emulation warning, or a kernel choice whose path is worse than the expected one — about
    this layer's format and scope when the line says (vLLM "Using MarlinNvFp4LinearKernel for
    NVFP4 GEMM", "Your GPU does not have native support for FP4 computation")."""
    scheme = layer.scheme
    for line in logs:
        if line.kind in _SELECTION_LOG_KINDS:
            if line.path is None or rank(line.path) >= rank(expected.path):
                continue
        elif line.kind not in _FALLBACK_LOG_KINDS:
            continue
        fmt = getattr(line, "format", None)
        if fmt and scheme is not None and not _same_format(fmt, scheme.weights, scheme.quant):
            continue
        scope = getattr(line, "scope", None)
        if scope == "moe" and layer.layer != "moe_experts":
            continue
        if scope == "linear" and layer.layer == "moe_experts":
            continue
        return line
    return None


def _same_format(line_format: str, weights: str | None, quant: str) -> bool:
    words = {w.lower() for w in (weights, quant) if w}
    fmt = line_format.lower()
    return any(fmt in w or w in fmt for w in words)


def outcome_of(ran: str, layer: LayerDeclaration, expected: ExpectedPath,
               logs: Sequence[LogEvidence] = (), *, quantized_model: bool = True
               ) -> tuple[str, LogEvidence | None]:
    """The outcome of ``ran`` in a layer declared ``layer`` expected to run ``expected``."""
    if ran == "unknown":
        return "unknown", None
    if layer.sixteen_bit:
        if ran in SIXTEEN_BIT_PATHS:
            excluded = layer.status == "excluded" or (
                quantized_model and layer.layer in DEFAULT_16BIT_LAYERS)
            return ("excluded" if excluded else "as_declared"), None
        return "mismatch", None
    scheme = layer.scheme
    declared_path = scheme.path if scheme is not None else expected.path
    if expected.kind in {"unknown", "unsupported"}:
        if ran == declared_path:
            return "as_declared", None
        return "undetermined", None
    if ran == expected.path:
        return ("hardware_limited" if expected.kind == "hardware_fallback"
                else "as_declared"), None
    if ran in expected.better:
        return "better", None
    if ran == declared_path:
        return "as_declared", None
    if rank(ran) < rank(expected.path):
        if expected.kind == "native":
            line = _announcement(logs, layer, expected)
            return ("logged_fallback" if line else "silent_fallback"), line
        return "degraded", None
    if rank(ran) > rank(expected.path):
        return "better", None
    return "mismatch", None


def _layer_candidates(layer: str, declared: dict[str, LayerDeclaration],
                      decl: Declaration, has_experts: bool) -> list[str]:
    """The declared groups an uncertain layer word could be."""
    if layer == "decoder_layers":
        wanted = ["attention", "mlp"] + (["moe_experts"] if has_experts else [])
    else:
        wanted = [w for w in DECLARED_LAYERS if w not in {"vision", "embedding"}]
        if not has_experts:
            wanted = [w for w in wanted if w not in {"moe_experts", "moe_router"}]
        if declared.get("vision") and declared["vision"].status in {"quantized", "excluded"}:
            wanted.append("vision")
    return [w for w in wanted if w in declared]


def _has_experts(ctx: FindingContext, declared: dict[str, LayerDeclaration]) -> bool:
    if any(row.layer in {"moe_experts", "moe_router"} for row in ctx.layer_times()):
        return True
    return declared.get("moe_experts") is not None and declared["moe_experts"].status in {
        "quantized", "mixed", "excluded"} and _names_experts(declared["moe_experts"])


def _names_experts(layer: LayerDeclaration) -> bool:
    return "expert" in layer.reason.lower()


def _mixed_readings(layer: LayerDeclaration) -> list[LayerDeclaration]:
    """A mixed group read as each of its schemes."""
    if layer.status != "mixed":
        return [layer]
    return [LayerDeclaration(layer.layer, "quantized", scheme, layer.reason)
            for scheme in layer.schemes]


def _best_reading(readings: list[tuple[str, str, LayerDeclaration, ExpectedPath,
                                       LogEvidence | None]]
                  ) -> tuple[str, str, LayerDeclaration, ExpectedPath, LogEvidence | None]:
    return min(readings, key=lambda r: _PLAUSIBILITY.get(r[1], len(_PLAUSIBILITY)))


# --- one phase ---------------------------------------------------------------------------------


def _gpu_fields(ctx: FindingContext) -> dict[str, str]:
    arch = ctx.gpu_arch or "unknown arch"
    gpu = short_gpu_name(ctx.gpu_name) if ctx.gpu_name else "GPU"  # "the GPU (sm120)"
    return {"gpu": gpu, "arch": arch}


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
            candidates = _layer_candidates(cell.layer, declared, decl, has_experts)
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
        verdicts.append(LayerVerdict(
            **common, outcome=outcome, severity=rules.outcome_severity(outcome, cell.ns /
                                                                       phase.total),
            declared=None if outcome == "undetermined" and len(readings) > 1 else reading,
            expected=expected, reason=reason, log=line,
            readings=tuple((r[0], r[1]) for r in readings) if len(readings) > 1 else ()))
    verdicts = _somewhere(verdicts, phase, rules, ctx, declared, quantized_model, logs)
    return _headline(phase, verdicts, ctx, rules)


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
            if expected.kind not in {"native", "hardware_fallback", "by_design"}:
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
                   "undetermined", "hardware_limited", "better", "as_declared", "excluded",
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
    fields["rest"] = _rest(verdicts, rows, rules)
    return Judgement(phase.phase, state, fields["observed"], fields["share"], fields,
                     tuple(verdicts))


def verdict_fields(phase: str, rows: Sequence[LayerVerdict], ctx: FindingContext,
                   rules: FindingRules, *, state: str = "") -> dict[str, Any]:
    """The template fields of a sentence about ``rows`` (cells of one phase): ``subject``,
    ``share``, ``observed``, ``detail``, ``declarer``, ``declared``, ``native``, ``gpu``,
    ``arch``, and ``expected``/``kernels`` of the expected path."""
    decl = ctx.declaration
    fields: dict[str, Any] = {"phase": phase, **_gpu_fields(ctx)}
    if decl is not None:
        fields["declarer"] = ("--expect states" if decl.method == "expect"
                              else "the checkpoint declares")
        fields["declared"] = decl.label
    paths = sorted({v.ran for v in rows}, key=lambda p: -sum(v.ns for v in rows if v.ran == p))
    share = sum(v.share for v in rows)
    expected = [v.expected for v in rows if v.expected is not None]
    fields.update({
        "share": share,
        "subject": _subject(rows, share, rules),
        "observed": " + ".join(paths) if paths else "nothing",
        "detail": _detail(rows, rules),
        "expected": expected[0].path if expected else "unknown",
        "kernels": expected[0].kernels if expected else "",
        **_native_fields(rows, decl, state),
    })
    if state == "native_unused":
        fields["native"] = (_native_possible(rows, ctx) or "").upper()
    return fields


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
            return "native_unused" if _native_possible(rows, ctx) else "weight_only_declared"
    return "as_declared"


def _native_possible(rows: Sequence[LayerVerdict], ctx: FindingContext) -> str | None:
    """For weight-only-by-design layers that ran weight-only: the path the GPU could compute
    their weight format natively with (``native-unused``)."""
    if not ctx.gpu_arch:
        return None
    native = native_paths(ctx.gpu_arch)
    for verdict in rows:
        scheme = verdict.declared.scheme if verdict.declared else None
        if verdict.ran == "weight_only" and scheme is not None and scheme.path == "weight_only":
            possible = _WEIGHT_FORMATS_NATIVE.get(scheme.weights or "")
            if possible and possible in native:
                return possible
    decl = ctx.declaration
    if decl is not None and decl.path == "weight_only":
        possible = _WEIGHT_FORMATS_NATIVE.get(decl.weights or "")
        if possible and possible in native and any(v.ran == "weight_only" for v in rows):
            return possible
    return None


def _native_fields(rows: Sequence[LayerVerdict], decl: Declaration | None,
                   state: str) -> dict[str, str]:
    """``native`` (the path word the GPU computes natively, upper case) and ``declared`` of
    the layers the headline speaks of."""
    fields: dict[str, str] = {}
    labels = [label for v in rows if v.declared is not None and v.declared.scheme
              and (label := v.declared_label) is not None]
    if labels:
        fields["declared"] = max(set(labels), key=labels.count)
    paths = [v.declared.scheme.path for v in rows
             if v.declared is not None and v.declared.scheme is not None]
    if paths:
        fields["native"] = max(set(paths), key=paths.count).upper()
    elif decl is not None:
        fields["native"] = decl.path.upper()
    return fields


def _layer_words(layers: Iterable[str], rules: FindingRules) -> str:
    words = [rules.layer_word(layer) for layer in dict.fromkeys(layers)]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _subject(rows: Sequence[LayerVerdict], share: float, rules: FindingRules) -> str:
    """"94% of GEMM time", or "the MoE experts (71% of GEMM time)" when layers are known."""
    known = [v.layer for v in rows if v.layer != "unknown"]
    if not rows or not known:
        return f"{share:.0%} of GEMM time"
    return f"{_layer_words([v.layer for v in rows], rules)} ({share:.0%} of GEMM time)"


def _detail(rows: Sequence[LayerVerdict], rules: FindingRules) -> str:
    """The " (Marlin, BF16 math)" part: libraries that ran these cells, and the weight-only
    math."""
    libraries: dict[str, int] = defaultdict(int)
    math: dict[str, int] = defaultdict(int)
    for verdict in rows:
        for row_library in verdict.libraries[:2]:
            libraries[row_library] += verdict.ns
        if verdict.math:
            math[verdict.math] += verdict.ns
    ranked = sorted(libraries.items(), key=lambda kv: -kv[1])[:2]
    parts = [rules.library(lib) for lib, _ in ranked]
    if math:
        parts.append(f"{max(math, key=lambda k: math[k]).upper()} math")
    return f" ({', '.join(dict.fromkeys(parts))})" if parts else ""


def _rest(verdicts: Sequence[LayerVerdict], headline: Sequence[LayerVerdict],
          rules: FindingRules) -> str:
    """"; attention ran fp8 as declared; lm_head ran bf16 as excluded" — the other known
    layers' readings, largest first (empty when no layer is known)."""
    if all(v.layer == "unknown" for v in verdicts):
        return ""
    shown = set(map(id, headline))
    grouped: dict[tuple[str, str], list[LayerVerdict]] = defaultdict(list)
    for verdict in verdicts:
        if id(verdict) in shown or verdict.share < 0.005:
            continue
        grouped[(verdict.outcome, verdict.ran)].append(verdict)
    parts = []
    for (outcome, ran), rows in sorted(grouped.items(),
                                        key=lambda kv: -sum(v.share for v in kv[1])):
        share = sum(v.share for v in rows)
        parts.append(f"{_layer_words([v.layer for v in rows], rules)} ({share:.0%}) ran {ran} "
                     f"{rules.outcome_word(outcome)}")
    return "".join(f"; {part}" for part in parts)


def judge_run(ctx: FindingContext, rules: FindingRules) -> RunJudgement:
    """Judge each phase with GEMM time worth a verdict, once."""
    phases = judged_phases(phase_times(ctx.layer_times()), rules)
    return RunJudgement(tuple(phases), tuple(judge(phase, ctx, rules) for phase in phases))
