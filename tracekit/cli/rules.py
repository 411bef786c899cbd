"""``tracekit rules list|test|explain|accuracy``: inspect, test and score classification rules.

``rules test [DIR]`` is for people writing their own rule pack: it loads the built-in rules
plus DIR and runs the examples of DIR's rules (all rules without DIR) against that combined
ruleset, exiting 1 when one fails.

``rules accuracy CORPUS…`` scores the rules against labelled names (JSON lines, the format of
tracekit's own ``tests/corpus``): right-path rate, abstention rate and confident-wrong count per
family and/or per GPU architecture (``--by``), and the path x path confusion matrix;
``--markdown`` prints the tables README.md shows. It is a subcommand rather than a test script so
that a rule-pack author can score their pack (``--rules``) against names of their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from tracekit.classifier import classify_name, classify_names, load_ruleset
from tracekit.classifier.corpus import (
    GROUPINGS,
    load_corpus,
    render_markdown,
    render_score,
    score,
    score_as_dict,
)
from tracekit.classifier.engine import all_matches, vetoes
from tracekit.classifier.names import prepare
from tracekit.table_examples import builtin_files, check_files

_RULES_OPTION = click.option(
    "--rules",
    "rule_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Add a rule pack directory (repeatable; also TRACEKIT_RULES).",
)


@click.group("rules")
def rules() -> None:
    """List, test and explain the kernel classification rules."""


@rules.command("list")
@_RULES_OPTION
def list_rules(rule_dirs: tuple[Path, ...]) -> None:
    """Every rule, highest priority first: id, priority, op, path, description."""
    ruleset = load_ruleset(rule_dirs)
    for rule in ruleset.rules:
        path = rule.labels.get("path") or ("decoded" if rule.decode else "derived")
        op = rule.labels.get("op", "-")
        click.echo(f"{rule.id:32} {rule.priority:>4}  {op:12} {path:12} {rule.description[:80]}")
    click.echo(f"{len(ruleset.rules)} rules, {len(ruleset.tables)} tables")


@rules.command("test")
@click.argument(
    "directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option("--strict", is_flag=True, help="Fail on a data file that has no examples.")
def test_rules(directory: Path | None, strict: bool) -> None:
    """Run the examples of every rule and table in DIRECTORY (default: all built-in data files:
    rules, decode tables, phase markers and heuristics, log patterns, GPUs, checkpoints,
    findings, truncation printers, parser specs)."""
    ruleset = load_ruleset([directory] if directory else [])
    files = sorted(directory.glob("*.toml")) if directory else builtin_files()
    results = check_files(files, ruleset)
    for result in results:
        for failure in result.failures:
            click.echo(f"FAIL {result.file}: {failure}")
    untested = [r for r in results if r.untested]
    for result in untested:
        click.echo(f"UNTESTED {result.file} ({result.kind}): no examples")
    examples = sum(r.examples for r in results)
    failed = sum(r.failed_examples for r in results)
    click.echo(f"{examples - failed}/{examples} examples pass in {len(results)} files"
               f" ({len(untested)} without examples)")
    if failed or (strict and untested):
        raise SystemExit(1)


@rules.command("explain")
@click.argument("name")
@click.option("--arch", help="GPU architecture for the feasibility check (sm90, sm120, gfx942).")
@_RULES_OPTION
def explain(name: str, arch: str | None, rule_dirs: tuple[Path, ...]) -> None:
    """Every rule that matches NAME, which one won and why.

    Rules whose pattern occurs in NAME but which an exclude vetoed are listed as "vetoed", with
    the exclude regex or the shared exclude set (rules/_excludes.toml) it came from."""
    ruleset = load_ruleset(rule_dirs)
    kname = prepare(name)
    if kname.demangled:
        click.echo(f"demangled: {kname.text}")
    if kname.truncated:
        click.echo("the name is truncated: classifying what is left")
    matches = all_matches(kname.text, ruleset)
    if not matches:
        click.echo("no rule matches")
    for index, match in enumerate(matches):
        mark = "WINS " if index == 0 else "     "
        groups = ", ".join(f"{k}={v}" for k, v in match.groups.items())
        click.echo(
            f"{mark}{match.rule.id} (priority {match.rule.priority}): path {match.path}"
            f"{'; ' + groups if groups else ''}"
        )
        click.echo(f"      pattern {match.pattern}")
        click.echo(f"      {match.reason}")
    for veto in vetoes(kname.text, ruleset):
        by = (f"exclude set {veto.exclude_set}" if veto.exclude_set
              else f"exclude {veto.exclude}")
        click.echo(f"vetoed {veto.rule.id} (priority {veto.rule.priority}): {by}")
    result = classify_name(name, ruleset, arch=arch)
    click.echo(
        f"result: op={result.op} path={result.path} evidence={result.evidence} "
        f"confidence={result.confidence} rule={result.rule}"
    )
    if len(matches) > 1 and matches[0].rule.fallback_over is not None:
        click.echo(
            f"why: {matches[0].rule.id} is a fallback reading: it answers when no rule matches "
            f"or only one of {', '.join(matches[0].rule.fallback_over)} does"
        )
    elif len(matches) > 1:
        click.echo(
            f"why: {matches[0].rule.id} has the highest priority ({matches[0].rule.priority}) "
            "of the matching rules"
        )
    click.echo(f"reason: {result.reason}")


@rules.command("accuracy")
@click.argument(
    "corpus", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path)
)
@click.option("--by", "by", type=click.Choice(GROUPINGS), default="family", show_default=True,
              help="Group the table per family, per GPU architecture (the entries' arch), or both.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead.")
@click.option("--markdown", "as_markdown", is_flag=True,
              help="Print the Markdown tables of README.md (total, per family, per arch).")
@_RULES_OPTION
def accuracy(corpus: tuple[Path, ...], by: str, as_json: bool, as_markdown: bool,
             rule_dirs: tuple[Path, ...]) -> None:
    """Score the rules on labelled names: CORPUS is JSON-lines files or folders of them."""
    ruleset = load_ruleset(rule_dirs)
    entries = load_corpus(corpus, ruleset.operand_types)
    answers = classify_names([entry.name for entry in entries], ruleset)
    result = score(entries, answers)
    if as_json:
        click.echo(json.dumps(score_as_dict(result), indent=1))
    elif as_markdown:
        click.echo(render_markdown(result))
    else:
        click.echo(render_score(result, by))
