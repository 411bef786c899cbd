"""Format detection (``tracekit/ingest/detect.py``): a file is what its content says, never
what its name says (except ``.ncu-rep``, which has no other sign), and every refusal names
what the file looked like.

The inputs are the committed H200 recordings (fixtures/h200), an nsys-schema export from
``tracekit.synth.nsys``, and small files written here with the first bytes each format's own
tool writes (the heads the parser specs' ``[[example]]`` tables cite).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support import paths
from tracekit.errors import InputError, UnknownFormat
from tracekit.ingest.detect import HEAD_BYTES, detect_file, sniff, sqlite_table_names

H200 = paths.H200_FIXTURES
NSYS_REP_HEAD = b"NVIDIA Tegra Profiler Report 1.\n" + bytes(range(256)) * 4
QDSTRM_HEAD = b"U3w[END]NVIDIA Nsight Systems Stream 2022.4.2.1-df9881f!\n" + b"\x00" * 512
#: a SQLite magic and page size, then garbage: what a copy cut after a few hundred bytes holds
SQLITE_HEADER_ONLY = b"SQLite format 3\x00" + b"\x10\x00" + b"\xff" * 200
NCU_REP_HEAD = b"NVR\x00\x02\x00\x00\x00" + b"\x00" * 512


def write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def sqlite_file(path: Path, *tables: str) -> Path:
    """A SQLite database with empty ``tables`` (none: a header and an empty schema)."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 1")  # a database with no table is still a file
    for table in tables:
        connection.execute(f"CREATE TABLE {table} (id INTEGER)")
    connection.commit()
    connection.close()
    return path


def test_each_committed_recording_is_its_format(make_trace, simple_scenario):
    found = {path.name: detect_file(path).id for path in (
        H200 / "torch-trace.pt.trace.json.gz", H200 / "cupti.jsonl.gz", H200 / "ncu.csv",
        make_trace(simple_scenario))}
    assert found == {"torch-trace.pt.trace.json.gz": "kineto-json",
                     "cupti.jsonl.gz": "cupti-jsonl", "ncu.csv": "ncu-csv",
                     "trace0.sqlite": "nsys-sqlite"}


def test_reports_and_streams_by_their_first_bytes(tmp_path):
    assert detect_file(write(tmp_path / "report.nsys-rep", NSYS_REP_HEAD)).id == "nsys-rep"
    assert detect_file(write(tmp_path / "report.qdstrm", QDSTRM_HEAD)).id == "qdstrm"
    assert detect_file(write(tmp_path / "kernels.ncu-rep", NCU_REP_HEAD)).id == "ncu-rep"


def test_a_bare_event_list_is_the_kineto_list_format(tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0, "dur": 2.0}]
    plain = write(tmp_path / "events.json", json.dumps(events).encode())
    packed = write(tmp_path / "events.json.gz", gzip.compress(json.dumps(events).encode()))
    assert (detect_file(plain).id, detect_file(packed).id) == ("kineto-json-list",
                                                               "kineto-json-list")


def test_the_name_is_not_the_format(tmp_path, make_trace, simple_scenario):
    """An nsys export named .json is an nsys export; a torch trace named .sqlite a torch
    trace; the report header of nsys without its extension is still a report."""
    disguised = tmp_path / "export.json"
    shutil.copyfile(make_trace(simple_scenario), disguised)
    assert detect_file(disguised).id == "nsys-sqlite"
    torch = tmp_path / "trace.sqlite"
    shutil.copyfile(H200 / "torch-trace.pt.trace.json.gz", torch)
    assert detect_file(torch).id == "kineto-json"
    assert detect_file(write(tmp_path / "capture.bin", NSYS_REP_HEAD)).id == "nsys-rep"


def test_ncu_report_bytes_without_the_extension_are_not_recognized(tmp_path):
    with pytest.raises(UnknownFormat, match="unrecognized binary file"):
        detect_file(write(tmp_path / "kernels.bin", NCU_REP_HEAD))


def test_sniff_reads_through_gzip_and_lists_sqlite_tables(tmp_path, make_trace, simple_scenario):
    torch = sniff(H200 / "torch-trace.pt.trace.json.gz")
    assert torch.gzipped and torch.sqlite_tables is None
    assert torch.head.startswith(b"\x1f\x8b") and torch.text_head.lstrip().startswith(b"{")
    assert len(torch.text_head) == HEAD_BYTES  # the head, not the whole file
    export = sniff(make_trace(simple_scenario))
    assert not export.gzipped and export.head.startswith(b"SQLite format 3\x00")
    assert {"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL"} <= export.sqlite_tables


def test_a_truncated_gzip_still_shows_its_head(tmp_path):
    whole = (H200 / "cupti.jsonl.gz").read_bytes()
    cut = write(tmp_path / "cut.jsonl.gz", whole[: len(whole) // 3])
    assert detect_file(cut).id == "cupti-jsonl"


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda folder: folder / "missing.json", "no such file"),
    (lambda folder: folder, "is a directory"),
    (lambda folder: write(folder / "empty.json", b""), "file is empty"),
    (lambda folder: write(folder / "bad.json.gz", b"\x1f\x8b" + b"not deflate data" * 8),
     "gzip data is corrupt"),
    (lambda folder: write(folder / "cut.sqlite", SQLITE_HEADER_ONLY),
     "SQLite file is corrupt or truncated"),
], ids=["missing", "directory", "empty", "bad-gzip", "cut-sqlite"])
def test_unreadable_input_is_one_input_error(tmp_path, make, fragment):
    with pytest.raises(InputError) as info:
        detect_file(make(tmp_path))
    assert not isinstance(info.value, UnknownFormat)
    assert fragment in info.value.one_line() and "\n" not in info.value.one_line()


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda folder: sqlite_file(folder / "empty.sqlite"),
     "SQLite file has no tables, so it is not an Nsight Systems export"),
    (lambda folder: sqlite_file(folder / "places.sqlite", "moz_places", "moz_bookmarks"),
     "SQLite file is not an Nsight Systems export (no StringIds table)"),
    (lambda folder: sqlite_file(folder / "strings.sqlite", "StringIds"),
     "SQLite file is not an Nsight Systems export (it has StringIds but none of "
     "CUPTI_ACTIVITY_KIND_KERNEL, "),
    (lambda folder: write(folder / "config.json", b'{"model_type": "llama"}'),
     "JSON file is not a trace tracekit knows (no traceEvents)"),
    (lambda folder: write(folder / "weights.bin", bytes(range(256)) * 8),
     "unrecognized binary file"),
    (lambda folder: write(folder / "notes.txt", b"kernel times, by hand\n"),
     "unrecognized text file"),
], ids=["sqlite-no-tables", "sqlite-browser", "sqlite-strings-only", "json-config", "binary",
        "text"])
def test_a_file_of_no_known_format_says_what_it_looked_like(tmp_path, make, fragment):
    with pytest.raises(UnknownFormat) as info:
        detect_file(make(tmp_path))
    line = info.value.one_line()
    assert fragment in line
    assert "Nsight Systems reports" in line and "Nsight Compute CSV" in line  # what to pass


def test_sqlite_table_names_of_an_export(make_trace, simple_scenario, tmp_path):
    names = sqlite_table_names(make_trace(simple_scenario))
    assert {"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS"} <= names
    assert sqlite_table_names(sqlite_file(tmp_path / "none.sqlite")) == frozenset()
