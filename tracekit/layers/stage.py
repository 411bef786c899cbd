"""The layer stage: a run's GEMM time per (kernel name, phase, layer group) → ``layer_times``.

Runs after the groups stage (it needs each kernel's phase) and before the findings, which
judge each layer group against what the checkpoint declares for it. Rewritten on every
analysis, so a new ``--model`` (new dimensions to match shapes against) re-attributes a
stored run.

Every GEMM launch gets the evidence the trace has, strongest first
(docs/vocabulary.md#layer-groups):

1. ``module``: the torch profiler's ``nn.Module`` frames around its launch
   (``tracekit.layers.modules``). "Its launch" is the runtime call on the launching thread,
   which lies inside the framework op (``kernels.cpu_op_id``) that made it; the op's start
   on its thread stands in when the launch record is missing. A CUDA-graph replay's launch
   is the graph's, so replays take no frame or range: they inherit (6.);
2. ``nvtx``: the innermost layer NVTX range around its launch (``tracekit.layers.markers``);
3. ``shapes``: its framework op's weight shape against the model's dimensions
   (``tracekit.layers.shapes``; with ``--model`` only);
4. ``kernel_name``: a kernel family that serves one group (``tracekit.layers.kernels``);
5. ``launch_count``: its launches per step against ``num_hidden_layers``
   (``tracekit.layers.counts``);
6. ``inherited``: a launch with no evidence of its own (a CUDA-graph replay, whose launch is
   the graph's; a kernel without a launch record) takes the group of the same kernel's
   attributed launches when they agree on one.

The first that names a group decides (``tracekit.layers.model.decide``). Row work is SQL:
module frames and ranges are nested once per run (``tracekit.layers.frames``), then one
aggregate over the run's GEMM launches groups them by name, phase, innermost frame chain,
innermost range chain and op signature, each chain a seek per launch; Python decides each
distinct chain, signature and name once. A run without per-launch evidence (an nsys export
without layer ranges, a trace without --model) is attributed from ``kernel_groups`` alone,
without reading its kernels. The rows of one (name, phase) sum to that name's GEMM launches
and time in the phase exactly: every aggregate is of the same launches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, text

from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.layers import frames, markers
from tracekit.layers.counts import count_call, launch_histogram
from tracekit.layers.kernels import kernel_call
from tracekit.layers.model import CONFIDENCE, Call, decide
from tracekit.layers.modules import (
    decide_chain,
    frame_class,
    moe_mlp_classes,
)
from tracekit.layers.shapes import ShapeReading, Signature, read_signatures
from tracekit.store.counts import run_counts
from tracekit.store.schema import NVTX_RANGE_KINDS
from tracekit.store.sql import insert_rows, text_with_lists
from tracekit.vocabulary import GEMM_OPS

#: distinct details kept in one row's ``detail`` (the largest by time)
DETAILS_PER_ROW = 3

_GEMM_TIME = text_with_lists("""
SELECT g.name_id, g.phase, SUM(g.count) AS launches, SUM(g.total_ns) AS ns
FROM kernel_groups AS g
JOIN classifications AS c ON c.run_id = g.run_id AND c.name_id = g.name_id
WHERE g.run_id = :run_id AND c.op IN :gemm_ops
GROUP BY g.name_id, g.phase
""", gemm_ops=GEMM_OPS)

_GEMM_NAMES = text_with_lists("""
SELECT n.id, n.name, c.op, c.rule FROM classifications AS c
JOIN kernel_names AS n ON n.id = c.name_id
WHERE c.run_id = :run_id AND c.op IN :gemm_ops
""", gemm_ops=GEMM_OPS)


@dataclass(frozen=True)
class LaunchGroup:
    """GEMM launches of one name and phase that share their evidence."""

    name_id: int
    phase: str
    replay: bool
    module_chain: int | None
    nvtx_chain: int | None
    signature: Signature | None
    launches: int
    ns: int


@dataclass
class _Row:
    launches: int = 0
    ns: int = 0
    details: dict[str, int] = field(default_factory=dict)


def attribute_layers(connection: Connection, run_id: int, shape: ModelShape | None) -> int:
    """Rewrite the run's ``layer_times``; returns the number of rows written."""
    params = {"run_id": run_id}
    connection.execute(text("DELETE FROM layer_times WHERE run_id = :run_id"), params)
    totals = {(int(n), str(p)): (int(c), int(t or 0))
              for n, p, c, t in connection.execute(_GEMM_TIME, params)}
    if not totals:
        return 0
    evidence = _gather(connection, run_id, shape, totals)
    rows = _attribute(connection, run_id, shape, evidence)
    _check_sums(rows, totals)
    insert_rows(connection, "layer_times",
                ("run_id", "name_id", "phase", "layer", "source", "confidence", "launches",
                 "total_ns", "detail"),
                [(run_id, name_id, phase, layer, source,
                  CONFIDENCE[source] if layer != "unknown" else None, row.launches, row.ns,
                  _detail(row.details))
                 for (name_id, phase, layer, source), row in sorted(rows.items())])
    return len(rows)


@dataclass
class _Evidence:
    """What the run's launches have: their groups and the calls of their chains, signatures
    and names, and why a launch with nothing has nothing."""

    groups: list[LaunchGroup]
    own: dict[LaunchGroup, tuple[Call, ...]]
    kernel_calls: dict[int, Call | None]
    context: str


def _gather(connection: Connection, run_id: int, shape: ModelShape | None,
            totals: dict[tuple[int, str], tuple[int, int]]) -> _Evidence:
    """Nest the frames and ranges, group the launches by their evidence (one pass, or none
    when nothing per launch exists) and decide each distinct chain and signature."""
    names = {int(i): (str(name), op, rule)
             for i, name, op, rule in connection.execute(_GEMM_NAMES, {"run_id": run_id})}
    counts = run_counts(connection, run_id)
    frames.drop_tables(connection)
    frames.create_bounds(connection)
    try:
        module_calls = _module_calls(connection, run_id) if counts["module_frames"] else {}
        nvtx_calls = _nvtx_calls(connection, run_id) if counts["nvtx_ranges"] else {}
        with_shapes = shape is not None and counts["cpu_ops"] > 0
        if module_calls or nvtx_calls or with_shapes:
            frames.index_bounds(connection)
            groups = _launch_groups(connection, run_id, modules=bool(module_calls),
                                    ranges=bool(nvtx_calls), shapes=with_shapes)
        else:
            groups = [LaunchGroup(name_id, phase, False, None, None, None, launches, ns)
                      for (name_id, phase), (launches, ns) in totals.items()]
    finally:
        frames.drop_tables(connection)
        connection.execute(text("DROP TABLE IF EXISTS tk_layer_texts"))
    readings = (read_signatures({g.signature for g in groups if g.signature}, shape)
                if with_shapes and shape is not None else {})
    return _Evidence(
        groups=groups,
        own={group: _own_calls(group, module_calls, nvtx_calls, readings) for group in groups},
        kernel_calls={name_id: kernel_call(*names[name_id]) for name_id in names},
        context=_missing_evidence(counts, shape, bool(module_calls), bool(nvtx_calls)))


def _attribute(connection: Connection, run_id: int, shape: ModelShape | None,
               evidence: _Evidence) -> dict[tuple[int, str, str, str], _Row]:
    """Each launch group's call, strongest evidence first, summed per (name, phase, layer,
    source)."""
    own, kernel_calls = evidence.own, evidence.kernel_calls
    undecided = {g.name_id for g in evidence.groups
                 if not any(c.definite for c in own[g]) and kernel_calls.get(g.name_id) is None}
    layers = shape.num_hidden_layers if shape is not None else None
    # launch counts mean something only against num_hidden_layers (tracekit.layers.counts)
    histograms = (launch_histogram(connection, run_id, undecided)
                  if undecided and layers and layers > 1 else {})
    count_calls = {key: count_call(histogram, layers) for key, histogram in histograms.items()}
    inherited = _inheritance(evidence.groups, own)
    rows: dict[tuple[int, str, str, str], _Row] = defaultdict(_Row)
    for group in evidence.groups:
        calls = list(own[group])
        for extra in (kernel_calls.get(group.name_id),
                      count_calls.get((group.name_id, group.phase))):
            if extra is not None:
                calls.append(extra)
        if not own[group]:
            calls.append(_unowned(group, inherited.get(group.name_id), evidence.context))
        call = decide(calls)
        row = rows[(group.name_id, group.phase, call.layer or "unknown", call.source)]
        row.launches += group.launches
        row.ns += group.ns
        row.details[call.detail] = row.details.get(call.detail, 0) + group.ns
    return rows


# -- evidence per distinct chain ---------------------------------------------------------------

def _module_calls(connection: Connection, run_id: int) -> dict[int, Call]:
    """Module frames nested; each distinct class chain decided (chain id → call)."""
    texts = [str(t) for (t,) in connection.execute(text(
        "SELECT DISTINCT text FROM nvtx_ranges WHERE run_id = :run_id AND kind = 'module' "
        "AND text IS NOT NULL"), {"run_id": run_id})]
    classes = sorted({frame_class(t) for t in texts})
    class_id = {name: index for index, name in enumerate(classes)}
    _load_texts(connection, [(t, class_id[frame_class(t)]) for t in texts])
    chains = frames.add_source(connection, "module", """
        SELECT n.id AS id, n.global_tid AS tid, n.start_ns AS start_ns, n.end_ns AS end_ns,
               t.label AS label
        FROM nvtx_ranges AS n JOIN tk_layer_texts AS t ON t.text = n.text
        WHERE n.run_id = :run_id AND n.kind = 'module'""", {"run_id": run_id})
    named = [[classes[i] for i in frames.chain_labels(chain)] for chain in chains]
    moe_mlps = moe_mlp_classes(named)
    return {index: decide_chain(chain, moe_mlps, "module") for index, chain in enumerate(named)}


def _nvtx_calls(connection: Connection, run_id: int) -> dict[int, Call]:
    """Layer NVTX ranges (texts prefiltered in SQL, read once each) nested; each distinct
    chain decided by its innermost range."""
    patterns, exact = markers.like_patterns(), markers.exact_texts()
    clauses = [f"text LIKE :p{i}" for i in range(len(patterns))]
    if exact:
        clauses.append("text IN :exact")
    statement = text_with_lists(
        "SELECT DISTINCT text FROM nvtx_ranges WHERE run_id = :run_id AND kind IN :kinds "
        f"AND ({' OR '.join(clauses)})", kinds=NVTX_RANGE_KINDS,
        **({"exact": exact} if exact else {}))
    found = {}
    for (raw,) in connection.execute(statement, {"run_id": run_id, **{
            f"p{i}": p for i, p in enumerate(patterns)}}):
        label = markers.parse(str(raw))
        if label is not None:
            found[str(raw)] = label
    if not found:
        return {}
    labels = sorted(set(found.values()), key=lambda label: (label.kind, label.value))
    label_id = {label: index for index, label in enumerate(labels)}
    _load_texts(connection, [(t, label_id[label]) for t, label in found.items()])
    kinds = {f"k{i}": kind for i, kind in enumerate(NVTX_RANGE_KINDS)}
    chains = frames.add_source(connection, "nvtx", f"""
        SELECT n.id AS id, n.global_tid AS tid, n.start_ns AS start_ns, n.end_ns AS end_ns,
               t.label AS label
        FROM nvtx_ranges AS n JOIN tk_layer_texts AS t ON t.text = n.text
        WHERE n.run_id = :run_id AND n.kind IN ({', '.join(':' + k for k in kinds)})""",
        {"run_id": run_id, **kinds})
    resolved = [[labels[i] for i in frames.chain_labels(chain)] for chain in chains]
    class_chains = [[label.value for label in chain if label.kind == "class"]
                    for chain in resolved]
    moe_mlps = moe_mlp_classes(class_chains)
    calls = {}
    for index, (chain, classes) in enumerate(zip(resolved, class_chains, strict=True)):
        innermost = chain[-1]
        calls[index] = (markers.decide_path(innermost.value) if innermost.kind == "path"
                        else decide_chain(classes, moe_mlps, "nvtx"))
    return calls


def _load_texts(connection: Connection, rows: Sequence[tuple[str, int]]) -> None:
    connection.execute(text("DROP TABLE IF EXISTS tk_layer_texts"))
    connection.execute(text(
        "CREATE TEMPORARY TABLE tk_layer_texts (text TEXT PRIMARY KEY, label BIGINT)"))
    insert_rows(connection, "tk_layer_texts", ("text", "label"), rows)


# -- the one pass over the launches ------------------------------------------------------------

#: Keeps the per-launch subquery a subquery: flattened into the GROUP BY, SQLite would run
#: each chain seek twice per launch (once for the column, once for the grouping key).
_NOT_FLATTENED = {True: "LIMIT -1", False: "OFFSET 0"}


def _launch_groups(connection: Connection, run_id: int, *, modules: bool, ranges: bool,
                   shapes: bool) -> list[LaunchGroup]:
    """The run's GEMM launches grouped by name, phase, replay, innermost frame chain,
    innermost range chain and op signature (the columns a run lacks are constants)."""
    replay = "(k.graph_node_id IS NOT NULL OR k.graph_id IS NOT NULL)"
    tid = "COALESCE(k.global_tid, o.global_tid)" if shapes else "k.global_tid"
    at = "COALESCE(k.launch_start_ns, o.start_ns)" if shapes else "k.launch_start_ns"
    module = (f"CASE WHEN {replay} THEN NULL ELSE {frames.innermost_chain('module', tid, at)} "
              "END" if modules else "NULL")
    nvtx = (f"CASE WHEN {replay} THEN NULL ELSE {frames.innermost_chain('nvtx', tid, at)} END"
            if ranges else "NULL")
    op_columns = ("o.name AS op_name, o.input_types AS input_types, o.input_dims AS input_dims"
                  if shapes else "NULL AS op_name, NULL AS input_types, NULL AS input_dims")
    join_ops = "LEFT JOIN cpu_ops AS o ON o.id = k.cpu_op_id" if shapes else ""
    statement = text_with_lists(f"""
        SELECT s.name_id, s.phase, s.replay, s.module_chain, s.nvtx_chain, s.op_name,
               s.input_types, s.input_dims, COUNT(*) AS launches, SUM(s.ns) AS ns
        FROM (SELECT k.name_id AS name_id, COALESCE(k.phase, 'unattributed') AS phase,
                     CASE WHEN {replay} THEN 1 ELSE 0 END AS replay,
                     {module} AS module_chain, {nvtx} AS nvtx_chain, {op_columns},
                     k.end_ns - k.start_ns AS ns
              FROM kernels AS k CROSS JOIN classifications AS c {join_ops}
              WHERE k.run_id = :run_id AND c.run_id = k.run_id AND c.name_id = k.name_id
                AND c.op IN :gemm_ops {_NOT_FLATTENED[connection.dialect.name == "sqlite"]}
              ) AS s
        GROUP BY s.name_id, s.phase, s.replay, s.module_chain, s.nvtx_chain, s.op_name,
                 s.input_types, s.input_dims""", gemm_ops=GEMM_OPS)
    groups = []
    for row in connection.execute(statement, {"run_id": run_id}):
        (name_id, phase, is_replay, module_chain, nvtx_chain, op_name, types, dims,
         launches, ns) = row
        signature = Signature(str(op_name), types, dims) if op_name is not None else None
        groups.append(LaunchGroup(
            int(name_id), str(phase), bool(is_replay),
            None if module_chain is None else int(module_chain),
            None if nvtx_chain is None else int(nvtx_chain), signature, int(launches),
            int(ns or 0)))
    return groups


# -- deciding ----------------------------------------------------------------------------------

def _own_calls(group: LaunchGroup, module_calls: dict[int, Call], nvtx_calls: dict[int, Call],
               readings: dict[Signature, ShapeReading | None]) -> tuple[Call, ...]:
    """The per-launch evidence of a group: its frame chain, range chain and shape reading."""
    calls = []
    if group.module_chain is not None:
        calls.append(module_calls[group.module_chain])
    if group.nvtx_chain is not None:
        calls.append(nvtx_calls[group.nvtx_chain])
    if group.signature is not None:
        found = readings.get(group.signature)
        if found is not None:
            calls.append(Call(found.layer, "shapes", found.detail, ambiguous=found.ambiguous))
    return tuple(calls)


def _inheritance(groups: Iterable[LaunchGroup], own: dict[LaunchGroup, tuple[Call, ...]]
                 ) -> dict[int, Call]:
    """Per name: what its launches without evidence inherit from those with some — only when
    every launch of the name that has evidence of its own names the same group (a launch
    whose evidence is ambiguous or names no group could be what the others are)."""
    by_name: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    sources: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for group in groups:
        if not own[group]:
            continue
        chosen = next((call for call in own[group] if call.definite), None)
        layer = chosen.layer if chosen is not None and chosen.layer else "undecided"
        by_name[group.name_id][layer] += group.launches
        if chosen is not None:
            sources[group.name_id][layer].add(chosen.source)
    out = {}
    for name_id, layers in by_name.items():
        total = sum(layers.values())
        if len(layers) == 1 and "undecided" not in layers:
            (layer, launches), = layers.items()
            via = " and ".join(sorted(sources[name_id][layer]))
            out[name_id] = Call(layer, "inherited", f"inherited from the {launches} launches of "
                                f"the same kernel that {via} attributed to {layer}")
        else:
            shares = ", ".join(
                f"{'undecided' if layer == 'undecided' else layer} {100 * n / total:.0f}%"
                for layer, n in sorted(layers.items(), key=lambda item: (-item[1], item[0])))
            out[name_id] = Call(None, "inherited", f"the same kernel's launches with evidence "
                                f"are {shares}: which these were is not known", ambiguous=True)
    return out


def _unowned(group: LaunchGroup, inherited: Call | None, context: str) -> Call:
    """The call of a launch group with no evidence of its own: what it inherits, or why it
    has nothing."""
    why = ("a CUDA-graph replay (its launch is the graph's, not the node's)" if group.replay
           else context)
    if inherited is None:
        return Call(None, "none", why)
    if inherited.layer is not None:
        return Call(inherited.layer, "inherited", f"{why}: {inherited.detail}")
    return Call(None, "inherited", f"{why}; {inherited.detail}", ambiguous=True)


def _missing_evidence(counts: dict[str, int], shape: ModelShape | None, modules: bool,
                      ranges: bool) -> str:
    """Why a launch with nothing of its own has nothing: what the run lacks, and how to
    record it."""
    if modules or ranges:
        lacking = ["no module frame or layer range around its launch"]
    else:
        lacking = ["no nn.Module frames (torch.profiler with_stack=True)",
                   "no layer NVTX ranges (vLLM --enable-layerwise-nvtx-tracing, SGLang "
                   "--enable-layerwise-nvtx-marker)"]
    if counts["cpu_ops"] == 0:
        lacking.append("no framework ops with shapes (torch.profiler record_shapes=True)")
    elif shape is None:
        lacking.append("no model config to match its shapes against (--model)")
    else:
        lacking.append("no weight shape that tells")
    return "no evidence of the layer: " + ", ".join(lacking)


def _detail(details: dict[str, int]) -> str:
    ranked = sorted(details.items(), key=lambda item: (-item[1], item[0]))
    shown = [detail for detail, _ in ranked[:DETAILS_PER_ROW]]
    rest = len(ranked) - len(shown)
    return " | ".join(shown) + (f" | (+{rest} more)" if rest > 0 else "")


def _check_sums(rows: dict[tuple[int, str, str, str], _Row],
                totals: dict[tuple[int, str], tuple[int, int]]) -> None:
    """Every (name, phase)'s rows sum to its GEMM launches and time in ``kernel_groups``."""
    sums: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    for (name_id, phase, _, _), row in rows.items():
        sums[(name_id, phase)][0] += row.launches
        sums[(name_id, phase)][1] += row.ns
    got = {key: (value[0], value[1]) for key, value in sums.items()}
    assert got == totals, "layer_times do not sum to the GEMM time of kernel_groups"
