"""Whether several trace files are the ranks of one job, and so can form one run.

A run is one job: the processes (ranks) that ran together, each file holding one or more of
them. Files that are not one job would add up to numbers that mean nothing (the kernel time
of an H100 run and a B200 run, a Tuesday's capture and a Thursday's), so they are refused
with one line that says how to pass them: one ``tracekit analyze`` each, or ``--one-run`` to
store them as one run all the same. What one file tells about itself is a ``FileIdentity``
(read by the file's reader); ``refusal`` weighs them:

- **the GPUs**: the product names of the devices each file's kernels ran on. Two files whose
  GPUs are known and differ are two jobs (an unknown GPU disagrees with nobody);
- **the job**: a job id the files record (``--job NAME`` gives one to all) — two different
  ids are two jobs;
- **the ranks**: a distributed rank the files record (torch's ``distributedInfo``, the CUPTI
  header) — the same rank twice, or different world sizes, are two jobs;
- **the clock**: each file's wall-clock window (its first kernel to its last, in UTC).
  The ranks of one job run at the same time, so the windows must share an instant, within
  ``CLOCK_SLACK_NS`` (ranks start their profilers a little apart). Clocks of different hosts
  are not comparable, so files that name different hosts need a common job id instead: the
  same window on two machines proves nothing.

A file that tells nothing (no GPU, no host, no clock) is not refused on that account; two
such files are taken as one job only when they are not told apart by anything they say.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

#: how far apart the recording windows of one job's ranks may lie (clocks of one host agree;
#: ranks start and stop their profilers at slightly different moments)
CLOCK_SLACK_NS = 60 * 10**9
#: wall-clock times before this (2001-01-01 UTC, in ns) are not epoch times: a clock whose
#: origin is the boot, not a date
EPOCH_FLOOR_NS = 978_307_200 * 10**9

HINT = ("analyze each with its own `tracekit analyze`, or pass --one-run to store them as "
        "one run all the same")


@dataclass(frozen=True)
class FileIdentity:
    """What one input file says about the job it was recorded in (None: it does not say)."""

    name: str
    gpus: frozenset[str] = frozenset()
    host: str | None = None
    job: str | None = None
    rank: int | None = None
    world_size: int | None = None
    #: wall-clock UTC ns of its first kernel start and its last kernel end
    start_ns: int | None = None
    end_ns: int | None = None


def refusal(files: Sequence[FileIdentity], *, job: str | None = None) -> str | None:
    """Why ``files`` are not the ranks of one job (one sentence), or None when they may be.

    ``job``: the job the user named (``--job``); it stands for a common job id, so the files
    may come from different hosts and clocks — the GPUs and ranks must still agree.
    """
    if len(files) < 2:
        return None
    for check in (_gpus, _jobs, _ranks):
        reason = check(files)
        if reason is not None:
            return reason
    if job is None and not _common_job(files):
        return _hosts(files) or _clocks(files)
    return None


def _gpus(files: Sequence[FileIdentity]) -> str | None:
    named = {file.name: file.gpus for file in files if file.gpus}
    products = {gpu for gpus in named.values() for gpu in gpus}
    if len(products) <= 1:
        return None
    by_gpu = {gpu: [name for name, gpus in named.items() if gpu in gpus] for gpu in
              sorted(products)}
    listing = "; ".join(f"{gpu} in {_list(names)}" for gpu, names in by_gpu.items())
    return f"the files ran on different GPUs ({listing}), so they are not one job"


def _jobs(files: Sequence[FileIdentity]) -> str | None:
    jobs = {file.job for file in files if file.job is not None}
    if len(jobs) <= 1:
        return None
    return f"the files record different jobs ({_list(sorted(jobs))})"


def _ranks(files: Sequence[FileIdentity]) -> str | None:
    sizes = {file.world_size for file in files if file.world_size is not None}
    if len(sizes) > 1:
        return ("the files record different world sizes "
                f"({_list([str(size) for size in sorted(sizes)])}), so they are not one job")
    seen: dict[int, str] = {}
    for file in files:
        if file.rank is None:
            continue
        if file.rank in seen:
            return (f"{seen[file.rank]} and {file.name} are both rank {file.rank}, so they are "
                    "not ranks of one job")
        seen[file.rank] = file.name
    return None


def _common_job(files: Sequence[FileIdentity]) -> bool:
    """Every file records the same job id."""
    return all(file.job is not None for file in files) and len({f.job for f in files}) == 1


def _hosts(files: Sequence[FileIdentity]) -> str | None:
    hosts = {file.host for file in files if file.host is not None}
    if len(hosts) <= 1:
        return None
    return (f"the files were recorded on different hosts ({_list(sorted(hosts))}) and no job "
            "id ties them together (their clocks cannot be compared)")


def _clocks(files: Sequence[FileIdentity]) -> str | None:
    timed = [f for f in files if f.start_ns is not None and f.end_ns is not None
             and f.start_ns >= EPOCH_FLOOR_NS]
    if len(timed) < 2:
        return None
    latest_start = max(timed, key=lambda f: f.start_ns or 0)
    earliest_end = min(timed, key=lambda f: f.end_ns or 0)
    gap = (latest_start.start_ns or 0) - (earliest_end.end_ns or 0)
    if gap <= CLOCK_SLACK_NS:
        return None
    return (f"the files were recorded at different times ({earliest_end.name} ends "
            f"{_utc(earliest_end.end_ns or 0)}, {latest_start.name} starts "
            f"{_utc(latest_start.start_ns or 0)}), so they are not ranks of one job")


def _utc(ns: int) -> str:
    moment = dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _list(names: Sequence[str]) -> str:
    shown = list(names[:4])
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return ", ".join(shown) + more
