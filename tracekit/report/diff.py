"""Compare two analyzed runs: how GEMM time by datatype path moved per phase, which kernels
appear on one side only, which findings differ.

The canonical use is one model label, two checkpoints, one GPU: the "NVFP4" download that
runs FP4×FP4 kernels against the one that runs Marlin (W4A16). The comparison works on two
analysis documents (``build_document``), so it costs nothing per kernel record.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from rich.table import Table
from rich.text import Text

from tracekit.report.names import distinct_cuts
from tracekit.report.palette import path_rank
from tracekit.report.terminal import (
    PATH_STYLE,
    SEVERITY_STYLE,
    PipeSafeConsole,
    format_ns,
    format_rate,
)
from tracekit.vocabulary import PHASES

DIFF_VERSION = 1
#: kernels listed per side in "only in A / only in B"
ONLY_LIMIT = 25


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _brief(document: dict[str, Any]) -> dict[str, Any]:
    run = document["run"]
    return {"id": run["id"], "source": run["source"], "label": run.get("label"),
            "model_label": run.get("model_label"), "gpu": run.get("gpu"),
            "engine": run.get("engine"), "format": run.get("format"),
            "kernel_count": document["summary"]["kernel_count"],
            "gpu_time_ns": document["summary"]["gpu_time_ns"],
            "gemm_time_ns": document["summary"]["gemm_time_ns"],
            "verdict": list(document.get("verdict") or [])}


def path_moves(a_by_path: dict[str, int], a_total: int, b_by_path: dict[str, int],
               b_total: int) -> dict[str, dict[str, Any]]:
    """Per path: time and share of GEMM time on each side, and the share's change."""
    moves = {}
    for path in sorted(set(a_by_path) | set(b_by_path), key=path_rank):
        a_ns, b_ns = int(a_by_path.get(path, 0)), int(b_by_path.get(path, 0))
        a_share, b_share = _share(a_ns, a_total), _share(b_ns, b_total)
        moves[path] = {"a_ns": a_ns, "b_ns": b_ns, "a_share": a_share, "b_share": b_share,
                       "share_change": b_share - a_share}
    return moves


def _phase_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    result = {}
    for phase in PHASES:
        pa, pb = a["phases"].get(phase), b["phases"].get(phase)
        if not pa or not pb or not (pa["gpu_ns"] or pb["gpu_ns"] or pa["steps"] or pb["steps"]):
            continue
        result[phase] = {
            "a": {key: pa[key] for key in ("steps", "gpu_ns", "gemm_ns")},
            "b": {key: pb[key] for key in ("steps", "gpu_ns", "gemm_ns")},
            "paths": path_moves(pa["gemm_ns_by_path"], pa["gemm_ns"], pb["gemm_ns_by_path"],
                                pb["gemm_ns"]),
        }
    return result


def _kernel_brief(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: entry.get(key) for key in ("name", "count", "total_ns", "op", "path",
                                            "library", "rule", "evidence")}


def _kernel_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    a_names = {entry["name"]: entry for entry in a["kernels"]}
    b_names = {entry["name"]: entry for entry in b["kernels"]}
    only_a = [a_names[name] for name in a_names if name not in b_names]
    only_b = [b_names[name] for name in b_names if name not in a_names]
    reclassified = [
        {"name": name, "a_path": a_names[name]["path"], "b_path": b_names[name]["path"],
         "a_op": a_names[name]["op"], "b_op": b_names[name]["op"]}
        for name in a_names if name in b_names and (
            a_names[name]["path"], a_names[name]["op"]) != (b_names[name]["path"],
                                                           b_names[name]["op"])]

    def top(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [_kernel_brief(e) for e in sorted(entries, key=lambda e: -e["total_ns"])][
            :ONLY_LIMIT]

    return {
        "common": sum(1 for name in a_names if name in b_names),
        "only_a_count": len(only_a), "only_b_count": len(only_b),
        "only_a_ns": sum(e["total_ns"] for e in only_a),
        "only_b_ns": sum(e["total_ns"] for e in only_b),
        "only_a": top(only_a), "only_b": top(only_b),
        "reclassified": reclassified,
    }


def _finding_key(finding: dict[str, Any]) -> tuple[str, str | None]:
    return finding["rule"], finding.get("phase")


def _finding_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    a_keys = {_finding_key(f): f for f in a["findings"]}
    b_keys = {_finding_key(f): f for f in b["findings"]}

    def brief(finding: dict[str, Any]) -> dict[str, Any]:
        return {key: finding.get(key) for key in ("rule", "severity", "phase", "message",
                                                  "share")}

    return {
        "only_a": [brief(f) for key, f in a_keys.items() if key not in b_keys],
        "only_b": [brief(f) for key, f in b_keys.items() if key not in a_keys],
        "changed": [{"a": brief(a_keys[key]), "b": brief(b_keys[key])}
                    for key in a_keys if key in b_keys and (
                        a_keys[key]["severity"], a_keys[key]["message"]) != (
                        b_keys[key]["severity"], b_keys[key]["message"])],
        "same": sum(1 for key in a_keys if key in b_keys and (
            a_keys[key]["severity"], a_keys[key]["message"]) == (
            b_keys[key]["severity"], b_keys[key]["message"])),
    }


def _dominant(paths: dict[str, dict[str, Any]], side: str) -> tuple[str, float] | None:
    best = max(paths.items(), key=lambda kv: kv[1][f"{side}_share"], default=None)
    if best is None or not best[1][f"{side}_share"]:
        return None
    return best[0], best[1][f"{side}_share"]


def headline(diff: dict[str, Any]) -> list[str]:
    """One sentence per phase whose main GEMM path changed, else one saying nothing did."""
    a_id, b_id = diff["a"]["id"], diff["b"]["id"]
    sentences = []
    for phase, data in diff["phases"].items():
        a_main, b_main = _dominant(data["paths"], "a"), _dominant(data["paths"], "b")
        if a_main is None or b_main is None:
            continue
        gemm = (f"GEMM time {format_ns(data['a']['gemm_ns'])} → "
                f"{format_ns(data['b']['gemm_ns'])}")
        if a_main[0] != b_main[0]:
            sentences.append(
                f"{phase}: GEMMs ran mostly {a_main[0]} ({100 * a_main[1]:.0f}%) in run {a_id} "
                f"and mostly {b_main[0]} ({100 * b_main[1]:.0f}%) in run {b_id}; {gemm}.")
        else:
            sentences.append(f"{phase}: GEMMs ran mostly {a_main[0]} in both runs "
                             f"({100 * a_main[1]:.0f}% → {100 * b_main[1]:.0f}%); {gemm}.")
    if not sentences:
        sentences.append("Neither run has GEMM time attributed to a phase on both sides.")
    return sentences


def comparability_warnings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What makes the two runs less comparable than the canonical use."""
    warnings = []
    for key, what in (("gpu", "GPUs"), ("model_label", "model labels"), ("engine", "engines")):
        if a[key] and b[key] and a[key] != b[key]:
            warnings.append(f"different {what}: {a[key]!r} vs {b[key]!r}")
    if a["id"] == b["id"]:
        warnings.append("both sides are the same run")
    return warnings


def diff_documents(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The comparison of run A with run B (the ``--json`` of ``tracekit diff``)."""
    result: dict[str, Any] = {
        "tracekit_diff": DIFF_VERSION,
        "a": _brief(a),
        "b": _brief(b),
        "gemm_paths": path_moves(a["summary"]["gemm_ns_by_path"], a["summary"]["gemm_time_ns"],
                                 b["summary"]["gemm_ns_by_path"], b["summary"]["gemm_time_ns"]),
        "phases": _phase_diff(a, b),
        "kernels": _kernel_diff(a, b),
        "findings": _finding_diff(a, b),
        "roofline": {"a": a.get("roofline"), "b": b.get("roofline")},
    }
    result["warnings"] = comparability_warnings(result["a"], result["b"])
    result["headline"] = headline(result)
    return result


# --- terminal ------------------------------------------------------------------------------

def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _change(value: float) -> Text:
    if abs(value) < 0.0005:
        return Text("±0", style="dim")
    return Text(f"{100 * value:+.1f} pt", style="green" if value > 0 else "red")


def render_diff(diff: dict[str, Any], stream: TextIO | None = None) -> None:
    """Print the comparison: headline, per-phase path table, one-sided kernels, findings."""
    out = stream or sys.stdout
    console = PipeSafeConsole(file=out, highlight=False, soft_wrap=False,
                      width=None if out.isatty() else 140)
    a, b = diff["a"], diff["b"]
    for sentence in diff["headline"]:
        console.print(Text(sentence, style="bold"))
    for warning in diff["warnings"]:
        console.print(Text(f"note: {warning}", style="yellow"))
    console.print()
    for side, run in (("A", a), ("B", b)):
        console.print(Text.assemble((f"{side} ", "bold"), (f"run {run['id']} ", "bold"),
                                    (run["label"] or str(run["source"]), ""),
                                    (f"  {run['gpu'] or ''}  {run['model_label'] or ''}", "dim")))
        for sentence in run["verdict"]:
            console.print(Text(f"  {sentence}", style="dim"))
    table = Table(title="GEMM time by datatype path (share of the phase's GEMM time)",
                  title_justify="left", show_edge=False)
    for column, justify in (("phase", "left"), ("path", "left"), ("A time", "right"),
                            ("A share", "right"), ("B time", "right"), ("B share", "right"),
                            ("change", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    rows = [("all", diff["gemm_paths"])] + [(phase, data["paths"])
                                            for phase, data in diff["phases"].items()]
    for phase, paths in rows:
        for index, (path, move) in enumerate(paths.items()):
            table.add_row(phase if index == 0 else "", Text(path, style=PATH_STYLE.get(path, "")),
                          format_ns(move["a_ns"]), _pct(move["a_share"]),
                          format_ns(move["b_ns"]), _pct(move["b_share"]),
                          _change(move["share_change"]))
    console.print(table)
    kernels = diff["kernels"]
    console.print(f"kernel names: {kernels['common']:,} on both sides, "
                  f"{kernels['only_a_count']:,} only in A ({format_ns(kernels['only_a_ns'])}), "
                  f"{kernels['only_b_count']:,} only in B ({format_ns(kernels['only_b_ns'])})")
    for side in ("a", "b"):
        entries = kernels[f"only_{side}"][:10]
        if not entries:
            continue
        table = Table(title=f"only in {side.upper()} (top {len(entries)} by GPU time)",
                      title_justify="left", show_edge=False)
        for column in ("time", "count", "op", "path", "name"):
            table.add_column(column, justify="right" if column in ("time", "count") else "left")
        names = distinct_cuts([entry["name"] for entry in entries], 90)
        for entry, name in zip(entries, names, strict=True):
            table.add_row(format_ns(entry["total_ns"]), f"{entry['count']:,}", entry["op"],
                          Text(entry["path"], style=PATH_STYLE.get(entry["path"], "")),
                          Text(name))
        console.print(table)
    _roofline_diff(console, diff)
    findings = diff["findings"]
    if findings["only_a"] or findings["only_b"] or findings["changed"]:
        console.print(Text("findings that differ", style="bold"))
        for side in ("a", "b"):
            for finding in findings[f"only_{side}"]:
                console.print(Text.assemble(
                    (f"  only {side.upper()}  ", "dim"),
                    (f"{finding['severity']:<8}", SEVERITY_STYLE.get(finding["severity"], "")),
                    (f"{finding['rule']}: ", "dim"), (finding["message"], "")))
        for change in findings["changed"]:
            console.print(Text.assemble(
                ("  changed ", "dim"), (f"{change['a']['rule']}: ", "dim"),
                (f"{change['a']['severity']} → {change['b']['severity']}: ", ""),
                (change["b"]["message"], "")))
    else:
        console.print(f"findings: the same on both sides ({findings['same']})")


def _roofline_cell(row: dict[str, Any] | None) -> tuple[str, str]:
    if row is None:
        return "–", "–"
    if not row["covered_ns"]:
        return "–", "work unknown"
    rate = format_rate(row["flops"] / row["covered_ns"] * 1e9, "FLOP")
    bound = row["bound"] or "no roof"
    if row["roof_share"] is not None:
        bound += f" {100 * row['roof_share']:.0f}%"
    return rate, bound


def _roofline_diff(console: PipeSafeConsole, diff: dict[str, Any]) -> None:
    """Both runs' roofline points per phase and path: achieved throughput, bound, share."""
    sides = diff.get("roofline") or {}
    a, b = sides.get("a"), sides.get("b")
    if not (a and a["phases"]) and not (b and b["phases"]):
        return
    names = [f"{side} {(doc.get('gpu') or {}).get('name', 'GPU unknown')}" if doc else side
             for side, doc in (("A", a), ("B", b))]
    table = Table(title=f"roofline, A vs B ({names[0]}; {names[1]})", title_justify="left",
                  show_edge=False)
    for column, justify in (("phase", "left"), ("path", "left"), ("A achieved", "right"),
                            ("A bound, of roof", "left"), ("B achieved", "right"),
                            ("B bound, of roof", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for phase in PHASES:
        rows_a = {r["path"]: r for r in (a or {}).get("phases", {}).get(phase, [])}
        rows_b = {r["path"]: r for r in (b or {}).get("phases", {}).get(phase, [])}
        for index, path in enumerate(sorted(set(rows_a) | set(rows_b), key=path_rank)):
            table.add_row(phase if index == 0 else "",
                          Text(path, style=PATH_STYLE.get(path, "")),
                          *_roofline_cell(rows_a.get(path)), *_roofline_cell(rows_b.get(path)))
    console.print(table)
    for side, doc in (("A", a), ("B", b)):
        for item in (doc or {}).get("fallback") or []:
            console.print(Text(f"  {side} (estimate): {item['sentence']}", style="dim"))
