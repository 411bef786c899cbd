"""One GPU capability table (``rules/_gpus.toml``), one reader of architecture spellings and
one ``runs_on`` (``tracekit/gpus.py``): the classifier's feasibility check and the findings'
expectations ask the same table, so they cannot disagree."""

from __future__ import annotations

import pytest

from tracekit.classifier import classify_name, load_ruleset
from tracekit.datafiles import load_table
from tracekit.expect.logs import match_line
from tracekit.gpus import (
    KernelArch,
    arch_from_capability,
    arch_from_gpu_name,
    archs_with,
    built_for,
    device_arch,
    kernel_archs,
    known_archs,
    mma_conflict,
    mma_only_paths,
    native_paths,
    normalize_arch,
    parse_arch,
    parse_gpu,
    runs_on,
)
from tracekit.vocabulary import PATHS

RULESET = load_ruleset(use_env=False)
#: names whose rule says fp4 / fp8 by name alone (nvjet type tags, cuBLASLt)
NAMED = {
    "fp4": "nvjet_sm100_ootst_128x128_256x7_4x1_2cta_v_bx_Avec16UE4M3_Bvec16UE4M3_TNT",
    "fp8": "sm89_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize64x128x64",
}


@pytest.mark.parametrize("spelled, arch", [
    ("sm90", "sm90"), ("SM_90a", "sm90"), ("sm_100f", "sm100"), ("compute_90", "sm90"),
    ("90a", "sm90"), ("100", "sm100"), ("9.0", "sm90"), ("12.1", "sm121"),
    ("gfx942", "gfx942"), ("gfx942:sramecc+:xnack-", "gfx942"), ("GFX90A", "gfx90a"),
    (" sm120 ", "sm120"),
])
def test_one_reader_of_architecture_spellings(spelled: str, arch: str) -> None:
    assert parse_arch(spelled) == arch
    assert normalize_arch(spelled) == arch
    assert parse_gpu(spelled).arch == arch


@pytest.mark.parametrize("value", ["H100", "Blackwell", "sm", "", None, "4090", "gfx"])
def test_what_is_not_an_architecture(value: str | None) -> None:
    assert parse_arch(value) is None


def test_the_table_spells_architectures_as_the_reader_does() -> None:
    for arch in known_archs():
        assert parse_arch(arch) == arch


def test_the_vocabulary_file_says_nothing_about_gpus() -> None:
    for word, entry in load_table("_paths.toml")["paths"].items():
        assert set(entry) == {"description"}, word


@pytest.mark.parametrize("path", ["fp4", "fp8"])
def test_nvidia_mma_kinds_only_grow_with_the_architecture(path: str) -> None:
    """What lets an smXY the table lacks be judged: at or above the lowest NVIDIA
    architecture with the path, every listed one has it."""
    nvidia = sorted(int(arch[2:]) for arch in known_archs() if arch.startswith("sm"))
    having = [int(arch[2:]) for arch in archs_with(path) if arch.startswith("sm")]
    assert having and all((number >= having[0]) == (number in having) for number in nvidia)


def test_feasibility_is_the_table() -> None:
    """For every architecture and path: refused exactly when an mma_only path is not native,
    and the classifier turns exactly those answers into unknown."""
    assert mma_only_paths() == ("fp4", "fp8")
    for arch in sorted(known_archs()):
        for path in PATHS:
            refused = path in mma_only_paths() and path not in native_paths(arch)
            assert (mma_conflict(path, arch) is not None) == refused, (arch, path)
        for path, name in NAMED.items():
            result = classify_name(name, RULESET, arch=arch)
            if path in native_paths(arch):
                assert result.path == path, (arch, name)
            else:
                assert (result.path, result.evidence) == ("unknown", "feasibility"), arch
                assert mma_conflict(path, arch) in result.reason


def test_architectures_the_table_lacks() -> None:
    assert mma_conflict("fp8", "sm72") == "sm72 has no fp8 MMA (needs sm89 or newer)"
    assert mma_conflict("fp4", "sm130") is None
    assert mma_conflict("fp8", "gfx1030") == (
        "gfx1030 has no fp8 MMA (only gfx940, gfx941, gfx942, gfx950, gfx1200, gfx1201)")
    assert mma_conflict("fp4", "TPU v5") is None  # not an architecture: nothing is refused
    assert mma_conflict("bf16", "sm70") is None  # only mma_only paths are ever refused


def test_one_runs_on_for_name_tokens_and_rule_requirements() -> None:
    exact = built_for("sm_100a")
    assert exact == KernelArch(token="sm_100a", arch="sm100", scope="exact")
    assert runs_on(exact, "sm100") and runs_on(exact, "10.0")
    assert not runs_on(exact, "sm103") and not runs_on(exact, "gfx950")
    assert runs_on(exact, None) and runs_on(exact, "unknown GPU")
    gen = RULESET.get("trtllm-gen-gemm")
    assert gen is not None and gen.requires_arch == ("sm100", "sm103")
    name = ("bmm_E2m1_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_rM_TN_"
            "transOut_schedS_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f")
    assert classify_name(name, RULESET, arch="sm103").path == "fp4"
    assert classify_name(name, RULESET, arch="sm_120a").evidence == "feasibility"


# -- AMD names as ROCm reports them (rules/_gpus.toml, the AMD [[name]] and [model.*] rows) ----

@pytest.mark.parametrize(("name", "arch", "model"), [
    ("AMD Instinct MI300X", "gfx942", "mi300x"),
    ("AMD Instinct MI300X OAM", "gfx942", "mi300x"),
    ("AMD Instinct MI300XHF OAM", "gfx942", None),
    ("AMD Instinct MI300X HF", "gfx942", None),
    ("AMD Instinct MI300X VF", "gfx942", None),
    ("AMD Instinct MI308X", "gfx942", None),
    ("AMD Instinct MI325X", "gfx942", "mi325x"),
    ("MI325X OAM", "gfx942", "mi325x"),
    ("AMD Instinct MI300A", "gfx942", "mi300a"),
    ("AMD Instinct MI350X", "gfx950", "mi350x"),
    ("AMD Instinct MI355X", "gfx950", "mi355x"),
    ("AMD Instinct MI355X VF", "gfx950", None),
])
def test_amd_product_names(name, arch, model):
    from tracekit.gpus import match_gpu_model

    assert device_arch(None, 9, 4 if arch == "gfx942" else 5, name) == arch  # not "sm94"
    found = match_gpu_model(name, arch).model
    assert (found.key if found else None) == model


@pytest.mark.parametrize(("name", "arch"), [
    ("gfx942:sramecc+:xnack-", "gfx942"), ("gfx950", "gfx950"), ("gfx90a:xnack+", "gfx90a")])
def test_rocm_agent_names_are_their_targets(name, arch):
    assert device_arch(None, 9, 4, name) == arch


def test_amd_products_have_bandwidth_and_cited_limits():
    from tracekit.gpus import gpu_model

    for key, bandwidth in [("mi300x", 5300), ("mi325x", 6000), ("mi350x", 8000),
                           ("mi355x", 8000)]:
        model = gpu_model(key)
        assert model is not None and model.memory_gbps == bandwidth and model.cite
    assert gpu_model("mi300x").peak_flops("bf16") == 1307.4e12
    assert gpu_model("mi355x").peak_flops("fp4") == 10066.4e12
    assert gpu_model("mi350x").peak_flops("bf16") is None  # unknown, with its reason
    assert "could be confirmed" in gpu_model("mi350x").missing_reason("bf16")


# --- NVIDIA device names and compute capabilities as toolkits report them -----------------------

@pytest.mark.parametrize(("name", "arch"), [
    ("NVIDIA H100 80GB HBM3", "sm90"), ("NVIDIA H100 PCIe", "sm90"), ("NVIDIA H100 NVL", "sm90"),
    ("NVIDIA H200", "sm90"), ("NVIDIA H200 NVL", "sm90"), ("NVIDIA H20-3e", "sm90"),
    ("NVIDIA H800", "sm90"), ("NVIDIA GH200 480GB", "sm90"), ("NVIDIA GH200 144G HBM3e", "sm90"),
    ("NVIDIA B200", "sm100"), ("NVIDIA GB200", "sm100"),
    ("NVIDIA B300 SXM6 AC", "sm103"), ("NVIDIA GB300", "sm103"),
    ("NVIDIA GeForce RTX 5090", "sm120"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm120"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "sm120"),
    ("NVIDIA GB10", "sm121"), ("NVIDIA Thor", "sm110"),
    ("NVIDIA L40S", "sm89"), ("NVIDIA L40", "sm89"), ("NVIDIA L4", "sm89"),
    ("NVIDIA RTX 6000 Ada Generation", "sm89"), ("NVIDIA RTX 5880 Ada Generation", "sm89"),
    ("NVIDIA GeForce RTX 4090", "sm89"),
    ("NVIDIA A100-SXM4-80GB", "sm80"), ("NVIDIA A100 80GB PCIe", "sm80"),
    ("NVIDIA A800-SXM4-80GB", "sm80"), ("NVIDIA A10", "sm86"), ("NVIDIA RTX A6000", "sm86"),
    ("Tesla T4", "sm75"), ("Tesla V100-SXM2-16GB", "sm70"), ("Tesla V100S-PCIE-32GB", "sm70"),
])
def test_nvidia_device_names_map_to_their_architecture(name: str, arch: str) -> None:
    assert arch_from_gpu_name(name) == arch
    assert parse_gpu(name).arch == arch
    assert arch in known_archs()


@pytest.mark.parametrize(("major", "minor", "arch"), [
    (10, 1, "sm110"),  # Jetson Thor under CUDA 12.8/12.9
    (11, 0, "sm110"),  # the same GPU under CUDA 13
    (12, 1, "sm121"),  # DGX Spark GB10 under both
    (10, 3, "sm103"), (12, 0, "sm120"), (9, 0, "sm90"),
])
def test_compute_capabilities_as_cuda_12_and_13_report_them(major: int, minor: int,
                                                            arch: str) -> None:
    assert arch_from_capability(major, minor) == arch
    assert parse_arch(f"{major}.{minor}") == arch
    # a device the trace describes only by its capability lands on a row of the table
    assert device_arch(None, major, minor, None) == arch
    assert native_paths(arch) >= {"fp8"}


def test_the_renamed_thor_spellings_read_as_sm110() -> None:
    assert {parse_arch(s) for s in ("sm_101", "sm_101a", "compute_101", "101a", "sm110")} == {
        "sm110"}
    token = kernel_archs("cutlass::device_kernel<vllm::enable_sm101a_only<Gemm>>")[0]
    assert token.arch == "sm110" and runs_on(token, "sm110")
    # a llama.cpp built with CUDA 12 prints Thor's capability as 10.1
    line = match_line("  Device 0: NVIDIA Thor, compute capability 10.1, VMM: yes, "
                      "VRAM: 125772 MiB")
    assert line is not None and line.gpu_arch == "sm110"


def test_capability_renames_name_rows_of_the_table() -> None:
    renames = load_table("_gpus.toml")["capability_rename"]
    assert renames == {"10.1": "sm110"}
    assert all(arch in known_archs() for arch in renames.values())
