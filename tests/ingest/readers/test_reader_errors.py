"""Odd content in a trace: each reader names the problem itself (an InputError saying what
is wrong), not the pipeline's catch-all ``UnexpectedContent``. The cases are what the fuzzers
found (tests/benchmarks/README.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.ingest.readers.test_cupti_jsonl import records
from tests.ingest.readers.test_kineto_json import kineto_document, write_trace
from tracekit.errors import InputError
from tracekit.ingest.pipeline import UnexpectedContent, ingest


def assert_named_error(store, path: Path, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        ingest(store, [path])
    assert not isinstance(info.value, UnexpectedContent), info.value.one_line()
    assert fragment in info.value.one_line()


@pytest.mark.parametrize("bad", ["soon", [1, 2], {"us": 3}])
def test_kineto_time_that_is_not_a_number(store, tmp_path, bad):
    document = kineto_document(0)
    kernel = next(e for e in document["traceEvents"] if e.get("cat") == "kernel")
    kernel["ts"] = bad
    assert_named_error(store, write_trace(tmp_path / "t.json", document), "not a number")


def test_kineto_category_that_is_a_list_is_ignored(store, tmp_path):
    document = kineto_document(0)
    document["traceEvents"].append({"cat": ["kernel"], "ph": "X", "ts": 1, "dur": 1})
    ingest(store, [write_trace(tmp_path / "t.json", document)])


@pytest.mark.parametrize("base", ["", [1]])
def test_kineto_base_time_that_is_not_an_integer(store, tmp_path, base):
    document = kineto_document(0)
    document["baseTimeNanoseconds"] = base
    assert_named_error(store, write_trace(tmp_path / "t.json", document),
                       "baseTimeNanoseconds is not an integer")


def test_cupti_number_beyond_64_bits(store, tmp_path):
    rows = records(1, 0)
    kernel = next(r for r in rows if r.get("kind") == "kernel")
    kernel["correlationId"] = 2**70
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert_named_error(store, path, "does not fit in 64 bits")


def test_ncu_details_page_without_unit_column(store, tmp_path, shared_trace):
    source = shared_trace("llm-perf-opt/kernel_0001_ncu.details.csv")
    with source.open(newline="") as stream:
        rows = list(csv.reader(stream))
    header_at = next(i for i, row in enumerate(rows) if "Metric Unit" in row)
    drop = rows[header_at].index("Metric Unit")
    trimmed = tmp_path / "no-units.details.csv"
    with trimmed.open("w", newline="") as stream:
        writer = csv.writer(stream, quoting=csv.QUOTE_ALL)
        for row in rows:
            writer.writerow(row[:drop] + row[drop + 1:] if len(row) > drop else row)
    run_id = ingest(store, [trimmed]).run_id
    with store.connect() as connection:
        from sqlalchemy import text

        metrics, units = connection.execute(text(
            "SELECT COUNT(*), COUNT(unit) FROM kernel_metrics WHERE run_id = :r"),
            {"r": run_id}).one()
    assert metrics > 0 and units == 0
