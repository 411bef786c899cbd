"""The rules hold-backs 12 to 15 were drawn by (tests/corpus/holdback/wheel_kernel_names.py).

The wheels themselves are hundreds of MB and stay out of the suite; these tests pin the pool
rule (which strings of a library's ``.rodata`` are kernels) and the sample rule (which of them a
hold-back takes) on small inputs built here.
"""

from __future__ import annotations

import importlib.util
import shutil
import struct

import pytest

from tests.support import paths

_SPEC = importlib.util.spec_from_file_location(
    "wheel_kernel_names", paths.CORPUS / "holdback" / "wheel_kernel_names.py")
assert _SPEC and _SPEC.loader
tool = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tool)


def test_the_qualified_name_drops_return_type_template_arguments_and_parameters():
    name = "void at::native::gemm_kernel<cutlass::half_t, 128>(cutlass::half_t const*, int)"
    assert tool.qualified(name) == "at::native::gemm_kernel"
    assert tool.base(name) == "gemm_kernel"
    enable_if = ("std::enable_if<true, void>::type internal::gemvx::kernel<int, __half>"
                 "(cublasGemvParamsEx<int, float>)")
    assert tool.qualified(enable_if) == "internal::gemvx::kernel"
    assert tool.base("fmha_v2_fp16_128_64_sm80_kernel") == "fmha_v2_fp16_128_64_sm80_kernel"


def test_an_anonymous_namespace_ends_the_qualified_name_as_it_did_for_the_samples_drawn():
    """The rule stops at the first parenthesis outside a template, ``(anonymous namespace)``
    included: a kernel there was left out of hold-backs 13 to 15 unless a matrix word came
    before it. The tool keeps that quirk so that it redraws those samples exactly."""
    name = "void at::native::(anonymous namespace)::gemm_kernel<float>(float*)"
    assert tool.qualified(name) == "at::native::"
    assert tool.sample([name], set(), 10, unseen_families=False, per_base=1) == []


def _fake_cubin(strings: list[bytes]) -> bytes:
    """A 64-bit little-endian ELF image whose header says where it ends: one section table of
    two 64-byte entries right after the strings (enough for the extent the pool rule reads)."""
    body = b"\x00" + b"\x00".join(strings) + b"\x00"
    header = bytearray(64)
    header[:7] = b"\x7fELF\x02\x01\x01"
    section_offset = 64 + len(body)
    struct.pack_into("<Q", header, 0x28, section_offset)
    struct.pack_into("<HH", header, 0x3A, 64, 2)
    return bytes(header) + body + bytes(128)


def test_the_pool_takes_registered_literals_and_the_kernels_of_embedded_cubins():
    registered = b"_Z11gemm_kernelIfEvPf"
    device_function = b"_Z3stsILi2EEvRA2_j"  # inside a cubin: a device function's symbol
    cubin = _fake_cubin([b".nv.info.fmha_v2_fp16_64_64_sm80_kernel",
                         b".text.fmha_v2_fp16_64_64_sm80_kernel", device_function])
    data = (b"\x00" + registered + b"\x00" + b"padding\x00" + cubin
            + b"\x00xx_Z9tail_onlyv_not_a_start\x00")
    literals, cubin_kernels = tool.rodata_names(data)
    assert literals == [registered.decode()]
    assert cubin_kernels == {"fmha_v2_fp16_64_64_sm80_kernel"}


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="binutils' c++filt is not on PATH")
def test_only_names_that_demangle_to_a_void_function_are_kernels():
    names = tool.kernel_names(["_Z11gemm_kernelIfEvPf", "_Z3addii", "_ZN3foo3barE"],
                              {"fmha_v2_fp16_64_64_sm80_kernel"})
    assert names == ["fmha_v2_fp16_64_64_sm80_kernel", "void gemm_kernel<float>(float*)"]


POOL = [
    *(f"void gemm_template_batched_nn_kernel<float, {n}>(float const*)" for n in range(10)),
    "void gemv_kernel<2, 1>(__half const*)",
    "void seen_matmul_kernel<float>(float*)",
    "void elementwise_add_kernel<float>(float*)",
    "void known_quant_kernel<__half>(__half*)",
]


def test_the_sample_takes_matrix_families_not_in_the_corpus_spread_over_instantiations():
    known = {"void known_quant_kernel<__half>(__half*)", "seen_matmul_kernel"}
    drawn = tool.sample(POOL, known, quota=10, unseen_families=False, per_base=4)
    templates = [n for n in drawn if "gemm_template" in n]
    assert [t.split(", ")[1].split(">")[0] for t in templates] == ["1", "3", "6", "8"]
    assert "void gemv_kernel<2, 1>(__half const*)" in drawn
    assert "void seen_matmul_kernel<float>(float*)" in drawn  # a seen family, a new name
    assert not any("elementwise" in n or "known_quant" in n for n in drawn)
    unseen = tool.sample(POOL, known, quota=10, unseen_families=True, per_base=1)
    assert "void seen_matmul_kernel<float>(float*)" not in unseen
    assert unseen == ["void gemm_template_batched_nn_kernel<float, 5>(float const*)",
                      "void gemv_kernel<2, 1>(__half const*)"]
    assert len(tool.sample(POOL, known, quota=1, unseen_families=False, per_base=1)) == 1
