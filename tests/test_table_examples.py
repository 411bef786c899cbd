"""`tracekit rules test`: every data file's examples run, whatever kind of table it is."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tracekit.classify import load_ruleset
from tracekit.cli import cli as main
from tracekit.table_examples import builtin_files, check_files

RULESET = load_ruleset(use_env=False)
RESULTS = check_files(builtin_files(), RULESET)

#: data files still without examples, each with the owner expected to add them (issue #15's
#: AMD half adds the AMD decode tables; no real bare-array Chrome trace has been found yet)
PENDING = {
    "rules/_ck_types.toml",
    "rules/_ggml_prec.toml",
    "rules/_ggml_types.toml",
    "rules/_llamacpp_legacy.toml",
    "rules/_tensile_types.toml",
    "rules/_triton_types.toml",
    "parsers/kineto-json-list.toml",
    "rules/_rocm_aiter_types.toml",
    "rules/_rocm_flydsl_types.toml",
    "rules/_rocm_miopen_types.toml",
    "rules/_triton_aiter_types.toml",
    "rules/_triton_quant_types.toml",
}


def test_every_kind_of_data_file_is_checked():
    kinds = {r.kind for r in RESULTS}
    assert kinds >= {"rule", "decode table", "vocabulary", "truncation", "phase markers",
                     "phase heuristics", "log patterns", "GPUs", "checkpoints", "findings",
                     "parser spec"}


def test_all_examples_hold():
    failures = [f"{r.file}: {f}" for r in RESULTS for f in r.failures]
    assert not failures, "\n".join(failures)


def test_only_the_known_pending_files_lack_examples():
    untested = {r.file for r in RESULTS if r.untested}
    assert untested <= PENDING, sorted(untested - PENDING)


def test_the_command_reports_and_fails_on_a_broken_example(tmp_path: Path):
    runner = CliRunner()
    result = runner.invoke(main, ["rules", "test"])
    assert result.exit_code == 0, result.output
    assert "examples pass in" in result.output
    strict = runner.invoke(main, ["rules", "test", "--strict"])
    assert strict.exit_code == (1 if PENDING else 0)
    bad = tmp_path / "my-rule.toml"
    bad.write_text(
        'id = "my-rule"\ndescription = "d"\nop = "gemm"\npath = "bf16"\n'
        "patterns = ['my_kernel']\n\n[[example]]\nname = \"my_kernel_x\"\npath = \"fp8\"\n",
        encoding="utf-8",
    )
    failed = runner.invoke(main, ["rules", "test", str(tmp_path)])
    assert failed.exit_code == 1
    assert "FAIL" in failed.output and "my-rule.toml" in failed.output
