"""Nsight Compute on a few kernels: the tensor-pipe counters that prove a GEMM's datatype path.

ncu replays every profiled launch many times, so it must never see a whole engine run: by
default it profiles only the top GEMMs (by GPU time) of a previous run in the store, a few
launches each. The counters — ``sm__ops_path_tensor_src_*`` and
``sm__inst_executed_pipe_tensor*`` (docs/formats.md#nsight-compute-csv-and-ncu-rep) — are the
strongest evidence the classifier accepts (counters before names:
docs/vocabulary.md#a-classification). ncu writes a report into the run folder;
``tracekit.ingest.convert.ncu_rep_to_csv`` turns it into the raw-page CSV that
``parsers/ncu-csv.toml`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import text

from tracekit.store.db import Store

REPORT_STEM = "ncu"
FILTER_PREFIX_CHARS = 120

#: the tensor-pipe counters (metric names: the Nsight Compute Profiling Guide,
#: https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html; how they decide a path:
#: tracekit/classifier/evidence.py), plus the DRAM bytes a roofline needs; names a chip lacks
#: come back as n/a, which the reader keeps as missing
METRICS: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "sm__inst_executed_pipe_tensor.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_imma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp8.sum",
    "sm__ops_path_tensor_src_int8.sum",
    "sm__ops_path_tensor_src_fp64.sum",
    "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32.sum",
    "sm__ops_path_tensor_op_utcomma_src_fp4_dst_fp32.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
)


@dataclass
class NcuSettings:
    """Which kernels to profile and how many launches of each."""

    kernel_names: Sequence[str] = ()
    launches_per_kernel: int = 3
    metrics: Sequence[str] = METRICS
    extra_args: Sequence[str] = field(default_factory=tuple)


def kernel_filter(names: Sequence[str]) -> str | None:
    """An ncu ``--kernel-name regex:`` matching names that start like ``names`` (demangled)."""
    if not names:
        return None
    prefixes = sorted({name[:FILTER_PREFIX_CHARS] for name in names})
    return "regex:^(?:" + "|".join(re.escape(prefix) for prefix in prefixes) + ")"


def profile_command(ncu: Path, output_base: Path, settings: NcuSettings,
                    command: Sequence[str]) -> list[str]:
    """``ncu … -o OUTPUT_BASE COMMAND``: child processes followed, only the chosen kernels."""
    argv = [str(ncu), "--target-processes", "all", "--force-overwrite",
            "--metrics", ",".join(settings.metrics)]
    name_filter = kernel_filter(settings.kernel_names)
    if name_filter:
        argv += ["--kernel-name-base", "demangled", "--kernel-name", name_filter,
                 "--launch-count", str(max(1, settings.launches_per_kernel)
                                       * len(settings.kernel_names))]
    else:
        argv += ["--launch-count", str(max(1, settings.launches_per_kernel) * 10)]
    argv += list(settings.extra_args)
    argv += ["-o", str(output_base)]
    return argv + list(command)


def top_gemms(store: Store, run_id: int | None, limit: int = 5) -> tuple[int | None, list[str]]:
    """The ``limit`` GEMM kernel names with most GPU time in ``run_id`` (default: latest run)."""
    with store.connect() as connection:
        if run_id is None:
            run_id = connection.execute(text(
                "SELECT r.id FROM runs r WHERE EXISTS (SELECT 1 FROM classifications c "
                "WHERE c.run_id = r.id AND c.op IN ('gemm', 'grouped_gemm', 'gemv')) "
                "ORDER BY r.id DESC LIMIT 1")).scalar()
            if run_id is None:
                return None, []
        rows = connection.execute(text(
            "SELECT n.name, SUM(k.end_ns - k.start_ns) AS total FROM kernels k "
            "JOIN kernel_names n ON n.id = k.name_id "
            "JOIN classifications c ON c.run_id = k.run_id AND c.name_id = k.name_id "
            "WHERE k.run_id = :run_id AND c.op IN ('gemm', 'grouped_gemm', 'gemv') "
            "GROUP BY n.name ORDER BY total DESC LIMIT :limit"),
            {"run_id": run_id, "limit": limit}).all()
    return run_id, [str(row[0]) for row in rows]
