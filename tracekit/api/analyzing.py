"""``tracekit.analyze``: trace files in, an analyzed ``Run`` out (``tracekit analyze``'s work).

The same checks in the same order as the command: unreadable inputs and a label spelled like
a run selector are refused before any store is opened, the run lands whole or not at all,
and expectations that cannot be read (a ``model`` path with a typo) are warnings, as without
``--fail-on``: each is issued as a Python warning and kept in ``run.warnings``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path

from tracekit.api.run import Run
from tracekit.api.store import RunStore, as_run_store
from tracekit.errors import UsageError
from tracekit.vocabulary import ENGINES

PathLike = str | os.PathLike[str]


def _paths(value: PathLike | Iterable[PathLike], what: str) -> list[Path]:
    items = [value] if isinstance(value, (str, os.PathLike)) else list(value)
    if not all(isinstance(item, (str, os.PathLike)) for item in items):
        raise UsageError(f"{what} takes a path or a list of paths, got {value!r}")
    return [Path(item) for item in items]


def analyze(path_or_paths: PathLike | Iterable[PathLike], *, model: PathLike | None = None,
            expect: str | None = None, gpu: str | None = None,
            logs: PathLike | Iterable[PathLike] = (),
            store: RunStore | PathLike | None = None, label: str | None = None,
            rules: PathLike | Iterable[PathLike] = (), engine: str | None = None,
            jobs: int | None = None, one_run: bool = False, job: str | None = None) -> Run:
    """Analyze trace files as one run and return it (``tracekit analyze FILE…``).

    ``model``: a checkpoint folder or config file (what it declares); ``expect``: the declared
    datatype path when no checkpoint is at hand (``fp4``, ``fp8``, ``int8``, ``weight_only``,
    ``bf16`` …); ``gpu``: the GPU when the trace does not say (``"RTX 5090"``, ``sm120``);
    ``logs``: engine logs to scan; ``store``: a RunStore, a path or a URL (default
    ``$TRACEKIT_STORE`` or ``./tracekit.db``); ``label``: a name for the run; ``rules``: extra
    rule pack folders; ``engine``: the engine that ran the trace (``vllm``, ``sglang``,
    ``trtllm``, ``llama.cpp``) when its markers and logs do not say. Several files are one run
    when they are the ranks of one job: ``jobs`` worker processes read them (default the
    machine's cores), ``one_run=True`` keeps files that are not one job as one run anyway,
    ``job`` adds them to the run of that job. The same bytes analyzed again give the stored
    run (judged again when ``model``/``expect``/``gpu``/``logs``/``rules``/``engine`` are
    given).
    """
    from tracekit.analysis import AnalysisOptions, check_inputs
    from tracekit.analysis import analyze as run_analysis

    paths = _paths(path_or_paths, "analyze()")
    if not paths:
        raise UsageError("analyze() needs at least one trace file")
    if label is not None and not isinstance(label, str):
        raise UsageError(f"label= takes a string, got {label!r}")
    gathered = check_inputs(paths, label)
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise UsageError(f"jobs={jobs!r} is not a number of worker processes (1 or more)")
    if engine is not None and engine not in ENGINES:
        raise UsageError(f"engine={engine!r} is not one of " + ", ".join(ENGINES))
    options = AnalysisOptions(
        model=Path(model) if model is not None else None, expect=expect, gpu=gpu,
        logs=_paths(logs, "logs="), rules_dirs=_paths(rules, "rules="), label=label,
        engine=engine, jobs=jobs, one_run=bool(one_run), job=job)
    run_store = as_run_store(store)
    result = run_analysis(run_store.writer(), paths, options, gathered=gathered)
    found = list(result.document.get("warnings", []))
    for message in found:
        warnings.warn(f"tracekit: {message}", UserWarning, stacklevel=2)
    return Run(run_store, result.run_id, warnings=found, existing=result.existing)
