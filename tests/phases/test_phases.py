"""Phases: step markers → steps → kernels, checked against truth computed from the scenarios.

Every scenario is an nsys-schema SQLite file built by ``tracekit.synth.nsys``. The expected
per-phase GPU and GEMM time is summed from the scenario itself (kernel durations × counts ×
repeats of the steps whose marker text the test says is prefill/decode/mixed), never from the
code under test, and must match to the nanosecond.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.paths import REPO, shared_traces_dir
from tracekit.aggregate import refresh_kernel_groups
from tracekit.classifier import load_ruleset
from tracekit.classifier.stage import classify_run
from tracekit.ingest.pipeline import ingest
from tracekit.phases.heuristics import load_signals
from tracekit.phases.ingest_time import IngestTimeSteps
from tracekit.phases.markers import check_marker_examples, load_markers, parse_marker_file
from tracekit.phases.report import PhaseReport
from tracekit.phases.stage import attribute_phases
from tracekit.report.document import kernels, phase_attribution, phases
from tracekit.store.db import Store, open_store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

#: Real traces recorded by others; absent on a fresh clone (those tests then skip).
TRACES = shared_traces_dir() or REPO.parent / "shared" / "traces"

# name → (op, path): what the classifier would have said; the test writes it, so the truth
# does not depend on the classifier.
OPS: dict[str, tuple[str, str]] = {
    "nvjet_tst_128x64_64x4_1x2_h_bz_TNN": ("gemm", "bf16"),
    "sm90_xmma_gemm_e4m3e4m3_bf16f32_f32_tn_n_tilesize128x128x128_cublas": ("gemm", "fp8"),
    "void marlin::Marlin<256, 1, 8, 8, 4, 8>(const int4 *)": ("gemm", "weight_only"),
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(flash::Flash_fwd_params)":
        ("attention", "bf16"),
    "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16 *)": ("other", "unknown"),
    "void mul_mat_q<(ggml_type)12, 128, false>(const char *, const int *)": ("gemm", "int8"),
    "void mul_mat_vec_q<(ggml_type)12, 1, false>(const void *, const void *)": ("gemv", "int8"),
    "void flash_attn_ext_f16<128, 128, 64, 2, false, false>(const char *)": ("attention", "fp16"),
    "void flash_attn_ext_vec<128, 1, (ggml_type)1, (ggml_type)1, false>(const char *)":
        ("attention", "fp16"),
    "void rms_norm_f32<1024>(const float *, float *)": ("other", "unknown"),
}
BF16, FP8, MARLIN, ATTN, NORM = list(OPS)[:5]
MMQ, MMVQ, FA_MMA, FA_VEC, LNORM = list(OPS)[5:]
GEMM_OPS = {"gemm", "grouped_gemm", "gemv"}
PHASES = ("prefill", "decode", "mixed", "unattributed")


def forward(scale: int) -> list[KernelSpec]:
    """One model forward: GEMMs, attention and norms, durations growing with token count."""
    return [
        KernelSpec(NORM, 900),
        KernelSpec(BF16, 3_000 * scale, count=2),
        KernelSpec(ATTN, 2_500 * scale),
        KernelSpec(FP8, 4_000 * scale, count=3),
        KernelSpec(MARLIN, 1_700 * scale),
    ]


# --- helpers -----------------------------------------------------------------------------

def new_store(tmp_path: Path) -> Store:
    return open_store(str(tmp_path / "store.db"))


@pytest.fixture
def store_of(store_url: str) -> Iterator[Callable[[], Store]]:
    """A factory of stores on one database (SQLite, then PostgreSQL: ``store_url``), for tests
    that open it again the way a second command would."""
    opened: list[Store] = []

    def factory() -> Store:
        opened.append(open_store(store_url))
        return opened[-1]

    yield factory
    for store in opened:
        store.dispose()


#: What the ingest did toward phases, per (store, run) ingested in "ingest" mode; analyze()
#: hands it to the stage, which completes the work.
INGEST_STEPS: dict[tuple[int, int], IngestTimeSteps] = {}


@pytest.fixture(autouse=True, params=["stage", "ingest"])
def attribution(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every scenario twice: attributed by the stage's UPDATE, and while ingest copies kernels
    (what `tracekit analyze` does). Both must give the same truth."""
    yield request.param


def build_and_ingest(tmp_path: Path, scenario: Scenario, name: str = "trace.sqlite",
                     edit: Any = None, store_of: Callable[[], Store] | None = None,
                     ) -> tuple[Store, int]:
    path = write_scenario(scenario, tmp_path / name)
    if edit is not None:
        connection = sqlite3.connect(path)
        with connection:
            edit(connection)
        connection.close()
    store = store_of() if store_of is not None else new_store(tmp_path)
    at_ingest = MODE["attribution"] == "ingest"
    steps = IngestTimeSteps() if at_ingest else None
    result = ingest(store, [path], step_attribution=steps)
    if steps is not None:
        INGEST_STEPS[(id(store), result.run_id)] = steps
    return store, result.run_id


MODE = {"attribution": "stage"}


@pytest.fixture(autouse=True)
def _record_mode(attribution: str) -> Iterator[None]:
    MODE["attribution"] = attribution
    yield
    MODE["attribution"] = "stage"


def classify(connection: Any, run_id: int) -> None:
    """Stand-in for the classifier: one classifications row per kernel name, from OPS."""
    for name_id, name in connection.execute(text(
            "SELECT id, name FROM kernel_names WHERE run_id = :r"), {"r": run_id}).all():
        op, path = OPS.get(name, ("other", "unknown"))
        connection.execute(text(
            "INSERT INTO classifications (run_id, name_id, op, path) VALUES (:r, :n, :op, :p)"),
            {"r": run_id, "n": name_id, "op": op, "p": path})


def analyze(store: Store, run_id: int) -> tuple[PhaseReport, dict[str, Any], dict[str, Any]]:
    with store.begin() as connection:
        if not connection.execute(text("SELECT 1 FROM classifications WHERE run_id = :r"),
                                  {"r": run_id}).first():
            classify(connection, run_id)
        # a second analyze of the same run re-runs it all
        steps = INGEST_STEPS.pop((id(store), run_id), None)
        report = attribute_phases(connection, run_id, ingest=steps)
        refresh_kernel_groups(connection, run_id)  # the document reads per-phase groups
        table = phases(connection, run_id, kernels(connection, run_id))
        how = phase_attribution(connection, run_id, table)
    return report, table, how


def truth(scenario: Scenario, phase_of: Mapping[str, str] | Callable[[StepSpec], str]
          ) -> dict[str, dict[str, Any]]:
    """Per phase GPU ns, GEMM ns and GEMM ns by path, from the scenario alone.

    ``phase_of`` maps a step's marker text (or the step itself) to its true phase.
    """
    if not callable(phase_of):
        texts = phase_of
        phase_of = lambda step: texts.get(step.text or "", "unattributed")  # noqa: E731
    result: dict[str, dict[str, Any]] = {
        phase: {"gpu_ns": 0, "gemm_ns": 0, "by_path": defaultdict(int)} for phase in PHASES}
    for rank in scenario.ranks:
        for step in rank.steps:
            phase = phase_of(step)
            for kernel in step.kernels:
                ns = kernel.duration_ns * kernel.count * step.repeat
                result[phase]["gpu_ns"] += ns
                op, path = OPS.get(kernel.name, ("other", "unknown"))
                if op in GEMM_OPS:
                    result[phase]["gemm_ns"] += ns
                    result[phase]["by_path"][path] += ns
    return result


def assert_matches_truth(table: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    for phase in PHASES:
        got = table[phase]
        want = expected[phase]
        assert got["gpu_ns"] == want["gpu_ns"], phase
        assert got["gemm_ns"] == want["gemm_ns"], phase
        assert got["gemm_ns_by_path"] == dict(want["by_path"]), phase


def step_counts(store: Store, run_id: int) -> dict[tuple[str, str], int]:
    with store.connect() as connection:
        return {(phase, source): int(count) for phase, source, count in connection.execute(text(
            "SELECT phase, source, COUNT(*) FROM steps WHERE run_id = :r GROUP BY phase, source"),
            {"r": run_id})}


# --- marker rules ------------------------------------------------------------------------

def test_marker_examples_hold() -> None:
    assert check_marker_examples(load_markers()) == []


def test_every_marker_example_passes_its_sql_prefilter() -> None:
    markers = load_markers()
    connection = sqlite3.connect(":memory:")
    for marker in markers.markers:
        for example in marker.matches:
            assert any(connection.execute("SELECT ? LIKE ?", (example.text, like)).fetchone()[0]
                       for like in marker.prefilter), (marker.id, example.text)


def test_marker_file_is_strict() -> None:
    from tracekit.errors import RuleFileError

    with pytest.raises(RuleFileError, match="unknown keys"):
        parse_marker_file('[[marker]]\nid="x"\nengine="e"\nprefilter="x%"\npattern="x"\n'
                          'cite="c"\ncolour="red"\n')
    with pytest.raises(RuleFileError, match="bad regex"):
        parse_marker_file('[[marker]]\nid="x"\nengine="e"\nprefilter="x%"\npattern="("\n'
                          'cite="c"\n')


def test_a_broken_example_is_reported() -> None:
    markers = parse_marker_file(
        '[[marker]]\nid="x"\nengine="e"\nprefilter="x%"\ncite="c"\n'
        "pattern='x(?P<prefill_tokens>\\d+)'\nno_match=['x1']\n"
        '[[marker.match]]\ntext="x5"\nphase="decode"\n')
    problems = check_marker_examples(markers)
    assert any("phase='prefill'" in p for p in problems)
    assert any("must not match" in p for p in problems)


def test_aten_ranges_are_not_markers() -> None:
    markers = load_markers()
    for name in ("aten::mm, op_id = 12", "aten::linear", "ProfilerStep#3",
                 "execute_new_1_cached_0", "nccl:_all_gather_base", "step",
                 "gpu_model_runner: forward"):
        assert markers.parse(name) is None, name


def test_heuristic_signal_examples_hold() -> None:
    signals = load_signals()
    for signal in signals.signals:
        for example in signal.examples:
            found = signals.match(example)
            assert found is not None and found.id == signal.id, (signal.id, example)
        for example in signal.counter_examples:
            found = signals.match(example)
            assert found is None or found.id != signal.id, (signal.id, example)


@pytest.mark.parametrize("op, dims, phase", [
    ("aten::addmm", "[[640], [888, 2880], [2880, 640], [], []]", None),  # 888: in between
    ("aten::addmm", "[[640], [4096, 2880], [2880, 640], [], []]", "prefill"),
    ("aten::linear", "[[2, 512, 2880], [640, 2880], [640]]", "prefill"),  # M = 2 × 512
    ("aten::mm", "[[8, 4096], [4096, 4096]]", "decode"),
    ("aten::mm", "[[1, 4096], [4096, 4096]]", "decode"),
    ("aten::bmm", "[[1, 4096, 64], [1, 64, 4096]]", None),  # not a listed op
    ("aten::mm", "not json", None),
    ("aten::mm", "[[4096]]", None),
])
def test_gemm_token_bounds(op: str, dims: str, phase: str | None) -> None:
    assert load_signals().gemm_tokens.phase(op, dims) == phase


# --- engine-style scenarios --------------------------------------------------------------

VLLM_PREFILL = "execute_context_2(1024)_generation_0(0)"
VLLM_DECODE = "execute_context_0(0)_generation_8(8)"
VLLM_MIXED = "execute_context_1(300)_generation_7(7)"
VLLM_IDLE = "execute_context_0(0)_generation_0(0)"


def vllm_rank(pid: int, device: int = 0) -> RankSpec:
    return RankSpec(pid=pid, device=device, steps=[
        StepSpec(text=None, kernels=[KernelSpec(BF16, 1_111)]),          # warm-up, outside
        StepSpec(text=VLLM_PREFILL, kernels=forward(8)),
        StepSpec(text=VLLM_DECODE, kernels=forward(1), graph=True, repeat=5),
        StepSpec(text=VLLM_MIXED, kernels=forward(3)),
        StepSpec(text=VLLM_IDLE, kernels=[KernelSpec(NORM, 333)]),
        StepSpec(text=VLLM_DECODE, kernels=forward(1), graph=True, repeat=3),
        StepSpec(text=None, kernels=[KernelSpec(FP8, 2_222, count=2)]),   # outside any step
    ])


VLLM_PHASES = {VLLM_PREFILL: "prefill", VLLM_DECODE: "decode", VLLM_MIXED: "mixed"}


def test_vllm_markers_with_cuda_graph_decode(tmp_path: Path, store_of: Callable[[], Store]) -> None:
    scenario = Scenario(ranks=[vllm_rank(4242)])
    store, run_id = build_and_ingest(tmp_path, scenario, store_of=store_of)
    report, table, how = analyze(store, run_id)
    assert report.method == "marker" and report.engines == ["vllm"]
    assert report.idle_markers == 1
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))
    assert step_counts(store, run_id) == {("prefill", "marker"): 1, ("decode", "marker"): 8,
                                          ("mixed", "marker"): 1}
    assert table["prefill"]["prefill_tokens"] == 1024
    assert table["decode"]["decode_tokens"] == 64
    assert (table["mixed"]["prefill_tokens"], table["mixed"]["decode_tokens"]) == (300, 7)
    assert table["decode"]["source"] == "marker"
    assert how["method"] == "marker"
    with store.connect() as connection:
        graph_kernels = connection.execute(text(
            "SELECT COUNT(*), COUNT(DISTINCT phase), MIN(phase) FROM kernels "
            "WHERE run_id = :r AND graph_node_id IS NOT NULL"), {"r": run_id}).one()
        # every replayed node kernel is attributed, through its cudaGraphLaunch
        assert graph_kernels == (8 * 8, 1, "decode")
        spans = connection.execute(text(
            "SELECT COUNT(*) FROM steps WHERE run_id = :r AND (gpu_start_ns IS NULL "
            "OR gpu_start_ns < start_ns OR gpu_end_ns <= gpu_start_ns)"), {"r": run_id}).scalar()
        assert spans == 0


def test_rerun_rewrites_instead_of_appending(tmp_path: Path, store_of: Callable[[], Store]) -> None:
    scenario = Scenario(ranks=[vllm_rank(4242)])
    store, run_id = build_and_ingest(tmp_path, scenario, store_of=store_of)
    analyze(store, run_id)
    first = step_counts(store, run_id)
    report, table, _ = analyze(store, run_id)
    assert step_counts(store, run_id) == first
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))


def test_two_tensor_parallel_ranks(tmp_path: Path, store_of: Callable[[], Store]) -> None:
    scenario = Scenario(ranks=[vllm_rank(5000, device=0), vllm_rank(5001, device=1)])
    store, run_id = build_and_ingest(tmp_path, scenario, store_of=store_of)
    _, table, _ = analyze(store, run_id)
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))
    assert step_counts(store, run_id)[("decode", "marker")] == 16
    assert table["decode"]["ranks"] == 2
    with store.connect() as connection:
        # a kernel belongs to a step of its own process
        crossed = connection.execute(text(
            "SELECT COUNT(*) FROM kernels k JOIN steps s ON s.id = k.step_id "
            "WHERE k.run_id = :r AND s.global_pid <> k.global_pid"), {"r": run_id}).scalar()
        assert crossed == 0


SGLANG = {
    "step[EXTEND bs=4 toks=2048]": "prefill",
    "step[DECODE bs=32]": "decode",
    "step[MIXED bs=5 c=1 g=4 c_sq=500 c_sk=500 c_sqsq=250000 c_sqsk=250000 g_sq=4 g_sk=4000 "
    "g_sqsq=4 g_sqsk=4000]": "mixed",
}


def test_sglang_markers(tmp_path: Path) -> None:
    extend, decode, mixed = SGLANG
    scenario = Scenario(ranks=[RankSpec(pid=77, thread_name="sglang::scheduler_TP0", steps=[
        StepSpec(text=extend, kernels=forward(6)),
        StepSpec(text=decode, kernels=forward(1), graph=True, repeat=4),
        StepSpec(text="step[IDLE bs=0]", kernels=[KernelSpec(NORM, 10)]),
        StepSpec(text=mixed, kernels=forward(2)),
    ])])
    store, run_id = build_and_ingest(tmp_path, scenario)
    report, table, _ = analyze(store, run_id)
    assert report.engines == ["sglang"]
    assert_matches_truth(table, truth(scenario, SGLANG))
    assert table["decode"]["decode_tokens"] == 4 * 32
    assert (table["mixed"]["prefill_tokens"], table["mixed"]["decode_tokens"]) == (500, 4)


TRTLLM = {
    "[Executor] _forward_step 100: 3 ctx reqs, 0 gen reqs": "prefill",
    "[Executor] _forward_step 101: 0 ctx reqs, 3 gen reqs": "decode",
    "[Executor] _forward_step 102: 1 ctx reqs, 3 gen reqs": "mixed",
}


def test_trtllm_markers_in_a_domain(tmp_path: Path) -> None:
    prefill, decode, mixed = TRTLLM
    scenario = Scenario(ranks=[RankSpec(pid=31, nvtx_domains=["TRT-LLM"], steps=[
        StepSpec(text=prefill, kernels=forward(5), domain="TRT-LLM"),
        StepSpec(text=decode, kernels=forward(1), graph=True, domain="TRT-LLM"),
        StepSpec(text=mixed, kernels=forward(2), domain="TRT-LLM"),
        StepSpec(text="[Executor] _prepare_inputs", kernels=[KernelSpec(BF16, 999)]),
    ])])
    store, run_id = build_and_ingest(tmp_path, scenario)
    report, table, _ = analyze(store, run_id)
    assert report.engines == ["trtllm"]
    assert_matches_truth(table, truth(scenario, TRTLLM))
    assert table["prefill"]["steps"] == 1 and table["prefill"]["source"] == "marker"


def test_tracekit_marks_nested_around_engine_steps_count_once(
        tmp_path: Path, store_of: Callable[[], Store]) -> None:
    from tracekit.mark import step_text

    outer = step_text(prefill_tokens=1024, prefill_requests=2)
    scenario = Scenario(ranks=[vllm_rank(4242)])

    def wrap_prefill(connection: sqlite3.Connection) -> None:
        start, end, tid = connection.execute(
            "SELECT start, end, globalTid FROM NVTX_EVENTS WHERE text = ?",
            (VLLM_PREFILL,)).fetchone()
        connection.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
            "VALUES (?, ?, 59, ?, ?, 0)", (start - 10, end + 10, outer, tid))

    store, run_id = build_and_ingest(tmp_path, scenario, edit=wrap_prefill, store_of=store_of)
    report, table, _ = analyze(store, run_id)
    assert report.nested_dropped == 1
    assert table["prefill"]["steps"] == 1
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))


def test_a_marker_on_another_thread_does_not_claim_kernels(tmp_path: Path) -> None:
    scenario = Scenario(ranks=[vllm_rank(4242)])

    def foreign_range(connection: sqlite3.Connection) -> None:
        lo, hi = connection.execute("SELECT MIN(start), MAX(end) FROM NVTX_EVENTS").fetchone()
        connection.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
            "VALUES (?, ?, 59, ?, ?, 0)",
            (lo - 5_000_000, hi + 5_000_000, VLLM_DECODE, (4242 << 24) | 9999))

    store, run_id = build_and_ingest(tmp_path, scenario, edit=foreign_range)
    _, table, _ = analyze(store, run_id)
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))


def test_gpu_side_copies_of_annotations_are_not_steps(tmp_path: Path) -> None:
    """Torch traces repeat each user_annotation as a gpu_user_annotation (kind gpu_range)."""
    scenario = Scenario(ranks=[vllm_rank(4242)])
    store, run_id = build_and_ingest(tmp_path, scenario)
    with store.begin() as connection:
        connection.execute(text(
            "INSERT INTO nvtx_ranges (run_id, kind, start_ns, end_ns, text, global_tid, "
            "global_pid) SELECT run_id, 'gpu_range', start_ns + 20000, end_ns + 20000, text, "
            "-7, global_pid FROM nvtx_ranges WHERE run_id = :r"), {"r": run_id})
    _, table, _ = analyze(store, run_id)
    assert table["decode"]["steps"] == 8
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))


def test_kernels_without_launch_record_fall_back_to_gpu_time(tmp_path: Path,
                                                             store_of: Callable[[], Store]) -> None:
    """A trace cut mid-step loses launch records; GPU time inside a step's span still counts."""
    scenario = Scenario(ranks=[vllm_rank(4242)])

    def drop_some_launches(connection: sqlite3.Connection) -> None:
        # the attention kernel of every eager step loses its cudaLaunchKernel row
        connection.execute("""
            DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN (
              SELECT k.correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL k
              JOIN StringIds s ON s.id = k.demangledName
              WHERE s.value = ? AND k.graphNodeId IS NULL)""", (ATTN,))

    store, run_id = build_and_ingest(tmp_path, scenario, edit=drop_some_launches,
                                     store_of=store_of)
    report, table, _ = analyze(store, run_id)
    assert report.kernels_by_gpu_time == 2
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))


def test_open_range_runs_to_the_end_of_the_capture(tmp_path: Path) -> None:
    scenario = Scenario(ranks=[RankSpec(pid=9, steps=[
        StepSpec(text=VLLM_PREFILL, kernels=forward(2))])])

    def leave_open(connection: sqlite3.Connection) -> None:
        connection.execute("UPDATE NVTX_EVENTS SET end = NULL")

    store, run_id = build_and_ingest(tmp_path, scenario, edit=leave_open)
    _, table, _ = analyze(store, run_id)
    assert_matches_truth(table, truth(scenario, VLLM_PHASES))


# --- no markers --------------------------------------------------------------------------

def llamacpp_rank() -> RankSpec:
    prompt = [KernelSpec(LNORM, 800), KernelSpec(MMQ, 9_000, count=3), KernelSpec(FA_MMA, 6_000),
              KernelSpec(MMQ, 12_000, count=2)]
    token = [KernelSpec(LNORM, 800), KernelSpec(MMVQ, 1_500, count=3), KernelSpec(FA_VEC, 900),
             KernelSpec(MMVQ, 2_000, count=2)]
    return RankSpec(pid=12, process_name="llama-bench", thread_name="llama-bench", steps=[
        StepSpec(text="llama_prompt", kernels=prompt * 4),
        StepSpec(text="llama_token", kernels=token * 4, graph=True, repeat=6),
        StepSpec(text="llama_prompt", kernels=prompt * 4),
        StepSpec(text="llama_token", kernels=token * 4, graph=True, repeat=3),
    ])


def test_marker_free_llamacpp_run_is_labelled_heuristic(tmp_path: Path,
                                                        store_of: Callable[[], Store]) -> None:
    rank = llamacpp_rank()
    real = {id(step): "prefill" if step.text == "llama_prompt" else "decode"
            for step in rank.steps}
    for step in rank.steps:
        step.text = None  # llama.cpp emits no ranges at all
    scenario = Scenario(ranks=[rank])
    store, run_id = build_and_ingest(tmp_path, scenario, store_of=store_of)
    report, table, how = analyze(store, run_id)
    assert report.method == "heuristic" and "no step markers" in report.message
    assert set(report.signals) == {"llamacpp-mmq", "llamacpp-mmvq", "llamacpp-fattn-mma",
                                   "llamacpp-fattn-vec"}
    assert_matches_truth(table, truth(scenario, lambda step: real[id(step)]))
    # one step per prompt run, one per graph replay (a token)
    assert step_counts(store, run_id) == {("prefill", "heuristic"): 2,
                                          ("decode", "heuristic"): 6 + 3}
    assert table["decode"]["source"] == "heuristic" and how["method"] == "heuristic"
    assert table["prefill"]["prefill_tokens"] == 0  # a heuristic knows no token counts


def test_gemm_token_counts_from_op_shapes_are_a_heuristic_signal(tmp_path: Path) -> None:
    """A torch trace with record_shapes: aten::addmm's M says decode (4) or prefill (2048)."""
    rank = RankSpec(pid=21, steps=[
        StepSpec(text=None, kernels=forward(8)),
        StepSpec(text=None, kernels=forward(1), graph=True, repeat=3),
        StepSpec(text=None, kernels=forward(8)),
        StepSpec(text=None, kernels=forward(1), graph=True, repeat=2),
    ])
    real = {id(step): "decode" if step.graph else "prefill" for step in rank.steps}
    scenario = Scenario(ranks=[rank])
    store, run_id = build_and_ingest(tmp_path, scenario)
    shapes = {1: "[[2880], [2048, 2880], [2880, 640], [], []]",
              2: "[[2880], [4, 2880], [2880, 640], [], []]",
              3: "[[2880], [64, 2880], [2880, 640], [], []]"}  # middle: no signal
    with store.begin() as connection:
        bf16 = connection.execute(text("SELECT id FROM kernel_names WHERE run_id = :r AND "
                                       "name = :n"), {"r": run_id, "n": BF16}).scalar()
        for external_id, duration in ((1, 3_000 * 8), (2, 3_000)):
            connection.execute(text(
                "UPDATE kernels SET external_id = :e WHERE run_id = :r AND name_id = :n "
                "AND end_ns - start_ns = :d"), {"e": external_id, "r": run_id, "n": bf16,
                                                "d": duration})
        connection.execute(text(
            "UPDATE kernels SET external_id = 3 WHERE run_id = :r AND external_id IS NULL"),
            {"r": run_id})
        for external_id, dims in shapes.items():
            connection.execute(text(
                "INSERT INTO cpu_ops (run_id, name, start_ns, end_ns, external_id, input_dims) "
                "VALUES (:r, 'aten::addmm', 0, 0, :e, :d)"), {"r": run_id, "e": external_id,
                                                               "d": dims})
        # What a torch trace's ingest resolves: each kernel points at its op.
        connection.execute(text(
            "UPDATE kernels SET cpu_op_id = (SELECT o.id FROM cpu_ops o WHERE o.run_id = :r "
            "AND o.external_id = kernels.external_id) WHERE run_id = :r"), {"r": run_id})
    report, table, _ = analyze(store, run_id)
    assert report.method == "heuristic" and report.signals == {"gemm-tokens": 2}
    assert_matches_truth(table, truth(scenario, lambda step: real[id(step)]))


def test_ranges_that_are_not_markers_give_no_phases(tmp_path: Path) -> None:
    """aten ranges (emit_nvtx) and unknown ranges: no steps, and the report says why."""
    scenario = Scenario(ranks=[RankSpec(pid=3, steps=[
        StepSpec(text="aten::mm, op_id = 1", kernels=forward(2)),
        StepSpec(text="aten::linear, op_id = 2", kernels=forward(1)),
    ])])
    store, run_id = build_and_ingest(tmp_path, scenario)
    report, table, how = analyze(store, run_id)
    assert report.method == "none"
    assert "no step markers (2 ranges" in report.message
    assert step_counts(store, run_id) == {}
    assert how["method"] == "none" and "nothing could be attributed" in how["message"]
    assert table["unattributed"]["gpu_ns"] == truth(scenario, {})["unattributed"]["gpu_ns"]


def test_flashinfer_batch_prefill_alone_is_no_signal(tmp_path: Path) -> None:
    """vLLM's FlashInfer decode runs BatchPrefill kernels: alone, they prove nothing."""
    prefill_kernel = "void flashinfer::BatchPrefillWithPagedKVCacheKernel<128>(Params)"
    scenario = Scenario(ranks=[RankSpec(pid=3, steps=[
        StepSpec(text=None, kernels=[KernelSpec(prefill_kernel, 100), KernelSpec(BF16, 200)],
                 graph=True, repeat=3)])])
    store, run_id = build_and_ingest(tmp_path, scenario)
    report, _, _ = analyze(store, run_id)
    assert report.method == "none"


# --- real traces -------------------------------------------------------------------------

NSYS_AI = sorted((TRACES / "nsys-ai").glob("*.sqlite")) if (TRACES / "nsys-ai").is_dir() else []


@pytest.mark.parametrize("path", NSYS_AI, ids=[p.name for p in NSYS_AI])
def test_real_nsys_traces_without_engine_markers(tmp_path: Path, path: Path) -> None:
    store = new_store(tmp_path)
    run_id = ingest(store, [path]).run_id
    report, table, how = analyze(store, run_id)
    assert report.method in ("none", "heuristic")
    assert "no step markers" in report.message
    assert ("prefill", "marker") not in step_counts(store, run_id)
    with store.connect() as connection:
        assert connection.execute(text(
            "SELECT COUNT(*) FROM steps WHERE run_id = :r AND source = 'marker'"),
            {"r": run_id}).scalar() == 0
    total = sum(table[p]["gpu_ns"] for p in PHASES)
    assert total > 0


def test_real_b200_vllm_torch_trace(tmp_path: Path) -> None:
    path = TRACES / "tracelens" / "b200__eager_trace.json.gz"
    if not path.exists():
        pytest.skip("real traces absent")
    store = new_store(tmp_path)
    run_id = ingest(store, [path]).run_id
    with store.begin() as connection:  # the real classifier: GEMM time splits by real paths
        classify_run(connection, run_id, load_ruleset(()))
    report, table, how = analyze(store, run_id)
    assert report.method == "marker" and report.engines == ["vllm"]
    # execute_context_1(888_788544)_generation_0(0): one prefill step of 888 tokens
    assert table["prefill"]["steps"] == 1 and table["prefill"]["prefill_tokens"] == 888
    assert table["prefill"]["gpu_ns"] > 0 and table["unattributed"]["gpu_ns"] == 0
    assert sum(table["prefill"]["gemm_ns_by_path"].values()) == table["prefill"]["gemm_ns"]
    assert table["decode"]["steps"] == 0 and table["mixed"]["steps"] == 0
    assert how["method"] == "marker" and how["attributed_share"] == 1.0
