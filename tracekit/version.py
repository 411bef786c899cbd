"""tracekit's version, in a module of its own: every layer that records it (the run row, the
HTML report, ``run.json`` of a capture, ``--version``) imports it from here rather than from
the package, whose ``__init__`` leads to the Python API (a circle through the whole tree)."""

from __future__ import annotations

__version__ = "0.1.0"
