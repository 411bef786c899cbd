"""The terminal summary: verdict first, then where the GPU time went.

Rendered with rich: colours on a TTY, plain text when piped (rich decides from the stream).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracekit.report.document import PHASES
from tracekit.report.names import distinct_cuts

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
PATH_STYLE = {"fp4": "magenta", "fp8": "blue", "int8": "green", "weight_only": "red",
              "bf16": "yellow", "fp16": "yellow", "unknown": "dim"}
TOP_KERNELS = 15
NAME_WIDTH = 90


class PipeSafeConsole(Console):
    """A rich Console that lets a closed pipe (``tracekit report 1 | head``) reach the CLI.

    rich's default answer to a broken pipe is ``SystemExit(1)``, but exit code 1 means "a
    finding at or above --fail-on"; the CLI turns BrokenPipeError into exit 0 instead.
    """

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def format_ns(ns: int | float) -> str:
    """Human duration: 1.23 s, 45.6 ms, 789 µs, 12 ns."""
    value = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}" if value / scale < 100 else \
                f"{value / scale:.0f} {unit}"
    return f"{value:.0f} ns"


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def render(document: dict[str, Any], stream: TextIO | None = None) -> None:
    """Print the summary of one analysis document."""
    console = PipeSafeConsole(file=stream or sys.stdout, highlight=False, soft_wrap=False,
                      width=None if (stream or sys.stdout).isatty() else 140)
    run = document["run"]
    summary = document["summary"]
    for sentence in document.get("verdict") or []:
        console.print(Text(sentence, style="bold"))
    if document.get("verdict"):
        console.print()
    console.print(Text.assemble(
        ("run ", "dim"), (str(run["id"]), "bold"), ("  ", ""),
        (str(run["source"]), ""), ("  ", ""),
        (f"{run['format']} {run.get('producer_version') or ''}".strip(), "dim")))
    console.print(
        f"{summary['kernel_count']:,} kernels · {summary['unique_kernel_names']:,} unique names · "
        f"GPU time {format_ns(summary['gpu_time_ns'])} · GEMM {format_ns(summary['gemm_time_ns'])} "
        f"· NVTX ranges {summary.get('nvtx_ranges', 0):,} · processes "
        f"{summary.get('processes', 0)} · threads {summary.get('threads', 0)}")
    _devices(console, document["devices"], several=len(document.get("ranks") or []) > 1)
    _ranks(console, document.get("ranks") or [])
    _iterations(console, document.get("iterations"))
    _gemm_paths(console, summary)
    _phases(console, document["phases"])
    _layers(console, document.get("layers") or [])
    _roofline(console, document.get("roofline"))
    _top_kernels(console, document["kernels"], summary["gpu_time_ns"])
    _launchers(console, document.get("launchers") or [])
    _findings(console, document["findings"])


def _devices(console: Console, devices: list[dict[str, Any]], *, several: bool = False
             ) -> None:
    """One row per device; with several ranks, whose it is and what ran on it."""
    if not devices:
        return
    table = Table(title="devices", title_justify="left", show_edge=False)
    columns = (("rank", "index") if several else ("index",)) + ("name", "cc", "arch", "SMs")
    if several:
        columns += ("kernels", "GPU time", "GEMM by path")
    for column in columns:
        table.add_column(column, justify="right" if column in ("kernels", "GPU time")
                         else "left")
    for device in devices:
        row = [str(device["index"]), device["name"] or "(not in trace)",
               device["compute_capability"] or "–", device["arch"] or "–",
               str(device["sm_count"] or "–")]
        if several:
            rank = device.get("rank")
            row = [str(rank) if rank is not None else "–", *row,
                   f"{device.get('kernels', 0):,}", format_ns(device.get("gpu_ns", 0)),
                   _paths(device.get("gemm_ns_by_path") or {}, device.get("gemm_ns", 0))]
        table.add_row(*row)
    console.print(table)


def _paths(by_path: dict[str, int], total: int) -> str:
    return ", ".join(f"{path} {_share(ns, total)}" for path, ns in
                     sorted(by_path.items(), key=lambda kv: -kv[1])) or "–"


def _ranks(console: Console, ranks: list[dict[str, Any]]) -> None:
    """Per rank (process): where it ran, what it ran, per phase — only with several."""
    if len(ranks) < 2:
        return
    table = Table(title="ranks", title_justify="left", show_edge=False)
    for column, justify in (("rank", "right"), ("process", "left"), ("file", "left"),
                            ("GPU", "left"), ("devices", "left"), ("kernels", "right"),
                            ("GPU time", "right"), ("GEMM", "right"), ("GEMM by path", "left"),
                            ("prefill", "right"), ("decode", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for rank in ranks:
        where = f"{rank['process'] or '–'} ({rank['pid']})" if rank["pid"] is not None \
            else (rank["process"] or "–")
        if rank.get("host"):
            where += f" @ {rank['host']}"
        phase_ns = rank.get("phase_ns") or {}
        table.add_row(str(rank["rank"]), Text(where), Text(rank.get("file") or "–"),
                      Text(", ".join(rank.get("gpus") or []) or "–"),
                      ", ".join(str(d) for d in rank.get("devices") or []) or "–",
                      f"{rank['kernels']:,}", format_ns(rank["gpu_ns"]),
                      format_ns(rank["gemm_ns"]),
                      _paths(rank["gemm_ns_by_path"], rank["gemm_ns"]),
                      format_ns(phase_ns.get("prefill", 0)),
                      format_ns(phase_ns.get("decode", 0)))
    console.print(table)


def _iterations(console: Console, iterations: dict[str, Any] | None) -> None:
    """The steps of each iteration lined up across ranks: spread and the slowest rank."""
    if not iterations:
        return
    aligned, ranks = iterations["aligned"], iterations["ranks"]
    counts = iterations["steps_per_rank"]
    line = (f"iterations: {aligned:,} steps of each of {ranks} ranks lined up"
            + ("" if len(set(counts.values())) == 1 else
               f" (ranks recorded {'/'.join(str(n) for n in counts.values())} steps)"))
    if aligned:
        mean, top = iterations["mean_spread_ns"], iterations["max_spread_ns"]
        line += (f"; spread (slowest − fastest rank) mean {format_ns(mean)}, "
                 f"max {format_ns(top)}")
    console.print(line)
    for entry in iterations["slowest"][:3]:
        console.print(Text(
            f"  rank {entry['rank']} slowest in {entry['iterations']:,} of {aligned:,} "
            f"({100 * entry['share']:.0f}%), on average {100 * entry['mean_excess']:.1f}% "
            "slower than the other ranks", style="bold" if entry["rank"] ==
            iterations.get("straggler") else ""))


def _gemm_paths(console: Console, summary: dict[str, Any]) -> None:
    by_path = summary["gemm_ns_by_path"]
    if not by_path:
        console.print("GEMM time by path: no GEMM kernels recognized")
        return
    table = Table(title="GEMM time by datatype path", title_justify="left", show_edge=False)
    table.add_column("path")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    total = summary["gemm_time_ns"]
    for path, ns in by_path.items():
        table.add_row(Text(path, style=PATH_STYLE.get(path, "")), format_ns(ns), _share(ns, total))
    console.print(table)
    if summary["unknown_gemm_share"]:
        console.print(f"unknown: {100 * summary['unknown_gemm_share']:.1f}% of GEMM time has no "
                      "determined datatype path")


def _phases(console: Console, phases: dict[str, Any]) -> None:
    if not any(phases[p]["gpu_ns"] for p in PHASES if p != "unattributed"):
        console.print("phases: nothing could be attributed to prefill, decode or mixed steps "
                      "(no step markers and no heuristic signal)")
        return
    table = Table(title="phases", title_justify="left", show_edge=False)
    for column in ("phase", "source", "steps", "tokens (prefill/decode)", "GPU time", "GEMM time",
                   "GEMM by path"):
        table.add_column(column)
    for phase in PHASES:
        data = phases[phase]
        if not data["gpu_ns"] and not data["steps"]:
            continue
        gemm = data["gemm_ns"]
        by_path = ", ".join(f"{path} {_share(ns, gemm)}" for path, ns in
                            sorted(data["gemm_ns_by_path"].items(), key=lambda kv: -kv[1]))
        table.add_row(phase, data["source"] or "–", str(data["steps"]),
                      f"{data['prefill_tokens']:,}/{data['decode_tokens']:,}",
                      format_ns(data["gpu_ns"]), format_ns(gemm), by_path or "–")
    console.print(table)


OUTCOME_STYLE = {"silent_fallback": "bold red", "degraded": "bold red",
                 "logged_fallback": "yellow", "mismatch": "yellow", "undetermined": "cyan",
                 "hardware_limited": "cyan", "engine_limited": "cyan", "better": "green",
                 "as_declared": "green",
                 "excluded": "dim", "unknown": "dim", "no_declaration": "dim"}
LAYER_ROWS = 24


def _layers(console: Console, rows: list[dict[str, Any]]) -> None:
    """The layer table: per phase and layer group, what it declares, what this GPU and engine
    can run for it, what ran, and the outcome (shown when something was declared)."""
    if not rows or all(row["outcome"] == "no_declaration" for row in rows):
        return
    table = Table(title="layers (each judged against what it declares)", title_justify="left",
                  show_edge=False)
    for column, justify in (("phase", "left"), ("layer", "left"), ("declared", "left"),
                            ("expected here", "left"), ("ran", "left"),
                            ("share", "right"), ("outcome", "left"), ("told by", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    previous = None
    for row in rows[:LAYER_ROWS]:
        expected = row.get("expected") or "–"
        if row.get("expected_kind") == "hardware_fallback":
            expected = f"{expected} (no native path)"
        elif row.get("expected_kind") == "engine_fallback":
            expected = f"{expected} (this engine's choice)"
        ran = row["ran"] + (f" ({row['weights']} weights)" if row.get("weights")
                            and row["weights"] != "16" else "")
        table.add_row(row["phase"] if row["phase"] != previous else "", row["layer"],
                      row.get("declared") or "–", expected,
                      Text(ran, style=PATH_STYLE.get(row["ran"], "")),
                      f"{100 * row['share']:.0f}%",
                      Text(row["outcome"].replace("_", " "),
                           style=OUTCOME_STYLE.get(row["outcome"], "")),
                      ", ".join(row.get("sources") or []) or "–")
        previous = row["phase"]
    console.print(table)
    if len(rows) > LAYER_ROWS:
        console.print(Text(f"  … {len(rows) - LAYER_ROWS} more rows in --json (layers)",
                           style="dim"))


def format_rate(value: float | None, unit: str) -> str:
    """A throughput from its base unit per second: 1.23 TB/s, 456 GB/s, 12.3 TFLOP/s."""
    if value is None:
        return "–"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}/s"
    return f"{value:.3g} {unit}/s"


def _roofline(console: Console, roofline: dict[str, Any] | None) -> None:
    """Per phase and path: achieved throughput, intensity, the roof it sits against; then
    what each silent fallback costs, as the estimate it is."""
    if not roofline or not roofline["phases"]:
        return
    gpu = roofline.get("gpu")
    where = (f"{gpu['name']}: dense peaks and bandwidth from rules/_gpus.toml" if gpu else
             f"GPU limits unknown: {roofline.get('gpu_reason')}")
    rows = [row for phase in PHASES for row in roofline["phases"].get(phase, [])]
    if not any(row["covered_ns"] for row in rows):
        # nothing tells any GEMM's work (an nsys trace): one line, not a table of dashes
        reasons = [u for row in rows for u in row["unknown"]]
        top = max(reasons, key=lambda u: u["ns"])["reason"] if reasons else "no GEMM time"
        console.print(Text(f"roofline ({where}): the work of no GEMM is known "
                           f"({format_ns(sum(row['time_ns'] for row in rows))} of GEMM time) — "
                           f"{top}", style="dim"))
        if roofline.get("fallback"):
            phases = ", ".join(item["phase"] for item in roofline["fallback"])
            console.print(Text(f"what the fallback costs: no estimate ({phases}) without the "
                               "GEMMs' work", style="dim"))
        return
    table = Table(title=f"roofline ({where})", title_justify="left", show_edge=False)
    for column, justify in (("phase", "left"), ("path", "left"), ("GEMM time", "right"),
                            ("work known", "right"), ("achieved", "right"),
                            ("bandwidth", "right"), ("FLOP/B", "right"), ("bound", "left"),
                            ("of roof", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    unknown_notes: list[str] = []
    for phase in PHASES:
        for index, row in enumerate(roofline["phases"].get(phase, [])):
            known = row["covered_ns"] > 0
            bound = row["bound"] or "–"
            if known and row["roof_tflops"] is not None:
                bound = (f"{bound} "
                         f"({row['roof_math'].upper()} roof {row['roof_tflops']:,.0f} TFLOP/s)")
            elif known:
                bound = "no roof for this path"
            table.add_row(
                phase if index == 0 else "",
                Text(row["path"], style=PATH_STYLE.get(row["path"], "")),
                format_ns(row["time_ns"]), f"{100 * row['coverage']:.0f}%",
                format_rate(row["flops"] / row["covered_ns"] * 1e9, "FLOP") if known else "–",
                format_rate(row["bytes"] / row["covered_ns"] * 1e9, "B") if known else "–",
                f"{row['intensity']:.3g}" if known else "–", bound,
                f"{100 * row['roof_share']:.0f}%" if row["roof_share"] is not None else "–")
            if row["roof_share"] is not None and row["roof_share"] > 1.0:
                unknown_notes.append(
                    f"{phase} {row['path']}: above the roof — part of the operands came from "
                    "caches rather than DRAM, or the GPU ran above the rated peak")
            if row["unknown"] and row["coverage"] < 0.995:
                top = row["unknown"][0]
                unknown_notes.append(f"{phase} {row['path']}: {format_ns(top['ns'])} without "
                                     f"known work — {top['reason']}")
    console.print(table)
    for note in unknown_notes[:6]:
        console.print(Text(f"  {note}", style="dim"))
    estimates = roofline.get("fallback") or []
    if estimates:
        console.print(Text("what the fallback costs (estimate)", style="bold"))
        for item in estimates:
            console.print(Text(f"  {item['sentence']}"))
        console.print(Text(f"  model: {roofline['fallback_model']}", style="dim"))


def _top_kernels(console: Console, kernels: list[dict[str, Any]], gpu_ns: int) -> None:
    table = Table(title=f"top kernels by GPU time (of {len(kernels):,})", title_justify="left",
                  show_edge=False)
    for column, justify in (("time", "right"), ("share", "right"), ("count", "right"),
                            ("op", "left"), ("path", "left"), ("name", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    shown = kernels[:TOP_KERNELS]
    names = distinct_cuts([entry["name"] for entry in shown], NAME_WIDTH)
    for entry, name in zip(shown, names, strict=True):
        table.add_row(format_ns(entry["total_ns"]), _share(entry["total_ns"], gpu_ns),
                      f"{entry['count']:,}", entry["op"],
                      Text(entry["path"], style=PATH_STYLE.get(entry["path"], "")),
                      Text(name))
    console.print(table)


def _launchers(console: Console, launchers: list[dict[str, Any]]) -> None:
    """The launching threads: process and thread with their ids, rank, devices."""
    named = [item for item in launchers if item["thread"] or item["process"]
             or item.get("pid") is not None]
    if not named:
        return
    several = len({item.get("rank") for item in named}) > 1
    table = Table(title="launching threads", title_justify="left", show_edge=False)
    for column in (("rank",) if several else ()) + ("process (pid)", "thread (tid)",
                                                    "devices", "kernels", "GPU time"):
        table.add_column(column)
    for item in named[:8]:
        process = _with_id(item["process"], item.get("pid"))
        thread = _with_id(item["thread"], item.get("tid"))
        row: list[Text | str] = [Text(process), Text(thread),
               ", ".join(str(d) for d in item.get("devices") or []) or "–",
               f"{item['kernels']:,}", format_ns(item["gpu_ns"])]
        if several:
            rank = item.get("rank")
            row.insert(0, str(rank) if rank is not None else "–")
        table.add_row(*row)
    console.print(table)


def _with_id(name: str | None, number: int | None) -> str:
    if number is None:
        return name or "–"
    return f"{name or '?'} ({number})"


def _findings(console: Console, findings: list[dict[str, Any]]) -> None:
    if not findings:
        return
    console.print(Text("findings", style="bold"))
    for finding in findings:
        console.print(Text.assemble(
            (f"  {finding['severity']:<8}", SEVERITY_STYLE.get(finding["severity"], "")),
            (f"{finding['rule']}: ", "dim"), (finding["message"], "")))


@contextmanager
def progress_bar(total: int, description: str, *, minimum: int = 200_000
                 ) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar on stderr for long jobs, yielding its ``advance(n)`` callback.

    Yields None (no bar) when stderr is not a terminal or the job is small, so piped output
    and logs stay clean.
    """
    if total < minimum or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=Console(file=sys.stderr), transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)


@contextmanager
def status_spinner(message: str) -> Iterator[None]:
    """A spinner on stderr while a step of unknown length runs; nothing when not a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    with Console(file=sys.stderr).status(message):
        yield
