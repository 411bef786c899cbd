"""``python -m tracekit.capture.cupti_runner --out FILE -- PROGRAM ARGS``: CUPTI activity records.

The lightest capture: NVIDIA's ``cupti-python`` activity API records every kernel (and runtime
call, memcpy, memset) while the program runs as ``__main__``; the records are written as JSON
lines in the format documented in ``tracekit/ingest/readers/cupti_jsonl.py``
(docs/formats.md#tracekits-cupti-json-lines).
Needs ``cupti-python`` and an NVIDIA GPU; never run it under nsys, ncu or torch.profiler (one
CUPTI subscriber per process). Imports cupti lazily so ``--help`` works anywhere, and nothing
of tracekit beyond ``runner`` (the program's interpreter may lack tracekit's dependencies, so
the header is built here rather than with the reader's ``header_record``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
from pathlib import Path
from typing import IO, Any

from tracekit.capture.runner import run_program, split_program

NEEDS = ("the cupti backend needs cupti-python and an NVIDIA GPU with its driver: "
         "pip install cupti-python")


def _demangle(name: str) -> str:
    try:
        import cxxfilt

        return str(cxxfilt.demangle(name))
    except Exception:  # noqa: BLE001 - cxxfilt missing or name not mangled
        return name


#: environment variables naming the job and this process's rank in it, first present wins:
#: torchrun's (https://pytorch.org/docs/stable/elastic/run.html#environment-variables), then
#: Slurm's (https://slurm.schedmd.com/sbatch.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES)
JOB_VARIABLES = {"job": ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"),
                 "rank": ("RANK", "SLURM_PROCID"), "world_size": ("WORLD_SIZE", "SLURM_NTASKS")}


def job_environment(environ: Any) -> dict[str, Any]:
    """The header's ``job``, ``rank`` and ``world_size`` from the launcher's environment."""
    found: dict[str, Any] = {}
    for field, names in JOB_VARIABLES.items():
        value = next((environ[name] for name in names if environ.get(name)), None)
        if value is None:
            continue
        found[field] = int(value) if field != "job" and value.isdigit() else value
    return found


class JsonLinesWriter:
    """Turns CUPTI activity objects into the reader's JSON lines (thread-safe)."""

    def __init__(self, stream: IO[str], cupti: Any) -> None:
        self.stream, self.cupti = stream, cupti
        self.lock = threading.Lock()
        self.kinds = cupti.ActivityKind

    def write(self, record: dict[str, Any]) -> None:
        with self.lock:
            self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")

    def header(self, command: list[str]) -> None:
        record: dict[str, Any] = {"kind": "header", "format": "tracekit-cupti", "version": 1,
                                  "pid": os.getpid(), "process_name": Path(sys.executable).name,
                                  "hostname": socket.gethostname(), "command": command}
        record.update(job_environment(os.environ))
        try:
            record["cupti_version"] = int(self.cupti.get_version())
        except Exception:  # noqa: BLE001 - optional field
            pass
        self.write(record)

    def activity(self, a: Any) -> None:
        kinds = self.kinds
        kind = a.kind
        if kind in (kinds.CONCURRENT_KERNEL, getattr(kinds, "KERNEL", None)):
            raw = str(a.name)
            name = _demangle(raw)
            record = {"kind": "kernel", "name": name, "start": a.start, "end": a.end,
                      "deviceId": a.device_id, "contextId": a.context_id,
                      "streamId": a.stream_id, "correlationId": a.correlation_id,
                      "gridX": a.grid_x, "gridY": a.grid_y, "gridZ": a.grid_z,
                      "blockX": a.block_x, "blockY": a.block_y, "blockZ": a.block_z,
                      "registersPerThread": getattr(a, "registers_per_thread", None),
                      "staticSharedMemory": getattr(a, "static_shared_memory", None),
                      "dynamicSharedMemory": getattr(a, "dynamic_shared_memory", None),
                      "graphId": getattr(a, "graph_id", None),
                      "graphNodeId": getattr(a, "graph_node_id", None)}
            if name != raw:
                record["mangledName"] = raw
            self.write(record)
        elif kind in (kinds.RUNTIME, kinds.DRIVER):
            domain = (self.cupti.CallbackDomain.RUNTIME_API if kind == kinds.RUNTIME
                      else self.cupti.CallbackDomain.DRIVER_API)
            try:
                name = str(self.cupti.get_callback_name(domain, a.cbid))
            except Exception:  # noqa: BLE001
                name = f"cbid {a.cbid}"
            self.write({"kind": "runtime" if kind == kinds.RUNTIME else "driver", "name": name,
                        "cbid": a.cbid, "start": a.start, "end": a.end,
                        "correlationId": a.correlation_id, "processId": a.process_id,
                        "threadId": a.thread_id})
        elif kind in (kinds.MEMCPY, kinds.MEMSET):
            self.write({"kind": "memcpy" if kind == kinds.MEMCPY else "memset",
                        "start": a.start, "end": a.end, "deviceId": a.device_id,
                        "streamId": a.stream_id, "correlationId": a.correlation_id,
                        "bytes": a.bytes})
        elif kind == getattr(kinds, "DEVICE", object()):
            # attribute names follow CUpti_ActivityDevice5 in snake case (unverified on a GPU)
            self.write({"kind": "device", "id": a.id, "name": str(a.name),
                        "computeMajor": getattr(a, "compute_capability_major", None),
                        "computeMinor": getattr(a, "compute_capability_minor", None),
                        "numSms": getattr(a, "num_multiprocessors", None),
                        "totalGlobalMem": getattr(a, "global_memory_size", None)})
        elif kind == kinds.EXTERNAL_CORRELATION:
            self.write({"kind": "external_correlation", "correlationId": a.correlation_id,
                        "externalId": a.external_id, "externalKind": int(a.external_kind)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tracekit.capture.cupti_runner")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("program", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    kind, target, args = split_program(options.program)
    try:
        from cupti import cupti
    except ImportError:
        print(f"tracekit: error: {NEEDS}", file=sys.stderr)
        return 2
    options.out.parent.mkdir(parents=True, exist_ok=True)
    with options.out.open("w", encoding="utf-8") as stream:
        writer = JsonLinesWriter(stream, cupti)
        writer.header([target, *args])
        wanted = [cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.DRIVER,
                  cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET,
                  cupti.ActivityKind.EXTERNAL_CORRELATION]
        wanted += [getattr(cupti.ActivityKind, name) for name in ("RUNTIME", "DEVICE")
                   if hasattr(cupti.ActivityKind, name)]

        def requested() -> tuple[int, int]:
            return 8 * 1024 * 1024, 0

        def completed(activities: list[Any]) -> None:
            for activity in activities:
                writer.activity(activity)

        try:
            cupti.activity_register_callbacks(requested, completed)
            for activity_kind in wanted:
                cupti.activity_enable(activity_kind)
        except Exception as exc:  # noqa: BLE001 - CUPTI errors when no GPU/driver is present
            print(f"tracekit: error: CUPTI could not start ({exc}); {NEEDS}", file=sys.stderr)
            return 2
        try:
            code = run_program(kind, target, args)
        finally:
            cupti.activity_flush_all(1)
            for activity_kind in wanted:
                cupti.activity_disable(activity_kind)
    print(f"tracekit: CUPTI records written to {options.out}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
