"""Expectations: what the checkpoint declares, what the GPU computes, what the engine logged.

- :func:`read_declaration` / :func:`declaration_from_word` → :class:`Declaration`
  (checkpoint configs, GGUF headers, ``--expect``);
- :func:`arch_from_capability`, :func:`arch_from_gpu_name`, :func:`native_paths`,
  :func:`parse_gpu` (capability table ``rules/_gpus.toml``);
- :func:`scan_log` → :class:`LogEvidence` (patterns ``rules/_log_patterns.toml``);
- :func:`load_expectations` gathers all of them for one analysis.
"""

from tracekit.expect.checkpoint import (
    Declaration,
    LayerScheme,
    declaration_from_word,
    read_declaration,
)
from tracekit.expect.context import Expectations, load_expectations
from tracekit.expect.gpu import (
    arch_from_capability,
    arch_from_gpu_name,
    native_paths,
    parse_gpu,
    short_gpu_name,
)
from tracekit.expect.logs import LogEvidence, scan_log

__all__ = [
    "Declaration",
    "Expectations",
    "LayerScheme",
    "LogEvidence",
    "arch_from_capability",
    "arch_from_gpu_name",
    "declaration_from_word",
    "load_expectations",
    "native_paths",
    "parse_gpu",
    "read_declaration",
    "scan_log",
    "short_gpu_name",
]
