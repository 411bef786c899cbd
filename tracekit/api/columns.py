"""The columns of ``Run.kernels()``: what each is in SQL, its type, which come by default.

Kept apart from the frame code so that naming them (``tracekit.api.KERNEL_COLUMNS``) needs
neither pandas nor numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracekit.classifier.model import CONFIDENCE, EVIDENCE, OPS, PATHS
from tracekit.report.document import CLASSIFICATION_FIELDS
from tracekit.vocabulary import PHASES

#: what a record without a classification row counts as (as in the analysis document)
UNCLASSIFIED = {"op": "other", "path": "unknown", "evidence": "none", "confidence": "low",
                "reason": "not classified"}
#: columns that belong to the kernel's name: categoricals looked up per unique name
NAME_COLUMNS: tuple[str, ...] = ("name", "short_name", *CLASSIFICATION_FIELDS)
#: categories every run shares, so frames of several runs concatenate as categoricals
VOCABULARY: dict[str, Sequence[str]] = {"op": OPS, "path": PATHS, "evidence": EVIDENCE,
                                        "confidence": CONFIDENCE}

_PHASE_CODE = ("CASE k.phase " + " ".join(f"WHEN '{phase}' THEN {index}"
                                          for index, phase in enumerate(PHASES[:-1]))
               + f" ELSE {len(PHASES) - 1} END")

#: the record's own columns: SQL expression, kind, integer type (see ``frames.Column``)
RECORD_COLUMNS: dict[str, tuple[str, str, str]] = {
    "id": ("k.id", "int", "int64"),
    "start_ns": ("k.start_ns", "int", "int64"),
    "end_ns": ("k.end_ns", "int", "int64"),
    "duration_ns": ("k.end_ns - k.start_ns", "int", "int64"),
    "phase": (_PHASE_CODE, "codes", "int8"),
    "step_id": ("k.step_id", "nullable", "int64"),
    "device": ("k.device", "nullable", "int32"),
    "stream": ("k.stream", "nullable", "int64"),
    "global_pid": ("k.global_pid", "nullable", "int64"),
    "global_tid": ("k.global_tid", "nullable", "int64"),
    "launch_start_ns": ("k.launch_start_ns", "nullable", "int64"),
    "launch_end_ns": ("k.launch_end_ns", "nullable", "int64"),
    "correlation_id": ("k.correlation_id", "nullable", "int64"),
    "external_id": ("k.external_id", "nullable", "int64"),
    "graph_id": ("k.graph_id", "nullable", "int64"),
    "graph_node_id": ("k.graph_node_id", "nullable", "int64"),
    **{name: (f"k.{name}", "nullable", "int32")
       for name in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                    "registers", "static_smem", "dynamic_smem")},
}
#: every column ``Run.kernels(columns=…)`` can give
KERNEL_COLUMNS: tuple[str, ...] = (*RECORD_COLUMNS, *NAME_COLUMNS)
#: what ``Run.kernels()`` gives when no columns are asked for
DEFAULT_KERNEL_COLUMNS: tuple[str, ...] = (
    "start_ns", "end_ns", "duration_ns", "name", "op", "path", "phase", "step_id", "device",
    "stream", "global_tid")
