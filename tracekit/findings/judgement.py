"""The per-phase judgement, made once and read by the findings and the verdict sentences.

*Declared* (the checkpoint, or ``--expect``) ∩ *achievable* (the GPU's capability) against
*observed* (the classified GEMM time of the phase): a fallback is observed weight-only or
16-bit math where the declared quantized path is native on the GPU; where the GPU lacks it
the same kernels are "hardware-limited" (FP8 Marlin on an A100); a weight-only checkpoint
running Marlin is by design. Each phase gets one state, a key of ``[verdict]`` in
``rules/_findings.toml``, with the fields its sentence and findings are written from.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tracekit.findings.model import FindingContext, PathTime
from tracekit.findings.rules import FindingRules
from tracekit.gpus import native_paths, short_gpu_name
from tracekit.vocabulary import PHASES, QUANTIZED_PATHS, WIDE_PATHS

SIXTEEN_BIT_PATHS = frozenset(WIDE_PATHS)
_WEIGHT_FORMATS_NATIVE = {  # weight format of a weight-only checkpoint → path that would use it
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4": "fp4",
    "fp8": "fp8",
    "mxfp8": "fp8",
}


@dataclass(frozen=True)
class PhaseTime:
    phase: str
    total: int
    by_path: dict[str, int]
    groups: tuple[PathTime, ...]

    def ns(self, paths: Iterable[str]) -> int:
        return sum(self.by_path.get(p, 0) for p in paths)

    @property
    def known(self) -> int:
        return self.total - self.by_path.get("unknown", 0)

    def dominant(self, exclude: Iterable[str] = ()) -> tuple[str, int]:
        skip = set(exclude)
        candidates = [(ns, p) for p, ns in self.by_path.items() if p not in skip and ns > 0]
        if not candidates:
            return "unknown", 0
        ns, path = max(candidates)
        return path, ns


@dataclass(frozen=True)
class Judgement:
    phase: str
    state: str  # a key of [verdict] in rules/_findings.toml
    observed: str
    share: float
    fields: dict[str, Any]


def phase_times(gemm: Sequence[PathTime]) -> list[PhaseTime]:
    grouped: dict[str, list[PathTime]] = defaultdict(list)
    for row in gemm:
        grouped[row.phase or "unattributed"].append(row)
    result = []
    order = {p: i for i, p in enumerate(PHASES)}
    for phase in sorted(grouped, key=lambda p: order.get(p, len(order))):
        rows = grouped[phase]
        by_path: dict[str, int] = defaultdict(int)
        for row in rows:
            by_path[row.path] += row.ns
        total = sum(by_path.values())
        if total > 0:
            result.append(PhaseTime(phase, total, dict(by_path), tuple(rows)))
    return result


def judged_phases(phases: list[PhaseTime], rules: FindingRules) -> list[PhaseTime]:
    """Phases worth a verdict: a sliver of unattributed GEMM time next to real phases (warm-up,
    GEMMs outside step markers) is left out, so 16-bit odds and ends there cannot pose as a
    fallback."""
    grand = sum(p.total for p in phases)
    minor = rules.setting("minor_unattributed_share", 0.1)
    if len(phases) < 2:
        return phases
    return [p for p in phases if p.phase != "unattributed" or p.total >= minor * grand]


def detail(phase: PhaseTime, paths: Iterable[str], rules: FindingRules) -> str:
    """The " (Marlin, BF16 math)" part: libraries that ran these paths, and the weight-only math."""
    wanted = set(paths)
    libraries: dict[str, int] = defaultdict(int)
    math: dict[str, int] = defaultdict(int)
    for row in phase.groups:
        if row.path not in wanted:
            continue
        if row.library:
            libraries[row.library] += row.ns
        if row.path == "weight_only" and row.activations:
            math[row.activations] += row.ns
    ranked = sorted(libraries.items(), key=lambda kv: -kv[1])[:2]
    parts = [rules.library(lib) for lib, _ in ranked]
    if math:
        parts.append(f"{max(math, key=lambda k: math[k]).upper()} math")
    return f" ({', '.join(parts)})" if parts else ""


def _gpu_fields(ctx: FindingContext) -> dict[str, str]:
    arch = ctx.gpu_arch or "unknown arch"
    gpu = short_gpu_name(ctx.gpu_name) if ctx.gpu_name else "GPU"  # "the GPU (sm120)"
    return {"gpu": gpu, "arch": arch}


def _observed_words(paths: Iterable[str]) -> str:
    words = list(paths)
    return " + ".join(words) if words else "nothing"


def judge(phase: PhaseTime, ctx: FindingContext, rules: FindingRules) -> Judgement:
    decl = ctx.declaration
    min_share = rules.setting("fallback_min_share", 0.05)
    absent_share = rules.setting("native_absent_share", 0.02)
    unused_min = rules.setting("native_unused_min_share", 0.05)
    base: dict[str, Any] = {"phase": phase.phase, **_gpu_fields(ctx)}

    def judgement(state: str, paths: Sequence[str], ns: int, **extra: Any) -> Judgement:
        share = ns / phase.total if phase.total else 0.0
        observed = _observed_words(paths)
        fields = {
            **base,
            "share": share,
            "observed": observed,
            "detail": detail(phase, paths, rules),
            **extra,
        }
        return Judgement(phase.phase, state, observed, share, fields)

    dominant, dominant_ns = phase.dominant()
    if dominant == "unknown" and dominant_ns / phase.total > 0.5:
        return judgement("unknown", ["unknown"], dominant_ns)
    known_dominant, known_ns = phase.dominant(exclude=("unknown",))
    if decl is None:
        return judgement("no_declaration", [known_dominant], known_ns)

    declared = decl.label
    base["declarer"] = "--expect states" if decl.method == "expect" else "the checkpoint declares"
    native = native_paths(ctx.gpu_arch) if ctx.gpu_arch else frozenset()
    capability_known = bool(native)
    weight_only_ns = phase.by_path.get("weight_only", 0)
    quantized_ns = phase.ns(QUANTIZED_PATHS)
    native_absent = quantized_ns <= absent_share * max(phase.known, 1)

    if decl.path in QUANTIZED_PATHS:
        native_word = decl.path.upper()
        # Weight-only kernels are the fallback; 16-bit GEMMs alone are (lm_head, routers and other
        # excluded layers stay 16-bit) unless no weight-only and no native kernel ran at all —
        # then the engine dequantized to 16-bit (emulation). In a mixed checkpoint the weight-only
        # layers are by design, so only the native path's absence reveals a fallback.
        has_weight_only_layers = any(layer.path == "weight_only" for layer in decl.layers)
        weight_only_counts = weight_only_ns / phase.total >= min_share
        if has_weight_only_layers and not native_absent:
            fallback_paths: list[str] = []
        elif weight_only_counts:
            fallback_paths = ["weight_only"]
        else:
            fallback_paths = sorted(SIXTEEN_BIT_PATHS) if native_absent else []
        fallback_ns = phase.ns(fallback_paths)
        observed_paths = [p for p in fallback_paths if phase.by_path.get(p, 0) > 0]
        if fallback_ns / phase.total >= min_share:
            if not capability_known:
                return judgement(
                    "unverified", observed_paths, fallback_ns, declared=declared, native=native_word
                )
            if decl.path in native:
                return judgement(
                    "fallback", observed_paths, fallback_ns, declared=declared, native=native_word
                )
            return judgement(
                "hardware_limited",
                observed_paths,
                fallback_ns,
                declared=declared,
                native=native_word,
            )
        accepted = sorted(p for p in QUANTIZED_PATHS if phase.by_path.get(p, 0) > 0)
        if accepted:
            return judgement("confirmed", accepted, quantized_ns, declared=declared)
        return judgement("as_declared", [known_dominant], known_ns, declared=declared)

    if decl.path == "weight_only":
        # Quantized activations where the checkpoint declares none (gpt-oss MXFP4 run as
        # MXFP4 x MXFP8 on sm100, llama.cpp native FP4): faster than declared, never a fallback.
        better = sorted(p for p in QUANTIZED_PATHS if phase.by_path.get(p, 0) > 0)
        if better and phase.ns(better) >= weight_only_ns:
            return judgement("opted_in", better, phase.ns(better), declared=declared)
        if weight_only_ns / phase.total >= unused_min:
            possible = _WEIGHT_FORMATS_NATIVE.get(decl.weights or "")
            if possible and possible in native:
                return judgement(
                    "native_unused",
                    ["weight_only"],
                    weight_only_ns,
                    declared=declared,
                    native=possible.upper(),
                )
            return judgement(
                "weight_only_declared", ["weight_only"], weight_only_ns, declared=declared
            )
        return judgement("as_declared", [known_dominant], known_ns, declared=declared)

    return judgement("as_declared", [known_dominant], known_ns, declared=declared)


@dataclass(frozen=True)
class RunJudgement:
    """Every judged phase of a run with its judgement, in phase order."""

    phases: tuple[PhaseTime, ...]
    judgements: tuple[Judgement, ...]


def judge_run(ctx: FindingContext, rules: FindingRules) -> RunJudgement:
    """Judge each phase with GEMM time worth a verdict, once."""
    phases = judged_phases(phase_times(ctx.gemm), rules)
    return RunJudgement(tuple(phases), tuple(judge(phase, ctx, rules) for phase in phases))

