"""What a GPU can compute natively, and how fast: the one owner of ``rules/_gpus.toml``.

A fallback is only a fallback when the GPU could have done better: FP8 Marlin on an A100 is
the best any engine can do (sm80 has no FP8 MMA), the same kernel on an H100 is a silent
downgrade. This module answers "which architecture is this" (:func:`parse_arch`, the one
reader of architecture spellings, and :func:`device_arch` for a device as a trace describes
it), "which paths does it run natively" (:func:`native_paths`), "can this path have run on
it at all" (:func:`mma_conflict`, the classifier's feasibility check), "can a kernel built
for X run on it" (:func:`runs_on`) and, per product (``[model.*]``), "what are its dense
peak throughput per path and its memory bandwidth" — the roofs of the roofline. It never
guesses: an architecture missing from the table has no known native paths, a product it
cannot tell apart has no known limits.

A leaf module (it imports only the data layer and the errors), so the classifier, the
expectations, the findings and the roofline all read the same table without importing
each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from tracekit.datafiles import builtin_file, load_table, require
from tracekit.errors import ConfigError, RuleFileError
from tracekit.vocabulary import PATHS

GPUS_FILE = "_gpus.toml"


@dataclass(frozen=True)
class ArchInfo:
    """One architecture row of the capability table."""

    arch: str
    vendor: str
    family: str
    native: frozenset[str]
    formats: tuple[str, ...]
    note: str
    cite: str


@dataclass(frozen=True)
class GpuModel:
    """One product row of the table: its dense peak throughput per path and memory bandwidth."""

    key: str
    arch: str
    name: str
    tflops: dict[str, float]  # path word -> dense peak, TFLOP/s (TOP/s for int8)
    memory_gbps: float  # peak DRAM bandwidth, 10^9 bytes/s
    cite: str
    #: path word -> why the table has no peak for it (no figure confirmed from the vendor)
    unknown: dict[str, str] = field(default_factory=dict)

    def peak_flops(self, path: str) -> float | None:
        """Peak FLOP/s of ``path`` on this product, or None when its source lists none."""
        value = self.tflops.get(path)
        return value * 1e12 if value is not None else None

    def missing_reason(self, path: str) -> str:
        """Why the table has no peak for ``path`` on this product."""
        return self.unknown.get(path, f"its sources list no {path.upper()} rate")

    @property
    def bandwidth(self) -> float:
        """Peak memory bandwidth in bytes/s."""
        return self.memory_gbps * 1e9


@dataclass(frozen=True)
class ModelMatch:
    """The product a device resolves to, or None with the reason it could not be told."""

    model: GpuModel | None
    reason: str | None = None


@dataclass(frozen=True)
class GpuSpec:
    """A ``--gpu`` value read: the architecture, and the product as the user named it (None
    when the value was an architecture)."""

    arch: str
    name: str | None = None


@dataclass(frozen=True)
class KernelArch:
    """What a kernel name says about the architecture it was built for."""

    token: str  # as written in the name, e.g. "sm100f", "sm80_to_sm89", "gfx950"
    arch: str  # lowest architecture it targets, e.g. "sm100"
    scope: str  # "min" (this or newer), "exact", "family" (same major), "range"
    hi: str | None = None  # upper bound for scope "range"


@cache
def _arch_table() -> dict[str, ArchInfo]:
    """The ``[arch.*]`` rows; each key is spelled as :func:`parse_arch` spells it, and its
    vendor and native paths are words tracekit knows."""
    file = builtin_file(GPUS_FILE)
    result: dict[str, ArchInfo] = {}
    for arch, row in file.data.get("arch", {}).items():
        where = f"[arch.{arch}]"
        if parse_arch(arch) != arch:
            raise file.fail(f"{where}: an architecture is spelled smXY or gfxNNN", needle=where)
        vendor = file.require(row, "vendor", where)
        if vendor != ("amd" if arch.startswith("gfx") else "nvidia"):
            raise file.fail(f"{where}: vendor {vendor!r} does not make {arch}", needle=where)
        native = frozenset(file.require(row, "native", where))
        if not native <= set(PATHS) - {"unknown", "weight_only"}:
            raise file.fail(f"{where}: native lists {sorted(native - set(PATHS))}, "
                            "which are not path words (weight_only is never native)",
                            needle=where)
        result[arch] = ArchInfo(
            arch=arch,
            vendor=vendor,
            family=row.get("family", ""),
            native=native,
            formats=tuple(row.get("formats", ())),
            note=row.get("note", ""),
            cite=file.require(row, "cite", where),
        )
    return result


@cache
def mma_only_paths() -> tuple[str, ...]:
    """The paths only a matrix instruction computes (``mma_only`` of ``rules/_gpus.toml``)."""
    file = builtin_file(GPUS_FILE)
    paths = tuple(file.require(file.data, "mma_only", f"rules/{GPUS_FILE}"))
    if not set(paths) <= set(PATHS):
        raise file.fail(f"mma_only lists {sorted(set(paths) - set(PATHS))}, which are not "
                        "path words", needle="mma_only")
    return paths


@cache
def _model_table() -> tuple[tuple[GpuModel, re.Pattern[str]], ...]:
    rows = load_table(GPUS_FILE).get("model", {})
    models = []
    for key, row in rows.items():
        where = f"[model.{key}]"
        arch = require(row, "arch", GPUS_FILE, where)
        if arch not in _arch_table():
            raise RuleFileError(f"rules/{GPUS_FILE}: {where} names arch {arch!r}, "
                                "which has no [arch.*] entry")
        tflops = {str(path): float(value)
                  for path, value in require(row, "tflops", GPUS_FILE, where).items()}
        unknown = {str(path): str(reason) for path, reason in row.get("unknown", {}).items()}
        both = sorted(set(unknown) & set(tflops))
        if both:
            raise RuleFileError(f"rules/{GPUS_FILE}: {where} lists {both} both with a peak "
                                "and as unknown")
        models.append((GpuModel(
            key=key, arch=arch, name=require(row, "name", GPUS_FILE, where),
            tflops=tflops, memory_gbps=float(require(row, "memory_gbps", GPUS_FILE, where)),
            cite=require(row, "cite", GPUS_FILE, where), unknown=unknown,
        ), re.compile(require(row, "regex", GPUS_FILE, where))))
    return tuple(models)


def gpu_models() -> tuple[GpuModel, ...]:
    """Every product with limits in the table, in table order."""
    return tuple(model for model, _ in _model_table())


def gpu_model(key: str) -> GpuModel | None:
    """The product row ``key`` ("h100-sxm"), or None."""
    return next((model for model in gpu_models() if model.key == key), None)


def match_gpu_model(name: str | None, arch: str | None = None) -> ModelMatch:
    """The product a device is, from its reported name (and its arch, where known).

    Several products share an architecture and even a name stem (H100 SXM, PCIe and NVL): the
    name must single one out. No match, or more than one, is an answer with the reason — the
    limits are then unknown, never borrowed from a sibling product.
    """
    if not name:
        return ModelMatch(None, "the trace names no GPU product; pass --gpu with its name")
    found = [model for model, pattern in _model_table()
             if pattern.search(name) and (arch is None or model.arch == arch)]
    if len(found) == 1:
        return ModelMatch(found[0])
    if found:
        names = ", ".join(model.name for model in found)
        return ModelMatch(None, f"{name.strip()!r} could be any of {names}")
    reason = f"no product in rules/{GPUS_FILE} matches {name.strip()!r}"
    siblings = [model.name for model in gpu_models() if arch and model.arch == arch]
    if siblings:
        reason += f"; {arch} products with limits: {', '.join(siblings)} (pass --gpu NAME)"
    return ModelMatch(None, reason)


@cache
def _name_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    rows = load_table(GPUS_FILE).get("name", [])
    return tuple(
        (re.compile(require(row, "regex", GPUS_FILE, "[[name]]")), row["arch"]) for row in rows
    )


@cache
def _kernel_arch_patterns() -> tuple[tuple[str, re.Pattern[str], str | None], ...]:
    rows = load_table(GPUS_FILE).get("kernel_arch", [])
    return tuple(
        (
            row["id"],
            re.compile(require(row, "regex", GPUS_FILE, "[[kernel_arch]]")),
            row.get("fixed"),
        )
        for row in rows
    )


def known_archs() -> frozenset[str]:
    """Every architecture the capability table describes."""
    return frozenset(_arch_table())


def arch_info(arch: str) -> ArchInfo | None:
    """The table row for ``arch`` ("sm90", "gfx942"), or None when the table lacks it."""
    return _arch_table().get(arch)


@cache
def _capability_renames() -> dict[str, str]:
    """``[capability_rename]``: compute capabilities one toolkit reports for an architecture
    another names otherwise ("10.1" → "sm110": Jetson Thor under CUDA 12 and 13)."""
    file = builtin_file(GPUS_FILE)
    renames = {str(k): str(v) for k, v in file.data.get("capability_rename", {}).items()}
    for capability, arch in renames.items():
        if not _CC_RE.match(capability) or arch not in file.data.get("arch", {}):
            raise file.fail(f"[capability_rename] {capability} = {arch!r}: a compute capability "
                            "'M.m' naming an [arch.*] row", needle=f'"{capability}"')
    return renames


def arch_from_capability(major: int, minor: int) -> str:
    """NVIDIA compute capability → architecture: ``(9, 0)`` → ``"sm90"``, ``(12, 0)`` → ``"sm120"``,
    ``(10, 1)`` → ``"sm110"`` (Jetson Thor as CUDA 12 reports it, ``[capability_rename]``).

    Always returns a name; whether the table knows it is :func:`arch_info`'s business.
    (ROCm reports gfx942 as "9.4" through torch; use the device name for AMD GPUs.)
    """
    return _capability_renames().get(f"{int(major)}.{int(minor)}", f"sm{int(major)}{int(minor)}")


def _renamed_sm(number: str) -> str:
    """The architecture number ``smXY`` names after the renames ("101" → "110")."""
    text = number.lstrip("0") or "0"
    capability = f"{text[:-1]}.{text[-1]}" if len(text) > 1 else text
    renamed = _capability_renames().get(capability)
    return renamed[2:] if renamed else number


def arch_from_gpu_name(name: str) -> str | None:
    """A product name as traces report it → architecture ("NVIDIA GeForce RTX 5090" → "sm120")."""
    return _match_name(name)[0]


def device_arch(arch: str | None, major: int | None, minor: int | None,
                name: str | None) -> str | None:
    """The architecture of a device as a trace describes it, in this table's spelling.

    Readers build ``sm{major}{minor}`` from a compute capability, but ROCm reports gfx942
    as capability "9.4" (and gfx90a as "9.0"): an AMD name wins over the capability.
    """
    if arch:
        normalized = normalize_arch(arch)
        if normalized in known_archs():
            return normalized
    named = parse_arch(name) if name and name.strip().lower().startswith("gfx") else None
    if named is not None:  # ROCm names an agent by its target: "gfx942:sramecc+:xnack-"
        return named
    from_name = arch_from_gpu_name(name) if name else None
    if from_name and from_name.startswith("gfx"):
        return from_name
    if major is not None and minor is not None:
        return arch_from_capability(major, minor)
    return from_name or (arch.lower() if arch else None)


def short_gpu_name(name: str) -> str:
    """The recognizable part of a product name: "NVIDIA H100 80GB HBM3" → "H100"."""
    return _match_name(name)[1] or name.strip()


def _match_name(name: str) -> tuple[str | None, str | None]:
    for pattern, arch in _name_patterns():
        match = pattern.search(name)
        if match:
            return arch, match.group(0).strip()
    return None, None


def native_paths(arch: str) -> frozenset[str]:
    """Paths this architecture computes natively; empty when the table lacks the architecture."""
    info = arch_info(arch)
    return info.native if info else frozenset()


def archs_with(path: str) -> tuple[str, ...]:
    """The table's architectures that compute ``path`` natively, NVIDIA then AMD, oldest first."""
    return tuple(sorted((arch for arch, info in _arch_table().items() if path in info.native),
                        key=_arch_order))


def _arch_order(arch: str) -> tuple[int, int]:
    number = _sm_number(arch)
    return (0, number) if number is not None else (1, int(arch[3:], 16))


def mma_conflict(path: str, arch: str | None) -> str | None:
    """Why ``path`` cannot have run on ``arch`` (the classifier's feasibility check), or None.

    Only the ``mma_only`` paths are checked: FP4 and FP8 exist only as matrix instructions,
    while the wider paths run on any GPU in some form. An architecture in the table has the
    path when its ``native`` list says so. One the table lacks: an NVIDIA smXY has it when XY
    is at least the lowest NVIDIA architecture listed with it (NVIDIA's matrix instructions
    only gain kinds with the architecture number, ``tests/test_gpus.py`` checks the table
    agrees), an AMD target has none. An architecture that cannot be read: nothing is known,
    nothing is refused.
    """
    device = parse_arch(arch)
    if device is None or path not in mma_only_paths():
        return None
    have = archs_with(path)
    nvidia = [number for number in map(_sm_number, have) if number is not None]
    number = _sm_number(device)
    if device in _arch_table():
        runs = path in native_paths(device)
    else:
        runs = number is not None and bool(nvidia) and number >= nvidia[0]
    if runs:
        return None
    if number is not None:
        needs = f"needs sm{nvidia[0]} or newer" if nvidia else "no NVIDIA GPU has it"
    else:
        amd = [other for other in have if other.startswith("gfx")]
        needs = f"only {', '.join(amd)}" if amd else "no AMD GPU has it"
    return f"{arch} has no {path} MMA ({needs})"


_SM_RE = re.compile(r"^(?:sm_?|compute_?)?(\d{2,3})[af]?$")
_CC_RE = re.compile(r"^(\d{1,2})\.(\d)$")
_GFX_RE = re.compile(r"^gfx[0-9a-f]{3,4}$")


def parse_arch(value: str | None) -> str | None:
    """An architecture in the capability table's spelling, or None when ``value`` is none.

    The one reader of architecture spellings: "sm90", "SM_90a", "sm_100f", "compute_90",
    CMake's "90a" and "100", a compute capability "9.0" → "sm90"; "gfx942",
    "gfx942:sramecc+:xnack-" → "gfx942". Renamed architectures read as their new name:
    "sm_101a" and "10.1" → "sm110" (``[capability_rename]``). (ROCm reports gfx942 as
    capability "9.4" through torch: :func:`device_arch` prefers an AMD product name for that
    reason.)
    """
    if not value:
        return None
    text = value.strip().lower().split(":")[0]
    if match := _SM_RE.match(text):
        return f"sm{_renamed_sm(match.group(1))}"
    if match := _CC_RE.match(text):
        return arch_from_capability(int(match.group(1)), int(match.group(2)))
    if _GFX_RE.match(text):
        return text
    return None


def normalize_arch(value: str) -> str:
    """:func:`parse_arch`'s spelling; a value that is no architecture comes back lower-cased."""
    return parse_arch(value) or value.strip().lower().split(":")[0].replace("_", "")


def parse_gpu(value: str) -> GpuSpec:
    """Read a ``--gpu`` value: an architecture in any spelling :func:`parse_arch` reads
    ("sm90", "sm_120a", "9.0", "gfx942"), or a product name ("H100").

    Raises ConfigError when the value names nothing the capability table knows.
    """
    text = value.strip()
    arch = parse_arch(text)
    if arch is not None:
        return GpuSpec(arch=arch)
    arch, _ = _match_name(text)
    if arch is None:
        raise ConfigError(
            f"--gpu {value!r}: not an architecture (sm90, gfx942), a compute capability (9.0) "
            "or a GPU name tracekit knows",
            hint="known names are listed in rules/_gpus.toml",
        )
    return GpuSpec(arch=arch, name=text)


def kernel_archs(name: str) -> tuple[KernelArch, ...]:
    """Architecture tokens in a kernel name (``sm90_…``, ``enable_sm100f_only``, ``gfx942`` …).

    Spans already claimed by an earlier pattern (a range ``sm80_to_sm89``) are not read twice.
    """
    found: list[KernelArch] = []
    claimed: list[tuple[int, int]] = []
    for _pattern_id, pattern, fixed in _kernel_arch_patterns():
        for match in pattern.finditer(name):
            start, end = match.span()
            if any(start < c_end and c_start < end for c_start, c_end in claimed):
                continue
            claimed.append((start, end))
            groups = match.groupdict()
            token = match.group(0).strip("_")
            if fixed:
                found.append(KernelArch(token=token, arch=fixed, scope="min"))
            elif groups.get("gfx"):
                found.append(KernelArch(token=token, arch=groups["gfx"].lower(), scope="exact"))
            elif groups.get("hi"):
                found.append(
                    KernelArch(
                        token=token,
                        arch=f"sm{groups['arch']}",
                        scope="range",
                        hi=f"sm{groups['hi']}",
                    )
                )
            else:
                suffix = (groups.get("suffix") or "").lower()
                # "a" (arch-specific) strictly means that one arch, but kernel libraries keep an
                # "sm100a" tag on kernels they also ship for sm103: only a different major
                # version is certain to be wrong, so "a" is judged like "f".
                scope = "family" if suffix in {"a", "f"} else "min"
                if groups.get("only") and scope == "min":
                    scope = "exact"
                found.append(
                    KernelArch(
                        token=f"sm{groups['arch']}{suffix}",
                        arch=f"sm{_renamed_sm(groups['arch'])}", scope=scope
                    )
                )
    return tuple(found)


def _sm_number(arch: str) -> int | None:
    match = re.fullmatch(r"sm(\d{2,3})", arch)
    return int(match.group(1)) if match else None


def _sm_major(number: int) -> int:
    return number // 10


def built_for(arch: str) -> KernelArch:
    """A kernel built for exactly ``arch`` (a rule's ``requires_arch`` entry)."""
    spelled = parse_arch(arch) or arch
    return KernelArch(token=arch, arch=spelled, scope="exact")


def runs_on(kernel: KernelArch, device_arch: str | None) -> bool:
    """Whether a kernel built for ``kernel`` can execute on a ``device_arch`` device.

    NVIDIA: a plain smXY kernel runs on XY or newer; "a" only on XY; "f" on the same major
    version; a range A_to_B on A…B; an exact one (:func:`built_for`) only on XY. AMD gfx
    kernels run only on their own gfx target. A vendor mismatch never runs. A device whose
    architecture is unknown or unreadable contradicts nothing.
    """
    device = parse_arch(device_arch)
    if device is None:
        return True
    device_sm = _sm_number(device)
    kernel_sm = _sm_number(kernel.arch)
    if kernel.arch.startswith("gfx") or device.startswith("gfx"):
        return kernel.arch == device
    if device_sm is None or kernel_sm is None:
        return True  # nothing known to contradict
    if kernel.scope == "exact":
        return device_sm == kernel_sm
    if kernel.scope == "family":
        return _sm_major(device_sm) == _sm_major(kernel_sm) and device_sm >= kernel_sm
    if kernel.scope == "range" and kernel.hi:
        hi = _sm_number(kernel.hi) or kernel_sm
        return kernel_sm <= device_sm <= hi
    return device_sm >= kernel_sm
