"""Combine the name's answer with other evidence, in the order of trust of
docs/vocabulary.md#a-classification.

counters > explicit types in the name > op dtypes > the activation-quantize kernel launched
before (neighbour) > log lines, then GPU feasibility. Counters
measure what the tensor pipe executed, so they override the name; op dtypes are trusted only
from plain ATen matmul/attention ops, because custom ops hide the quantized weights (vLLM's
``moe_forward`` reports BF16 inputs while its kernels, ``bmm_MxE4m3_MxE2m1…``, run MXFP4 ×
MXFP8 in the 8×B200 vLLM trace of AMD-AGI/TraceLens,
https://github.com/AMD-AGI/TraceLens/blob/171dd74721ca1ec45709e5805b68ae1f65e27811/tests/traces/b200/eager_trace.json.gz).
Log lines count only when a caller passes them (``NameEvidence.log_path``); the analysis does
not: ``--log`` lines go to the findings. Feasibility never invents a path: a path the GPU
cannot run, or a kernel built for another architecture, turns the answer into ``unknown`` with
the conflict recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from tracekit.classifier.engine import Match
from tracekit.classifier.model import Classification, NameEvidence
from tracekit.gpus import built_for, mma_conflict, runs_on
from tracekit.vocabulary import GEMM_OPS, HALF_TYPES, MATH_OPS

#: ncu ``sm__ops_path_tensor…_src_<S>[_dst_<D>]`` source word -> path
_COUNTER_SRC: dict[str, str] = {
    "fp4": "fp4",
    "fp4_fp6_fp8": "fp8",
    "fp4_fp6": "fp8",
    "fp8": "fp8",
    "bf16": "bf16",
    "fp16": "fp16",
    "tf32": "tf32",
    "int8": "int8",
    "int4": "int8",
    "fp64": "fp64",
}
_COUNTER_RE = re.compile(
    r"^sm__ops_path_tensor(?:_op_\w+?)?_src_(?P<src>[a-z0-9_]+?)(?:_dst_|_sparsity_|$)"
)
_SIMT_RE = re.compile(r"sass_thread_inst_executed_op_(?:ffma|fmul|fadd)")

#: torch trace "Input type" strings -> operand path class
_TORCH_DTYPES: dict[str, str] = {
    "c10::BFloat16": "bf16",
    "BFloat16": "bf16",
    "c10::Half": "fp16",
    "Half": "fp16",
    "float": "fp32",
    "double": "fp64",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
    "c10::Float4_e2m1fn_x2": "fp4",
    "signed char": "int8",
    "c10::qint8": "int8",
}
#: framework ops whose input dtypes are the math dtypes
_TRUSTED_OPS = re.compile(
    r"^aten::(?:mm|addmm|bmm|baddbmm|matmul|linear|mv|addmv|_scaled_mm|_scaled_grouped_mm|"
    r"_grouped_mm|scaled_dot_product_attention|_scaled_dot_product_\w+|_flash_attention_forward|"
    r"_efficient_attention_forward)$"
)
_OP_FOR_ATEN = {
    "mv": "gemv",
    "addmv": "gemv",
    "_grouped_mm": "grouped_gemm",
    "_scaled_grouped_mm": "grouped_gemm",
}


def _short(name: str) -> str:
    """A kernel name without its return type and template or parameter list."""
    base = name.removeprefix("void ").split("(")[0].split("<")[0].strip()
    return base or name[:80]


def path_from_counters(counters: Mapping[str, float]) -> tuple[str | None, str]:
    """The tensor path with the most ops in ncu counters, or None with why not."""
    totals: dict[str, float] = {}
    seen_tensor = False
    simt = 0.0
    for metric, value in counters.items():
        base = metric.split(".")[0]
        found = _COUNTER_RE.match(base)
        if found:
            seen_tensor = True
            path = _COUNTER_SRC.get(found.group("src"))
            if path and value and value > 0:
                totals[path] = totals.get(path, 0.0) + float(value)
        elif _SIMT_RE.search(base) and value:
            simt += float(value)
    if totals:
        best = max(totals, key=lambda p: totals[p])
        if totals.get("fp4", 0) > 0 and best == "fp8" and totals["fp4"] >= 0.5 * totals["fp8"]:
            best = "fp4"
        return best, f"ncu counters: {totals[best]:.3g} tensor ops with {best} sources"
    if seen_tensor and simt > 0:
        return "fp32", "ncu counters: no tensor-core ops, FP32 SIMT instructions"
    if seen_tensor:
        return None, "ncu counters: no tensor-core ops"
    return None, ""


def path_from_op_dtypes(op_name: str | None, dtypes: tuple[str, ...]) -> tuple[str | None, str]:
    """The path stated by a trusted framework op's input types, or None with why not."""
    if op_name is not None and not _TRUSTED_OPS.match(op_name):
        return (
            None,
            f"op {op_name} is not a plain matmul/attention op; its input types are not trusted",
        )
    classes = {_TORCH_DTYPES[d] for d in dtypes if d in _TORCH_DTYPES}
    if not classes:
        return None, ""
    for low in ("fp4", "fp8", "int8"):
        if low in classes:
            return low, f"{op_name or 'op'} input types {list(dtypes)}"
    if len(classes) == 1:
        return classes.pop(), f"{op_name or 'op'} input types {list(dtypes)}"
    return None, f"{op_name or 'op'} has mixed input types {list(dtypes)}"


def combine(
    result: Classification,
    match: Match | None,
    evidence: NameEvidence | None,
    arch: str | None,
) -> Classification:
    """Apply counters, op dtypes, log lines and feasibility to a name-only classification."""
    if evidence is not None:
        result = _apply_evidence(result, evidence)
    if result.evidence == "counters":
        return result  # measured on the GPU: nothing to check against
    required = match.rule.requires_arch if match is not None else ()
    if match is not None and required and not any(runs_on(built_for(each), arch)
                                                  for each in required):
        return replace(
            result,
            path="unknown",
            evidence="feasibility",
            confidence="low",
            reason=(
                f"{match.rule.id} kernels are built for {', '.join(required)} "
                f"and cannot run on {arch}: the name or the GPU is wrong (name said {result.path})"
            ),
        )
    if result.path not in ("unknown", "weight_only"):
        why = mma_conflict(result.path, arch)
        if why is not None:
            return replace(
                result,
                path="unknown",
                evidence="feasibility",
                confidence="low",
                reason=f"{result.evidence} says {result.path} but {why}: recorded, not guessed",
            )
    return result


def _apply_evidence(result: Classification, evidence: NameEvidence) -> Classification:
    if evidence.counters:
        path, why = path_from_counters(evidence.counters)
        if path is not None:
            consistent = result.path == path or (
                result.path == "weight_only" and path in HALF_TYPES
            )
            if consistent:
                return replace(
                    result,
                    evidence="counters",
                    confidence="high",
                    reason=f"{why}; confirms the name ({result.reason})",
                )
            said = f"; the name said {result.path}" if result.path != "unknown" else ""
            op = result.op if result.op in MATH_OPS else "gemm"
            return replace(
                result, path=path, op=op, evidence="counters", confidence="high", reason=why + said
            )
        if why and result.path != "unknown":
            result = replace(result, reason=f"{result.reason}; {why}")
    if result.path != "unknown" or (result.rule is not None and result.op not in MATH_OPS):
        return result
    if evidence.op_dtypes and evidence.op_shared and result.rule is None:
        # A kernel no rule knows, launched beside others by the same op: it may be a helper
        # (scaling, reduction, bias add), not the matrix product the op's types describe.
        result = replace(result, reason=(
            f"{result.reason}; {evidence.op_name or 'its op'} launched it together with other "
            "kernels, so the op's input types do not say which of them is the matrix product"))
    elif evidence.op_dtypes:
        path, why = path_from_op_dtypes(evidence.op_name, evidence.op_dtypes)
        if path is not None:
            op = result.op
            if result.rule is None and evidence.op_name:
                short = evidence.op_name.removeprefix("aten::")
                op = _OP_FOR_ATEN.get(short, "attention" if "attention" in short else "gemm")
            return replace(
                result,
                path=path,
                op=op,
                evidence="op_dtypes",
                confidence="medium",
                reason=f"{why}; the name alone: {result.reason}",
            )
        if why:
            result = replace(result, reason=f"{result.reason}; {why}")
    if evidence.neighbour is not None and result.path == "unknown" and result.op in GEMM_OPS:
        near = evidence.neighbour
        return replace(
            result,
            path=near.path,
            activations=near.activations or result.activations,
            evidence="neighbour",
            confidence="medium",
            reason=(f"{100 * near.share:.0f}% of its {near.launches} launches follow the "
                    f"{near.path} activation-quantize kernel {_short(near.name)} on the same "
                    f"stream: {near.activations or near.path} activations; the name alone: "
                    f"{result.reason}"),
        )
    if evidence.log_path and evidence.log_path != "unknown":
        line = f": {evidence.log_line}" if evidence.log_line else ""
        return replace(
            result,
            path=evidence.log_path,
            evidence="log",
            confidence="low",
            reason=f"engine log names this path{line}; the name alone: {result.reason}",
        )
    return result
