"""Read CUPTI activity records written as JSON lines by tracekit's ``cupti`` capture backend.

This docstring is the format's contract: the capture backend writes it, this reader reads
it, ``parsers/cupti-jsonl.toml`` detects it. The file is UTF-8 text (optionally gzip), one
JSON object per line, each with a ``kind``. Times are integer nanoseconds on CUPTI's clock
(``cupti.get_timestamp()``); ids are integers. Fields marked ? may be omitted or null.

Line 1 — the header (required, first line; it is what detection looks for)::

    {"kind": "header", "format": "tracekit-cupti", "version": 1,
     "pid": 4242, "process_name"?: "python", "hostname"?: "node1",
     "rank"?: 0, "world_size"?: 8, "job"?: "slurm-4242", "cupti_version"?: 130400,
     "cuda_runtime_version"?: 13000, "cuda_driver_version"?: 13000,
     "command"?: ["vllm", "serve", "..."]}

``rank``, ``world_size`` and ``job`` (the job's id, e.g. its scheduler's) tell which files are
the ranks of one job (``tracekit.ingest.jobs``).

Then, in any order (the writer flushes CUPTI buffers as they complete):

``device``  one per GPU the process used::

    {"kind": "device", "id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9,
     "computeMinor": 0, "numSms"?: 132, "totalGlobalMem"?: 85018279936, "uuid"?: "GPU-…"}

``kernel``  one per CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL record::

    {"kind": "kernel", "name": "<demangled name>", "mangledName"?: "_Z…",
     "start": 1234, "end": 5678, "deviceId": 0, "contextId"?: 1, "streamId": 7,
     "correlationId": 12, "gridX": 1, "gridY": 1, "gridZ": 1,
     "blockX": 128, "blockY": 1, "blockZ": 1, "registersPerThread"?: 32,
     "staticSharedMemory"?: 0, "dynamicSharedMemory"?: 0,
     "graphId"?: 0, "graphNodeId"?: 0}

    ``name`` is the demangled symbol when the writer could demangle it, else the raw one
    (CUPTI hands over mangled names); ``mangledName`` keeps the raw symbol when different.

``runtime`` / ``driver``  CUDA runtime / driver API calls (ActivityKind RUNTIME / DRIVER)::

    {"kind": "runtime", "name": "cudaLaunchKernel", "cbid"?: 211, "start": 1200,
     "end": 1230, "correlationId": 12, "processId": 4242, "threadId": 4250}

``memcpy`` / ``memset``::

    {"kind": "memcpy", "start": 1, "end": 2, "deviceId": 0, "streamId": 7,
     "correlationId": 13, "bytes": 4096, "copyKind"?: "HtoD"}

``external_correlation``  links a correlation id to an id the backend pushed with
``activity_push_external_correlation_id`` (tracekit pushes its own op/step ids)::

    {"kind": "external_correlation", "correlationId": 12, "externalId": 99,
     "externalKind"?: 2}

``range``  a marker range (NVTX push/pop through CUPTI, or the backend's step markers)::

    {"kind": "range", "name": "execute_context_1(8)_generation_0(0)", "start": 1,
     "end": 9, "processId": 4242, "threadId": 4250, "domain"?: "vllm"}

``op``  a framework op with operand types, when the backend records them::

    {"kind": "op", "name": "aten::mm", "start": 1, "end": 9, "externalId": 99,
     "processId": 4242, "threadId": 4250, "inputTypes"?: ["c10::BFloat16", ...],
     "inputDims"?: [[8, 4096], [4096, 4096]]}

``thread``  a thread name: ``{"kind": "thread", "processId": 4242, "threadId": 4250,
"name": "VLLM::EngineCore"}``

Any other kind is counted and skipped, so an older reader keeps reading a newer writer's
files; a header ``version`` above the spec's ``max_version`` is refused. Several files (one
per process or rank) form one run; correlation ids are matched within a file.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from sqlalchemy import text

from tracekit import progress
from tracekit.errors import InputError
from tracekit.ingest.reader import IngestContext, SourceInfo
from tracekit.ingest.staging import StageTable
from tracekit.ingest.trace_rows import FileState, TraceRows, dump_json, int_or_none

FORMAT_NAME = "tracekit-cupti"
#: kernel record fields copied into kernels, in tk_kernel column order
KERNEL_INT_FIELDS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                     "registersPerThread", "staticSharedMemory", "dynamicSharedMemory")
#: the record format version this module writes about; readers refuse newer ones
FORMAT_VERSION = 1


def header_record(pid: int, **fields: Any) -> dict[str, Any]:
    """The first line a writer emits (``json.dumps`` it, then one record per line)."""
    return {"kind": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION, "pid": pid,
            **fields}


#: the progress bar learns where the reader is once per 2^16 lines (a mask test per line)
PROGRESS_LINES = (1 << 16) - 1


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


class CuptiReader(TraceRows):
    """Stages the records of every CUPTI JSON-lines file of a run."""

    def __init__(self, ctx: IngestContext) -> None:
        super().__init__(ctx)
        self.max_version = ctx.spec.mapping.max_version
        self.kinds: Counter[str] = Counter()
        self.external = StageTable(ctx.connection, "tk_external", (
            ("file_index", "BIGINT"), ("correlation_id", "BIGINT"), ("external_id", "BIGINT")))
        self.handlers: dict[str, Callable[[FileState, dict[str, Any]], None]] = {
            "kernel": self._kernel, "runtime": self._api, "driver": self._api,
            "memcpy": self._memory, "memset": self._memory, "range": self._range,
            "op": self._op, "device": self._device, "thread": self._thread_name,
            "external_correlation": self._external,
        }

    def read(self, index: int, path: Path) -> None:
        """Stage one file's records."""
        state = FileState(index, path)
        self.files.append(state)
        line_number = 0
        try:
            with _open_text(path) as stream, progress.task(
                    f"reading {path.name}", total=path.stat().st_size, unit="bytes") as task:
                for line_number, line in enumerate(stream, start=1):
                    if not line_number & PROGRESS_LINES:
                        task.update(progress.file_position(stream))
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError:
                        raise InputError(f"{path}: line {line_number} is not JSON",
                                         hint="the capture was probably cut off") from None
                    if not isinstance(record, dict):
                        raise InputError(f"{path}: line {line_number} is not a JSON object")
                    if line_number == 1:
                        self._header(state, record)
                        continue
                    kind = str(record.get("kind"))
                    self.kinds[kind] += 1
                    handler = self.handlers.get(kind)
                    if handler is not None:
                        handler(state, record)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(f"{path}: gzip data is truncated or corrupt ({exc})") from None
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path}: line {line_number}: bad record ({exc!r})",
                             hint="records must follow tracekit/ingest/readers/cupti_jsonl.py"
                             ) from None
        if line_number == 0:
            raise InputError(f"{path}: file holds no records")

    def _header(self, state: FileState, record: dict[str, Any]) -> None:
        if record.get("kind") != "header" or record.get("format") != FORMAT_NAME:
            raise InputError(f"{state.path}: first line is not a {FORMAT_NAME} header")
        version = int_or_none(record.get("version"))
        if version is None or version > self.max_version:
            raise InputError(f"{state.path}: {FORMAT_NAME} version {record.get('version')} "
                             f"is newer than this tracekit reads ({self.max_version})",
                             hint="upgrade tracekit")
        state.header = dict(record)
        state.header.setdefault("deviceProperties", [])
        pid = int_or_none(record.get("pid"))
        if pid is not None:
            state.cpu_pids[pid] += 1
            if record.get("process_name"):
                self.process_names[pid] = str(record["process_name"])

    def _kernel(self, state: FileState, r: dict[str, Any]) -> None:
        device = int_or_none(r.get("deviceId"))
        if device is not None:
            state.devices_seen.add(device)
        get = r.get
        self.stage["tk_kernel"].add((
            state.index, self.kernel_key(str(r["name"])), device, int_or_none(get("streamId")),
            int(r["start"]), int(r["end"]),
            *(int_or_none(get(field)) for field in KERNEL_INT_FIELDS),
            int_or_none(get("correlationId")), None, int_or_none(get("graphNodeId")),
            int_or_none(get("graphId"))))

    def _api(self, state: FileState, r: dict[str, Any]) -> None:
        pid, tid = int_or_none(r.get("processId")), int_or_none(r.get("threadId"))
        if pid is not None:
            state.runtime_pids[pid] += 1
        self.thread(pid, tid)
        self.stage["tk_runtime"].add((
            state.index, self.api_key(str(r.get("name") or "")), str(r["kind"]),
            int(r["start"]), int(r["end"]), int_or_none(r.get("correlationId")), tid, pid))

    def _memory(self, state: FileState, r: dict[str, Any]) -> None:
        device = int_or_none(r.get("deviceId"))
        if device is not None:
            state.devices_seen.add(device)
        self.stage["tk_memory"].add((
            state.index, str(r["kind"]), device, int_or_none(r.get("streamId")),
            int(r["start"]), int(r["end"]), int_or_none(r.get("bytes")),
            int_or_none(r.get("correlationId"))))

    def _range(self, state: FileState, r: dict[str, Any]) -> None:
        pid, tid = int_or_none(r.get("processId")), int_or_none(r.get("threadId"))
        self.thread(pid, tid)
        self.stage["tk_range"].add((state.index, "push_pop", int(r["start"]),
                                    int_or_none(r.get("end")), r.get("name"), r.get("domain"),
                                    tid, pid))

    def _op(self, state: FileState, r: dict[str, Any]) -> None:
        pid, tid = int_or_none(r.get("processId")), int_or_none(r.get("threadId"))
        self.thread(pid, tid)
        self.stage["tk_cpu_op"].add((
            state.index, str(r.get("name") or ""), int(r["start"]), int(r["end"]),
            int_or_none(r.get("externalId")), tid, pid, dump_json(r.get("inputTypes")),
            dump_json(r.get("inputDims"))))

    def _device(self, state: FileState, r: dict[str, Any]) -> None:
        state.header["deviceProperties"].append(r)

    def _thread_name(self, state: FileState, r: dict[str, Any]) -> None:
        pid, tid = int_or_none(r.get("processId")), int_or_none(r.get("threadId"))
        if pid is not None and tid is not None and r.get("name"):
            self.thread_names[(pid, tid)] = str(r["name"])
            self.thread(pid, tid)

    def _external(self, state: FileState, r: dict[str, Any]) -> None:
        self.external.add((state.index, int(r["correlationId"]), int(r["externalId"])))

    def before_finish(self) -> None:
        """Give staged kernels the external id pushed around their launch."""
        self.external.flush()
        if self.external.count:
            self.connection.execute(text(
                "CREATE INDEX tk_external_ix ON tk_external (file_index, correlation_id)"))
            self.connection.execute(text(
                """UPDATE tk_kernel SET external_id = (
                       SELECT MIN(e.external_id) FROM tk_external e
                       WHERE e.file_index = tk_kernel.file_index
                         AND e.correlation_id = tk_kernel.correlation_id)
                   WHERE external_id IS NULL"""))
        self.external.drop()


def ingest(ctx: IngestContext) -> SourceInfo:
    """Read every CUPTI JSON-lines file of the run into the store."""
    reader = CuptiReader(ctx)
    for index, path in enumerate(ctx.paths):
        reader.read(index, path)
    if not reader.kernel_names and not ctx.allow_no_kernels:
        raise InputError(f"{ctx.display_name}: CUPTI records hold no kernel",
                         hint="the capture ran no CUDA kernel, or CONCURRENT_KERNEL was not "
                              "enabled")
    meta = reader.finish()
    headers = [state.header for state in reader.files]
    cupti = {h.get("cupti_version") for h in headers} - {None}
    meta.update(kinds=dict(reader.kinds), files=[
        {"name": state.path.name, "rank": state.header.get("rank"),
         "pid": state.header.get("pid"), "hostname": state.header.get("hostname")}
        for state in reader.files])
    return SourceInfo(files=[{"name": state.path.name,
                              "host": _text(state.header.get("hostname")),
                              "job": _text(state.header.get("job")),
                              "rank": int_or_none(state.header.get("rank")),
                              "world_size": int_or_none(state.header.get("world_size")),
                              "clock_base_ns": 0} for state in reader.files],
                      producer="cupti",
                      producer_version=f"cupti {cupti.pop()}" if len(cupti) == 1 else None,
                      schema_version=str(max(int(h.get("version", 1)) for h in headers)),
                      meta_json=json.dumps(meta, sort_keys=True))


def _text(value: Any) -> str | None:
    return str(value) if value is not None and not isinstance(value, (dict, list)) else None
