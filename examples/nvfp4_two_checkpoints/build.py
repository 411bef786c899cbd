"""Build the canonical case: one model, two checkpoints both labelled "NVFP4", one RTX 5090.

Everything here is SYNTHETIC, made with tracekit's own fixture builder
(``tracekit.synth.nsys``, real nsys 2022.4 export schema), so the example runs anywhere
without a GPU:

- ``checkpoints/w4a4/``  — ModelOpt ``hf_quant_config.json``: NVFP4 weights *and*
  activations (W4A4). On sm120 vLLM runs block-scaled FP4×FP4 CUTLASS GEMMs.
- ``checkpoints/w4a16/`` — compressed-tensors ``config.json``: NVFP4 weights, 16-bit
  activations (``input_activations: null``, the "NVFP4A16" kind). vLLM runs it through
  Marlin: 4-bit weights dequantized into BF16 math.
- ``w4a4-cutlass-fp4.sqlite`` / ``w4a16-marlin.sqlite`` — the two runs, each with vLLM's
  step markers (``execute_context_N(T)_generation_M(U)``): 2 prefill steps of 2,048 tokens,
  48 CUDA-graph decode steps of 8 requests.
- ``w4a4-fallback-marlin.sqlite`` + ``engine-fallback.log`` — the W4A4 checkpoint again, on
  an engine build that has no sm120 FP4 GEMM and quietly serves it through Marlin: the
  silent fallback tracekit exists to catch. The log line is vLLM's real Marlin warning.

The kernel names are real ones as profilers print them (CUTLASS sm120 block-scaled GEMM,
vLLM's FP4 quantize kernel, Marlin with its ScalarType template ids, FlashAttention); the
durations are invented but keep the real ordering (FP4 GEMMs beat BF16-math Marlin).

Run:  python examples/nvfp4_two_checkpoints/build.py
Then: tracekit analyze examples/nvfp4_two_checkpoints/w4a4-cutlass-fp4.sqlite \
          --model examples/nvfp4_two_checkpoints/checkpoints/w4a4
"""

from __future__ import annotations

import json
from pathlib import Path

from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario

HERE = Path(__file__).resolve().parent
LAYERS = 8

CUTLASS_FP4 = (
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, "
    "int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120TmaWarpSpecialized"
    "BlockScaled<3, 2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, cutlass::gemm::KernelTma"
    "WarpSpecializedCooperativeBlockScaledSm120<2>>, cute::tuple<cute::C<128>, cute::C<128>, "
    "cute::C<128>>, cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue4m3_t>, cute::tuple<long, "
    "cute::C<1>, long>, cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue4m3_t>, cute::tuple<"
    "long, cute::C<1>, long>>, cutlass::epilogue::collective::CollectiveEpilogue<cutlass::"
    "bfloat16_t>>>(T1::Params)"
)
FP4_QUANT = ("void vllm::cvt_fp16_to_fp4<__nv_bfloat16, false>(int, int, int, __nv_bfloat16 "
             "const*, float const*, unsigned int*, unsigned int*, int*, int)")
MARLIN_FP4 = (
    "void marlin::Marlin<(long)1125899906909960, (long)562949953487106, (long)1125899906909960, "
    "(long)2814749767106568, (int)128, (int)4, (int)8, (int)4, (bool)0, (int)4, (int)2, (bool)0>"
    "(const int4 *, const int4 *, int4 *, int4 *, const int4 *, const int4 *, const int *, int, "
    "int, int, int, int *, bool, bool, int)"
)
ATTENTION = ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
             "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, "
             "cutlass::bfloat16_t>>, false, true, false, false, true, true, false, false>"
             "(flash::Flash_fwd_params)")
NORM = ("void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, "
        "c10::BFloat16 const*, float, int, int)")


def layer(gemm: str, gemm_ns: int, quantize: bool, attention_ns: int) -> list[KernelSpec]:
    """One transformer layer: 4 linear layers (qkv, o, gate_up, down), attention, norms."""
    kernels = [KernelSpec(NORM, 3_000, count=2), KernelSpec(ATTENTION, attention_ns)]
    if quantize:
        kernels.append(KernelSpec(FP4_QUANT, 2_000, count=4))
    kernels.append(KernelSpec(gemm, gemm_ns, count=4))
    return kernels * 1


def run(gemm: str, prefill_gemm_ns: int, decode_gemm_ns: int, quantize: bool) -> Scenario:
    """vLLM on one RTX 5090: 2 prefill steps, 48 CUDA-graph decode steps of 8 requests."""
    prefill = StepSpec("execute_context_1(2048)_generation_0(0)",
                       layer(gemm, prefill_gemm_ns, quantize, 180_000) * LAYERS, repeat=2)
    decode = StepSpec("execute_context_0(0)_generation_8(8)",
                      layer(gemm, decode_gemm_ns, quantize, 12_000) * LAYERS, graph=True,
                      repeat=48)
    return Scenario(ranks=[RankSpec(pid=31337, gpu_name="NVIDIA GeForce RTX 5090",
                                    compute_capability=(12, 0), sm_count=170,
                                    thread_name="VLLM::EngineCore", steps=[prefill, decode])])


def write_checkpoints() -> None:
    """The two checkpoint declarations, written from the formats' documented fields."""
    w4a4 = HERE / "checkpoints" / "w4a4"
    w4a4.mkdir(parents=True, exist_ok=True)
    (w4a4 / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                         "exclude_modules": ["lm_head"]},
    }, indent=2) + "\n")
    (w4a4 / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
        "_name_or_path": "example/Llama-3.1-8B-Instruct-NVFP4",
    }, indent=2) + "\n")
    w4a16 = HERE / "checkpoints" / "w4a16"
    w4a16.mkdir(parents=True, exist_ok=True)
    (w4a16 / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
        "_name_or_path": "example/Llama-3.1-8B-Instruct-NVFP4",
        "quantization_config": {
            "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
            "config_groups": {"group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                            "group_size": 16, "symmetric": True, "dynamic": False},
                "input_activations": None,
            }},
            "ignore": ["lm_head"],
        },
    }, indent=2) + "\n")


def main() -> None:
    write_checkpoints()
    write_scenario(run(CUTLASS_FP4, 95_000, 9_000, quantize=True),
                   HERE / "w4a4-cutlass-fp4.sqlite")
    write_scenario(run(MARLIN_FP4, 210_000, 16_000, quantize=False),
                   HERE / "w4a16-marlin.sqlite")
    fallback = run(MARLIN_FP4, 210_000, 16_000, quantize=False)
    fallback.ranks[0].pid = 31338  # another capture: different bytes, another run
    write_scenario(fallback, HERE / "w4a4-fallback-marlin.sqlite")
    (HERE / "engine-fallback.log").write_text(
        "INFO 11-29 10:00:01 [model.py:547] Resolved architecture: LlamaForCausalLM\n"
        "WARNING 11-29 10:00:07 [marlin_utils_fp4.py:100] Your GPU does not have native support "
        "for FP4 computation but FP4 quantization is being used. Weight-only FP4 compression will "
        "be used leveraging the Marlin kernel. This may degrade performance for compute-heavy "
        "workloads.\n"
        "INFO 11-29 10:00:31 [gpu_model_runner.py:2058] Model loading took 5.6 GiB\n")
    print(f"wrote three runs and their checkpoints under {HERE}")


if __name__ == "__main__":
    main()
