"""The terminal summary: verdict first, then where the GPU time went.

Rendered with rich: colours on a TTY, plain text when piped (rich decides from the stream).
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracekit.formatting import counted, format_ns, format_rate, format_share, roof_label
from tracekit.report.names import distinct_cuts
from tracekit.vocabulary import PHASES

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
PATH_STYLE = {"fp4": "magenta", "fp8": "blue", "int8": "green", "weight_only": "red",
              "bf16": "yellow", "fp16": "yellow", "unknown": "dim"}
TOP_KERNELS = 15
NAME_WIDTH = 90
#: the kernel-name column is cut (with an ellipsis) to the width left, but never below this
NAME_MIN_WIDTH = 12
#: the rank table's process, file and GPU cells are cut to one line of at most this
RANK_TEXT_WIDTH = 40


class PipeSafeConsole(Console):
    """A rich Console that lets a closed pipe (``tracekit report 1 | head``) reach the CLI.

    rich's default answer to a broken pipe is ``SystemExit(1)``, but exit code 1 means "a
    finding at or above --fail-on"; the CLI turns BrokenPipeError into exit 0 instead.
    """

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


#: the width of the summary when it is not printed on a terminal (a pipe, a file, a test)
PIPE_WIDTH = 140


def _table(console: Console, title: str, columns: list[tuple[str, str, bool]]) -> Table:
    """A table whose title is printed above it as a line of its own, so that a title wider
    than a narrow table never wraps inside the table's width. ``columns`` are (header,
    justify, wraps): a column that does not wrap keeps each value on one line; the columns
    that wrap (prose) give way when the terminal is narrow."""
    console.print(Text(title, style="bold"))
    table = Table(show_edge=False, pad_edge=False)
    for header, justify, wraps in columns:
        table.add_column(header, justify=justify, no_wrap=not wraps)  # type: ignore[arg-type]
    return table


def _plain(value: object) -> str:
    return value.plain if isinstance(value, Text) else str(value)


def _print_table(console: Console, table: Table) -> None:
    """Print ``table`` within the terminal's width, wrapping its prose columns between words
    and never inside one.

    rich squeezes the widest wrapping columns alike when a table is too wide, which cuts
    ``weight_only`` into ``weight_…``; here each wrapping column gets at least its longest
    word (or its preset ``min_width``) and the room left is shared in proportion to what each
    would need for one line.
    """
    columns = table.columns
    natural = [max(cell_len(line) for value in (column.header, *column.cells)
                   for line in _plain(value).splitlines() or [""]) for column in columns]
    overhead = 3 * len(columns) - 1 - (2 if not table.pad_edge else 0)
    wrapping = [i for i, column in enumerate(columns) if not column.no_wrap]
    room = console.width - overhead - sum(w for i, w in enumerate(natural) if i not in wrapping)
    if not wrapping or sum(natural[i] for i in wrapping) <= room:
        console.print(table)
        return
    least = {i: columns[i].min_width or max(
        (len(word) for value in (columns[i].header, *columns[i].cells)
         for word in _plain(value).split()), default=1) for i in wrapping}
    spare = max(0, room - sum(least.values()))
    wanted = {i: max(0, natural[i] - least[i]) for i in wrapping}
    total = sum(wanted.values()) or 1
    for i in wrapping:
        columns[i].width = least[i] + spare * wanted[i] // total
    console.print(table)


def _one_line(value: str, width: int = NAME_WIDTH) -> Text:
    """A long value (a kernel name) cut to one line: at ``width``, or earlier with an
    ellipsis where the terminal is narrower."""
    text = value if len(value) <= width else value[: width - 1] + "…"
    return Text(text, no_wrap=True, overflow="ellipsis")


def render(document: dict[str, Any], stream: TextIO | None = None, *,
           width: int | None = None) -> None:
    """Print the summary of one analysis document: at the terminal's width on a terminal,
    else at ``width`` (default :data:`PIPE_WIDTH`)."""
    out = stream or sys.stdout
    console = PipeSafeConsole(file=out, highlight=False, soft_wrap=False,
                              width=width or (None if out.isatty() else PIPE_WIDTH))
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
        f"{counted(summary['kernel_count'], 'kernel')} · "
        f"{counted(summary['unique_kernel_names'], 'unique name')} · "
        f"GPU time {format_ns(summary['gpu_time_ns'])} · GEMM {format_ns(summary['gemm_time_ns'])}"
        f"{_convolution_part(summary)} · {counted(summary.get('nvtx_ranges', 0), 'NVTX range')} · "
        f"{counted(summary.get('processes', 0), 'process', 'processes')} · "
        f"{counted(summary.get('threads', 0), 'thread')}")
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


def _convolution_part(summary: dict[str, Any]) -> str:
    """`` (2.4 ms of it convolutions)`` when convolutions computed as GEMMs count in
    the GEMM time, so a vision model's GEMM time is not read as linear layers."""
    ns = summary.get("convolution_gemm_ns") or 0
    return f" ({format_ns(ns)} of it convolutions)" if ns else ""


def _devices(console: Console, devices: list[dict[str, Any]], *, several: bool = False
             ) -> None:
    """One row per device; with several ranks, whose it is and what ran on it."""
    if not devices:
        return
    columns = [("index", "left", False), ("name", "left", True), ("cc", "left", False),
               ("arch", "left", False), ("SMs", "right", False)]
    if several:
        columns = [("rank", "left", False), *columns, ("kernels", "right", False),
                   ("GPU time", "right", False), ("GEMM by path", "left", True)]
    table = _table(console, "devices", columns)
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
    _print_table(console, table)


def _paths(by_path: dict[str, int], total: int) -> str:
    return ", ".join(f"{path} {format_share(ns, total)}" for path, ns in
                     sorted(by_path.items(), key=lambda kv: -kv[1])) or "–"


def _ranks(console: Console, ranks: list[dict[str, Any]]) -> None:
    """Per rank (process): where it ran, what it ran, per phase — only with several."""
    if len(ranks) < 2:
        return
    table = _table(console, "ranks", [
        ("rank", "right", False), ("process", "left", True), ("file", "left", True),
        ("GPU", "left", True), ("devices", "left", False), ("kernels", "right", False),
        ("GPU time", "right", False), ("GEMM", "right", False), ("GEMM by path", "left", True),
        ("prefill", "right", False), ("decode", "right", False)])
    for index in (1, 2, 3):  # process, file and GPU give way (cut) before the numbers do
        table.columns[index].min_width = NAME_MIN_WIDTH
    for rank in ranks:
        where = f"{rank['process'] or '–'} ({rank['pid']})" if rank["pid"] is not None \
            else (rank["process"] or "–")
        if rank.get("host"):
            where += f" @ {rank['host']}"
        phase_ns = rank.get("phase_ns") or {}
        table.add_row(str(rank["rank"]), _one_line(where, RANK_TEXT_WIDTH),
                      _one_line(rank.get("file") or "–", RANK_TEXT_WIDTH),
                      _one_line(", ".join(rank.get("gpus") or []) or "–", RANK_TEXT_WIDTH),
                      ", ".join(str(d) for d in rank.get("devices") or []) or "–",
                      f"{rank['kernels']:,}", format_ns(rank["gpu_ns"]),
                      format_ns(rank["gemm_ns"]),
                      _paths(rank["gemm_ns_by_path"], rank["gemm_ns"]),
                      format_ns(phase_ns.get("prefill", 0)),
                      format_ns(phase_ns.get("decode", 0)))
    _print_table(console, table)


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
    title = "GEMM time by datatype path"
    if summary.get("convolution_gemm_ns"):
        title += (f" ({format_ns(summary['convolution_gemm_ns'])} of it convolutions computed "
                  "as GEMMs)")
    table = _table(console, title,
                   [("path", "left", False), ("time", "right", False), ("share", "right", False)])
    total = summary["gemm_time_ns"]
    for path, ns in by_path.items():
        table.add_row(Text(path, style=PATH_STYLE.get(path, "")), format_ns(ns),
                      format_share(ns, total))
    _print_table(console, table)
    if summary["unknown_gemm_share"]:
        console.print(f"unknown: {100 * summary['unknown_gemm_share']:.1f}% of GEMM time has no "
                      "determined datatype path")


def _phases(console: Console, phases: dict[str, Any]) -> None:
    if not any(phases[p]["gpu_ns"] for p in PHASES if p != "unattributed"):
        console.print("phases: nothing could be attributed to prefill, decode or mixed steps "
                      "(no step markers and no heuristic signal)")
        return
    table = _table(console, "phases", [
        ("phase", "left", False), ("source", "left", False), ("steps", "right", False),
        ("tokens prefill/decode", "right", True), ("GPU time", "right", False),
        ("GEMM time", "right", False), ("GEMM by path", "left", True)])
    for phase in PHASES:
        data = phases[phase]
        if not data["gpu_ns"] and not data["steps"]:
            continue
        gemm = data["gemm_ns"]
        by_path = ", ".join(f"{path} {format_share(ns, gemm)}" for path, ns in
                            sorted(data["gemm_ns_by_path"].items(), key=lambda kv: -kv[1]))
        table.add_row(phase, data["source"] or "–", str(data["steps"]),
                      f"{data['prefill_tokens']:,}/{data['decode_tokens']:,}",
                      format_ns(data["gpu_ns"]), format_ns(gemm), by_path or "–")
    _print_table(console, table)


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
    table = _table(console, "layers (each judged against what it declares)", [
        ("phase", "left", False), ("layer", "left", False), ("declared", "left", True),
        ("expected", "left", True), ("ran", "left", True), ("share", "right", False),
        ("outcome", "left", True), ("told by", "left", True)])
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
    _print_table(console, table)
    if len(rows) > LAYER_ROWS:
        console.print(Text(f"  … {len(rows) - LAYER_ROWS} more rows in --json (layers)",
                           style="dim"))


def _bound(row: dict[str, Any], gpu: dict[str, Any] | None) -> str:
    if row["covered_ns"] <= 0:
        return row["bound"] or "–"
    if row["roof_tflops"] is None:
        return "no roof for this path"
    return roof_label(row["bound"], row["roof_math"], row["roof_tflops"],
                      gpu.get("memory_gbps") if gpu else None)


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
    table = _table(console, f"roofline ({where})", [
        ("phase", "left", False), ("path", "left", False), ("GEMM time", "right", False),
        ("work known", "right", True), ("achieved", "right", False),
        ("bandwidth", "right", False), ("FLOP/B", "right", False), ("bound", "left", True),
        ("of roof", "right", True)])
    unknown_notes: list[str] = []
    for phase in PHASES:
        for index, row in enumerate(roofline["phases"].get(phase, [])):
            known = row["covered_ns"] > 0
            bound = _bound(row, gpu)
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
    _print_table(console, table)
    for note in unknown_notes[:6]:
        console.print(Text(f"  {note}", style="dim"))
    estimates = roofline.get("fallback") or []
    if estimates:
        console.print(Text("what the fallback costs (estimate)", style="bold"))
        for item in estimates:
            console.print(Text(f"  {item['sentence']}"))
        console.print(Text(f"  model: {roofline['fallback_model']}", style="dim"))


def operand_types(entry: dict[str, Any]) -> str:
    """A kernel's operand types as activations × weights (``e4m3×e2m1``: FP8 activations,
    FP4 weights), ``?`` for the side not known, ``–`` when neither is."""
    activations, weights = entry.get("activations"), entry.get("weights")
    if not activations and not weights:
        return "–"
    return f"{activations or '?'}×{weights or '?'}"


def _top_kernels(console: Console, kernels: list[dict[str, Any]], gpu_ns: int) -> None:
    table = _table(console, f"top kernels by GPU time (of {len(kernels):,})", [
        ("time", "right", False), ("share", "right", False), ("count", "right", False),
        ("op", "left", False), ("path", "left", False), ("operands", "left", False),
        ("name", "left", True)])
    table.columns[-1].min_width = NAME_MIN_WIDTH  # cut to one line, not wrapped
    shown = kernels[:TOP_KERNELS]
    names = distinct_cuts([entry["name"] for entry in shown], NAME_WIDTH)
    for entry, name in zip(shown, names, strict=True):
        table.add_row(format_ns(entry["total_ns"]), format_share(entry["total_ns"], gpu_ns),
                      f"{entry['count']:,}",
                      f"{entry['op']} (conv)" if entry.get("convolution") else entry["op"],
                      Text(entry["path"], style=PATH_STYLE.get(entry["path"], "")),
                      operand_types(entry), _one_line(name))
    _print_table(console, table)


def _launchers(console: Console, launchers: list[dict[str, Any]]) -> None:
    """The launching threads: process and thread with their ids, rank, devices."""
    named = [item for item in launchers if item["thread"] or item["process"]
             or item.get("pid") is not None]
    if not named:
        return
    several = len({item.get("rank") for item in named}) > 1
    columns = [("process (pid)", "left", True), ("thread (tid)", "left", True),
               ("devices", "left", False), ("kernels", "right", False),
               ("GPU time", "right", False)]
    if several:
        columns.insert(0, ("rank", "right", False))
    table = _table(console, "launching threads", columns)
    for item in named[:8]:
        row: list[Text | str] = [
            Text(_with_id(item["process"], item.get("pid"))),
            Text(_with_id(item["thread"], item.get("tid"))),
            ", ".join(str(d) for d in item.get("devices") or []) or "–",
            f"{item['kernels']:,}", format_ns(item["gpu_ns"])]
        if several:
            rank = item.get("rank")
            row.insert(0, str(rank) if rank is not None else "–")
        table.add_row(*row)
    _print_table(console, table)


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
