"""What the three rocprofv3 readers (JSON, CSV, rocpd) share: agents as devices, ROCTx kinds.

rocprofv3 names a GPU three ways: an agent handle (JSON records), a row id (rocpd) and an
index printed as ``Agent N`` / ``GPU N`` (CSV). The store's ``kernels.device`` is the GPU's
position among the node's GPU agents (``logical_node_type_id``, the HIP device ordinal when
no GPU is hidden), the same number in all three formats, as CUDA readers store the CUDA
ordinal. A device row takes its product name (``AMD Instinct MI300X``) as its name and its
gfx target (``gfx942``, from the agent's name or ``gfx_target_version``) as its architecture.
"""

from __future__ import annotations

from typing import Any

from tracekit.gpus import parse_arch
from tracekit.ingest.spec import RocprofMarkers

#: the devices table's columns, in the order :func:`device_row` gives them
DEVICE_COLUMNS = ("run_id", "device_index", "global_pid", "name", "compute_major",
                  "compute_minor", "sm_count", "memory_bytes", "uuid", "arch", "arch_source")


def gfx_arch(name: str | None, target_version: int | None) -> str | None:
    """The gfx target of an agent: its name ("gfx942", "gfx942:sramecc+:xnack-") or its
    ``gfx_target_version`` (90402 → gfx942: major, minor and stepping, the stepping in hex)."""
    arch = parse_arch(name) if name and name.lower().startswith("gfx") else None
    if arch is not None:
        return arch
    if target_version:
        major, minor, stepping = target_version // 10000, target_version // 100 % 100, \
            target_version % 100
        if 0 < major < 100 and minor < 16 and stepping < 16:
            return f"gfx{major}{minor:x}{stepping:x}"
    return None


def capability(target_version: int | None) -> tuple[int | None, int | None]:
    """``(major, minor)`` as ROCm reports them through HIP (gfx942 → 9, 4)."""
    if not target_version:
        return None, None
    return target_version // 10000, target_version // 100 % 100


def agent_uuid(value: Any) -> str | None:
    """An agent's uuid as hex text: JSON writes ``{"bytes": {"value0": …}}``, rocpd an int."""
    if isinstance(value, dict) and isinstance(value.get("bytes"), dict):
        octets = [value["bytes"].get(f"value{index}") for index in range(16)]
        if all(isinstance(octet, int) and 0 <= octet < 256 for octet in octets):
            text = bytes(octets).hex()  # type: ignore[arg-type]
            return None if not text.strip("0") else text
        return None
    if isinstance(value, int) and value:
        return f"{value:x}"
    return None


def device_row(run_id: int, index: int, pid: int | None, *, name: str | None,
               product: str | None, target_version: int | None, cu_count: int | None,
               memory_bytes: int | None, uuid: str | None) -> tuple[Any, ...]:
    """One ``devices`` row (:data:`DEVICE_COLUMNS`) for a GPU agent."""
    arch = gfx_arch(name, target_version)
    major, minor = capability(target_version)
    return (run_id, index, pid, product or name or None, major, minor, cu_count or None,
            memory_bytes or None, uuid, arch, "trace" if arch else None)


def marker_kinds(markers: RocprofMarkers) -> dict[str, str]:
    """ROCTx operation name → the store's range kind (``push_pop``, ``start_end``, ``mark``)."""
    return {operation: kind for kind in ("push_pop", "start_end", "mark")
            for operation in getattr(markers, kind)}


def workgroups(grid: int | None, workgroup: int | None) -> int | None:
    """Workgroups along one axis. ROCm's ``grid_size`` counts work-items (the HSA dispatch
    packet's), CUDA's grid counts blocks: the store keeps blocks, ``ceil(grid / workgroup)``."""
    if grid is None or not workgroup:
        return grid
    return -(-grid // workgroup)
