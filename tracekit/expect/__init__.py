"""Expectations: what the checkpoint declares, what the GPU computes, what the engine logged.

- :func:`read_declaration` / :func:`declaration_from_word` → :class:`Declaration`
  (checkpoint configs, GGUF headers, ``--expect``);
- :func:`scan_log` → :class:`LogEvidence` (patterns ``rules/_log_patterns.toml``);
- :func:`load_expectations` gathers all of them for one analysis.

What a GPU computes natively is :mod:`tracekit.gpus`' (the capability table
``rules/_gpus.toml``), shared with the classifier and the roofline.
"""

from tracekit.expect.checkpoint import (
    Declaration,
    LayerScheme,
    declaration_from_word,
    read_declaration,
)
from tracekit.expect.context import Expectations, load_expectations
from tracekit.expect.logs import LogEvidence, scan_log

__all__ = [
    "Declaration",
    "Expectations",
    "LayerScheme",
    "LogEvidence",
    "declaration_from_word",
    "load_expectations",
    "read_declaration",
    "scan_log",
]
