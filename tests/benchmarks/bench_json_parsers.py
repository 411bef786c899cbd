"""Benchmark: JSON parsers on the events of one Kineto trace (why the reader uses msgspec).

Not collected by pytest. Run::

    python tests/benchmarks/replicate.py \\
        "$TRACEKIT_SHARED_TRACES/tracelens/b200__eager_trace.json.gz" /tmp/b200x37.json --copies 37
    pip install orjson pysimdjson        # optional contenders; skipped when absent
    python tests/benchmarks/bench_json_parsers.py /tmp/b200x37.json

Each contender turns the events array into something the reader could walk, chunk by
chunk where it can (the same cuts as ``tracekit.ingest.readers.json_chunks``, about
``--chunk-mib`` each), and reads what the reader reads: every event's ``cat``, and of the
events it keeps (kernels, CPU ops, runtime calls …) six fields and six args. The file is
read into memory first, so only parsing and access are timed; one process, one after the
other, garbage collector off during each contender (as the reader runs msgspec):

- ``json.loads`` of the whole file (the standard library; memory ~6× the file);
- ``ijson.items`` (C backend, ``use_float=True``): one dict per event, streamed;
- ``orjson.loads`` per chunk: dicts of everything;
- ``simdjson`` (pysimdjson) per chunk: lazy proxies, each ``cat`` looked up from Python;
- ``msgspec`` per chunk, untyped (dicts of everything) and typed (the reader's records:
  only the fields and args it reads are built, the rest skipped by the parser).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ijson
import msgspec

from tracekit.ingest.readers.json_chunks import decoded_chunks, object_rest_ok
from tracekit.ingest.readers.kineto_events import EventTypes
from tracekit.ingest.spec import spec_by_id


class _Quiet:
    def feed(self, chunk: bytes) -> None:
        """The chunker shows each block read; nothing to do with it here."""


def chunks(data: bytes, chunk_mib: float) -> list[bytes]:
    """The events array cut as the reader cuts it (each chunk a JSON array, as bytes)."""
    import tracekit.ingest.readers.json_chunks as cutter

    cutter.CHUNK_BYTES = int(chunk_mib * 2**20)
    start = data.index(b"[", data.index(b'"traceEvents"'))
    out: list[bytes] = []

    def keep(view: memoryview) -> tuple[int, int] | None:
        out.append(bytes(view))
        return 0, 0

    stream = io.BytesIO(data[start:])
    buffer = bytearray(stream.read(cutter.READ_BYTES))
    for _ in decoded_chunks(stream, buffer, _Quiet(), bare_list=False, decode=keep,
                            trailer_ok=object_rest_ok):
        pass
    return out


#: categories whose events the reader reads further (the rest it only counts)
KEPT = frozenset({"kernel", "Kernel", "cpu_op", "Operator", "cuda_runtime", "Runtime",
                  "cuda_driver", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset",
                  "user_annotation", "ac2g", "async_gpu"})
FIELDS = ("ph", "name", "pid", "tid", "ts", "dur")
ARGS = ("External id", "correlation", "Input type", "Input Dims", "grid", "device")


def walk_mappings(events: Any) -> int:
    """What the reader reads of each event, from dict-like events: ``cat`` of every one, the
    fields and args of those it keeps. Returns the events kept."""
    kept = 0
    for event in events:
        if event.get("cat") in KEPT:
            kept += 1
            for field in FIELDS:
                event.get(field)
            args = event.get("args")
            if args is not None:
                for name in ARGS:
                    args.get(name)
    return kept


def contenders(data: bytes, pieces: list[bytes]) -> Iterator[tuple[str, Callable[[], int]]]:
    yield "json.loads (whole file)", lambda: walk_mappings(json.loads(data)["traceEvents"])
    yield "ijson.items (C backend, use_float)", lambda: walk_mappings(
        ijson.items(io.BytesIO(data), "traceEvents.item", use_float=True))
    try:
        import orjson

        yield "orjson.loads per chunk", lambda: sum(
            walk_mappings(orjson.loads(piece)) for piece in pieces)
    except ImportError:
        print("orjson not installed: skipped")
    try:
        import simdjson

        parser = simdjson.Parser()

        def with_simdjson() -> int:
            kept = 0
            for piece in pieces:
                kept += walk_mappings(parser.parse(piece))
            return kept

        yield "simdjson per chunk (lazy proxies)", with_simdjson
    except ImportError:
        print("pysimdjson not installed: skipped")
    yield "msgspec per chunk, untyped", lambda: sum(
        walk_mappings(msgspec.json.decode(piece)) for piece in pieces)
    args = spec_by_id("kineto-json").mapping.args
    names = [name for target in args.__struct_fields__ for name in getattr(args, target)] + [
        "name"]
    types = EventTypes(names, exact=False)
    attrs = [types.attr[name] for name in ARGS]

    def typed() -> int:
        kept = 0
        for piece in pieces:
            for event in types.decode(piece)[0]:  # type: ignore[index]
                if event.cat in KEPT:
                    kept += 1
                    for field in FIELDS:
                        getattr(event, field)
                    if event.args is not None:
                        for attr in attrs:
                            getattr(event.args, attr)
        return kept

    yield "msgspec per chunk, typed records (the reader)", typed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--chunk-mib", type=float, default=4)
    options = parser.parse_args()
    data = options.trace.read_bytes()
    pieces = chunks(data, options.chunk_mib)
    print(f"{options.trace}: {len(data) / 2**20:.0f} MiB, {len(pieces)} chunks")
    print("| parser | seconds | events kept |")
    print("|---|---:|---:|")
    for label, run in contenders(data, pieces):
        gc.collect()
        gc.disable()
        started = time.perf_counter()
        events: Any = run()
        elapsed = time.perf_counter() - started
        gc.enable()
        print(f"| {label} | {elapsed:.2f} | {events:,} |", flush=True)


if __name__ == "__main__":
    main()
