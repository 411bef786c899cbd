"""Finding and ending every process a capture started, and only those.

Profilers and engines spread out: ``nsys profile`` starts a launcher, a tee and the program
(in its own process group), plus an ``nsys --start-agent`` daemon re-parented to init in its
own session; engines start workers. Killing one process group misses most of them. So:

* tracekit makes itself a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``): orphans of
  the capture re-parent to tracekit instead of init and stay visible as descendants;
* a ``ProcessTracker`` snapshots the descendants of the wrapped command while it runs, keyed
  by (pid, start time) so a recycled pid is never mistaken for one of ours;
* nsys agents are also matched by their ``--session-name=profile-<prog>-<nsys pid>``.

Linux ``/proc`` only; elsewhere the tracker degrades to "nothing found".
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tracekit.capture.nsys import agent_session_pid

PR_SET_CHILD_SUBREAPER = 36
PROC = Path("/proc")


@dataclass(frozen=True)
class ProcInfo:
    """One process as /proc shows it."""

    pid: int
    ppid: int
    pgid: int
    start_ticks: int
    state: str
    cmdline: str

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.start_ticks)


def read_proc(pid: int) -> ProcInfo | None:
    """The process ``pid``, or None when it is gone (or /proc is not there)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces or parentheses
    rest = stat[stat.rfind(")") + 2:].split()
    cmdline = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return ProcInfo(pid=pid, ppid=int(rest[1]), pgid=int(rest[2]), start_ticks=int(rest[19]),
                    state=rest[0], cmdline=cmdline)


def all_procs() -> list[ProcInfo]:
    """Every process visible in /proc."""
    if not PROC.is_dir():
        return []
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            info = read_proc(int(entry.name))
            if info is not None:
                found.append(info)
    return found


def descendants(root: int, procs: Iterable[ProcInfo]) -> list[ProcInfo]:
    """All processes below ``root`` in the parent tree (not ``root`` itself)."""
    children: dict[int, list[ProcInfo]] = {}
    for info in procs:
        children.setdefault(info.ppid, []).append(info)
    result: list[ProcInfo] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            result.append(child)
            stack.append(child.pid)
    return result


def set_subreaper(enabled: bool) -> bool:
    """Make this process a child subreaper (orphans re-parent to us). False when unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if enabled else 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def alive(info: ProcInfo) -> bool:
    """True while the very same process (pid and start time) exists and is not a zombie."""
    now = read_proc(info.pid)
    return now is not None and now.start_ticks == info.start_ticks and now.state != "Z"


def reap_orphans(keep: Iterable[int] = ()) -> None:
    """Collect exit statuses of re-parented children (not of ``keep``, which others wait on)."""
    skip = set(keep)
    me = os.getpid()
    for info in all_procs():
        if info.ppid == me and info.state == "Z" and info.pid not in skip:
            try:
                os.waitpid(info.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def signal_all(targets: Iterable[ProcInfo], signum: int) -> None:
    """Send ``signum`` to each target that is still the same process."""
    for info in targets:
        if alive(info):
            try:
                os.kill(info.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass


def end_processes(targets: list[ProcInfo], grace_s: float = 3.0,
                  keep: Iterable[int] = ()) -> list[ProcInfo]:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL. Returns those that needed SIGKILL."""
    targets = [info for info in targets if alive(info)]
    if not targets:
        return []
    signal_all(targets, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        reap_orphans(keep)
        if not any(alive(info) for info in targets):
            return []
        time.sleep(0.1)
    stubborn = [info for info in targets if alive(info)]
    signal_all(stubborn, signal.SIGKILL)
    time.sleep(0.1)
    reap_orphans(keep)
    return stubborn


class ProcessTracker:
    """Remembers every descendant of the wrapped command and the nsys sessions among them."""

    def __init__(self) -> None:
        self.root: int | None = None
        self.seen: dict[tuple[int, int], ProcInfo] = {}
        self.nsys_pids: set[int] = set()

    def attach(self, root: int) -> None:
        self.root = root
        info = read_proc(root)
        if info is not None:
            self._remember(info)

    def _remember(self, info: ProcInfo) -> None:
        self.seen.setdefault(info.key, info)
        if " profile " in f" {info.cmdline} " and "nsys" in info.cmdline.split(" ")[0]:
            self.nsys_pids.add(info.pid)

    def snapshot(self) -> None:
        """Record the current descendants of the root and of this process."""
        procs = all_procs()
        for info in descendants(os.getpid(), procs):
            self._remember(info)
        for info in procs:
            session = agent_session_pid(info.cmdline)
            if session is not None and session in self.nsys_pids:
                self._remember(info)

    def leftovers(self) -> list[ProcInfo]:
        """Processes we saw that still run (the root excluded once it has exited)."""
        self.snapshot()
        me = os.getpid()
        current = []
        for info in self.seen.values():
            now = read_proc(info.pid)
            if (info.pid != me and now is not None and now.start_ticks == info.start_ticks
                    and now.state != "Z"):
                current.append(now)  # fresh: the command line seen at fork may predate exec
        return current

    def agents(self) -> list[ProcInfo]:
        """``nsys --start-agent`` daemons belonging to an nsys session we started."""
        return [info for info in all_procs()
                if agent_session_pid(info.cmdline) in self.nsys_pids]
