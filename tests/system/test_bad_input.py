"""Bad input: one clear line on stderr, exit code 2, no traceback, the store unchanged."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.helpers import assert_one_line_error
from tracekit.cli import cli
from tracekit.store import open_store


def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A store that already holds one run, so 'unchanged' means something."""
    path = tmp_path / "store.db"
    open_store(str(path)).dispose()
    return path


def run_count(store_path: Path) -> int:
    connection = sqlite3.connect(store_path)
    try:
        return int(connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    finally:
        connection.close()


def analyze_bad(store_path: Path, target: Path, *fragments: str,
                env: dict[str, str] | None = None) -> None:
    before = run_count(store_path)
    code, stdout, stderr = run_cli("analyze", str(target), "--store", str(store_path), env=env)
    assert_one_line_error(code, stderr, str(target), *fragments)
    assert stdout == ""
    assert run_count(store_path) == before


def test_missing_file(store_path, tmp_path):
    analyze_bad(store_path, tmp_path / "nope.nsys-rep", "no such file")


def test_empty_directory(store_path, tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    analyze_bad(store_path, folder, "directory holds no trace files")


def test_directory_of_non_traces(store_path, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("hello\n")
    analyze_bad(store_path, folder, "directory holds no trace files (it holds readme.txt)")


def test_empty_file(store_path, tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    analyze_bad(store_path, empty, "file is empty")


def test_truncated_sqlite(store_path, make_trace, simple_scenario, tmp_path):
    whole = make_trace(simple_scenario).read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(whole[: len(whole) // 3])
    analyze_bad(store_path, cut, "corrupt or truncated")


def test_corrupt_sqlite(store_path, make_trace, simple_scenario, tmp_path):
    data = bytearray(make_trace(simple_scenario).read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(bytes(data))
    analyze_bad(store_path, broken, "corrupt")


def test_sqlite_that_is_not_an_nsys_export(store_path, tmp_path):
    other = tmp_path / "places.sqlite"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE moz_places (id INTEGER, url TEXT)")
    connection.commit()
    connection.close()
    analyze_bad(store_path, other, "not an Nsight Systems export")


def test_nsys_export_without_kernel_table(store_path, make_trace, simple_scenario):
    trace = make_trace(simple_scenario)
    connection = sqlite3.connect(trace)
    connection.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    connection.commit()
    connection.close()
    analyze_bad(store_path, trace, "no CUPTI_ACTIVITY_KIND_KERNEL table")


def test_json_that_is_not_a_trace(store_path, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"architectures": ["LlamaForCausalLM"]}')
    analyze_bad(store_path, config, "JSON")


def test_random_binary(store_path, tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    analyze_bad(store_path, blob, "unrecognized binary file")


def test_nsys_rep_without_nsys(store_path, tmp_path):
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"NVIDIA Tegra Profiler Report 1.\n" + b"\x00" * 512)
    env = {"PATH": str(tmp_path / "no-tools"), "TRACEKIT_NSYS": ""}
    analyze_bad(store_path, report, "needs nsys", env=env)


def test_store_newer_than_this_tracekit(store_path, make_trace, simple_scenario):
    connection = sqlite3.connect(store_path)
    connection.execute("UPDATE alembic_version SET version_num = '9999'")
    connection.commit()
    connection.close()
    code, _, stderr = run_cli("analyze", str(make_trace(simple_scenario)), "--store",
                              str(store_path))
    assert_one_line_error(code, stderr, "newer than this tracekit", "upgrade tracekit")
    assert run_count(store_path) == 0


@pytest.mark.parametrize("where", ["missing-folder", "a-directory"])
def test_store_path_that_cannot_be_written(tmp_path, make_trace, simple_scenario, where):
    target = tmp_path / "missing" / "store.db" if where == "missing-folder" else tmp_path
    code, _, stderr = run_cli("analyze", str(make_trace(simple_scenario)), "--store", str(target))
    assert_one_line_error(code, stderr, "store")


@pytest.mark.skipif(os.geteuid() != 0 and sys.platform != "linux", reason="linux only")
def test_store_in_read_only_place(tmp_path, make_trace, simple_scenario):
    code, _, stderr = run_cli("analyze", str(make_trace(simple_scenario)), "--store",
                              "/proc/tracekit-store.db")
    assert_one_line_error(code, stderr, "store")


def test_real_process_prints_no_traceback(tmp_path):
    """The installed console script, not just CliRunner: exit 2 and one line."""
    completed = subprocess.run(
        [sys.executable, "-m", "tracekit", "analyze", str(tmp_path / "missing.sqlite"),
         "--store", str(tmp_path / "s.db")], capture_output=True, text=True, check=False)
    assert_one_line_error(completed.returncode, completed.stderr, "no such file")


def test_bad_input_does_not_create_a_store(tmp_path):
    store = tmp_path / "never.db"
    code, _, stderr = run_cli("analyze", str(tmp_path / "missing.sqlite"), "--store", str(store))
    assert_one_line_error(code, stderr, "no such file")
    assert not store.exists()


# -- rocprofv3 outputs (JSON, CSV, rocpd) ------------------------------------------------------

def _rocprof_job():  # type: ignore[no-untyped-def]
    from tests.support.rocprof_scenario import amd_job

    job = amd_job()
    job.processes = job.processes[:1]
    return job


def test_rocprof_json_cut_off_inside_gzip(store_path, tmp_path):
    import gzip

    from tracekit.synth.rocprof import write_json

    [path] = write_json(_rocprof_job(), tmp_path / "json")
    packed = gzip.compress(path.read_bytes())
    cut = tmp_path / "4100_results.json.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    analyze_bad(store_path, cut, "truncated")


def test_rocprof_json_with_no_dispatch(store_path, tmp_path):
    cut = tmp_path / "empty_results.json"
    cut.write_text('{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "buffer_records": '
                   '{"kernel_dispatch": []}}]}')
    analyze_bad(store_path, cut, "holds no kernel dispatch", "--kernel-trace")


def test_rocpd_of_a_schema_this_tracekit_does_not_read(store_path, tmp_path):
    from tracekit.synth.rocprof import write_rocpd

    path = write_rocpd(_rocprof_job(), tmp_path / "results.db")
    connection = sqlite3.connect(path)
    [(table,)] = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                    "AND name LIKE 'rocpd_metadata_%'").fetchall()
    connection.execute(f'UPDATE "{table}" SET value = \'4.1.0\' WHERE tag = \'schema_version\'')
    connection.commit()
    connection.close()
    analyze_bad(store_path, path, "rocpd schema 4.1.0", "upgrade tracekit")


def test_rocprof_csv_folder_with_a_damaged_kernel_trace(store_path, tmp_path):
    from tracekit.synth.rocprof import write_csv

    folder = tmp_path / "csv"
    write_csv(_rocprof_job(), folder)
    trace = folder / "4100_kernel_trace.csv"
    trace.write_text(trace.read_text().replace(",8000000", ",later", 1))
    analyze_bad(store_path, folder, "4100_kernel_trace.csv", "not a number")
