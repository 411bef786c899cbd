"""``tracekit rules list|test|explain``: inspect and test classification rules.

``rules test [DIR]`` is for people writing their own rule pack: it loads the built-in rules
plus DIR and runs the examples of DIR's rules (all rules without DIR) against that combined
ruleset, exiting 1 when one fails.
"""

from __future__ import annotations

from pathlib import Path

import click

from tracekit.classify import classify_name, load_ruleset
from tracekit.classify.engine import all_matches
from tracekit.classify.names import prepare
from tracekit.classify.testing import check_examples

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
def test_rules(directory: Path | None) -> None:
    """Run the examples of the rules in DIRECTORY (default: every rule)."""
    ruleset = load_ruleset([directory] if directory else [])
    ids = (
        {p.stem for p in directory.glob("*.toml") if not p.name.startswith("_")}
        if directory
        else None
    )
    count, failures = check_examples(ruleset, ids)
    for failure in failures:
        click.echo(f"FAIL {failure}")
    rules_tested = len(ids) if ids is not None else len(ruleset.rules)
    click.echo(
        f"{count - len({(f.rule, f.index) for f in failures})}/{count} examples pass "
        f"({rules_tested} rules)"
    )
    if failures:
        raise SystemExit(1)


@rules.command("explain")
@click.argument("name")
@click.option("--arch", help="GPU architecture for the feasibility check (sm90, sm120, gfx942).")
@_RULES_OPTION
def explain(name: str, arch: str | None, rule_dirs: tuple[Path, ...]) -> None:
    """Every rule that matches NAME, which one won and why."""
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
    result = classify_name(name, ruleset, arch=arch)
    click.echo(
        f"result: op={result.op} path={result.path} evidence={result.evidence} "
        f"confidence={result.confidence} rule={result.rule}"
    )
    if len(matches) > 1:
        click.echo(
            f"why: {matches[0].rule.id} has the highest priority ({matches[0].rule.priority}) "
            "of the matching rules"
        )
    click.echo(f"reason: {result.reason}")
