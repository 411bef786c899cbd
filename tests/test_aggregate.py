"""kernel_groups equal a plain GROUP BY over the kernel records, NULL keys included."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import text

from tests.conftest import BF16_GEMM
from tracekit import aggregate
from tracekit.aggregate import refresh_kernel_groups
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.ingest.pipeline import ingest


def test_groups_match_a_plain_group_by(store, make_trace, simple_scenario):
    run_id = ingest(store, [make_trace(simple_scenario)]).run_id
    with store.begin() as connection:
        # Give the run some NULL keys and phases, as cut traces and attribution leave them.
        connection.execute(text(
            "UPDATE kernels SET global_tid = NULL, device = NULL WHERE id % 3 = 0"))
        connection.execute(text("UPDATE kernels SET phase = 'decode' WHERE id % 2 = 0"))
        groups = refresh_kernel_groups(connection, run_id)
        expected = set(connection.execute(text(
            "SELECT name_id, device, global_tid, global_pid, COALESCE(phase, 'unattributed'), "
            "COUNT(*), SUM(end_ns - start_ns), MIN(start_ns), MAX(end_ns) FROM kernels "
            "WHERE run_id = :r GROUP BY name_id, device, global_tid, global_pid, phase"),
            {"r": run_id}).all())
        stored = set(connection.execute(text(
            "SELECT name_id, device, global_tid, global_pid, phase, count, total_ns, "
            "first_start_ns, last_end_ns FROM kernel_groups WHERE run_id = :r"),
            {"r": run_id}).all())
    assert groups == len(expected) > 3
    assert stored == expected


def test_refresh_replaces_instead_of_appending(store, make_trace, simple_scenario):
    run_id = ingest(store, [make_trace(simple_scenario)]).run_id
    with store.begin() as connection:
        first = refresh_kernel_groups(connection, run_id)
        second = refresh_kernel_groups(connection, run_id)
        count = connection.execute(text(
            "SELECT COUNT(*) FROM kernel_groups WHERE run_id = :r"), {"r": run_id}).scalar()
    assert first == second == count


def _groups_and_truth(store, run_id):
    with store.connect() as connection:
        stored = set(connection.execute(text(
            "SELECT name_id, device, global_tid, global_pid, phase, count, total_ns, "
            "first_start_ns, last_end_ns FROM kernel_groups WHERE run_id = :r"),
            {"r": run_id}).all())
        expected = set(connection.execute(text(
            "SELECT name_id, device, global_tid, global_pid, COALESCE(phase, 'unattributed'), "
            "COUNT(*), SUM(end_ns - start_ns), MIN(start_ns), MAX(end_ns) FROM kernels "
            "WHERE run_id = :r GROUP BY name_id, device, global_tid, global_pid, phase"),
            {"r": run_id}).all())
    return stored, expected


def _count_calls(monkeypatch, name):
    calls = []
    original = getattr(aggregate, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(aggregate, name, counted)
    return calls


def test_groups_summed_beside_the_phases_stage_are_the_plain_group_by(
        store, make_trace, simple_scenario, monkeypatch):
    """After an ingest that attributed steps, the sums come from the second connection."""
    refreshes = _count_calls(monkeypatch, "refresh_kernel_groups")
    run_id = analyze(store, [make_trace(simple_scenario)], AnalysisOptions()).run_id
    stored, expected = _groups_and_truth(store, run_id)
    assert refreshes == []
    assert stored == expected
    assert {row[4] for row in stored} == {"prefill", "decode", "unattributed"}


def test_groups_are_summed_again_when_phases_rewrote_kernels(
        store, make_trace, simple_scenario, monkeypatch):
    """A cut trace: kernels without a launch get their step by GPU time after the ingest
    (here: every other eager GEMM, inside its step's GPU span), so the sums taken beside the
    stage are stale and must not be stored."""
    trace = make_trace(simple_scenario)
    raw = sqlite3.connect(trace)
    with raw:
        raw.execute("""
            DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN (
              SELECT k.correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL k
              JOIN StringIds s ON s.id = k.demangledName
              WHERE s.value = ? AND k.graphNodeId IS NULL AND k.correlationId % 2 = 0)""",
                    (BF16_GEMM,))
    raw.close()
    refreshes = _count_calls(monkeypatch, "refresh_kernel_groups")
    result = analyze(store, [trace], AnalysisOptions())
    stored, expected = _groups_and_truth(store, result.run_id)
    assert refreshes == ["refresh_kernel_groups"]
    assert stored == expected
    orphans_in_steps = [row for row in stored if row[2] is None and row[4] != "unattributed"]
    assert orphans_in_steps, "the GPU-time fallback should have put launchless kernels in steps"


def test_an_error_in_the_stages_leaves_no_groups_thread_behind(
        store, make_trace, simple_scenario, monkeypatch):
    import threading

    from tracekit.phases import stage

    def explode(*_args, **_kwargs):
        raise RuntimeError("injected failure in the phases stage")

    monkeypatch.setattr(stage, "attribute_phases", explode)
    with pytest.raises(RuntimeError):
        analyze(store, [make_trace(simple_scenario)], AnalysisOptions())
    assert not [t for t in threading.enumerate() if t.name.startswith("tracekit-groups")]


def test_an_in_memory_store_sums_groups_on_its_own_connection(make_trace, simple_scenario):
    """Each connection to ``sqlite://`` has its own database: nothing runs beside the stages
    there, and the groups still come out (they once failed with "no such table")."""
    from tracekit.store import open_store

    store = open_store("sqlite://")
    try:
        result = analyze(store, [make_trace(simple_scenario)], AnalysisOptions())
        stored, expected = _groups_and_truth(store, result.run_id)
    finally:
        store.dispose()
    assert stored == expected and len(stored) > 3
