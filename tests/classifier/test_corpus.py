"""The labelled kernel-name corpus: its format, the accuracy targets, and the answer snapshot.

Every ``tests/corpus/*.jsonl`` file is read; a new file needs no registration. The snapshot
(``tests/corpus/snapshot/<file>.jsonl``) records every name's full answer, the way ruff and
semgrep keep reviewed outputs: any rule change that alters an answer fails here, printing the
changed answers, until the snapshot is updated on purpose with

    TRACEKIT_UPDATE_SNAPSHOT=1 pytest -q tests/classifier/test_corpus.py
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support import paths
from tracekit.classifier import classify_names, load_ruleset
from tracekit.classifier.corpus import (
    corpus_files,
    load_corpus,
    render_markdown,
    score,
    snapshot_diff,
    snapshot_lines,
)
from tracekit.classifier.demangle import binutils_available, runtime_demangles
from tracekit.classifier.engine import derive_path
from tracekit.classifier.names import prepare
from tracekit.classifier.truncation import printers

ROOT = paths.REPO
CORPUS_DIR = paths.CORPUS
SNAPSHOT_DIR = CORPUS_DIR / "snapshot"
RULESET = load_ruleset(use_env=False)
ENTRIES = load_corpus([CORPUS_DIR], RULESET.operand_types)
ANSWERS = classify_names([e.name for e in ENTRIES], RULESET)
MATH_OPS = {"gemm", "grouped_gemm", "gemv", "attention"}
UPDATE = os.environ.get("TRACEKIT_UPDATE_SNAPSHOT") == "1"

#: the legacy source form of entries whose public file could not be traced to its repository;
#: allowed only in kernel_names.jsonl, and their number may only go down
LEGACY_SOURCE = re.compile(r"^github-code-index:\d+$")
LEGACY_SOURCES_MAX = 109


def test_corpus_is_large_and_covers_both_vendors_families():
    assert len(ENTRIES) >= 600
    assert sum(e.op in MATH_OPS for e in ENTRIES) >= 350
    assert len({e.family for e in ENTRIES}) >= 30


def test_sources_are_public_and_checkable():
    legacy = 0
    for entry in ENTRIES:
        for value in (entry.source, entry.why, entry.note or ""):
            assert not re.search(r"shared/|(?:engines|formats|DESIGN)\.md", value), entry.where
        if LEGACY_SOURCE.match(entry.source):
            assert Path(entry.file).name == "kernel_names.jsonl", entry.where
            legacy += 1
        elif entry.source.startswith("fixtures/"):
            assert (ROOT / entry.source.split()[0]).exists(), entry.where
        else:
            assert entry.source.startswith("https://"), entry.where
    assert legacy <= LEGACY_SOURCES_MAX


def test_operand_types_agree_with_the_path():
    """Where the operand pair decides a path (engine.derive_path), it must be the labelled one."""
    for entry in ENTRIES:
        if entry.op not in MATH_OPS or entry.path == "unknown" or None in (
            entry.weights, entry.activations
        ):
            continue
        derived = derive_path(entry.weights, entry.activations, RULESET.operand_types)
        assert derived in (None, entry.path), f"{entry.where}: operands give {derived}"


def test_accuracy_targets():
    result = score(ENTRIES, ANSWERS)
    wrong = "\n".join(
        f"{e.path} -> {r.path} [{r.rule}] {e.name[:100]} ({e.where})"
        for e, r in result.confident_wrong
    )
    assert not result.confident_wrong, "confident wrong answers:\n" + wrong
    assert result.total.right_rate >= 0.97, "\n".join(
        f"{e.path} -> {r.path} [{r.rule}] {e.name[:100]}" for e, r in result.misses
    )


def readme_table() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("<!-- accuracy-table -->")[1].split("<!-- /accuracy-table -->")[0]


def test_the_readme_states_the_current_figures():
    """README.md's accuracy tables (total, per family, per arch) are the score of the corpus as
    it is: ``tracekit rules accuracy --markdown tests/corpus`` prints them (update both
    together)."""
    assert readme_table().strip() == render_markdown(score(ENTRIES, ANSWERS)), (
        "README.md's accuracy table is stale: paste `tracekit rules accuracy --markdown "
        "tests/corpus` between its <!-- accuracy-table --> markers")


def test_the_accuracy_command_groups_by_family_and_by_arch():
    from click.testing import CliRunner

    from tracekit.cli import cli

    runner = CliRunner()
    by_arch = runner.invoke(cli, ["rules", "accuracy", "--by", "arch", str(CORPUS_DIR)])
    assert by_arch.exit_code == 0, by_arch.output
    assert by_arch.output.startswith("arch ") and "\nsm90 " in by_arch.output
    assert "\ngfx950 " in by_arch.output and "\nany " in by_arch.output
    both = runner.invoke(cli, ["rules", "accuracy", "--by", "both", str(CORPUS_DIR)])
    assert both.output.startswith("family ") and "\narch " in both.output
    markdown = runner.invoke(cli, ["rules", "accuracy", "--markdown", str(CORPUS_DIR)])
    assert markdown.output.strip() == readme_table().strip()
    as_json = json.loads(runner.invoke(cli, ["rules", "accuracy", "--json",
                                             str(CORPUS_DIR)]).output)
    assert set(as_json) >= {"total", "families", "archs"}
    assert sum(t["names"] for t in as_json["archs"].values()) == as_json["total"]["names"]


def test_the_score_counts_typed_names_and_the_all_unknown_baseline():
    """A set of mostly untyped names scores high for a rule set that answers ``unknown`` to
    everything: the report says what that would score and how the typed names alone did."""
    from click.testing import CliRunner

    from tracekit.cli import cli

    typed = [e for e in ENTRIES if e.path != "unknown"][:3]
    untyped = [e for e in ENTRIES if e.path == "unknown"][:7]
    entries = typed + untyped
    answers = [replace(a, path="unknown") for a in classify_names([e.name for e in entries],
                                                                   RULESET)]
    result = score(entries, answers).total
    assert (result.names, result.typed, result.typed_right) == (10, 3, 0)
    assert result.right_rate == result.unknown_baseline_rate == 0.7
    assert result.typed_right_rate == 0.0
    whole = score(ENTRIES, ANSWERS).total
    assert whole.typed == sum(e.path != "unknown" for e in ENTRIES)
    assert whole.typed_right == sum(a.path == e.path != "unknown"
                                    for e, a in zip(ENTRIES, ANSWERS, strict=True))
    output = CliRunner().invoke(cli, ["rules", "accuracy", str(CORPUS_DIR)]).output
    untyped_share = f"{whole.unknown_baseline_rate:.1%}"
    assert f"answering unknown to every name would score {untyped_share}" in output
    assert " typed typed-right\n" in output
    as_json = json.loads(CliRunner().invoke(cli, ["rules", "accuracy", "--json",
                                                  str(CORPUS_DIR)]).output)
    assert as_json["total"]["typed"] == whole.typed
    assert as_json["total"]["unknown_baseline_rate"] == round(whole.unknown_baseline_rate, 4)


def test_every_unknown_answer_says_why():
    for entry, answer in zip(ENTRIES, ANSWERS, strict=True):
        if answer.path == "unknown":
            assert answer.reason, entry.where


#: past this many characters a name is cut more sparsely (still at every template or parameter
#: list it opens): the cuts of a few 5,000-character names (Transformer Engine's function-pointer
#: templates, CUTLASS FMHA) at every boundary made up most of the test's time
DENSE_CUTS = 1024


def cut_lengths(name: str) -> list[int]:
    """Where to cut ``name``: around every token boundary (the cuts that can make a token look
    complete or drop the one that decides), every fifth character, and the printers' limits;
    past ``DENSE_CUTS`` characters, where each template or parameter list opens and at every
    25th character."""
    separators = set("_<>(), :*&")
    lengths = {n for n in range(6, min(len(name), DENSE_CUTS), 5)}
    lengths.update(range(DENSE_CUTS, len(name), 25))
    for index, char in enumerate(name):
        if char in separators:
            if index < DENSE_CUTS:
                lengths.update((index - 1, index, index + 1))
            elif char in "<(":
                lengths.add(index + 1)
    lengths.update(p.keep for p in printers() if p.keep)
    return sorted(n for n in lengths if 6 <= n < len(name))


def test_cut_names_never_get_another_path():
    """Cut every full corpus name at every token boundary (and every fifth character), marked
    with an ellipsis as any printer might (``…`` or ``...``): the answer must stay the full
    name's path, or become ``unknown`` with a ``truncated:`` reason — never a different path.
    The printers of rules/_truncation.toml (nsys stats 99 + ``…``, torch 52 + ``...``) are among
    the lengths."""
    cutters = [p for p in printers() if p.keep and p.mark]
    assert {p.id for p in cutters} >= {"nsys-stats-column", "torch-table"}
    cuts: list[str] = []
    owners: list[tuple] = []
    for entry, full in zip(ENTRIES, ANSWERS, strict=True):
        if prepare(entry.name).truncated or full.path == "unknown":
            continue
        for number, length in enumerate(cut_lengths(entry.name)):
            cuts.append(entry.name[:length] + ("…" if number % 2 else "..."))
            owners.append((entry, full))
    assert len(cuts) > 50_000
    problems = []
    for cut, answer, (entry, full) in zip(cuts, classify_names(cuts, RULESET), owners,
                                          strict=True):
        if answer.path not in (full.path, "unknown") or (
                answer.path == "unknown" and not answer.reason.startswith("truncated:")):
            problems.append(f"{entry.where}: cut {cut!r} answers {answer.path} "
                            f"({answer.rule}: {answer.reason}), the full name {full.path}")
    assert not problems, "\n".join(problems[:20])


def _may_need_binutils(name: str) -> bool:
    """True for a mangled name the C++ runtime's demangler cannot read: binutils' c++filt
    (the fallback) may read it, so its answer depends on c++filt being on PATH."""
    kname = prepare(name)
    return not kname.demangled and kname.text.startswith("_Z") and not runtime_demangles(
        kname.text
    )


def test_answers_match_the_reviewed_snapshot():
    """The snapshot is recorded with binutils' c++filt on PATH; without it, the few mangled
    names only c++filt reads (``DF16b`` …) are left out of the comparison (tested apart in
    tests/classifier/test_demangle.py)."""
    assert binutils_available() or not UPDATE, "record the snapshot with c++filt on PATH"
    skipped = set()
    if not binutils_available():
        skipped = {e.name for e in ENTRIES if _may_need_binutils(e.name)}
    by_file: dict[str, list] = {}
    for entry, answer in zip(ENTRIES, ANSWERS, strict=True):
        by_file.setdefault(Path(entry.file).stem, []).append(answer)
    problems: list[str] = []
    for stem, answers in sorted(by_file.items()):
        target = SNAPSHOT_DIR / f"{stem}.jsonl"
        current = snapshot_lines(answers)
        if UPDATE:
            SNAPSHOT_DIR.mkdir(exist_ok=True)
            target.write_text("\n".join(current) + "\n", encoding="utf-8")
            continue
        recorded = target.read_text(encoding="utf-8").splitlines() if target.exists() else []
        if skipped:
            recorded = [line for line in recorded if json.loads(line)["name"] not in skipped]
            current = [line for line in current if json.loads(line)["name"] not in skipped]
        problems.extend(f"{stem}: {line}" for line in snapshot_diff(recorded, current))
    if not UPDATE:
        stale = {p.stem for p in SNAPSHOT_DIR.glob("*.jsonl")} - set(by_file)
        problems.extend(f"{stem}: snapshot of a corpus file that is gone" for stem in stale)
    assert not problems, (
        "classifier answers differ from the reviewed snapshot; if intended, run\n"
        "  TRACEKIT_UPDATE_SNAPSHOT=1 pytest -q tests/classifier/test_corpus.py\n"
        + "\n".join(problems)
    )


def test_snapshot_diff_reports_changed_added_and_removed_names():
    old = [json.dumps({"name": "a", "path": "bf16", "rule": "r"}),
           json.dumps({"name": "b", "path": "fp8", "rule": "r"})]
    new = [json.dumps({"name": "a", "path": "unknown", "rule": "r"}),
           json.dumps({"name": "c", "path": "fp4", "rule": "s"})]
    lines = snapshot_diff(old, new)
    assert lines == ["~ a: path 'bf16' -> 'unknown'", "- b", "+ c: fp4 (s)"]


def test_corpus_files_are_every_jsonl_in_the_folder():
    files = corpus_files([CORPUS_DIR])
    assert files == sorted(CORPUS_DIR.glob("*.jsonl"))
    assert Counter(Path(e.file).name for e in ENTRIES).keys() == {f.name for f in files}


@pytest.mark.parametrize(
    "line, message",
    [
        ("{", "not a JSON object"),
        ('{"name": "x"}', "missing path"),
        ('{"name": "x", "path": "fp9", "op": "gemm", "weights": null, "activations": null, '
         '"family": "f", "source": "https://x", "why": "y"}', "path 'fp9'"),
        ('{"name": "x", "path": "fp8", "op": "gemm", "weights": "e9m9", "activations": null, '
         '"family": "f", "source": "https://x", "why": "y"}', "weights 'e9m9'"),
        ('{"name": "x", "path": "fp8", "op": "gemm", "weights": null, "activations": null, '
         '"family": "f", "source": "https://x", "why": "y", "extra": 1}', "unknown key extra"),
    ],
)
def test_bad_corpus_lines_are_named_by_file_and_line(tmp_path, line, message):
    from tracekit.errors import InputError

    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)) as info:
        load_corpus([bad], RULESET.operand_types)
    assert f"{bad}:1" in str(info.value)


def test_a_name_labelled_twice_is_refused(tmp_path):
    from tracekit.errors import InputError

    line = ('{"name": "x", "path": "unknown", "op": "other", "weights": null, '
            '"activations": null, "family": "f", "source": "https://x", "why": "y"}')
    (tmp_path / "a.jsonl").write_text(line + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="already labelled"):
        load_corpus([tmp_path], RULESET.operand_types)


def test_the_generated_cutlass_names_are_what_the_generator_writes():
    """tests/corpus/cutlass_generated.jsonl is cutlass_library's output, unedited: where the
    generator is installed (``pip install --no-deps nvidia-cutlass==4.2.0.0``), run it again."""
    pytest.importorskip("cutlass_library")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_cutlass_names", CORPUS_DIR / "make_cutlass_names.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from importlib.metadata import version

    if version("nvidia-cutlass") != module.VERSION:
        pytest.skip(f"nvidia-cutlass {version('nvidia-cutlass')} is not {module.VERSION}")
    committed = (CORPUS_DIR / "cutlass_generated.jsonl").read_text(encoding="utf-8")
    assert module.lines(module.generate()) == committed
