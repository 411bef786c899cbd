"""Demangling: the C++ runtime's demangler first, binutils' c++filt for what it cannot read.

The CK and aiter names are real (tests/corpus/amd.jsonl cites where each was seen); ``DF16b``
is the Itanium code of ``std::bfloat16_t``, which the libstdc++ of GCC 12 and older misreads.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from tests.support import paths
from tracekit.classifier import classify_name, classify_names, load_ruleset
from tracekit.classifier import demangle as demangle_module
from tracekit.classifier.demangle import (
    binutils_available,
    clear_cache,
    demangle,
    demangle_all,
    runtime_demangles,
)
from tracekit.classifier.names import prepare

RULESET = load_ruleset(use_env=False)
AMD = paths.CORPUS / "amd.jsonl"
#: real Composable Kernel / CK-tile / aiter names whose template arguments include DF16b
DF16B_NAMES = [
    json.loads(line)["name"]
    for line in AMD.read_text(encoding="utf-8").splitlines()
    if "DF16b" in line and "..." not in json.loads(line)["name"]
]
needs_binutils = pytest.mark.skipif(not binutils_available(), reason="no c++filt on PATH")


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def count_binutils_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the c++filt processes started (each records how many names it was given)."""
    runs: list[int] = []
    real_run = subprocess.run

    def counting_run(command, *args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(len(kwargs.get("input", "").splitlines()))
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(demangle_module.subprocess, "run", counting_run)
    return runs


def test_the_corpus_has_df16b_names():
    assert len(DF16B_NAMES) >= 5


def test_a_misread_bfloat16_is_never_taken_for_text():
    # GCC <= 12's libstdc++ prints "f(bool _Accum)" for this; binutils prints the real type
    assert demangle("_Z1fDF16b") in (None, "f(std::bfloat16_t)")
    if runtime_demangles("_Z1fDF16b"):  # a libstdc++ that knows the type (GCC >= 13)
        assert demangle_module._runtime_demangle("_Z1fDF16b") == "f(std::bfloat16_t)"


@needs_binutils
def test_df16b_names_come_out_readable_through_binutils():
    for name in DF16B_NAMES:
        kname = prepare(name)
        assert kname.demangled, name[:80]
        assert "_Z" not in kname.text[:2] and "_Accum" not in kname.text


@needs_binutils
def test_ck_names_are_read_from_their_demangled_template(count_binutils_runs):
    grouped_conv = next(n for n in DF16B_NAMES if "GridwiseGemmMultipleD_xdl_cshuffleIDF16b" in n)
    answer = classify_name(grouped_conv, RULESET)
    assert (answer.path, answer.rule) == ("bf16", "ck-template-ab")
    assert "std::bfloat16_t" in answer.reason


@needs_binutils
def test_one_binutils_process_per_batch_of_distinct_names(count_binutils_runs):
    names = DF16B_NAMES * 50  # repeated, as kernel records repeat a name
    results = classify_names(names, RULESET)
    assert len(results) == len(names)
    assert count_binutils_runs == [len(set(DF16B_NAMES))]
    # cached: classifying them again starts no process
    classify_names(names, RULESET)
    classify_name(DF16B_NAMES[0], RULESET)
    assert len(count_binutils_runs) == 1


def test_without_binutils_the_mangled_type_codes_still_decide(monkeypatch, count_binutils_runs):
    monkeypatch.setattr(demangle_module, "binutils_available", lambda: False)
    grouped_conv = next(n for n in DF16B_NAMES if "GridwiseGemmMultipleD_xdl_cshuffleIDF16b" in n)
    kname = prepare(grouped_conv)
    assert not kname.demangled and kname.text == grouped_conv
    answer = classify_name(grouped_conv, RULESET)
    assert (answer.path, answer.rule) == ("bf16", "ck-mangled")
    assert count_binutils_runs == []


def test_a_broken_or_foreign_cxxfilt_leaves_names_mangled(monkeypatch):
    # e.g. LLVM's c++filt, which rejects binutils' flags: exit status != 0, no output
    def failing_run(*args, **kwargs):  # type: ignore[no-untyped-def]
        return subprocess.CompletedProcess(args, 1, "", "unknown argument")

    monkeypatch.setattr(demangle_module, "binutils_available", lambda: True)
    monkeypatch.setattr(demangle_module.subprocess, "run", failing_run)
    assert demangle_all(DF16B_NAMES[:2]) == dict.fromkeys(DF16B_NAMES[:2])


def test_names_that_are_not_mangled_or_cannot_be_read():
    assert demangle("volta_sgemm_64x64_nt") is None
    assert demangle("_Znot_a_real_mangled_name") is None
    mangled = (
        "_ZN7cutlass7Kernel2I50cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4EEvNT_6ParamsE"
    )
    assert demangle(mangled) == (
        "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>"
        "(cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4::Params)"
    )
