"""The chunked Kineto path (msgspec on cut chunks) stores exactly what the streaming path
(ijson, event by event) stores, whatever the layout; it falls back where it cannot cut."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kineto_layouts import (
    BELOW_2_41,
    FIXTURE,
    fixture_document,
    oddities,
    write_layouts,
)
from tracekit.errors import InputError
from tracekit.ingest.pipeline import ingest
from tracekit.ingest.readers import json_chunks, kineto_json
from tracekit.store import open_store

TABLES = ("kernels", "cpu_ops", "runtime_calls", "memory_ops", "nvtx_ranges", "processes",
          "threads", "devices", "kernel_names", "api_names")


def stored(trace: Path, db: Path) -> dict[str, Any]:
    """Every row the ingest wrote, and the run's meta (without its timing)."""
    store = open_store(str(db))
    try:
        ingest(store, [trace])
    finally:
        store.dispose()
    connection = sqlite3.connect(db)
    try:
        rows = {table: connection.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                for table in TABLES}
        meta = json.loads(connection.execute("SELECT meta_json FROM runs").fetchone()[0])
    finally:
        connection.close()
    meta.pop("ingest_seconds", None)
    rows["meta"] = meta
    return rows


class Paths:
    """Counts which path each file took."""

    def __init__(self) -> None:
        self.streamed: list[int] = []


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Paths:
    seen = Paths()
    original = kineto_json.KinetoReader._stream

    def stream(self: Any, state: Any, path: Path, skip: int) -> Any:
        seen.streamed.append(skip)
        return original(self, state, path, skip)

    monkeypatch.setattr(kineto_json.KinetoReader, "_stream", stream)
    return seen


def streamed_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the reader take ijson's streaming path for every file (the reference)."""
    def no_chunks(self: Any, path: Path) -> Iterator[Any]:
        raise json_chunks.Unchunkable("reference")
        yield  # pragma: no cover

    monkeypatch.setattr(kineto_json.KinetoReader, "_chunks", no_chunks)


def both_ways(trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    chunked = stored(trace, tmp_path / f"{trace.name}-chunked.db")
    with monkeypatch.context() as patch:
        streamed_only(patch)
        streamed = stored(trace, tmp_path / f"{trace.name}-streamed.db")
    return chunked, streamed


@pytest.fixture(params=[64, 4096, 1 << 20], ids=["64B-chunks", "4KiB-chunks", "1MiB-chunks"])
def chunk_bytes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(json_chunks, "CHUNK_BYTES", request.param)
    monkeypatch.setattr(json_chunks, "READ_BYTES", max(request.param, 1024))
    return int(request.param)


@pytest.mark.parametrize("shift_us", [0.0, BELOW_2_41], ids=["times-5e12", "times-1e12"])
@pytest.mark.parametrize("layout", ["pretty", "one-line", "compact", "bare-list", "keys-after",
                                    "one-event-per-line"])
def test_chunked_equals_streamed_in_every_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 chunk_bytes: int, layout: str, shift_us: float,
                                                 paths: Paths) -> None:
    document = fixture_document(shift_us)
    document["traceEvents"] = oddities(document["traceEvents"])
    trace = write_layouts(tmp_path, document)[layout]
    chunked, streamed = both_ways(trace, tmp_path, monkeypatch)
    assert paths.streamed == [0], "only the reference run streams"
    assert chunked == streamed
    assert len(chunked["kernels"]) > 100 and len(chunked["cpu_ops"]) > 100


def test_real_fixture_chunked_equals_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              paths: Paths) -> None:
    chunked, streamed = both_ways(FIXTURE, tmp_path, monkeypatch)
    assert paths.streamed == [0]
    assert chunked == streamed


def test_epoch_microseconds_stay_exact_on_the_chunked_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: Paths) -> None:
    """Old traces with epoch µs: Decimal numbers, as ijson's exact mode gives."""
    document = fixture_document()
    for event in document["traceEvents"]:
        if isinstance(event.get("ts"), float):
            event["ts"] = round(event["ts"] + 1_700_000_000_000_000, 3)
    trace = tmp_path / "epoch.json"
    trace.write_text(json.dumps(document))
    chunked, streamed = both_ways(trace, tmp_path, monkeypatch)
    assert chunked == streamed
    starts = [row[4] for row in chunked["kernels"]]
    assert all(isinstance(start, int) for start in starts)


def test_a_layout_without_boundaries_falls_back_after_the_chunks_it_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: Paths) -> None:
    """An event larger than the growth limit: the elements before it were chunked, the rest
    streamed (skipping exactly those), and the run is the same as streamed alone."""
    document = fixture_document()
    events = document["traceEvents"]
    big = {"ph": "X", "cat": "python_function", "name": "x" * 5000, "ts": events[-1]["ts"],
           "dur": 1.0, "args": {}}
    document["traceEvents"] = [*events[:300], big, *events[300:]]
    trace = tmp_path / "big.json"
    trace.write_text(json.dumps(document, indent=1))
    monkeypatch.setattr(json_chunks, "CHUNK_BYTES", 1024)
    monkeypatch.setattr(json_chunks, "READ_BYTES", 1024)
    monkeypatch.setattr(json_chunks, "GROW_LIMIT", 4096)
    chunked = stored(trace, tmp_path / "a.db")
    assert paths.streamed and paths.streamed[0] > 0
    with monkeypatch.context() as patch:
        streamed_only(patch)
        streamed = stored(trace, tmp_path / "b.db")
    assert chunked == streamed


@pytest.mark.parametrize("damage", ["truncated", "garbage-inside", "no-comma", "trailing-comma",
                                    "trailer-nan", "lone-surrogate"])
def test_invalid_json_is_refused_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           chunk_bytes: int, damage: str) -> None:
    """Small chunks put a cut at the damage too: a cut is never taken on trust."""
    document = fixture_document()
    events = document.pop("traceEvents")
    text = json.dumps({**document, "traceEvents": events}, indent=1)  # the events last
    middle = len(text) // 2
    position = text.index("\n  {", middle)
    damaged = {
        "truncated": text[:middle],
        "garbage-inside": text[:position] + "\n  }}" + text[position:],
        "no-comma": text[:position - 1] + text[position:],  # "}\n  {" without the comma
        "trailing-comma": text[:text.rindex("]")].rstrip() + ",\n]" + text[text.rindex("]") + 1:],
        "trailer-nan": text[:text.rindex("}")].rstrip() + ', "x": NaN\n}',
        "lone-surrogate": text[:position] + '\n  {"name": "\\udcff"},' + text[position:],
    }[damage]
    trace = tmp_path / f"{damage}.json"
    trace.write_text(damaged)
    errors = []
    for streamed in (False, True):
        with monkeypatch.context() as patch:
            if streamed:
                streamed_only(patch)
            store = open_store(str(tmp_path / f"{damage}-{streamed}.db"))
            with pytest.raises(InputError) as refused:
                ingest(store, [trace])
            store.dispose()
            errors.append(str(refused.value).split("(")[0])
    assert errors[0] == errors[1]
    assert "JSON is truncated or invalid" in errors[0] or "unexpected content" in errors[0]


def test_decode_is_verified_not_trusted() -> None:
    """A cut inside a nested value or a string never parses as whole elements."""
    decode: Callable[[Any], Any] = kineto_json.EventTypes(["External id"], exact=False).decode
    assert decode(b'[{"a": [{"b": 1}') is None
    assert decode(b'[{"name": "x}, {"]') is None
    assert decode(b'[{"ph": "X"}, 1, "s"]')[1] == 3  # three elements, one record


def test_numbers_beyond_64_bits_are_refused_in_one_line(tmp_path: Path,
                                                        chunk_bytes: int) -> None:
    """msgspec reads integers of any size (ijson's float mode refused them as invalid JSON);
    a time that large cannot be stored: one clear error, not a crash in numpy."""
    document = fixture_document(BELOW_2_41)
    events = document["traceEvents"]
    op = next(e for e in events if e.get("cat") == "cpu_op")
    events.insert(len(events) // 2, {**op, "dur": 10**400})
    trace = tmp_path / "huge.json"
    trace.write_text(json.dumps(document))
    store = open_store(str(tmp_path / "s.db"))
    with pytest.raises(InputError, match="does not fit in 64 bits"):
        ingest(store, [trace])
    store.dispose()


def test_times_of_a_column_equal_times_of_each_event() -> None:
    """The numpy conversion (``_times_of``) gives exactly ``round(ts * 1000)`` and
    ``round(dur * 1000)`` for every float below 2^41 µs, whatever its magnitude and sign."""
    import random

    types = kineto_json.EventTypes(["External id"], exact=False)
    generator = random.Random(13)
    values = [0.0, -0.0, 0.0005, 0.0015, 0.0025, -0.0025, 1.0005, 2.0**41 - 0.001,
              -(2.0**41) + 0.001, 1e-9, 123.4565]
    for digits in range(0, 13):
        for _ in range(300):
            whole = generator.randrange(10**digits)
            values.append(round(whole + generator.randrange(1000) / 1000, 3)
                          * generator.choice((1, -1)))
            values.append(whole + generator.random())  # more digits than ns
    events = [types.event_type(ph="X", ts=value, dur=values[-1 - index] if index % 3 else
                               generator.randrange(10**6))
              for index, value in enumerate(values)]
    reader = kineto_json.KinetoReader.__new__(kineto_json.KinetoReader)
    starts, ends = reader._times_of(events)
    expected = [reader._times(event) for event in events]
    assert list(zip(starts, ends, strict=True)) == expected


def sequential_chunks(trace: Path) -> tuple[list[bytes], int, bool]:
    """The chunks ``decoded_chunks`` decodes in ``trace`` (their bytes as decoded), the
    offset of the events array, and whether the file is a bare list."""
    from tracekit.ingest.readers.json_document import (
        TopLevelScanner,
        array_after_key,
        first_significant,
    )

    chunks: list[bytes] = []

    def decode(view: memoryview) -> int | None:
        data = bytes(view)
        try:
            json.loads(data)
        except ValueError:
            return None
        chunks.append(data)
        return 1

    scanner = TopLevelScanner()
    with trace.open("rb") as stream:
        first = first_significant(stream)
        scanner.feed(first)
        bare_list = first[:1] == b"["
        buffer = bytearray(first) if bare_list else array_after_key(stream, bytearray(first),
                                                                   scanner)
        array_at = stream.tell() - len(buffer)
        for _ in json_chunks.decoded_chunks(
                stream, buffer, scanner, bare_list=bare_list, decode=decode,
                trailer_ok=json_chunks.blanks_only if bare_list else json_chunks.object_rest_ok):
            pass
    return chunks, array_at, bare_list


def chunks_by_seeking(trace: Path, array_at: int, bare_list: bool) -> list[bytes]:
    """The chunks ``chunk_spans`` finds, as their bytes would be decoded."""
    with trace.open("rb") as stream:
        spans = json_chunks.chunk_spans(
            stream, array_at, trace.stat().st_size,
            trailer_ok=json_chunks.blanks_only if bare_list else json_chunks.object_rest_ok)
        found = []
        for start, end in spans:
            stream.seek(start)
            chunk = bytearray(stream.read(end - start + 1))
            chunk[0], chunk[-1] = ord("["), ord("]")
            found.append(bytes(chunk))
    return found


@pytest.mark.parametrize("layout", ["pretty", "one-line", "compact", "bare-list", "keys-after",
                                    "one-event-per-line"])
def test_chunk_spans_are_the_cuts_of_the_sequential_read(tmp_path: Path, chunk_bytes: int,
                                                          layout: str) -> None:
    """Found by seeking, without decoding, the chunks are the ones the sequential read
    decodes, byte for byte (where no cut had to be moved past a string)."""
    trace = write_layouts(tmp_path, fixture_document())[layout]
    chunks, array_at, bare_list = sequential_chunks(trace)
    assert chunks_by_seeking(trace, array_at, bare_list) == chunks
    assert len(chunks) > 1 or chunk_bytes > 1000


def test_a_cut_is_searched_for_past_a_long_run_of_blanks(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of blanks between events that straddle the reads (after the first 64 KiB): each
    cut is the one a search of the whole file finds, however the bytes were read."""
    monkeypatch.setattr(json_chunks, "CHUNK_BYTES", 100)
    monkeypatch.setattr(json_chunks, "READ_BYTES", 120)
    events = [json.dumps({"ph": "X", "cat": "cpu_op", "name": f"op{i}", "ts": i, "dur": 1})
              for i in range(600)]
    trace = tmp_path / "blanks.json"
    trace.write_text('{"traceEvents": [' + (",\n" + " " * 300).join(events) + "]}")
    chunks, array_at, bare_list = sequential_chunks(trace)
    assert chunks_by_seeking(trace, array_at, bare_list) == chunks
    assert [len(json.loads(chunk)) for chunk in chunks] == [2] * 300
