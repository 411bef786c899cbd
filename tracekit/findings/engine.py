"""Compare what ran with what was expected: findings and one verdict sentence per phase.

Pure functions over a :class:`FindingContext` (already-aggregated GEMM time per phase and
path, the checkpoint :class:`~tracekit.expect.checkpoint.Declaration`, the GPU architecture,
log evidence): no database, no I/O, so every judgement is unit-testable. ``stage.py`` builds
the context from the store.

The judgement follows engines.md §5.2: *declared* (checkpoint) ∩ *achievable* (GPU capability)
vs *observed* (kernel classifications). A fallback is observed weight-only/16-bit math where the
declared quantized path is native on the GPU; where the GPU lacks it the same kernels are
"hardware-limited" (FP8 Marlin on an A100); a weight-only checkpoint running Marlin is by design.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracekit.errors import RuleFileError
from tracekit.expect.checkpoint import QUANTIZED_PATHS, Declaration
from tracekit.expect.gpu import kernel_archs, native_paths, runs_on, short_gpu_name
from tracekit.expect.logs import LogEvidence
from tracekit.findings.rules import SEVERITY_ORDER, FindingRules, load_rules
from tracekit.vocabulary import PHASES, WIDE_PATHS

__all__ = [
    "SEVERITY_ORDER",
    "AttentionTime",
    "Finding",
    "FindingContext",
    "KernelTime",
    "PathTime",
    "evaluate",
    "verdict_sentences",
]

SIXTEEN_BIT_PATHS = frozenset(WIDE_PATHS)
_FALLBACK_LOG_KINDS = frozenset({"fallback-warning", "emulation"})
_WEIGHT_FORMATS_NATIVE = {  # weight format of a weight-only checkpoint → path that would use it
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4": "fp4",
    "fp8": "fp8",
    "mxfp8": "fp8",
}
_QUANT_WORDS = ("fp8", "fp4", "e4m3", "e5m2", "e2m1", "int8", "nvfp4", "mxfp4")


@dataclass(frozen=True)
class PathTime:
    """GEMM time of one (phase, path, library, activations) group."""

    phase: str
    path: str
    ns: int
    library: str | None = None
    activations: str | None = None


@dataclass(frozen=True)
class AttentionTime:
    """Attention-kernel time of one (path, weights, activations) group, with an example name."""

    path: str
    ns: int
    weights: str | None = None
    activations: str | None = None
    example: str | None = None
    quantized_name: bool = False  # a kernel name in the group carries fp8/e4m3/fp4… (quantized KV)


@dataclass(frozen=True)
class KernelTime:
    """One unique kernel name on one device: its time, whether it is a GEMM, its path."""

    name: str
    ns: int
    device_arch: str | None = None
    is_gemm: bool = False
    phase: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class Finding:
    """A verdict item. ``share`` is the share of GEMM time affected (0..1) when it applies."""

    rule: str
    severity: str
    message: str
    phase: str | None = None
    share: float | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    hint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json`` findings list)."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "phase": self.phase,
            "share": self.share,
            "hint": self.hint,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class FindingContext:
    """Everything the findings need, already aggregated (no per-record data)."""

    gemm: tuple[PathTime, ...] = ()
    attention: tuple[AttentionTime, ...] = ()
    kernels: tuple[KernelTime, ...] = ()  # unique names (for arch tokens and examples)
    declaration: Declaration | None = None
    gpu_arch: str | None = None
    gpu_name: str | None = None
    marker_steps: int = 0
    heuristic_steps: int = 0
    nvtx_domains: tuple[str, ...] = ()
    nvtx_ranges: int = 0
    log_evidence: tuple[LogEvidence, ...] = ()
    unknown_threshold: float = 0.2
    #: ids the ingest found naming several launches / ops (``ambiguous_links`` of the run meta)
    ambiguous_correlation_ids: int = 0
    ambiguous_external_ids: int = 0


# ---------------------------------------------------------------------------------------------
# Per-phase judgement, shared by findings and verdict sentences


@dataclass(frozen=True)
class _PhaseTime:
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
class _Judgement:
    phase: str
    state: str  # a key of [verdict] in rules/_findings.toml
    observed: str
    share: float
    fields: dict[str, Any]


def _phases(gemm: Sequence[PathTime]) -> list[_PhaseTime]:
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
            result.append(_PhaseTime(phase, total, dict(by_path), tuple(rows)))
    return result


def _judged_phases(phases: list[_PhaseTime], rules: FindingRules) -> list[_PhaseTime]:
    """Phases worth a verdict: a sliver of unattributed GEMM time next to real phases (warm-up,
    GEMMs outside step markers) is left out, so 16-bit odds and ends there cannot pose as a
    fallback."""
    grand = sum(p.total for p in phases)
    minor = rules.setting("minor_unattributed_share", 0.1)
    if len(phases) < 2:
        return phases
    return [p for p in phases if p.phase != "unattributed" or p.total >= minor * grand]


def _detail(phase: _PhaseTime, paths: Iterable[str], rules: FindingRules) -> str:
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


def _judge(phase: _PhaseTime, ctx: FindingContext, rules: FindingRules) -> _Judgement:
    decl = ctx.declaration
    min_share = rules.setting("fallback_min_share", 0.05)
    absent_share = rules.setting("native_absent_share", 0.02)
    unused_min = rules.setting("native_unused_min_share", 0.05)
    base: dict[str, Any] = {"phase": phase.phase, **_gpu_fields(ctx)}

    def judgement(state: str, paths: Sequence[str], ns: int, **extra: Any) -> _Judgement:
        share = ns / phase.total if phase.total else 0.0
        observed = _observed_words(paths)
        fields = {
            **base,
            "share": share,
            "observed": observed,
            "detail": _detail(phase, paths, rules),
            **extra,
        }
        return _Judgement(phase.phase, state, observed, share, fields)

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


# ---------------------------------------------------------------------------------------------
# Findings


def evaluate(ctx: FindingContext) -> list[Finding]:
    """Every finding for one run, most severe first (then in rule order)."""
    rules = load_rules()
    findings: list[Finding] = []
    phases = _judged_phases(_phases(ctx.gemm), rules)
    judgements = [_judge(phase, ctx, rules) for phase in phases]
    findings += _expectation_findings(judgements, phases, ctx, rules)
    findings += _unknown_findings(phases, ctx, rules)
    findings += _step_findings(ctx, rules)
    findings += _nvtx_findings(ctx, rules)
    findings += _link_findings(ctx, rules)
    findings += _arch_findings(ctx, rules)
    findings += _kv_cache_findings(ctx, rules)
    findings += _log_findings(findings, ctx, rules)
    order = {rule_id: i for i, rule_id in enumerate(rules.rules)}
    return sorted(findings, key=lambda f: (-SEVERITY_ORDER[f.severity], order.get(f.rule, 0)))


def _make(
    rules: FindingRules,
    rule_id: str,
    *,
    phase: str | None,
    share: float | None,
    evidence: list[dict[str, Any]],
    fields: dict[str, Any] | None = None,
) -> Finding:
    rule = rules.rule(rule_id)
    if rule.hint:  # the findings table has no hint column: keep it with the evidence
        evidence = [*evidence, {"source": "hint", "text": rule.hint}]
    return Finding(
        rule=rule.id,
        severity=rule.severity,
        message=rule.render(**{"phase": phase, "share": share, **(fields or {})}),
        phase=phase,
        share=share,
        evidence=evidence,
        hint=rule.hint,
    )


_STATE_RULES = {
    "fallback": "silent-fallback",
    "unverified": "fallback-unverified",
    "hardware_limited": "hardware-limited",
    "native_unused": "native-unused",
}


def _top_kernels(
    ctx: FindingContext, phase: str, paths: Iterable[str], limit: int = 3
) -> list[dict[str, Any]]:
    wanted = set(paths)
    rows = [
        k
        for k in ctx.kernels
        if k.is_gemm and (k.phase or "unattributed") == phase and k.path in wanted
    ]
    rows.sort(key=lambda k: -k.ns)
    return [{"source": "kernel", "name": k.name, "path": k.path, "ns": k.ns} for k in rows[:limit]]


def _expectation_findings(
    judgements: Sequence[_Judgement],
    phases: Sequence[_PhaseTime],
    ctx: FindingContext,
    rules: FindingRules,
) -> list[Finding]:
    findings = []
    decl = ctx.declaration
    for judgement, phase in zip(judgements, phases, strict=True):
        rule_id = _STATE_RULES.get(judgement.state)
        if rule_id is None:
            continue
        observed_paths = judgement.observed.split(" + ")
        evidence: list[dict[str, Any]] = [
            {
                "source": "gemm_time",
                "phase": phase.phase,
                "path": p,
                "ns": phase.by_path.get(p, 0),
                "share": phase.by_path.get(p, 0) / phase.total,
            }
            for p in sorted(phase.by_path, key=lambda p: -phase.by_path[p])
        ]
        evidence += _top_kernels(ctx, phase.phase, observed_paths)
        if decl is not None:
            evidence.append(
                {
                    "source": "checkpoint",
                    "format": decl.format,
                    "path": decl.path,
                    "file": decl.source,
                    "kv_cache": decl.kv_cache,
                }
            )
            # What the judgement compared, in words other stages can read back (the
            # roofline's fallback estimate re-costs the observed paths on the expected one).
            evidence.append(
                {
                    "source": "judgement",
                    "state": judgement.state,
                    "observed": [p for p in observed_paths if p in phase.by_path],
                    "expected": decl.path,
                    "weights": decl.weights,
                    "activations": decl.activations,
                }
            )
        if ctx.gpu_arch:
            evidence.append(
                {
                    "source": "gpu",
                    "arch": ctx.gpu_arch,
                    "name": ctx.gpu_name,
                    "native": sorted(native_paths(ctx.gpu_arch)),
                }
            )
        evidence += [e.as_dict() for e in ctx.log_evidence if e.kind != "device"]
        findings.append(
            _make(
                rules,
                rule_id,
                phase=phase.phase,
                share=judgement.share,
                evidence=evidence,
                fields=judgement.fields,
            )
        )
    return findings


def _unknown_findings(
    phases: Sequence[_PhaseTime], ctx: FindingContext, rules: FindingRules
) -> list[Finding]:
    findings = []
    for phase in phases:
        share = phase.by_path.get("unknown", 0) / phase.total
        if share <= ctx.unknown_threshold:
            continue
        top = _top_kernels(ctx, phase.phase, ["unknown"])
        examples = ", ".join(f"`{k['name'][:80]}`" for k in top[:2]) or "unnamed kernels"
        findings.append(
            _make(
                rules,
                "unknown-gemm-time",
                phase=phase.phase,
                share=share,
                evidence=top,
                fields={"threshold": ctx.unknown_threshold, "examples": examples},
            )
        )
    return findings


def _step_findings(ctx: FindingContext, rules: FindingRules) -> list[Finding]:
    if ctx.marker_steps > 0 or not (ctx.gemm or ctx.kernels):
        return []
    if ctx.heuristic_steps > 0:
        return [
            _make(
                rules,
                "phases-heuristic",
                phase=None,
                share=None,
                evidence=[{"source": "steps", "marker": 0, "heuristic": ctx.heuristic_steps}],
                fields={"steps": ctx.heuristic_steps},
            )
        ]
    return [
        _make(
            rules,
            "phases-missing",
            phase=None,
            share=None,
            evidence=[{"source": "steps", "marker": 0, "heuristic": 0}],
        )
    ]


def _nvtx_findings(ctx: FindingContext, rules: FindingRules) -> list[Finding]:
    if not ctx.nvtx_domains or ctx.nvtx_ranges > 0:
        return []
    domains = ", ".join(f"'{d}'" for d in ctx.nvtx_domains[:5])
    return [
        _make(
            rules,
            "nvtx-ranges-lost",
            phase=None,
            share=None,
            evidence=[{"source": "nvtx", "domains_created": list(ctx.nvtx_domains), "ranges": 0}],
            fields={"domains": domains},
        )
    ]


def _link_findings(ctx: FindingContext, rules: FindingRules) -> list[Finding]:
    correlation, external = ctx.ambiguous_correlation_ids, ctx.ambiguous_external_ids
    if not correlation and not external:
        return []
    return [
        _make(
            rules,
            "ambiguous-links",
            phase=None,
            share=None,
            evidence=[{"source": "ingest", "correlation_ids": correlation,
                       "external_ids": external}],
            fields={"correlation_ids": correlation, "external_ids": external},
        )
    ]


def _arch_findings(ctx: FindingContext, rules: FindingRules) -> list[Finding]:
    mismatched: list[tuple[KernelTime, str]] = []
    for kernel in ctx.kernels:
        device_arch = kernel.device_arch or ctx.gpu_arch
        if not device_arch:
            continue
        for built_for in kernel_archs(kernel.name):
            if not runs_on(built_for, device_arch):
                mismatched.append((kernel, built_for.token))
                break
    if not mismatched:
        return []
    gemm_total = sum(k.ns for k in ctx.kernels if k.is_gemm)
    gemm_bad = sum(k.ns for k, _ in mismatched if k.is_gemm)
    share = gemm_bad / gemm_total if gemm_total else None
    mismatched.sort(key=lambda kt: -kt[0].ns)
    first, token = mismatched[0]
    device_arch = first.device_arch or ctx.gpu_arch or "?"
    evidence = [
        {
            "source": "kernel",
            "name": k.name,
            "token": t,
            "device_arch": k.device_arch or ctx.gpu_arch,
            "ns": k.ns,
        }
        for k, t in mismatched[:10]
    ]
    names = {k.name for k, _ in mismatched}
    return [
        _make(
            rules,
            "kernel-arch-mismatch",
            phase=None,
            share=share,
            evidence=evidence,
            fields={
                "count": len(names),
                "arch": device_arch,
                "example": f"`{first.name[:80]}`",
                "token": token,
            },
        )
    ]


def _is_quantized_kv(row: AttentionTime) -> bool:
    """Whether an attention group reads a quantized KV cache: its path, operand types or kernel
    names say so (a 16-bit path with an fp8 name is FP8 KV dequantized into 16-bit math)."""
    typed = f"{row.weights or ''} {row.activations or ''}".lower()
    if (
        row.path in QUANTIZED_PATHS
        or row.quantized_name
        or any(word in typed for word in _QUANT_WORDS)
    ):
        return True
    if row.path in SIXTEEN_BIT_PATHS:
        return False
    return any(word in (row.example or "").lower() for word in _QUANT_WORDS)


def _kv_cache_findings(ctx: FindingContext, rules: FindingRules) -> list[Finding]:
    decl = ctx.declaration
    if decl is None or not decl.kv_cache or not ctx.attention:
        return []
    quantized = sum(r.ns for r in ctx.attention if _is_quantized_kv(r))
    sixteen = [r for r in ctx.attention if r.path in SIXTEEN_BIT_PATHS and not _is_quantized_kv(r)]
    sixteen_ns = sum(r.ns for r in sixteen)
    total = sum(r.ns for r in ctx.attention)
    if quantized > 0 or sixteen_ns == 0 or total == 0:
        return []
    sixteen.sort(key=lambda r: -r.ns)
    examples = ", ".join(f"`{(r.example or r.path)[:60]}`" for r in sixteen[:2])
    evidence = [
        {"source": "attention_time", "path": r.path, "ns": r.ns, "example": r.example}
        for r in sixteen[:5]
    ]
    evidence.append({"source": "checkpoint", "kv_cache": decl.kv_cache, "file": decl.source})
    return [
        _make(
            rules,
            "kv-cache-16bit",
            phase=None,
            share=sixteen_ns / total,
            evidence=evidence,
            fields={"kv": decl.kv_cache.upper(), "examples": examples},
        )
    ]


def _log_findings(
    findings: Sequence[Finding], ctx: FindingContext, rules: FindingRules
) -> list[Finding]:
    fallback_lines = [e for e in ctx.log_evidence if e.kind in _FALLBACK_LOG_KINDS]
    if not fallback_lines:
        return []
    if any(
        f.rule in {"silent-fallback", "fallback-unverified", "hardware-limited"} for f in findings
    ):
        return []
    first = fallback_lines[0]
    text = first.text if len(first.text) <= 100 else first.text[:97] + "..."
    return [
        _make(
            rules,
            "log-fallback-unconfirmed",
            phase=None,
            share=None,
            evidence=[e.as_dict() for e in fallback_lines],
            fields={"line": first.line_no, "text": text},
        )
    ]


# ---------------------------------------------------------------------------------------------
# Verdict


def verdict_sentences(ctx: FindingContext) -> list[str]:
    """One sentence per phase with GEMM time, e.g. "decode: 94% of GEMM time ran weight_only
    (Marlin, BF16 math) although the checkpoint declares W4A4 NVFP4 and the RTX 5090 (sm120)
    computes FP4 natively — silent fallback."
    """
    rules = load_rules()
    phases = _judged_phases(_phases(ctx.gemm), rules)
    if not phases:
        return [rules.verdict["no_gemm"]]
    sentences = []
    for phase in phases:
        judgement = _judge(phase, ctx, rules)
        template = rules.verdict[judgement.state]
        try:
            sentences.append(" ".join(template.format(**judgement.fields).split()))
        except KeyError as exc:  # a template naming a field this state does not provide
            raise RuleFileError(
                f"rules/_findings.toml: [verdict] {judgement.state}: unknown field {exc}"
            ) from exc
    return sentences
