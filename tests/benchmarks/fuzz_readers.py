"""Coverage-guided fuzzing of tracekit's readers with atheris (libFuzzer for Python).

Run by hand (pytest does not collect this folder's scripts); see README.md here::

    pip install atheris
    python tests/benchmarks/fuzz_readers.py kineto -max_total_time=300
    python tests/benchmarks/fuzz_readers.py nsys   -max_total_time=300 -timeout=20
    python tests/benchmarks/fuzz_readers.py rocpd  -max_total_time=300  # rocprof-json, rocprof-csv

Each input is written to a file and ingested in-process into a SQLite store, exactly as
``tracekit analyze`` would. The contract checked: the input is ingested, or refused with a
``TracekitError`` (one line, exit 2 in the CLI) and the store is unchanged. Anything else is
a crash that libFuzzer saves as ``crash-<sha1>``; an input slower than ``-timeout`` is a hang.

Reader exceptions that the pipeline's safety net turns into ``UnexpectedContent`` count as
crashes here (they are reader bugs, even though users only see one line); pass
``--lenient`` to accept them and hunt for everything else.

The seed corpus (small valid files of each format, from the property suite's builders) is
written to ``<workdir>/seeds-<reader>``; libFuzzer's new inputs go to
``<workdir>/corpus-<reader>``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris

TESTS = Path(__file__).resolve().parents[1]
SUFFIX = {"nsys": ".sqlite", "kineto": ".json", "ncu": ".csv", "cupti": ".jsonl",
          "rules": ".toml", "rocprof-json": "_results.json", "rocprof-csv": "_kernel_trace.csv",
          "rocpd": ".db"}

with atheris.instrument_imports(include=["tracekit"]):
    from sqlalchemy import text

    import tracekit.ingest.detect
    import tracekit.ingest.readers.cupti_jsonl
    import tracekit.ingest.readers.kineto_json
    import tracekit.ingest.readers.ncu_csv
    import tracekit.ingest.readers.nsys_sqlite
    import tracekit.ingest.readers.rocpd_sqlite
    import tracekit.ingest.readers.rocprof_csv
    import tracekit.ingest.readers.rocprof_json
    import tracekit.ingest.staging
    import tracekit.ingest.trace_rows  # noqa: F401  (readers are imported lazily: instrument now)
    from tracekit.classifier import classify_names, load_ruleset
    from tracekit.errors import TracekitError
    from tracekit.ingest.pipeline import UnexpectedContent, ingest
    from tracekit.store.db import open_store


def _properties_module():  # type: ignore[no-untyped-def]
    """The property suite, for its base-file builders (one source of seeds)."""
    spec = importlib.util.spec_from_file_location("tracekit_fuzz_props",
                                                  TESTS / "test_properties.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_seeds(reader: str, folder: Path) -> None:
    """Small valid inputs for ``reader`` (libFuzzer mutates from these)."""
    props = _properties_module()
    folder.mkdir(parents=True, exist_ok=True)
    if reader == "nsys":
        props.small_nsys_export(folder / "base.sqlite")
    elif reader == "kineto":
        (folder / "base.json").write_text(json.dumps(props.kineto_document()))
        (folder / "list.json").write_text(json.dumps(props.kineto_document()["traceEvents"]))
    elif reader == "ncu":
        for name, rows in (("raw", props.ncu_raw_rows()), ("details", props.ncu_details_rows())):
            (folder / f"{name}.csv").write_text(
                "\n".join(props._csv_line(row) for row in rows) + "\n")
    elif reader == "cupti":
        (folder / "base.jsonl").write_text(
            "\n".join(json.dumps(record) for record in props.cupti_records()) + "\n")
    elif reader == "rocprof-json":
        (folder / "base_results.json").write_text(json.dumps(props.rocprof_json_document()))
    elif reader == "rocprof-csv":
        (folder / "base_kernel_trace.csv").write_text(
            "\n".join(props._csv_line(row) for row in props.rocprof_kernel_csv_rows()) + "\n")
    elif reader == "rocpd":
        props.small_rocpd(folder / "base.db")
    else:
        for stem, content in props.rule_texts():
            (folder / f"{stem}.toml").write_text(content)


def make_target(reader: str, workdir: Path, strict: bool) -> Callable[[bytes], None]:
    """The per-input function libFuzzer calls."""
    store = open_store(str(workdir / "store.db"))
    scratch = workdir / "inputs"
    scratch.mkdir(exist_ok=True)
    rules = workdir / "rules"
    rules.mkdir(exist_ok=True)

    def fingerprint() -> tuple[int, ...]:
        with store.connect() as connection:
            return tuple(connection.execute(text(
                "SELECT (SELECT COUNT(*) FROM runs), (SELECT COALESCE(MAX(id), 0) FROM kernels),"
                " (SELECT COALESCE(MAX(id), 0) FROM kernel_names)")).one())

    def ingest_one(data: bytes) -> None:
        path = scratch / f"input{SUFFIX[reader]}"
        path.write_bytes(data)
        before = fingerprint()
        try:
            ingest(store, [path], work_dir=scratch / "work")
        except TracekitError as error:
            if fingerprint() != before:
                raise AssertionError(f"store changed by a refused input: {error}") from None
            if strict and isinstance(error, UnexpectedContent):
                raise (error.__cause__ or error) from error
        finally:
            path.unlink(missing_ok=True)

    def load_rules(data: bytes) -> None:
        # A rule's id must equal its file name: name the file after the id it declares.
        found = re.search(rb'^id\s*=\s*"([A-Za-z0-9_.-]{1,60})"', data, re.MULTILINE)
        for old in rules.glob("*.toml"):
            old.unlink()
        (rules / f"{found.group(1).decode() if found else 'fuzzed'}.toml").write_bytes(data)
        try:
            ruleset = load_ruleset([rules], use_env=False)
        except TracekitError:
            return
        classify_names(["sm90_xmma_gemm_e4m3bf16_bf16f32_f32_tn_n", "x" * 200], ruleset,
                       arch="sm90")

    return load_rules if reader == "rules" else ingest_one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reader", choices=sorted(SUFFIX))
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the store, seeds and corpus go (default: a temp folder)")
    parser.add_argument("--lenient", action="store_true",
                        help="accept UnexpectedContent (the pipeline's safety net)")
    args, libfuzzer_args = parser.parse_known_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"tracekit-fuzz-{args.reader}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    seeds = workdir / f"seeds-{args.reader}"
    corpus = workdir / f"corpus-{args.reader}"
    corpus.mkdir(exist_ok=True)
    write_seeds(args.reader, seeds)
    sqlite3.connect(":memory:").close()
    target = make_target(args.reader, workdir, strict=not args.lenient)
    print(f"fuzz_readers: {args.reader}, workdir {workdir}", file=sys.stderr)
    os.chdir(workdir)  # crash-* / timeout-* files land here
    atheris.Setup([sys.argv[0], *libfuzzer_args, str(corpus), str(seeds)], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
