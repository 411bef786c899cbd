"""The roofline charts as plotly figure specs: one log-log chart per phase.

x is arithmetic intensity (FLOP/byte), y the achieved TFLOP/s; each GPU roof is a line (the
bandwidth slope up to the ridge point, then the path's dense peak), each GEMM family with
known work is a marker sized by its GPU time and coloured by its datatype path, and each
fallback estimate is a star where the same work would sit on the expected path at its
roofline bound. Built from the document's ``roofline`` section only (a few hundred points at
most per phase), so the HTML report, ``tracekit diff --html`` and the notebook API draw the
same figure.
"""

from __future__ import annotations

import math
from typing import Any

from tracekit.formatting import format_ns
from tracekit.report.figures import FALLBACK_COLOR, Figure, esc, ordered_groups, wrap
from tracekit.report.palette import PATH_COLORS
from tracekit.vocabulary import PHASES

#: families drawn per phase and run (the largest by GPU time; the rest are summed in the
#: phase table and listed in the --json document)
MAX_POINTS = 500
ID_PREFIX = "tk-roofline-"
DIFF_ID_PREFIX = "tk-diff-roofline-"
_POINT_FIELDS = ("name", "path", "signature", "source", "launches", "time_ns", "tflops", "gbps",
                 "intensity", "bound", "roof_share")


def chart_data(roofline: dict[str, Any] | None) -> dict[str, Any]:
    """What a roofline chart draws: the roofs, the points per phase, the estimates per phase."""
    if not roofline:
        return {"roofs": [], "gpu": None, "phases": {}, "estimates": {}}
    phases: dict[str, list[dict[str, Any]]] = {}
    for family in roofline["families"]:  # largest GPU time first
        if family["intensity"] is None or not family["tflops"]:
            continue
        points = phases.setdefault(family["phase"], [])
        if len(points) < MAX_POINTS:
            points.append({key: family[key] for key in _POINT_FIELDS})
    estimates: dict[str, list[dict[str, Any]]] = {}
    for item in roofline.get("fallback") or []:
        bound, flops, bytes_ = item["expected_bound_ns"], item["flops"], item["expected_bytes"]
        if bound and flops and bytes_:
            estimates.setdefault(item["phase"], []).append({
                "path": item["expected_path"], "intensity": flops / bytes_,
                "tflops": flops / bound * 1e9 / 1e12, "time_ns": bound,
                "saving_at_most": item["saving_at_most"]})
    gpu = roofline.get("gpu")
    return {"roofs": roofline["roofs"], "gpu": gpu["name"] if gpu else None,
            "phases": {phase: phases[phase] for phase in PHASES if phase in phases},
            "estimates": estimates}


def chart_phases(roofline: dict[str, Any] | None) -> list[str]:
    """Phases with GEMM time in the roofline section, in phase order."""
    if not roofline:
        return []
    return [phase for phase in PHASES if roofline["phases"].get(phase)]


def drawn_phases(roofline: dict[str, Any] | None) -> list[str]:
    """Phases with at least one GEMM family of known work: the ones a chart is drawn for
    (a chart of roofs without a point says nothing the table does not)."""
    return list(chart_data(roofline)["phases"])


def _point_hover(point: dict[str, Any]) -> str:
    lines = [f"<b>{wrap(point['name'], 100)}</b>", esc(point.get("signature") or ""),
             f"path {esc(point['path'])} · {point['launches']:,} launches · "
             f"{esc(format_ns(point['time_ns']))}",
             f"{point['tflops']:.3g} TFLOP/s · {point['gbps'] / 1e3:.3g} TB/s · "
             f"{point['intensity']:.3g} FLOP/B"]
    if point.get("bound") and point.get("roof_share") is not None:
        lines.append(f"{esc(point['bound'])}-bound, {100 * point['roof_share']:.0f}% of the roof")
    return "<br>".join(lines)


def roofline_figure(roofs: list[dict[str, Any]], series: list[tuple[str, str, list[Any]]],
                    estimates: list[dict[str, Any]] | None = None) -> Figure:
    """One log-log roofline chart: ``roofs`` (the section's), ``series`` as (label prefix,
    marker symbol, points) — one per run — and the fallback ``estimates`` as stars."""
    estimates = estimates or []
    points = [p for _, _, members in series for p in members]
    xs = [p["intensity"] for p in points] + [e["intensity"] for e in estimates]
    ys = [p["tflops"] for p in points] + [e["tflops"] for e in estimates]
    ridges = [r["ridge_flop_per_byte"] for r in roofs]
    x_low = max(min(xs + ridges, default=1.0) / 4, 1e-3)
    x_high = max(xs + ridges, default=1.0) * 4
    bandwidths = [r["peak_tflops"] / r["ridge_flop_per_byte"] for r in roofs]
    y_low = min(ys + [x_low * bw for bw in bandwidths], default=1.0)
    y_high = max(ys + [r["peak_tflops"] for r in roofs], default=10.0)
    traces: list[dict[str, Any]] = []
    for roof, bandwidth in zip(roofs, bandwidths, strict=True):
        label = f"{roof.get('label', '')}{roof['math'].upper()} roof"
        traces.append({
            "type": "scatter", "mode": "lines", "name": esc(label),
            "legendgroup": f"roof-{roof.get('label', '')}{roof['path']}",
            "x": [x_low, roof["ridge_flop_per_byte"], x_high],
            "y": [x_low * bandwidth, roof["peak_tflops"], roof["peak_tflops"]],
            "line": {"color": PATH_COLORS.get(roof["path"], FALLBACK_COLOR), "width": 1.5,
                     "dash": "dot"},
            "hovertemplate": (f"{esc(label)}: {roof['peak_tflops']:,.0f} TFLOP/s, "
                              f"{bandwidth:.2f} TB/s, ridge {roof['ridge_flop_per_byte']:,.0f} "
                              "FLOP/B<extra></extra>")})
    longest = max((p["time_ns"] for p in points), default=1) or 1
    for prefix, symbol, members in series:
        for path in ordered_groups({p["path"] for p in members}):
            group = [p for p in members if p["path"] == path]
            traces.append({
                "type": "scatter", "mode": "markers", "name": esc(f"{prefix}{path}"),
                "x": [p["intensity"] for p in group], "y": [p["tflops"] for p in group],
                "marker": {"color": PATH_COLORS.get(path, FALLBACK_COLOR), "symbol": symbol,
                           "opacity": 0.9, "line": {"color": "#1d232a", "width": 0.5},
                           "size": [round(7 + 26 * math.sqrt(p["time_ns"] / longest), 2)
                                    for p in group]},
                "text": [_point_hover(p) for p in group], "hoverinfo": "text"})
    for estimate in estimates:
        label = f"{estimate['path'].upper()} bound (estimate)"
        saving = estimate.get("saving_at_most")
        traces.append({
            "type": "scatter", "mode": "markers", "name": esc(label),
            "x": [estimate["intensity"]], "y": [estimate["tflops"]],
            "marker": {"symbol": "star-open", "size": 16, "line": {"width": 2},
                       "color": PATH_COLORS.get(estimate["path"], FALLBACK_COLOR)},
            "hovertemplate": (
                f"{esc(label)}: the same work on the {esc(estimate['path'].upper())} path, "
                f"bounded below by {esc(format_ns(estimate['time_ns']))} "
                f"({estimate['tflops']:.3g} TFLOP/s at most)"
                + (f", at most {100 * saving:.0f}% less time" if saving is not None else "")
                + "<extra></extra>")})
    # The legend goes under the x axis title: above the plot it shared the top margin with
    # plotly's toolbar (the mode bar, drawn at the top right on hover) and was covered by it.
    # The top margin holds the toolbar alone, clear of the plot area.
    layout: dict[str, Any] = {
        "height": 480, "margin": {"l": 70, "r": 10, "t": 30, "b": 130},
        "hovermode": "closest",
        "legend": {"orientation": "h", "x": 0, "y": -0.2, "yanchor": "top",
                   "font": {"size": 11}},
        "xaxis": {"type": "log", "title": {"text": "arithmetic intensity (FLOP/byte)"},
                  "range": [math.log10(x_low), math.log10(x_high)]},
        "yaxis": {"type": "log", "title": {"text": "achieved TFLOP/s"},
                  "range": [math.log10(max(y_low / 3, 1e-6)), math.log10(y_high * 2)]},
        "plot_bgcolor": "#fff"}
    if not points:
        layout["annotations"] = [{"text": "no GEMM family with known work in this phase",
                                  "showarrow": False, "xref": "paper", "yref": "paper",
                                  "x": 0.5, "y": 0.5}]
    return {"data": traces, "layout": layout}


def report_roofline_figures(document: dict[str, Any], *, drawn_only: bool = False
                            ) -> dict[str, Figure]:
    """The report's roofline charts by element id (``tk-roofline-<phase>``): every phase
    with GEMM time, or with ``drawn_only`` those with a point to draw (the HTML page)."""
    roofline = document.get("roofline")
    data = chart_data(roofline)
    phases = drawn_phases(roofline) if drawn_only else chart_phases(roofline)
    return {f"{ID_PREFIX}{phase}": roofline_figure(
        data["roofs"], [("", "circle", data["phases"].get(phase, []))],
        data["estimates"].get(phase)) for phase in phases}


def diff_roofline_figures(diff: dict[str, Any]) -> dict[str, Figure]:
    """Both runs' points per phase (A circles, B diamonds), by ``tk-diff-roofline-<phase>``.

    The roofs are A's; when B ran on another product its roofs are drawn too, labelled."""
    sides = diff.get("roofline") or {}
    a, b = chart_data(sides.get("a")), chart_data(sides.get("b"))
    roofs = [dict(roof, label="") for roof in a["roofs"]]
    if a["gpu"] != b["gpu"]:
        roofs = ([dict(roof, label="A ") for roof in a["roofs"]]
                 + [dict(roof, label="B ") for roof in b["roofs"]])
    phases = [phase for phase in PHASES if phase in a["phases"] or phase in b["phases"]]
    return {f"{DIFF_ID_PREFIX}{phase}": roofline_figure(
        roofs, [("A ", "circle", a["phases"].get(phase, [])),
                ("B ", "diamond", b["phases"].get(phase, []))]) for phase in phases}
