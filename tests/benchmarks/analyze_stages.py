"""Run ``tracekit analyze FILE --store STORE --json`` in this process, timing each stage.

Used by ``bench_kineto.py`` (one fresh process per measurement, so the peak RSS is the
command's own); also by hand::

    python tests/benchmarks/analyze_stages.py TRACE.json /tmp/store.db

Prints one JSON object on the last line of stdout: seconds per stage (wall clock; a stage
called twice adds up), ``total`` from interpreter start to the end of the command (imports
included), ``peak_rss_mib`` (``ru_maxrss``) and the peak when each stage had returned. The
stages are the real functions of the command, wrapped; nothing else changes.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

STARTED = time.perf_counter()
#: (module, function, label) wrapped with a timer; labels are the table's columns
STAGES = (
    ("tracekit.ingest.pipeline", "sha256_of", "hash"),
    ("tracekit.ingest.readers.kineto_json.KinetoReader", "read", "parse"),
    ("tracekit.ingest.trace_rows.TraceRows", "finish", "link"),
    ("tracekit.analysis", "ingest", "ingest"),
    ("tracekit.classifier.stage", "classify_run", "classify"),
    ("tracekit.phases.stage", "attribute_phases", "phases"),
    ("tracekit.aggregate", "write_kernel_groups", "groups"),
    ("tracekit.aggregate", "refresh_kernel_groups", "groups"),
    ("tracekit.findings.stage", "evaluate_run", "findings"),
    ("tracekit.analysis", "build_document", "document"),
    ("tracekit.analysis", "run_stages", "stages"),
)
SECONDS: defaultdict[str, float] = defaultdict(float)
#: the process's peak RSS (MiB) when each stage had returned: which stage raised the peak
PEAK_AFTER: dict[str, float] = {}


def _timed(function: Callable[..., Any], label: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - started
            PEAK_AFTER[label] = _peak_mib()
    return wrapper


def _peak_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _owner(dotted: str) -> Any:
    """The module (or class inside a module) a dotted name stands for."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            owner = getattr(owner, attribute)
        return owner
    raise ImportError(dotted)


def main() -> None:
    trace, store = sys.argv[1], sys.argv[2]
    for dotted, name, label in STAGES:
        owner = _owner(dotted)
        setattr(owner, name, _timed(getattr(owner, name), label))
    from tracekit.cli import cli

    try:
        cli(["analyze", trace, "--store", store, "--json"], standalone_mode=False)
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            raise
    SECONDS["total"] = time.perf_counter() - STARTED
    sys.stdout.flush()
    print("\n" + json.dumps({"seconds": dict(SECONDS), "peak_rss_mib": _peak_mib(),
                             "peak_rss_mib_after": PEAK_AFTER}))


if __name__ == "__main__":
    main()
