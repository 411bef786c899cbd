"""The HTML report: self-contained, escaped, bounded, and really rendered by a browser.

The browser test opens the report of a scenario run in Debian's headless Chromium, three ways:
``--dump-dom`` with console logging (no console message at all, the page's own render-status
says "rendered", the XSS-shaped kernel names are text nodes and no ``<img>`` exists), and
``--screenshot`` (pixels of the datatype-path colours inside the timeline's and the
breakdown's boxes, whose positions the page writes into ``data-rect`` once plotly has drawn).
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.support.report_scenario import (  # noqa: E402
    CHROMIUM,
    EVIL_NAME,
    MARLIN_GEMM,
    SCRIPT_NAME,
    WINDOW,
    analyzed_run,
    chromium,
    open_test_store,
)
from tracekit.errors import InputError  # noqa: E402
from tracekit.report.document import build_document  # noqa: E402
from tracekit.report.html import (  # noqa: E402
    plotly_js,
    render_html,
    script_json,
    write_html,
)
from tracekit.report.palette import PATH_COLORS, PHASE_COLORS  # noqa: E402
from tracekit.report.timeline import TimelineOptions, timeline_data  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A Marlin (weight-only) scenario run with its document and written report."""
    folder = tmp_path_factory.mktemp("report")
    store = open_test_store(folder)
    run_id = analyzed_run(store, folder / "marlin.sqlite", gemm=MARLIN_GEMM)
    with store.connect() as connection:
        document = build_document(connection, run_id)
    path = write_html(document, store, run_id, folder / "report.html")
    return {"store": store, "run_id": run_id, "document": document, "path": path,
            "html": path.read_text(encoding="utf-8"), "folder": folder}


def test_script_json_cannot_close_the_script_element() -> None:
    value = {"name": "</script><script>alert(1)</script>", "x": "a\u2028b\u2029c & <!--"}
    encoded = str(script_json(value))
    for forbidden in ("<", ">", "&", "\u2028", "\u2029"):
        assert forbidden not in encoded
    assert json.loads(encoded) == value


def test_report_is_self_contained(report: dict[str, Any]) -> None:
    html = report["html"]
    assert "plotly.js v" in html
    ours = html.replace(str(plotly_js()), "")  # the bundle's own strings mention its website
    assert not re.search(r"<script[^>]+src=", ours)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", ours)
    assert html.count("<script") == html.count("</script>")


def test_untrusted_text_is_escaped_in_the_file(report: dict[str, Any]) -> None:
    html = report["html"]
    assert "<img src=x" not in html
    assert "</script><script>alert(1)" not in html
    assert "</title><b>x</b>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_report_shows_verdict_first_then_findings_and_kernels(report: dict[str, Any]) -> None:
    html = report["html"]
    verdict = html.index('id="tk-verdict"')
    assert verdict < html.index('id="tk-timeline"') < html.index('id="tk-findings"')
    assert "decode GEMMs ran weight_only" in html
    assert "declared-path-not-run" in html
    assert "Every kernel of the run" in html


def test_timeline_draws_every_kernel_within_budget(report: dict[str, Any]) -> None:
    with report["store"].connect() as connection:
        timeline = timeline_data(connection, report["run_id"])
    total = report["document"]["summary"]["kernel_count"]
    assert timeline["total"] == total == len(timeline["kernels"]["start"])
    assert timeline["overview"] is None
    assert {t["label"] for t in timeline["tracks"]} == {"GPU 0 · stream 7", "GPU 0 · stream 13"}
    assert [span[2] for span in timeline["phases"]] == ["prefill", "decode"]
    names = {entry["name"]: entry for entry in timeline["names"]}
    assert names[MARLIN_GEMM]["group"] == "weight_only"
    assert names[SCRIPT_NAME]["group"] == "non-GEMM"


def test_timeline_aggregates_beyond_budget(report: dict[str, Any]) -> None:
    options = TimelineOptions(kernel_budget=10, overview_row_budget=4_000)
    with report["store"].connect() as connection:
        timeline = timeline_data(connection, report["run_id"], options)
    summary = report["document"]["summary"]
    assert len(timeline["kernels"]["start"]) == timeline["window"]["kernels"] == 10
    overview = timeline["overview"]
    assert sum(overview["count"]) == summary["kernel_count"]
    assert sum(overview["busy_ns"]) == summary["gpu_time_ns"]
    assert max(overview["bucket"]) < overview["buckets"]
    assert "weight_only" in overview["groups"]
    html = render_html(report["document"], timeline)
    assert "aggregates all 44 kernels" in html
    assert 'id="tk-overview"' in html


def test_write_html_refuses_a_missing_folder(report: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="does not exist"):
        write_html(report["document"], report["store"], report["run_id"],
                   report["folder"] / "nowhere" / "r.html")


# --- the browser --------------------------------------------------------------------------

class _Dom(HTMLParser):
    """Tags, the text under each id'd element, and data-rect attributes of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.rects: dict[str, tuple[int, ...]] = {}
        self.attrs_by_id: dict[str, dict[str, str | None]] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        found = dict(attrs)
        if found.get("id"):
            self.attrs_by_id[str(found["id"])] = found
            if found.get("data-rect"):
                self.rects[str(found["id"])] = tuple(
                    int(v) for v in str(found["data-rect"]).split(","))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _png_rows(path: Path, last_row: int) -> tuple[int, int, list[bytearray]]:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) up to ``last_row``."""
    blob = path.read_bytes()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, bytearray(), b""
    while position < len(blob):
        (length,) = struct.unpack(">I", blob[position:position + 4])
        kind = blob[position + 4:position + 8]
        body = blob[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color_type in (2, 6) and interlace == 0
    channels = 4 if color_type == 6 else 3
    raw = zlib.decompress(bytes(idat))
    stride = width * channels
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(min(height, last_row + 1)):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(line)
        previous = line
    return width, channels, rows


def _count_color(rows: list[bytearray], channels: int, rect: tuple[int, ...], color: str,
                 tolerance: int = 24) -> int:
    target = tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))
    x0, y0, w, h = rect
    count = 0
    for y in range(max(0, y0), min(len(rows), y0 + h)):
        row = rows[y]
        for x in range(max(0, x0), x0 + w):
            i = x * channels
            if (abs(row[i] - target[0]) <= tolerance and abs(row[i + 1] - target[1]) <= tolerance
                    and abs(row[i + 2] - target[2]) <= tolerance):
                count += 1
    return count


@pytest.mark.chromium
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_report_renders_in_headlesschromium(report: dict[str, Any], tmp_path: Path) -> None:
    page: Path = report["path"]
    dumped = chromium(page, tmp_path / "profile-dom", "--enable-logging=stderr", "--v=0",
                       "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    console = [line for line in dumped.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], "console messages:\n" + "\n".join(console)

    dom = _Dom()
    dom.feed(dumped.stdout)
    status = dom.attrs_by_id["tk-render-status"]
    assert status.get("data-state") == "rendered", dumped.stdout[-3000:]
    # The payload names are text, never elements: the page itself has no <img> at all.
    assert "img" not in dom.tags
    text = "".join(dom.text)
    assert EVIL_NAME in text
    assert SCRIPT_NAME in text
    for plot in ("tk-timeline", "tk-breakdown"):
        assert plot in dom.rects, f"{plot} was not drawn"
        x, y, width, height = dom.rects[plot]
        assert width > 300 and height > 200 and y + height <= WINDOW[1], dom.rects

    screenshot = tmp_path / "report.png"
    shot = chromium(page, tmp_path / "profile-shot", f"--screenshot={screenshot}")
    assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
    bottom = max(y + h for _, y, _, h in dom.rects.values())
    width, channels, rows = _png_rows(screenshot, bottom)
    assert width == WINDOW[0]
    timeline, breakdown = dom.rects["tk-timeline"], dom.rects["tk-breakdown"]
    # The Marlin GEMMs (weight_only) fill most of stream 7; steps are shaded by phase.
    assert _count_color(rows, channels, timeline, PATH_COLORS["weight_only"]) > 2_000
    assert _count_color(rows, channels, timeline, PHASE_COLORS["prefill"]) > 200
    assert _count_color(rows, channels, timeline, PHASE_COLORS["decode"]) > 200
    # The breakdown's stacked bars: weight_only dominates both phases.
    assert _count_color(rows, channels, breakdown, PATH_COLORS["weight_only"]) > 10_000


def test_cli_report_writes_html_and_perfetto(report: dict[str, Any]) -> None:
    from click.testing import CliRunner

    from tracekit.cli import cli

    store = str(report["folder"] / "store.db")
    html, trace = report["folder"] / "cli.html", report["folder"] / "cli.json"
    result = CliRunner().invoke(cli, ["report", "-1", "--store", store, "--html", str(html),
                                      "--perfetto", str(trace)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # files only: notices go to stderr
    assert "&lt;img src=x onerror=alert(1)&gt;" in html.read_text()
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] != "step"]
    assert len(kernels) == report["document"]["summary"]["kernel_count"]
    summary = CliRunner().invoke(cli, ["report", "latest", "--store", store])
    assert summary.exit_code == 0 and "weight_only" in summary.stdout
    document = json.loads(CliRunner().invoke(
        cli, ["report", str(report["run_id"]), "--store", store, "--json"]).stdout)
    assert document["run"]["id"] == report["run_id"]
    missing = CliRunner().invoke(cli, ["report", "-5", "--store", store])
    assert missing.exit_code == 2
    assert missing.stderr.startswith("tracekit: error: run -5: the store holds 1 run(s)")


def test_names_beyond_the_top_table_are_still_in_the_page(
        report: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import tracekit.report.html as html_module

    monkeypatch.setattr(html_module, "TOP_KERNELS", 1)
    monkeypatch.setattr(html_module, "MAX_KERNEL_ROWS", 4)
    with report["store"].connect() as connection:
        timeline = timeline_data(connection, report["run_id"])
    html = render_html(report["document"], timeline)
    folded = html[html.index('id="tk-more-kernels"'):]
    assert "3 more kernel names (1 smallest left out" in folded
    assert folded.count('<td class="kname">') == 3


# --- the report of real analyses, read in the browser -----------------------------------------

FP8_GEMM = ("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas")
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
               "c10::BFloat16>, at::detail::Array<char *, 3>>(int, T2, T3)")
NORM = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, int)"


def _analyzed_page(folder: Path, trace: Path, **options: Any) -> tuple[dict[str, Any], Path]:
    from tracekit.analysis import AnalysisOptions, analyze
    from tracekit.store.db import open_store

    store = open_store(str(folder / "store.db"), write=True)
    result = analyze(store, [trace], AnalysisOptions(**options))
    page = write_html(result.document, store, result.run_id, folder / "report.html")
    store.dispose()
    return result.document, page


def _fp8_scenario_page(folder: Path, *, declared: bool) -> tuple[dict[str, Any], Path]:
    """FP8 GEMMs on an H100 between two non-GEMM kernels, with or without a W8A8 FP8
    checkpoint (a confirmed verdict, or none to compare with)."""
    from tests.support import paths
    from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

    folder.mkdir(parents=True, exist_ok=True)
    kernels = [KernelSpec(FP8_GEMM, 30_000, count=4), KernelSpec(ELEMENTWISE, 2_000),
               KernelSpec(NORM, 1_000)]
    scenario = Scenario(ranks=[RankSpec(pid=11, steps=[
        StepSpec("execute_context_1(512)_generation_0(0)", kernels),
        StepSpec("execute_context_0(0)_generation_4(4)", kernels, repeat=2)])])
    trace = write_scenario(scenario, folder / "fp8.sqlite")
    options = {"model": paths.CHECKPOINTS / "ct-w8a8-fp8.config.json"} if declared else {}
    return _analyzed_page(folder, trace, **options)


def test_a_verdict_with_nothing_to_compare_is_neutral_not_green(tmp_path: Path) -> None:
    from tracekit.report.html import verdict_class

    neutral, page = _fp8_scenario_page(tmp_path / "plain", declared=False)
    assert verdict_class(neutral) == "neutral"
    assert 'class="verdict neutral"' in page.read_text(encoding="utf-8")
    confirmed, page = _fp8_scenario_page(tmp_path / "fp8", declared=True)
    assert any(row["outcome"] == "as_declared" for row in confirmed["layers"])
    assert verdict_class(confirmed) == "ok"
    assert 'class="verdict ok"' in page.read_text(encoding="utf-8")


def test_non_gemm_rows_do_not_repeat_the_not_matrix_math_sentence(tmp_path: Path) -> None:
    _, page = _fp8_scenario_page(tmp_path, declared=False)
    html = page.read_text(encoding="utf-8")
    kernels = html[html.index('id="tk-kernels"'):]
    kernels = kernels[:kernels.index("</table>")]
    assert "path applies to GEMM/attention only" not in kernels
    assert kernels.count("not matrix math") == 2  # the two non-GEMM rows, briefly
    assert html.count('id="tk-kernels-note"') == 1


def _overlap(a: list[int], b: list[int]) -> bool:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


@pytest.mark.chromium
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_charts_parts_do_not_overlap_and_the_tables_are_there(tmp_path: Path) -> None:
    """The roofline of a run with known work: the toolbar, the legend, the plot area and the
    axis titles of every chart each have room of their own; devices and launching threads are
    tables of the page."""
    from tests.support import paths
    from tests.support.roofline_scenario import write_fallback_trace

    trace = write_fallback_trace(tmp_path / "fallback.json")
    _, page = _analyzed_page(tmp_path, trace, model=paths.CHECKPOINTS / "ct-nvfp4-w4a4.config.json")
    dumped = chromium(page, tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _Dom()
    dom.feed(dumped.stdout)
    assert dom.attrs_by_id["tk-render-status"].get("data-state") == "rendered"
    charts = ["tk-timeline", "tk-breakdown", "tk-roofline-prefill", "tk-roofline-decode"]
    for chart in charts:
        parts = json.loads(dom.attrs_by_id[chart]["data-parts"] or "{}")
        assert {"modebar", "legend", "plot"} <= set(parts), (chart, parts)
        named = {name: box for name, box in parts.items() if box[2] and box[3]}
        for first, second in (("legend", "modebar"), ("legend", "plot"), ("modebar", "plot"),
                              ("legend", "xtitle")):
            if first in named and second in named:
                assert not _overlap(named[first], named[second]), (chart, first, second, parts)
        x, y, width, height = dom.rects[chart]
        lx, ly, lw, lh = named["legend"]
        assert x <= lx and lx + lw <= x + width and y <= ly and ly + lh <= y + height, chart
    for table in ("tk-devices", "tk-launchers", "tk-layers", "tk-kernels"):
        assert table in dom.attrs_by_id, table
    text = " ".join("".join(dom.text).split())
    assert "NVIDIA GeForce RTX 5090" in text and "tid 101" in text


@pytest.mark.chromium
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_a_run_with_no_known_work_draws_no_empty_roofline(report: dict[str, Any],
                                                          tmp_path: Path) -> None:
    """An nsys trace tells no GEMM's work: one sentence says so, and no roofline chart of roofs
    without points is drawn."""
    html = report["html"]
    assert 'id="tk-roofline-prefill"' not in html and 'id="tk-roofline-decode"' not in html
    assert "the work of no GEMM is known, so no roofline is drawn" in html
    dumped = chromium(report["path"], tmp_path / "profile", "--dump-dom")
    dom = _Dom()
    dom.feed(dumped.stdout)
    assert dom.attrs_by_id["tk-render-status"].get("data-state") == "rendered"
    assert not [key for key in dom.rects if key.startswith("tk-roofline")]
    assert "tk-devices" in dom.attrs_by_id and "tk-launchers" in dom.attrs_by_id
