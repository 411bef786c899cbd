"""Where the test inputs live, named once so that a test file can move without its paths.

Everything here is inside the repository: the labelled kernel-name corpus, the checkpoint
declarations, the traces recorded on a real H200 (``fixtures/h200``, see fixtures/README.md),
and the data folders the package reads (``rules/``, ``parsers/``).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The repository root (the folder with pyproject.toml).
REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
PACKAGE = REPO / "tracekit"
RULES = REPO / "rules"
#: The labelled kernel-name corpus (``*.jsonl``) and its answer snapshot.
CORPUS = TESTS / "corpus"
#: Checkpoint folders (config.json, quantization configs, a GGUF header) for expectations.
CHECKPOINTS = TESTS / "data" / "checkpoints"
#: Kineto, CUPTI and ncu traces recorded on a real H200 by fixtures/h200/gemms.py.
H200_FIXTURES = REPO / "fixtures" / "h200"
BENCHMARKS = TESTS / "benchmarks"


def shared_traces_dir() -> Path | None:
    """Real traces recorded by others (not in the repository): ``$TRACEKIT_SHARED_TRACES``, else
    ``shared/traces`` beside or inside the checkout; None when absent (tests then skip)."""
    configured = os.environ.get("TRACEKIT_SHARED_TRACES")
    candidates = [Path(configured)] if configured else []
    candidates += [REPO.parent / "shared" / "traces", REPO / "shared" / "traces"]
    return next((path for path in candidates if path.is_dir()), None)
