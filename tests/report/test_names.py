"""Kernel names cut to a column: two different names never read the same."""

from __future__ import annotations

import io
import json

from click.testing import CliRunner

from tracekit.cli import cli
from tracekit.report.names import cut, distinct_cuts
from tracekit.report.terminal import NAME_WIDTH, render
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

HEAD = ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
        "GemmShape<128, 128, 64>, cutlass::bfloat16_t, cutlass::layout::RowMajor, ")


def test_names_that_fit_are_kept_and_long_ones_cut():
    assert distinct_cuts(["short", "x" * 90], 90) == ["short", "x" * 90]
    assert cut("y" * 100, 90) == "y" * 89 + "…"


def test_names_cut_alike_show_where_they_differ():
    a, b = HEAD + "float, Stages<3>>>(Params)", HEAD + "float, Stages<4>>>(Params)"
    shown = distinct_cuts([a, b, "other"], 90)
    assert cut(a, 90) == cut(b, 90)  # what the table printed before: one name twice
    assert shown[0] != shown[1] and all(len(s) <= 90 for s in shown)
    assert "Stages<3>" in shown[0] and "Stages<4>" in shown[1]
    assert shown[0].startswith(HEAD[:30]) and shown[2] == "other"


def test_names_alike_even_where_they_differ_are_numbered():
    # the difference lies beyond what the column can show around it
    a = HEAD + "x" * 200 + "A"
    b = HEAD + "x" * 200 + "B"
    shown = distinct_cuts([a, b], 40)
    assert shown[0] != shown[1] and all(len(s) <= 40 for s in shown)


def test_the_top_kernels_table_tells_cut_names_apart(tmp_path):
    names = [HEAD + f"float, Stages<{stages}>>>(Params)" for stages in (3, 4)]
    trace = write_scenario(Scenario(ranks=[RankSpec(pid=7, steps=[StepSpec(
        "execute_context_0(0)_generation_8(8)",
        [KernelSpec(name, 10_000 + i, count=3) for i, name in enumerate(names)])])]),
        tmp_path / "t.sqlite")
    result = CliRunner().invoke(cli, ["analyze", str(trace), "--store", str(tmp_path / "s.db"),
                                      "--json"])
    out = io.StringIO()
    render(json.loads(result.stdout), out)
    rows = [line for line in out.getvalue().splitlines() if "cutlass::device_kernel" in line]
    assert len(rows) == 2 and rows[0] != rows[1]
    assert any("Stages<3>" in row for row in rows) and any("Stages<4>" in row for row in rows)
    assert NAME_WIDTH == 90
