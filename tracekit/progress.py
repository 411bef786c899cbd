"""Progress of long work, for a person watching a terminal.

The stages say what they are doing: ``with progress.task("reading trace.json.gz",
total=size, unit="bytes") as task: … task.update(position)``. Whether anyone sees it is the
command line's decision (:func:`shown`): a rich progress bar on stderr when stderr is a
terminal, nothing on a pipe, with ``--json`` or under ``CI=true``. Everything else — the Python
API, tests, a library caller — gets the silent default, so nothing is printed that was not
asked for.

The reporter lives in a context variable, so no stage signature carries it and a stage that
is not watched pays one lookup per task. Tasks are advanced per chunk or per step of work,
never per record: a chunk of a Kineto trace is megabytes, a step of the analysis is a stage.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TextIO

#: what a task counts; ``bytes`` amounts are shown as sizes, the others as counts of that unit
UNITS = ("bytes", "records", "names", "steps", "tables", "kernels", "")


class Task(Protocol):
    """One piece of long work as its stage reports it."""

    def advance(self, amount: float = 1) -> None:
        """``amount`` more units done."""

    def update(self, completed: float | None = None, *, description: str | None = None,
               total: float | None = None) -> None:
        """Set how much is done (in the task's unit), what it is doing now, or its total."""


class Reporter(Protocol):
    """Where tasks go: the silent default, or a bar on a terminal."""

    @contextmanager
    def task(self, description: str, total: float | None, unit: str) -> Iterator[Task]: ...


class _SilentTask:
    def advance(self, amount: float = 1) -> None:
        return None

    def update(self, completed: float | None = None, *, description: str | None = None,
               total: float | None = None) -> None:
        return None


class _Silent:
    """Nobody is watching: tasks cost a context-manager entry and nothing else."""

    _task = _SilentTask()

    @contextmanager
    def task(self, description: str, total: float | None, unit: str) -> Iterator[Task]:
        yield self._task


SILENT: Reporter = _Silent()
_current: ContextVar[Reporter] = ContextVar("tracekit_progress", default=SILENT)


@contextmanager
def task(description: str, total: float | None = None, *, unit: str = "") -> Iterator[Task]:
    """Report one piece of long work while the block runs (``total`` None: of unknown size,
    shown with its elapsed time). ``unit`` is one of :data:`UNITS`."""
    with _current.get().task(description, total, unit) as handle:
        yield handle


def current() -> Reporter:
    """The reporter tasks go to now (for work handed to another thread)."""
    return _current.get()


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Send the tasks started in this block (and in this context) to ``reporter``."""
    token = _current.set(reporter)
    try:
        yield
    finally:
        _current.reset(token)


def wanted(stream: TextIO, *, machine_output: bool = False) -> bool:
    """Whether a person watches ``stream``: a terminal, no machine-readable output asked for
    (``--json``), not a CI job (``CI`` set to true, as CI services do)."""
    if machine_output or os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@contextmanager
def shown(*, machine_output: bool = False, stream: TextIO | None = None) -> Iterator[None]:
    """Show the tasks of this block as progress bars on ``stream`` (default stderr) when a
    person watches it (:func:`wanted`); silently otherwise. For the command line."""
    out = stream or sys.stderr
    if not wanted(out, machine_output=machine_output):
        yield
        return
    bars = TerminalBars(out)
    with bars, reporting(bars):
        yield


class TerminalBars:
    """Tasks as rich progress bars on a terminal, each removed when it ends (the screen keeps
    only what is running; the summary that follows is the record)."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), _amount_column(),
            TimeElapsedColumn(), console=Console(file=stream), transient=True)

    def __enter__(self) -> TerminalBars:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    @contextmanager
    def task(self, description: str, total: float | None, unit: str) -> Iterator[Task]:
        task_id = self.progress.add_task(description, total=total, unit=unit)
        self.progress.refresh()  # drawn at once: a task shorter than a refresh is seen too
        try:
            yield _BarTask(self.progress, task_id)
        finally:
            self.progress.remove_task(task_id)


class _BarTask:
    def __init__(self, progress: Any, task_id: Any) -> None:
        self._progress, self._id = progress, task_id

    def advance(self, amount: float = 1) -> None:
        self._progress.advance(self._id, amount)

    def update(self, completed: float | None = None, *, description: str | None = None,
               total: float | None = None) -> None:
        fields: dict[str, Any] = {}
        if completed is not None:
            fields["completed"] = completed
        if description is not None:
            fields["description"] = description
        if total is not None:
            fields["total"] = total
        # a new description is a new step of the work: drawn at once, however short
        self._progress.update(self._id, refresh=description is not None, **fields)


def file_position(stream: Any) -> int:
    """How far into its file on disk ``stream`` has read, in bytes: through a text wrapper
    (``.buffer``) and a gzip decompressor (``.fileobj``) to the file itself, so that a
    compressed trace's progress is measured against its size on disk."""
    inner = stream
    for attribute in ("buffer", "fileobj"):
        inner = getattr(inner, attribute, None) or inner
    try:
        return int(inner.tell())
    except (OSError, ValueError, AttributeError):
        return 0


def size(value: float) -> str:
    """Bytes as people read them: 812 kB, 1.2 GB (decimal units, as file managers show)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def _amount_text(completed: float, total: float | None, unit: str) -> str:
    if unit == "bytes":
        done = size(completed)
        return f"{done} of {size(total)}" if total else done
    done = f"{completed:,.0f}"
    word = f" {unit}" if unit else ""
    return f"{done} of {total:,.0f}{word}" if total else f"{done}{word}"


def _amount_column() -> Any:
    """A rich column showing how much is done, in the task's unit: ``1.2 GB of 3.4 GB``,
    ``7 of 12 tables`` (made on first use: rich loads only when a bar is shown)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class AmountColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(_amount_text(task.completed, task.total, task.fields.get("unit", "")),
                        style="progress.download")

    return AmountColumn()
