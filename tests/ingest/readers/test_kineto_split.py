"""One Kineto file read by several processes stores exactly what one process stores.

The split path (``tracekit/ingest/readers/kineto_split.py``) is taken here on small files
(``SPLIT_MIN_BYTES`` lowered, chunks of a few KiB), in every layout the chunked path cuts,
with the odd content a reader must survive; where it must not split (kernels waiting for a
flow at a range's end, a cut inside a string) it reads the file the ordinary way, and an
error is the one the ordinary read raises.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.kineto_layouts import BELOW_2_41, fixture_document, oddities, write_layouts
from tests.support.stores import postgres_test_url, scratch_postgres_url
from tracekit.errors import InputError
from tracekit.ingest.pipeline import ingest
from tracekit.ingest.readers import json_chunks, kineto_json, kineto_split
from tracekit.store import open_store

TABLES = ("kernels", "cpu_ops", "runtime_calls", "memory_ops", "nvtx_ranges", "processes",
          "threads", "devices", "kernel_names", "api_names", "run_counts")


class Splits:
    """How each file was read: True split, False the ordinary way after trying, None the
    split read raised."""

    def __init__(self) -> None:
        self.outcomes: list[bool | None] = []


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Splits:
    """Split any file of two chunks or more (chunks of 4 KiB); scratch files in tmp_path."""
    monkeypatch.setattr(kineto_split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(json_chunks, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(json_chunks, "READ_BYTES", 4096)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    seen = Splits()
    original = kineto_split.read_split

    def read_split(*args: Any, **kwargs: Any) -> bool:
        seen.outcomes.append(None)
        seen.outcomes[-1] = outcome = original(*args, **kwargs)
        return outcome

    monkeypatch.setattr(kineto_json, "read_split", read_split)
    return seen


def stored(trace: Path, url: str, jobs: int) -> dict[str, Any]:
    """Every row the ingest wrote (ids included), and the run's meta."""
    store = open_store(url)
    try:
        run_id = ingest(store, [trace], jobs=jobs).run_id
        with store.connect() as connection:
            rows: dict[str, Any] = {
                table: [tuple(row) for row in connection.execute(text(
                    f"SELECT * FROM {table} ORDER BY 1, 2"))]
                for table in TABLES}
            meta = connection.execute(text("SELECT meta_json FROM runs WHERE id = :id"),
                                      {"id": run_id}).scalar_one()
            if store.is_sqlite:  # the scratch files were detached with the transaction
                schemas = [row[1] for row in connection.exec_driver_sql("PRAGMA database_list")]
                assert not any(schema.startswith("tk_split") for schema in schemas), schemas
    finally:
        store.dispose()
    rows["meta"] = json.loads(meta)
    return rows


def both_ways(trace: Path, tmp_path: Path, jobs: int = 3) -> tuple[dict[str, Any], ...]:
    one = stored(trace, str(tmp_path / f"{trace.stem}-one.db"), jobs=1)
    several = stored(trace, str(tmp_path / f"{trace.stem}-split.db"), jobs=jobs)
    assert not list((tmp_path / "scratch").iterdir()), "scratch files left behind"
    return one, several


@pytest.mark.parametrize("jobs", [2, 3])
@pytest.mark.parametrize("shift_us", [0.0, BELOW_2_41], ids=["times-5e12", "times-1e12"])
@pytest.mark.parametrize("layout", ["pretty", "one-line", "compact", "bare-list", "keys-after",
                                    "one-event-per-line"])
def test_split_equals_one_process_in_every_layout(tmp_path: Path, splits: Splits, layout: str,
                                                  shift_us: float, jobs: int) -> None:
    document = fixture_document(shift_us)
    document["traceEvents"] = oddities(document["traceEvents"])
    trace = write_layouts(tmp_path, document)[layout]
    one, several = both_ways(trace, tmp_path, jobs)
    assert splits.outcomes == [True]
    assert one == several
    assert len(one["kernels"]) > 100 and len(one["cpu_ops"]) > 100


def test_kernels_waiting_for_a_flow_at_a_range_end_are_read_by_one_process(
        tmp_path: Path, splits: Splits) -> None:
    """Legacy traces: a kernel without a correlation arg waits for the ac2g flow that names
    it; one waiting where a range ends would be cut off from its flow, so the file is read
    the ordinary way."""
    document = fixture_document()
    events = [event for event in document["traceEvents"] if event.get("cat") != "ac2g"]
    linked: list[Any] = []
    flows: list[Any] = []
    for event in events:
        linked.append(event)
        if event.get("cat") == "kernel":
            args = dict(event["args"])
            correlation = args.pop("correlation")
            linked[-1] = {**event, "args": args}
            flows.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": correlation,
                          "pid": event["pid"], "tid": event["tid"], "ts": event["ts"],
                          "bp": "e"})
        if len(flows) > 20:  # each kernel's flow comes a few hundred events later
            linked.append(flows.pop(0))
    document["traceEvents"] = [*linked, *flows]
    trace = tmp_path / "legacy.json"
    trace.write_text(json.dumps(document, indent=1))
    one, several = both_ways(trace, tmp_path)
    assert splits.outcomes == [False]
    assert one == several
    assert all(row[15] is not None for row in one["kernels"]), "every kernel got its flow"


def test_a_cut_inside_a_string_is_read_by_one_process(tmp_path: Path, splits: Splits,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by seeking, a cut is not verified until a worker decodes its chunk: one inside
    a string (``, {`` in a name, on one line) does not parse, and the ordinary read (which
    moves such a cut on) reads the file."""
    document = fixture_document()
    events = document["traceEvents"]
    op = next(event for event in events if event.get("cat") == "cpu_op")
    events.insert(len(events) // 2, {**op, "name": "x" * 50 + ', {"tricky": 1}'})
    trace = tmp_path / "tricky.json"
    written = json.dumps(document)
    trace.write_text(written)
    array_at = written.index("[", written.index('"traceEvents"'))
    # the first cut the search meets is the one inside the name
    inside = written.index(', {\\"tricky')
    monkeypatch.setattr(json_chunks, "CHUNK_BYTES", inside - array_at - 5)
    one, several = both_ways(trace, tmp_path)
    assert splits.outcomes == [False]
    assert one == several


def test_an_error_in_a_later_range_is_the_error_of_one_process(tmp_path: Path,
                                                               splits: Splits) -> None:
    document = fixture_document()
    events = document["traceEvents"]
    op = next(event for event in events if event.get("cat") == "cpu_op")
    events.insert(len(events) * 3 // 4, {**op, "dur": "<not a number>"})
    trace = tmp_path / "bad.json"
    trace.write_text(json.dumps(document, indent=1))
    messages = []
    for jobs in (1, 3):
        db = tmp_path / f"bad-{jobs}.db"
        store = open_store(str(db))
        with pytest.raises(InputError) as refused:
            ingest(store, [trace], jobs=jobs)
        store.dispose()
        messages.append(refused.value.one_line())
        connection = sqlite3.connect(db)
        assert connection.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
        connection.close()
    assert splits.outcomes == [None]  # the split read raised it
    assert messages[0] == messages[1]
    assert "not a number of microseconds" in messages[0]


def test_split_equals_one_process_on_both_stores(tmp_path: Path, splits: Splits,
                                                 store_url: str) -> None:
    """On PostgreSQL the file is read by one process (its stage tables are on the server);
    either way the run is the one a single process stores."""
    trace = write_layouts(tmp_path, fixture_document(BELOW_2_41))["pretty"]
    several = stored(trace, store_url, jobs=3)
    if "postgresql" in store_url:
        with scratch_postgres_url(postgres_test_url() or "") as other:
            one = stored(trace, other, jobs=1)
        assert splits.outcomes == []
    else:
        one = stored(trace, str(tmp_path / "one.db"), jobs=1)
        assert splits.outcomes == [True]
    assert several == one


def test_small_and_gzip_files_are_read_by_one_process(tmp_path: Path) -> None:
    """Below ``SPLIT_MIN_BYTES`` one process; a gzip file cannot be cut by seeking."""
    store = open_store(str(tmp_path / "s.db"))
    with store.begin() as connection:
        assert kineto_split.split_workers(8, kineto_split.SPLIT_MIN_BYTES - 1, connection) == 1
        assert kineto_split.split_workers(3, kineto_split.SPLIT_MIN_BYTES, connection) == 3
        assert kineto_split.split_workers(None, 10**12, connection) >= 1
    store.dispose()
    from tests.support.kineto_layouts import FIXTURE

    reader = kineto_json.KinetoReader.__new__(kineto_json.KinetoReader)
    with pytest.raises(kineto_split.Fallback):
        kineto_split._plan(reader, FIXTURE)
