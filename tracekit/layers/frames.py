"""Nested intervals on a CPU thread → the innermost one around each kernel launch, in SQL.

Module frames (``nn.Module: QKVParallelLinear_0`` inside ``OAIAttention_0`` inside
``TransformerBlock_0``) and layer NVTX ranges nest, so "the latest interval starting before
the launch", the seek the phases stage does for steps (which never nest), can find a
sibling that has ended. The nesting is resolved once per run, set-based:

1. **depth**: the intervals' starts (+1) and ends (−1) in time order on each thread (at one
   instant ends before starts, and the longer of two intervals that start together first),
   summed by a window function: an interval's depth is the running sum at its start;
2. **parent**: the latest interval one level up on the thread that starts no later (one seek
   in a ``(thread, depth, start)`` index); kept only if it really contains the child;
3. **chain**: the labels from the outermost interval down, built one depth level at a time
   (``/3/17/25``: label ids, an ``UPDATE`` per level over that level's rows);
4. **boundaries**: each start hands the thread to its interval's chain, each end back to the
   parent's, so the innermost interval around any instant is the owner of the latest
   boundary at or before it: one backwards seek per launch in a covering index, as for steps.

Python sees only the distinct chains (a few hundred: class names without instance numbers,
or module paths) and decides each once (``tracekit.layers.modules``, ``…markers``).
Intervals of zero length hold no launch and would break the depth order: they are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection, text

from tracekit.store.sql import insert_rows
from tracekit.vocabulary import LAYER_SOURCES

FRAME_TABLES = ("tk_layer_raw", "tk_layer_frames", "tk_layer_chains")
BOUNDS_TABLE = "tk_layer_bounds"


def drop_tables(connection: Connection) -> None:
    """Remove this module's scratch tables (they live only for the connection anyway)."""
    for name in (*FRAME_TABLES, BOUNDS_TABLE):
        connection.execute(text(f"DROP TABLE IF EXISTS {name}"))


def create_bounds(connection: Connection) -> None:
    """The boundary table every source's intervals are added to (``add_source``)."""
    connection.execute(text(f"DROP TABLE IF EXISTS {BOUNDS_TABLE}"))
    connection.execute(text(
        f"CREATE TEMPORARY TABLE {BOUNDS_TABLE} (source VARCHAR(8), tid BIGINT, t BIGINT, "
        "ord INTEGER, sub BIGINT, chain_id BIGINT)"))


def add_source(connection: Connection, source: str, select: str,
               params: Mapping[str, object]) -> list[str]:
    """Nest the intervals ``select`` gives and add their boundaries under ``source``.

    ``select`` yields ``(id, tid, start_ns, end_ns, label)`` rows (``label`` an integer id
    the caller knows the meaning of). Returns the distinct chains, in the order of their
    ``chain_id`` (chain *i* has id *i*); each is ``/``-joined label ids, outermost first.
    """
    for name in FRAME_TABLES:
        connection.execute(text(f"DROP TABLE IF EXISTS {name}"))
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_layer_raw (id BIGINT, tid BIGINT, "
        "start_ns BIGINT, end_ns BIGINT, label BIGINT)"))
    connection.execute(text(
        f"INSERT INTO tk_layer_raw SELECT * FROM ({select}) AS s "
        "WHERE s.tid IS NOT NULL AND s.end_ns > s.start_ns"), dict(params))
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_layer_frames (id BIGINT PRIMARY KEY, tid BIGINT, "
        "start_ns BIGINT, end_ns BIGINT, label BIGINT, depth BIGINT, parent BIGINT, "
        "chain TEXT)"))
    # The running sum over each thread's starts and ends; a start's value is its depth.
    connection.execute(text("""
        INSERT INTO tk_layer_frames (id, tid, start_ns, end_ns, label, depth)
        SELECT w.id, w.tid, w.start_ns, w.end_ns, w.label, w.depth FROM (
            SELECT e.id, e.tid, e.start_ns, e.end_ns, e.label, e.delta,
                   SUM(e.delta) OVER (PARTITION BY e.tid ORDER BY e.t, e.delta, e.tie, e.id
                                      ROWS UNBOUNDED PRECEDING) AS depth
            FROM (SELECT id, tid, start_ns, end_ns, label, start_ns AS t, 1 AS delta,
                         -end_ns AS tie FROM tk_layer_raw
                  UNION ALL
                  SELECT id, tid, start_ns, end_ns, label, end_ns, -1, 0
                  FROM tk_layer_raw) AS e) AS w
        WHERE w.delta = 1"""))
    connection.execute(text("DROP TABLE tk_layer_raw"))
    connection.execute(text(
        "CREATE INDEX tk_layer_frames_nest ON tk_layer_frames (tid, depth, start_ns, id, "
        "end_ns)"))
    connection.execute(text(
        "CREATE INDEX tk_layer_frames_depth ON tk_layer_frames (depth)"))
    _link_parents(connection)
    _build_chains(connection)
    chains = [str(chain) for (chain,) in connection.execute(text(
        "SELECT DISTINCT chain FROM tk_layer_frames ORDER BY chain"))]
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_layer_chains (chain TEXT PRIMARY KEY, chain_id BIGINT)"))
    insert_rows(connection, "tk_layer_chains", ("chain", "chain_id"),
                [(chain, index) for index, chain in enumerate(chains)])
    _add_bounds(connection, source)
    for name in FRAME_TABLES:
        connection.execute(text(f"DROP TABLE IF EXISTS {name}"))
    return chains


def _link_parents(connection: Connection) -> None:
    """Each interval's parent: the latest one a level up on its thread that starts no later,
    kept only when it contains the child (a broken nesting cuts the chain there)."""
    connection.execute(text("""
        UPDATE tk_layer_frames SET parent = (
            SELECT CASE WHEN p.end_ns >= tk_layer_frames.end_ns THEN p.id END
            FROM tk_layer_frames AS p
            WHERE p.tid = tk_layer_frames.tid AND p.depth = tk_layer_frames.depth - 1
              AND p.start_ns <= tk_layer_frames.start_ns
            ORDER BY p.start_ns DESC, p.id DESC LIMIT 1)
        WHERE depth > 1"""))


def _build_chains(connection: Connection) -> None:
    """``chain`` = the parent's chain + ``/label``, one depth level at a time."""
    (deepest,) = connection.execute(text("SELECT MAX(depth) FROM tk_layer_frames")).one()
    for depth in range(1, int(deepest or 0) + 1):
        connection.execute(text("""
            UPDATE tk_layer_frames SET chain = COALESCE(
                (SELECT p.chain FROM tk_layer_frames AS p WHERE p.id = tk_layer_frames.parent),
                '') || '/' || CAST(label AS TEXT)
            WHERE depth = :depth"""), {"depth": depth})


def _add_bounds(connection: Connection, source: str) -> None:
    """Starts hand the thread to the interval's chain, ends back to the parent's (NULL at the
    top). At one instant ends come before starts, deeper ends first and deeper starts last,
    so the latest boundary at or before an instant names the innermost interval around it."""
    connection.execute(text(f"""
        INSERT INTO {BOUNDS_TABLE} (source, tid, t, ord, sub, chain_id)
        SELECT :source, f.tid, f.start_ns, 1, f.depth, c.chain_id
        FROM tk_layer_frames AS f JOIN tk_layer_chains AS c ON c.chain = f.chain"""),
        {"source": source})
    connection.execute(text(f"""
        INSERT INTO {BOUNDS_TABLE} (source, tid, t, ord, sub, chain_id)
        SELECT :source, f.tid, f.end_ns, 0, -f.depth, c.chain_id
        FROM tk_layer_frames AS f
        LEFT JOIN tk_layer_frames AS p ON p.id = f.parent
        LEFT JOIN tk_layer_chains AS c ON c.chain = p.chain"""), {"source": source})


def index_bounds(connection: Connection) -> None:
    """The covering index the launches seek in (after every source was added)."""
    connection.execute(text(
        f"CREATE INDEX {BOUNDS_TABLE}_seek ON {BOUNDS_TABLE} (source, tid, t, ord, sub, "
        "chain_id)"))


def innermost_chain(source: str, tid: str, at: str) -> str:
    """SQL for the chain id of the innermost ``source`` interval around instant ``at`` on
    thread ``tid`` (column expressions of the outer query), NULL outside every interval."""
    assert source in LAYER_SOURCES  # a word of the vocabulary, never a value from a trace
    return (f"(SELECT b.chain_id FROM {BOUNDS_TABLE} AS b WHERE b.source = '{source}' "
            f"AND b.tid = {tid} AND b.t <= {at} ORDER BY b.t DESC, b.ord DESC, b.sub DESC "
            "LIMIT 1)")


def chain_labels(chain: str) -> Sequence[int]:
    """The label ids of a chain, outermost first."""
    return [int(part) for part in chain.split("/") if part]
