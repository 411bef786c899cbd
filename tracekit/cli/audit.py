"""``tracekit audit [OPTIONS] -- COMMAND...``: run an engine under a profiler and report."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tracekit.capture.backends import BACKENDS
from tracekit.capture.engines import PRESETS
from tracekit.cli.common import SEVERITIES, exit_code_for, open_for, print_json, store_option
from tracekit.errors import InputError, TracekitError


def say(message: str) -> None:
    """Progress and notes: one line on stderr."""
    click.echo(f"tracekit: {message}", err=True)


@click.command(context_settings={"ignore_unknown_options": True,
                                 "help_option_names": ["-h", "--help"]})
@click.option("--backend", type=click.Choice(BACKENDS), default="nsys", show_default=True,
              help="Profiler: nsys (any command), torch / cupti (Python programs), ncu "
                   "(tensor-pipe counters of the top GEMMs of a previous run), rocprof "
                   "(rocprofv3 on AMD GPUs, any command).")
@click.option("--engine", type=click.Choice(sorted(PRESETS)), default=None,
              help="Engine preset (default: detected from the command).")
@click.option("--model", type=click.Path(path_type=Path), default=None,
              help="Checkpoint folder or config.json: what it declares.")
@click.option("--expect", default=None, metavar="PATH_WORD",
              help="Declared datatype path when no checkpoint is at hand (fp4, fp8, …).")
@click.option("--gpu", default=None, metavar="NAME|ARCH",
              help="The GPU, when the trace does not say.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Run folder (default tracekit-runs/<UTC timestamp>).")
@click.option("--load", "load", default=None, metavar="FILE|PRESET",
              help="Send an OpenAI-compatible workload to the server the command starts: "
                   "smoke, prefill, decode, mixed, or a TOML/JSON file.")
@click.option("--url", default=None, metavar="URL",
              help="The server's base URL for --load (default from the command's --host/--port).")
@click.option("--window", type=click.Choice(("auto", "whole", "engine")), default="auto",
              show_default=True,
              help="Capture window: the engine's own profiler hook when it can be driven "
                   "(auto), the whole run, or insist on the engine hook.")
@click.option("--dry-run", is_flag=True, help="Print the exact command lines and stop.")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as one JSON document.")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default=None,
              help="Exit 1 when a finding at or above this severity exists.")
@click.option("--label", default=None, help="A name for this run in `tracekit runs`.")
@click.option("--nsys-trace", "nsys_trace", multiple=True, metavar="API[,API]",
              help="More nsys -t APIs on top of cuda,nvtx (e.g. cublas, osrt).")
@click.option("--nsys-arg", "nsys_args", multiple=True, metavar="ARG",
              help="Extra argument for nsys profile, verbatim (repeatable).")
@click.option("--delay", type=float, default=None, metavar="S",
              help="Start collecting S seconds after launch (nsys --delay).")
@click.option("--duration", type=float, default=None, metavar="S",
              help="Collect for S seconds (nsys --duration).")
@click.option("--ncu-run", type=int, default=None, metavar="RUN",
              help="ncu: profile the top GEMMs of this stored run (default: the latest).")
@click.option("--ncu-top", type=int, default=5, show_default=True,
              help="ncu: how many GEMM kernel names to profile.")
@click.option("--ncu-kernel", "ncu_kernels", multiple=True, metavar="NAME",
              help="ncu: profile kernels whose demangled name starts with NAME (repeatable).")
@click.option("--stop-timeout", type=float, default=60.0, show_default=True, metavar="S",
              help="How long a stopped command may take to exit after SIGINT before SIGTERM.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def audit(backend: str, engine: str | None, model: Path | None, expect: str | None,
          gpu: str | None, output: Path | None, load: str | None, url: str | None,
          window: str, dry_run: bool, store_url: str | None, as_json: bool,
          fail_on: str | None, label: str | None, nsys_trace: tuple[str, ...],
          nsys_args: tuple[str, ...], delay: float | None, duration: float | None,
          ncu_run: int | None, ncu_top: int, ncu_kernels: tuple[str, ...],
          stop_timeout: float, command: tuple[str, ...]) -> None:
    """Run COMMAND under a profiler, then analyze what the GPU really ran.

    Everything lands in one run folder: the trace, engine.log (the command's output, also
    shown here) and run.json (exact commands, environment, versions, exit code, timings).
    Ctrl-C stops the command and still analyzes what was captured. The exit code is the
    command's own when it failed, else the --fail-on verdict.

    \b
    Examples:
      tracekit audit -- python my_offline_run.py
      tracekit audit --load decode --model ./Llama-NVFP4 -- vllm serve ./Llama-NVFP4
      tracekit audit --dry-run --load smoke -- python -m sglang.launch_server --model-path M
    """
    from tracekit.capture.lifecycle import StopPolicy
    from tracekit.capture.nsys import NsysSettings
    from tracekit.capture.session import AuditSettings, run_audit
    from tracekit.capture.workload import load_spec
    from tracekit.store.selectors import check_label

    check_label(label)

    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise InputError("nothing to run", hint="tracekit audit [OPTIONS] -- COMMAND ...")
    settings = AuditSettings(
        command=list(command), backend=backend, engine=engine, output=output,
        load=load_spec(load) if load else None, url=url, window=window,
        nsys=NsysSettings(trace=nsys_trace, delay_s=delay, duration_s=duration,
                          extra_args=nsys_args),
        gpu=gpu, stop=StopPolicy(sigint_s=stop_timeout),
        echo=(sys.stderr if as_json else sys.stdout).buffer)
    if backend == "ncu":
        settings.ncu = _ncu_settings(store_url, ncu_run, ncu_top, ncu_kernels)
    if dry_run:
        _dry_run(settings)
        return
    outcome = run_audit(settings, say)
    code = outcome.exit_code
    if outcome.child.interrupted:
        say("interrupted: the command was stopped; analyzing what was captured")
    elif outcome.record["status"] in ("crashed", "failed"):
        say(f"the command exited with code {code} ({outcome.record['status']})"
            + ("; analyzing what was captured" if outcome.traces else ""))
    if not outcome.traces:
        from tracekit.capture.backends import startup_failure

        log = outcome.run_dir / "engine.log"
        complaint = startup_failure(outcome.plan, log.read_text(errors="replace")
                                    if log.exists() else "")
        if complaint:
            say(f"error: {outcome.plan.backend} could not start the capture: {complaint}")
            _finish(2, outcome.run_dir, as_json)
        say(f"no trace was captured; see {log}")
        _finish(code or 2, outcome.run_dir, as_json)
    from tracekit import progress

    with progress.shown(machine_output=as_json):
        document = _analyze(outcome, store_url, model, expect, gpu, label)
    if document is None:
        _finish(code or 2, outcome.run_dir, as_json)
    document["audit"] = {key: outcome.record.get(key) for key in (
        "run_dir", "status", "exit_code", "backend", "engine", "command", "argv", "traces",
        "window", "workload", "notes")}
    for warning in document.get("warnings", []):
        click.echo(f"tracekit: warning: {warning}", err=True)
    if as_json:
        print_json(document)
    else:
        from tracekit.report.terminal import render

        render(document)
    _finish(code or exit_code_for(document["findings"], fail_on), outcome.run_dir, as_json)


def _analyze(outcome: Any, store_url: str | None, model: Path | None, expect: str | None,
             gpu: str | None, label: str | None) -> dict[str, Any] | None:
    """The same analysis as ``tracekit analyze``; None (and one line) when it fails."""
    from tracekit.analysis import AnalysisOptions, analyze
    from tracekit.capture.lifecycle import write_record
    from tracekit.store.db import display_url

    log = outcome.run_dir / "engine.log"
    options = AnalysisOptions(model=model, expect=expect, gpu=gpu,
                              logs=[log] if log.exists() else [], label=label,
                              engine=outcome.record.get("engine"), work_dir=outcome.run_dir,
                              allow_no_kernels=True)
    try:
        store = open_for(store_url, write=True)
        result = analyze(store, outcome.traces[:1], options)
        for other in outcome.traces[1:]:  # one report per capture window (repeat)
            say(f"{other.name}: another capture window; analyze it with "
                f"`tracekit analyze {other}`")
    except TracekitError as exc:
        say(f"error: analysis failed: {exc.one_line()}")
        outcome.record["analysis"] = {"error": exc.one_line()}
        write_record(outcome.run_dir, outcome.record)
        return None
    outcome.record["analysis"] = {"run_id": result.run_id, "store": display_url(store.url)}
    write_record(outcome.run_dir, outcome.record)
    return result.document


def _finish(code: int, run_dir: Path, as_json: bool) -> NoReturn:
    click.echo(f"tracekit: run folder: {run_dir}", err=True)
    sys.exit(code)


def _ncu_settings(store_url: str | None, run_id: int | None, top: int,
                  kernels: tuple[str, ...]) -> Any:
    from tracekit.capture.ncu import NcuSettings, top_gemms

    if kernels:
        return NcuSettings(kernel_names=list(kernels))
    store = open_for(store_url, write=False)
    try:
        found_run, names = top_gemms(store, run_id, top)
    except Exception as exc:  # noqa: BLE001 - no store yet: profile without a name filter
        say(f"ncu: no previous run to pick GEMMs from ({type(exc).__name__})")
        return NcuSettings()
    if run_id is not None and not names:
        raise InputError(f"--ncu-run {run_id}: no classified GEMMs in that run")
    if found_run is not None:
        say(f"ncu: profiling the top {len(names)} GEMM(s) of run {found_run}")
    return NcuSettings(kernel_names=names)


def _dry_run(settings: Any) -> None:
    """Print the exact command lines (and the workload's HTTP calls) without running."""
    from tracekit.capture.lifecycle import DEFAULT_RUNS_DIR
    from tracekit.capture.session import engine_http_window, plan

    run_dir = (settings.output or DEFAULT_RUNS_DIR / "<timestamp>")
    capture, preset, engine_window, url = plan(settings, Path(run_dir), dry_run=True)
    click.echo(f"# backend {capture.backend}; engine {preset.name if preset else 'unknown'}; "
               f"window {'engine hook' if engine_window else 'whole run'}; run folder {run_dir}")
    for note in capture.notes:
        click.echo(f"# {note}")
    env = " ".join(f"{key}={shlex.quote(value)}" for key, value in capture.env.items())
    click.echo((f"env {env} " if env else "") + shlex.join(capture.argv))
    if settings.load is not None and url is not None:
        spec = settings.load
        click.echo(f"# workload: wait for {url}/health or {url}/v1/models; {spec.warmup} warm-up "
                   "request(s)")
        hook = engine_http_window(preset, capture) if engine_window else None
        if hook is not None:
            body = f" {json.dumps(hook.start_body)}" if hook.start_body else ""
            click.echo(f"POST {url}{hook.start_path}{body}")
        click.echo(f"POST {url}/v1/completions × {spec.requests} (prompt ≈{spec.prompt_tokens} "
                   f"tokens, max_tokens {spec.max_tokens}, concurrency {spec.concurrency})")
        if hook is not None:
            click.echo(f"POST {url}{hook.stop_path}")
        click.echo("# then SIGINT to the command's process group (SIGTERM, SIGKILL if it hangs)")
    if capture.backend == "ncu":
        click.echo(f"{capture.tool or 'ncu'} --import {capture.output}.ncu-rep --csv --page raw")
