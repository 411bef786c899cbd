"""The run's GPU, decided once per analysis and stored: every stage after it reads the decision.

The classifier's feasibility check reads ``runs.arch``, the findings read ``runs.arch`` and
the GPU's name, the roofline reads ``runs.gpu_model`` (the product row of
``rules/_gpus.toml`` whose limits are the roofs, or the reason there is none). The rule,
documented in docs/architecture.md ("Devices → the run's GPU"):

1. Each device's architecture is the trace's (its recorded arch, compute capability or
   product name, in the capability table's spelling: :func:`tracekit.gpus.device_arch`).
2. ``--gpu`` fills what the trace leaves unknown: a device whose architecture the trace does
   not give (or gives in a form the table does not know) takes ``--gpu``'s (``arch_source =
   'user'``, kept by later analyses until another ``--gpu``), and a device whose
   architecture agrees but whose name matches no product takes ``--gpu``'s product name.
   ``--gpu`` never overrides what the trace recorded: when they disagree, the trace's GPU is
   used and a warning says so.
3. The run's architecture is the one all its devices share (a run over GPUs of different
   architectures has none); without devices that know theirs, ``--gpu``'s, else the device
   line of an engine log (``--log``), else what an earlier ``--gpu`` or ``--log`` gave the
   run.
4. The run's product: the one all its devices resolve to, else the one the run's GPU name
   names; no product, or several, leaves the limits unknown with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy import Connection, text

from tracekit.gpus import GpuSpec, ModelMatch, device_arch, known_archs, match_gpu_model


@dataclass(frozen=True)
class DeviceRow:
    """One row of ``devices``: what the trace (and an earlier ``--gpu``) says of a GPU."""

    id: int
    arch: str | None
    compute_major: int | None
    compute_minor: int | None
    name: str | None
    arch_source: str | None


@dataclass(frozen=True)
class StoredGpu:
    """The decision as the store keeps it (``runs.arch``, ``runs.gpu``, ``runs.gpu_model``)."""

    arch: str | None = None
    name: str | None = None
    model: str | None = None
    model_reason: str | None = None


@dataclass(frozen=True)
class RunGpu:
    """The decision: the run's architecture and GPU name, its product, its devices settled."""

    arch: str | None
    name: str | None
    label: str | None
    model: ModelMatch
    devices: tuple[DeviceRow, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class LogDevice:
    """A device line of an engine log: its architecture and product name."""

    arch: str
    name: str | None


def log_device(evidence: Iterable[object]) -> LogDevice | None:
    """The first engine-log line that names the GPU's architecture (``LogEvidence``)."""
    for item in evidence:
        arch = getattr(item, "gpu_arch", None)
        if arch:
            named = getattr(item, "kernel", None) if getattr(item, "kind", None) == "device" \
                else None
            return LogDevice(arch=arch, name=named)
    return None


def gpu_label(name: str | None, arch: str) -> str:
    """``runs.gpu``: "NVIDIA H100 80GB HBM3 (sm90)"; "GPU (sm120)" when no name is known."""
    return f"{name or 'GPU'} ({arch})"


_LABEL = re.compile(r"^(?P<name>.*?)\s*\((?P<arch>[^()]+)\)\s*$")


def label_gpu(label: str | None) -> StoredGpu:
    """The name and architecture a ``runs.gpu`` label ("NAME (ARCH)") gives."""
    found = _LABEL.match(label or "")
    if found is None:
        return StoredGpu()
    name = found.group("name") or None
    return StoredGpu(arch=found.group("arch"), name=None if name == "GPU" else name)


def _settle_device(device: DeviceRow, gpu: GpuSpec | None) -> tuple[DeviceRow, str | None]:
    """The device with its architecture decided, and a warning when ``--gpu`` disagrees."""
    refill = gpu is not None and device.arch_source == "user"  # an earlier --gpu's, replaced
    arch = None if refill else device_arch(device.arch, device.compute_major,
                                           device.compute_minor, device.name)
    if gpu is None:
        return replace(device, arch=arch), None
    source = device.arch_source
    if arch is None or arch not in known_archs():
        arch, source = gpu.arch, "user"
    elif arch != gpu.arch:
        said = f"{gpu.name} ({gpu.arch})" if gpu.name else gpu.arch
        return replace(device, arch=arch), (
            f"--gpu {said} disagrees with the trace, which recorded {device.name or 'a GPU'} "
            f"({arch}): the trace's GPU is used")
    name = device.name or gpu.name
    if (gpu.name and match_gpu_model(device.name, arch).model is None
            and match_gpu_model(gpu.name, arch).model is not None):
        # The trace names no product (ncu CSVs name no GPU, engineering samples have odd
        # names): --gpu names it, for the roofline's limits.
        name = gpu.name
    return replace(device, arch=arch, name=name, arch_source=source), None


def _product(devices: Sequence[DeviceRow], name: str | None, arch: str | None) -> ModelMatch:
    """The product of the run: all devices must resolve to one (a run over different products
    has no one roof); without devices, the run's GPU name."""
    matches = [match_gpu_model(d.name, d.arch) for d in devices if d.name or d.arch]
    if not matches:
        return match_gpu_model(name, arch)
    keys = {match.model.key for match in matches if match.model}
    if len(keys) > 1:
        return ModelMatch(None, "the run's devices are different products: "
                                + ", ".join(sorted(keys)))
    return next((match for match in matches if match.model), matches[0])


def decide_run_gpu(devices: Sequence[DeviceRow], gpu: GpuSpec | None = None,
                   log: LogDevice | None = None, earlier: StoredGpu | None = None) -> RunGpu:
    """Apply the rule of this module's docstring (pure: the store is read and written by
    :func:`settle_run_gpu`)."""
    settled: list[DeviceRow] = []
    warnings: list[str] = []
    for device in devices:
        row, warning = _settle_device(device, gpu)
        settled.append(row)
        if warning and warning not in warnings:
            warnings.append(warning)
    archs = {device.arch for device in settled if device.arch}
    first = next((device for device in settled if device.arch), None)
    name: str | None = None
    if first is not None:
        arch = archs.pop() if len(archs) == 1 else None
        name = first.name
        label: str | None = gpu_label(first.name, first.arch or "")
    else:
        if gpu is not None:
            arch, name = gpu.arch, gpu.name
        elif log is not None:
            arch, name = log.arch, log.name
        elif earlier is not None and not devices:
            arch, name = earlier.arch, earlier.name
        else:
            arch = None
        label = gpu_label(name, arch) if arch else None
    return RunGpu(arch=arch, name=name, label=label, model=_product(settled, name, arch),
                  devices=tuple(settled), warnings=tuple(warnings))


def read_devices(connection: Connection, run_id: int) -> list[DeviceRow]:
    """The run's devices, in device order."""
    rows = connection.execute(text(
        "SELECT id, arch, compute_major, compute_minor, name, arch_source FROM devices "
        "WHERE run_id = :run_id ORDER BY device_index, id"), {"run_id": run_id}).all()
    return [DeviceRow(*row) for row in rows]


def stored_run_gpu(connection: Connection, run_id: int) -> StoredGpu:
    """The decision the store holds for the run (all None before the run was analyzed)."""
    row = connection.execute(text(
        "SELECT arch, gpu, gpu_model, gpu_model_reason FROM runs WHERE id = :run_id"),
        {"run_id": run_id}).one()
    return StoredGpu(arch=row.arch, name=label_gpu(row.gpu).name, model=row.gpu_model,
                     model_reason=row.gpu_model_reason)


def settle_run_gpu(connection: Connection, run_id: int, gpu: GpuSpec | None = None,
                   log_evidence: Iterable[object] = ()) -> RunGpu:
    """Decide the run's GPU and store the decision: devices' archs (and ``--gpu`` fills),
    ``runs.arch``, ``runs.gpu``, ``runs.gpu_model`` and its reason."""
    devices = read_devices(connection, run_id)
    decided = decide_run_gpu(devices, gpu, log_device(log_evidence),
                             stored_run_gpu(connection, run_id))
    for before, after in zip(devices, decided.devices, strict=True):
        if after != before:
            connection.execute(text(
                "UPDATE devices SET arch = :arch, name = :name, arch_source = :source "
                "WHERE id = :id"), {"arch": after.arch, "name": after.name,
                                    "source": after.arch_source, "id": after.id})
    connection.execute(text(
        "UPDATE runs SET arch = :arch, gpu = :label, gpu_model = :model, "
        "gpu_model_reason = :reason WHERE id = :run_id"),
        {"arch": decided.arch, "label": decided.label,
         "model": decided.model.model.key if decided.model.model else None,
         "reason": decided.model.reason, "run_id": run_id})
    return decided
