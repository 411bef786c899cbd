"""The findings of a run: each rule of ``rules/_findings.toml`` and when it fires.

The code decides *when* (the conditions named by each rule's ``when``); the data decides the
id, severity and wording. The expectation findings (silent fallback and its kin) come from the
run's per-phase judgement (``judgement.py``); the others from the aggregated steps, NVTX
counts, link counts, kernel architectures, attention kernels and engine log lines.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from tracekit.findings.judgement import Judgement, PhaseTime, RunJudgement, judge_run
from tracekit.findings.model import AttentionTime, Finding, FindingContext, KernelTime, LayerVerdict
from tracekit.findings.outcomes import SIXTEEN_BIT_PATHS
from tracekit.findings.rules import SEVERITY_ORDER, FindingRules, load_rules
from tracekit.findings.wording import verdict_fields
from tracekit.formatting import counted
from tracekit.gpus import kernel_archs, native_paths, runs_on
from tracekit.vocabulary import QUANTIZED_PATHS

_FALLBACK_LOG_KINDS = frozenset({"fallback-warning", "emulation"})
_QUANT_WORDS = ("fp8", "fp4", "e4m3", "e5m2", "e2m1", "int8", "nvfp4", "mxfp4")



def evaluate(ctx: FindingContext, judged: RunJudgement | None = None) -> list[Finding]:
    """Every finding for one run, most severe first (then in rule order).

    ``judged``: the run's per-phase judgement when the caller made it already (the verdict
    sentences read the same one).
    """
    rules = load_rules()
    judged = judged if judged is not None else judge_run(ctx, rules)
    phases = list(judged.phases)
    findings: list[Finding] = []
    findings += _declaration_findings(ctx, rules)
    findings += _expectation_findings(list(judged.judgements), phases, ctx, rules)
    findings += _graph_findings(ctx, rules)
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


#: layer-verdict outcome → the finding it raises (per phase and outcome)
_OUTCOME_RULES = {
    "silent_fallback": "silent-fallback",
    "logged_fallback": "logged-fallback",
    "degraded": "degraded-path",
    "mismatch": "path-mismatch",
    "hardware_limited": "hardware-limited",
    "engine_limited": "engine-limited",
    "better": "better-path",
    "undetermined": "layers-undetermined",
}
#: the findings of a fallback the roofline re-costs on the expected path
FALLBACK_FINDINGS = ("silent-fallback", "logged-fallback", "degraded-path",
                     "fallback-unverified")


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
    judgements: Sequence[Judgement],
    phases: Sequence[PhaseTime],
    ctx: FindingContext,
    rules: FindingRules,
) -> list[Finding]:
    """One finding per (phase, outcome) over the layer verdicts that carry at least
    ``fallback_min_share`` of the phase's GEMM time (``native-unused`` per phase)."""
    findings = []
    min_share = rules.setting("fallback_min_share", 0.05)
    for judgement, phase in zip(judgements, phases, strict=True):
        by_outcome: dict[str, list[LayerVerdict]] = defaultdict(list)
        for verdict in judgement.verdicts:
            if verdict.outcome in _OUTCOME_RULES:
                by_outcome[verdict.outcome].append(verdict)
        wanted: list[tuple[str, list[LayerVerdict], str]] = []
        for outcome, rows in by_outcome.items():
            if sum(v.share for v in rows) < min_share:
                continue
            rule_id = _OUTCOME_RULES[outcome]
            if outcome == "undetermined":
                unverified = [v for v in rows if v.expected is not None
                              and v.expected.kind == "unknown"]
                rest = [v for v in rows if v not in unverified]
                if unverified:
                    wanted.append(("fallback-unverified", unverified, outcome))
                rows = [v for v in rest if v.ran in SIXTEEN_BIT_PATHS]
                if not rows:
                    continue
            wanted.append((rule_id, rows, outcome))
        if judgement.state == "native_unused":
            rows = [v for v in judgement.verdicts if v.ran == "weight_only"]
            wanted.append(("native-unused", rows, "as_declared"))
        for rule_id, rows, outcome in wanted:
            fields = verdict_fields(phase.phase, rows, ctx, rules,
                                    state="native_unused" if rule_id == "native-unused"
                                    else "")
            logged = next((v.log for v in rows if v.log is not None), None)
            if logged is not None:
                text = logged.text if len(logged.text) <= 100 else logged.text[:97] + "..."
                fields.update(line=logged.line_no, text=text)
            severity = max((v.severity for v in rows if v.severity),
                           key=lambda s: SEVERITY_ORDER[s], default=None)
            observed_paths = [p for p in fields["observed"].split(" + ") if p]
            evidence = _expectation_evidence(phase, rows, observed_paths, outcome, ctx)
            finding = _make(rules, rule_id, phase=phase.phase, share=fields["share"],
                            evidence=evidence, fields=fields)
            if severity is not None and rule_id == "layers-undetermined":
                finding = replace(finding, severity=severity)
            findings.append(finding)
    return findings


def _expectation_evidence(phase: PhaseTime, rows: Sequence[LayerVerdict],
                          observed_paths: Sequence[str], outcome: str,
                          ctx: FindingContext) -> list[dict[str, Any]]:
    decl = ctx.declaration
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
    evidence += [{"source": "layer", **verdict.as_dict()} for verdict in rows]
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
        declared = next((v.declared.scheme for v in rows
                         if v.declared is not None and v.declared.scheme is not None), None)
        # What the judgement compared, in words other stages can read back (the
        # roofline's fallback estimate re-costs the observed paths on the expected one).
        evidence.append(
            {
                "source": "judgement",
                "state": outcome,
                "observed": [p for p in observed_paths if p in phase.by_path],
                "expected": declared.path if declared is not None else decl.path,
                "weights": declared.weights if declared is not None else decl.weights,
                "activations": (declared.activations if declared is not None
                                else decl.activations),
                "layers": sorted({v.layer for v in rows}),
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
    return evidence


def _declaration_findings(ctx: FindingContext, rules: FindingRules) -> list[Finding]:
    """A --model that could not be read, or a declaration that was not understood."""
    findings = []
    if ctx.model_error:
        findings.append(_make(rules, "model-unreadable", phase=None, share=None,
                              evidence=[{"source": "checkpoint", "problem": ctx.model_error}],
                              fields={"problem": ctx.model_error}))
    decl = ctx.declaration
    why = getattr(decl, "not_understood", None) if decl is not None else None
    if decl is not None and why:
        findings.append(_make(rules, "declaration-not-understood", phase=None, share=None,
                              evidence=[{"source": "checkpoint", "file": decl.source,
                                         "method": decl.method, "why": why}],
                              fields={"file": decl.source or "--model", "why": why}))
    return findings


def _graph_findings(ctx: FindingContext, rules: FindingRules) -> list[Finding]:
    gap = ctx.graph_gap
    if gap is None or gap.graph_launches <= 0:
        return []
    return [_make(rules, "graph-kernels-missing", phase=None, share=None,
                  evidence=[{"source": "graphs", "graph_launches": gap.graph_launches,
                             "steps_without_kernels": gap.steps_without_kernels}],
                  fields={"launches": gap.graph_launches, "steps": gap.steps_without_kernels})]


def _unknown_findings(
    phases: Sequence[PhaseTime], ctx: FindingContext, rules: FindingRules
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
                fields={"steps": counted(ctx.heuristic_steps, "heuristic step")},
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
    if any(f.rule in {*FALLBACK_FINDINGS, "hardware-limited"} for f in findings):
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
