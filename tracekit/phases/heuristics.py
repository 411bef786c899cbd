"""Phases without markers: kernel-family signals, spread along the GPU timeline. Heuristic.

Used only when a run has no step marker. Some kernel families are chosen by the number of
query tokens in a step (``rules/_phase_heuristics.toml``: llama.cpp ``mul_mat_vec_q`` vs
``mul_mat_q``, ``flash_attn_ext_vec`` vs ``flash_attn_ext_f16``, FlashInfer ``BatchDecode``
vs ``BatchPrefill``, …). Names are matched once per unique name; a signal whose contrasting
family is absent from the run is ignored (``requires``), because that is exactly where names
lie (vLLM's FlashInfer decode runs ``BatchPrefill`` kernels).

Every other kernel takes the phase of the signal kernels around it on the same device, in GPU
order: between two signals of one phase, that phase; between a signal of one phase and one of
another, a kernel replayed by the same CUDA graph launch as one of them takes its phase (one
replay is one forward), and otherwise the boundary is put at the largest idle gap on the GPU
between them (forward passes are separated by host work: sampling, scheduling). Maximal runs
of one phase become ``steps`` with ``source = 'heuristic'``. All of it is window functions in SQL.

CUDA-graph membership only keeps one replay together; it is never a phase signal by itself:
vLLM replays piecewise graphs for prefill and mixed steps too (``FULL_AND_PIECEWISE``,
``CUDAGraphMode`` in vllm/config/compilation.py), and SGLang/TRT-LLM capture prefill graphs in
recent versions (docs/engines.md#phases-without-markers). Token counts are unknown to a
heuristic, so its steps carry none.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from sqlalchemy import Connection, text

from tracekit.datafiles import load_table
from tracekit.errors import RuleFileError
from tracekit.phases.report import PhaseReport

HEURISTICS_FILE = "_phase_heuristics.toml"
_TEMP_TABLES = ("tk_name_signal", "tk_op_signal", "tk_h", "tk_hseg", "tk_hlab", "tk_hrun",
                "tk_hgroup", "tk_hstep", "tk_hkernel")


@dataclass(frozen=True)
class Signal:
    """A kernel family that hints at a phase."""

    id: str
    phase: str
    pattern: re.Pattern[str]
    requires: tuple[str, ...] = ()
    lies: str = ""
    cite: str = ""
    examples: tuple[str, ...] = ()
    counter_examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class GemmTokens:
    """Token-count (M) bounds for GEMM ops with recorded input shapes."""

    decode_max: int = 8
    prefill_min: int = 1024
    inputs: tuple[tuple[str, int], ...] = ()  # (op name, index of the activation input)

    def phase(self, op: str, input_dims: str) -> str | None:
        """``decode``/``prefill`` for a clearly sized GEMM, else None (unparseable, middle)."""
        index = dict(self.inputs).get(op)
        if index is None:
            return None
        try:
            shape = json.loads(input_dims)[index]
        except (ValueError, TypeError, IndexError, KeyError):
            return None
        if not isinstance(shape, list) or len(shape) < 2:
            return None
        tokens = 1
        for size in shape[:-1]:
            if not isinstance(size, int):
                return None
            tokens *= size
        if tokens <= self.decode_max:
            return "decode"
        if tokens >= self.prefill_min:
            return "prefill"
        return None


@dataclass
class SignalSet:
    """Signals in file order; the first that matches a name wins."""

    signals: list[Signal] = field(default_factory=list)
    gemm_tokens: GemmTokens = field(default_factory=GemmTokens)

    def match(self, name: str) -> Signal | None:
        """The signal a kernel name carries, if any."""
        for signal in self.signals:
            if signal.pattern.search(name):
                return signal
        return None

    def believed(self, names: dict[int, str]) -> dict[int, Signal]:
        """name id → signal, keeping only signals whose required contrasts occur in the run."""
        matched = {name_id: signal for name_id, name in names.items()
                   if (signal := self.match(name)) is not None}
        present = {signal.id for signal in matched.values()}
        return {name_id: signal for name_id, signal in matched.items()
                if all(required in present for required in signal.requires)}


@cache
def load_signals() -> SignalSet:
    """The built-in signals from ``tracekit.rules/_phase_heuristics.toml``."""
    raw = load_table(HEURISTICS_FILE)
    signals = []
    for entry in raw.get("signal", []):
        if entry.get("phase") not in ("prefill", "decode"):
            raise RuleFileError(f"{HEURISTICS_FILE}: signal {entry.get('id')!r}: bad phase")
        try:
            pattern = re.compile(entry["pattern"])
        except re.error as exc:
            raise RuleFileError(f"{HEURISTICS_FILE}: signal {entry['id']!r}: {exc}") from exc
        signals.append(Signal(
            id=entry["id"], phase=entry["phase"], pattern=pattern,
            requires=tuple(entry.get("requires", ())), lies=entry.get("lies", ""),
            cite=entry.get("cite", ""), examples=tuple(entry.get("examples", ())),
            counter_examples=tuple(entry.get("counter_examples", ()))))
    tokens = raw.get("gemm_tokens", {})
    gemm_tokens = GemmTokens(
        decode_max=int(tokens.get("decode_max", 8)),
        prefill_min=int(tokens.get("prefill_min", 1024)),
        inputs=tuple((op["name"], int(op["input"])) for op in tokens.get("op", [])))
    known = {signal.id for signal in signals}
    for signal in signals:
        missing = set(signal.requires) - known
        if missing:
            raise RuleFileError(f"{HEURISTICS_FILE}: signal {signal.id!r} requires unknown "
                                f"signals {sorted(missing)}")
    return SignalSet(signals, gemm_tokens)


def _drop(connection: Connection) -> None:
    for name in _TEMP_TABLES:
        connection.execute(text(f"DROP TABLE IF EXISTS {name}"))


def attribute(connection: Connection, run_id: int, ranges: int = 0,
              signals: SignalSet | None = None) -> PhaseReport:
    """Heuristic steps and kernel phases for a run without markers."""

    signals = signals or load_signals()
    names: dict[int, str] = dict(connection.execute(text(
        "SELECT id, name FROM kernel_names WHERE run_id = :run_id"), {"run_id": run_id}).all())
    believed = signals.believed(names)
    shaped = _shape_signals(connection, run_id, signals.gemm_tokens)
    no_markers = (f"no step markers ({ranges:,} range{'s' if ranges != 1 else ''}, none an "
                  "engine step marker)"
                  if ranges else "no step markers (no ranges in the trace)")
    if not believed and not shaped:
        return PhaseReport(method="none", message=f"{no_markers} and no kernel family that "
                           "tells prefill from decode: nothing attributed to a phase")
    counts: dict[str, int] = {}
    for signal in believed.values():
        counts[signal.id] = counts.get(signal.id, 0) + 1
    if shaped:
        counts["gemm-tokens"] = len(shaped)
    _drop(connection)
    _load_shape_signals(connection, run_id, shaped)
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_name_signal (name_id BIGINT PRIMARY KEY, phase VARCHAR(16))"))
    if believed:
        connection.execute(text("INSERT INTO tk_name_signal VALUES (:name_id, :phase)"),
                           [{"name_id": name_id, "phase": signal.phase}
                            for name_id, signal in believed.items()])
    _label(connection, run_id)
    kernels = _make_steps(connection, run_id)
    steps: dict[str, int] = dict(connection.execute(text(
        "SELECT phase, COUNT(*) FROM steps WHERE run_id = :run_id GROUP BY phase"),
        {"run_id": run_id}).all())
    _drop(connection)
    used = ", ".join(sorted(counts))
    return PhaseReport(method="heuristic",
                       message=f"{no_markers}; phases inferred from kernel evidence ({used}) "
                       "— heuristic, not measured",
                       steps={str(k): int(v) for k, v in steps.items()},
                       kernels_heuristic=kernels, signals=counts)


def _shape_signals(connection: Connection, run_id: int, tokens: GemmTokens
                   ) -> dict[tuple[str, str], str]:
    """(op name, input dims) → phase, for GEMM ops whose shapes say decode or prefill.

    Parsed once per distinct shape, not per op record.
    """
    ops = [name for name, _ in tokens.inputs]
    if not ops:
        return {}
    params: dict[str, Any] = {"run_id": run_id}
    params.update({f"op{index}": name for index, name in enumerate(ops)})
    placeholders = ", ".join(f":op{index}" for index in range(len(ops)))
    rows = connection.execute(text(
        f"SELECT DISTINCT name, input_dims FROM cpu_ops WHERE run_id = :run_id "
        f"AND input_dims IS NOT NULL AND name IN ({placeholders})"), params).all()
    result = {}
    for name, dims in rows:
        phase = tokens.phase(str(name), str(dims))
        if phase is not None:
            result[(str(name), str(dims))] = phase
    return result


def _load_shape_signals(connection: Connection, run_id: int,
                        shaped: dict[tuple[str, str], str]) -> None:
    """``tk_op_signal``: CPU op id → phase, for ops of one clear size (kernels point at them).

    The run's ops are the outer loop (``CROSS JOIN``), each looked up in the few distinct
    shapes by their key.
    """
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_op_signal (op_id BIGINT PRIMARY KEY, phase VARCHAR(16))"))
    if not shaped:
        return
    connection.execute(text("DROP TABLE IF EXISTS tk_shape"))
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_shape (name TEXT, input_dims TEXT, phase VARCHAR(16), "
        "PRIMARY KEY (name, input_dims))"))
    connection.execute(text("INSERT INTO tk_shape VALUES (:name, :dims, :phase)"),
                       [{"name": name, "dims": dims, "phase": phase}
                        for (name, dims), phase in shaped.items()])
    connection.execute(text("""
        INSERT INTO tk_op_signal
        SELECT o.id, s.phase FROM cpu_ops o CROSS JOIN tk_shape s
        WHERE o.run_id = :run_id AND s.name = o.name AND s.input_dims = o.input_dims"""),
        {"run_id": run_id})
    connection.execute(text("DROP TABLE tk_shape"))


def _label(connection: Connection, run_id: int) -> None:
    order = ("PARTITION BY COALESCE(k.global_pid, -1), COALESCE(k.device, -1) "
             "ORDER BY k.start_ns, k.id")
    connection.execute(text(f"""
        CREATE TEMPORARY TABLE tk_h AS
        SELECT k.id, COALESCE(k.global_pid, -1) AS gp, COALESCE(k.device, -1) AS dev,
               k.start_ns, k.end_ns, k.launch_start_ns, k.launch_end_ns, k.global_tid,
               k.global_pid, COALESCE(s.phase, e.phase) AS sig,
               CASE WHEN k.graph_node_id IS NOT NULL THEN k.correlation_id END AS replay,
               SUM(CASE WHEN COALESCE(s.phase, e.phase) IS NULL THEN 0 ELSE 1 END) OVER (
                   {order} ROWS UNBOUNDED PRECEDING) AS seg,
               k.start_ns - LAG(k.end_ns) OVER ({order}) AS gap
        FROM kernels k LEFT JOIN tk_name_signal s ON s.name_id = k.name_id
        LEFT JOIN tk_op_signal e ON e.op_id = k.cpu_op_id
        WHERE k.run_id = :run_id"""), {"run_id": run_id})
    connection.execute(text("CREATE INDEX tk_h_seg ON tk_h (gp, dev, seg)"))
    # Per segment (a signal kernel and the kernels after it up to the next signal): its phase,
    # the gap before its head, the largest gap among its other kernels and where that is.
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_hseg AS
        SELECT gp, dev, seg, MAX(sig) AS phase,
               MAX(CASE WHEN sig IS NOT NULL THEN gap END) AS head_gap,
               MAX(CASE WHEN sig IS NULL THEN gap END) AS max_gap,
               MAX(CASE WHEN sig IS NOT NULL THEN replay END) AS head_replay,
               CAST(NULL AS BIGINT) AS split_at
        FROM tk_h GROUP BY gp, dev, seg"""))
    connection.execute(text("CREATE INDEX tk_hseg_key ON tk_hseg (gp, dev, seg)"))
    connection.execute(text("""
        UPDATE tk_hseg SET split_at = (
            SELECT MIN(h.start_ns) FROM tk_h h
            WHERE h.gp = tk_hseg.gp AND h.dev = tk_hseg.dev AND h.seg = tk_hseg.seg
              AND h.sig IS NULL AND h.gap = tk_hseg.max_gap)
        WHERE max_gap IS NOT NULL"""))
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_hlab AS
        SELECT h.*, CASE
                 WHEN h.sig IS NOT NULL THEN h.sig
                 WHEN cur.phase IS NULL THEN nxt.phase
                 WHEN nxt.phase IS NULL OR nxt.phase = cur.phase THEN cur.phase
                 WHEN h.replay = nxt.head_replay THEN nxt.phase
                 WHEN h.replay = cur.head_replay THEN cur.phase
                 WHEN nxt.head_gap >= COALESCE(cur.max_gap, -1) THEN cur.phase
                 WHEN h.start_ns >= cur.split_at THEN nxt.phase
                 ELSE cur.phase END AS label
        FROM tk_h h
        JOIN tk_hseg cur ON cur.gp = h.gp AND cur.dev = h.dev AND cur.seg = h.seg
        LEFT JOIN tk_hseg nxt ON nxt.gp = h.gp AND nxt.dev = h.dev AND nxt.seg = h.seg + 1"""))


def _make_steps(connection: Connection, run_id: int) -> int:
    """Runs of one label per device become steps; kernels point at them.

    A new CUDA-graph replay starts a new step (one replay is one forward), so consecutive
    decode tokens stay separate steps; eager kernels join the step before them.
    """
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_hrun AS
        SELECT id, gp, dev, label, start_ns, end_ns, launch_start_ns, launch_end_ns,
               global_tid, global_pid,
               SUM(changed) OVER (PARTITION BY gp, dev ORDER BY start_ns, id
                                  ROWS UNBOUNDED PRECEDING) AS run
        FROM (SELECT l.*,
                     CASE WHEN LAG(label) OVER w IS DISTINCT FROM label THEN 1
                          WHEN replay <> LAG(replay) OVER w THEN 1
                          ELSE 0 END AS changed
              FROM tk_hlab l
              WINDOW w AS (PARTITION BY gp, dev ORDER BY start_ns, id)) AS c"""))
    connection.execute(text("CREATE INDEX tk_hrun_id ON tk_hrun (id)"))
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_hgroup AS
        SELECT gp, dev, run, MIN(label) AS label,
               COALESCE(MIN(launch_start_ns), MIN(start_ns)) AS cpu_start,
               COALESCE(MAX(launch_end_ns), MAX(end_ns)) AS cpu_end,
               MIN(start_ns) AS gpu_start, MAX(end_ns) AS gpu_end,
               MIN(global_tid) AS global_tid, MIN(global_pid) AS global_pid,
               ROW_NUMBER() OVER (ORDER BY gp, dev, run) AS rn
        FROM tk_hrun WHERE label IS NOT NULL GROUP BY gp, dev, run"""))
    connection.execute(text("CREATE INDEX tk_hgroup_key ON tk_hgroup (gp, dev, run)"))
    params: dict[str, Any] = {"run_id": run_id}
    connection.execute(text("""
        INSERT INTO steps (run_id, engine, phase, source, text, start_ns, end_ns, gpu_start_ns,
                           gpu_end_ns, global_tid, global_pid)
        SELECT :run_id, NULL, label, 'heuristic', 'heuristic ' || label, cpu_start, cpu_end,
               gpu_start, gpu_end, global_tid, global_pid
        FROM tk_hgroup ORDER BY rn"""), params)
    # The steps just inserted, in insertion order, are the groups in rn order.
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_hstep AS
        SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM steps
        WHERE run_id = :run_id AND source = 'heuristic'"""), params)
    connection.execute(text("CREATE INDEX tk_hstep_rn ON tk_hstep (rn)"))
    # Each labelled kernel's step, keyed by kernel id: the UPDATE then joins one row per
    # kernel by primary key instead of running a three-table subquery for each.
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_hkernel (id BIGINT PRIMARY KEY, step_id BIGINT,
                                           phase VARCHAR(16))"""))
    connection.execute(text("""
        INSERT INTO tk_hkernel
        SELECT r.id, t.id, g.label FROM tk_hrun r
        JOIN tk_hgroup g ON g.gp = r.gp AND g.dev = r.dev AND g.run = r.run
        JOIN tk_hstep t ON t.rn = g.rn"""))
    result = connection.execute(text("""
        UPDATE kernels SET step_id = x.step_id, phase = x.phase FROM tk_hkernel AS x
        WHERE x.id = kernels.id AND kernels.run_id = :run_id"""), params)
    return int(result.rowcount or 0)
