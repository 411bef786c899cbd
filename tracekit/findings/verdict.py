"""One verdict sentence per judged phase, from the ``[verdict]`` templates of the findings file."""

from __future__ import annotations

from tracekit.errors import RuleFileError
from tracekit.findings.judgement import RunJudgement, judge_run
from tracekit.findings.model import FindingContext
from tracekit.findings.rules import load_rules


def verdict_sentences(ctx: FindingContext, judged: RunJudgement | None = None) -> list[str]:
    """One sentence per phase with GEMM time, e.g. "decode: 94% of GEMM time ran weight_only
    (Marlin, BF16 math) although the checkpoint declares W4A4 NVFP4 and the RTX 5090 (sm120)
    computes FP4 natively — silent fallback."
    """
    rules = load_rules()
    judged = judged if judged is not None else judge_run(ctx, rules)
    if not judged.phases:
        return [rules.verdict["no_gemm"]]
    sentences = []
    for judgement in judged.judgements:
        template = rules.verdict[judgement.state]
        try:
            sentences.append(" ".join(template.format(**judgement.fields).split()))
        except KeyError as exc:  # a template naming a field this state does not provide
            raise RuleFileError(
                f"rules/_findings.toml: [verdict] {judgement.state}: unknown field {exc}"
            ) from exc
    return sentences
