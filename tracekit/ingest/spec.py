"""Format specs: the TOML files in ``parsers/`` that say what a file is and how it maps.

A spec is data: how to recognize a file from its content (``[detect]``), which reader knows
how to walk it (``reader``), and the reader's mapping tables (table and column names, event
categories, units). Specs are validated when they load, against the shape their reader
needs (the ``…Mapping`` types below): a missing or misspelled key is a
:class:`~tracekit.errors.RuleFileError` naming the spec file and line, never a ``KeyError``
inside a reader that would read as "your trace is damaged".

``extends = "ID"`` gives a spec the mapping tables of spec ``ID`` (same reader) for every
table it does not write itself: a Kineto event array is read with Kineto's tables, an
``.ncu-rep`` with those of the Nsight Compute CSV it is imported into.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec

from tracekit.datafiles import PARSERS_PACKAGE, DataFile, builtin_file, builtin_names
from tracekit.errors import RuleFileError, TracekitError

#: the spec format this tracekit reads (``schema = 1`` in every spec)
SPEC_SCHEMA = 1
Names = tuple[str, ...]


class _Table(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A TOML table of a spec: every key declared, none unknown."""


# --- nsys SQLite exports (readers/nsys_sqlite.py) ---------------------------------------------

class NsysMetadata(_Table, frozen=True):
    """Where an export records nsys's version and its schema version."""

    tables: Names
    schema_version_key: str
    product_version_key: str
    #: the capture's start (``utcEpochNs``, and the trace clock then, ``systemClockNs``)
    session_table: str = "TARGET_INFO_SESSION_START_TIME"
    #: name/value rows describing the target system; ``hostname_key`` names its host
    system_table: str = "TARGET_INFO_SYSTEM_ENV"
    hostname_key: str = "Hostname"


class NsysTables(_Table, frozen=True):
    """The export's table for each role the reader copies."""

    kernel: str
    runtime: str
    memcpy: str
    memset: str
    nvtx: str
    strings: str
    processes: str
    threads: str
    gpus: str
    cuda_devices: str


class NsysColumns(_Table, frozen=True):
    """Per role: store column -> candidate source columns, current spelling first."""

    kernel: dict[str, Names]
    runtime: dict[str, Names]
    memcpy: dict[str, Names]
    memset: dict[str, Names]
    gpus: dict[str, Names]
    cuda_devices: dict[str, Names]


class LaunchApis(_Table, frozen=True):
    """Runtime/driver calls that launch one kernel (folded into the kernel's row)."""

    patterns: Names


class NvtxEventTypes(_Table, frozen=True):
    """nsys ``eventType`` ids of each NVTX event kind the store keeps."""

    push_pop: tuple[int, ...] = ()
    start_end: tuple[int, ...] = ()
    mark: tuple[int, ...] = ()
    domain_create: tuple[int, ...] = ()
    domain_destroy: tuple[int, ...] = ()

    def by_kind(self) -> dict[str, tuple[int, ...]]:
        """Store kind -> event type ids, in declaration order."""
        return {kind: getattr(self, kind) for kind in self.__struct_fields__}


class NsysSqliteMapping(_Table, frozen=True):
    """The mapping of an nsys SQLite export."""

    metadata: NsysMetadata
    tables: NsysTables
    columns: NsysColumns
    kernel_launch_apis: LaunchApis
    nvtx_event_types: NvtxEventTypes


# --- Nsight Compute CSV (readers/ncu_csv.py) --------------------------------------------------

class NcuColumns(_Table, frozen=True):
    """The CSV's identity columns and the columns of the details page's long format."""

    identity: Names
    nvtx_prefixes: Names
    section: str
    metric: str
    unit: str
    value: str


class NcuLaunch(_Table, frozen=True):
    """Per launch attribute: candidate metric names (raw page) or row names (details page)."""

    duration: Names
    registers: Names
    static_smem: Names
    dynamic_smem: Names
    device_name: Names
    sm_count: Names


class NcuCsvMapping(_Table, frozen=True):
    """The mapping of an Nsight Compute CSV."""

    columns: NcuColumns
    launch: NcuLaunch
    time_units: dict[str, int]
    byte_units: dict[str, int]


# --- Kineto Chrome-trace JSON (readers/kineto_json.py) ----------------------------------------

class KinetoCategories(_Table, frozen=True):
    """Per event role: the ``cat`` values that mean it (spellings of several Kineto versions)."""

    kernel: Names
    memcpy: Names
    memset: Names
    runtime: Names
    driver: Names
    cpu_op: Names
    annotation: Names
    gpu_annotation: Names
    flow: Names


class KinetoArgs(_Table, frozen=True):
    """Per value the reader takes from an event's ``args``: the arg names that hold it."""

    external_id: Names
    correlation: Names
    device: Names
    stream: Names
    grid: Names
    block: Names
    registers: Names
    shared_memory: Names
    graph_id: Names
    graph_node_id: Names
    bytes: Names
    input_types: Names
    input_dims: Names


class KinetoStore(_Table, frozen=True):
    """What the reader keeps beyond the defaults."""

    gpu_annotations: bool = False


class KinetoIdentity(_Table, frozen=True):
    """Top-level keys that say where a trace was recorded (``tracekit.ingest.jobs``)."""

    host: Names = ()
    job: Names = ()


class KinetoModules(_Table, frozen=True):
    """Module frames among the Python frames: the ``cat`` of Python function events and the
    name prefix of the ones that are ``nn.Module`` calls (kept as ``nvtx_ranges`` kind
    ``module`` for the layer attribution; the other Python frames are only counted)."""

    categories: Names = ()
    prefix: str = ""


class KinetoMapping(_Table, frozen=True):
    """The mapping of a Kineto trace."""

    categories: KinetoCategories
    args: KinetoArgs
    store: KinetoStore = KinetoStore()
    identity: KinetoIdentity = KinetoIdentity()
    modules: KinetoModules = KinetoModules()


# --- rocprofv3 (readers/rocprof_json.py, rocprof_csv.py, rocpd_sqlite.py) ------------------------

class RocprofMarkers(_Table, frozen=True):
    """ROCTx operation names (rocprofiler-sdk ``marker/api_id.h``) -> the store's range kinds."""

    push_pop: Names
    start_end: Names
    mark: Names


class RocprofJsonMapping(_Table, frozen=True):
    """The mapping of rocprofv3's JSON output (``--output-format json``)."""

    #: the document's top-level key: a list with one object per profiled process
    top_key: str
    #: ``agents[].type`` of a GPU (rocprofiler_agent_type_t)
    gpu_agent_type: int
    #: kernel symbol fields holding the kernel's name, preferred first (the first non-empty)
    kernel_name: Names
    short_name: Names
    mangled_name: Names
    #: buffer kind names (``strings.buffer_records[kind].kind``) of the HIP API calls kept as
    #: runtime calls, and of the ROCTx records kept as ranges
    hip_kinds: Names
    marker_kinds: Names
    markers: RocprofMarkers


class RocprofCsvFiles(_Table, frozen=True):
    """File name endings rocprofv3 gives each CSV output, per role."""

    kernel: Names
    hip_api: Names
    marker_api: Names
    memory_copy: Names
    agent_info: Names


class RocprofCsvMapping(_Table, frozen=True):
    """The mapping of rocprofv3's CSV outputs (``--output-format csv``, ``rocpd convert``)."""

    files: RocprofCsvFiles
    #: per role: store field -> candidate header names (compared case-insensitively)
    columns: dict[str, dict[str, Names]]
    #: ``Domain`` values of the HIP API calls kept as runtime calls, and of the ROCTx records
    #: kept as ranges
    hip_kinds: Names
    marker_kinds: Names


class RocpdMapping(_Table, frozen=True):
    """The mapping of a rocpd SQLite database (rocprofv3 ``--output-format rocpd``)."""

    #: schema major versions this reader knows (``rocpd_metadata`` tag ``schema_version``)
    schema_majors: Names
    #: ``rocpd_event`` categories (``rocpd_string``) of the regions kept as runtime calls and
    #: as ROCTx ranges (SQL LIKE patterns)
    hip_categories: Names
    marker_categories: Names
    markers: RocprofMarkers


# --- the others -------------------------------------------------------------------------------

class CuptiMapping(_Table, frozen=True):
    """tracekit's own CUPTI JSON lines: the newest format version this reader takes."""

    max_version: int = 1


class NoMapping(_Table, frozen=True):
    """Containers converted with NVIDIA's tools (``.qdstrm``, ``.nsys-rep``): no tables."""


#: reader module -> the mapping its spec must give
MAPPINGS: dict[str, type[_Table]] = {
    "nsys_sqlite": NsysSqliteMapping,
    "ncu_csv": NcuCsvMapping,
    "kineto_json": KinetoMapping,
    "cupti_jsonl": CuptiMapping,
    "rocprof_json": RocprofJsonMapping,
    "rocprof_csv": RocprofCsvMapping,
    "rocpd_sqlite": RocpdMapping,
    "nsys_rep": NoMapping,
    "qdstrm": NoMapping,
}


class DetectTable(_Table, frozen=True):
    """``[detect]``: content checks for one format; all that are given must hold."""

    magic: str | None = None
    gzip_ok: bool = False
    sqlite_tables: Names = ()
    sqlite_any_table: Names = ()
    #: regexes (re.fullmatch): each must match one table name (tables with generated suffixes)
    sqlite_table_patterns: Names = ()
    json_any_key: Names = ()
    text_markers: Names = ()
    extensions: Names = ()


class SpecHeader(msgspec.Struct, frozen=True, kw_only=True):
    """The keys every spec has; the rest of the file is its reader's mapping."""

    schema: int
    id: str
    reader: str
    producer: str | None = None
    summary: str = ""
    priority: int = 0
    detect: DetectTable = DetectTable()
    extends: str | None = None
    example: tuple[dict[str, Any], ...] = ()


_HEADER_KEYS = frozenset(SpecHeader.__struct_fields__)


@dataclass(frozen=True)
class Detect:
    """Content checks for one format, ready to compare with a file's first bytes."""

    magic: bytes | None = None
    gzip_ok: bool = False
    sqlite_tables: tuple[str, ...] = ()
    sqlite_any_table: tuple[str, ...] = ()
    sqlite_table_patterns: tuple[str, ...] = ()
    json_any_key: tuple[str, ...] = ()
    text_markers: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()


@dataclass(frozen=True)
class FormatSpec:
    """One input format: its id, its reader, how to recognize it, its reader's mapping."""

    id: str
    reader: str
    producer: str
    summary: str
    detect: Detect
    priority: int = 0
    #: the reader's mapping tables (a ``…Mapping`` of this module), validated
    mapping: Any = NoMapping()
    source: str = ""


_AT = re.compile(r" - at `\$((?:\.[^`.\[]+|\[\d+\])*)`$")
_FIELD = re.compile(r"field `([^`]+)`")


def _invalid(file: DataFile, exc: msgspec.ValidationError, within: tuple[str, ...] = ()
             ) -> RuleFileError:
    """A located RuleFileError from msgspec's ``… - at `$.a.b``` message."""
    message = str(exc)
    found = _AT.search(message)
    keys = [*within, *(part for part in re.findall(r"\.([^.\[]+)", found.group(1)))] \
        if found else list(within)
    named = _FIELD.search(message)
    if named and "unknown field" in message:
        keys.append(named.group(1))
    text = _AT.sub("", message).replace("Object", "table").replace("`", "'")
    where = ".".join(keys)
    return RuleFileError(f"{file.where_key(keys)}: {text}{f' (at {where})' if where else ''}",
                         hint="compare with the specs shipped in tracekit's parsers/ folder")


def _header(file: DataFile) -> SpecHeader:
    header = {key: value for key, value in file.data.items() if key in _HEADER_KEYS}
    try:
        spec = msgspec.convert(header, SpecHeader)
    except msgspec.ValidationError as exc:
        raise _invalid(file, exc) from None
    if spec.schema != SPEC_SCHEMA:
        raise file.fail(f"schema {spec.schema} is not the spec format this tracekit reads "
                        f"({SPEC_SCHEMA})", needle="schema")
    if spec.reader not in MAPPINGS:
        raise file.fail(f"reader '{spec.reader}' is not one of {', '.join(MAPPINGS)}",
                        needle="reader")
    return spec


def parse_spec(file: DataFile, base: DataFile | None = None) -> FormatSpec:
    """Validate one spec file (with the file its ``extends`` names, if any)."""
    header = _header(file)
    tables = {key: value for key, value in file.data.items() if key not in _HEADER_KEYS}
    if header.extends is not None:
        if base is None:
            raise file.fail(f"extends '{header.extends}', which is no spec", needle="extends")
        base_header = _header(base)
        if base_header.reader != header.reader:
            raise file.fail(f"extends '{header.extends}', whose reader "
                            f"'{base_header.reader}' is not '{header.reader}'",
                            needle="extends")
        tables = {**{key: value for key, value in base.data.items()
                     if key not in _HEADER_KEYS}, **tables}
    try:
        mapping = msgspec.convert(tables, MAPPINGS[header.reader])
    except msgspec.ValidationError as exc:
        raise _invalid(file, exc) from None
    detect = header.detect
    return FormatSpec(
        id=header.id,
        reader=header.reader,
        producer=header.producer or header.id,
        summary=header.summary,
        detect=Detect(
            magic=detect.magic.encode("latin-1") if detect.magic else None,
            gzip_ok=detect.gzip_ok,
            sqlite_tables=detect.sqlite_tables,
            sqlite_any_table=detect.sqlite_any_table,
            sqlite_table_patterns=detect.sqlite_table_patterns,
            json_any_key=detect.json_any_key,
            text_markers=detect.text_markers,
            extensions=detect.extensions,
        ),
        priority=header.priority,
        mapping=mapping,
        source=file.name,
    )


def parse_specs(files: list[DataFile]) -> tuple[FormatSpec, ...]:
    """Every spec of ``files``, highest priority first; ids must be unique."""
    by_id: dict[str, DataFile] = {}
    for file in files:
        spec_id = _header(file).id
        if spec_id in by_id:
            raise file.fail(f"id '{spec_id}' is also the id of {by_id[spec_id].name}",
                            needle="id")
        by_id[spec_id] = file
    specs = []
    # Specs that extend none first: a problem in shared tables is reported in their own file.
    for file in sorted(files, key=lambda file: _header(file).extends is not None):
        extends = _header(file).extends
        specs.append(parse_spec(file, by_id.get(extends) if extends else None))
    return tuple(sorted(specs, key=lambda spec: (-spec.priority, spec.id)))


@lru_cache(maxsize=1)
def builtin_specs() -> tuple[FormatSpec, ...]:
    """Every spec shipped in ``tracekit.parsers``, highest priority first."""
    return parse_specs([builtin_file(name, PARSERS_PACKAGE)
                        for name in builtin_names(PARSERS_PACKAGE)])


def spec_by_id(format_id: str) -> FormatSpec:
    """The built-in spec with this id."""
    for spec in builtin_specs():
        if spec.id == format_id:
            return spec
    known = ", ".join(spec.id for spec in builtin_specs())
    raise TracekitError(f"unknown format {format_id!r}", hint=f"known formats: {known}")
