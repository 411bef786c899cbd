"""Each rank seen: per rank and device tables, the launching threads by pid/tid/device, the
steps of each iteration lined up across ranks, and a straggler found (or not)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracekit.cli import cli
from tracekit.findings.rules import load_rules
from tracekit.report.terminal import render
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
        "execute_segment_k_off_kernel__5x_cublas")
START_UTC_NS = 1_780_000_000 * 10**9


def tp_ranks(count: int = 4, *, slow: int | None = 2, factor: float = 1.5,
             steps: int = 8) -> list[RankSpec]:
    """Tensor-parallel ranks, each on its own GPU, recording the same decode steps; rank
    ``slow`` runs its GEMMs ``factor`` times longer."""
    ranks = []
    for r in range(count):
        gemm_ns = int(30_000 * (factor if r == slow else 1.0))
        ranks.append(RankSpec(pid=5000 + r, device=r, steps=[
            StepSpec(f"execute_context_0(0)_generation_{8 * (s + 1)}({8 * (s + 1)})",
                     [KernelSpec(GEMM, gemm_ns, count=6),
                      KernelSpec("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm *, "
                                 "unsigned long, ncclWork *)", 3_000)])
            for s in range(steps)]))
    return ranks


def analyze_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["analyze", *args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_one_file_of_four_ranks_shows_each_rank_and_the_straggler(tmp_path: Path) -> None:
    trace = write_scenario(Scenario(ranks=tp_ranks()), tmp_path / "tp4.sqlite")
    document = analyze_json(str(trace), "--store", str(tmp_path / "s.db"))
    ranks = document["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3]
    assert [r["pid"] for r in ranks] == [5000, 5001, 5002, 5003]
    assert [r["devices"] for r in ranks] == [[0], [1], [2], [3]]
    assert all(r["gpus"] == ["NVIDIA H100 80GB HBM3"] for r in ranks)
    assert all(r["kernels"] == 8 * 7 for r in ranks)
    assert ranks[2]["gemm_ns"] == int(1.5 * ranks[0]["gemm_ns"])
    assert all(set(r["gemm_ns_by_path"]) == {"bf16"} for r in ranks)
    assert all(r["phase_ns"]["decode"] == r["gpu_ns"] for r in ranks)
    devices = document["devices"]
    assert [(d["rank"], d["index"], d["kernels"]) for d in devices] == [
        (r, r, 56) for r in range(4)]
    iterations = document["iterations"]
    assert iterations["ranks"] == 4 and iterations["aligned"] == 8
    assert iterations["steps_per_rank"] == {str(r): 8 for r in range(4)}
    assert iterations["straggler"] == 2
    [slowest] = iterations["slowest"]
    assert slowest["rank"] == 2 and slowest["share"] == 1.0 and slowest["mean_excess"] > 0.3
    assert len(iterations["worst"]) == 8 and iterations["worst"][0]["slowest_rank"] == 2
    [straggler] = [f for f in document["findings"] if f["rule"] == "straggler-rank"]
    assert straggler["severity"] == "warning"
    assert straggler["message"].startswith("rank 2 is the slowest of 4 ranks in 100% of 8")
    launchers = document["launchers"]
    assert {(t["pid"], t["tid"], t["rank"], tuple(t["devices"])) for t in launchers} == {
        (5000 + r, 5000 + r, r, (r,)) for r in range(4)}


def test_ranks_that_keep_pace_are_no_stragglers(tmp_path: Path) -> None:
    slightly = write_scenario(Scenario(ranks=tp_ranks(slow=1, factor=1.05)),
                              tmp_path / "even.sqlite")
    document = analyze_json(str(slightly), "--store", str(tmp_path / "s.db"))
    assert document["iterations"]["straggler"] is None
    assert not [f for f in document["findings"] if f["rule"] == "straggler-rank"]
    threshold = load_rules().setting("straggler_min_excess", 0)
    assert document["iterations"]["slowest"][0]["mean_excess"] < threshold


def test_per_rank_files_give_the_same_ranks(tmp_path: Path) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank in tp_ranks():
        write_scenario(Scenario(ranks=[rank], session_start_utc_ns=START_UTC_NS),
                       folder / f"rank{rank.device}.sqlite")
    document = analyze_json(str(folder), "--store", str(tmp_path / "s.db"), "--jobs", "1")
    assert [(r["rank"], r["file"], r["pid"]) for r in document["ranks"]] == [
        (r, f"rank{r}.sqlite", 5000 + r) for r in range(4)]
    assert document["iterations"]["straggler"] == 2
    assert document["summary"]["kernel_count"] == 4 * 56


def test_the_terminal_shows_ranks_devices_iterations_and_launcher_ids(tmp_path: Path) -> None:
    trace = write_scenario(Scenario(ranks=tp_ranks()), tmp_path / "tp4.sqlite")
    document = analyze_json(str(trace), "--store", str(tmp_path / "s.db"))
    out = io.StringIO()
    render(document, out)
    text = out.getvalue()
    assert "ranks" in text and "python3 (5002)" in text
    assert "iterations: 8 steps of each of 4 ranks lined up" in text
    assert "rank 2 slowest in 8 of 8 (100%)" in text
    assert "VLLM::EngineCore (5003)" in text  # the launcher table names pid and tid
    assert "straggler-rank" in text


def test_a_single_rank_has_no_rank_table(tmp_path: Path, make_trace, simple_scenario) -> None:
    document = analyze_json(str(make_trace(simple_scenario)), "--store", str(tmp_path / "s.db"))
    assert len(document["ranks"]) == 1 and document["iterations"] is None
    out = io.StringIO()
    render(document, out)
    assert "\nranks" not in out.getvalue()


def test_real_two_gpu_export_shows_both_processes(tmp_path: Path, shared_trace) -> None:
    """nsys-ai's 2-GPU export: two python3 rows that read the same before (no pid, tid or
    device), now told apart."""
    trace = shared_trace("nsys-ai/h100_2gpu_1s.sqlite")
    document = analyze_json(str(trace), "--store", str(tmp_path / "s.db"))
    assert [(r["pid"], r["devices"], r["kernels"]) for r in document["ranks"]] == [
        (111, [0], 1_721), (112, [1], 1_721)]
    top = [t for t in document["launchers"] if t["thread"] == "python3"][:2]
    assert {(t["pid"], t["devices"][0]) for t in top} == {(111, 0), (112, 1)}


@pytest.mark.parametrize("world", [3])
def test_kineto_rank_files_with_a_slow_rank(tmp_path: Path, shared_trace, world: int) -> None:
    """The real B200 vLLM trace as three ranks, rank 1's kernels 1.6x longer: its one step
    per rank is lined up, too few iterations for a straggler finding."""
    from tests.benchmarks.replicate import kineto_ranks

    source = shared_trace("tracelens/b200__eager_trace.json.gz")
    kineto_ranks(source, tmp_path / "r", world, kernel_scale={1: 1.6})
    document = analyze_json(str(tmp_path / "r"), "--store", str(tmp_path / "s.db"),
                            "--jobs", "1")
    assert [(r["rank"], r["trace_rank"], r["devices"]) for r in document["ranks"]] == [
        (r, r, [r]) for r in range(world)]
    assert all(r["gpus"] == ["NVIDIA B200"] for r in document["ranks"])
    iterations = document["iterations"]
    assert iterations["aligned"] >= 1 and iterations["slowest"][0]["rank"] == 1
    assert iterations["straggler"] is None  # fewer than straggler_min_iterations


def test_the_html_report_has_a_rank_table(tmp_path: Path) -> None:
    trace = write_scenario(Scenario(ranks=tp_ranks()), tmp_path / "tp4.sqlite")
    page = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["analyze", str(trace), "--store", str(tmp_path / "s.db"),
                                      "--html", str(page)])
    assert result.exit_code == 0, result.stderr
    html = page.read_text()
    table = html.split('<table id="tk-ranks">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 1 + 4 and "python3 (5002)" in table
    assert "a straggler" in html.split('id="tk-iterations"', 1)[1].split("</p>", 1)[0]
