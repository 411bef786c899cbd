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
import importlib.util
import os
import sys
from typing import TYPE_CHECKING, Any

from tracekit.errors import TracekitError
from tracekit.version import __version__

#: data folders a wheel installs as subpackages (pyproject ``package-dir``)
DATA_PACKAGES = ("parsers", "rules")


def _data_packages_of_a_checkout() -> None:
    """Make ``tracekit.parsers`` and ``tracekit.rules`` importable from a source checkout.

    A wheel installs ``parsers/`` and ``rules/`` inside the package, and an editable install
    maps them there; but Python run from the repository root imports the source tree's
    ``tracekit/``, beside which they sit. Then they are loaded from there, under the same
    names, so ``importlib.resources`` finds the data files either way.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    for name in DATA_PACKAGES:
        full = f"{__name__}.{name}"
        init = os.path.join(root, name, "__init__.py")
        if full in sys.modules or os.path.isdir(os.path.join(here, name)) \
                or not os.path.isfile(init):
            continue
        spec = importlib.util.spec_from_file_location(
            full, init, submodule_search_locations=[os.path.join(root, name)])
        if spec is None or spec.loader is None:  # pragma: no cover - a plain .py file
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
        globals()[name] = module


_data_packages_of_a_checkout()

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
