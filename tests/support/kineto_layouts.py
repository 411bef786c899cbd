"""The H200 Kineto fixture with content a reader must survive, in every layout the chunked
Kineto path must cut (``tests/ingest/readers/test_json_chunks.py``, ``test_kineto_split.py``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.support import paths

FIXTURE = paths.H200_FIXTURES / "torch-trace.pt.trace.json.gz"


def fixture_document(shift_us: float = 0.0) -> dict[str, Any]:
    """The H200 fixture, its times moved by ``shift_us``. Its times (5.2·10^12 µs) are beyond
    2^41 µs, where times are converted one event at a time; shifted to 1.2·10^12 µs (like the
    B200 trace) a column of them goes through numpy."""
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as stream:
        document = json.load(stream)
    if shift_us:
        for event in document["traceEvents"]:
            if isinstance(event, dict) and isinstance(event.get("ts"), float):
                event["ts"] = round(event["ts"] + shift_us, 3)
    return document  # type: ignore[no-any-return]


#: moves the fixture's times below 2^41 µs (the column-at-a-time conversion)
BELOW_2_41 = -4e12


def oddities(events: list[dict[str, Any]]) -> list[Any]:
    """The real events plus content a reader must survive (and skip or keep as it does)."""
    kernel = next(e for e in events if e.get("cat") == "kernel")
    op = next(e for e in events if e.get("cat") == "cpu_op")
    odd: list[Any] = [
        1, "text", None, [kernel],                          # elements that are no event
        {**op, "args": ["not", "a", "dict"]},               # args of the wrong type
        {**op, "args": None, "name": 7},
        {**op, "name": 'a, {"b": "}, {"},\n', "args": {**op.get("args", {}),
                                                         "nested": [{"x": 1}, {"y": [{}]}]}},
        {**op, "name": "ünïcödé ∑ 🚀 (a surrogate pair once escaped)"},
        {**op, "ts": op["ts"] + 0.001, "dur": 2},         # an int dur among floats
        {**kernel, "args": {**kernel["args"], "grid": "1,2,3", "device": "0"}},
        {**op, "cat": ["a", "list"]},
        {"ph": "M", "name": "thread_name", "pid": op["pid"], "tid": op["tid"],
         "args": {"name": "odd thread"}},
    ]
    last = {"ph": "M", "cat": "__metadata", "name": "process_name", "pid": op["pid"],
            "args": {"name": "a process named in a metadata event with a category"}}
    return [*events[:50], *odd, *events[50:], last]


def write_layouts(folder: Path, document: dict[str, Any]) -> dict[str, Path]:
    """The same document in the layouts the chunked path must handle."""
    events = document["traceEvents"]
    header = {k: v for k, v in document.items() if k != "traceEvents"}
    files = {
        "pretty": json.dumps(document, indent=4),
        "one-line": json.dumps(document),
        "compact": json.dumps(document, separators=(",", ":")),
        "bare-list": json.dumps(events, indent=1),
        "keys-after": json.dumps({"traceEvents": events, **header}, indent=2),
        "one-event-per-line": "{" + ",\n".join(
            [*(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in header.items()),
             '"traceEvents": [\n' + ",\n".join(map(json.dumps, events)) + "\n]"]) + "}",
    }
    written = {}
    for name, text in files.items():
        path = folder / f"{name}.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        written[name] = path
    return written
