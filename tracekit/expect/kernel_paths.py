"""What an engine can legally launch for one declared layer group on one GPU: the expected path.

The judgement compares what ran with this, never with the declaration alone: an NVFP4 W4A4
layer on an H100 is expected to run Marlin (4-bit weights, 16-bit math) because no FP4 MMA
exists there — that is hardware-limited, not a fallback — while the same layer on a B200 is
expected to run FP4. ``expected_path`` is the one owner of that answer; the verdict and
``tracekit expect`` both ask it. The engines' choices are data, cited to engine sources and
versions: ``rules/_kernel_paths.toml``.

Outcome words the judgement derives from an :class:`ExpectedPath`:

- the expected path ran: ``as_declared`` (kind ``native`` or ``by_design``) or
  ``hardware_limited`` (kind ``hardware_fallback``; kind ``engine_fallback`` is the same
  outcome with another reason: the GPU could, this engine's default kernel does not);
- a path in ``better`` ran: ``better`` (the engine chose more quantized math than declared);
- a worse path ran (see :func:`rank`): ``silent_fallback`` / ``logged_fallback`` when the
  expected path was native, ``degraded`` when the expected path was itself a fallback or
  weight-only by design (emulation, dequantize-at-load);
- a quantized path neither expected nor better ran: ``mismatch``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from tracekit.datafiles import builtin_file
from tracekit.expect.checkpoint.declaration import LayerScheme
from tracekit.expect.checkpoint.layers import LayerDeclaration
from tracekit.gpus import arch_info, known_archs, parse_arch
from tracekit.vocabulary import ENGINES, PATHS, QUANTIZED_PATHS, WIDE_PATHS

__all__ = ["ENGINES", "ENGINE_NAMES", "KINDS", "SCOPES", "ExpectedPath", "combine_engines",
           "declared_format", "expected_path", "kernel_path_table", "layer_scope", "rank",
           "scheme_path"]
KERNEL_PATHS_FILE = "_kernel_paths.toml"
#: how each engine is named in sentences
ENGINE_NAMES: dict[str, str] = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM",
                                "llama.cpp": "llama.cpp"}
KINDS = ("native", "by_design", "hardware_fallback", "engine_fallback", "unsupported", "unknown")
#: the layer scopes a row can be about: dense linear layers, or the MoE experts
SCOPES = ("linear", "moe")


@dataclass(frozen=True)
class ExpectedPath:
    """The path the best kernel an engine can launch for a layer group computes on a GPU."""

    path: str  # a PATHS word; "unknown" when the GPU or the declaration is unknown
    kind: str  # one of KINDS
    kernels: str  # the kernel family in words: "FP4 GEMMs (FlashInfer, CUTLASS)", "Marlin W4A16"
    better: frozenset[str] = frozenset()  # paths the engine may choose that beat the declaration
    cite: str = ""  # the engine source or document that says so
    reason: str = ""  # why, in words ("the H100 (sm90) has no FP4 MMA")
    #: the declared format's id in rules/_kernel_paths.toml ("nvfp4_w4a4"), "" when none
    format: str = ""
    #: the coarse format word engine log lines use for it (LogEvidence.format: "nvfp4", "fp8" …)
    family: str = ""
    #: "linear" or "moe": which engine list decided
    scope: str = "linear"
    #: the engine versions the row was read from ("0.12–0.33")
    versions: str = ""
    #: the engine the answer is for (None: no engine named; then per-engine answers combined)
    engine: str | None = None

    @property
    def accepted(self) -> frozenset[str]:
        """Paths that are not a fallback here: the expected one and the better ones."""
        return frozenset({self.path}) | self.better if self.path != "unknown" else self.better


@dataclass(frozen=True)
class FormatRow:
    """One ``[[format]]`` row: which declared schemes are this format."""

    id: str
    label: str
    family: str
    weights: frozenset[str]
    activations: frozenset[str]  # "none" = 16-bit activations
    quant: re.Pattern[str] | None
    quant_example: str = ""

    def matches(self, scheme: LayerScheme) -> bool:
        weights = (scheme.weights or "").lower()
        activations = (scheme.activations or "none").lower()
        if weights not in self.weights or activations not in self.activations:
            return False
        return self.quant is None or bool(self.quant.search(scheme.quant))

    def sample_scheme(self) -> LayerScheme:
        """A declared scheme that is this format (its first weights and activations words)."""
        activations = sorted(self.activations)[0]
        act = None if activations == "none" else activations
        weights = sorted(self.weights)[0]
        return LayerScheme(("*",), weights, act, self.label, _declared_path(act),
                           self.quant_example or weights.upper())


@dataclass(frozen=True)
class PathRow:
    """One ``[[path]]`` row: an engine's expected path for formats on architectures."""

    formats: frozenset[str]  # empty = every format
    engine: str  # "*" = every engine
    scope: str  # linear | moe | any
    archs: frozenset[str]
    path: str
    kind: str
    kernels: str
    better: frozenset[str]
    versions: str
    cite: str
    reason: str

    def matches(self, format_id: str, engine: str, scope: str, arch: str) -> bool:
        return ((not self.formats or format_id in self.formats)
                and self.engine in ("*", engine)
                and self.scope in ("any", scope)
                and arch in self.archs)


@dataclass(frozen=True)
class KernelPathTable:
    formats: tuple[FormatRow, ...]
    rows: tuple[PathRow, ...]
    examples: tuple[Mapping[str, Any], ...]


@cache
def kernel_path_table() -> KernelPathTable:
    """``rules/_kernel_paths.toml``, checked: every word is one tracekit knows."""
    file = builtin_file(KERNEL_PATHS_FILE)
    data = file.data
    groups: dict[str, list[str]] = {str(k): list(v) for k, v in data.get("archs", {}).items()}

    def archs_of(entry: Any, where: str) -> frozenset[str]:
        result: set[str] = set()
        for item in entry:
            if item.startswith("@"):
                if item[1:] not in groups:
                    raise file.fail(f"{where}: arch group {item} is not in [archs]", needle=item)
                result.update(groups[item[1:]])
            else:
                result.add(item)
        unknown = sorted(a for a in result if parse_arch(a) != a or arch_info(a) is None)
        if unknown:
            raise file.fail(f"{where}: {unknown} are not architectures of rules/_gpus.toml",
                            needle=where)
        return frozenset(result)

    for name, members in groups.items():
        archs_of(members, f"[archs] {name}")
    formats: list[FormatRow] = []
    for row in data.get("format", []):
        where = f"[[format]] {row.get('id', '?')}"
        quant = row.get("quant")
        example = row.get("quant_example", "")
        if quant and not re.search(quant, example):
            raise file.fail(f"{where}: quant_example {example!r} does not match quant {quant!r}",
                            needle=where)
        formats.append(FormatRow(
            id=file.require(row, "id", where), label=file.require(row, "label", where),
            family=file.require(row, "family", where),
            weights=frozenset(w.lower() for w in file.require(row, "weights", where)),
            activations=frozenset(a.lower() for a in file.require(row, "activations", where)),
            quant=re.compile(quant) if quant else None, quant_example=example))
    format_ids = {f.id for f in formats}
    rows: list[PathRow] = []
    for index, row in enumerate(data.get("path", [])):
        where = f"[[path]] #{index + 1} ({row.get('format')}, {row.get('engine')})"
        fmt = file.require(row, "format", where)
        names = frozenset() if fmt == "*" else frozenset([fmt] if isinstance(fmt, str) else fmt)
        if not names <= format_ids:
            raise file.fail(f"{where}: format {sorted(names - format_ids)} has no [[format]]",
                            needle=where)
        engine = file.require(row, "engine", where)
        kind = file.require(row, "kind", where)
        path = file.require(row, "path", where)
        scope = row.get("scope", "any")
        better = frozenset(row.get("better", ()))
        checks = ((engine in (*ENGINES, "*"), f"engine {engine!r}"),
                  (kind in KINDS, f"kind {kind!r}"),
                  (scope in (*SCOPES, "any"), f"scope {scope!r}"),
                  (path in PATHS, f"path {path!r}"),
                  (better <= set(PATHS), f"better {sorted(better - set(PATHS))}"))
        problems = [what for ok, what in checks if not ok]
        if kind in ("unsupported", "unknown") and path != "unknown":
            problems.append(f"path {path!r} for kind {kind} (use 'unknown')")
        if problems:
            raise file.fail(f"{where}: {', '.join(problems)} is not a word tracekit knows",
                            needle=where)
        rows.append(PathRow(
            formats=names, engine=engine, scope=scope,
            archs=archs_of(file.require(row, "archs", where), where), path=path, kind=kind,
            kernels=row.get("kernels", ""), better=better, versions=row.get("versions", ""),
            cite=file.require(row, "cite", where), reason=row.get("reason", "")))
    return KernelPathTable(tuple(formats), tuple(rows), tuple(data.get("example", [])))


def declared_format(scheme: LayerScheme) -> FormatRow | None:
    """The ``[[format]]`` row a declared scheme is, or None when the table has none."""
    return next((row for row in kernel_path_table().formats if row.matches(scheme)), None)


def format_row(format_id: str) -> FormatRow | None:
    """The ``[[format]]`` row with this id."""
    return next((row for row in kernel_path_table().formats if row.id == format_id), None)


def layer_scope(layer: str) -> str:
    """Which engine list serves a layer group: the MoE experts' or the dense linear one."""
    return "moe" if layer == "moe_experts" else "linear"


def rank(path: str) -> int:
    """Quality of a path for a quantized declaration: quantized math above weight-only above
    16-bit or wider math. A lower rank than the expected path's is a fallback or degraded."""
    if path in QUANTIZED_PATHS:
        return 2
    if path == "weight_only":
        return 1
    if path in WIDE_PATHS:
        return 0
    return -1  # unknown


def expected_path(layer: LayerDeclaration, arch: str | None,
                  engine: str | None = None) -> ExpectedPath:
    """The expected path of ``layer`` on ``arch`` in ``engine``.

    ``engine`` None: the engine is not known; the answer combines the engines that can run
    the format there (see :func:`combine_engines`). ``arch`` in any spelling
    :func:`tracekit.gpus.parse_arch` reads.
    """
    scope = layer_scope(layer.layer)
    if layer.sixteen_bit:
        return ExpectedPath("bf16", "by_design", "16-bit GEMMs", reason=layer.reason,
                            scope=scope, engine=engine)
    if layer.scheme is None:
        return ExpectedPath("unknown", "unknown", "", reason=(
            f"the group's modules are declared differently ({layer.reason}); only a per-module "
            "attribution could judge it"), scope=scope, engine=engine)
    return scheme_path(layer.scheme, scope, arch, engine)


def scheme_path(scheme: LayerScheme, scope: str, arch: str | None,
                engine: str | None = None) -> ExpectedPath:
    """:func:`expected_path` for one declared scheme in one layer scope."""
    if scheme.path not in QUANTIZED_PATHS and scheme.path != "weight_only":
        if scheme.path == "unknown":
            return ExpectedPath("unknown", "unknown", "", reason=(
                f"{scheme.scheme} {scheme.quant} has no path tracekit knows"), scope=scope,
                engine=engine)
        return ExpectedPath(scheme.path, "by_design", f"{scheme.path.upper()} GEMMs",
                            scope=scope, engine=engine)
    fmt = declared_format(scheme)
    spelled = parse_arch(arch)
    if fmt is None and scheme.weights is None:
        return _capability_only(scheme, scope, spelled, engine)
    if fmt is None:
        return ExpectedPath("unknown", "unknown", "", reason=(
            f"{scheme.scheme} {scheme.quant} (weights {scheme.weights}, activations "
            f"{scheme.activations or '16-bit'}) is no format of rules/{KERNEL_PATHS_FILE}"),
            scope=scope, engine=engine)
    if spelled is None:
        return ExpectedPath("unknown", "unknown", "", reason="the GPU's architecture is unknown",
                            format=fmt.id, family=fmt.family, scope=scope, engine=engine)
    if spelled not in known_archs():
        return ExpectedPath("unknown", "unknown", "",
                            reason=f"{spelled} is not in the capability table",
                            format=fmt.id, family=fmt.family, scope=scope, engine=engine)
    if engine is None:
        return combine_engines([_lookup(fmt, scope, spelled, name) for name in ENGINES])
    if engine not in ENGINES:
        return ExpectedPath("unknown", "unknown", "", reason=(
            f"{engine!r} is not an engine tracekit knows ({', '.join(ENGINES)})"),
            format=fmt.id, family=fmt.family, scope=scope)
    return _lookup(fmt, scope, spelled, engine)


def _capability_only(scheme: LayerScheme, scope: str, arch: str | None,
                     engine: str | None) -> ExpectedPath:
    """A declaration that states a path and no weight format (``--expect fp4``): what the GPU
    computes natively decides, as no engine's format table can."""
    stated = f"{scheme.quant} {scheme.scheme}".strip()
    if scheme.path == "weight_only":
        return ExpectedPath("weight_only", "by_design", "weight-only GEMMs", scope=scope,
                            engine=engine, reason=f"{stated} is weight-only by design")
    if arch is None:
        return ExpectedPath("unknown", "unknown", "", reason="the GPU's architecture is unknown",
                            scope=scope, engine=engine)
    info = arch_info(arch)
    if info is None:
        return ExpectedPath("unknown", "unknown", "", scope=scope, engine=engine,
                            reason=f"{arch} is not in the capability table")
    if scheme.path in info.native:
        return ExpectedPath(scheme.path, "native", f"{scheme.path.upper()} GEMMs", scope=scope,
                            engine=engine, cite=f"rules/_gpus.toml [arch.{arch}]",
                            reason=(f"{arch} computes {scheme.path.upper()} natively (the "
                                    "declaration names no weight format: capability only)"))
    return ExpectedPath("weight_only", "hardware_fallback", "weight-only GEMMs (Marlin)",
                        scope=scope, engine=engine, cite=f"rules/_gpus.toml [arch.{arch}]",
                        reason=(f"{arch} has no native {scheme.path.upper()} (the declaration "
                                "names no weight format: capability only)"))


def _lookup(fmt: FormatRow, scope: str, arch: str, engine: str) -> ExpectedPath:
    for row in kernel_path_table().rows:
        if row.matches(fmt.id, engine, scope, arch):
            return ExpectedPath(
                path=row.path, kind=row.kind, kernels=row.kernels, better=row.better,
                cite=row.cite, reason=row.reason or f"{fmt.label} on {arch}", format=fmt.id,
                family=fmt.family, scope=scope, versions=row.versions, engine=engine)
    return ExpectedPath("unknown", "unknown", "", reason=(
        f"rules/{KERNEL_PATHS_FILE} has no row for {fmt.label} on {arch} in "
        f"{ENGINE_NAMES[engine]}"), format=fmt.id, family=fmt.family, scope=scope,
        engine=engine)


def combine_engines(answers: Iterable[ExpectedPath]) -> ExpectedPath:
    """One answer for an unknown engine from the per-engine answers.

    Engines that refuse the format, or whose choice is unknown, cannot have run it and are
    left out. Of the rest, the lowest-ranked expected path is expected (any of those engines
    may be the one that ran, so none of their legal choices is a fallback), and every path
    another engine would have run beyond it counts as better.
    """
    answers = list(answers)
    usable = [a for a in answers if a.kind not in ("unsupported", "unknown")]
    if not usable:
        first = answers[0]
        reasons = "; ".join(f"{ENGINE_NAMES.get(a.engine or '', a.engine)}: {a.kind}"
                            for a in answers)
        return replace(first, path="unknown", kind="unknown", kernels="", better=frozenset(),
                       engine=None, cite="", versions="",
                       reason=f"no engine tracekit knows can launch it here ({reasons})")
    lowest = min(usable, key=lambda a: rank(a.path))
    better = frozenset().union(*(a.accepted for a in usable)) - {lowest.path}
    better = frozenset(p for p in better if rank(p) >= rank(lowest.path))
    kernels = "; ".join(f"{ENGINE_NAMES[a.engine or '']}: {a.kernels}" for a in usable
                        if a.kernels)
    cites = "; ".join(f"{ENGINE_NAMES[a.engine or '']}: {a.cite}" for a in usable if a.cite)
    engines = ", ".join(ENGINE_NAMES[a.engine or ""] for a in usable)
    return replace(lowest, better=better, kernels=kernels, cite=cites, engine=None,
                   reason=f"{lowest.reason} (the engines that can run it: {engines})",
                   versions="; ".join(f"{ENGINE_NAMES[a.engine or '']} {a.versions}"
                                      for a in usable if a.versions))


def scheme_from_example(example: Mapping[str, Any]) -> LayerScheme:
    """The declared scheme an ``[[example]]`` row (or a test) describes."""
    weights = example.get("weights")
    activations = example.get("activations")
    return LayerScheme(targets=("*",), weights=weights, activations=activations,
                       scheme=str(example.get("scheme", "")), path=_declared_path(activations),
                       quant=str(example.get("quant", (weights or "").upper())))


def _declared_path(activations: str | None) -> str:
    if activations is None:
        return "weight_only"
    if activations in ("nvfp4", "mxfp4", "fp4"):
        return "fp4"
    if activations.startswith(("fp8", "mxfp8")):
        return "fp8"
    return "int8"  # int8 and llama.cpp's q8_1
