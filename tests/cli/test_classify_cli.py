"""``tracekit classify`` and ``tracekit rules`` as a user runs them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tests.support import paths
from tracekit.cli import cli

NVJET = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"
KEYS = [
    "name",
    "op",
    "path",
    "weights",
    "activations",
    "accum",
    "library",
    "rule",
    "confidence",
    "evidence",
    "reason",
]


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def test_jsonl_one_object_per_input_line_in_order_blank_lines_included(tmp_path):
    names = [NVJET, "", "  odd name with spaces  ", "fused_moe_kernel", "ünïcode…", "x" * 5000]
    names_file = tmp_path / "names.txt"
    names_file.write_text("\n".join(names) + "\n", encoding="utf-8")
    result = run("classify", "--names-file", str(names_file), "--format", "jsonl")
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.output.splitlines()]
    assert [o["name"] for o in objects] == names
    assert all(list(o) == KEYS for o in objects)
    assert objects[0]["path"] == "bf16" and objects[0]["rule"] == "nvjet"
    assert objects[1]["path"] == "unknown" and objects[1]["reason"] == "empty kernel name"
    assert objects[3]["path"] == "unknown"


def test_names_file_dash_reads_stdin():
    result = run(
        "classify",
        "--names-file",
        "-",
        "--format",
        "jsonl",
        stdin=f"{NVJET}\nvolta_sgemm_64x64_nt\n",
    )
    assert result.exit_code == 0
    assert [json.loads(line)["path"] for line in result.output.splitlines()] == ["bf16", "fp32"]


def test_crlf_lines_and_missing_final_newline():
    result = run(
        "classify",
        "--names-file",
        "-",
        "--format",
        "jsonl",
        stdin=f"{NVJET}\r\nvolta_sgemm_64x64_nt",
    )
    assert [json.loads(line)["name"] for line in result.output.splitlines()] == [
        NVJET,
        "volta_sgemm_64x64_nt",
    ]


def test_arguments_and_table_format():
    result = run("classify", NVJET, "fused_moe_kernel")
    assert result.exit_code == 0
    assert "bf16" in result.output and "unknown: fused_moe_kernel" in result.output


def test_arch_option_applies_feasibility():
    fp4 = "nvjet_sm100_ootst_128x128_256x7_4x1_2cta_v_bx_Avec16UE4M3_Bvec16UE4M3_TNT"
    obj = json.loads(run("classify", fp4, "--arch", "sm90", "--format", "jsonl").output)
    assert (obj["path"], obj["evidence"]) == ("unknown", "feasibility")


def test_no_names_is_a_usage_error():
    assert run("classify").exit_code == 2


def test_missing_names_file_is_one_line_exit_2(tmp_path):
    result = run("classify", "--names-file", str(tmp_path / "nope.txt"))
    assert result.exit_code == 2
    assert "cannot read names file" in result.output and "Traceback" not in result.output


def test_bad_user_rule_is_one_line_exit_2(tmp_path):
    (tmp_path / "bad.toml").write_text(
        'id = "bad"\ndescription = "x"\nop = "gemm"\npath = "fp9"\npatterns = [\'x\']\n'
    )
    result = run("classify", NVJET, "--rules", str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path / 'bad.toml'}:4" in result.output


def test_rules_list_shows_every_rule():
    result = run("rules", "list")
    assert result.exit_code == 0
    assert "nvjet" in result.output and "marlin" in result.output and " rules, " in result.output


def test_rules_test_builtin_passes():
    result = run("rules", "test")
    assert result.exit_code == 0, result.output
    assert "examples pass" in result.output


def test_rules_test_user_pack_reports_a_failing_example(tmp_path):
    (tmp_path / "mine.toml").write_text(
        'id = "mine"\ndescription = "x"\nop = "gemm"\npath = "bf16"\npatterns = [\'^mykernel\']\n'
        'references = ["test"]\n\n[[example]]\nname = "mykernel_1"\npath = "fp16"\n\n'
        '[[example]]\nname = "other"\nmatch = false\n'
    )
    result = run("rules", "test", str(tmp_path))
    assert result.exit_code == 1
    assert "mine.toml: mine example[0]" in result.output and "expected 'fp16'" in result.output
    assert "1/2 examples pass in 1 files" in result.output


def test_rules_explain_lists_matches_and_winner():
    name = (
        "void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l, 1125899906909960l, "
        "2814749767106568l, 128>"
    )
    result = run("rules", "explain", name)
    assert result.exit_code == 0
    assert "WINS marlin (priority 85)" in result.output
    assert "marlin-untyped" in result.output
    assert "result: op=gemm path=weight_only" in result.output


def test_rules_explain_demangles():
    result = run(
        "rules",
        "explain",
        "_ZN7cutlass7Kernel2I50cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4EEvNT_6ParamsE",
    )
    assert "demangled: void cutlass::Kernel2<" in result.output and "path=tf32" in result.output


def test_corpus_through_the_command(tmp_path):
    rows = [
        json.loads(line)
        for corpus in sorted(paths.CORPUS.glob("*.jsonl"))
        for line in corpus.read_text(encoding="utf-8").splitlines()
    ]
    names_file = tmp_path / "names.txt"
    names_file.write_text("\n".join(r["name"] for r in rows) + "\n", encoding="utf-8")
    result = run("classify", "--names-file", str(names_file), "--format", "jsonl")
    out = [json.loads(line) for line in result.output.splitlines()]
    assert len(out) == len(rows)
    assert sum(o["path"] == r["path"] for o, r in zip(out, rows, strict=True)) / len(rows) >= 0.97
