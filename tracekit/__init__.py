"""tracekit: which arithmetic did the GPU really run?

In Python (pandas DataFrames; see ``tracekit.api``)::

    import tracekit
    run = tracekit.analyze("report.nsys-rep", model="./Llama-3.1-8B-NVFP4")
    run.verdict, run.gemm_paths(), run.phases(), run.names(), run.findings()
    store = tracekit.open_store()          # ./tracekit.db or $TRACEKIT_STORE
    store.runs(); store.run("latest").kernels(path="weight_only")
    tracekit.diff(store.run(-2), store.run(-1)); tracekit.classify(["sm90_xmma_gemm_…"])

``tracekit.mark.step(...)`` marks engine steps in your own code (NVTX / record_function).

The API is loaded on first use (module ``__getattr__``): ``import tracekit`` and
``import tracekit.mark``, which engine processes run, load neither pandas nor SQLAlchemy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tracekit.errors import TracekitError
from tracekit.version import __version__

#: public name -> module that defines it, imported when the name is first used
_LAZY = {
    "analyze": "tracekit.api",
    "classify": "tracekit.api",
    "compare": "tracekit.api",
    "diff": "tracekit.api",
    "open_store": "tracekit.api",
    "Run": "tracekit.api",
    "RunStore": "tracekit.api",
}

__all__ = ["Run", "RunStore", "TracekitError", "__version__", "analyze", "classify", "compare",
           "diff", "open_store"]

if TYPE_CHECKING:
    from tracekit.api import Run, RunStore, analyze, classify, compare, diff, open_store


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracekit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
