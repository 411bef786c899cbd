"""The report's charts as plotly figure specs (``{"data": [...], "layout": {...}}``), built once.

The HTML page draws these specs as they are (``html.py`` embeds them; the page's script only
calls ``Plotly.newPlot``), and the notebook API wraps the same specs in
``plotly.graph_objects.Figure`` (``Run.timeline()``, ``Run.breakdown()``): one definition of
each chart, whoever shows it.

The specs are plain JSON-able dicts, built from what the page always had: the timeline data
of ``timeline.py`` (sized to a budget, so the per-kernel loop below runs over at most
``kernel_budget`` kernels, never over a run's records) and the analysis document.

Trace text is untrusted and plotly renders a subset of HTML in hover labels, legends and
ticks: every string from the data is HTML-escaped here (:func:`esc`). Per-kernel hover texts
repeat one text per kernel name; the numbers that differ per kernel (duration, start) are
``customdata`` formatted by the trace's ``hovertemplate``, so the page can ship each text once.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from tracekit.report.palette import PATH_COLORS, PHASE_COLORS, path_rank
from tracekit.vocabulary import PHASES

#: beyond this many kernels the timeline draws with WebGL: SVG draws a few thousand crisply
#: and needs no GPU, but only WebGL keeps panning smooth past that
SVG_LIMIT = 5_000
#: characters per line of a wrapped name in a hover label
HOVER_WIDTH = 110
FALLBACK_COLOR = "#777"

Figure = dict[str, Any]
Trace = dict[str, Any]


def esc(value: Any) -> str:
    """Text for plotly's HTML-ish labels: ``& < > " '`` escaped, None as ""."""
    return html.escape("" if value is None else str(value), quote=True)


def wrap(value: Any, width: int = HOVER_WIDTH) -> str:
    """Escaped text cut into lines of ``width`` characters (kernel names have no spaces)."""
    text = "" if value is None else str(value)
    return "<br>".join(esc(text[i:i + width]) for i in range(0, len(text), width))


def ms(ns: float) -> float:
    """Nanoseconds as milliseconds (the charts' unit), exact to the nanosecond."""
    return round(ns / 1e6, 6)


def ordered_groups(groups: Iterable[str]) -> list[str]:
    """Paths in the palette's order, anything new after them (stable)."""
    return sorted(groups, key=path_rank)


def shading_shapes(spans: Sequence[Sequence[Any]], start: float, end: float
                   ) -> list[dict[str, Any]]:
    """Phase bands behind a chart: one rectangle per ``[start, end, phase]`` span in view."""
    return [{"type": "rect", "xref": "x", "yref": "paper", "x0": ms(span_start),
             "x1": ms(span_end), "y0": 0, "y1": 1,
             "fillcolor": PHASE_COLORS.get(phase, "#999"), "opacity": 0.13,
             "line": {"width": 0}, "layer": "below"}
            for span_start, span_end, phase in spans
            if not (span_end < start or span_start > end)]


def kernel_hover(entry: dict[str, Any]) -> str:
    """What a kernel's hover label says about its name (the same for each of its launches)."""
    lines = [f"<b>{wrap(entry.get('name'))}</b>",
             f"op {esc(entry.get('op'))} · path <b>{esc(entry.get('path'))}</b>",
             f"evidence {esc(entry.get('evidence'))} ({esc(entry.get('confidence'))})"
             + (f" · rule {esc(entry['rule'])}" if entry.get("rule") else "")]
    if entry.get("reason"):
        lines.append(wrap(entry["reason"]))
    return "<br>".join(lines)


#: the per-launch part of a kernel's hover label: customdata = [duration s, start ms]
KERNEL_HOVER_TEMPLATE = ("%{text}<br>duration %{customdata[0]:.3~s}s · "
                         "start %{customdata[1]:.3f} ms<extra></extra>")
STEP_HOVER_TEMPLATE = "%{text}<br>duration %{customdata:.3~s}s<extra></extra>"
_UNKNOWN_NAME = {"name": "?", "op": "other", "path": "unknown", "group": "unknown"}


def _lane(scatter: str, name: str, group: str, color: str, width: int,
          points: dict[str, list[Any]], template: str, *, legend: bool = True) -> list[Trace]:
    """A row of bars (a ``lines`` trace with gaps) and its hover markers at the bars' middles."""
    return [
        {"type": scatter, "mode": "lines", "x": points["x"], "y": points["y"], "name": name,
         "legendgroup": group, "showlegend": legend, "line": {"color": color, "width": width},
         "hoverinfo": "skip", "connectgaps": False},
        {"type": scatter, "mode": "markers", "x": points["mx"], "y": points["my"], "name": name,
         "legendgroup": group, "showlegend": False, "marker": {"color": color, "size": 5},
         "text": points["text"], "customdata": points["custom"], "hovertemplate": template},
    ]


def _new_points() -> dict[str, list[Any]]:
    return {"x": [], "y": [], "mx": [], "my": [], "text": [], "custom": []}


def timeline_figure(timeline: dict[str, Any]) -> Figure | None:
    """Every kernel of the detail window, one row per device and stream, coloured by datatype
    path, with a lane of engine steps on top and phase bands behind. None without kernels."""
    kernels, names, tracks = timeline["kernels"], timeline["names"], timeline["tracks"]
    if not kernels or not kernels["start"]:
        return None
    scatter = "scattergl" if len(kernels["start"]) > SVG_LIMIT else "scatter"
    hovers = [kernel_hover(entry) for entry in names]
    by_group: dict[str, dict[str, list[Any]]] = defaultdict(_new_points)
    for track, start, duration, name in zip(kernels["track"], kernels["start"], kernels["dur"],
                                            kernels["name"], strict=True):
        entry = names[name] if name < len(names) and names[name] else _UNKNOWN_NAME
        points = by_group[entry["group"]]
        row = track + 1
        points["x"] += [ms(start), ms(start + duration), None]
        points["y"] += [row, row, None]
        points["mx"].append(ms(start + duration / 2))
        points["my"].append(row)
        points["text"].append(hovers[name] if entry is not _UNKNOWN_NAME else "?")
        points["custom"].append([duration / 1e9, ms(start)])
    traces: list[Trace] = []
    for group in ordered_groups(by_group):
        traces += _lane(scatter, esc(group), group, PATH_COLORS.get(group, FALLBACK_COLOR), 14,
                        by_group[group], KERNEL_HOVER_TEMPLATE)
    steps = timeline.get("steps") or {"start": []}
    by_phase: dict[str, dict[str, list[Any]]] = defaultdict(_new_points)
    for index, start in enumerate(steps["start"]):
        end, phase = steps["end"][index], steps["phase"][index]
        points = by_phase[phase]
        points["x"] += [ms(start), ms(end), None]
        points["y"] += [0, 0, None]
        points["mx"].append(ms((start + end) / 2))
        points["my"].append(0)
        points["text"].append(f"<b>{esc(phase)} step</b> ({esc(steps['source'][index])})<br>"
                              + wrap(steps["text"][index]))
        points["custom"].append((end - start) / 1e9)
    for phase, points in by_phase.items():
        traces += _lane(scatter, f"{esc(phase)} step", f"step-{phase}",
                        PHASE_COLORS.get(phase, "#999"), 10, points, STEP_HOVER_TEMPLATE)
    window = timeline["window"]
    pad = max(1, window["end_ns"] - window["start_ns"]) * 0.01
    layout = {
        "height": max(300, 150 + 42 * (len(tracks) + 1)),
        "margin": {"l": 150, "r": 20, "t": 36, "b": 50},
        "hovermode": "closest", "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "xaxis": {"title": {"text": "time since the first kernel (ms)"}, "zeroline": False,
                  "range": [ms(window["start_ns"] - pad), ms(window["end_ns"] + pad)]},
        "yaxis": {"tickvals": list(range(len(tracks) + 1)),
                  "ticktext": ["steps"] + [esc(track["label"]) for track in tracks],
                  "autorange": "reversed", "fixedrange": True, "zeroline": False,
                  "showgrid": False},
        "shapes": shading_shapes(timeline["phases"], window["start_ns"] - pad,
                                 window["end_ns"] + pad),
        "plot_bgcolor": "#fff",
    }
    return {"data": traces, "layout": layout}


def overview_figure(timeline: dict[str, Any]) -> Figure | None:
    """GPU busy time of the whole run per stream and datatype path, stacked per time bucket
    (only for runs with more kernels than the detail window draws). None otherwise."""
    overview, tracks = timeline.get("overview"), timeline["tracks"]
    if not overview:
        return None
    groups, buckets, bucket_ns = overview["groups"], overview["buckets"], overview["bucket_ns"]
    dense: dict[tuple[int, int], list[float]] = {}
    for track, group, bucket, busy in zip(overview["track"], overview["group"],
                                          overview["bucket"], overview["busy_ns"], strict=True):
        row = dense.setdefault((track, group), [0.0] * (buckets + 1))
        row[bucket] += busy
    x = [ms((bucket + 0.5) * bucket_ns) for bucket in range(buckets + 1)]
    count = len(tracks)
    layout: dict[str, Any] = {
        "height": max(260, 100 + 64 * count), "margin": {"l": 150, "r": 20, "t": 36, "b": 50},
        "showlegend": True, "legend": {"orientation": "h", "x": 0, "y": 1.02,
                                       "yanchor": "bottom"},
        "hovermode": "x unified",
        "xaxis": {"title": {"text": "time since the first kernel (ms) — every kernel, "
                                    "aggregated"},
                  "anchor": "y" + (str(count) if count > 1 else "")},
        "shapes": shading_shapes(timeline["phases"], float("-inf"), float("inf")),
        "plot_bgcolor": "#fff", "annotations": [],
    }
    gap, shown, traces = 0.04, set(), []
    for track in range(count):
        axis = "y" if track == 0 else f"y{track + 1}"
        top, bottom = 1 - track / count, 1 - (track + 1) / count
        layout["yaxis" if track == 0 else f"yaxis{track + 1}"] = {
            "domain": [bottom + gap / count, top], "range": [0, 100], "fixedrange": True,
            "tickvals": [100], "ticksuffix": "%", "tickfont": {"size": 9}, "showgrid": False}
        layout["annotations"].append({
            "text": esc(tracks[track]["label"]), "xref": "paper", "yref": "paper", "x": -0.01,
            "y": (top + bottom) / 2, "xanchor": "right", "showarrow": False,
            "font": {"size": 12}})
        for group in ordered_groups(groups):
            busy_row = dense.get((track, groups.index(group)))
            if busy_row is None:
                continue
            color = PATH_COLORS.get(group, FALLBACK_COLOR)
            traces.append({
                "type": "scatter", "mode": "lines", "x": x,
                "y": [round(100 * busy / bucket_ns, 3) for busy in busy_row], "xaxis": "x",
                "yaxis": axis, "stackgroup": f"track{track}", "name": esc(group),
                "legendgroup": group, "showlegend": group not in shown,
                "line": {"width": 0.5, "color": color}, "fillcolor": color,
                "hovertemplate": f"{esc(group)} %{{y:.1f}}% busy<extra></extra>"})
            shown.add(group)
    return {"data": traces, "layout": layout}


def breakdown_figure(phases: dict[str, Any]) -> Figure:
    """GEMM time by datatype path per phase (the document's ``phases``), as stacked bars."""
    shown = [phase for phase in PHASES if phases.get(phase) and phases[phase]["gemm_ns"] > 0]
    paths = ordered_groups({path for phase in shown for path in phases[phase]["gemm_ns_by_path"]})
    traces = []
    for path in paths:
        values = [phases[phase]["gemm_ns_by_path"].get(path, 0) for phase in shown]
        traces.append({
            "type": "bar", "name": esc(path), "x": shown, "y": [ms(v) for v in values],
            "text": [f"{100 * v / phases[phase]['gemm_ns']:.0f}%" if v else ""
                     for v, phase in zip(values, shown, strict=True)],
            "textposition": "inside", "marker": {"color": PATH_COLORS.get(path, FALLBACK_COLOR)},
            "hovertemplate": f"{esc(path)}: %{{y:.3f}} ms (%{{text}})<extra>%{{x}}</extra>"})
    layout: dict[str, Any] = {
        # the legend under the bars, the top margin for plotly's toolbar alone (a legend up
        # there grows under the toolbar once a run has a few paths)
        "barmode": "stack", "height": 380, "margin": {"l": 60, "r": 10, "t": 30, "b": 80},
        "yaxis": {"title": {"text": "GEMM time (ms)"}},
        "legend": {"orientation": "h", "x": 0, "y": -0.12, "yanchor": "top",
                   "traceorder": "normal"},
        "plot_bgcolor": "#fff"}
    if not shown:
        layout["annotations"] = [{"text": "no GEMM kernels recognized", "showarrow": False,
                                  "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}]
    return {"data": traces, "layout": layout}
