"""rules/_convolutions.toml against the corpus: every GEMM the classifier gives a name that says
convolution is counted as a convolution (the reports' ``convolution_gemm_ns``), and a mangled
name counts as its demangled text does (ROCm traces often keep names mangled)."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.paths import CORPUS
from tracekit.classifier import classify_names, load_ruleset
from tracekit.classifier.convolutions import convolution_names, is_convolution
from tracekit.classifier.names import prepare_all
from tracekit.vocabulary import GEMM_OPS

#: a convolution word in a function name: conv (not convert), Conv, convolve, depthwise
CONVOLUTION_WORD = re.compile(r"(?i)conv(?!ert)|depthwise")

#: corpus GEMM names whose function name holds a convolution word but that compute no
#: convolution, each with the reason (none so far: every such name in the corpus is one)
NOT_CONVOLUTIONS: dict[str, str] = {}


def function_name(text: str) -> str:
    """The qualified function name of a kernel's text: no return type, template arguments or
    parameters (``void a::b<T>(int)`` -> ``a::b``); a name that is no C++ signature whole."""
    text = text.replace("(anonymous namespace)", "anonymous")
    text = re.sub(r"^(?:void|__global__ void)\s+", "", text)
    return re.split(r"[<(]", text, maxsplit=1)[0]


def _corpus_names() -> list[str]:
    names: list[str] = []
    for file in sorted(CORPUS.glob("*.jsonl")):
        names += [json.loads(line)["name"] for line in file.read_text().splitlines()
                  if line.strip()]
    return names


def _gemm_names_saying_convolution() -> list[str]:
    names = _corpus_names()
    answers = classify_names(names, load_ruleset(use_env=False))
    prepared = prepare_all(names)
    return [name for name, answer in zip(names, answers, strict=True)
            if answer.op in GEMM_OPS
            and CONVOLUTION_WORD.search(function_name(prepared[name].text))]


def test_every_corpus_gemm_named_a_convolution_counts_as_one() -> None:
    names = _gemm_names_saying_convolution()
    assert len(names) > 100  # the corpus holds cuDNN, Paddle, CK and MIOpen convolutions
    counted = convolution_names(names)
    missed = sorted(name for name in names if name not in counted and name not in NOT_CONVOLUTIONS)
    assert not missed, f"{len(missed)} not counted as convolutions, first: {missed[:5]}"


def test_the_exceptions_are_still_corpus_gemm_names_that_say_convolution() -> None:
    stale = set(NOT_CONVOLUTIONS) - set(_gemm_names_saying_convolution())
    assert not stale, f"no longer needed: {sorted(stale)}"


#: g++ 12's mangling of shortened instantiations of two pool kernels (the template and the
#: first parameters as the wheels' demangled names show them): only their demangled text holds
#: the words the rows match (``paddle::operators::math::``, a whole ``precomputed_convolve_sgemm``)
MANGLED = [
    "_ZN6paddle9operators4math21KernelDepthwiseConvSpIfLi2ELi2ELi5EEEvPKT_S5_iPS3_",
    "_Z26precomputed_convolve_sgemmIfLi1024EEviPKT_PS0_18kernel_conv_params",
]


@pytest.mark.parametrize("mangled", MANGLED)
def test_a_mangled_name_counts_as_its_demangled_text(mangled: str) -> None:
    assert is_convolution(mangled)
    assert convolution_names([mangled, "ampere_sgemm_128x64_nn"]) == {mangled}


def test_a_mangled_composable_kernel_convolution_counts_even_undemangled() -> None:
    # as a MI300 ResNet trace keeps it (tests/corpus/amd.jsonl): cut, so no demangler reads it
    cut = ("_ZN2ck16tensor_operation6device12_GLOBAL__N_149kernel_grouped_conv_fwd_multiple_abd"
           "_xdl_cshuffleINS_34GridwiseGemmMultip")
    assert is_convolution(cut)
    assert not is_convolution("ck::kernel_gemm_xdl_cshuffle_v3_multi_d_blockscale_b_preshuffle")
