"""Every statement `analyze`, `report`, `diff` and `runs --delete` run on SQLite has a linear plan.

SQLite plans without statistics, so a join written without care is a guess that can put a big
table inside the loop (tests/support/query_plans.py says how plans are read). Here every
statement of the commands a user runs is planned as it runs, on every input kind, and none may
scan a big table inside a loop. The inputs are real traces replicated so that every per-record table
holds thousands of rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.benchmarks.replicate import kineto_ranks, replicate
from tests.support.paths import H200_FIXTURES as FIXTURES
from tests.support.paths import shared_traces_dir
from tests.support.query_plans import Plan, watch_plans
from tracekit.cli import cli

SHARED = ["tracelens/b200__eager_trace.json.gz", "nsys-ai/h100_2gpu_1s.sqlite",
          "nsys-ai/mfu_2gpu_before.sqlite", "tracelens-rocprof/908_results.json.gz"]


def run(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


def every_command(inputs: list[Path], store: Path, out: Path) -> None:
    """analyze each input, report each run every way, diff, delete."""
    for path in inputs:
        run("analyze", str(path), "--store", str(store), "--json", "--jobs", "1")
    for run_id in range(1, len(inputs) + 1):
        run("report", str(run_id), "--store", str(store))
        run("report", str(run_id), "--store", str(store), "--json")
        run("report", str(run_id), "--store", str(store), "--html", str(out / "r.html"))
        run("report", str(run_id), "--store", str(store), "--perfetto", str(out / "r.json"))
    run("diff", "1", "2", "--store", str(store))
    run("diff", "1", "2", "--store", str(store), "--html", str(out / "d.html"))
    run("runs", "--store", str(store), "--delete", "1")


def rocprof_inputs(folder: Path) -> list[Path]:
    """The synthetic vLLM-on-ROCm job as a rocpd database, JSON and CSV (HIP launches, graph
    replays, ROCTx steps: what the real MI350X file, kernels only, lacks)."""
    from tests.support.rocprof_scenario import amd_job
    from tracekit.synth.rocprof import write_csv, write_json, write_rocpd

    job = amd_job(repeat=50)
    rocpd = write_rocpd(job, folder / "rocpd.db", schema="3.0.3")
    write_json(job, folder / "rocprof-json")
    write_csv(job, folder / "rocprof-csv")
    return [rocpd, folder / "rocprof-json", folder / "rocprof-csv"]


@pytest.mark.slow
def test_every_statement_of_every_command_is_linear(tmp_path: Path) -> None:
    inputs = []
    for source in (FIXTURES / "torch-trace.pt.trace.json.gz", FIXTURES / "cupti.jsonl.gz",
                   FIXTURES / "ncu.csv"):
        target = tmp_path / source.name.removesuffix(".gz")
        replicate(source, target, 2)
        inputs.append(target)
    shared = shared_traces_dir()
    for relative in SHARED:
        if shared is not None and (shared / relative).exists():
            target = tmp_path / Path(relative).name.removesuffix(".gz")
            replicate(shared / relative, target, 2)
            inputs.append(target)
    # a run of several rank files: the parts read in-process (--jobs 1), then merged
    ranks = tmp_path / "ranks"
    kineto_ranks(FIXTURES / "torch-trace.pt.trace.json.gz", ranks, 2, copies=2)
    inputs.append(ranks)
    inputs += rocprof_inputs(tmp_path)
    with watch_plans() as watch:
        every_command(inputs, tmp_path / "store.db", tmp_path)
    assert len(watch.plans) > 300  # the watch saw the commands' statements
    assert watch.quadratic() == []


def test_the_plan_reader_flags_a_scan_inside_a_loop() -> None:
    """The shapes the classifier's old join and the NVTX domain lookup had."""
    per_op_scan = Plan("SELECT …", [
        (6, 0, "SEARCH cpu_ops USING INDEX ix_cpu_ops_run_ext (run_id=? AND external_id>?)"),
        (16, 0, "SEARCH kernels USING INDEX ix_kernels_run_id (run_id=?)")])
    assert per_op_scan.inner_scans() == ["SEARCH kernels USING INDEX ix_kernels_run_id "
                                         "(run_id=?)"]
    per_row_subquery = Plan("INSERT …", [(3, 0, "SCAN e"), (83, 0, "CORRELATED SCALAR SUBQUERY 2"),
                                         (88, 83, "SEARCH d")])
    assert per_row_subquery.inner_scans() == ["SEARCH d"]
    keyed = Plan("SELECT …", [(2, 0, "SCAN k"),
                              (4, 0, "SEARCH o USING INTEGER PRIMARY KEY (rowid=?)"),
                              (9, 0, "CORRELATED SCALAR SUBQUERY 1"),
                              (11, 9, "SEARCH r USING INDEX tk_runtime_link "
                                      "(file_index=? AND correlation_id=?)")])
    assert keyed.inner_scans() == []


def test_every_statement_of_the_layer_and_neighbour_passes_is_linear(tmp_path: Path) -> None:
    """The layer stage with every kind of evidence at once (module frames, shapes against a
    config, layer NVTX ranges, graph replays, launch counts), the classifier's neighbour pass
    and the graph-level report counts, on inputs large enough that a scan in a loop shows."""
    import json

    from tests.support.layers_scenario import write_model_trace
    from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
        "shared_expert_intermediate_size": 256, "num_attention_heads": 4,
        "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 1100, "num_hidden_layers": 2,
        "num_experts": 8}))
    torch_trace = write_model_trace(tmp_path / "moe.json", "moe", prefill_steps=20,
                                    decode_steps=40, graph_steps=40)
    qkv = "{'Module': 'LlamaForCausalLM.model.layers.0.self_attn.qkv_proj', 'Inputs': [[8]]}"
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_cublas"
    nsys = write_scenario(Scenario(ranks=[RankSpec(pid=700, steps=[
        StepSpec("execute_context_1(64)_generation_0(0)",
                 [KernelSpec(gemm, 4_000, count=4, ranges=("{'Module': 'LlamaForCausalLM'}",
                                                          qkv)),
                  KernelSpec("fused_moe_kernel", 3_000),
                  KernelSpec(gemm + "_splitK", 1_000, count=2)], repeat=200),
        StepSpec("execute_context_0(0)_generation_8(8)", [KernelSpec(gemm, 2_000, count=4)],
                 graph=True, graph_nodes=False, repeat=200)])]), tmp_path / "layers.sqlite")
    with watch_plans() as watch:
        for trace in (torch_trace, nsys):
            run("analyze", str(trace), "--store", str(tmp_path / "store.db"), "--model",
                str(model), "--json")
    layer_statements = [plan for plan in watch.plans
                        if "tk_layer_bounds" in plan.sql or "layer_times" in plan.sql
                        or "tk_graph_launches" in plan.sql or "LAG(" in plan.sql
                        or "k.step_id" in plan.sql or "text LIKE" in plan.sql]
    assert len(layer_statements) >= 12
    assert watch.quadratic() == []


def test_every_statement_of_a_file_read_by_several_processes_is_linear(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One Kineto file read in ranges by worker processes (``kineto_split``): the ranges'
    rows taken into the store's stage tables, their name keys mapped to the run's."""
    from tracekit.ingest.readers import json_chunks, kineto_split

    monkeypatch.setattr(kineto_split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(json_chunks, "CHUNK_BYTES", 64 << 10)
    trace = tmp_path / "torch.json"
    replicate(FIXTURES / "torch-trace.pt.trace.json.gz", trace, 4)
    with watch_plans() as watch:
        run("analyze", str(trace), "--store", str(tmp_path / "store.db"), "--json",
            "--jobs", "3")
    merges = [plan for plan in watch.plans if "tk_split_" in plan.sql]
    assert len(merges) >= 10  # five tables from each of three ranges, some through the keys
    assert any("tk_split_keys" in plan.sql for plan in merges)
    assert watch.quadratic() == []
