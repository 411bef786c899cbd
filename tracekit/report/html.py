"""The HTML report: one self-contained file (plotly.js inline) that opens offline.

Trace content is untrusted — a kernel may be named ``</script><script>…`` — so:
- every string the template prints goes through Jinja2 autoescaping;
- the page data is JSON inside ``<script type="application/json">`` with ``<``, ``>``, ``&``,
  U+2028 and U+2029 written as ``\\uXXXX`` escapes (:func:`script_json`), so no string can
  close the script element; the page's JavaScript escapes again before handing text to plotly,
  which renders a subset of HTML in hover labels and ticks.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, FunctionLoader, StrictUndefined
from markupsafe import Markup, escape

from tracekit.errors import InputError
from tracekit.formatting import format_ns, format_share, roof_label
from tracekit.report.figures import (
    Figure,
    breakdown_figure,
    overview_figure,
    timeline_figure,
)
from tracekit.report.palette import PATH_COLORS, PATH_ORDER, SEVERITY_COLORS
from tracekit.report.roofline_figure import (
    DIFF_ID_PREFIX,
    chart_phases,
    diff_roofline_figures,
    drawn_phases,
    report_roofline_figures,
)
from tracekit.report.timeline import TimelineOptions, timeline_data
from tracekit.store.db import Store
from tracekit.version import __version__
from tracekit.vocabulary import MATH_OPS, PHASES

TOP_KERNELS = 50
#: launching threads listed (the busiest first, as the terminal's table)
LAUNCHER_ROWS = 20
#: every kernel name gets a row (folded after the top ones) up to this many, so a name the
#: timeline shows only on hover can still be found with the browser's search
MAX_KERNEL_ROWS = 5_000
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                   "\u2028": "\\u2028", "\u2029": "\\u2029"}
_LIGHT_PATHS = {"bf16", "fp16", "non-GEMM", "tf32"}


def script_json(value: Any) -> Markup:
    """JSON that is safe to place between ``<script>`` tags, whatever strings it holds."""
    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str,
                         allow_nan=False)
    for raw, escaped in _SCRIPT_ESCAPES.items():
        encoded = encoded.replace(raw, escaped)
    return Markup(encoded)


def _load_template(name: str) -> str:
    return (resources.files("tracekit.report") / name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment: autoescape always on, undefined names are errors."""
    env = Environment(loader=FunctionLoader(_load_template), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["ns"] = format_ns
    env.filters["share"] = format_share
    env.globals["path_chip"] = path_chip
    env.globals["roof_label"] = roof_label
    return env


def path_chip(path: str | None) -> Markup:
    """A coloured label for a datatype path (escaped: rule packs may invent paths)."""
    name = path or "unknown"
    color = PATH_COLORS.get(name, "#777777")
    light = " light" if name in _LIGHT_PATHS else ""
    return Markup(f'<span class="path{light}" style="background:{color}">{escape(name)}</span>')


@lru_cache(maxsize=1)
def plotly_js() -> Markup:
    """plotly.js, minified, to inline in the page (about 4.8 MB)."""
    from plotly.offline import get_plotlyjs

    source = get_plotlyjs()
    # A literal "</script" inside the bundle would end the element early.
    return Markup(source.replace("</script", "<\\/script"))


def timeline_note(timeline: dict[str, Any]) -> str:
    """Says what the timeline shows and what was aggregated, in words."""
    total = timeline["total"]
    if not total:
        return "The run holds no kernel records."
    window = timeline["window"]
    if window["kernels"] >= total:
        return (f"Every kernel of the run ({total:,}) is drawn, one row per device and stream, "
                "coloured by datatype path (non-GEMM kernels in light grey); the bands behind "
                "them are steps shaded by phase. Hover a kernel for its full name and evidence.")
    overview = timeline["overview"]
    text = (f"The run holds {total:,} kernels, more than a page can draw one by one. "
            f"The lower chart draws every kernel of one stretch of "
            f"{format_ns(window['end_ns'] - window['start_ns'])} "
            f"({window['kernels']:,} kernels, from the first prefill step when there is one). ")
    if overview:
        text += (f"The upper chart aggregates all {total:,} kernels: GPU busy time per stream "
                 f"and datatype path in {overview['buckets']:,} buckets of "
                 f"{format_ns(overview['bucket_ns'])}.")
    return text


#: the layer table's outcome colours: problems in the severity colours, fine outcomes green
OUTCOME_COLORS = {"silent_fallback": SEVERITY_COLORS["error"],
                  "degraded": SEVERITY_COLORS["error"],
                  "logged_fallback": SEVERITY_COLORS["warning"],
                  "mismatch": SEVERITY_COLORS["warning"],
                  "undetermined": SEVERITY_COLORS["info"],
                  "hardware_limited": SEVERITY_COLORS["info"],
                  "engine_limited": SEVERITY_COLORS["info"],
                  "as_declared": "#2e7d32", "better": "#2e7d32", "excluded": "#777777"}


#: layer outcomes that confirm the declaration: only these make the verdict box green
CONFIRMING_OUTCOMES = frozenset({"as_declared", "better"})


def verdict_class(document: dict[str, Any]) -> str:
    """The verdict box's colour: the worst finding's severity; ok (green) only where a layer's
    outcome confirms a declaration; otherwise neutral (no checkpoint given, nothing judged)."""
    severities = {finding["severity"] for finding in document.get("findings", [])}
    for severity in ("error", "warning"):
        if severity in severities:
            return severity
    confirmed = any(row.get("outcome") in CONFIRMING_OUTCOMES
                    for row in document.get("layers") or [])
    return "ok" if confirmed and document.get("verdict") else "neutral"


def report_figures(document: dict[str, Any], timeline: dict[str, Any]
                   ) -> dict[str, Figure | None]:
    """The page's charts by element id: the timeline and its overview, the breakdown, and a
    roofline chart per phase with a GEMM family of known work."""
    return {"tk-timeline": timeline_figure(timeline), "tk-overview": overview_figure(timeline),
            "tk-breakdown": breakdown_figure(document["phases"]),
            **report_roofline_figures(document, drawn_only=True)}


def roofline_unknown_reason(roofline: dict[str, Any] | None) -> str | None:
    """Why no GEMM of the run has known work (the reason covering the most GEMM time), or
    None when some has."""
    if not roofline:
        return None
    rows = [row for phase in PHASES for row in roofline["phases"].get(phase, [])]
    if any(row["covered_ns"] for row in rows):
        return None
    reasons = [u for row in rows for u in row["unknown"]]
    return max(reasons, key=lambda u: u["ns"])["reason"] if reasons else "no GEMM time"


def page_figures(figures: dict[str, Figure | None]) -> tuple[dict[str, Any], list[str]]:
    """The figures as the page carries them: each distinct ``text`` string once, in a table.

    A trace's ``text`` list becomes ``tk_text``, indexes into the returned string table (the
    page's script puts the strings back before plotting). The timeline's hover texts repeat
    one text per kernel name, so the page ships thousands of texts, not one per kernel.
    """
    table: dict[str, int] = {}
    carried: dict[str, Any] = {}
    for key, figure in figures.items():
        if figure is None:
            carried[key] = None
            continue
        traces = []
        for trace in figure["data"]:
            texts = trace.get("text")
            if isinstance(texts, list):
                trace = {**trace, "tk_text": [table.setdefault(t, len(table)) for t in texts]}
                del trace["text"]
            traces.append(trace)
        carried[key] = {"data": traces, "layout": figure["layout"]}
    return carried, list(table)


def render_html(document: dict[str, Any], timeline: dict[str, Any]) -> str:
    """The report page for one run's analysis document and timeline data."""
    figures, strings = page_figures(report_figures(document, timeline))
    page_data = {"figures": figures, "strings": strings}
    template = environment().get_template("report.html.j2")
    return template.render(
        tracekit_version=__version__,
        plotlyjs=plotly_js(),
        data_json=script_json(page_data),
        run=document["run"],
        devices=document["devices"],
        ranks=document.get("ranks") or [],
        iterations=document.get("iterations"),
        summary=document["summary"],
        verdict=document.get("verdict") or [],
        verdict_class=verdict_class(document),
        phases=document["phases"],
        phase_order=PHASES,
        phase_attribution=document.get("phase_attribution"),
        warnings=document.get("warnings") or [],
        findings=document["findings"],
        layers=[row for row in document.get("layers") or []
                if row.get("outcome") != "no_declaration"],
        outcome_colors=OUTCOME_COLORS,
        top_kernels=document["kernels"][:TOP_KERNELS],
        more_kernels=document["kernels"][TOP_KERNELS:MAX_KERNEL_ROWS],
        kernels_left_out=max(0, len(document["kernels"]) - MAX_KERNEL_ROWS),
        severity_colors=SEVERITY_COLORS,
        timeline=timeline,
        timeline_note=timeline_note(timeline),
        roofline=document.get("roofline"),
        roofline_phases=chart_phases(document.get("roofline")),
        roofline_charts=drawn_phases(document.get("roofline")),
        roofline_unknown=roofline_unknown_reason(document.get("roofline")),
        launchers=(document.get("launchers") or [])[:LAUNCHER_ROWS],
        math_ops=MATH_OPS,
    )


def write_text_atomic(path: Path, content: str) -> Path:
    """Write ``content`` to ``path`` through a temporary file, so no half file is left."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a file to write the report to")
    if not path.parent.exists():
        raise InputError(f"cannot write {path}: folder {path.parent} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(content)
        # mkstemp makes the file private (0600); a report is meant to be shared.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_html(document: dict[str, Any], store: Store, run_id: int, path: Path,
               options: TimelineOptions | None = None) -> Path:
    """Write the HTML report of ``run_id`` to ``path``; the timeline is read from ``store``."""
    with store.connect() as connection:
        timeline = timeline_data(connection, run_id, options)
    return write_text_atomic(Path(path), render_html(document, timeline))


def render_diff_html(diff: dict[str, Any]) -> str:
    """The comparison page of two runs (``tracekit diff --html``)."""
    rooflines = diff_roofline_figures(diff)
    figures, strings = page_figures(dict(rooflines))
    page_data = {"diff": diff, "path_order": list(PATH_ORDER), "path_colors": PATH_COLORS,
                 "figures": figures, "strings": strings}
    path_rows = [("all", diff["gemm_paths"])] + [
        (phase, data["paths"]) for phase, data in diff["phases"].items()]
    return environment().get_template("diff.html.j2").render(
        tracekit_version=__version__, plotlyjs=plotly_js(), data_json=script_json(page_data),
        diff=diff, path_rows=path_rows, severity_colors=SEVERITY_COLORS,
        roofline_ids=list(rooflines), diff_prefix=DIFF_ID_PREFIX)


def write_diff_html(diff: dict[str, Any], path: Path) -> Path:
    """Write the comparison page to ``path``."""
    return write_text_atomic(Path(path), render_diff_html(diff))
