"""One ``tracekit audit`` capture from start to finish, without the analysis.

plan (backend, engine preset, window) → run folder → start the command under supervision →
optionally drive a workload against it → stop it (workload done, Ctrl-C, or it ended/crashed)
→ end every leftover process → collect the trace files → ``run.json``. The CLI then analyzes
the collected files exactly as ``tracekit analyze`` would.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from tracekit.capture import backends
from tracekit.capture.engines import (
    EnginePreset,
    HttpWindow,
    engine_env,
    fill,
    for_version,
    is_server,
    preset_for,
    server_url,
)
from tracekit.capture.lifecycle import (
    LOG_NAME,
    ChildOutcome,
    StopPolicy,
    Supervisor,
    discard_run_dir,
    make_run_dir,
    utc_now,
    write_record,
)
from tracekit.capture.ncu import NcuSettings
from tracekit.capture.nsys import NsysSettings
from tracekit.capture.workload import Driver, LoadSpec, WorkloadReport
from tracekit.errors import InputError
from tracekit.version import __version__

#: exit statuses of a command that ended because tracekit sent it SIGINT/SIGTERM/SIGKILL
STOPPED_BY_US = (130, 143, 137)
#: backends that run inside the program's own process and do not follow its children
IN_PROCESS_BACKENDS = ("torch", "cupti")


@dataclass
class AuditSettings:
    """What ``tracekit audit`` was asked to do (CLI options, parsed)."""

    command: list[str]
    backend: str = "nsys"
    engine: str | None = None
    output: Path | None = None
    load: LoadSpec | None = None
    url: str | None = None
    window: str = "auto"
    nsys: NsysSettings = field(default_factory=NsysSettings)
    ncu: NcuSettings = field(default_factory=NcuSettings)
    gpu: str | None = None
    stop: StopPolicy = field(default_factory=StopPolicy)
    echo: IO[bytes] | None = None


@dataclass
class AuditOutcome:
    """What the capture produced."""

    run_dir: Path
    plan: backends.CapturePlan
    child: ChildOutcome
    traces: list[Path]
    workload: WorkloadReport | None
    record: dict[str, Any]
    notes: list[str]

    @property
    def exit_code(self) -> int:
        """The wrapped command's status, with two corrections.

        0 when tracekit itself stopped a server after the workload (its SIGINT status is not a
        failure); 130 when the user interrupted the run and the command still reported 0 (nsys
        does not always pass the interrupted program's status on), so CI never reads an
        interrupted audit as a success.
        """
        code = self.child.returncode
        if self.child.stop_reason == "workload finished" and code in STOPPED_BY_US:
            return 0
        if self.child.interrupted and code == 0:
            return 130
        return code


def resolve(settings: AuditSettings) -> tuple[EnginePreset | None, bool, str | None]:
    """(engine preset, whether the engine's own hook opens the window, server URL)."""
    if not settings.command:
        raise InputError("nothing to run", hint="tracekit audit [OPTIONS] -- COMMAND ...")
    preset = preset_for(settings.engine, settings.command)
    url = settings.url
    if settings.load is not None:
        if url is None and not is_server(preset, settings.command):
            raise InputError(f"--load needs a server command; {settings.command[0]} is not one "
                             "tracekit knows", hint="pass --url http://HOST:PORT of its server")
        url = url or server_url(preset, settings.command)
    if settings.backend in IN_PROCESS_BACKENDS and preset is not None and preset.server:
        if settings.backend == "torch" and preset.torch_hook is not None:
            if settings.load is None:
                raise InputError(f"--backend torch on {preset.name} uses the engine's own torch "
                                 "profiler, which a workload opens and closes",
                                 hint="add --load smoke (or another workload)")
            return preset, True, url
        raise InputError(f"--backend {settings.backend} profiles one Python process; "
                         f"{preset.name} runs its GPU work in worker processes",
                         hint="use --backend nsys (it follows child processes)")
    engine_window = False
    if settings.window != "whole" and preset is not None and settings.backend == "nsys":
        hook_by_http = preset.http_window is not None and settings.load is not None and \
            settings.load.profile_window
        hook_by_env = preset.env_window is not None and preset.env_window in os.environ
        engine_window = hook_by_http or hook_by_env
    if settings.window == "engine" and not engine_window:
        raise InputError("--window engine: this engine's profiling hook cannot be driven here",
                         hint="vLLM/SGLang need --load; TRT-LLM needs TLLM_PROFILE_START_STOP")
    return preset, engine_window, url


def plan(settings: AuditSettings, run_dir: Path, *, dry_run: bool = False
         ) -> tuple[backends.CapturePlan, EnginePreset | None, bool, str | None]:
    """The capture plan (tool checks included unless ``dry_run``)."""
    preset, engine_window, url = resolve(settings)
    version = engine_version(preset, settings.command) if preset and preset.legacy_window \
        and engine_window and not dry_run else None
    if preset is not None:
        preset = for_version(preset, version, settings.backend)
    request = backends.CaptureRequest(command=settings.command, backend=settings.backend,
                                      preset=preset, engine_window=engine_window,
                                      nsys=settings.nsys, ncu=settings.ncu)
    capture = backends.plan_capture(request, run_dir, dry_run=dry_run)
    capture.env = {**engine_env(preset), **capture.env}
    return capture, preset, engine_window, url


def engine_http_window(preset: EnginePreset | None, capture: backends.CapturePlan
                       ) -> HttpWindow | None:
    """The HTTP calls that open and close the engine's window for this backend."""
    if preset is None:
        return None
    if capture.backend == "torch" and preset.torch_hook is not None:
        return HttpWindow(**fill(vars(preset.torch_hook.window), str(capture.output)))
    return preset.http_window


def engine_version(preset: EnginePreset | None, command: list[str]) -> str | None:
    """The engine's version from its own interpreter's package metadata (best effort)."""
    if preset is None or preset.package is None:
        return None
    return _package_version(preset.package, tuple(command))


@functools.lru_cache(maxsize=8)
def _package_version(package: str, command: tuple[str, ...]) -> str | None:
    try:
        interpreter, _ = backends.python_program(list(command))
    except InputError:
        return None
    out = backends.run_quiet([interpreter, "-c", "import importlib.metadata as m; "
                              f"print(m.version({package!r}))"], 60)
    return out.strip() if out else None


def base_record(settings: AuditSettings, capture: backends.CapturePlan,
                preset: EnginePreset | None, run_dir: Path) -> dict[str, Any]:
    """``run.json`` as known before the command starts."""
    return {
        "tracekit_run": 1,
        "status": "running",
        "run_dir": str(run_dir),
        "tracekit_version": __version__,
        "backend": capture.backend,
        "tool": {"name": capture.backend, "path": capture.tool, "version": capture.tool_version},
        "engine": preset.name if preset else None,
        "engine_version": engine_version(preset, settings.command),
        "engine_source": preset.source if preset else None,
        "command": list(settings.command),
        "argv": capture.argv,
        "env": capture.env,
        "cwd": os.getcwd(),
        "gpu": {"requested": settings.gpu, "detected": backends.gpu_names()},
        "log": LOG_NAME,
    }


class _Signals:
    """Routes SIGINT/SIGTERM/SIGHUP to a stop request while a capture runs."""

    NAMES = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, on_signal: Callable[[], None]) -> None:
        self.on_signal = on_signal
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in self.NAMES:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.on_signal()

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def run_audit(settings: AuditSettings, say: Callable[[str], None]) -> AuditOutcome:
    """Capture: start, drive, stop, clean up, collect, record."""
    backends.check_command(settings.command)
    existed = settings.output is not None and settings.output.exists()
    run_dir = make_run_dir(settings.output)
    try:
        capture, preset, engine_window, url = plan(settings, run_dir)
    except BaseException:
        # A pre-flight that fails (no profiler, a backend that cannot run this command)
        # leaves no run folder behind: nothing ran, there is nothing to keep.
        discard_run_dir(run_dir, existed=existed)
        raise
    record = base_record(settings, capture, preset, run_dir)
    write_record(run_dir, record)
    notes = list(capture.notes)
    for note in notes:
        say(note)
    supervisor = Supervisor(capture.argv, capture.env, run_dir / LOG_NAME, settings.echo,
                            policy=settings.stop, say=say)
    stop_load = threading.Event()

    def interrupted() -> None:
        stop_load.set()
        supervisor.request_stop("interrupted")

    workload: WorkloadReport | None = None
    with _Signals(interrupted):
        say(f"running {' '.join(settings.command)} under {capture.backend}; run folder {run_dir}")
        supervisor.start()
        record["pid"] = supervisor.pid
        write_record(run_dir, record)
        driver_thread: threading.Thread | None = None
        reports: list[WorkloadReport] = []
        if settings.load is not None and url is not None:
            window = engine_http_window(preset, capture) if engine_window else None
            driver = Driver(url, settings.load, window, engine_alive=supervisor.running,
                            stop=stop_load)

            def drive() -> None:
                reports.append(driver.run())
                if supervisor.running():
                    supervisor.request_stop("workload finished")

            driver_thread = threading.Thread(target=drive, name="tracekit-load", daemon=True)
            driver_thread.start()
        child = supervisor.wait()
        stop_load.set()
        if driver_thread is not None:
            driver_thread.join(timeout=30.0)
            workload = reports[0] if reports else None
    traces = backends.collect(capture)
    notes += [note for note in capture.notes if note not in notes]
    status = _status(child, workload)
    if child.leftovers_ended:
        notes.append(f"ended {len(child.leftovers_ended)} leftover process(es) of the capture")
    if not traces:
        notes.append(f"{capture.backend} wrote no trace into {run_dir}")
    record.update({
        "status": status,
        "exit_code": child.returncode,
        "stop_reason": child.stop_reason,
        "signals_sent": child.signals_sent,
        "started_at": child.started_at,
        "ended_at": child.ended_at,
        "wall_s": child.wall_s,
        "leftovers_ended": child.leftovers_ended,
        "traces": [str(path) for path in traces],
        "workload": workload.as_dict() if workload else None,
        "window": "engine" if engine_window else "whole run",
        "notes": notes,
        "recorded_at": utc_now(),
    })
    write_record(run_dir, record)
    return AuditOutcome(run_dir, capture, child, traces, workload, record, notes)


def _status(child: ChildOutcome, workload: WorkloadReport | None) -> str:
    """complete | interrupted | crashed | failed."""
    if child.interrupted:
        return "interrupted"
    if child.stop_reason == "workload finished":
        return "crashed" if workload is not None and workload.error else "complete"
    if child.returncode == 0:
        return "complete"
    return "crashed" if child.returncode > 128 else "failed"
