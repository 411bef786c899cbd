"""Nsight Systems SQLite ingest: counts, correlation, NVTX, devices, schema variants."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import BF16_GEMM, ELEMENTWISE
from tracekit.errors import InputError
from tracekit.ingest.pipeline import ingest
from tracekit.ingest.readers import nsys_sqlite
from tracekit.phases.ingest_time import IngestTimeSteps
from tracekit.store.db import Store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, kernel_totals


def per_name(store: Store, run_id: int) -> dict[str, tuple[int, int]]:
    with store.connect() as connection:
        rows = connection.execute(text(
            "SELECT n.name, COUNT(*), SUM(k.end_ns - k.start_ns) FROM kernels k "
            "JOIN kernel_names n ON n.id = k.name_id WHERE k.run_id = :r GROUP BY n.name"),
            {"r": run_id})
        return {name: (count, total) for name, count, total in rows}


def scalar(store: Store, sql: str, **params: object) -> object:
    with store.connect() as connection:
        return connection.execute(text(sql), params).scalar()


def table_counts(store: Store) -> dict[str, int]:
    tables = ("runs", "kernels", "kernel_names", "runtime_calls", "api_names", "nvtx_ranges",
              "devices", "processes", "threads", "memory_ops")
    return {table: int(scalar(store, f"SELECT COUNT(*) FROM {table}")) for table in tables}


def test_counts_and_time_per_name_match_the_file(store, make_trace, simple_scenario):
    trace = make_trace(simple_scenario)
    result = ingest(store, [trace])
    assert not result.existing and result.format == "nsys-sqlite"
    assert per_name(store, result.run_id) == kernel_totals(trace)


def test_kernels_know_their_launching_thread_and_process(store, make_trace, simple_scenario):
    run_id = ingest(store, [make_trace(simple_scenario)]).run_id
    with store.connect() as connection:
        rows = connection.execute(text(
            "SELECT DISTINCT t.name, p.name FROM kernels k "
            "JOIN threads t ON t.run_id = k.run_id AND t.global_tid = k.global_tid "
            "JOIN processes p ON p.run_id = k.run_id AND p.global_pid = k.global_pid "
            "WHERE k.run_id = :r"), {"r": run_id}).all()
    assert rows == [("VLLM::EngineCore", "python3")]
    assert scalar(store, "SELECT COUNT(*) FROM kernels WHERE launch_start_ns IS NULL") == 0


def test_graph_replayed_kernels_share_the_graph_launch(store, make_trace, simple_scenario):
    run_id = ingest(store, [make_trace(simple_scenario)]).run_id
    with store.connect() as connection:
        launches = connection.execute(text(
            "SELECT k.correlation_id, COUNT(*), COUNT(DISTINCT k.launch_start_ns), "
            "MIN(a.name) FROM kernels k JOIN runtime_calls r ON r.run_id = k.run_id "
            "AND r.correlation_id = k.correlation_id JOIN api_names a ON a.id = r.name_id "
            "WHERE k.run_id = :r AND k.graph_node_id IS NOT NULL GROUP BY k.correlation_id"),
            {"r": run_id}).all()
    # three decode steps, each one cudaGraphLaunch replaying 5 kernels
    assert len(launches) == 3
    assert all(count == 5 and distinct == 1 and api.startswith("cudaGraphLaunch")
               for _, count, distinct, api in launches)


def test_nvtx_ranges_and_domains(store, make_trace):
    scenario = Scenario(ranks=[RankSpec(pid=7, nvtx_domains=["vllm"], steps=[
        StepSpec("execute_context_1(8)_generation_0(0)", [KernelSpec(BF16_GEMM, 1000)],
                 domain="vllm"),
        StepSpec("plain range", [KernelSpec(ELEMENTWISE, 500)]),
    ])])
    run_id = ingest(store, [make_trace(scenario)]).run_id
    with store.connect() as connection:
        rows = connection.execute(text(
            "SELECT kind, text, domain FROM nvtx_ranges WHERE run_id = :r ORDER BY start_ns"),
            {"r": run_id}).all()
    assert rows == [("domain_create", "vllm", None),
                    ("push_pop", "execute_context_1(8)_generation_0(0)", "vllm"),
                    ("push_pop", "plain range", None)]


def test_device_from_gpu_table(store, make_trace):
    scenario = Scenario(ranks=[RankSpec(pid=1, gpu_name="NVIDIA GeForce RTX 5090",
                                        compute_capability=(12, 0), sm_count=170,
                                        steps=[StepSpec(None, [KernelSpec(BF16_GEMM, 10)])])])
    run_id = ingest(store, [make_trace(scenario)]).run_id
    with store.connect() as connection:
        row = connection.execute(text(
            "SELECT device_index, name, compute_major, compute_minor, sm_count, arch FROM devices "
            "WHERE run_id = :r"), {"r": run_id}).one()
    assert tuple(row) == (0, "NVIDIA GeForce RTX 5090", 12, 0, 170, "sm120")


def test_two_ranks_two_devices(store, make_trace):
    ranks = [RankSpec(pid=100 + rank, device=rank, steps=[
        StepSpec("execute_context_1(16)_generation_0(0)", [KernelSpec(BF16_GEMM, 1000, count=3)])])
        for rank in range(2)]
    trace = make_trace(ranks)
    run_id = ingest(store, [trace]).run_id
    assert scalar(store, "SELECT COUNT(*) FROM devices WHERE run_id = :r", r=run_id) == 2
    assert scalar(store, "SELECT COUNT(DISTINCT global_pid) FROM kernels") == 2
    assert per_name(store, run_id) == kernel_totals(trace)


def test_same_file_twice_gives_the_existing_run(store, make_trace, simple_scenario):
    trace = make_trace(simple_scenario)
    first = ingest(store, [trace])
    before = table_counts(store)
    second = ingest(store, [trace])
    assert second.existing and second.run_id == first.run_id
    assert table_counts(store) == before


def test_input_file_is_never_modified(store, make_trace, simple_scenario):
    trace = make_trace(simple_scenario)
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()
    siblings = sorted(p.name for p in trace.parent.iterdir())
    ingest(store, [trace])
    assert hashlib.sha256(trace.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in trace.parent.iterdir()) == siblings


def test_failure_mid_ingest_leaves_no_partial_run(store, make_trace, simple_scenario, monkeypatch):
    trace = make_trace(simple_scenario)
    before = table_counts(store)

    def explode(*_args: object) -> None:
        raise InputError("injected failure after kernels were copied")

    monkeypatch.setattr(nsys_sqlite, "_copy_devices", explode)
    with pytest.raises(InputError):
        ingest(store, [trace])
    assert table_counts(store) == before
    monkeypatch.undo()
    assert ingest(store, [trace]).existing is False


def _variant(source: Path, target: Path, statements: list[str]) -> Path:
    target.write_bytes(source.read_bytes())
    connection = sqlite3.connect(target)
    with connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()
    return target


def test_newer_schema_variant_graph_ids_and_renamed_metadata(store, make_trace, simple_scenario,
                                                              tmp_path):
    """nsys ≥2023.4 renamed EXPORT_META_DATA; 2026.x added KERNEL.graphId and green contexts."""
    base = make_trace(simple_scenario)
    newer = _variant(base, tmp_path / "newer.sqlite", [
        "ALTER TABLE EXPORT_META_DATA RENAME TO META_DATA_EXPORT",
        "UPDATE META_DATA_EXPORT SET value = '3.25.0' WHERE name = 'EXPORT_SCHEMA_VERSION'",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN graphId INTEGER",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN greenContextId INTEGER",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphId = 77 WHERE graphNodeId IS NOT NULL",
    ])
    run_id = ingest(store, [newer]).run_id
    assert scalar(store, "SELECT schema_version FROM runs WHERE id = :r", r=run_id) == "3.25.0"
    assert scalar(store, "SELECT COUNT(*) FROM kernels WHERE graph_id = 77") == 15
    assert per_name(store, run_id) == kernel_totals(base)


def test_cuda_device_table_maps_process_ordinals(store, make_trace, tmp_path):
    scenario = Scenario(ranks=[RankSpec(pid=5, device=0, gpu_name="NVIDIA B200",
                                        compute_capability=(10, 0),
                                        steps=[StepSpec(None, [KernelSpec(BF16_GEMM, 10)])])])
    trace = _variant(make_trace(scenario), tmp_path / "cudadev.sqlite", [
        "UPDATE TARGET_INFO_GPU SET id = 3, cuDevice = 3",
        "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER)",
        "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (3, 0, 5)",
    ])
    run_id = ingest(store, [trace]).run_id
    with store.connect() as connection:
        rows = connection.execute(text(
            "SELECT device_index, name, arch FROM devices WHERE run_id = :r"), {"r": run_id}).all()
    assert [tuple(row) for row in rows] == [(0, "NVIDIA B200", "sm100")]


def test_no_gpu_table_still_lists_devices(store, make_trace):
    scenario = Scenario(include_gpu_table=False, ranks=[RankSpec(pid=9, device=1, steps=[
        StepSpec(None, [KernelSpec(BF16_GEMM, 10)])])])
    run_id = ingest(store, [make_trace(scenario)]).run_id
    with store.connect() as connection:
        rows = connection.execute(text(
            "SELECT device_index, name, arch FROM devices WHERE run_id = :r"), {"r": run_id}).all()
    assert [tuple(row) for row in rows] == [(1, None, None)]


def test_real_nsys_2026_export_keeps_kernels_without_runtime_partner(store, shared_trace):
    """h100_2gpu_1s was cut to a 1 s window: 1,810 of 3,442 kernels lost their launch."""
    trace = shared_trace("nsys-ai/h100_2gpu_1s.sqlite")
    run_id = ingest(store, [trace]).run_id
    raw = sqlite3.connect(f"{trace.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    count, total = raw.execute(
        "SELECT COUNT(*), SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    raw.close()
    assert scalar(store, "SELECT COUNT(*) FROM kernels WHERE run_id = :r", r=run_id) == count
    assert scalar(store, "SELECT SUM(end_ns - start_ns) FROM kernels WHERE run_id = :r",
                  r=run_id) == total
    assert scalar(store, "SELECT COUNT(*) FROM kernels WHERE run_id = :r AND global_tid IS NULL",
                  r=run_id) == 1810
    assert scalar(store, "SELECT producer_version FROM runs WHERE id = :r",
                  r=run_id) == "2026.2.1.210"
    assert scalar(store, "SELECT COUNT(*) FROM nvtx_ranges WHERE run_id = :r", r=run_id) == 16782


def test_real_export_per_name_totals(store, shared_trace):
    trace = shared_trace("nsys-ai/mfu_2gpu_before.sqlite")
    run_id = ingest(store, [trace]).run_id
    raw = sqlite3.connect(f"{trace.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    truth = {name: (count, total) for name, count, total in raw.execute(
        "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value")}
    raw.close()
    assert per_name(store, run_id) == truth


@pytest.mark.parametrize("odd_keys", [
    {},
    {0: "'a text key'", 1: "0"},  # text adds up as 0: both would get the same id
    {0: str(2**63 - 1)},  # base + key would overflow
    {0: "-4"},  # below the base: here, the id of the earlier run's first name
])
def test_kernel_name_ids_whatever_the_string_ids(store, make_trace, simple_scenario, tmp_path,
                                                 odd_keys, request):
    """Names get ids computed from their string ids unless a damaged file has keys that
    would not add up to distinct ids; then the copy joins. Either way every kernel points
    at the name row of its own string id."""
    if "'a text key'" in odd_keys.values() and store.engine.dialect.name == "postgresql":
        # Known gap: kernel_names.source_key is BIGINT, and PostgreSQL's COPY refuses the text
        # key. The ingest refuses the file with one line (InputError, "cannot read trace"),
        # where SQLite stores it.
        request.applymarker(pytest.mark.xfail(
            strict=True, raises=InputError,
            reason="a text string id in an nsys export is not stored on PostgreSQL"))
    ingest(store, [make_trace(simple_scenario)])  # a run before, so low ids are taken
    trace = _variant(make_trace(simple_scenario), tmp_path / "odd.sqlite", [
        f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = {value} WHERE rowid % 3 = {rest}"
        for rest, value in odd_keys.items()] + ["UPDATE StringIds SET value = value || ' '"])
    run_id = ingest(store, [trace]).run_id
    raw = sqlite3.connect(f"{trace.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    truth = dict(raw.execute("SELECT demangledName, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                             "GROUP BY demangledName").fetchall())
    raw.close()
    with store.connect() as connection:
        stored = dict(connection.execute(text(
            "SELECT n.source_key, COUNT(*) FROM kernels k JOIN kernel_names n ON n.id = k.name_id "
            "WHERE k.run_id = :r AND n.run_id = :r GROUP BY n.source_key"), {"r": run_id}).all())
    assert stored == truth
    assert _foreign_key_problems(store) == []


def _foreign_key_problems(store: Store) -> list[tuple]:
    """SQLite's check of every foreign key (the ingest writes with enforcement off there);
    PostgreSQL enforces them on every write, so nothing can be left to find."""
    if store.engine.dialect.name != "sqlite":
        return []
    with store.connect() as connection:
        return [tuple(row) for row in connection.exec_driver_sql("PRAGMA foreign_key_check")]


@pytest.mark.parametrize("trace_name", ["scenario", "nsys-ai/h100_2gpu_1s.sqlite",
                                        "nsys-ai/mfu_2gpu_before.sqlite"])
def test_ingest_without_enforced_foreign_keys_leaves_every_reference_intact(
        sqlite_store, make_trace, simple_scenario, shared_trace, trace_name):
    """Ingest skips SQLite's per-row parent checks: every id it writes must still resolve,
    and the connection must go back to the pool with enforcement on (cascading deletes)."""
    store = sqlite_store
    trace = make_trace(simple_scenario) if trace_name == "scenario" else shared_trace(trace_name)
    run_id = ingest(store, [trace], step_attribution=IngestTimeSteps()).run_id
    assert scalar(store, "SELECT COUNT(*) FROM kernels WHERE run_id = :r", r=run_id) > 0
    assert _foreign_key_problems(store) == []
    with store.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_a_failed_ingest_also_turns_foreign_keys_back_on(sqlite_store, make_trace,
                                                       simple_scenario, monkeypatch):
    store = sqlite_store
    def explode(*_args: object) -> None:
        raise InputError("injected failure after kernels were copied")

    monkeypatch.setattr(nsys_sqlite, "_copy_devices", explode)
    with pytest.raises(InputError):
        ingest(store, [make_trace(simple_scenario)])
    with store.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def _stored_rows(store: Store, run_id: int) -> dict[str, list[tuple]]:
    """Every row of the run's tables that the ingest writes, ids mapped to what they name."""
    queries = {
        "kernel_names": "SELECT source_key, name, short_name, mangled_name FROM kernel_names "
                        "WHERE run_id = :r ORDER BY source_key",
        "api_names": "SELECT source_key, name FROM api_names WHERE run_id = :r ORDER BY 1",
        "kernels": "SELECT n.source_key, k.start_ns, k.end_ns, k.global_tid, k.launch_start_ns, "
                   "k.step_id - (SELECT MIN(id) FROM steps WHERE run_id = :r), k.phase "
                   "FROM kernels k JOIN kernel_names n ON n.id = k.name_id "
                   "WHERE k.run_id = :r ORDER BY k.id",
        "runtime_calls": "SELECT a.name, r.start_ns, r.correlation_id FROM runtime_calls r "
                         "JOIN api_names a ON a.id = r.name_id WHERE r.run_id = :r ORDER BY r.id",
        "steps": "SELECT phase, text, start_ns, end_ns FROM steps WHERE run_id = :r ORDER BY id",
        "nvtx_ranges": "SELECT kind, text, domain, start_ns FROM nvtx_ranges WHERE run_id = :r "
                       "ORDER BY id",
        "run_counts": "SELECT name, count FROM run_counts WHERE run_id = :r ORDER BY name",
    }
    with store.connect() as connection:
        return {table: [tuple(row) for row in connection.execute(text(sql), {"r": run_id})]
                for table, sql in queries.items()}


@pytest.mark.parametrize("trace_name", ["scenario", "domains", "damaged",
                                        "nsys-ai/h100_2gpu_1s.sqlite",
                                        "nsys-ai/mfu_2gpu_before.sqlite"])
def test_side_connection_reads_change_nothing_stored(tmp_path, make_trace, simple_scenario,
                                                     shared_trace, trace_name):
    """Names, API names, marker texts and NVTX counts read on the side connection while the
    store connection copies give the same run as reading them on the store connection."""
    from tracekit.store import open_store

    if trace_name == "scenario":
        trace = make_trace(simple_scenario)
    elif trace_name == "domains":
        trace = make_trace(Scenario(ranks=[RankSpec(pid=7, nvtx_domains=["vllm"], steps=[
            StepSpec("execute_context_1(8)_generation_0(0)", [KernelSpec(BF16_GEMM, 1000)],
                     domain="vllm"),
            StepSpec("execute_context_0(0)_generation_2(2)", [KernelSpec(ELEMENTWISE, 500)]),
        ])]))
    elif trace_name == "damaged":  # name keys that are text, one of it invalid UTF-8
        trace = _variant(make_trace(simple_scenario), tmp_path / "damaged.sqlite", [
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = CAST(X'ff41' AS TEXT) "
            "WHERE rowid % 3 = 0",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 'text' WHERE rowid % 3 = 1"])
    else:
        trace = shared_trace(trace_name)
    rows = []
    for side in (False, True):
        opened = open_store(str(tmp_path / f"side-{side}.db"))
        try:
            result = ingest(opened, [trace], side_reads=side, step_attribution=IngestTimeSteps())
            rows.append(_stored_rows(opened, result.run_id))
        finally:
            opened.dispose()
    assert rows[0] == rows[1]
    raw = sqlite3.connect(f"{trace.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    (kernels,) = raw.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    raw.close()
    assert len(rows[1]["kernels"]) == kernels


def test_runtime_calls_other_than_launches_are_kept(store, shared_trace):
    """The runtime pass is skipped only when every call launched a kernel."""
    trace = shared_trace("nsys-ai/h100_2gpu_1s.sqlite")
    run_id = ingest(store, [trace]).run_id
    raw = sqlite3.connect(f"{trace.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    launches = raw.execute(
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
        "WHERE s.value GLOB 'cudaLaunchKernel*' OR s.value GLOB 'cuLaunchKernel*'").fetchone()[0]
    total = raw.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    raw.close()
    stored = scalar(store, "SELECT COUNT(*) FROM runtime_calls WHERE run_id = :r", r=run_id)
    assert 0 < stored == total - launches


def test_a_trace_of_launches_only_has_no_runtime_rows(store, make_trace):
    run_id = ingest(store, [make_trace(Scenario(ranks=[RankSpec(pid=5, steps=[
        StepSpec("execute_context_1(8)_generation_0(0)", [KernelSpec(BF16_GEMM, 900, count=4)]),
    ])]))]).run_id
    assert scalar(store, "SELECT COUNT(*) FROM kernels WHERE run_id = :r", r=run_id) == 4
    assert scalar(store, "SELECT COUNT(*) FROM runtime_calls WHERE run_id = :r", r=run_id) == 0
    assert scalar(store, "SELECT COUNT(*) FROM api_names WHERE run_id = :r", r=run_id) >= 1


def test_a_failed_side_read_is_read_again_on_the_store_connection(tmp_path, make_trace,
                                                                 simple_scenario, monkeypatch):
    """The side connection only saves time: when its reads fail (interrupted, a damaged
    file), the ingest makes them itself and stores the same run."""
    from concurrent.futures import Future

    from tracekit.ingest.side import SideWork
    from tracekit.store import open_store

    trace = make_trace(simple_scenario)
    expected = None
    for failing in (False, True):
        if failing:
            def broken(self, job):  # type: ignore[no-untyped-def]
                future: Future[object] = Future()
                future.set_exception(sqlite3.OperationalError("interrupted"))
                return future

            monkeypatch.setattr(SideWork, "submit", broken)
        opened = open_store(str(tmp_path / f"failing-{failing}.db"))
        try:
            result = ingest(opened, [trace], side_reads=True,
                            step_attribution=IngestTimeSteps())
            rows = _stored_rows(opened, result.run_id)
        finally:
            opened.dispose()
        if expected is None:
            expected = rows
    assert rows == expected and rows["kernels"]
