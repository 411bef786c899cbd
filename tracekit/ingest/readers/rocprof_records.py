"""rocprofv3's JSON records as typed msgspec records: only the fields the reader uses.

The shapes follow rocprofiler-sdk's serializers (``include/rocprofiler-sdk/cxx/
serialization/save.hpp``: ``save(…kernel_dispatch_record_t)``, ``save_buffer_tracing_api_
record``, ``rocprofiler_kernel_dispatch_info_t``, ``rocprofiler_correlation_id_t``) and the
tool's JSON writer (``source/lib/output/generateJSON.cpp``), ROCm 6.2 through 7.x: a field a
version does not write takes its default, a field a newer version adds is skipped by the
decoder without being built. Numbers must be numbers: a string where an id or a time belongs
is a damaged record, refused with the field's path.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Handle(msgspec.Struct, frozen=True, gc=False):
    """``{"handle": N}``: agent, queue and stream ids."""

    handle: int = 0


class Correlation(msgspec.Struct, frozen=True, gc=False):
    """``correlation_id``: ``internal`` links a dispatch to the API call that enqueued it."""

    internal: int = 0
    external: Any = None


class Dim3(msgspec.Struct, frozen=True, gc=False):
    x: int = 0
    y: int = 0
    z: int = 0


_NO_HANDLE = Handle()
_NO_CORRELATION = Correlation()
_NO_DIM = Dim3()


class DispatchInfo(msgspec.Struct, frozen=True, gc=False):
    agent_id: Handle = _NO_HANDLE
    queue_id: Handle = _NO_HANDLE
    kernel_id: int = 0
    dispatch_id: int = 0
    private_segment_size: int = 0
    group_segment_size: int = 0
    workgroup_size: Dim3 = _NO_DIM
    grid_size: Dim3 = _NO_DIM


_NO_INFO = DispatchInfo()


class Dispatch(msgspec.Struct, gc=False):
    """``buffer_records.kernel_dispatch[]``: one kernel execution."""

    start_timestamp: int
    end_timestamp: int
    kind: int = 0
    thread_id: int | None = None
    correlation_id: Correlation = _NO_CORRELATION
    dispatch_info: DispatchInfo = _NO_INFO
    stream_id: Handle | None = None


class ApiCall(msgspec.Struct, gc=False):
    """``buffer_records.hip_api[]`` / ``marker_api[]``: one API call (or ROCTx range)."""

    start_timestamp: int
    end_timestamp: int
    kind: int = 0
    operation: int = 0
    thread_id: int | None = None
    correlation_id: Correlation = _NO_CORRELATION


class MemoryCopy(msgspec.Struct, gc=False):
    """``buffer_records.memory_copy[]``: one copy between agents."""

    start_timestamp: int
    end_timestamp: int
    correlation_id: Correlation = _NO_CORRELATION
    dst_agent_id: Handle = _NO_HANDLE
    src_agent_id: Handle = _NO_HANDLE
    bytes: int | None = None
    stream_id: Handle | None = None


class Symbol(msgspec.Struct, gc=False):
    """``kernel_symbols[]``: a kernel's names, by ``kernel_id``."""

    kernel_id: int
    kernel_name: str = ""
    formatted_kernel_name: str = ""
    demangled_kernel_name: str = ""
    truncated_kernel_name: str = ""
    group_segment_size: int | None = None
    arch_vgpr_count: int | None = None


class MemBank(msgspec.Struct, frozen=True, gc=False):
    size_in_bytes: int = 0


class Agent(msgspec.Struct, gc=False):
    """``agents[]``: a CPU or GPU as the ROCm runtime describes it."""

    id: Handle = _NO_HANDLE
    type: int = 0
    name: str = ""
    product_name: str = ""
    node_id: int | None = None
    logical_node_type_id: int | None = None
    cu_count: int | None = None
    gfx_target_version: int | None = None
    mem_banks: list[MemBank] = msgspec.field(default_factory=list)
    uuid: Any = None


class KindNames(msgspec.Struct, gc=False):
    """``strings.buffer_records[kind]``: a buffer kind's name and its operation names."""

    kind: str = ""
    operations: list[str] = msgspec.field(default_factory=list)


class Message(msgspec.Struct, gc=False):
    """``strings.marker_api[]``: a ROCTx message by the correlation id of its range."""

    key: int
    value: str = ""


class Metadata(msgspec.Struct, gc=False):
    """``metadata``: the profiled process."""

    pid: int | None = None
    command: list[str] = msgspec.field(default_factory=list)
    init_time: int | None = None
    fini_time: int | None = None
    node: dict[str, Any] = msgspec.field(default_factory=dict)


def decoder(kind: Any) -> msgspec.json.Decoder[Any]:
    """A decoder of a JSON array of ``kind`` records."""
    return msgspec.json.Decoder(list[kind])
