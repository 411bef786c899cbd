"""The one-pass walker of JSON documents with big arrays at known paths (json_sections):
arrays that end in the middle of a document, cuts that fall inside strings and nested
objects, every layout json.dumps writes, and refusals of damaged bytes."""

from __future__ import annotations

import io
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.ingest.readers import json_sections
from tracekit.ingest.readers.json_sections import ITEM, Each, NotJson, Records, SectionWalker, Whole


class Record(msgspec.Struct):
    id: int
    name: str = ""


def walk(document: bytes, plan: dict[Any, Any]) -> None:
    SectionWalker(io.BytesIO(document), plan, name="doc.json").walk()


def collect(document: bytes, *paths: tuple[str, ...]) -> dict[tuple[str, ...], list[Any]]:
    """Every record at each path, and how many chunks each came in."""
    found: dict[tuple[str, ...], list[Any]] = {path: [] for path in paths}
    plan = {path: Records(msgspec.json.Decoder(list[Record]), found[path].extend)
            for path in paths}
    walk(document, plan)
    return found


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 64 bytes and reads of 50: every record boundary is a cut, every array end
    falls inside a chunk, and reads end inside tokens."""
    monkeypatch.setattr(json_sections, "CHUNK_BYTES", 64)
    monkeypatch.setattr(json_sections, "READ_BYTES", 50)


def records(count: int, text: str = "") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{text}{i}", "args": [{"k": i}, [1, 2]], "extra": {"x": [i]}}
            for i in range(count)]


def document(*, indent: int | None = None, text: str = "") -> bytes:
    body = {"tool": [
        {"meta": {"pid": 7, "note": "a ] and a },{ in text"}, "skipped": records(30, text),
         "tables": {"a": records(40, text), "b": [], "c": records(3, text)},
         "tail": [1, "two", None]},
        {"meta": {"pid": 8}, "tables": {"a": records(5, text), "b": records(2, text)}},
    ]}
    return json.dumps(body, indent=indent).encode()


@pytest.mark.parametrize("indent", [None, 2])
def test_arrays_in_the_middle_of_a_document_are_read_whole(small_chunks, indent):
    doc = document(indent=indent)
    found = collect(doc, ("tool", ITEM, "tables", "a"), ("tool", ITEM, "tables", "b"),
                    ("tool", ITEM, "tables", "c"))
    assert [r.id for r in found[("tool", ITEM, "tables", "a")]] == [*range(40), *range(5)]
    assert [r.id for r in found[("tool", ITEM, "tables", "b")]] == [0, 1]
    assert [r.id for r in found[("tool", ITEM, "tables", "c")]] == [0, 1, 2]


def test_cuts_inside_strings_and_nested_objects_are_refused_by_the_parse(small_chunks):
    doc = document(text='},{"id": 1} ] , {')
    found = collect(doc, ("tool", ITEM, "tables", "a"))
    names = [r.name for r in found[("tool", ITEM, "tables", "a")]]
    assert names == [f'}},{{"id": 1}} ] , {{{i}' for i in [*range(40), *range(5)]]


def test_whole_values_and_each_callbacks_in_file_order():
    seen: list[Any] = []
    plan = {
        ("tool", ITEM): Each(lambda index: seen.append(("process", index))),
        ("tool", ITEM, "meta"): Whole(msgspec.json.Decoder(), lambda v: seen.append(v["pid"])),
        ("tool", ITEM, "tables", "c"): Records(msgspec.json.Decoder(list[Record]),
                                               lambda chunk: seen.append(len(chunk))),
        ("tool", ITEM, "tail"): Whole(msgspec.json.Decoder(), seen.append),
    }
    walk(document(), plan)
    assert seen == [("process", 0), 7, 3, [1, "two", None], ("process", 1), 8]


def test_large_arrays_come_in_bounded_chunks(monkeypatch):
    monkeypatch.setattr(json_sections, "CHUNK_BYTES", 4096)
    chunks: list[int] = []
    doc = json.dumps({"r": records(2000), "after": records(10)}).encode()
    walk(doc, {("r",): Records(msgspec.json.Decoder(list[Record]),
                               lambda chunk: chunks.append(len(chunk)))})
    assert sum(chunks) == 2000 and len(chunks) > 10


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from('ab,{}[]":\\ \n'), max_size=12), max_size=30),
       st.integers(min_value=16, max_value=200), st.sampled_from([None, 1]))
def test_any_text_in_records_reads_as_json_loads_reads_it(texts, chunk, indent):
    old = json_sections.CHUNK_BYTES, json_sections.READ_BYTES
    json_sections.CHUNK_BYTES, json_sections.READ_BYTES = chunk, 37
    try:
        body = {"x": {"r": [{"id": i, "name": t, "n": [{"t": t}]} for i, t in enumerate(texts)],
                      "s": [{"id": -1, "name": t} for t in texts]}}
        doc = json.dumps(body, indent=indent).encode()
        found = collect(doc, ("x", "r"), ("x", "s"))
    finally:
        json_sections.CHUNK_BYTES, json_sections.READ_BYTES = old
    assert [r.name for r in found[("x", "r")]] == texts
    assert [r.name for r in found[("x", "s")]] == texts


@pytest.mark.parametrize(("doc", "fragment"), [
    (b'{"tool": [{"tables": {"a": [{"id": 1}, {"id": 2', "truncated"),
    (b'{"tool": [{"tables": {"a": [{"id": 1}]}}]} trailing', "after the end"),
    (b'{"tool": [{"tables": {"a": [{"id": "one"}]}}]}', "a record is not what"),
    (b'{"tool": [{"tables": {"a": {"id": 1}}}]}', "is not an array"),
    (b'{"tool" [', "expected ':'"),
    (b'', "truncated"),
])
def test_damaged_documents_are_one_clear_error(small_chunks, doc, fragment):
    with pytest.raises(NotJson, match=fragment):
        collect(doc, ("tool", ITEM, "tables", "a"))
