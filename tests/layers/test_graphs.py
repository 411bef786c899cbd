"""Graph-level nsys reports: CUDA-graph launches whose node kernels the trace does not hold
(recorded without ``--cuda-graph-trace=node``), counted for the findings stage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.layers_scenario import write_model_trace
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.layers.graphs import NODE_FLAG, GraphGap, graph_trace_gap
from tracekit.store.db import Store
from tracekit.synth.nsys import KernelSpec, RankSpec, StepSpec

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501
PREFILL = "execute_context_1(512)_generation_0(0)"
DECODE = "execute_context_0(0)_generation_8(8)"


def gap_of(store: Store, trace: Path) -> GraphGap | None:
    run_id = analyze(store, [trace], AnalysisOptions()).run_id
    with store.begin() as connection:
        return graph_trace_gap(connection, run_id)


def test_graph_level_replays_are_counted(store: Store, make_trace: Callable[..., Path]) -> None:
    """Two eager prefill steps, four decode steps replayed as graphs whose node kernels the
    trace lacks, one replay whose nodes it has."""
    trace = make_trace([RankSpec(pid=600, steps=[
        StepSpec(PREFILL, [KernelSpec(GEMM, 40_000, count=4)], repeat=2),
        StepSpec(DECODE, [KernelSpec(GEMM, 9_000, count=4)], graph=True, graph_nodes=False,
                 repeat=4),
        StepSpec(DECODE, [KernelSpec(GEMM, 9_000, count=4)], graph=True),
    ])])
    gap = gap_of(store, trace)
    assert gap == GraphGap(graph_launches=5, launches_without_kernels=4,
                           steps_with_graph_launches=5, steps_without_kernels=4, mode=None)
    assert gap.flag == NODE_FLAG == "--cuda-graph-trace=node"


def test_node_level_replays_have_no_gap(store: Store, make_trace: Callable[..., Path]) -> None:
    trace = make_trace([RankSpec(pid=601, steps=[
        StepSpec(DECODE, [KernelSpec(GEMM, 9_000, count=4)], graph=True, repeat=3)])])
    assert gap_of(store, trace) is None


def test_a_run_without_graphs_has_no_gap(store: Store, make_trace: Callable[..., Path],
                                          tmp_path: Path) -> None:
    trace = make_trace([RankSpec(pid=602, steps=[
        StepSpec(PREFILL, [KernelSpec(GEMM, 40_000, count=4)])])])
    assert gap_of(store, trace) is None
    # a torch trace whose graph replays carry their node kernels
    assert gap_of(store, write_model_trace(tmp_path / "moe.json", "moe", graph_steps=2)) is None
