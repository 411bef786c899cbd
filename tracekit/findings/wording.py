"""The words of the judgement: the fields every verdict sentence and finding is written from.

"94% of GEMM time" or "the MoE experts (71% of GEMM time)" (``subject``), the paths that ran
with their libraries and weight-only math (" (Marlin, BF16 math)"), the declared format and
the native path of the layers spoken of, and the other layers' readings that follow a phase's
headline ("; attention (20%) ran fp8 as declared; lm_head (9%) ran bf16 as excluded").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from tracekit.expect.checkpoint import Declaration
from tracekit.findings.model import FindingContext, LayerVerdict
from tracekit.findings.rules import FindingRules
from tracekit.gpus import native_paths, short_gpu_name

_WEIGHT_FORMATS_NATIVE = {  # weight format of a weight-only layer → path that would use it
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4": "fp4",
    "fp8": "fp8",
    "mxfp8": "fp8",
}


def gpu_fields(ctx: FindingContext) -> dict[str, str]:
    arch = ctx.gpu_arch or "unknown arch"
    gpu = short_gpu_name(ctx.gpu_name) if ctx.gpu_name else "GPU"  # "the GPU (sm120)"
    return {"gpu": gpu, "arch": arch}


def phase_words(phase: str, ctx: FindingContext, rules: FindingRules) -> str:
    """How a phase opens its sentence: its word, or — for a run with no steps at all (a
    training job, a plain script) — the words saying the whole run is judged as one."""
    if phase == "unattributed" and not ctx.marker_steps and not ctx.heuristic_steps:
        return rules.phase_words.get("whole_run", phase)
    return rules.phase_words.get(phase, phase)


def verdict_fields(phase: str, rows: Sequence[LayerVerdict], ctx: FindingContext,
                   rules: FindingRules, *, state: str = "") -> dict[str, Any]:
    """The template fields of a sentence about ``rows`` (cells of one phase): ``subject``,
    ``share``, ``observed``, ``detail``, ``declarer``, ``declared``, ``native``, ``gpu``,
    ``arch``, and ``expected``/``kernels`` of the expected path."""
    decl = ctx.declaration
    fields: dict[str, Any] = {"phase": phase_words(phase, ctx, rules), **gpu_fields(ctx)}
    if decl is not None:
        fields["declarer"] = ("--expect states" if decl.method == "expect"
                              else "the checkpoint declares")
        fields["declared"] = decl.label
    paths = sorted({v.ran for v in rows}, key=lambda p: -sum(v.ns for v in rows if v.ran == p))
    share = sum(v.share for v in rows)
    expected = [v.expected for v in rows if v.expected is not None]
    fields.update({
        "share": share,
        "subject": _subject(rows, share, rules),
        "observed": " + ".join(paths) if paths else "nothing",
        "detail": _detail(rows, rules),
        "expected": expected[0].path if expected else "unknown",
        "kernels": expected[0].kernels if expected else "",
        **_native_fields(rows, decl, state),
    })
    if state == "native_unused":
        fields["native"] = (native_possible(rows, ctx) or "").upper()
    return fields


def native_possible(rows: Sequence[LayerVerdict], ctx: FindingContext) -> str | None:
    """For weight-only-by-design layers that ran weight-only: the path the GPU could compute
    their weight format natively with (``native-unused``)."""
    if not ctx.gpu_arch:
        return None
    native = native_paths(ctx.gpu_arch)
    for verdict in rows:
        scheme = verdict.declared.scheme if verdict.declared else None
        if verdict.ran == "weight_only" and scheme is not None and scheme.path == "weight_only":
            possible = _WEIGHT_FORMATS_NATIVE.get(scheme.weights or "")
            if possible and possible in native:
                return possible
    decl = ctx.declaration
    if decl is not None and decl.path == "weight_only":
        possible = _WEIGHT_FORMATS_NATIVE.get(decl.weights or "")
        if possible and possible in native and any(v.ran == "weight_only" for v in rows):
            return possible
    return None


def _native_fields(rows: Sequence[LayerVerdict], decl: Declaration | None,
                   state: str) -> dict[str, str]:
    """``native`` (the path word the GPU computes natively, upper case) and ``declared`` of
    the layers the headline speaks of."""
    fields: dict[str, str] = {}
    labels = [label for v in rows if v.declared is not None and v.declared.scheme
              and (label := v.declared_label) is not None]
    if labels:
        fields["declared"] = max(set(labels), key=labels.count)
    paths = [v.declared.scheme.path for v in rows
             if v.declared is not None and v.declared.scheme is not None]
    if paths:
        fields["native"] = max(set(paths), key=paths.count).upper()
    elif decl is not None:
        fields["native"] = decl.path.upper()
    return fields


def _layer_words(layers: Iterable[str], rules: FindingRules) -> str:
    words = [rules.layer_word(layer) for layer in dict.fromkeys(layers)]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _subject(rows: Sequence[LayerVerdict], share: float, rules: FindingRules) -> str:
    """"94% of GEMM time", or "the MoE experts (71% of GEMM time)" when layers are known."""
    known = [v.layer for v in rows if v.layer != "unknown"]
    if not rows or not known:
        return f"{share:.0%} of GEMM time"
    return f"{_layer_words([v.layer for v in rows], rules)} ({share:.0%} of GEMM time)"


def _detail(rows: Sequence[LayerVerdict], rules: FindingRules) -> str:
    """The " (Marlin, BF16 math)" part: libraries that ran these cells, and the weight-only
    math."""
    libraries: dict[str, int] = defaultdict(int)
    math: dict[str, int] = defaultdict(int)
    for verdict in rows:
        for row_library in verdict.libraries[:2]:
            libraries[row_library] += verdict.ns
        if verdict.math:
            math[verdict.math] += verdict.ns
    ranked = sorted(libraries.items(), key=lambda kv: -kv[1])[:2]
    parts = [rules.library(lib) for lib, _ in ranked]
    if math:
        parts.append(f"{max(math, key=lambda k: math[k]).upper()} math")
    return f" ({', '.join(dict.fromkeys(parts))})" if parts else ""


def rest(verdicts: Sequence[LayerVerdict], headline: Sequence[LayerVerdict],
          rules: FindingRules) -> str:
    """"; attention ran fp8 as declared; lm_head ran bf16 as excluded" — the other known
    layers' readings, largest first (empty when no layer is known)."""
    if all(v.layer == "unknown" for v in verdicts):
        return ""
    shown = set(map(id, headline))
    grouped: dict[tuple[str, str], list[LayerVerdict]] = defaultdict(list)
    for verdict in verdicts:
        if id(verdict) in shown or verdict.share < 0.005:
            continue
        grouped[(verdict.outcome, verdict.ran)].append(verdict)
    parts = []
    for (outcome, ran), rows in sorted(grouped.items(),
                                        key=lambda kv: -sum(v.share for v in kv[1])):
        share = sum(v.share for v in rows)
        parts.append(f"{_layer_words([v.layer for v in rows], rules)} ({share:.0%}) ran {ran} "
                     f"{rules.outcome_word(outcome)}")
    return "".join(f"; {part}" for part in parts)
