"""Ground truth from a real GPU: every matrix kernel of fixtures/h200 gets the path it computed.

fixtures/h200/gemms.py runs each variant (bf16, fp16, fp32, tf32, fp64, FP8, INT8, INT4
weight-only, attention backends) inside its own ``tracekit.mark.step`` whose label names it,
so the datatype path of every GEMM and attention kernel in a step is known by construction.
The torch trace carries op types too; the CUPTI records only names: both must agree with
the truth, and an answer the visible evidence cannot support must be ``unknown``.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import paths
from tests.support.helpers import query
from tracekit.analysis import AnalysisOptions, analyze
from tracekit.store import open_store

FIXTURES = paths.H200_FIXTURES

#: step label (after "prefill "/"decode ") -> the path its matrix kernels compute
TRUTH = {
    "bf16 linear": "bf16",
    "bf16 linear+bias": "bf16",
    "bf16 bmm": "bf16",
    "fp16 linear": "fp16",
    "fp32 linear": "fp32",
    "tf32 linear": "tf32",
    "fp64 linear": "fp64",
    "fp8 scaled_mm tensorwise": "fp8",
    "fp8 scaled_mm rowwise": "fp8",
    "int8 _int_mm": "int8",
    "int4 weight-only": "weight_only",
    "bf16 attention flash": "bf16",
    "fp16 attention flash": "fp16",
    "bf16 attention efficient": "bf16",
    # cuDNN's generated SDPA kernel has one name (…_f16_…) for BF16 and FP16: unknown is right.
    "bf16 attention": "unknown",
    "fp16 attention cudnn": "unknown",
}
_LABEL = re.compile(r"label=(?:prefill|decode) (.+)\]$")


def analyzed(fixture: str, store_path: Path) -> Path:
    store = open_store(str(store_path))
    try:
        analyze(store, [FIXTURES / fixture], AnalysisOptions())
    finally:
        store.dispose()
    return store_path


def test_every_matrix_kernel_gets_the_path_it_computed(tmp_path: Path) -> None:
    store = analyzed("torch-trace.pt.trace.json.gz", tmp_path / "s.db")
    rows = query(store, """
        SELECT s.text, n.name, c.path FROM kernels k
        JOIN steps s ON s.id = k.step_id
        JOIN kernel_names n ON n.id = k.name_id
        JOIN classifications c ON c.run_id = k.run_id AND c.name_id = k.name_id
        WHERE c.op IN ('gemm', 'grouped_gemm', 'gemv', 'attention')
        GROUP BY s.text, n.name, c.path""")
    seen: set[str] = set()
    wrong = []
    for step_text, name, path in rows:
        match = _LABEL.search(step_text)
        assert match, step_text
        label = match.group(1)
        seen.add(label)
        if path != TRUTH[label]:
            wrong.append(f"{label}: {path} (want {TRUTH[label]}) for {name[:90]}")
    assert wrong == []
    assert seen == set(TRUTH)  # every variant ran and was attributed to its step


def test_names_alone_say_the_same_or_abstain(tmp_path: Path) -> None:
    """The CUPTI records of the same program carry names only (no op types, no step labels):
    each matrix kernel gets the torch run's answer where the name decided it there, and
    ``unknown`` where it took the op's types."""
    torch_store = analyzed("torch-trace.pt.trace.json.gz", tmp_path / "t.db")
    cupti_store = analyzed("cupti.jsonl.gz", tmp_path / "c.db")
    sql = """SELECT n.name, c.path, c.evidence FROM classifications c
             JOIN kernel_names n ON n.id = c.name_id
             WHERE c.op IN ('gemm', 'grouped_gemm', 'gemv', 'attention')"""
    by_torch = {name: (path, evidence) for name, path, evidence in query(torch_store, sql)}
    by_names = {name: path for name, path, _ in query(cupti_store, sql)}
    assert by_names.keys() <= by_torch.keys() and len(by_names) >= 20
    for name, path in by_names.items():
        torch_path, evidence = by_torch[name]
        assert path == (torch_path if evidence == "name" else "unknown"), name


def test_a_helper_kernel_beside_the_gemm_is_not_called_a_gemm(tmp_path: Path) -> None:
    """cuBLAS's scal_kernel (C = beta·C) runs under aten::mm next to the FP32 GEMM: the op's
    types describe the GEMM, not it."""
    store = analyzed("torch-trace.pt.trace.json.gz", tmp_path / "s.db")
    ((op, path, reason),) = query(store, """
        SELECT c.op, c.path, c.reason FROM classifications c
        JOIN kernel_names n ON n.id = c.name_id WHERE n.name LIKE 'void scal_kernel%'""")
    assert (op, path) == ("other", "unknown")
    assert "together with other kernels" in reason
