"""Kernel → step attribution as set-based SQL (sorted index lookups, never ranges × kernels).

A kernel belongs to the step whose range, on the thread that launched it, contains its launch
call, the rule of Nsight Systems' own NVTX projection (the ``nvtx_gpu_proj_trace`` report of
the User Guide, https://docs.nvidia.com/nsight-systems/UserGuide/index.html; see
docs/formats.md#the-sqlite-export). CUDA-graph kernels replayed with
``--cuda-graph-trace=node`` carry the correlation id of their ``cudaGraphLaunch``, so ingest
already gave them that launch's thread and time: they land in the step around the replay,
like any other kernel.

The lookup per kernel is "the latest step on the same thread starting at or before the
launch" — one seek in a temporary ``(global_tid, start_ns)`` index of the run's steps, a few
thousand to 10^5 rows that stay in cache — and a containment check on the launch end, all
inside one ``UPDATE`` pass over the run's kernels (each row is rewritten once; the kernels
table has no index to maintain for it). Kernels whose launch record is missing (trace cut
before the launch) fall back to GPU time: the step of the same process whose GPU projection
contains them.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

_TEMP_TABLES = ("tk_phase_steps", "tk_step_gpu")

# The step that contains a kernel's launch, as (id, phase); NULLs when none does. The latest
# step starting at or before the launch is found by a backwards seek in a covering index; the
# containment test is on that step only (nested marker ranges were dropped, so a thread's
# steps never nest).
_STEP_OF_LAUNCH = """
    SELECT CASE WHEN l.end_ns >= COALESCE(kernels.launch_end_ns, kernels.launch_start_ns)
                THEN l.id END,
           CASE WHEN l.end_ns >= COALESCE(kernels.launch_end_ns, kernels.launch_start_ns)
                THEN l.phase END
    FROM tk_phase_steps l
    WHERE l.global_tid = kernels.global_tid AND l.start_ns <= kernels.launch_start_ns
    ORDER BY l.start_ns DESC LIMIT 1"""

# Same lookup on GPU time, for kernels without a launch record: keyed by process.
_STEP_OF_GPU_TIME = """
    SELECT CASE WHEN l.end_ns >= kernels.end_ns THEN l.id END,
           CASE WHEN l.end_ns >= kernels.end_ns THEN l.phase END
    FROM tk_phase_steps l
    WHERE l.global_tid = kernels.global_pid AND l.start_ns <= kernels.start_ns
    ORDER BY l.start_ns DESC LIMIT 1"""


def drop_temp_tables(connection: Connection) -> None:
    """Remove this module's scratch tables (they live only for the connection anyway)."""
    for name in _TEMP_TABLES:
        connection.execute(text(f"DROP TABLE IF EXISTS {name}"))


def _load_lookup(connection: Connection, select: str, run_id: int) -> None:
    """``tk_phase_steps``: (key, start, end) intervals indexed for the latest-start seek."""
    drop_temp_tables(connection)
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_phase_steps (id BIGINT PRIMARY KEY, global_tid BIGINT, "
        "start_ns BIGINT, end_ns BIGINT, phase VARCHAR(16))"))
    connection.execute(text(f"INSERT INTO tk_phase_steps {select}"), {"run_id": run_id})
    connection.execute(text(
        "CREATE INDEX tk_phase_steps_key ON tk_phase_steps (global_tid, start_ns, end_ns, id, "
        "phase)"))


def load_launch_lookup(connection: Connection, run_id: int) -> None:
    """``tk_phase_steps`` from the run's steps, keyed by launching thread."""
    _load_lookup(connection, "SELECT id, global_tid, start_ns, end_ns, phase FROM steps "
                             "WHERE run_id = :run_id AND global_tid IS NOT NULL", run_id)


def launch_step_join(tid: str, start: str, end: str) -> tuple[str, tuple[str, str]]:
    """SQL to give a kernel being inserted its (step_id, phase), from its launch columns.

    Returns a LEFT JOIN clause and the two column expressions. The same latest-step seek as
    ``attribute_by_launch`` finds the candidate's rowid (the covering index holds it), one
    rowid lookup fetches it, and the ON clause checks containment. Readers that copy kernels
    with one INSERT … SELECT use it instead of an UPDATE that rewrites every kernel row.
    """
    seek = (f"SELECT l.rowid FROM tk_phase_steps l WHERE l.global_tid = {tid} "
            f"AND l.start_ns <= {start} ORDER BY l.start_ns DESC LIMIT 1")
    join = (f"LEFT JOIN tk_phase_steps AS ps ON ps.rowid = ({seek}) "
            f"AND ps.end_ns >= COALESCE({end}, {start})")
    return join, ("ps.id", "ps.phase")


def attribute_by_launch(connection: Connection, run_id: int) -> None:
    """Set ``kernels.step_id``/``phase`` from launch-time containment on the launching thread."""
    load_launch_lookup(connection, run_id)
    connection.execute(text(f"""
        UPDATE kernels SET (step_id, phase) = ({_STEP_OF_LAUNCH})
        WHERE run_id = :run_id AND launch_start_ns IS NOT NULL
          AND global_tid IN (SELECT DISTINCT global_tid FROM tk_phase_steps)"""),
        {"run_id": run_id})


def project_to_gpu(connection: Connection, run_id: int) -> tuple[int, int]:
    """Each step's GPU interval (first kernel start, last kernel end).

    Returns (kernels in steps, kernels outside any step that have no launch record): the
    same pass tells whether the GPU-time fallback has anything to do.
    """
    connection.execute(text("DROP TABLE IF EXISTS tk_step_gpu"))
    connection.execute(text("""
        CREATE TEMPORARY TABLE tk_step_gpu AS
        SELECT step_id, MIN(start_ns) AS gpu_start, MAX(end_ns) AS gpu_end, COUNT(*) AS kernels,
               SUM(CASE WHEN launch_start_ns IS NULL THEN 1 ELSE 0 END) AS orphans
        FROM kernels WHERE run_id = :run_id GROUP BY step_id"""), {"run_id": run_id})
    connection.execute(text("""
        UPDATE steps SET gpu_start_ns = g.gpu_start, gpu_end_ns = g.gpu_end
        FROM tk_step_gpu AS g WHERE steps.id = g.step_id"""))
    in_steps, orphans = connection.execute(text(
        "SELECT COALESCE(SUM(CASE WHEN step_id IS NOT NULL THEN kernels END), 0), "
        "COALESCE(SUM(CASE WHEN step_id IS NULL THEN orphans END), 0) FROM tk_step_gpu")).one()
    return int(in_steps), int(orphans)


def attribute_orphans_by_gpu_time(connection: Connection, run_id: int) -> int:
    """Kernels without a launch record: the step of their process whose GPU span holds them.

    Returns how many were attributed this way.
    """
    _load_lookup(connection, "SELECT id, global_pid, gpu_start_ns, gpu_end_ns, phase FROM steps "
                             "WHERE run_id = :run_id AND gpu_start_ns IS NOT NULL", run_id)
    result = connection.execute(text(f"""
        UPDATE kernels SET (step_id, phase) = ({_STEP_OF_GPU_TIME})
        WHERE run_id = :run_id AND launch_start_ns IS NULL
          AND step_id IS NULL
          AND global_pid IN (SELECT DISTINCT global_tid FROM tk_phase_steps)"""),
        {"run_id": run_id})
    return int(result.rowcount or 0)
