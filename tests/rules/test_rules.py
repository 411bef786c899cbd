"""Every rule example is a test; the rule pack and its loader are checked as data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracekit.classifier import PATHS, classify_names, load_ruleset
from tracekit.classifier.engine import rule_matches
from tracekit.classifier.loader import builtin_dir
from tracekit.classifier.names import prepare
from tracekit.classifier.testing import check_example, iter_examples
from tracekit.errors import RuleFileError

RULESET = load_ruleset(use_env=False)
EXAMPLES = list(iter_examples(RULESET))


@pytest.mark.parametrize(
    "rule,index,example", EXAMPLES, ids=[f"{r.id}-{i}" for r, i, _ in EXAMPLES]
)
def test_rule_example(rule, index, example):
    failures = check_example(rule, index, example, RULESET)
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize("rule", RULESET.rules, ids=lambda r: r.id)
def test_rule_has_matching_and_non_matching_examples(rule):
    kinds = {example.matches for example in rule.examples}
    assert kinds == {True, False}, f"{rule.id} needs examples that match and that must not"


@pytest.mark.parametrize("rule", RULESET.rules, ids=lambda r: r.id)
def test_rule_cites_a_reference(rule):
    assert rule.references, f"{rule.id} has no references"


def test_no_two_rules_claim_one_name_with_different_labels():
    claims: dict[str, tuple[str, str]] = {}
    for rule, _, example in EXAMPLES:
        if not example.matches or example.arch or "path" not in example.expect:
            continue
        previous = claims.setdefault(example.name, (rule.id, example.expect["path"]))
        assert previous[1] == example.expect["path"], (
            f"{previous[0]} says {previous[1]} but {rule.id} says {example.expect['path']} "
            f"for {example.name[:80]!r}"
        )


@pytest.mark.parametrize(
    "name",
    # vLLM / SGLang Triton attention, printed under their @triton.jit names (tests/corpus)
    ["_fwd_kernel", "_fwd_kernel_stage1", "_fwd_kernel_stage2", "_fwd_grouped_kernel_stage1",
     "_fwd_kernel_alibi"],
)
def test_one_rule_speaks_for_the_triton_decode_and_extend_attention_family(name):
    from tracekit.classifier.engine import all_matches

    matching = [m.rule.id for m in all_matches(name, RULESET)]
    assert matching == ["triton-attention-untyped"], matching


def test_rules_directory_holds_data_only():
    directory = builtin_dir()
    python = sorted(p.name for p in directory.glob("*.py") if p.name != "__init__.py")
    assert python == []


def test_every_rule_file_is_loaded_and_ids_equal_file_stems():
    stems = {p.stem for p in builtin_dir().glob("*.toml") if not p.name.startswith("_")}
    assert stems == {rule.id for rule in RULESET.rules}


def test_vocabulary_file_lists_the_public_path_words():
    assert set(PATHS) == {
        "fp4",
        "fp8",
        "int8",
        "weight_only",
        "bf16",
        "fp16",
        "tf32",
        "fp32",
        "fp64",
        "unknown",
    }


def test_a_user_vocabulary_may_add_operand_types_but_not_gpu_capabilities(tmp_path):
    """A user pack's _paths.toml extends the operand types; which GPU computes a path is the
    capability table's (rules/_gpus.toml), so the keys that used to say it are refused."""
    (tmp_path / "_paths.toml").write_text('[operand_types]\nmyfp4 = "fp4"\n')
    write_rule(tmp_path)
    assert load_ruleset([tmp_path], use_env=False).operand_types["myfp4"] == "fp4"
    (tmp_path / "_paths.toml").write_text('[paths.fp4]\ndescription = "x"\nnvidia_min_sm = 90\n')
    with pytest.raises(RuleFileError, match=r"_paths\.toml:3: paths\.fp4\.nvidia_min_sm: .*"
                                            r"rules/_gpus\.toml"):
        load_ruleset([tmp_path], use_env=False)


def test_requires_arch_must_be_an_architecture(tmp_path):
    target = write_rule(tmp_path)
    required = 'references = ["test"]\nrequires_arch = ["sm100", "Blackwell"]\n'
    target.write_text(target.read_text().replace('references = ["test"]\n', required))
    with pytest.raises(RuleFileError, match=r"my-rule\.toml:7: requires_arch 'Blackwell'"):
        load_ruleset([tmp_path], use_env=False)


# --- loader errors: a user rule pack must fail with the file and line -------------------------

GOOD_RULE = """\
id = "{id}"
description = "test rule"
op = "gemm"
path = "{path}"
patterns = ['{pattern}']
references = ["test"]

[[example]]
name = "mykernel_bf16"
path = "{path}"

[[example]]
name = "other"
match = false
"""


def write_rule(
    directory: Path, rule_id: str = "my-rule", path: str = "bf16", pattern: str = "mykernel_bf16"
) -> Path:
    target = directory / f"{rule_id}.toml"
    target.write_text(GOOD_RULE.format(id=rule_id, path=path, pattern=pattern))
    return target


def test_user_pack_adds_a_rule(tmp_path):
    write_rule(tmp_path)
    ruleset = load_ruleset([tmp_path], use_env=False)
    assert ruleset.get("my-rule") is not None
    assert len(ruleset.rules) == len(RULESET.rules) + 1


def test_env_var_adds_a_rule_pack(tmp_path, monkeypatch):
    write_rule(tmp_path)
    monkeypatch.setenv("TRACEKIT_RULES", str(tmp_path))
    assert load_ruleset().get("my-rule") is not None


def test_unknown_path_word_names_file_and_line(tmp_path):
    target = write_rule(tmp_path, path="bfloat16")
    with pytest.raises(RuleFileError) as info:
        load_ruleset([tmp_path], use_env=False)
    text = info.value.one_line()
    assert f"{target}:4" in text and "bfloat16" in text and "did you mean 'bf16'" in text


def test_bad_regex_names_file_and_line(tmp_path):
    target = write_rule(tmp_path, pattern="mykernel_(bf16")
    with pytest.raises(RuleFileError) as info:
        load_ruleset([tmp_path], use_env=False)
    assert f"{target}:5" in info.value.one_line()
    assert "bad regex" in info.value.one_line()


def test_bad_toml_names_file(tmp_path):
    target = tmp_path / "broken.toml"
    target.write_text('id = "broken"\ndescription = \n')
    with pytest.raises(RuleFileError) as info:
        load_ruleset([tmp_path], use_env=False)
    assert str(target) in info.value.one_line() and "line 2" in info.value.one_line()


def test_id_must_equal_file_stem(tmp_path):
    (tmp_path / "other-name.toml").write_text(
        GOOD_RULE.format(id="my-rule", path="bf16", pattern="x")
    )
    with pytest.raises(RuleFileError, match="must equal the file name"):
        load_ruleset([tmp_path], use_env=False)


def test_unknown_key_is_an_error_with_a_suggestion(tmp_path):
    target = write_rule(tmp_path)
    target.write_text(target.read_text().replace("patterns =", "patterns = ['x']\npatern ="))
    with pytest.raises(RuleFileError) as info:
        load_ruleset([tmp_path], use_env=False)
    assert "patern is not a known key (did you mean 'patterns'?)" in info.value.one_line()


def test_unknown_underscore_tables_are_ignored(tmp_path):
    (tmp_path / "_gpus.toml").write_text("this is not [ valid toml for us")
    write_rule(tmp_path)
    assert load_ruleset([tmp_path], use_env=False).get("my-rule") is not None


def test_decode_names_a_missing_table(tmp_path):
    target = write_rule(tmp_path, pattern="mykernel_(?P<t>bf16)")
    target.write_text(
        target.read_text().replace("[[example]]", '[decode]\nt = "no_such_table"\n\n[[example]]', 1)
    )
    with pytest.raises(RuleFileError, match="no file _no_such_table.toml"):
        load_ruleset([tmp_path], use_env=False)



# --- fallback rules: answer only where no family rule has -----------------------------------


def _fallback_pack(directory: Path, over: str = '["family-untyped"]') -> None:
    """Two family rules (unknown, bf16) and a fallback rule over the first."""
    write_rule(directory, "family-untyped", "unknown", "zzkernel")
    write_rule(directory, "family-typed", "bf16", "zzkernel_special")
    target = write_rule(directory, "zz-fallback", "fp16", "zz\\w*_fp16")
    target.write_text(target.read_text().replace(
        'patterns =', f'priority = 1\nfallback_over = {over}\npatterns =', 1))


def test_a_fallback_answers_over_the_rules_it_names_and_where_none_matches(tmp_path):
    _fallback_pack(tmp_path)
    ruleset = load_ruleset([tmp_path], use_env=False)
    names = ["zzkernel_fp16", "zz_fp16", "zzkernel_special_fp16"]
    got = {c.name: (c.rule, c.path) for c in classify_names(names, ruleset)}
    # over the op-only rule it names, although that rule has the higher priority
    assert got["zzkernel_fp16"] == ("zz-fallback", "fp16")
    # where no other rule matches
    assert got["zz_fp16"] == ("zz-fallback", "fp16")
    # never over a rule it does not name
    assert got["zzkernel_special_fp16"] == ("family-typed", "bf16")


def test_a_fallback_never_overrides_an_abstaining_family_rule_of_lower_priority(tmp_path):
    _fallback_pack(tmp_path, over="[]")
    target = tmp_path / "family-untyped.toml"
    target.write_text(target.read_text().replace("patterns =", "priority = 0\npatterns =", 1))
    ruleset = load_ruleset([tmp_path], use_env=False)
    [answer] = classify_names(["zzkernel_fp16"], ruleset)
    assert (answer.rule, answer.path) == ("family-untyped", "unknown")


def test_rules_explain_lists_the_fallback_winner_first(tmp_path):
    from tracekit.classifier import all_matches

    _fallback_pack(tmp_path)
    ruleset = load_ruleset([tmp_path], use_env=False)
    assert [m.rule.id for m in all_matches("zzkernel_fp16", ruleset)][:2] == [
        "zz-fallback", "family-untyped"]


@pytest.mark.parametrize("over,problem", [
    ('["no-such-rule"]', "fallback_over names rule 'no-such-rule', which does not exist"),
    ('["zz-fallback"]', "fallback_over names 'zz-fallback', which is a fallback rule itself"),
])
def test_fallback_over_must_name_ordinary_rules(tmp_path, over, problem):
    _fallback_pack(tmp_path, over=over)
    with pytest.raises(RuleFileError, match=re.escape(problem)):
        load_ruleset([tmp_path], use_env=False)


def test_the_generic_reading_stands_back_for_every_family_rule():
    """generic-typed-matrix stands over the op-only generic rules and nothing else."""
    rule = RULESET.get("generic-typed-matrix")
    assert rule is not None and rule.fallback_over is not None
    for other in rule.fallback_over:
        target = RULESET.get(other)
        assert target is not None and target.labels.get("path") == "unknown"
        assert "generic" in other

# --- must-not examples from the neighbours: another library's names with the same prefix ------

_PREFIX_WORD = re.compile(r"[A-Za-z]+")


def name_prefix(name: str) -> str:
    """The first word of a name as rules see it (demangled, without ``void``): the part two
    libraries' names can share (``ampere`` of cuBLAS's ampere_h16816gemm and AllSpark's
    ampere_hgemm_W8A16, ``cutlass``, ``aiter``, ``Cijk``)."""
    text = prepare(name).text
    for word in ("__global__ ", "static ", "void "):
        text = text.removeprefix(word)
    found = _PREFIX_WORD.match(text)
    return found.group(0).lower() if found else ""


def _known_names() -> dict[str, str | None]:
    """Every corpus name and rule example, with the library the whole rule set gives it."""
    from tests.support import paths
    from tracekit.classifier.corpus import load_corpus

    names = [entry.name for entry in load_corpus([paths.CORPUS], RULESET.operand_types)]
    names += [example.name for _, _, example in EXAMPLES]
    names = list(dict.fromkeys(names))
    return {n: a.library for n, a in zip(names, classify_names(names, RULESET), strict=True)}


KNOWN = _known_names()


@pytest.mark.parametrize("rule", RULESET.rules, ids=lambda r: r.id)
def test_must_not_examples_include_another_library_with_the_same_prefix(rule):
    """Where a known name (corpus or rule example) starts like this rule's names, comes from
    another library and does not match the rule, the rule's must-not examples hold at least
    one such name: the prefix collisions that turn into confident wrong answers (AllSpark's
    ampere_hgemm_W8A16 read as cuBLAS FP16, llama.cpp's dequantize_mul_mat read as MMQ int8)
    are then tested for every rule."""
    prefixes = {name_prefix(e.name) for e in rule.examples if e.matches} - {""}
    library = rule.labels.get("library")

    def neighbour(name: str) -> bool:
        return (name_prefix(name) in prefixes and KNOWN.get(name) not in (None, library)
                and rule_matches(rule, prepare(name).text) is None)

    if not any(neighbour(name) for name in KNOWN):
        return
    must_not = [e.name for e in rule.examples if not e.matches]
    assert any(name_prefix(n) in prefixes and KNOWN.get(n) != library for n in must_not), (
        f"{rule.id}: add a must-not example from another library starting like "
        f"{sorted(prefixes)}, e.g. {min((n for n in KNOWN if neighbour(n)), key=len)!r}")
