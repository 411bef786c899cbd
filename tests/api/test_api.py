"""The Python API (``tracekit.analyze``, ``open_store``, ``Run``, ``diff``, ``classify``).

Checked against the command line it mirrors: every table of the terminal summary equals the
analysis document it is rendered from, ``document()`` is ``--json``, ``diff`` and ``classify``
give what their commands give, errors carry the command's message. The example is the
shipped two-"NVFP4"-checkpoints story, built into a temporary folder by its own build.py.
PostgreSQL runs where ``TRACEKIT_TEST_POSTGRES_URL`` is set.
"""

from __future__ import annotations

import doctest
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
import types
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import tracekit
from tests.support import paths
from tracekit.api import DEFAULT_KERNEL_COLUMNS, KERNEL_COLUMNS, Run, RunStore
from tracekit.cli import cli
from tracekit.errors import InputError, StoreError, TracekitError, UsageError
from tracekit.report.document import GEMM_OPS, PHASES

REPO = paths.REPO
EXAMPLE = REPO / "examples" / "nvfp4_two_checkpoints"
BF16_NAME = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
             "execute_segment_k_off_kernel__5x_cublas")


def build_example(folder: Path) -> Path:
    """The shipped example, built by its own script in ``folder`` (its outputs go beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("build.py", "walkthrough.py"):
        shutil.copy(EXAMPLE / name, folder / name)
    subprocess.run([sys.executable, str(folder / "build.py")], check=True, capture_output=True)
    return folder


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_example(tmp_path_factory.mktemp("example"))


def cli_run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def analyzed(example: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both W4A4 runs analyzed through the API into one SQLite store."""
    folder = tmp_path_factory.mktemp("store")
    store = tracekit.open_store(folder / "runs.db")
    model = example / "checkpoints" / "w4a4"
    fallback = tracekit.analyze(example / "w4a4-fallback-marlin.sqlite", model=model,
                                store=store, label="fallback")
    fp4 = tracekit.analyze(example / "w4a4-cutlass-fp4.sqlite", model=model, store=store)
    yield {"store": store, "fallback": fallback, "fp4": fp4, "url": str(folder / "runs.db"),
           "model": model}
    store.close()


# --- import stays light -------------------------------------------------------------------

def test_import_tracekit_and_mark_loads_no_heavy_library() -> None:
    code = ("import sys, tracekit, tracekit.mark; "
            "print(sorted(m for m in ('pandas', 'numpy', 'plotly', 'sqlalchemy') "
            "if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True).stdout.strip()
    assert loaded == "[]"


def test_the_api_is_at_the_top_of_the_package() -> None:
    for name in tracekit.__all__:
        assert getattr(tracekit, name) is not None, name
        assert name in dir(tracekit)
    assert tracekit.analyze is tracekit.api.analyze
    with pytest.raises(AttributeError):
        tracekit.no_such_thing  # noqa: B018
    # tracekit.classify is a plain function (the classifier package is tracekit.classifier)
    from tracekit import classify

    assert classify is tracekit.classify is tracekit.api.classify
    assert isinstance(classify, types.FunctionType)
    assert classify([BF16_NAME]).loc[0, "path"] == "bf16"


# --- every table of the terminal summary, as the document has it -------------------------

def test_every_summary_table_equals_the_document(analyzed: dict[str, Any]) -> None:
    run: Run = analyzed["fallback"]
    document = run.document()
    assert run.verdict == document["verdict"] and len(run.verdict) == 2
    devices = run.devices()
    assert devices.to_dict("records")[0]["arch"] == document["devices"][0]["arch"] == "sm120"
    overall = run.gemm_paths(by=None)
    assert dict(zip(overall["path"], overall["time_ns"], strict=True)) == \
        document["summary"]["gemm_ns_by_path"]
    assert overall["share"].sum() == pytest.approx(1.0)
    per_phase = run.gemm_paths()
    for phase in PHASES:
        rows = per_phase[per_phase["phase"] == phase]
        assert dict(zip(rows["path"], rows["time_ns"], strict=True)) == \
            document["phases"][phase]["gemm_ns_by_path"]
    phases = run.phases()
    assert list(phases["phase"]) == ["prefill", "decode"]
    for row in phases.to_dict("records"):
        stored = document["phases"][row["phase"]]
        for key in ("steps", "prefill_tokens", "decode_tokens", "gpu_ns", "gemm_ns"):
            assert row[key] == stored[key], key
    names = run.names()
    assert list(names["name"]) == [entry["name"] for entry in document["kernels"]]
    assert list(names["total_ns"]) == [entry["total_ns"] for entry in document["kernels"]]
    assert list(names["path"]) == [entry["path"] for entry in document["kernels"]]
    assert names["share"].sum() == pytest.approx(1.0)
    # names, ops, paths and phases are categoricals, as the README says
    for column in ("name", "op", "path", "evidence", "confidence"):
        assert names[column].dtype == "category", column
    assert names["convolution"].dtype == bool and not names["convolution"].any()
    launchers = run.launchers()
    assert launchers.to_dict("records") == document["launchers"]
    findings = run.findings()
    assert list(findings["message"]) == [item["message"] for item in document["findings"]]
    assert list(findings["severity"]) == ["error", "error"]
    summary = run.summary()
    assert summary["kernel_count"] == document["summary"]["kernel_count"] == 2800
    assert run.info["label"] == "fallback"


def test_gemm_paths_by_device_and_phase_add_up(analyzed: dict[str, Any]) -> None:
    run: Run = analyzed["fp4"]
    both = run.gemm_paths(by=["phase", "device"])
    assert list(both.columns) == ["phase", "device", "path", "count", "time_ns", "share"]
    assert both["time_ns"].sum() == run.summary()["gemm_time_ns"]
    assert set(run.gemm_paths(by="device")["device"]) == {0}
    with pytest.raises(UsageError, match="group by"):
        run.gemm_paths(by="stream")


def test_document_is_the_json_of_analyze_and_of_report(analyzed: dict[str, Any],
                                                       example: Path) -> None:
    run: Run = analyzed["fallback"]
    again = cli_run("analyze", str(example / "w4a4-fallback-marlin.sqlite"), "--store",
                    analyzed["url"], "--json")
    assert again.exit_code == 1 or again.exit_code == 0
    from_cli = json.loads(again.stdout)
    ours = json.loads(json.dumps(run.document(), default=str))
    assert ours == from_cli
    report = json.loads(cli_run("report", str(run.id), "--store", analyzed["url"],
                                "--json").stdout)
    stored = analyzed["store"].run(run.id).document()
    assert "warnings" not in stored
    assert json.loads(json.dumps(stored, default=str)) == report


# --- kernel records ------------------------------------------------------------------------

def test_kernels_are_typed_and_complete(analyzed: dict[str, Any]) -> None:
    run: Run = analyzed["fallback"]
    kernels = run.kernels()
    summary = run.summary()
    assert list(kernels.columns) == list(DEFAULT_KERNEL_COLUMNS)
    assert len(kernels) == summary["kernel_count"]
    assert int(kernels["duration_ns"].sum()) == summary["gpu_time_ns"]
    assert (kernels["duration_ns"] == kernels["end_ns"] - kernels["start_ns"]).all()
    for column in ("start_ns", "end_ns", "duration_ns"):
        assert kernels[column].dtype == np.int64
    for column in ("name", "op", "path", "phase"):
        assert isinstance(kernels[column].dtype, pd.CategoricalDtype), column
    assert list(kernels["phase"].cat.categories) == list(PHASES)
    assert str(kernels["device"].dtype) == "Int32" and str(kernels["step_id"].dtype) == "Int64"
    by_name = kernels.groupby("name", observed=True)["duration_ns"].sum()
    for entry in run.document()["kernels"]:
        assert by_name[entry["name"]] == entry["total_ns"]
    ids = run.kernels(columns=["id"])["id"]
    assert ids.is_monotonic_increasing and ids.is_unique


def test_every_kernel_column_can_be_asked_for(analyzed: dict[str, Any]) -> None:
    every = analyzed["fp4"].kernels(columns=list(reversed(KERNEL_COLUMNS)))
    assert list(every.columns) == list(reversed(KERNEL_COLUMNS))
    assert len(every) == 4400
    assert every["grid_x"].notna().all() and (every["reason"].notna()).all()


def test_filters_match_the_document_and_run_in_sql(analyzed: dict[str, Any]) -> None:
    run: Run = analyzed["fallback"]
    document = run.document()
    weight_only = run.kernels(path="weight_only")
    assert set(weight_only["path"]) == {"weight_only"}
    assert int(weight_only["duration_ns"].sum()) == \
        document["summary"]["gemm_ns_by_path"]["weight_only"]
    decode_gemm = run.kernels(phase="decode", op=list(GEMM_OPS))
    assert int(decode_gemm["duration_ns"].sum()) == document["phases"]["decode"]["gemm_ns"]
    both_phases = run.kernels(phase=["prefill", "decode"], columns=["phase"])
    assert len(both_phases) == 2800
    assert len(run.kernels(phase="unattributed")) == 0
    none = run.kernels(path="fp4", columns=["start_ns", "name"])
    assert len(none) == 0 and none["start_ns"].dtype == np.int64
    assert isinstance(none["name"].dtype, pd.CategoricalDtype)

    statements: list[str] = []
    with analyzed["store"].reader().engine.connect() as connection:
        connection.connection.dbapi_connection.set_trace_callback(statements.append)
    try:
        run.kernels(phase="decode", path="weight_only", columns=["duration_ns"])
    finally:
        with analyzed["store"].reader().engine.connect() as connection:
            connection.connection.dbapi_connection.set_trace_callback(None)
    scan = [sql for sql in statements if sql.startswith("SELECT k.end_ns - k.start_ns")]
    assert len(scan) == 1
    assert "k.phase IN ('decode')" in scan[0] and "k.name_id IN (" in scan[0]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"phase": "prefil"}, "unknown phase 'prefil'"),
    ({"path": "fp44"}, "unknown path 'fp44'"),
    ({"op": ["gemm", 3]}, "op= takes a word"),
    ({"columns": ["name", "nope"]}, "no kernel column 'nope'"),
])
def test_bad_kernel_arguments_say_what_would_do(analyzed: dict[str, Any],
                                                kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message) as raised:
        analyzed["fallback"].kernels(**kwargs)
    assert raised.value.hint or "takes" in raised.value.message


def test_chunked_reads_equal_one_read(analyzed: dict[str, Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import tracekit.api.frames as frames

    run: Run = analyzed["fp4"]
    whole, steps = run.kernels(columns=KERNEL_COLUMNS), run.steps()
    monkeypatch.setattr(frames, "CHUNK_ROWS", 7)
    pd.testing.assert_frame_equal(run.kernels(columns=KERNEL_COLUMNS), whole)
    pd.testing.assert_frame_equal(run.steps(), steps)


def test_a_column_buffer_fits_the_rows_that_came() -> None:
    """The row count is read before the rows: should it be off, the arrays follow the rows."""
    from tracekit.api.frames import Column, _Buffer

    grown = _Buffer(Column("x", "x", "nullable"), 2)
    grown.add((1, -(2**63), 3))
    grown.add((4, 5))
    assert grown.finish().tolist() == [1, pd.NA, 3, 4, 5]
    cut = _Buffer(Column("t", "t", "text"), 10)
    cut.add(("a", None, "b", "a"))
    values = cut.finish()
    assert list(values.astype(object)) == ["a", np.nan, "b", "a"]
    assert list(values.categories) == ["a", "b"]


def test_steps(analyzed: dict[str, Any]) -> None:
    steps = analyzed["fallback"].steps()
    assert len(steps) == 50
    assert steps["phase"].value_counts().to_dict()["decode"] == 48
    assert set(steps["source"]) == {"marker"}
    assert steps["text"].iloc[0] == "execute_context_1(2048)_generation_0(0)"
    assert int(steps["decode_tokens"].sum()) == 384
    assert (steps["duration_ns"] > 0).all()


def test_kernels_stream_within_twice_the_frame(tmp_path: Path) -> None:
    """Peak Python-level memory (numpy included) of reading 5·10^5 kernels ≤ 2 × the frame."""
    sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
    from bench_analyze import build

    trace = tmp_path / "big.sqlite"
    build(trace, 500_000)
    run = tracekit.analyze(trace, store=tmp_path / "big.db")
    run.kernels(columns=["id"], phase="mixed")  # first use imports its modules
    tracemalloc.start()
    try:
        frame = run.kernels()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = frame.memory_usage(deep=True).sum()
    assert len(frame) == 500_000
    assert size / len(frame) < 80  # bytes per kernel: int64 times, categoricals, nullable ints
    assert peak <= 2 * size, (peak, size)
    run.store.close()


# --- stores, selectors, diff, classify -----------------------------------------------------

def test_store_runs_and_selectors_match_the_cli(analyzed: dict[str, Any]) -> None:
    store: RunStore = analyzed["store"]
    runs = store.runs()
    listed = json.loads(cli_run("runs", "--store", analyzed["url"], "--json").stdout)["runs"]
    assert list(runs.index) == [entry["id"] for entry in listed]
    assert list(runs["kernels"]) == [entry["kernels"] for entry in listed] == [2800, 4400]
    assert list(runs["verdict"]) == [entry["verdict"] for entry in listed]
    assert isinstance(runs["created_at"].dtype, pd.DatetimeTZDtype)
    assert store.run("latest") == store.run(-1) == analyzed["fp4"]
    assert store.run("fallback") == store.run(analyzed["fallback"].id) == analyzed["fallback"]
    assert store.run("LATEST").id == store.run(str(analyzed["fp4"].id)).id
    table = store.query("SELECT id, label FROM runs ORDER BY id")
    assert list(table.columns) == ["id", "label"] and table.loc[0, "label"] == "fallback"


def test_diff_and_compare_are_tracekit_diff(analyzed: dict[str, Any]) -> None:
    a, b = analyzed["fallback"], analyzed["fp4"]
    from_cli = json.loads(cli_run("diff", str(a.id), str(b.id), "--store", analyzed["url"],
                                  "--json").stdout)
    assert json.loads(json.dumps(tracekit.compare(a, b))) == from_cli
    frame = tracekit.diff(a, b)
    decode = frame[(frame["phase"] == "decode")].set_index("path")
    assert decode.loc["weight_only", "a_share"] == 1.0 and decode.loc["fp4", "b_share"] == 1.0
    assert decode.loc["fp4", "b_ns"] == from_cli["phases"]["decode"]["paths"]["fp4"]["b_ns"]
    with pytest.raises(UsageError, match="two tracekit Runs"):
        tracekit.diff(a, "latest")  # type: ignore[arg-type]


def test_classify_is_tracekit_classify() -> None:
    names = [BF16_NAME, "", "void at::native::vectorized_elementwise_kernel<4>(int)", BF16_NAME]
    frame = tracekit.classify(names, arch="sm90")
    lines = CliRunner().invoke(cli, ["classify", "--format", "jsonl", "--arch", "sm90",
                                     "--names-file", "-"], input="\n".join(names) + "\n")
    expected = [json.loads(line) for line in lines.stdout.splitlines()]
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    assert records == expected
    assert isinstance(frame["path"].dtype, pd.CategoricalDtype)
    with pytest.raises(UsageError):
        tracekit.classify([BF16_NAME, 7])  # type: ignore[list-item]


# --- figures and files ---------------------------------------------------------------------

def test_figures_are_the_report_pages_figures(analyzed: dict[str, Any], tmp_path: Path) -> None:
    import re

    run: Run = analyzed["fallback"]
    page = run.to_html(tmp_path / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="tk-data">(.*?)</script>',
                                page, re.S).group(1))
    for figure_id, figure in (("tk-timeline", run.timeline()),
                              ("tk-breakdown", run.breakdown())):
        carried = data["figures"][figure_id]
        for trace in carried["data"]:
            if "tk_text" in trace:
                trace["text"] = [data["strings"][index] for index in trace.pop("tk_text")]
        ours = json.loads(figure.to_json())
        assert len(ours["data"]) == len(carried["data"])
        for mine, theirs in zip(ours["data"], carried["data"], strict=True):
            for key, value in theirs.items():
                assert _plain(mine[key]) == _plain(value), (figure_id, key)
        for key in ("shapes", "yaxis", "height"):
            assert _plain(ours["layout"].get(key)) == _plain(carried["layout"].get(key))
    assert "weight_only" in {trace.name for trace in run.timeline().data}
    small = run.timeline(kernel_budget=100)
    assert sum(len(trace.customdata or ()) for trace in small.data
               if trace.hovertemplate and "start" in trace.hovertemplate) == 100


def _plain(value: Any) -> Any:
    """Plotly's JSON (typed arrays as base64, tuples) as plain lists for comparison."""
    import base64

    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        if "shape" in value:
            array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
        return _plain(array.tolist())
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def test_files(analyzed: dict[str, Any], tmp_path: Path) -> None:
    run: Run = analyzed["fp4"]
    trace = json.loads(run.to_perfetto(tmp_path / "run.json").read_text())
    kernels = [event for event in trace["traceEvents"]
               if event["ph"] == "X" and event["cat"] != "step"]
    assert len(kernels) == 4400
    with pytest.raises(InputError, match="does not exist"):
        run.to_html(tmp_path / "nowhere" / "report.html")


# --- errors: the command's message, nothing half-written ---------------------------------

def _cli_error(*args: str) -> str:
    result = cli_run(*args)
    assert result.exit_code == 2, result.output
    return result.stderr.strip().removeprefix("tracekit: error: ")


def test_errors_carry_the_commands_message(analyzed: dict[str, Any], tmp_path: Path) -> None:
    url = analyzed["url"]
    with pytest.raises(InputError) as raised:
        analyzed["store"].run("nope")
    assert raised.value.one_line() == _cli_error("report", "nope", "--store", url)
    with pytest.raises(InputError) as raised:
        analyzed["store"].run(-9)
    assert raised.value.one_line() == _cli_error("report", "-9", "--store", url)
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreError) as raised:
        tracekit.open_store(missing).runs()
    assert raised.value.one_line() == _cli_error("runs", "--store", str(missing))
    assert not missing.exists()
    with pytest.raises(UsageError):
        tracekit.open_store(3)  # type: ignore[arg-type]


def test_failed_analyze_leaves_the_store_as_it_was(analyzed: dict[str, Any], example: Path,
                                                   tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.json"
    garbage.write_text("this is not a trace\n")
    fresh = tmp_path / "fresh.db"
    for call in (
        lambda: tracekit.analyze(garbage, store=fresh),
        lambda: tracekit.analyze(tmp_path / "absent.sqlite", store=fresh),
        lambda: tracekit.analyze(example / "w4a16-marlin.sqlite", store=fresh,
                                 label="latest"),
        lambda: tracekit.analyze([], store=fresh),
    ):
        with pytest.raises(TracekitError):
            call()
    assert not fresh.exists()
    store: RunStore = analyzed["store"]
    before = store.runs()
    with pytest.raises(TracekitError) as raised:
        tracekit.analyze(garbage, store=store)
    assert raised.value.one_line() == _cli_error("analyze", str(garbage), "--store",
                                                 analyzed["url"])
    pd.testing.assert_frame_equal(store.runs(), before)


def test_unreadable_model_is_a_warning_as_without_fail_on(example: Path, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="typo"):
        run = tracekit.analyze(example / "w4a16-marlin.sqlite", model=tmp_path / "typo",
                               store=tmp_path / "s.db")
    assert run.warnings and "typo" in run.warnings[0]
    assert run.document()["warnings"] == run.warnings
    run.store.close()


def test_a_deleted_run_says_so(example: Path, tmp_path: Path) -> None:
    store = tracekit.open_store(tmp_path / "s.db")
    run = tracekit.analyze(example / "w4a16-marlin.sqlite", store=store)
    assert store.delete(run.id) == [run.id]
    with pytest.raises(InputError, match="not in the store"):
        run.kernels()
    with pytest.raises(InputError, match="not in the store"):
        run.to_perfetto(tmp_path / "x.json")
    with pytest.raises(StoreError, match="no run 99"):
        store.delete([99])
    store.close()


# --- the documentation runs ----------------------------------------------------------------

def test_api_doctests(example: Path, tmp_path: Path) -> None:
    import tracekit.api

    result = doctest.testmod(tracekit.api, extraglobs={"example": example, "tmp": tmp_path},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
                             verbose=False, report=True)
    assert result.attempted >= 10 and result.failed == 0, result


def test_readme_five_lines_reproduce_the_summary_tables(example: Path, tmp_path: Path) -> None:
    """The README's lines, run as a notebook would (each expression's value kept): one
    DataFrame per table of the terminal summary, equal to what the summary shows."""
    import ast

    readme = (REPO / "README.md").read_text()
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len([line for line in block.splitlines() if line.strip()]) <= 5, block
    source = block.replace("examples/nvfp4_two_checkpoints", str(example))
    namespace: dict[str, Any] = {}
    shown: list[Any] = []
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for statement in ast.parse(source).body:
            if isinstance(statement, ast.Expr):
                value = eval(compile(ast.Expression(statement.value), "README", "eval"),
                             namespace)
                shown += list(value) if isinstance(value, tuple) else [value]
            else:
                exec(compile(ast.Module([statement], []), "README", "exec"), namespace)
    finally:
        os.chdir(cwd)
    assert (tmp_path / "tracekit.db").exists()
    run: Run = namespace["run"]
    document = run.document()
    (verdict, summary, devices, overall, phases, per_phase, top, launchers, findings,
     roofline) = shown
    assert verdict == document["verdict"]
    assert summary["kernel_count"] == document["summary"]["kernel_count"]
    assert list(devices["name"]) == [device["name"] for device in document["devices"]]
    assert dict(zip(overall["path"], overall["time_ns"], strict=True)) == \
        document["summary"]["gemm_ns_by_path"]
    assert list(phases["gpu_ns"]) == [document["phases"][p]["gpu_ns"] for p in phases["phase"]]
    assert set(per_phase["phase"]) == set(phases["phase"])
    assert list(top["name"]) == [entry["name"] for entry in document["kernels"][:15]]
    assert list(launchers["thread"]) == [item["thread"] for item in document["launchers"]]
    assert list(findings["rule"]) == [item["rule"] for item in document["findings"]]
    assert list(roofline["name"]) == [family["name"] for family in document["roofline"]["families"]]
    run.store.close()


def test_walkthrough_notebook_runs_top_to_bottom(example: Path) -> None:
    result = subprocess.run([sys.executable, str(example / "walkthrough.py")], cwd=example,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (example / "walkthrough-report.html").exists()
    assert "silent fallback" in result.stdout


# --- PostgreSQL ----------------------------------------------------------------------------

@pytest.mark.postgres
def test_postgres_store_gives_the_same_frames(postgres_url: str, analyzed: dict[str, Any],
                                              example: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import tracekit.api.frames as frames

    store = tracekit.open_store(postgres_url)
    run = tracekit.analyze(example / "w4a4-fallback-marlin.sqlite", model=analyzed["model"],
                           store=store, label="fallback")
    sqlite_run: Run = analyzed["fallback"]
    columns = [column for column in KERNEL_COLUMNS if column not in ("id", "step_id")]
    ours, theirs = run.kernels(columns=columns), sqlite_run.kernels(columns=columns)
    pd.testing.assert_frame_equal(ours, theirs)
    monkeypatch.setattr(frames, "CHUNK_ROWS", 7)  # rows split across COPY blocks
    pd.testing.assert_frame_equal(run.kernels(columns=columns), theirs)
    pd.testing.assert_frame_equal(run.steps().drop(columns=["id"]),
                                  sqlite_run.steps().drop(columns=["id"]))
    monkeypatch.undo()
    filtered = run.kernels(phase="decode", path="weight_only")
    assert len(filtered) == 1536
    for table in ("names", "phases", "findings", "launchers", "devices"):
        pd.testing.assert_frame_equal(getattr(run, table)(), getattr(sqlite_run, table)())
    pd.testing.assert_frame_equal(run.gemm_paths(by=["phase", "device"]),
                                  sqlite_run.gemm_paths(by=["phase", "device"]))
    assert len(run.steps()) == 50
    assert store.run("fallback") == run
    assert list(store.runs()["kernels"]) == [2800]
    assert store.query("SELECT COUNT(*) AS n FROM kernels").loc[0, "n"] == 2800
    with pytest.raises(TracekitError):
        store.query("DELETE FROM kernels")
    store.close()


def test_ranks_and_devices_of_a_run_of_several_ranks(tmp_path: Path) -> None:
    """``run.ranks()`` and ``run.devices()``: one row per rank and per (rank, device), the
    document's numbers; ``run.iterations()`` the lined-up steps with the straggler."""
    from tests.test_ranks import tp_ranks
    from tracekit.synth.nsys import Scenario, write_scenario

    trace = write_scenario(Scenario(ranks=tp_ranks()), tmp_path / "tp4.sqlite")
    run = tracekit.analyze(trace, store=str(tmp_path / "s.db"))
    ranks = run.ranks()
    document = run.document()
    assert list(ranks["rank"]) == [0, 1, 2, 3]
    assert list(ranks["pid"]) == [5000, 5001, 5002, 5003]
    assert list(ranks["gpu_ns"]) == [entry["gpu_ns"] for entry in document["ranks"]]
    assert list(ranks["decode_ns"]) == list(ranks["gpu_ns"])
    assert ranks.loc[2, "gemm_ns_by_path"] == document["ranks"][2]["gemm_ns_by_path"]
    devices = run.devices()
    assert list(zip(devices["rank"], devices["index"], strict=True)) == [(r, r) for r in range(4)]
    assert list(devices["kernels"]) == [56] * 4
    assert run.iterations()["straggler"] == 2
    assert set(run.launchers()["pid"]) == {5000, 5001, 5002, 5003}
