"""One synthetic vLLM-on-ROCm job for the AMD tests: two processes on two MI300X, prefill
steps launched kernel by kernel, decode steps replayed as HIP graphs, ROCTx step markers, a
mark, a kernel outside any step. Written as rocpd, JSON or CSV by tracekit.synth.rocprof."""

from __future__ import annotations

from tracekit.synth.nsys import KernelSpec, StepSpec
from tracekit.synth.rocprof import AmdProcess, AmdScenario, Job, lay_out

BF16_TENSILE = "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8x1_SN_1LDSB1_GRVW8_K1_WG32_8_1"
FP8_TENSILE = "Cijk_Alik_Bljk_F8SS_BH_MT256x256x128_MI16x16x1_SN_LDSB1_gfx942"
COPY = ("void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda"
        "(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
        "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, "
        "std::array<char*, 2ul>)")
PREFILL = "execute_context_1(512)_generation_0(0)"
DECODE = "execute_context_0(0)_generation_4(4)"


def amd_scenario(repeat: int = 1) -> AmdScenario:
    """The job's scenario; ``repeat`` multiplies its steps (for the scaling tests)."""
    def steps(prefill: int, decode: int) -> list[StepSpec]:
        return [
            StepSpec(PREFILL, [KernelSpec(BF16_TENSILE, 40_000, count=4, grid=(304, 1, 1),
                                          block=(256, 1, 1)),
                               KernelSpec(COPY, 2_000, count=2, stream=3)], repeat=prefill),
            StepSpec(DECODE, [KernelSpec(FP8_TENSILE, 9_000, count=3),
                              KernelSpec(COPY, 1_500)], graph=True, repeat=decode),
            StepSpec(None, [KernelSpec(COPY, 700)]),
        ]
    return AmdScenario(processes=[
        AmdProcess(pid=4100, gpu=0, steps=steps(2 * repeat, 3 * repeat)),
        AmdProcess(pid=4200, gpu=1, tid=4213, steps=steps(1 * repeat, 2 * repeat)),
    ], gpus=2)


def amd_job(repeat: int = 1) -> Job:
    return lay_out(amd_scenario(repeat))
