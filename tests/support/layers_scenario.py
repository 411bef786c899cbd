"""Small synthetic torch-profiler (Kineto) traces of known models, for the layer attribution.

SYNTHETIC, written here in Kineto's Chrome-trace JSON with the event kinds and arg names a
real ``torch.profiler`` trace recorded with ``record_shapes=True`` and ``with_stack=True``
has: ``python_function`` frames named ``nn.Module: <Class>_<n>`` around each module's
forward (the shape of the TraceLens B200 vLLM trace's frames), ``cpu_op`` with ``Input
Dims``/``Input type`` and ``External id``, ``cuda_runtime`` launches with ``correlation``,
``kernel`` events, vLLM's step annotations, and CUDA-graph replays (a ``cudaGraphLaunch``
and kernels with ``graph id``/``graph node id`` and no op).

Two models, dimensions chosen small and so that shapes alone are ambiguous in one place:

- ``dense``: a Llama of ``LAYERS`` layers in Hugging Face's module layout (q/k/v/o and
  gate/up/down as ``Linear``, lm_head a ``Linear`` directly in ``LlamaForCausalLM``);
  hidden 256, 4 heads of 64, 1 KV head, MLP 512, vocabulary 1100. The q and o weights
  (256 × 256) are also one rank's down_proj at tp 2; the run's other shapes (down_proj
  256 × 512, lm_head 1100 × 256) say tp 1.
- ``moe``: a Qwen2-MoE in vLLM's layout (``QKVParallelLinear``, ``RowParallelLinear``; a
  ``Qwen2MoeSparseMoeBlock`` with a ``ReplicatedLinear`` router over 8 experts, ``FusedMoE``
  running the untyped Triton ``fused_moe_kernel`` after an FP8 activation-quantize kernel,
  and a shared expert ``Qwen2MoeMLP``); lm_head inside ``LogitsProcessor``.

GEMM kernel names: ``PROJ`` serves every attention and MLP projection of the dense model
except down_proj (``DOWN``), lm_head runs ``HEAD``. The expected attribution is written out
in tests/layers/test_stage.py. Also here: ``replicate_in_store`` (a run made N times longer
inside the store, for the scaling test and bench_layers.py), ``layer_table`` / ``layer_rows``
(a run's stored ``layer_times``) and ``assert_sums_match_groups`` (the invariant every layer
test checks: each (name, phase)'s rows sum to its GEMM launches and time in kernel_groups).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.store.db import Store
from tracekit.vocabulary import LAYER_SOURCES

PROJ = "nvjet_tst_128x64_64x8_2x1_v_bz_TNT"
DOWN = "nvjet_tst_64x32_64x16_4x1_v_bz_TNN"
HEAD = "nvjet_tst_192x8_64x8_4x1_v_bz_TNT"
ATTENTION_KERNEL = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 64, 4, cutlass::bfloat16_t>>, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"  # noqa: E501
NORM = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)"  # noqa: E501
QUANT_FP8 = "void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, int, long, long)"  # noqa: E501
FUSED_MOE = "fused_moe_kernel"

LAYERS = 2
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, MLP, VOCAB = 256, 4, 1, 64, 512, 1100
EXPERTS, MOE_MLP, SHARED_MLP = 8, 128, 256
BF16 = "c10::BFloat16"

DENSE_SHAPE = ModelShape(hidden_size=HIDDEN, intermediate_size=MLP,
                         num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                         head_dim=HEAD_DIM, vocab_size=VOCAB, num_hidden_layers=LAYERS)
MOE_SHAPE = ModelShape(hidden_size=HIDDEN, intermediate_size=MLP,
                       moe_intermediate_size=MOE_MLP, shared_expert_intermediate_size=SHARED_MLP,
                       num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                       head_dim=HEAD_DIM, vocab_size=VOCAB, num_hidden_layers=LAYERS,
                       num_experts=EXPERTS)


@dataclass(frozen=True)
class Kernels:
    """Which GEMM kernel each layer role launches (defaults: the BF16 nvjet kernels above);
    the end-to-end verdict cases run other paths per role (FP4 attention, Marlin MLP …)."""

    attention: str = PROJ
    mlp: str = PROJ
    down: str = DOWN
    head: str = HEAD
    router: str = PROJ
    experts: str = FUSED_MOE
    experts_quantize: str | None = QUANT_FP8


BF16_KERNELS = Kernels()


@dataclass
class Op:
    """A framework op that launches kernels (none: a launch outside any op)."""

    name: str | None
    kernels: list[tuple[str, float]]
    dims: list[Any] = field(default_factory=list)
    types: list[str] = field(default_factory=list)


@dataclass
class Module:
    """An nn.Module call: its class, instance number and what runs inside."""

    cls: str
    body: list[Any]
    index: int = 0


def mm(m: int, k: int, n: int, kernel: str, us: float = 5.0) -> Op:
    """``aten::mm`` of x[m, k] by Wᵀ[k, n] (a Linear's weight N × K)."""
    return Op("aten::mm", [(kernel, us)], [[m, k], [k, n]], [BF16, BF16])


def dense_forward(m: int, k: Kernels = BF16_KERNELS) -> list[Any]:
    """One forward of the dense model over ``m`` token rows."""
    layers = []
    for index in range(LAYERS):
        attention = Module("LlamaAttention", [
            Module("Linear", [mm(m, HIDDEN, HEADS * HEAD_DIM, k.attention)], 4 * index),
            Module("Linear", [mm(m, HIDDEN, KV_HEADS * HEAD_DIM, k.attention)], 4 * index + 1),
            Module("Linear", [mm(m, HIDDEN, KV_HEADS * HEAD_DIM, k.attention)], 4 * index + 2),
            Op("aten::_flash_attention_forward", [(ATTENTION_KERNEL, 4.0)]),
            Module("Linear", [mm(m, HEADS * HEAD_DIM, HIDDEN, k.attention)], 4 * index + 3),
        ], index)
        mlp = Module("LlamaMLP", [
            Module("Linear", [mm(m, HIDDEN, MLP, k.mlp)], 3 * index + 100),
            Module("Linear", [mm(m, HIDDEN, MLP, k.mlp)], 3 * index + 101),
            Module("SiLU", [Op("aten::silu", [(NORM, 1.0)])], index),
            Module("Linear", [mm(m, MLP, HIDDEN, k.down)], 3 * index + 102),
        ], index)
        layers.append(Module("LlamaDecoderLayer", [
            Module("LlamaRMSNorm", [Op("_C::rms_norm", [(NORM, 1.0)])], 2 * index),
            attention, mlp], index))
    return [Module("LlamaForCausalLM", [
        Module("LlamaModel", layers),
        Module("Linear", [mm(m, HIDDEN, VOCAB, k.head, 8.0)], 999),
    ])]


def moe_forward(m: int, k: Kernels = BF16_KERNELS) -> list[Any]:
    """One forward of the MoE model over ``m`` token rows."""
    qkv = (HEADS + 2 * KV_HEADS) * HEAD_DIM
    layers = []
    quantize = [(k.experts_quantize, 1.0)] if k.experts_quantize else []
    for index in range(LAYERS):
        experts = Op("vllm::moe_forward", [*quantize, (k.experts, 9.0), (NORM, 1.0),
                                           *quantize, (k.experts, 7.0)],
                     [[m, HIDDEN], [m, EXPERTS]], [BF16, BF16])
        block = Module("Qwen2MoeSparseMoeBlock", [
            Module("ReplicatedLinear", [mm(m, HIDDEN, EXPERTS, k.router, 2.0)], index),
            Module("FusedMoE", [experts], index),
            Module("Qwen2MoeMLP", [
                Module("MergedColumnParallelLinear", [mm(m, HIDDEN, 2 * SHARED_MLP, k.mlp)],
                       index),
                Module("RowParallelLinear", [mm(m, SHARED_MLP, HIDDEN, k.down)], 2 * index),
            ], index),
        ], index)
        attention = Module("Qwen2MoeAttention", [
            Module("QKVParallelLinear", [mm(m, HIDDEN, qkv, k.attention)], index),
            Op("aten::_flash_attention_forward", [(ATTENTION_KERNEL, 4.0)]),
            Module("RowParallelLinear", [mm(m, HEADS * HEAD_DIM, HIDDEN, k.attention)],
                   2 * index + 1),
        ], index)
        layers.append(Module("Qwen2MoeDecoderLayer", [attention, block], index))
    return [Module("Qwen2MoeForCausalLM", [Module("Qwen2MoeModel", layers)]),
            Module("LogitsProcessor", [mm(m, HIDDEN, VOCAB, k.head, 8.0)])]


class _Trace:
    def __init__(self, *, frames: bool, shapes: bool) -> None:
        self.events: list[dict[str, Any]] = []
        self.frames = frames
        self.shapes = shapes
        self.ids = 0
        self.cpu = 1000.0
        self.gpu = 50_000.0

    def _kernel(self, name: str, us: float, args: dict[str, Any]) -> None:
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                            "ts": round(self.gpu, 3), "dur": us,
                            "args": {"device": 0, "stream": 7, "grid": [64, 1, 1],
                                     "block": [128, 1, 1], **args}})
        self.gpu += us + 1.0

    def op(self, op: Op) -> None:
        self.ids += 1
        external = self.ids
        start = self.cpu
        self.cpu += 1.0
        for kernel, us in op.kernels:
            self.ids += 1
            correlation = 1_000_000 + self.ids
            launch: dict[str, Any] = {"correlation": correlation}
            if op.name is not None:
                launch["External id"] = external
            self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                "pid": 100, "tid": 100, "ts": round(self.cpu, 3), "dur": 2.0,
                                "args": launch})
            self._kernel(kernel, us, dict(launch))
            self.cpu += 3.0
        if op.name is not None:
            args: dict[str, Any] = {"External id": external}
            if self.shapes:
                args.update({"Input Dims": op.dims, "Input type": op.types})
            self.events.append({"ph": "X", "cat": "cpu_op", "name": op.name, "pid": 100,
                                "tid": 100, "ts": round(start, 3),
                                "dur": round(self.cpu - start, 3), "args": args})
        self.cpu += 1.0

    def walk(self, node: Any) -> None:
        if isinstance(node, Op):
            self.op(node)
            return
        start = self.cpu
        self.cpu += 0.5
        for child in node.body:
            self.walk(child)
        self.cpu += 0.5
        if self.frames:
            self.events.append({"ph": "X", "cat": "python_function",
                                "name": f"nn.Module: {node.cls}_{node.index}", "pid": 100,
                                "tid": 100, "ts": round(start, 3),
                                "dur": round(self.cpu - start, 3),
                                "args": {"Python id": len(self.events), "Python module id": 0}})
        # other Python frames, only counted by the reader
        self.events.append({"ph": "X", "cat": "python_function",
                            "name": "torch/nn/modules/module.py(1762): _call_impl", "pid": 100,
                            "tid": 100, "ts": round(start, 3), "dur": 0.2, "args": {}})

    def step(self, marker: str, forward: list[Any]) -> None:
        start = self.cpu
        self.cpu += 1.0
        for node in forward:
            self.walk(node)
        self.cpu += 1.0
        self.events.append({"ph": "X", "cat": "user_annotation", "name": marker, "pid": 100,
                            "tid": 100, "ts": round(start, 3), "dur": round(self.cpu - start, 3),
                            "args": {"External id": 900_000 + len(self.events)}})
        self.cpu += 10.0

    def graph_step(self, marker: str, kernels: list[tuple[str, float]]) -> None:
        """A decode step replayed as one CUDA graph: one launch, kernels without ops."""
        start = self.cpu
        self.cpu += 1.0
        self.ids += 1
        correlation = 1_000_000 + self.ids
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch",
                            "pid": 100, "tid": 100, "ts": round(self.cpu, 3), "dur": 5.0,
                            "args": {"correlation": correlation}})
        for node, (kernel, us) in enumerate(kernels):
            self._kernel(kernel, us, {"correlation": correlation, "graph id": 1,
                                      "graph node id": node + 1})
        self.cpu += 7.0
        self.events.append({"ph": "X", "cat": "user_annotation", "name": marker, "pid": 100,
                            "tid": 100, "ts": round(start, 3), "dur": round(self.cpu - start, 3),
                            "args": {"External id": 900_000 + len(self.events)}})
        self.cpu += 10.0


def kernels_of(forward: list[Any]) -> list[tuple[str, float]]:
    """The kernels a forward launches, in order (what a CUDA graph of it replays)."""
    out: list[tuple[str, float]] = []

    def walk(node: Any) -> None:
        if isinstance(node, Op):
            out.extend(node.kernels)
        else:
            for child in node.body:
                walk(child)

    for node in forward:
        walk(node)
    return out


#: (name, compute capability) of the trace's one device
H100 = ("NVIDIA H100 80GB HBM3", 9, 0)


def write_model_trace(path: Path, model: str = "dense", *, frames: bool = True,
                      shapes: bool = True, prefill_steps: int = 1, decode_steps: int = 2,
                      graph_steps: int = 0, kernels: Kernels = BF16_KERNELS,
                      device: tuple[str, int, int] = H100) -> Path:
    """A trace of ``model`` (``dense`` or ``moe``): prefill steps of 64 rows, eager decode
    steps of 8, then decode steps replayed as CUDA graphs; ``kernels`` says which GEMM kernel
    each layer role launches, ``device`` the GPU."""
    forward = dense_forward if model == "dense" else moe_forward
    trace = _Trace(frames=frames, shapes=shapes)
    for _ in range(prefill_steps):
        trace.step("execute_context_1(64)_generation_0(0)", forward(64, kernels))
    for _ in range(decode_steps):
        trace.step("execute_context_0(0)_generation_8(8)", forward(8, kernels))
    for _ in range(graph_steps):
        trace.graph_step("execute_context_0(0)_generation_8(8)",
                         kernels_of(forward(8, kernels)))
    name, major, minor = device
    document = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": name, "computeMajor": major,
                              "computeMinor": minor, "numSms": 132,
                              "totalGlobalMem": 85018279936}],
        "traceEvents": trace.events,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }
    path.write_text(json.dumps(document))
    return path


_COPIES = ("WITH RECURSIVE copy(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM copy "
           "WHERE i < :last) ")


def replicate_in_store(store: Any, run_id: int, copies: int) -> None:
    """Make an analyzed run ``copies`` times as long inside the store: its kernels, CPU ops
    and module frames again, each copy shifted past the run's span in time with fresh ids
    (one ``INSERT … SELECT`` per table), then its per-name groups and counts."""
    from tracekit.aggregate import refresh_kernel_groups
    from tracekit.store.counts import record_counts

    with store.begin() as connection:
        span = int(connection.execute(text(
            "SELECT MAX(end_ns) - MIN(start_ns) + 1000000 FROM kernels WHERE run_id = :r"),
            {"r": run_id}).scalar_one())
        params = {"last": copies - 1, "r": run_id, "span": span}
        if copies > 1:
            connection.execute(text(
                _COPIES + "INSERT INTO cpu_ops (id, run_id, name, start_ns, end_ns, "
                "external_id, global_tid, global_pid, input_types, input_dims) "
                "SELECT o.id + copy.i * 10000000, o.run_id, o.name, o.start_ns + copy.i * :span, "
                "o.end_ns + copy.i * :span, o.external_id + copy.i * 10000000, o.global_tid, "
                "o.global_pid, o.input_types, o.input_dims FROM cpu_ops o CROSS JOIN copy "
                "WHERE o.run_id = :r"), params)
            connection.execute(text(
                _COPIES + "INSERT INTO nvtx_ranges (run_id, kind, start_ns, end_ns, text, "
                "domain, global_tid, global_pid) SELECT n.run_id, n.kind, "
                "n.start_ns + copy.i * :span, n.end_ns + copy.i * :span, n.text, n.domain, "
                "n.global_tid, n.global_pid FROM nvtx_ranges n CROSS JOIN copy "
                "WHERE n.run_id = :r AND n.kind = 'module'"), params)
            connection.execute(text(
                _COPIES + "INSERT INTO kernels (run_id, name_id, device, stream, start_ns, "
                "end_ns, correlation_id, external_id, graph_node_id, graph_id, global_pid, "
                "global_tid, launch_start_ns, launch_end_ns, step_id, phase, cpu_op_id) SELECT "
                "k.run_id, k.name_id, k.device, k.stream, k.start_ns + copy.i * :span, "
                "k.end_ns + copy.i * :span, k.correlation_id, "
                "k.external_id + copy.i * 10000000, k.graph_node_id, k.graph_id, k.global_pid, "
                "k.global_tid, k.launch_start_ns + copy.i * :span, "
                "k.launch_end_ns + copy.i * :span, k.step_id, k.phase, "
                "k.cpu_op_id + copy.i * 10000000 FROM kernels k CROSS JOIN copy "
                "WHERE k.run_id = :r"), params)
        refresh_kernel_groups(connection, run_id)
        record_counts(connection, run_id)


# -- reading the result --------------------------------------------------------------------

LayerKey = tuple[str, str, str, str]


def layer_table(store: Store, run_id: int) -> dict[LayerKey, int]:
    """(kernel name, phase, layer, source) → launches, as stored in ``layer_times``."""
    with store.connect() as connection:
        rows = connection.execute(text(
            "SELECT n.name, l.phase, l.layer, l.source, l.launches FROM layer_times AS l "
            "JOIN kernel_names AS n ON n.id = l.name_id WHERE l.run_id = :run_id"),
            {"run_id": run_id}).all()
    return {(str(name), str(phase), str(layer), str(source)): int(launches)
            for name, phase, layer, source, launches in rows}


def layer_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    """Every stored row with its kernel name, as dicts."""
    with store.connect() as connection:
        return [dict(row) for row in connection.execute(text(
            "SELECT n.name, l.* FROM layer_times AS l JOIN kernel_names AS n "
            "ON n.id = l.name_id WHERE l.run_id = :run_id"), {"run_id": run_id}).mappings()]


def assert_sums_match_groups(store: Store, run_id: int) -> None:
    """The rows of each (name, phase) sum exactly to that name's GEMM launches and time in
    the phase as ``kernel_groups`` has them; every GEMM name is attributed."""
    with store.connect() as connection:
        groups = {(int(n), str(p)): (int(c), int(t)) for n, p, c, t in connection.execute(text(
            "SELECT g.name_id, g.phase, SUM(g.count), SUM(g.total_ns) FROM kernel_groups g "
            "JOIN classifications c ON c.run_id = g.run_id AND c.name_id = g.name_id "
            "WHERE g.run_id = :run_id AND c.op IN ('gemm', 'grouped_gemm', 'gemv') "
            "GROUP BY g.name_id, g.phase"), {"run_id": run_id})}
        rows = connection.execute(text(
            "SELECT name_id, phase, launches, total_ns, layer, source, confidence, detail "
            "FROM layer_times WHERE run_id = :run_id"), {"run_id": run_id}).all()
    sums: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    for name_id, phase, launches, total, layer, source, confidence, detail in rows:
        assert source in LAYER_SOURCES
        sums[(int(name_id), str(phase))][0] += int(launches)
        sums[(int(name_id), str(phase))][1] += int(total)
        assert detail, "every row says why"
        assert (confidence is None) == (layer == "unknown")
    assert {key: (value[0], value[1]) for key, value in sums.items()} == groups
