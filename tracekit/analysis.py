"""The analysis pipeline: ingest → classify → phases → groups → findings → document.

Ingest is its own transaction (a run lands whole or not at all). The derived stages run
together in a second transaction and can be re-run alone on an existing run, e.g. after new
rules or with a different ``--model``: their tables are rewritten, never appended to.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from tracekit import judgements, progress
from tracekit.ingest.pipeline import IngestResult, ingest
from tracekit.report.document import build_document
from tracekit.store.db import Store

if TYPE_CHECKING:
    from tracekit.ingest.inputs import InputSet
    from tracekit.phases.ingest_time import IngestTimeSteps


#: namespace of the PostgreSQL advisory lock that keeps judgements of one run apart
STAGES_LOCK_SPACE = 0x7472_6B73  # "trks"


@dataclass
class AnalysisOptions:
    """What the user told us beyond the trace itself."""

    model: Path | None = None
    expect: str | None = None
    gpu: str | None = None
    logs: Sequence[Path] = ()
    rules_dirs: Sequence[Path] = ()
    label: str | None = None
    engine: str | None = None
    work_dir: Path | None = None
    allow_no_kernels: bool = False
    unknown_threshold: float = 0.2
    #: find a stored run by content hash only, not by path and file signature
    rehash: bool = False
    #: worker processes reading several files (None: the machine's cores)
    jobs: int | None = None
    #: keep several files as one run even when they are not one job
    one_run: bool = False
    #: add the files to the run of this job (made by the first ingest naming it)
    job: str | None = None
    #: judge a stored run with the options given only, not the earlier judgement's
    fresh: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def rejudge(self) -> bool:
        """True when the user gave something that changes the verdict of a stored run."""
        return bool(self.model or self.expect or self.gpu or self.logs or self.rules_dirs
                    or self.engine)


@dataclass
class AnalysisResult:
    """A finished analysis: the run, whether it was already in the store, its document."""

    run_id: int
    existing: bool
    document: dict[str, Any]
    #: what the user should know about how the run was judged (the earlier judgement's
    #: options kept, those replaced: ``tracekit.judgements``); not warnings
    notes: list[str] = field(default_factory=list)


def check_inputs(paths: Sequence[Path], label: str | None) -> InputSet:
    """Refuse unreadable inputs and a label spelled like a run selector, before any store is
    opened (so a bad call creates no store file); the inputs as found."""
    from tracekit.ingest.inputs import gather_inputs
    from tracekit.store.selectors import check_label

    gathered = gather_inputs(list(paths))
    check_label(label)
    return gathered


def with_inputs(options: AnalysisOptions, gathered: InputSet) -> AnalysisOptions:
    """The options completed by what the inputs told: an audit run folder's engine log (as
    ``--log``), its engine and requested GPU — each only where the user gave none — and
    the inputs' warnings (files skipped)."""
    record = gathered.record or {}
    requested = record.get("gpu") if isinstance(record.get("gpu"), dict) else {}
    return replace(
        options,
        logs=list(options.logs) or list(gathered.logs),
        engine=options.engine or record.get("engine"),
        gpu=options.gpu or (requested or {}).get("requested"),
        warnings=[*options.warnings, *gathered.notes])


def analyze(store: Store, paths: Sequence[Path], options: AnalysisOptions, *,
            gathered: InputSet | None = None) -> AnalysisResult:
    """Ingest ``paths`` (or find them in the store) and run every analysis stage."""
    from tracekit.ingest.inputs import gather_inputs
    from tracekit.phases.ingest_time import IngestTimeSteps

    gathered = gathered or gather_inputs(list(paths))
    options = with_inputs(options, gathered)
    steps = IngestTimeSteps()
    ingested: IngestResult = ingest(store, paths, work_dir=options.work_dir,
                                    allow_no_kernels=options.allow_no_kernels,
                                    label=options.label, step_attribution=steps,
                                    side_reads=True, rehash=options.rehash,
                                    jobs=options.jobs, one_run=options.one_run,
                                    job=options.job, gathered=gathered)
    options.warnings.extend(ingested.notes)
    several = len(gathered.files) > 1 or options.job is not None
    if ingested.existing:
        if options.label:
            with store.begin() as connection:
                connection.execute(text("UPDATE runs SET label = :label WHERE id = :run_id"),
                                   {"label": options.label, "run_id": ingested.run_id})
    # A run judged before (a stored run, a job's run gaining files) keeps the expectations
    # of its earlier judgement unless replaced (tracekit.judgements).
    with store.connect() as connection:
        previous = judgements.stored(connection, ingested.run_id)
    wanted = options.rejudge or options.engine is not None or options.fresh
    new_rules = bool(options.rules_dirs)  # the same folder may hold new rules
    options, notes = judgements.recall(previous, options, fresh=options.fresh)
    if ingested.existing and (not wanted or (judgements.same(previous, options)
                                             and not options.fresh and not new_rules)):
        # The same bytes again and nothing new to judge them by: show what is stored.
        with store.connect() as connection:
            document = build_document(connection, ingested.run_id)
        document["warnings"] = list(options.warnings)
        return AnalysisResult(ingested.run_id, True, document)
    document = run_stages(store, ingested.run_id, options,
                          ingest_steps=None if ingested.existing or several else steps)
    return AnalysisResult(ingested.run_id, ingested.existing, document, notes)


#: the derived stages as the progress bar names them, in the order they run
STAGES = {"gpu": "the run's GPU", "classify": "classifying kernel names",
          "phases": "prefill and decode steps", "groups": "summing records per name",
          "layers": "layer groups", "findings": "judging against the declaration",
          "report": "the analysis document"}


def _next(task: progress.Task, run_id: int, stage: str) -> None:
    task.advance()
    task.update(description=f"run {run_id}: {STAGES[stage]}")


def run_stages(store: Store, run_id: int, options: AnalysisOptions, *,
               ingest_steps: IngestTimeSteps | None = None) -> dict[str, Any]:
    """Classification, phases and findings for one run, in one transaction.

    ``ingest_steps``: what the ingest that just stored the run did toward phases. When it
    made the marker steps and gave each kernel its step as it copied them, the phases stage
    only completes that work, and the per-name groups are summed meanwhile on a second
    connection (kept unless phases rewrote kernels).
    """
    from tracekit.aggregate import GroupsInBackground, refresh_kernel_groups, write_kernel_groups
    from tracekit.classifier import load_ruleset
    from tracekit.classifier.stage import classify_run
    from tracekit.expect.context import load_expectations
    from tracekit.findings.stage import evaluate_run
    from tracekit.layers.stage import attribute_layers
    from tracekit.phases.stage import attribute_phases
    from tracekit.ranks import rank_findings
    from tracekit.run_gpu import settle_run_gpu

    ruleset = load_ruleset(options.rules_dirs)
    expectations = load_expectations(options)
    in_background = ingest_steps is not None and ingest_steps.attributed \
        and store.shared_by_connections
    groups = GroupsInBackground(store, run_id) if in_background else nullcontext()
    with groups, store.begin() as connection, \
            progress.task(f"run {run_id}: the run's GPU", total=len(STAGES),
                          unit="steps") as task:
        if store.is_postgres:
            # One judgement of a run at a time: several `analyze --job` processes adding
            # ranks to one run each judge it again (SQLite's write lock does this itself).
            connection.execute(text("SELECT pg_advisory_xact_lock(:space, :run_id)"),
                               {"space": STAGES_LOCK_SPACE, "run_id": run_id})
        run_gpu = settle_run_gpu(connection, run_id, expectations.gpu,
                                 expectations.log_evidence)
        if options.engine or expectations.model_label:
            connection.execute(text(
                "UPDATE runs SET engine = COALESCE(:engine, engine), "
                "model_label = COALESCE(:model, model_label) WHERE id = :run_id"),
                {"engine": options.engine, "model": expectations.model_label, "run_id": run_id})
        _next(task, run_id, "classify")
        classify_run(connection, run_id, ruleset)
        _next(task, run_id, "phases")
        phases = attribute_phases(connection, run_id, ingest=ingest_steps)
        _next(task, run_id, "groups")
        if isinstance(groups, GroupsInBackground) and not phases.kernels_rewritten:
            write_kernel_groups(connection, run_id, groups.rows())
        else:
            refresh_kernel_groups(connection, run_id)
        _next(task, run_id, "layers")
        attribute_layers(connection, run_id, expectations.shape)
        _next(task, run_id, "findings")
        evaluate_run(connection, run_id, declaration=expectations.declaration,
                     log_evidence=expectations.log_evidence,
                     unknown_threshold=options.unknown_threshold, engine=options.engine,
                     model_error=getattr(expectations, "model_error", None))
        rank_findings(connection, run_id)
        judgements.remember(connection, run_id, options)
        _next(task, run_id, "report")
        document = build_document(connection, run_id)
    document["warnings"] = [*options.warnings, *expectations.warnings, *run_gpu.warnings]
    return document
