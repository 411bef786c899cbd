"""SQLAlchemy 2.0 typed models: the single source of truth for the store's schema.

Conventions:
- tables are plural snake_case; times are integer nanoseconds in ``*_ns`` columns;
- every row belongs to a run (``run_id``, ON DELETE CASCADE), so deleting a run is one
  statement and a failed ingest rolls back as one transaction;
- strings that repeat per record (kernel names, API names) live in their own per-run tables
  and records point at them by id: classification then works once per unique name.

Alembic migrations in ``tracekit/store/migrations/versions`` must reproduce this metadata
exactly (a test compares them).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import text as sql_text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base with a constraint naming convention (needed by Alembic batch mode)."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


#: ``nvtx_ranges.kind`` values that are real ranges (the other kinds are marks, domain
#: create/destroy rows and GPU-side copies of annotations).
NVTX_RANGE_KINDS = ("push_pop", "start_end")
#: the rows of ``nvtx_ranges`` that create a domain (partial index condition)
DOMAIN_CREATE = "kind = 'domain_create'"


#: Primary key of the per-record tables: 64-bit on PostgreSQL, where a shared store passes
#: 2^31 kernel records after ~200 runs of 10^7; on SQLite it must stay ``INTEGER`` (the only
#: spelling that makes the column the 64-bit rowid).
RECORD_ID = BigInteger().with_variant(Integer(), "sqlite")


#: Indexes that only PostgreSQL stores have (made by migration 0003, name → (table, column)):
#: its cascading delete of a run's names looks up each name's records through them. SQLite
#: stores delete by run instead, and their ingest would pay for these on every record.
#: Not in the models, so the migrations test leaves them out of its comparison.
POSTGRES_ONLY_INDEXES = {
    "ix_kernels_name_id": ("kernels", "name_id"),
    "ix_runtime_calls_name_id": ("runtime_calls", "name_id"),
    "ix_kernel_metrics_name_id": ("kernel_metrics", "name_id"),
    "ix_kernel_groups_name_id": ("kernel_groups", "name_id"),
    "ix_classifications_name_id": ("classifications", "name_id"),
}


def _run_fk() -> Mapped[int]:
    return mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)


class RunRow(Base):
    """One analyzed capture: a trace file, or a folder of per-rank files."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_job", "job", unique=True),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source_path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    format: Mapped[str] = mapped_column(String(64))
    producer: Mapped[str | None] = mapped_column(String(64))
    producer_version: Mapped[str | None] = mapped_column(String(64))
    schema_version: Mapped[str | None] = mapped_column(String(64))
    tracekit_version: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    label: Mapped[str | None] = mapped_column(Text)
    engine: Mapped[str | None] = mapped_column(String(32))
    model_label: Mapped[str | None] = mapped_column(Text)
    #: The run's GPU as the analysis decided it once (``tracekit.run_gpu``): ``gpu`` for
    #: display ("NAME (ARCH)"), ``arch`` for the classifier and the findings, ``gpu_model``
    #: (a ``[model.*]`` key of rules/_gpus.toml) or the reason there is none for the roofline.
    gpu: Mapped[str | None] = mapped_column(Text)
    arch: Mapped[str | None] = mapped_column(String(16))
    gpu_model: Mapped[str | None] = mapped_column(String(64))
    gpu_model_reason: Mapped[str | None] = mapped_column(Text)
    verdict: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="complete")
    meta_json: Mapped[str | None] = mapped_column(Text)
    #: What the input files looked like on disk when they were read (device, inode, size and
    #: modification time of each): the same path with the same signature is recognized as
    #: this run without reading the file again (``tracekit.ingest.identity``).
    source_stat: Mapped[str | None] = mapped_column(Text)
    #: The job a run of several ingests gathers (``--job NAME``): each ``analyze`` of one
    #: host's rank files adds them to the one run of that job (``tracekit.ingest.merge``).
    #: (A unique index, not a constraint: SQLite adds an index without rebuilding ``runs``,
    #: whose rebuild would cascade-delete every run's rows.)
    job: Mapped[str | None] = mapped_column(Text)


class RunFileRow(Base):
    """One input file of a run, as read: what it is, where its ranks ran, what it held.

    A run of several files (the ranks of one job) keeps every file's records; this row says
    how they were placed in the run (``time_offset_ns`` onto the run's clock, ``id_shift``
    added to its process and thread ids so that no two files' ids meet) and what the reader
    counted in it (``counts_json``), so a reader of the store can check nothing was lost.
    """

    __tablename__ = "run_files"
    __table_args__ = (UniqueConstraint("run_id", "file_index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    file_index: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(Text)
    path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str | None] = mapped_column(String(64))
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    format: Mapped[str] = mapped_column(String(64))
    #: where and in which job it was recorded, as the file says (None: it does not say)
    host: Mapped[str | None] = mapped_column(Text)
    job: Mapped[str | None] = mapped_column(Text)
    trace_rank: Mapped[int | None] = mapped_column(Integer)
    world_size: Mapped[int | None] = mapped_column(Integer)
    #: the GPUs its kernels ran on ("; "-joined product names, None when the file names none)
    gpus: Mapped[str | None] = mapped_column(Text)
    #: wall-clock UTC ns of its first kernel start and last kernel end (None: clock unknown)
    start_ns: Mapped[int | None] = mapped_column(BigInteger)
    end_ns: Mapped[int | None] = mapped_column(BigInteger)
    time_offset_ns: Mapped[int] = mapped_column(BigInteger, default=0)
    id_shift: Mapped[int] = mapped_column(BigInteger, default=0)
    counts_json: Mapped[str | None] = mapped_column(Text)


class RunCountRow(Base):
    """How many records of one kind a run holds, counted once when it was ingested.

    The document, the findings and ``tracekit runs`` read these instead of counting a
    run's millions of NVTX events or runtime calls again on every report.
    """

    __tablename__ = "run_counts"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"),
                                        primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger)


class DeviceRow(Base):
    """A GPU as the trace saw it. ``device_index`` is what kernel records call it."""

    __tablename__ = "devices"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    device_index: Mapped[int] = mapped_column(Integer)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)
    name: Mapped[str | None] = mapped_column(Text)
    compute_major: Mapped[int | None] = mapped_column(Integer)
    compute_minor: Mapped[int | None] = mapped_column(Integer)
    sm_count: Mapped[int | None] = mapped_column(Integer)
    memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    uuid: Mapped[str | None] = mapped_column(Text)
    arch: Mapped[str | None] = mapped_column(String(16))
    arch_source: Mapped[str | None] = mapped_column(String(32))


class ProcessRow(Base):
    """A profiled process (``globalPid`` in nsys, ``pid`` in Kineto)."""

    __tablename__ = "processes"
    __table_args__ = (Index("ix_processes_run_pid", "run_id", "global_pid"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    global_pid: Mapped[int] = mapped_column(BigInteger)
    pid: Mapped[int | None] = mapped_column(Integer)
    name: Mapped[str | None] = mapped_column(Text)
    #: the input file (``run_files.file_index``) it was recorded in; None in runs of one file
    #: stored before tracekit kept several
    file_index: Mapped[int | None] = mapped_column(Integer)


class ThreadRow(Base):
    """A CPU thread, with its name where the trace has one (e.g. ``VLLM::EngineCore``)."""

    __tablename__ = "threads"
    __table_args__ = (Index("ix_threads_run_tid", "run_id", "global_tid"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    global_tid: Mapped[int] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)
    tid: Mapped[int | None] = mapped_column(Integer)
    name: Mapped[str | None] = mapped_column(Text)


class KernelNameRow(Base):
    """One unique kernel name in a run; classification works on these, not on records."""

    __tablename__ = "kernel_names"
    __table_args__ = (UniqueConstraint("run_id", "source_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    source_key: Mapped[int] = mapped_column(BigInteger)
    name: Mapped[str] = mapped_column(Text)
    short_name: Mapped[str | None] = mapped_column(Text)
    mangled_name: Mapped[str | None] = mapped_column(Text)


class KernelRow(Base):
    """One kernel execution on the GPU, with its launch (thread, CPU time) when known.

    The only secondary index is ``run_id`` (PostgreSQL also has ``name_id``, for deletes:
    ``POSTGRES_ONLY_INDEXES``): a run's rows are appended in order, so that index grows at its
    end and costs little at ingest. Composite indexes such as (run_id, name_id) or (run_id,
    global_tid, launch) would be updated at random places for every one of 10^7 rows and made
    ingest several times slower (tests/benchmarks/README.md); queries that need such an order
    sort the run's rows once instead.
    """

    __tablename__ = "kernels"

    id: Mapped[int] = mapped_column(RECORD_ID, primary_key=True)
    run_id: Mapped[int] = _run_fk()
    name_id: Mapped[int] = mapped_column(ForeignKey("kernel_names.id", ondelete="CASCADE"))
    device: Mapped[int | None] = mapped_column(Integer)
    stream: Mapped[int | None] = mapped_column(BigInteger)
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    grid_x: Mapped[int | None] = mapped_column(Integer)
    grid_y: Mapped[int | None] = mapped_column(Integer)
    grid_z: Mapped[int | None] = mapped_column(Integer)
    block_x: Mapped[int | None] = mapped_column(Integer)
    block_y: Mapped[int | None] = mapped_column(Integer)
    block_z: Mapped[int | None] = mapped_column(Integer)
    registers: Mapped[int | None] = mapped_column(Integer)
    static_smem: Mapped[int | None] = mapped_column(Integer)
    dynamic_smem: Mapped[int | None] = mapped_column(Integer)
    correlation_id: Mapped[int | None] = mapped_column(BigInteger)
    external_id: Mapped[int | None] = mapped_column(BigInteger)
    graph_node_id: Mapped[int | None] = mapped_column(BigInteger)
    graph_id: Mapped[int | None] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)
    global_tid: Mapped[int | None] = mapped_column(BigInteger)
    launch_start_ns: Mapped[int | None] = mapped_column(BigInteger)
    launch_end_ns: Mapped[int | None] = mapped_column(BigInteger)
    step_id: Mapped[int | None] = mapped_column(BigInteger)
    phase: Mapped[str | None] = mapped_column(String(16))
    #: The framework op (``cpu_ops.id``) that launched this kernel, resolved once at ingest
    #: from the External id (and, where ids repeat, the op running when the kernel was
    #: launched). No foreign key: PostgreSQL would need an index here to cascade deletes of
    #: CPU ops, and a run's ops and kernels are deleted together anyway.
    cpu_op_id: Mapped[int | None] = mapped_column(BigInteger)


class MemoryOpRow(Base):
    """A memcpy or memset on the GPU."""

    __tablename__ = "memory_ops"

    id: Mapped[int] = mapped_column(RECORD_ID, primary_key=True)
    run_id: Mapped[int] = _run_fk()
    kind: Mapped[str] = mapped_column(String(16))
    device: Mapped[int | None] = mapped_column(Integer)
    stream: Mapped[int | None] = mapped_column(BigInteger)
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int | None] = mapped_column(BigInteger)
    correlation_id: Mapped[int | None] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)


class ApiNameRow(Base):
    """One unique runtime/driver API name in a run (``cudaLaunchKernel_v7000`` …)."""

    __tablename__ = "api_names"
    __table_args__ = (UniqueConstraint("run_id", "source_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    source_key: Mapped[int] = mapped_column(BigInteger)
    name: Mapped[str] = mapped_column(Text)


class RuntimeCallRow(Base):
    """A CUDA runtime or driver API call on a CPU thread."""

    __tablename__ = "runtime_calls"

    id: Mapped[int] = mapped_column(RECORD_ID, primary_key=True)
    run_id: Mapped[int] = _run_fk()
    name_id: Mapped[int | None] = mapped_column(ForeignKey("api_names.id", ondelete="CASCADE"))
    kind: Mapped[str | None] = mapped_column(String(8))
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    correlation_id: Mapped[int | None] = mapped_column(BigInteger)
    global_tid: Mapped[int | None] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)


class NvtxRangeRow(Base):
    """An NVTX event: push/pop or start/end range, mark, or domain creation (``kind``).

    Torch-trace ``user_annotation`` events land here too, so phase markers are found the
    same way whatever the producer.
    """

    __tablename__ = "nvtx_ranges"
    __table_args__ = (
        # Domain creations are a handful among millions of events: a partial index finds
        # them (the findings name the domains) without reading the run's events.
        Index("ix_nvtx_ranges_domains", "run_id", sqlite_where=sql_text(DOMAIN_CREATE),
              postgresql_where=sql_text(DOMAIN_CREATE)),
    )

    id: Mapped[int] = mapped_column(RECORD_ID, primary_key=True)
    #: Indexed alone: a run's events are appended in order, so the index grows at its end.
    #: (run_id, global_tid, start_ns) was updated at a random place per event and made the
    #: copy of a real trace's 4.9·10^6 events twice as slow; nothing looks events up by
    #: thread and time.
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int | None] = mapped_column(BigInteger)
    text: Mapped[str | None] = mapped_column(Text)
    domain: Mapped[str | None] = mapped_column(Text)
    global_tid: Mapped[int | None] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)


class CpuOpRow(Base):
    """A framework op (torch ``cpu_op``) with its input types and shapes, when recorded."""

    __tablename__ = "cpu_ops"
    __table_args__ = (Index("ix_cpu_ops_run_ext", "run_id", "external_id"),)

    id: Mapped[int] = mapped_column(RECORD_ID, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(Text)
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    external_id: Mapped[int | None] = mapped_column(BigInteger)
    global_tid: Mapped[int | None] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)
    input_types: Mapped[str | None] = mapped_column(Text)
    input_dims: Mapped[str | None] = mapped_column(Text)


class KernelMetricRow(Base):
    """A hardware counter for one profiled kernel launch (Nsight Compute), long format."""

    __tablename__ = "kernel_metrics"

    id: Mapped[int] = mapped_column(RECORD_ID, primary_key=True)
    run_id: Mapped[int] = _run_fk()
    name_id: Mapped[int] = mapped_column(ForeignKey("kernel_names.id", ondelete="CASCADE"))
    launch_index: Mapped[int] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(Text)
    unit: Mapped[str | None] = mapped_column(String(32))
    value: Mapped[float | None] = mapped_column(Float)
    text_value: Mapped[str | None] = mapped_column(Text)


class StepRow(Base):
    """An engine step (prefill / decode / mixed) from a marker or a heuristic."""

    __tablename__ = "steps"

    id: Mapped[int] = mapped_column(RECORD_ID, primary_key=True)
    run_id: Mapped[int] = _run_fk()
    nvtx_id: Mapped[int | None] = mapped_column(BigInteger)
    engine: Mapped[str | None] = mapped_column(String(32))
    phase: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(16))
    text: Mapped[str | None] = mapped_column(Text)
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    gpu_start_ns: Mapped[int | None] = mapped_column(BigInteger)
    gpu_end_ns: Mapped[int | None] = mapped_column(BigInteger)
    global_tid: Mapped[int | None] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)
    prefill_tokens: Mapped[int | None] = mapped_column(Integer)
    decode_tokens: Mapped[int | None] = mapped_column(Integer)
    prefill_requests: Mapped[int | None] = mapped_column(Integer)
    decode_requests: Mapped[int | None] = mapped_column(Integer)


class ClassificationRow(Base):
    """What one unique kernel name computes, and the evidence that decided it."""

    __tablename__ = "classifications"
    __table_args__ = (UniqueConstraint("run_id", "name_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    name_id: Mapped[int] = mapped_column(ForeignKey("kernel_names.id", ondelete="CASCADE"))
    op: Mapped[str] = mapped_column(String(16))
    path: Mapped[str] = mapped_column(String(16))
    weights: Mapped[str | None] = mapped_column(String(16))
    activations: Mapped[str | None] = mapped_column(String(16))
    accum: Mapped[str | None] = mapped_column(String(16))
    library: Mapped[str | None] = mapped_column(String(32))
    rule: Mapped[str | None] = mapped_column(String(64))
    evidence: Mapped[str | None] = mapped_column(String(32))
    confidence: Mapped[str | None] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)


class FindingRow(Base):
    """A verdict item: expected vs observed datatype path, markers lost, and the like."""

    __tablename__ = "findings"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    rule: Mapped[str] = mapped_column(String(64))
    severity: Mapped[str] = mapped_column(String(8))
    message: Mapped[str] = mapped_column(Text)
    phase: Mapped[str | None] = mapped_column(String(16))
    share: Mapped[float | None] = mapped_column(Float)
    evidence_json: Mapped[str | None] = mapped_column(Text)


class KernelGroupRow(Base):
    """Kernel records summed per (name, device, launching thread, phase): the one pass over
    a run's millions of records that the findings and every report read afterwards.

    Derived: rewritten by ``tracekit.aggregate.refresh_kernel_groups`` whenever phases change.
    """

    __tablename__ = "kernel_groups"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    name_id: Mapped[int] = mapped_column(ForeignKey("kernel_names.id", ondelete="CASCADE"))
    device: Mapped[int | None] = mapped_column(Integer)
    global_tid: Mapped[int | None] = mapped_column(BigInteger)
    global_pid: Mapped[int | None] = mapped_column(BigInteger)
    phase: Mapped[str] = mapped_column(String(16))
    count: Mapped[int] = mapped_column(BigInteger)
    total_ns: Mapped[int] = mapped_column(BigInteger)
    first_start_ns: Mapped[int] = mapped_column(BigInteger)
    last_end_ns: Mapped[int] = mapped_column(BigInteger)


class LayerTimeRow(Base):
    """GEMM time of one kernel name in one phase attributed to one layer group of the model,
    and what told it (``tracekit.vocabulary.LAYER_SOURCES``).

    Derived: rewritten by ``tracekit.layers.stage.attribute_layers``. A name's launches can
    split over several groups (one kernel serves q/k/v and the MLP alike); the rows of one
    (name, phase) sum to that name's GEMM time in the phase.
    """

    __tablename__ = "layer_times"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    name_id: Mapped[int] = mapped_column(ForeignKey("kernel_names.id", ondelete="CASCADE"))
    phase: Mapped[str] = mapped_column(String(16))
    layer: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(16))
    #: how far the source is trusted (high: module frames, layer ranges; medium: shapes,
    #: kernel families, inheritance; low: launch counts); NULL for ``unknown``
    confidence: Mapped[str | None] = mapped_column(String(8))
    launches: Mapped[int] = mapped_column(BigInteger)
    total_ns: Mapped[int] = mapped_column(BigInteger)
    detail: Mapped[str | None] = mapped_column(Text)  # the evidence in words, or why unknown


class LayerVerdictRow(Base):
    """The judgement of one layer group in one phase for one path that ran: declared,
    expected on this GPU in this engine, ran, its share of the phase's GEMM time, the outcome
    (``tracekit.vocabulary.OUTCOMES``) and its evidence.

    Derived: rewritten by ``tracekit.findings.stage.evaluate_run`` with the findings.
    """

    __tablename__ = "layer_verdicts"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = _run_fk()
    phase: Mapped[str] = mapped_column(String(16))
    layer: Mapped[str] = mapped_column(String(16))
    declared: Mapped[str | None] = mapped_column(Text)
    expected: Mapped[str | None] = mapped_column(String(16))
    expected_kind: Mapped[str | None] = mapped_column(String(24))
    ran: Mapped[str] = mapped_column(String(16))
    total_ns: Mapped[int] = mapped_column(BigInteger)
    share: Mapped[float] = mapped_column(Float)
    outcome: Mapped[str] = mapped_column(String(24))
    severity: Mapped[str | None] = mapped_column(String(8))
    evidence_json: Mapped[str | None] = mapped_column(Text)
