"""``tracekit runs``: the runs in the store over time; ``--delete`` removes runs whole."""

from __future__ import annotations

from pathlib import Path

import click

from tracekit.cli.common import open_for, print_json, store_option

VERDICT_WIDTH = 70


def _clip(value: str | None, width: int) -> str:
    if not value:
        return "–"
    return value if len(value) <= width else value[: width - 1] + "…"


@click.command()
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the runs as one JSON document.")
@click.option("--delete", "delete_ids", type=int, multiple=True, metavar="ID",
              help="Delete these runs and everything derived from them (repeatable; "
                   "extra IDs may follow as arguments).")
@click.argument("more_ids", nargs=-1, type=int, metavar="[ID]...")
def runs(store_url: str | None, as_json: bool, delete_ids: tuple[int, ...],
         more_ids: tuple[int, ...]) -> None:
    """List the runs in the store: when, source, GPU, engine, model, verdict, kernels.

    \b
    Examples:
      tracekit runs
      tracekit runs --json
      tracekit runs --delete 3 4
    """
    from tracekit.store.runs import delete_runs, list_runs

    if more_ids and not delete_ids:
        raise click.UsageError("run ids as arguments go with --delete, e.g. --delete 3 4")
    if delete_ids:
        store = open_for(store_url, write=True)
        try:
            deleted = delete_runs(store, [*delete_ids, *more_ids])
        finally:
            store.dispose()
        if as_json:
            print_json({"deleted": deleted})
        else:
            click.echo(f"deleted run{'s' if len(deleted) > 1 else ''} "
                       f"{', '.join(map(str, deleted))}")
        return
    store = open_for(store_url, write=False)
    try:
        with store.connect() as connection:
            summaries = list_runs(connection)
    finally:
        store.dispose()
    if as_json:
        print_json({"runs": [summary.as_dict() for summary in summaries]})
        return
    if not summaries:
        click.echo("no runs yet: tracekit analyze TRACE adds one", err=True)
        return
    from rich.table import Table

    from tracekit.report.terminal import PipeSafeConsole

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("id", "when", "source", "format", "GPU", "engine", "model", "kernels",
                   "verdict"):
        table.add_column(column, justify="right" if column in ("id", "kernels") else "left",
                         overflow="fold" if column == "verdict" else "ellipsis",
                         no_wrap=column != "verdict")
    for summary in summaries:
        table.add_row(str(summary.id), summary.created_at.replace("T", " ")[:19],
                      _clip(summary.label or Path(summary.source).name, 40), summary.format,
                      _clip(summary.gpu, 32), summary.engine or "–",
                      _clip(summary.model_label, 32), f"{summary.kernels:,}",
                      _clip(summary.verdict, VERDICT_WIDTH))
    import sys

    PipeSafeConsole(highlight=False, soft_wrap=False,
            width=None if sys.stdout.isatty() else 200).print(table)
