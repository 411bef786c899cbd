"""Oracle: per kernel name, our count and total time equal NVIDIA's own `nsys stats`.

`nsys stats --report gpukernsum` (2022.4; `cuda_gpu_kern_sum` in newer nsys) groups by name
and launch geometry; summing its rows per name gives the per-name figures tracekit reports.
Runs the real nsys when it is installed and skips otherwise. nsys gets a copy of the file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import BF16_GEMM, ELEMENTWISE
from tracekit.cli import cli
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec

pytestmark = pytest.mark.skipif(shutil.which("nsys") is None, reason="nsys is not installed")

REPORT_NAMES = ("cuda_gpu_kern_sum", "gpukernsum")


def nsys_stats_per_name(trace: Path, scratch: Path) -> dict[str, tuple[int, int]]:
    """Run nsys stats on a copy of ``trace``; name -> (instances, total ns).

    JSON, not CSV: nsys 2022.4's CSV does not escape quotes or newlines inside names
    (fixtures/nsys/NSYS_NOTES.md); its JSON needs ``strict=False`` for control characters.
    nsys stats exits 0 even for an unknown report name, so success is judged by the output.
    """
    copy = scratch / f"oracle-{trace.name}"
    shutil.copyfile(trace, copy)
    rows: list[dict[str, object]] | None = None
    for report in REPORT_NAMES:
        completed = subprocess.run(
            ["nsys", "stats", "-q", "--report", report, "--format", "json", "-o", "-", str(copy)],
            capture_output=True, text=True, check=False, timeout=600)
        start = completed.stdout.find("[")
        if start >= 0:
            rows = json.loads(completed.stdout[start:], strict=False)
            break
    if rows is None:
        pytest.fail(f"nsys stats printed no kernel summary: {completed.stderr[-500:]}")
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        totals[str(row["Name"])][0] += int(row["Instances"])  # type: ignore[call-overload]
        totals[str(row["Name"])][1] += int(float(row["Total Time (ns)"]))  # type: ignore[arg-type]
    return {name: (count, total) for name, (count, total) in totals.items()}


def tracekit_per_name(trace: Path, store: Path) -> dict[str, tuple[int, int]]:
    result = CliRunner().invoke(cli, ["analyze", str(trace), "--store", str(store), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    return {k["name"]: (k["count"], k["total_ns"]) for k in document["kernels"]}


def test_synthetic_export_matches_nsys_stats(make_trace, tmp_path):
    odd = 'void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<"quoted", a, b>>(Params)'
    scenario = Scenario(ranks=[
        RankSpec(pid=11, device=0, steps=[
            StepSpec("execute_context_2(1024)_generation_0(0)",
                     [KernelSpec(BF16_GEMM, 41_003, count=7), KernelSpec(odd, 12_345, count=2)]),
            StepSpec("execute_context_0(0)_generation_8(8)",
                     [KernelSpec(BF16_GEMM, 9_001, count=3, grid=(64, 2, 1)),
                      KernelSpec(ELEMENTWISE, 777, count=5)], graph=True, repeat=4),
        ]),
        RankSpec(pid=12, device=1, steps=[
            StepSpec(None, [KernelSpec(ELEMENTWISE, 1_234, count=9, stream=13)])]),
    ])
    trace = make_trace(scenario)
    assert tracekit_per_name(trace, tmp_path / "s.db") == nsys_stats_per_name(trace, tmp_path)


@pytest.mark.parametrize("name", ["h100_2gpu_1s.sqlite", "mfu_2gpu_before.sqlite"])
def test_real_2026_exports_match_nsys_stats(shared_trace, tmp_path, name):
    trace = shared_trace(f"nsys-ai/{name}")
    oracle = nsys_stats_per_name(trace, tmp_path)
    assert tracekit_per_name(trace, tmp_path / "s.db") == oracle
