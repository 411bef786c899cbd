"""``tracekit report RUN``: show a stored run again, as text, JSON, HTML or a Perfetto trace."""

from __future__ import annotations

from pathlib import Path

import click

from tracekit.cli.common import print_json, store_option


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("run", metavar="RUN")
@store_option
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Write the self-contained HTML report to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as one JSON document.")
@click.option("--perfetto", "perfetto_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None,
              help="Write the run as a Chrome/Perfetto trace (JSON; gzip-compressed when "
                   "the name ends in .gz) to this file.")
def report(run: str, store_url: str | None, html_path: Path | None, as_json: bool,
           perfetto_path: Path | None) -> None:
    """Report on a stored RUN: the terminal summary, or --json / --html / --perfetto.

    RUN is a run id, `latest`, -1 (latest), -2 (the one before), … or a run's label.

    \b
    Examples:
      tracekit report latest
      tracekit report 3 --html run3.html --perfetto run3.json
      tracekit report -1 --json > run.json
    """
    from tracekit import progress
    from tracekit.api import RunStore

    with RunStore(store_url) as store, progress.shown(machine_output=as_json):
        selected = store.run(run)
        document = selected.document()
        if html_path is not None:
            with progress.task("writing the HTML report"):
                selected.to_html(html_path)
            click.echo(f"tracekit: report written to {html_path}", err=True)
        if perfetto_path is not None:
            from tracekit.report.perfetto import count_kernels, write_perfetto

            with progress.task("Perfetto export", total=count_kernels(store.reader(),
                                                                        selected.id),
                               unit="kernels") as task:
                exported = write_perfetto(store.reader(), selected.id, perfetto_path,
                                          progress=task.advance)
            click.echo(f"tracekit: Perfetto trace written to {perfetto_path} "
                       f"({exported.kernels:,} kernels, {exported.steps:,} steps; open it in "
                       "ui.perfetto.dev)", err=True)
        if as_json:
            print_json(document)
        elif html_path is None and perfetto_path is None:
            from tracekit.report.terminal import render

            render(document)
