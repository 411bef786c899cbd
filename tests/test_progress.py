"""Long work is not silent, and quiet where nobody watches.

The stages report through ``tracekit.progress``: a recording reporter checks what each reports
on real inputs (bytes of a Kineto trace, records of an nsys export, the steps of the analysis)
and that it reports per chunk or step, not per record. The command is then run for real under a
pseudo-terminal: bars on stderr there, nothing with ``--json``, under ``CI=true`` or on a pipe.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tracekit import progress
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.store.db import open_store

H200_TORCH = REPO / "fixtures" / "h200" / "torch-trace.pt.trace.json.gz"


@dataclass
class Recorded:
    description: str
    total: float | None
    unit: str
    completed: float = 0
    updates: int = 0
    descriptions: list[str] = field(default_factory=list)

    def advance(self, amount: float = 1) -> None:
        self.completed += amount
        self.updates += 1

    def update(self, completed: float | None = None, *, description: str | None = None,
               total: float | None = None) -> None:
        self.updates += 1
        if completed is not None:
            self.completed = completed
        if description is not None:
            self.descriptions.append(description)
        if total is not None:
            self.total = total


class Recorder:
    """A reporter that keeps every task it was given."""

    def __init__(self) -> None:
        self.tasks: list[Recorded] = []

    @contextmanager
    def task(self, description: str, total: float | None, unit: str) -> Iterator[Recorded]:
        task = Recorded(description, total, unit)
        self.tasks.append(task)
        yield task

    def named(self, prefix: str) -> Recorded:
        return next(t for t in self.tasks if t.description.startswith(prefix))


def test_silent_by_default() -> None:
    with progress.task("nothing to see", total=3) as task:
        task.advance()
        task.update(2, description="still nothing")
    assert progress.current() is progress.SILENT


def test_a_kineto_trace_reports_its_bytes_and_the_analysis_its_steps(tmp_path: Path) -> None:
    recorder = Recorder()
    with progress.reporting(recorder):
        analyze(open_store(str(tmp_path / "s.db"), write=True), [H200_TORCH], AnalysisOptions())
    reading = recorder.named(f"reading {H200_TORCH.name}")
    assert reading.unit == "bytes" and reading.total == H200_TORCH.stat().st_size
    assert reading.completed == reading.total
    assert recorder.named("linking records").completed == recorder.named("linking records").total
    stages = recorder.named("run ")
    assert stages.unit == "steps" and stages.total == 7 and stages.completed == 6
    assert any("classifying kernel names" in text for text in stages.descriptions)
    # per chunk or step, never per record: this trace has thousands of events
    assert all(task.updates <= 20 for task in recorder.tasks), recorder.tasks
    assert progress.current() is progress.SILENT


def test_an_nsys_export_reports_its_records(make_trace, simple_scenario, tmp_path: Path) -> None:
    import sqlite3

    trace = make_trace(simple_scenario)
    recorder = Recorder()
    with progress.reporting(recorder):
        analyze(open_store(str(tmp_path / "s.db"), write=True), [trace], AnalysisOptions())
    reading = next(t for t in recorder.tasks if t.unit == "records")
    with sqlite3.connect(trace) as source:  # the records of the tables the reader copies
        rows = sum(source.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in (
            "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"))
    assert reading.total == reading.completed == rows
    assert "kernels and their launches" in " ".join(reading.descriptions)


def test_bars_are_wanted_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    assert progress.wanted(Terminal())  # type: ignore[arg-type]
    assert not progress.wanted(Terminal(), machine_output=True)  # type: ignore[arg-type]
    assert not progress.wanted(open(os.devnull, "w"))  # noqa: SIM115
    monkeypatch.setenv("CI", "true")
    assert not progress.wanted(Terminal())  # type: ignore[arg-type]


def test_amounts_read_as_sizes_and_counts() -> None:
    from tracekit.progress import _amount_text

    assert _amount_text(1_234_567, 9_876_543_210, "bytes") == "1.2 MB of 9.9 GB"
    assert _amount_text(3, 12, "tables") == "3 of 12 tables"
    assert _amount_text(40, None, "bytes") == "40 B"


# -- the command under a pseudo-terminal ---------------------------------------------------------

def run_with_terminal_stderr(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``args`` with stderr on a pseudo-terminal (120 × 30) and stdout into a file (a
    pipe left unread while the terminal is read would fill and stall a large --json)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    sink = tempfile.TemporaryFile()
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=sink, stderr=slave,
                               env=env)
    os.close(slave)
    seen = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: the process has ended
                    break
                if not chunk:
                    break
                seen += chunk
            elif process.poll() is not None:
                break
        process.wait(timeout=120)
        sink.seek(0)
        stdout = sink.read()
    finally:
        os.close(master)
        sink.close()
    return process.returncode, stdout.decode(), seen.decode(errors="replace")


@pytest.fixture
def command_env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["TRACEKIT_STORE"] = str(tmp_path / "store.db")
    return env


TRACEKIT = [sys.executable, "-m", "tracekit"]


def test_analyze_on_a_terminal_shows_each_stage(command_env: dict[str, str]) -> None:
    code, stdout, stderr = run_with_terminal_stderr(
        [*TRACEKIT, "analyze", str(H200_TORCH)], command_env)
    assert code == 0, stderr
    for stage in (f"reading {H200_TORCH.name}", "of 77.6 kB", "linking records", "of 5 steps",
                  "run 1: classifying kernel names", "of 7 steps"):
        assert stage in stderr, f"{stage!r} not on the terminal:\n{stderr[-2000:]}"
    # the summary on stdout (a pipe) is plain text, untouched by the bars
    assert "top kernels by GPU time" in stdout and "\x1b[" not in stdout


@pytest.mark.parametrize("quiet", ["--json", "CI=true"])
def test_no_bars_with_json_or_in_ci(command_env: dict[str, str], quiet: str) -> None:
    args = [*TRACEKIT, "analyze", str(H200_TORCH)]
    if quiet == "--json":
        args.append("--json")
    else:
        command_env["CI"] = "true"
    code, stdout, stderr = run_with_terminal_stderr(args, command_env)
    assert code == 0, stderr
    assert "reading" not in stderr and "steps" not in stderr and "\x1b[" not in stderr, stderr
    assert stdout


def test_no_bars_on_a_pipe(command_env: dict[str, str]) -> None:
    done = subprocess.run([*TRACEKIT, "analyze", str(H200_TORCH)], capture_output=True,
                          text=True, env=command_env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
