"""Benchmark: a folder of rank files on all cores, and one Kineto file against its parsing floor.

Not collected by pytest. Run (one run gives the whole table of docs/performance.md)::

    python tests/benchmarks/bench_ranks.py --work /tmp/bench-ranks \\
        --postgres "$TRACEKIT_TEST_POSTGRES_URL" [--big] [--keep]

Inputs, made once in ``--work`` (``replicate.kineto_ranks``): the real B200 vLLM Kineto trace
of ``../shared/traces`` (TraceLens, 8×B200) replicated to about ``--mib`` MiB per file, as
``--ranks`` ranks of one job (each its own distributedInfo rank, pids and device).

Measured, each ``tracekit analyze`` in a fresh process (interpreter start included) into a
fresh store:

1. **one rank at a time**: each file alone, ``--jobs 1``: its wall time; their sum ``S``;
2. **the folder**: all files as one run, ``--jobs`` the machine's cores ``C``: wall time
   ``W``, against ``S / C`` (target ``W ≤ 1.3 · S / C``), and the largest process's peak RSS
   (``ru_maxrss``: the main process or one worker); the same into PostgreSQL (``--postgres``:
   a scratch schema of that server, dropped afterwards). 1 and 2 run in turns, ``--rounds``
   times, best of each;
3. **one file against its parsing floor**: ``msgspec`` decoding the same file into typed
   structs of the fields an analyzer keeps (``ph``, ``cat``, ``name``, ``pid``, ``tid``,
   ``ts``, ``dur`` and the kernel args), in chunks of whole events (the floor of any reader
   of this file), against ``tracekit analyze`` of it, measured in turns (best of
   ``--rounds``, so a slow spell of a shared machine falls on both); target ≤ 1.5×;
4. ``--big``: the same for the 10^6-kernel shape (1,302 copies, about 8.7 GB), when the disk
   has room (deleted afterwards).

The machine's load average is printed before and after: on a shared machine the ratios are
what to read (both sides of each ratio ran under the same load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

from replicate import kineto_ranks  # noqa: E402

SOURCE = "tracelens/b200__eager_trace.json.gz"
#: compact JSON bytes of one copy of the B200 trace's events (replicate writes json.dumps)
MIB_PER_COPY = 6.56
BIG_COPIES = 1302  # 1302 × 768 kernels ≈ 10^6
CHUNK = 64 * 2**20


class KernelArgs(msgspec.Struct, gc=False):
    """The args an analyzer keeps of a kernel (and reads of the other events)."""

    device: Any = None
    stream: Any = None
    correlation: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    external_id: Any = msgspec.field(default=None, name="External id")
    grid: Any = None
    block: Any = None
    graph_id: Any = msgspec.field(default=None, name="graph id")
    graph_node_id: Any = msgspec.field(default=None, name="graph node id")


class Event(msgspec.Struct, gc=False):
    """The fields an analyzer keeps of an event."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: KernelArgs | None = None


def parsing_floor(path: Path) -> tuple[float, int]:
    """Seconds for msgspec to decode every event of ``path`` into ``Event`` structs, in
    chunks of whole events (the file as replicate writes it: one event per line), and the
    number of kernels it saw."""
    decoder = msgspec.json.Decoder(list[Event])
    started = time.perf_counter()
    kernels = 0
    with path.open("rb") as stream:
        head = stream.read(CHUNK)
        marker = b'"traceEvents": ['
        buffer = head[head.index(marker) + len(marker):]
        while True:
            more = stream.read(CHUNK)
            if more:
                cut = buffer.rfind(b"},\n{")
                if cut < 0:
                    buffer += more
                    continue
                piece, buffer = buffer[:cut + 1], buffer[cut + 2:] + more
            else:
                piece, buffer = buffer[:buffer.rfind(b"\n]")], b""
            events = decoder.decode(b"[" + piece.strip().lstrip(b",") + b"]")
            kernels += sum(1 for event in events if event.cat == "kernel")
            if not more:
                break
    return time.perf_counter() - started, kernels


#: CPU seconds (user + system) of every process of the last ``timed`` command
LAST_CPU: list[float] = [0.0]


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds of ``command`` and the peak RSS (MiB) of its largest process, measured by
    a wrapper process of its own (``ru_maxrss`` of its children); the CPU seconds of all its
    processes (workers included) are left in ``LAST_CPU``: on a shared machine the CPU time
    says what the work cost, the wall time what the others left of the cores."""
    wrapper = ("import resource, subprocess, sys, time\n"
               "t = time.perf_counter()\n"
               "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
               "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "print(time.perf_counter() - t, u.ru_maxrss / 1024, u.ru_utime + u.ru_stime)\n"
               "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", wrapper, *command], capture_output=True,
                          text=True, env={**os.environ, "TRACEKIT_STORE": "", **(env or {})})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    seconds, peak, cpu = done.stdout.split()
    LAST_CPU[0] = float(cpu)
    return float(seconds), float(peak)


def analyze(target: Path, store: str, jobs: int) -> tuple[float, float]:
    return timed([sys.executable, "-m", "tracekit", "analyze", str(target), "--store", store,
                  "--json", "--jobs", str(jobs)])


def fresh_sqlite(work: Path, name: str) -> str:
    for path in work.glob(f"{name}.db*"):
        path.unlink()
    return str(work / f"{name}.db")


def ranks_on_all_cores(folder: Path, work: Path, cores: int, postgres: str | None,
                       rounds: int) -> dict[str, Any]:
    """Each file alone, then the folder (and the folder into PostgreSQL), in turns, ``rounds``
    times: the best time of each, so a slow spell of a shared machine falls on all."""
    files = sorted(folder.iterdir())
    singles: list[list[float]] = [[] for _ in files]
    single_cpu: list[list[float]] = [[] for _ in files]
    single_peaks: list[float] = []
    walls: list[float] = []
    folder_cpu: list[float] = []
    peaks: list[float] = []
    pg_walls: list[float] = []
    pg_peaks: list[float] = []
    for _ in range(rounds):
        for index, path in enumerate(files):
            seconds, peak = analyze(path, fresh_sqlite(work, "single"), 1)
            singles[index].append(seconds)
            single_cpu[index].append(LAST_CPU[0])
            single_peaks.append(peak)
        wall, peak = analyze(folder, fresh_sqlite(work, "folder"), cores)
        walls.append(wall)
        folder_cpu.append(LAST_CPU[0])
        peaks.append(peak)
        if postgres:
            sys.path.insert(0, str(REPO))
            from tests.support.stores import scratch_postgres_url

            with scratch_postgres_url(postgres) as url:
                pg_wall, pg_peak = analyze(folder, url, cores)
            pg_walls.append(pg_wall)
            pg_peaks.append(pg_peak)
    total = sum(min(times) for times in singles)
    result: dict[str, Any] = {
        "files": len(files), "mib_per_file": files[0].stat().st_size / 2**20,
        "rounds": rounds, "single_seconds": [round(min(times), 2) for times in singles],
        "sum_single_s": total, "single_peak_rss_mib": max(single_peaks), "cores": cores,
        "folder_wall_s": min(walls), "folder_walls": [round(w, 2) for w in walls],
        "folder_peak_rss_mib": max(peaks), "ratio": min(walls) / (total / cores),
        "sum_single_cpu_s": sum(min(times) for times in single_cpu),
        "folder_cpu_s": min(folder_cpu),
        "cpu_ratio": min(folder_cpu) / sum(min(times) for times in single_cpu)}
    if pg_walls:
        result.update(postgres_wall_s=min(pg_walls), postgres_peak_rss_mib=max(pg_peaks),
                      postgres_ratio=min(pg_walls) / (total / cores))
    return result


def against_floor(path: Path, work: Path, rounds: int) -> dict[str, Any]:
    """The file's floor and its analyze, in turns; best of ``rounds`` each."""
    floors, analyses, peaks = [], [], []
    kernels = 0
    for _ in range(rounds):
        seconds, kernels = parsing_floor(path)
        floors.append(seconds)
        wall, peak = analyze(path, fresh_sqlite(work, "floor"), 1)
        analyses.append(wall)
        peaks.append(peak)
    return {"file": path.name, "mib": path.stat().st_size / 2**20, "kernels": kernels,
            "floor_s": min(floors), "analyze_s": min(analyses),
            "ratio": min(analyses) / min(floors), "analyze_peak_rss_mib": max(peaks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-ranks"))
    parser.add_argument("--traces", type=Path,
                        default=Path(os.environ.get("TRACEKIT_SHARED_TRACES",
                                                    REPO.parent / "shared" / "traces")))
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mib", type=float, default=250.0)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", default=None, metavar="URL")
    parser.add_argument("--big", action="store_true", help="also the 10^6-kernel file")
    parser.add_argument("--no-floor", action="store_true", help="only the rank files")
    parser.add_argument("--keep", action="store_true", help="keep the inputs in --work")
    options = parser.parse_args()
    source = options.traces / SOURCE
    if not source.exists():
        raise SystemExit(f"{source}: not found (pass --traces)")
    options.work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"load_before": os.getloadavg(), "cores": options.cores}
    copies = max(1, round(options.mib / MIB_PER_COPY))
    folder = options.work / f"ranks-{options.ranks}x{copies}"
    if not folder.exists():
        kineto_ranks(source, folder, options.ranks, copies)
    try:
        report["ranks"] = ranks_on_all_cores(folder, options.work, options.cores,
                                             options.postgres, options.rounds)
        if not options.no_floor:
            report["floor"] = against_floor(sorted(folder.iterdir())[0], options.work,
                                            options.rounds)
        if options.big:
            free = shutil.disk_usage(options.work).free / 2**30
            if free < 30:
                report["big"] = f"skipped: {free:.0f} GiB free on {options.work}"
            else:
                big = options.work / "big"
                try:
                    [path] = kineto_ranks(source, big, 1, BIG_COPIES)
                    report["big"] = against_floor(path, options.work, 1)
                finally:
                    shutil.rmtree(big, ignore_errors=True)
    finally:
        for path in options.work.glob("*.db*"):
            path.unlink()
        if not options.keep:
            shutil.rmtree(folder, ignore_errors=True)
    report["load_after"] = os.getloadavg()
    report["peak_rss_here_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(report, indent=2, default=lambda value: round(value, 3)))
    _table(report)


def _table(report: dict[str, Any]) -> None:
    ranks = report["ranks"]
    print(f"\nload average before {report['load_before'][0]:.2f}, after "
          f"{report['load_after'][0]:.2f} ({report['cores']} cores)")
    print(f"{ranks['files']} rank files × {ranks['mib_per_file']:.0f} MiB: one at a time "
          f"{ranks['sum_single_s']:.1f} s in all; the folder on {ranks['cores']} cores "
          f"{ranks['folder_wall_s']:.1f} s = {ranks['ratio']:.2f} × sum/cores "
          f"(peak RSS {ranks['folder_peak_rss_mib']:.0f} MiB); CPU time "
          f"{ranks['folder_cpu_s']:.1f} s against {ranks['sum_single_cpu_s']:.1f} s = "
          f"{ranks['cpu_ratio']:.2f} ×")
    if "postgres_wall_s" in ranks:
        print(f"  PostgreSQL: {ranks['postgres_wall_s']:.1f} s = "
              f"{ranks['postgres_ratio']:.2f} × (peak RSS {ranks['postgres_peak_rss_mib']:.0f} "
              "MiB)")
    for key in ("floor", "big"):
        entry = report.get(key)
        if isinstance(entry, dict):
            print(f"{entry['mib']:.0f} MiB, {entry['kernels']:,} kernels: msgspec floor "
                  f"{entry['floor_s']:.2f} s, analyze {entry['analyze_s']:.2f} s = "
                  f"{entry['ratio']:.2f} × (peak RSS {entry['analyze_peak_rss_mib']:.0f} MiB)")
        elif entry:
            print(f"{key}: {entry}")


if __name__ == "__main__":
    main()
