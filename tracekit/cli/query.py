"""``tracekit query SQL``: read-only SQL over the store, as a table, CSV or JSON."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

import click

from tracekit.cli.common import open_for, store_option


def _cell(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


def _text(value: Any) -> str:
    return "" if value is None else str(_cell(value))


@click.command()
@click.argument("sql")
@store_option
@click.option("--format", "output_format", type=click.Choice(["table", "csv", "json"]),
              default="table", show_default=True, help="Output format.")
def query(sql: str, store_url: str | None, output_format: str) -> None:
    """Run one read-only SQL statement over the store and print the rows.

    The store cannot be changed from here: SQLite stores are opened read-only and
    PostgreSQL sessions are read-only transactions; a write is refused with one line.

    \b
    Example:
      tracekit query "SELECT id, gpu, verdict FROM runs" --format csv
    """
    from tracekit.store.query import run_query

    store = open_for(store_url, write=False)
    try:
        with run_query(store, sql) as result:
            if output_format == "csv":
                writer = csv.writer(sys.stdout, lineterminator="\n")
                writer.writerow(result.columns)
                for batch in result.batches:
                    writer.writerows([[_text(v) for v in row] for row in batch])
            elif output_format == "json":
                _write_json(result.columns, result.batches)
            else:
                _write_table(result.columns, [row for batch in result.batches for row in batch])
    finally:
        store.dispose()


def _write_json(columns: list[str], batches: Any) -> None:
    """A JSON array of row objects, streamed batch by batch."""
    out = sys.stdout
    out.write("[")
    first = True
    for batch in batches:
        for row in batch:
            out.write("\n  " if first else ",\n  ")
            first = False
            out.write(json.dumps(dict(zip(columns, map(_cell, row), strict=True)), default=str,
                                 ensure_ascii=False))
    out.write("\n]\n" if not first else "]\n")


def _write_table(columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    """Aligned plain-text columns (no colours: this output is meant to be read and piped)."""
    if not columns:
        return
    cells = [[_text(v).replace("\n", " ") for v in row] for row in rows]
    widths = [min(max([len(c)] + [len(r[i]) for r in cells]), 80)
              for i, c in enumerate(columns)]

    def line(values: list[str]) -> str:
        return "  ".join(v[:w].ljust(w) for v, w in zip(values, widths, strict=False)).rstrip()

    click.echo(line(columns))
    click.echo(line(["-" * w for w in widths]))
    for row in cells:
        click.echo(line(row))
    click.echo(f"({len(cells)} row{'s' if len(cells) != 1 else ''})", err=True)
