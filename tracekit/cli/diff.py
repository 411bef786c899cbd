"""``tracekit diff RUN_A RUN_B``: what changed in the arithmetic between two runs."""

from __future__ import annotations

from pathlib import Path

import click

from tracekit.cli.common import print_json, store_option


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("run_a", metavar="RUN_A")
@click.argument("run_b", metavar="RUN_B")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as one JSON document.")
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Write the comparison as a self-contained HTML page.")
def diff(run_a: str, run_b: str, store_url: str | None, as_json: bool,
         html_path: Path | None) -> None:
    """Compare RUN_A with RUN_B: GEMM time by datatype path per phase, kernels on one side
    only, findings that differ.

    The canonical use: the same model label, two checkpoints (say W4A4 FP4 kernels against
    Marlin W4A16), one GPU. A run is an id, `latest`, -1, -2, … or a label.

    \b
    Examples:
      tracekit diff 3 4
      tracekit diff -2 -1 --html diff.html
      tracekit diff nvfp4-a nvfp4-b --json
    """
    from tracekit.api import RunStore, compare
    from tracekit.report.diff import render_diff

    with RunStore(store_url) as store:
        comparison = compare(store.run(run_a), store.run(run_b))
    if html_path is not None:
        from tracekit.report.html import write_diff_html

        write_diff_html(comparison, html_path)
        click.echo(f"tracekit: comparison written to {html_path}", err=True)
    if as_json:
        print_json(comparison)
    elif html_path is None:
        render_diff(comparison)
