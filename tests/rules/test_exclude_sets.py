"""Named exclude sets (``rules/_excludes.toml``, a rule's ``exclude_sets``): the built-in sets,
their expansion into a rule's excludes, a rule pack's own sets, and bad set data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracekit.classifier import load_ruleset
from tracekit.classifier.engine import rule_matches, vetoes
from tracekit.classifier.loader import builtin_dir
from tracekit.classifier.model import RuleSet
from tracekit.cli import cli
from tracekit.datafiles import read_toml
from tracekit.errors import RuleFileError
from tracekit.table_examples import check_files

RULESET = load_ruleset(use_env=False)

#: the rules that carried a copy of the grouped-GEMM setup veto before the set existed
GROUPED_SETUP_USERS = {
    "cuda-types-gemm", "cutlass-template-16bit", "cutlass-template-fp4",
    "cutlass-template-fp8", "cutlass-template-int8", "cutlass-template-mixed-input",
    "cutlass-template-mixed-input-8bit",
}

RULE = """\
id = "my-rule"
description = "test rule"
op = "gemm"
path = "bf16"
patterns = ['mykernel_bf16']
exclude = ['_own_veto']
exclude_sets = {sets}
references = ["test"]

[[example]]
name = "mykernel_bf16"
path = "bf16"

[[example]]
name = "mykernel_bf16_setup"
match = false
"""

EXCLUDES = """\
description = "test sets"

[set.my-setup]
description = "setup kernels"
references = ["test"]
patterns = ['_setup$']
examples = ["mykernel_bf16_setup"]
not_examples = ["mykernel_bf16"]
"""


def write_pack(directory: Path, sets: str = '["my-setup"]', excludes: str = EXCLUDES) -> Path:
    """A rule pack of one rule listing ``sets`` and an ``_excludes.toml``; returns the rule."""
    (directory / "_excludes.toml").write_text(excludes, encoding="utf-8")
    rule = directory / "my-rule.toml"
    rule.write_text(RULE.format(sets=sets), encoding="utf-8")
    return rule


def load(directory: Path) -> RuleSet:
    return load_ruleset([directory], use_env=False)


# --- the built-in sets ------------------------------------------------------------------------


def test_every_builtin_set_is_listed_by_a_rule_and_has_examples() -> None:
    listed = {name for rule in RULESET.rules for name in rule.exclude_sets}
    assert set(RULESET.exclude_sets) == listed
    for spec in RULESET.exclude_sets.values():
        assert spec.examples and spec.not_examples and spec.references, spec.name


def test_the_grouped_gemm_setup_veto_lives_in_one_set() -> None:
    users = {r.id for r in RULESET.rules if "grouped-gemm-setup-kernels" in r.exclude_sets}
    assert users == GROUPED_SETUP_USERS
    veto = RULESET.exclude_sets["grouped-gemm-setup-kernels"].patterns[0]
    for rule in RULESET.rules:
        assert (veto in rule.exclude) == (rule.id in GROUPED_SETUP_USERS), rule.id


def test_no_rule_file_repeats_a_set_pattern_in_its_own_exclude() -> None:
    patterns = {p.pattern for s in RULESET.exclude_sets.values() for p in s.patterns}
    for path in sorted(builtin_dir().glob("[!_]*.toml")):
        own = read_toml(path).data.get("exclude", [])
        own = [own] if isinstance(own, str) else own
        assert not patterns & set(own), f"{path.name}: list the exclude set instead"


def test_the_builtin_sets_examples_pass() -> None:
    (result,) = check_files([builtin_dir() / "_excludes.toml"], RULESET)
    assert result.kind == "exclude sets" and result.examples >= 10
    assert result.failures == []


def test_explain_names_the_set_that_vetoed_a_rule() -> None:
    name = ("void get_group_gemm_starts<cutlass::float_e4m3_t, cutlass::bfloat16_t, float>"
            "(long*, cutlass::float_e4m3_t**)")
    found = [(v.rule.id, v.exclude_set) for v in vetoes(name, RULESET)]
    assert ("cutlass-template-fp8", "grouped-gemm-setup-kernels") in found
    output = CliRunner().invoke(cli, ["rules", "explain", name]).output
    assert "vetoed cutlass-template-fp8 (priority" in output
    assert "exclude set grouped-gemm-setup-kernels" in output
    assert "WINS grouped-gemm-setup" in output


# --- a rule pack's sets -----------------------------------------------------------------------


def test_a_listed_set_vetoes_after_the_rules_own_excludes(tmp_path: Path) -> None:
    write_pack(tmp_path)
    ruleset = load(tmp_path)
    rule = ruleset.get("my-rule")
    assert rule is not None and rule.exclude_sets == ("my-setup",)
    assert [p.pattern for p in rule.exclude] == ["_own_veto", "_setup$"]
    assert rule_matches(rule, "mykernel_bf16") is not None
    assert rule_matches(rule, "mykernel_bf16_setup") is None
    assert rule_matches(rule, "mykernel_bf16_own_veto") is None
    assert [v.exclude_set for v in vetoes("mykernel_bf16_setup", ruleset)
            if v.rule.id == "my-rule"] == ["my-setup"]
    assert [v.exclude_set for v in vetoes("mykernel_bf16_own_veto", ruleset)
            if v.rule.id == "my-rule"] == [None]


def test_a_pack_may_list_a_builtin_set(tmp_path: Path) -> None:
    write_pack(tmp_path, sets='["fake-quantize-kernels"]')
    rule = load(tmp_path).get("my-rule")
    assert rule is not None and rule_matches(rule, "mykernel_bf16_fake_quant") is None


def test_a_packs_set_of_the_same_name_replaces_the_builtin_one(tmp_path: Path) -> None:
    write_pack(tmp_path, excludes=EXCLUDES.replace("my-setup", "fake-quantize-kernels"),
               sets='["fake-quantize-kernels"]')
    ruleset = load(tmp_path)
    spec = ruleset.exclude_sets["fake-quantize-kernels"]
    assert [p.pattern for p in spec.patterns] == ["_setup$"]
    quantizer = ruleset.get("quantize-fp4")
    assert quantizer is not None and quantizer.exclude[-1].pattern == "_setup$"
    assert check_files([tmp_path / "_excludes.toml"], ruleset)[0].failures == []
    # the built-in file's examples are not run against the replaced set
    assert check_files([builtin_dir() / "_excludes.toml"], ruleset)[0].examples > 0


def test_a_set_example_that_a_rule_still_matches_fails_rules_test(tmp_path: Path) -> None:
    write_pack(tmp_path, excludes=EXCLUDES.replace(
        'examples = ["mykernel_bf16_setup"]', 'examples = ["mykernel_bf16_setup", "mykernel_bf16"]'
    ).replace('not_examples = ["mykernel_bf16"]', 'not_examples = ["x_setup"]'))
    (result,) = check_files([tmp_path / "_excludes.toml"], load(tmp_path))
    assert any("'mykernel_bf16' is not vetoed" in f for f in result.failures)
    assert any("'mykernel_bf16' still matches my-rule" in f for f in result.failures)
    assert any("'x_setup' must not be vetoed" in f for f in result.failures)


# --- bad set data: one line naming the file and line ------------------------------------------


def test_an_unknown_set_name_is_one_error_with_a_suggestion(tmp_path: Path) -> None:
    rule = write_pack(tmp_path, sets='["my-setups"]')
    with pytest.raises(RuleFileError) as info:
        load(tmp_path)
    text = info.value.one_line()
    assert f"{rule}:7: exclude_sets names set 'my-setups'" in text
    assert "did you mean 'my-setup'?" in text and "\n" not in text


def test_an_unknown_set_name_exits_2_on_one_line(tmp_path: Path) -> None:
    rule = write_pack(tmp_path, sets='["grouped-gemm-setup"]')
    result = CliRunner().invoke(cli, ["rules", "explain", "--rules", str(tmp_path), "x"])
    assert result.exit_code == 2
    assert f"{rule}:7: exclude_sets names set 'grouped-gemm-setup'" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("sets", ["1", "[1]", "{ a = 'my-setup' }", '"my-setup"'])
def test_exclude_sets_must_be_a_list_of_names(tmp_path: Path, sets: str) -> None:
    write_pack(tmp_path, sets=sets)
    if sets == '"my-setup"':  # one name as a string reads as a list of one, like `exclude`
        assert load(tmp_path).get("my-rule") is not None
        return
    with pytest.raises(RuleFileError, match=r"exclude_sets must be a list of strings"):
        load(tmp_path)


@pytest.mark.parametrize(("change", "message"), [
    (("patterns = ['_setup$']\n", ""), r"_excludes\.toml:3: set\.my-setup needs 'patterns'"),
    (("references = [\"test\"]\n", ""), r"_excludes\.toml:3: set\.my-setup needs 'references'"),
    (("patterns =", "patern ="), r"set\.my-setup\.patern is not a known key "
                                 r"\(did you mean 'patterns'\?\)"),
    (("'_setup$'", "'_setup('"), r"_excludes\.toml:6: patterns\[0\]: bad regex"),
    (("patterns = ['_setup$']", "patterns = 1.0"),
     r"_excludes\.toml:3: set\.my-setup\.patterns must be a list of regexes"),
    (("[set.my-setup]", "[sets.my-setup]"), r"sets is not a known key"),
    (("examples = [\"mykernel_bf16_setup\"]", "examples = [1]"),
     r"examples must be a list of strings"),
])
def test_bad_set_data_names_the_file_and_line(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    write_pack(tmp_path, excludes=EXCLUDES.replace(*change))
    with pytest.raises(RuleFileError) as info:
        load(tmp_path)
    assert re.search(message, info.value.one_line()), info.value.one_line()


@pytest.mark.parametrize(("excludes", "message"), [
    ('description = "x"\nset = ["my-setup"]\n', r"_excludes\.toml:2: set must be a table"),
    ('description = "x"\n[set]\nmy-setup = 1\n', r"_excludes\.toml:3: set\.my-setup must be "),
])
def test_a_set_must_be_a_table(tmp_path: Path, excludes: str, message: str) -> None:
    write_pack(tmp_path, excludes=excludes)
    with pytest.raises(RuleFileError) as info:
        load(tmp_path)
    assert re.search(message, info.value.one_line()), info.value.one_line()
