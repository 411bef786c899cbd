"""``tracekit analyze FILE...``: the post-mortem of a finished trace."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tracekit.cli import fail
from tracekit.cli.common import SEVERITIES, exit_code_for, open_for, print_json, store_option
from tracekit.vocabulary import ENGINES


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@store_option
@click.option("--model", type=click.Path(path_type=Path), default=None,
              help="Checkpoint folder, config.json or hf_quant_config.json: what it declares.")
@click.option("--expect", "expect", default=None, metavar="PATH_WORD",
              help="Declared datatype path when no checkpoint is at hand (fp4, fp8, int8, "
                   "weight_only, bf16, fp16, tf32, fp32, fp64).")
@click.option("--gpu", default=None, metavar="NAME|ARCH",
              help="The GPU when the trace does not say (e.g. 'RTX 5090', sm120).")
@click.option("--engine", type=click.Choice(ENGINES), default=None,
              help="The engine that ran the trace, when its step markers and log lines do not "
                   "say: which kernels it can launch for each layer on this GPU.")
@click.option("--log", "logs", multiple=True, type=click.Path(path_type=Path),
              help="Engine log to scan for kernel-selection and fallback lines (repeatable).")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(path_type=Path),
              envvar="TRACEKIT_RULES", help="Extra rule pack folder (repeatable).")
@click.option("--label", default=None, help="A name for this run in `tracekit runs`.")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as one JSON document.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Also write the HTML report to this file.")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default=None,
              help="Exit 1 when a finding at or above this severity exists.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Worker processes reading several files (default: the machine's cores).")
@click.option("--one-run", "one_run", is_flag=True,
              help="Keep several files as one run even when they are not the ranks of one "
                   "job (different GPUs, hosts or times).")
@click.option("--job", default=None, metavar="NAME",
              help="Add the files to the run of job NAME (made by the first analyze that "
                   "names it): each host's analyze adds its ranks to one run.")
@click.option("--fresh", is_flag=True,
              help="Judge a stored run with the options given only (by default the earlier "
                   "judgement's --model/--expect/--gpu/--log/--rules/--engine are kept unless "
                   "given again).")
@click.option("--rehash", is_flag=True,
              help="Recognize a stored trace by its content hash only (by default the same "
                   "path with unchanged size, time and inode is the stored run).")
def analyze(files: tuple[Path, ...], store_url: str | None, model: Path | None,
            expect: str | None, gpu: str | None, engine: str | None, logs: tuple[Path, ...],
            rules_dirs: tuple[Path, ...], label: str | None, as_json: bool,
            html_path: Path | None, fail_on: str | None, jobs: int | None, one_run: bool,
            job: str | None, fresh: bool, rehash: bool) -> None:
    """Analyze trace FILES: which arithmetic each GEMM ran, per phase, with a verdict.

    FILES: an Nsight Systems report (.nsys-rep, .qdstrm, SQLite export), a torch profiler
    trace (.json/.json.gz), Nsight Compute CSV or CUPTI records, or a folder of them (files
    that are no trace are skipped; a `tracekit audit` run folder brings its engine.log).
    Several files are one run when they are the ranks of one job (same GPUs, recorded
    together), read in parallel; others are refused (see --one-run, --job).

    \b
    Example:
      tracekit analyze report.nsys-rep --model ./Llama-3.1-8B-NVFP4 --fail-on error
    """
    from tracekit import progress
    from tracekit.analysis import AnalysisOptions, check_inputs
    from tracekit.analysis import analyze as run_analysis
    from tracekit.expect.context import load_expectations

    # Refuse unreadable inputs before the store is even created.
    gathered = check_inputs(files, label)
    if html_path is not None and not html_path.absolute().parent.is_dir():
        fail(f"cannot write the report {html_path}: folder {html_path.absolute().parent} "
             "does not exist")
    options = AnalysisOptions(model=model, expect=expect, gpu=gpu, logs=logs,
                              rules_dirs=rules_dirs, label=label, rehash=rehash, jobs=jobs,
                              one_run=one_run, job=job, engine=engine, fresh=fresh)
    if fail_on:
        # A CI gate must not pass because a checkpoint path had a typo: with --fail-on, an
        # expectation that cannot be read is bad usage (without it, a warning).
        expectations = load_expectations(options)
        if expectations.model_error is not None:
            fail(f"--model: {expectations.model_error} (--fail-on judges the trace against "
                 "the checkpoint's declaration: fix the config or drop --model)")
        problems = [w for w in expectations.warnings if "not understood" not in w]
        if problems:
            fail(f"{problems[0]} (--fail-on needs every --model/--expect/--gpu/--log to be "
                 "readable)")
    store = open_for(store_url, write=True)
    with progress.shown(machine_output=as_json):
        result = run_analysis(store, list(files), options, gathered=gathered)
        if html_path is not None:
            from tracekit.report.html import write_html

            with progress.task("writing the HTML report"):
                write_html(result.document, store, result.run_id, html_path)
    document = result.document
    for warning in document.get("warnings", []):
        click.echo(f"tracekit: warning: {warning}", err=True)
    for note in result.notes:
        click.echo(f"tracekit: {note}", err=True)
    if result.existing:
        what = ("judged again with the options given" if options.rejudge
                else "showing the stored analysis")
        click.echo(f"tracekit: {files[0]} is already in the store as run {result.run_id}; "
                   f"{what}", err=True)
    if html_path is not None:
        click.echo(f"tracekit: report written to {html_path}", err=True)
    if as_json:
        print_json(document)
    else:
        from tracekit.report.terminal import render

        render(document)
    sys.exit(exit_code_for(document["findings"], fail_on))
