"""`tracekit rules test`: every data file's examples run, whatever kind of table it is."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.support import paths
from tracekit.classifier import load_ruleset
from tracekit.cli import cli as main
from tracekit.datafiles import tomllib
from tracekit.table_examples import builtin_files, check_files

RULESET = load_ruleset(use_env=False)
RESULTS = check_files(builtin_files(), RULESET)
CORPUS_NAMES = {
    json.loads(line)["name"]
    for corpus in paths.CORPUS.glob("*.jsonl")
    for line in corpus.read_text(encoding="utf-8").splitlines()
}
#: decode-table examples that are not (yet) corpus names: a TensorRT tactic name whose public
#: source could not be cited; this set may only shrink
NOT_IN_CORPUS = {
    "sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize64x64x64_stage4_warpsize2x2x1_tensor16x8x32_by_"
    "fusion_tactic",
}



def test_every_kind_of_data_file_is_checked():
    kinds = {r.kind for r in RESULTS}
    assert kinds >= {"rule", "decode table", "vocabulary", "truncation", "phase markers",
                     "phase heuristics", "log patterns", "GPUs", "checkpoints", "findings",
                     "parser spec", "roofline work model"}


def test_all_examples_hold():
    failures = [f"{r.file}: {f}" for r in RESULTS for f in r.failures]
    assert not failures, "\n".join(failures)


def test_every_data_file_has_examples():
    untested = sorted(r.file for r in RESULTS if r.untested)
    assert not untested, f"data files without examples: {untested}"


def test_decode_table_examples_are_real_corpus_names():
    """A decode table's examples are kernel names from tests/corpus, where each cites where it
    was seen, never names written for the table."""
    for path in builtin_files():
        if path.parent.name != "rules" or not path.name.startswith("_"):
            continue
        result = next(r for r in RESULTS if r.file == f"rules/{path.name}")
        if result.kind != "decode table":
            continue
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for example in data.get("example", []):
            assert example["name"] in CORPUS_NAMES | NOT_IN_CORPUS, (path.name, example["name"])


def test_the_command_reports_and_fails_on_a_broken_example(tmp_path: Path):
    runner = CliRunner()
    result = runner.invoke(main, ["rules", "test"])
    assert result.exit_code == 0, result.output
    assert "examples pass in" in result.output
    strict = runner.invoke(main, ["rules", "test", "--strict"])
    assert strict.exit_code == 0, strict.output
    bad = tmp_path / "my-rule.toml"
    bad.write_text(
        'id = "my-rule"\ndescription = "d"\nop = "gemm"\npath = "bf16"\n'
        "patterns = ['my_kernel']\n\n[[example]]\nname = \"my_kernel_x\"\npath = \"fp8\"\n",
        encoding="utf-8",
    )
    failed = runner.invoke(main, ["rules", "test", str(tmp_path)])
    assert failed.exit_code == 1
    assert "FAIL" in failed.output and "my-rule.toml" in failed.output
