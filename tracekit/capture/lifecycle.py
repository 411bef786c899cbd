"""Process supervision for ``tracekit audit``: run folder, log tee, graceful stop, clean exit.

The wrapped command runs in its own session (so a terminal Ctrl-C reaches tracekit only, and
tracekit decides the order things stop in); its stdout/stderr are streamed to the terminal and
saved to ``engine.log``. Stopping is a ladder — SIGINT to the command's process group (nsys
then finishes its report, engines shut down cleanly), SIGTERM, SIGKILL — and afterwards every
process the capture started that is still alive is ended (see ``procs``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tracekit.capture.procs import ProcessTracker, end_processes, reap_orphans, set_subreaper
from tracekit.errors import InputError

DEFAULT_RUNS_DIR = Path("tracekit-runs")
LOG_NAME = "engine.log"
RECORD_NAME = "run.json"
POLL_S = 0.2
SNAPSHOT_EVERY_S = 1.0


def utc_now() -> str:
    """ISO 8601 UTC timestamp, second precision."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def make_run_dir(output: Path | None) -> Path:
    """The run folder: ``-o DIR`` (empty or new), else ``tracekit-runs/<UTC timestamp>``."""
    if output is not None:
        if (output / RECORD_NAME).exists():
            raise InputError(f"{output}: already holds a run ({RECORD_NAME})",
                             hint="pass a new -o folder")
        output.mkdir(parents=True, exist_ok=True)
        return output.resolve()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    candidate = DEFAULT_RUNS_DIR / stamp
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = DEFAULT_RUNS_DIR / f"{stamp}-{suffix}"
    candidate.mkdir(parents=True)
    return candidate.resolve()


def discard_run_dir(run_dir: Path, *, existed: bool) -> None:
    """Remove a run folder that a capture made and never used (its pre-flight failed).

    A folder the user gave with ``-o`` that existed before is left as it was (it may hold
    the user's files). The ``tracekit-runs`` parent goes too when this folder was all it
    held.
    """
    if existed:
        return
    shutil.rmtree(run_dir, ignore_errors=True)
    parent = run_dir.parent
    if parent.name == DEFAULT_RUNS_DIR.name:
        try:
            parent.rmdir()  # only when empty
        except OSError:
            pass


def write_record(run_dir: Path, record: Mapping[str, Any]) -> Path:
    """Write ``run.json`` atomically (a rename), so a reader never sees half a file."""
    path = run_dir / RECORD_NAME
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(record, indent=2, default=str, ensure_ascii=False) + "\n")
    partial.replace(path)
    return path


class Tee(threading.Thread):
    """Copies a child's pipe to a terminal stream and to the shared log file."""

    def __init__(self, pipe: IO[bytes], echo: IO[bytes] | None, log: IO[bytes],
                 lock: threading.Lock) -> None:
        super().__init__(daemon=True)
        self.pipe, self.echo, self.log, self.lock = pipe, echo, log, lock

    def run(self) -> None:
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self.lock:
                self.log.write(chunk)
                self.log.flush()
            if self.echo is not None:
                try:
                    self.echo.write(chunk)
                    self.echo.flush()
                except (OSError, ValueError):
                    self.echo = None


@dataclass
class ChildOutcome:
    """How the wrapped command ended."""

    returncode: int
    stop_reason: str | None
    signals_sent: list[str]
    started_at: str
    ended_at: str
    wall_s: float
    leftovers_ended: list[str] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.stop_reason == "interrupted"


@dataclass
class StopPolicy:
    """How long each rung of the stop ladder waits before the next."""

    sigint_s: float = 60.0
    sigterm_s: float = 15.0
    #: after SIGINT, how long a profiler alone (the program has exited) may keep writing its
    #: report before SIGTERM; a second Ctrl-C cuts it short
    profiler_finish_s: float = 1800.0


#: executables that write the trace after the program has ended (not to be rushed)
PROFILER_NAMES = ("nsys", "nsys-launcher", "nsys-tee", "QdstrmImporter", "ncu")


class Supervisor:
    """Runs one command under supervision (see the module docstring)."""

    def __init__(self, argv: Sequence[str], env_delta: Mapping[str, str], log_path: Path,
                 echo: IO[bytes] | None, cwd: Path | None = None,
                 policy: StopPolicy | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.argv = list(argv)
        self.env_delta = dict(env_delta)
        self.log_path = log_path
        self.echo = echo
        self.cwd = cwd
        self.policy = policy or StopPolicy()
        self.say = say or (lambda message: None)
        self.tracker = ProcessTracker()
        self.process: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._urgent = threading.Event()
        self.stop_reason: str | None = None
        self._signals: list[str] = []
        self._tees: list[Tee] = []
        self._log: IO[bytes] | None = None
        self._subreaper = False

    # -- starting --------------------------------------------------------------------------
    def start(self) -> None:
        """Start the command; raises InputError when it cannot be executed at all."""
        env = {**os.environ, **self.env_delta}
        self._subreaper = set_subreaper(True)
        self._log = self.log_path.open("ab")
        stdin = subprocess.DEVNULL if sys.stdin is None or sys.stdin.isatty() else None
        try:
            self.process = subprocess.Popen(
                self.argv, env=env, cwd=self.cwd, stdin=stdin, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self._log.close()
            raise InputError(f"cannot run {self.argv[0]}: {exc.strerror or exc}") from None
        self.started = time.monotonic()
        self.started_at = utc_now()
        self.tracker.attach(self.process.pid)
        lock = threading.Lock()
        assert self.process.stdout is not None and self.process.stderr is not None
        for pipe in (self.process.stdout, self.process.stderr):
            tee = Tee(pipe, self.echo, self._log, lock)
            tee.start()
            self._tees.append(tee)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- stopping --------------------------------------------------------------------------
    def request_stop(self, reason: str) -> None:
        """Ask for a graceful stop (thread- and signal-safe). A second interrupt hurries it."""
        if self._stop.is_set() and reason == "interrupted":
            self._urgent.set()
        if self.stop_reason is None:
            self.stop_reason = reason
        self._stop.set()

    def _signal_group(self, signum: int) -> None:
        assert self.process is not None
        try:
            os.killpg(self.process.pid, signum)
            self._signals.append(signal.Signals(signum).name)
        except (ProcessLookupError, PermissionError):
            pass

    def _forward_to_program(self, signum: int) -> None:
        """Also signal process groups below ours (nsys runs the program in its own group)."""
        assert self.process is not None
        groups = {info.pgid for info in self.tracker.leftovers()
                  if info.pgid not in (self.process.pid, os.getpgrp())}
        for pgid in groups:
            try:
                os.killpg(pgid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _only_profiler_left(self) -> bool:
        """True when every live process of the capture is a profiler binary (no program)."""
        alive = self.tracker.leftovers()
        return bool(alive) and all(
            Path(info.cmdline.split(" ")[0]).name in PROFILER_NAMES for info in alive)

    def wait(self) -> ChildOutcome:
        """Wait for the command to end, walking the stop ladder once a stop is requested."""
        assert self.process is not None
        ladder = ((signal.SIGINT, self.policy.sigint_s), (signal.SIGTERM, self.policy.sigterm_s),
                  (signal.SIGKILL, 5.0))
        last_snapshot, rung, rung_deadline = 0.0, 0, 0.0
        sigint_at, told_finishing, forced = 0.0, False, False
        while self.process.poll() is None:
            now = time.monotonic()
            if now - last_snapshot >= SNAPSHOT_EVERY_S:
                self.tracker.snapshot()
                reap_orphans(keep=[self.process.pid])  # exited orphans of the engine
                last_snapshot = now
            if self._stop.is_set():
                if self._urgent.is_set() and rung == 1:
                    self._urgent.clear()
                    forced, rung_deadline = True, now  # a second Ctrl-C: stop waiting
                if (rung == 1 and now >= rung_deadline and not forced
                        and now - sigint_at < self.policy.profiler_finish_s
                        and self._only_profiler_left()):
                    if not told_finishing:
                        self.say("the program has ended; waiting for the profiler to write its "
                                 "report (Ctrl-C again to stop it)")
                        told_finishing = True
                    rung_deadline = now + 2.0
                if rung < len(ladder) and (rung == 0 or now >= rung_deadline):
                    signum, wait_s = ladder[rung]
                    self.tracker.snapshot()
                    self._signal_group(signum)
                    if signum != signal.SIGINT:
                        self._forward_to_program(signum)
                    rung, rung_deadline = rung + 1, now + wait_s
                    if signum == signal.SIGINT:
                        sigint_at = now
                elif rung == len(ladder) and now >= rung_deadline:
                    break  # unkillable (D state): give up waiting, report what we know
                time.sleep(POLL_S)
            else:
                self._stop.wait(POLL_S)
        returncode = self.process.poll()
        for tee in self._tees:
            tee.join(timeout=5.0)
        ended_at = utc_now()
        wall = time.monotonic() - self.started
        leftovers = self.cleanup()
        return ChildOutcome(returncode=_exit_status(returncode if returncode is not None else -9),
                            stop_reason=self.stop_reason, signals_sent=list(self._signals),
                            started_at=self.started_at, ended_at=ended_at,
                            wall_s=round(wall, 3), leftovers_ended=leftovers)

    def cleanup(self, settle_s: float = 5.0) -> list[str]:
        """End every process of the capture still alive (agents included); describe them.

        Processes get ``settle_s`` to exit on their own first: an nsys agent finishes its
        work a moment after ``nsys profile`` returns.
        """
        keep = [self.process.pid] if self.process else []
        deadline = time.monotonic() + settle_s
        while True:
            reap_orphans(keep)
            targets = {info.key: info for info in self.tracker.leftovers()}
            targets.update({info.key: info for info in self.tracker.agents()})
            if not targets or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        described = [f"{info.pid} {info.cmdline[:120]}" for info in targets.values()]
        end_processes(list(targets.values()), keep=keep)
        reap_orphans(keep)
        if self._subreaper:
            set_subreaper(False)
            self._subreaper = False
        if self._log is not None:
            self._log.close()
            self._log = None
        return described


def _exit_status(returncode: int) -> int:
    """A shell-style exit status: a child killed by signal N reads as 128 + N."""
    return 128 - returncode if returncode < 0 else returncode
