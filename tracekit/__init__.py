"""tracekit: which arithmetic did the GPU really run?

Public API:
    __version__
    tracekit.mark.step(...)      — NVTX/record_function step markers for your own code
    tracekit.analysis.analyze()  — ingest + classify + phases + findings for trace files
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
