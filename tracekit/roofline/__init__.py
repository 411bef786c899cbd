"""What the arithmetic cost: each phase against the GPU's compute and memory roofs.

One job per module:

- :mod:`~tracekit.roofline.work` — FLOPs and bytes of one GEMM op signature, from its shapes;
- :mod:`~tracekit.roofline.families` — the run's GEMM families (kernel name × op signature, or
  kernel name × Nsight Compute counters) with launches and GPU time, aggregated in SQL;
- :mod:`~tracekit.roofline.model` — per phase and path: achieved FLOP/s and bytes/s, arithmetic
  intensity, and which roof bounds it;
- :mod:`~tracekit.roofline.fallback` — for a silent fallback, the roofline bound of the same
  work on the path the checkpoint declares (an estimate, and it says so);
- :mod:`~tracekit.roofline.section` — the ``roofline`` section of the analysis document and
  the flat rows the Python API exposes.

The GPU's limits come from the one capability table (``tracekit.gpus``,
``rules/_gpus.toml`` ``[model.*]``).
"""

from __future__ import annotations

from tracekit.roofline.section import roofline_records, roofline_section

__all__ = ["roofline_records", "roofline_section"]
