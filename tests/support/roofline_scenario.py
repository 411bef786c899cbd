"""A small synthetic torch-profiler (Kineto) trace of a silent fallback, recorded with shapes.

SYNTHETIC, written here in Kineto's Chrome-trace JSON (the event kinds and arg names a real
`torch.profiler` trace with ``record_shapes=True`` uses: cpu_op with ``Input Dims``/``Input
type`` and ``External id``, cuda_runtime with ``correlation``, kernel, user_annotation with
vLLM's step marker text). The story is the canonical one: an NVFP4 W4A4 checkpoint served on
an RTX 5090 through Marlin (4-bit weights, BF16 math) instead of native FP4 GEMMs.

One prefill step of 512 tokens and four decode steps of 8 requests; per step, four Marlin
GEMMs (``_C::gptq_marlin_gemm``, M × K=4096 → N=4096, group size 128) and, in decode, one
BF16 lm_head ``aten::mm`` (8 × 4096 → 8192). One extra Marlin launch in the first decode
step has no framework op (its work is unknown). Durations are chosen so that the expected
numbers are easy to compute by hand (see tests/roofline/test_roofline.py) and stay under the
RTX 5090's roofs (the prefill GEMMs at 143 TFLOP/s, 68% of its 209.5 TFLOP/s BF16 roof).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import text

MARLIN = (
    "void marlin::Marlin<(long)1125899906909960, (long)562949953487106, (long)1125899906909960, "
    "(long)2814749767106568, (int)128, (int)4, (int)8, (int)4, (bool)0, (int)4, (int)2, (bool)0>"
    "(const int4 *, const int4 *, int4 *, int4 *, const int4 *, const int4 *, const int *, int, "
    "int, int, int, int *, bool, bool, int)"
)
LM_HEAD = "nvjet_tst_64x8_64x16_4x1_v_bz_TNT"
GPU = "NVIDIA GeForce RTX 5090"

PREFILL_M, DECODE_M, HIDDEN, VOCAB = 512, 8, 4096, 8192
PREFILL_GEMM_US, DECODE_GEMM_US, LM_HEAD_US = 120.0, 6.0, 45.0
DECODE_STEPS, GEMMS_PER_STEP = 4, 4

_MARLIN_TYPES = ["c10::BFloat16", "", "int", "", "c10::BFloat16", "", "", "", "", "", "int",
                 "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]


def _marlin_dims(m: int) -> list[list[int]]:
    # a [m, K]; c_or_none; b_q_weight int32 [K/16, N*16*4/32]; b_bias; b_scales [K/128, N];
    # a_scales; global_scale; b_zeros; g_idx; perm; workspace [128]; then 8 scalars
    return [[m, HIDDEN], [], [HIDDEN // 16, HIDDEN * 2], [], [HIDDEN // 128, HIDDEN],
            [], [], [], [], [], [128], [], [], [], [], [], [], [], []]


class _Trace:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.ids = 0
        self.cpu_us = 1000.0
        self.gpu_us = 5000.0

    def launch(self, kernel: str, dur_us: float, op: tuple[str, list[str], list[Any]] | None
               ) -> None:
        """One CPU op (if any) launching one kernel, the kernel queued back to back."""
        self.ids += 1
        external = self.ids
        correlation = 10_000 + self.ids
        start = self.cpu_us
        if op is not None:
            name, types, dims = op
            self.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 100,
                                "tid": 101, "ts": start, "dur": 8.0,
                                "args": {"External id": external, "Input type": types,
                                         "Input Dims": dims}})
        runtime_args: dict[str, Any] = {"correlation": correlation}
        kernel_args: dict[str, Any] = {"correlation": correlation, "device": 0, "stream": 7,
                                       "grid": [128, 1, 1], "block": [256, 1, 1]}
        if op is not None:
            runtime_args["External id"] = external
            kernel_args["External id"] = external
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                            "pid": 100, "tid": 101, "ts": start + 1.0, "dur": 3.0,
                            "args": runtime_args})
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                            "ts": self.gpu_us, "dur": dur_us, "args": kernel_args})
        self.cpu_us += 10.0
        self.gpu_us += dur_us + 1.0

    def step(self, text: str, body: list[tuple[str, float, Any]]) -> None:
        start = self.cpu_us - 0.5
        for kernel, dur_us, op in body:
            self.launch(kernel, dur_us, op)
        self.events.append({"ph": "X", "cat": "user_annotation", "name": text, "pid": 100,
                            "tid": 101, "ts": start, "dur": self.cpu_us - start,
                            "args": {"External id": 900_000 + len(self.events)}})
        self.cpu_us += 20.0


def marlin_op(m: int) -> tuple[str, list[str], list[Any]]:
    return ("_C::gptq_marlin_gemm", list(_MARLIN_TYPES), _marlin_dims(m))


def write_fallback_trace(path: Path) -> Path:
    """Write the trace (plain JSON) to ``path``."""
    trace = _Trace()
    trace.step(f"execute_context_1({PREFILL_M})_generation_0(0)",
               [(MARLIN, PREFILL_GEMM_US, marlin_op(PREFILL_M))] * GEMMS_PER_STEP)
    lm_head = ("aten::mm", ["c10::BFloat16", "c10::BFloat16"],
               [[DECODE_M, HIDDEN], [HIDDEN, VOCAB]])
    for index in range(DECODE_STEPS):
        body: list[tuple[str, float, Any]] = [(MARLIN, DECODE_GEMM_US, marlin_op(DECODE_M))] * \
            GEMMS_PER_STEP + [(LM_HEAD, LM_HEAD_US, lm_head)]
        if index == 0:
            body.append((MARLIN, DECODE_GEMM_US, None))  # a launch outside any recorded op
        trace.step(f"execute_context_0(0)_generation_{DECODE_M}({DECODE_M})", body)
    document = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": GPU, "computeMajor": 12, "computeMinor": 0,
                              "numSms": 170, "totalGlobalMem": 34190917632}],
        "record_shapes": 1,
        "traceEvents": trace.events,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }
    path.write_text(json.dumps(document))
    return path


_COPIES = ("WITH RECURSIVE copy(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM copy "
           "WHERE i < :last) ")


def replicate_in_store(store: Any, run_id: int, copies: int) -> None:
    """Make an analyzed run ``copies`` times as long inside the store: its kernels and CPU ops
    again with fresh ids and External ids (one ``INSERT … SELECT`` per table), then its
    per-name groups. A run of 10^6 kernels in seconds, without writing a GB of JSON."""
    from tracekit.aggregate import refresh_kernel_groups

    params = {"last": copies - 1, "r": run_id}
    with store.begin() as connection:
        if copies > 1:
            connection.execute(text(
                _COPIES + "INSERT INTO cpu_ops (id, run_id, name, start_ns, end_ns, "
                "external_id, global_tid, global_pid, input_types, input_dims) "
                "SELECT o.id + copy.i * 1000000, o.run_id, o.name, o.start_ns, o.end_ns, "
                "o.external_id + copy.i * 1000000, o.global_tid, o.global_pid, "
                "o.input_types, o.input_dims FROM cpu_ops o CROSS JOIN copy "
                "WHERE o.run_id = :r"), params)
            connection.execute(text(
                _COPIES + "INSERT INTO kernels (run_id, name_id, device, stream, start_ns, "
                "end_ns, external_id, global_pid, global_tid, phase, cpu_op_id) SELECT "
                "k.run_id, k.name_id, k.device, k.stream, k.start_ns, k.end_ns, "
                "k.external_id + copy.i * 1000000, k.global_pid, k.global_tid, k.phase, "
                "k.cpu_op_id + copy.i * 1000000 FROM kernels k CROSS JOIN copy "
                "WHERE k.run_id = :r"), params)
        refresh_kernel_groups(connection, run_id)
