"""Benchmark: HTML report and Perfetto export of big runs (time, peak memory, file size).

Run by hand (pytest does not collect it):

    python tests/benchmarks/bench_report.py --kernels 1000000 10000000 --out /tmp/bench-report

For each size it builds the nsys-schema export of ``bench_analyze.py`` (built in SQL: 3,000
long templated names, two GPUs, several streams, vLLM-style step markers) and ingests it into a
fresh store. The analysis stages are then stood in for by a few SQL statements (classification
by name family, steps from the step markers, kernel phases), so the benchmark measures the
report alone; ``--pipeline`` runs the real ``tracekit analyze`` instead. Then it times, each in
a fresh process, with peak RSS:

- ``tracekit report 1 --html FILE`` (document + SQL-aggregated timeline + page), and
- ``tracekit report 1 --perfetto FILE`` (the whole run streamed as Chrome trace JSON).

It prints a Markdown table. The HTML must stay under 20 MB whatever the kernel count.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_analyze import build  # noqa: E402
from sqlalchemy import text  # noqa: E402

from tracekit.aggregate import refresh_kernel_groups  # noqa: E402
from tracekit.ingest.pipeline import ingest  # noqa: E402
from tracekit.store.db import open_store  # noqa: E402

#: name family -> (op, path, library): a stand-in for the rules, enough for the report
FAMILY_CLASSES = {
    "marlin": ("gemm", "weight_only", "marlin"),
    "GemmUniversal": ("gemm", "bf16", "cutlass"),
    "xmma_gemm": ("gemm", "bf16", "cublas"),
    "flash_fwd": ("attention", "bf16", "flash-attn"),
    "elementwise": ("other", "unknown", "torch"),
}


def stand_in_analysis(trace: Path, store_path: Path) -> float:
    """Ingest ``trace``, then classification, steps and kernel phases in plain SQL."""
    started = time.perf_counter()
    store = open_store(str(store_path), write=True)
    run_id = ingest(store, [trace]).run_id
    with store.begin() as connection:
        names = connection.execute(text(
            "SELECT id, name FROM kernel_names WHERE run_id = :r"), {"r": run_id}).all()
        rows = []
        for name_id, name in names:
            op, path, library = next((value for key, value in FAMILY_CLASSES.items()
                                      if key in name), ("other", "unknown", None))
            rows.append({"r": run_id, "n": name_id, "op": op, "path": path, "lib": library})
        connection.execute(text(
            "INSERT INTO classifications (run_id, name_id, op, path, library, rule, evidence, "
            "confidence) VALUES (:r, :n, :op, :path, :lib, 'bench', 'name', 'high')"), rows)
        connection.execute(text(
            "INSERT INTO steps (run_id, nvtx_id, engine, phase, source, text, start_ns, end_ns, "
            "global_tid) SELECT run_id, id, 'vllm', CASE WHEN text LIKE 'execute_context_0(%' "
            "THEN 'decode' ELSE 'prefill' END, 'marker', text, start_ns, end_ns, global_tid "
            "FROM nvtx_ranges WHERE run_id = :r AND kind = 'push_pop'"), {"r": run_id})
        connection.execute(text(
            "CREATE INDEX IF NOT EXISTS bench_steps ON steps (run_id, global_tid, start_ns)"))
        connection.execute(text(
            "UPDATE kernels SET step_id = (SELECT s.id FROM steps s WHERE s.run_id = "
            "kernels.run_id AND s.global_tid = kernels.global_tid AND s.start_ns <= "
            "kernels.launch_start_ns ORDER BY s.start_ns DESC LIMIT 1) WHERE run_id = :r"),
            {"r": run_id})
        connection.execute(text(
            "UPDATE kernels SET phase = COALESCE((SELECT phase FROM steps WHERE steps.id = "
            "kernels.step_id), 'unattributed') WHERE run_id = :r"), {"r": run_id})
        connection.execute(text(
            "UPDATE steps SET gpu_start_ns = a.first, gpu_end_ns = a.last FROM (SELECT step_id, "
            "MIN(start_ns) AS first, MAX(end_ns) AS last FROM kernels WHERE run_id = :r "
            "GROUP BY step_id) a WHERE steps.id = a.step_id"), {"r": run_id})
        refresh_kernel_groups(connection, run_id)
    store.dispose()
    return time.perf_counter() - started

HTML_LIMIT_BYTES = 20 * 1024 * 1024


def timed(command: list[str], log: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``command``, run under GNU time when present."""
    gnu_time = shutil.which("time") or "/usr/bin/time"
    wrapped = [gnu_time, "-f", "%M", "-o", str(log)] + command if Path(gnu_time).exists() \
        else command
    start = time.perf_counter()
    subprocess.run(wrapped, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    rss = int(log.read_text().split()[-1]) / 1024 if log.exists() else float("nan")
    return elapsed, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/tracekit-bench-report"))
    parser.add_argument("--keep", action="store_true", help="keep the trace and store files")
    parser.add_argument("--pipeline", action="store_true",
                        help="analyze with `tracekit analyze` instead of the SQL stand-in")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for count in args.kernels:
        trace = args.out / f"trace-{count}.sqlite"
        store = args.out / f"store-{count}.db"
        for stale in args.out.glob(f"store-{count}.db*"):
            stale.unlink()
        started = time.perf_counter()
        if not trace.exists():
            build(trace, count)
        built = time.perf_counter() - started
        if args.pipeline:
            analyze_s, analyze_rss = timed(["tracekit", "analyze", str(trace), "--store",
                                            str(store), "--json"], args.out / "analyze.rss")
        else:
            analyze_s, analyze_rss = stand_in_analysis(trace, store), float("nan")
        html = args.out / f"report-{count}.html"
        html_s, html_rss = timed(["tracekit", "report", "1", "--store", str(store), "--html",
                                  str(html)], args.out / "html.rss")
        perfetto = args.out / f"trace-{count}.json"
        perfetto_s, perfetto_rss = timed(["tracekit", "report", "1", "--store", str(store),
                                          "--perfetto", str(perfetto)], args.out / "perf.rss")
        rows.append((count, built, analyze_s, analyze_rss, html_s, html_rss,
                     html.stat().st_size, perfetto_s, perfetto_rss, perfetto.stat().st_size))
        print(f"{count:,} kernels: html {html.stat().st_size / 2**20:.1f} MB in {html_s:.1f} s; "
              f"perfetto {perfetto.stat().st_size / 2**20:.0f} MB in {perfetto_s:.1f} s",
              file=sys.stderr, flush=True)
        if html.stat().st_size > HTML_LIMIT_BYTES:
            print(f"  HTML over {HTML_LIMIT_BYTES / 2**20:.0f} MB", file=sys.stderr)
        if not args.keep:
            perfetto.unlink()
            for path in args.out.glob(f"store-{count}.db*"):
                path.unlink()
    print("| kernels | ingest + analysis s (RSS MB) | report --html s (RSS MB) | HTML MB "
          "| --perfetto s (RSS MB) | Perfetto JSON MB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for (count, _built, analyze_s, analyze_rss, html_s, html_rss, html_size, perfetto_s,
         perfetto_rss, perfetto_size) in rows:
        print(f"| {count:,} | {analyze_s:.1f} ({analyze_rss:.0f}) | {html_s:.1f} ({html_rss:.0f}) "
              f"| {html_size / 2**20:.1f} | {perfetto_s:.1f} ({perfetto_rss:.0f}) "
              f"| {perfetto_size / 2**20:.0f} |")


if __name__ == "__main__":
    main()
