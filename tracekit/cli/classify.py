"""``tracekit classify``: classify kernel names given on the command line, in a file, or on stdin.

``--format jsonl`` prints exactly one JSON object per input name, in input order: every line of
``--names-file`` is one name, blank lines included (they come back as ``unknown`` with the reason
"empty kernel name"), so output line N always answers input line N.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracekit.classifier import classify_names, load_ruleset
from tracekit.classifier.model import Classification
from tracekit.errors import InputError
from tracekit.report.names import distinct_cuts


def read_names(names_file: str) -> list[str]:
    """One name per line (``-`` = stdin); only the line ending is stripped."""
    if names_file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(names_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"{names_file}: cannot read names file: {exc.strerror}") from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line does not start another name
    return [line.rstrip("\r") for line in lines]


def _table(results: list[Classification]) -> str:
    rows = [("PATH", "OP", "CONF", "RULE", "NAME")]
    names = distinct_cuts([r.name for r in results], 90)
    for r, name in zip(results, names, strict=True):
        rows.append((r.path, r.op, r.confidence, r.rule or "-", name))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4]
        for row in rows
    ]
    unknown = [
        r
        for r in results
        if r.path == "unknown" and r.op in ("gemm", "grouped_gemm", "gemv", "attention")
    ]
    for r in unknown:
        lines.append(f"  unknown: {r.name[:60]}: {r.reason}")
    return "\n".join(lines)


@click.command("classify")
@click.argument("names", nargs=-1)
@click.option(
    "--names-file",
    "names_file",
    metavar="FILE|-",
    help="Read one kernel name per line ('-' = stdin).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table", show_default=True
)
@click.option(
    "--rules",
    "rule_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Add a rule pack directory (repeatable; also TRACEKIT_RULES).",
)
@click.option(
    "--arch", help="GPU architecture the kernels ran on (sm90, sm120, gfx942): checks feasibility."
)
def classify(
    names: tuple[str, ...],
    names_file: str | None,
    fmt: str,
    rule_dirs: tuple[Path, ...],
    arch: str | None,
) -> None:
    """Classify kernel NAMEs by the datatype path their math really ran."""
    all_names = list(names)
    if names_file is not None:
        all_names.extend(read_names(names_file))
    if not all_names and names_file is None:
        raise click.UsageError("give kernel names as arguments or with --names-file FILE|-")
    ruleset = load_ruleset(rule_dirs)
    results = classify_names(all_names, ruleset, arch=arch)
    if fmt == "jsonl":
        out = sys.stdout
        for result in results:
            out.write(json.dumps(result.as_dict(), ensure_ascii=False) + "\n")
        out.flush()
    else:
        click.echo(_table(results))
