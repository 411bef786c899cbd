"""kernel_groups equal a plain GROUP BY over the kernel records, NULL keys included."""

from __future__ import annotations

from sqlalchemy import text

from tracekit.aggregate import refresh_kernel_groups
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
