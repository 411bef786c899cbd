"""``tracekit expect``: per layer group, what the checkpoint declares and what each engine can
launch on the GPU — the same answer the per-layer verdict uses, before any run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.support import paths
from tracekit.cli import cli
from tracekit.expect.checkpoint import read_declaration
from tracekit.expect.checkpoint.layers import declare_layers
from tracekit.expect.kernel_paths import ENGINES, KINDS, expected_path
from tracekit.gpus import known_archs
from tracekit.vocabulary import PATHS

CHECKPOINTS = paths.CHECKPOINTS


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["expect", *args])
    return result.exit_code, result.stdout, result.stderr


def test_nvfp4_on_an_h100_is_marlin_in_vllm_and_refused_by_trtllm() -> None:
    code, out, _ = run("--model", str(CHECKPOINTS / "ct-nvfp4-w4a4.config.json"), "--gpu", "H100")
    assert code == 0
    assert out.splitlines()[0] == ("ct-nvfp4-w4a4.config.json: NVFP4 W4A4 (compressed-tensors, "
                                   "nvfp4-pack-quantized) on the H100 (sm90, Hopper)")
    mlp = next(line for line in out.splitlines() if line.startswith("mlp "))
    assert mlp.split() == ["mlp", "W4A4", "NVFP4", "weight_only", "(hw)", "weight_only", "(hw)",
                           "no", "no"]
    assert "TensorRT-LLM: unsupported" in out
    assert "MarlinNvFp4LinearKernel" in out  # the kernel family, with its source


def test_one_engine_prints_kernel_family_better_paths_and_source() -> None:
    code, out, _ = run("--model", str(CHECKPOINTS / "gpt-oss-20b-mxfp4"), "--gpu", "sm100",
                       "--engine", "vllm")
    assert code == 0
    experts = out.split("moe_experts:")[1].split("\n\n")[0]
    assert "weight_only — as declared (by design)" in experts
    assert "may also run fp8" in experts
    assert "source: vllm/model_executor/layers/fused_moe/oracle/mxfp4.py" in experts


def test_json_is_the_expected_path_the_verdict_uses() -> None:
    model = CHECKPOINTS / "fp8-block-qwen3-30b-a3b"
    code, out, _ = run("--model", str(model), "--gpu", "NVIDIA L40S", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["gpu"] == {"name": "NVIDIA L40S", "arch": "sm89", "family": "Ada Lovelace"}
    assert document["engines"] == list(ENGINES)
    declared = declare_layers(read_declaration(model))
    for row in document["layers"]:
        for engine in ENGINES:
            want = expected_path(declared[row["layer"]], "sm89", engine)
            got = row["expected"][engine]
            assert (got["path"], got["kind"], set(got["better"])) == (
                want.path, want.kind, set(want.better))
    by_layer = {row["layer"]: row for row in document["layers"]}
    # vLLM's dense block-FP8 list reaches FP8 Marlin before Triton on sm89; its MoE oracle not
    assert by_layer["mlp"]["expected"]["vllm"]["kind"] in {"engine_fallback", "by_design"}
    assert by_layer["moe_experts"]["expected"]["vllm"]["path"] == "fp8"


@pytest.mark.parametrize("arch", sorted(known_archs()))
def test_answers_for_every_gpu_architecture_in_the_capability_table(arch: str) -> None:
    code, out, err = run("--model", str(CHECKPOINTS / "modelopt-nvfp4"), "--gpu", arch,
                         "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["gpu"]["arch"] == arch
    for row in document["layers"]:
        for engine in ENGINES:
            answer = row["expected"][engine]
            assert answer["kind"] in KINDS and answer["path"] in PATHS
            assert answer["reason"] or answer["kind"] == "by_design"


@pytest.mark.parametrize(("args", "message"), [
    ((), "--model DIR is required"),
    (("--model", "MODEL"), "--gpu NAME is required"),
    (("--model", "MODEL", "--gpu", "H900"), "--gpu 'H900': not an architecture"),
    (("--model", "MODEL", "--gpu", "sm90", "--engine", "tgi"), "is not an engine"),
    (("--model", "/nonexistent/model", "--gpu", "sm90"), "no such file or folder"),
    (("--model", "BROKEN", "--gpu", "sm90"), "not valid JSON"),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    replaced = [str(CHECKPOINTS / "gptq.config.json") if a == "MODEL" else
                str(CHECKPOINTS / "broken.json") if a == "BROKEN" else a for a in args]
    code, out, err = run(*replaced)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err
    assert "Traceback" not in err


def test_a_dense_model_shows_no_moe_groups() -> None:
    code, out, _ = run("--model", str(CHECKPOINTS / "gptq-llama-3-70b-instruct"), "--gpu",
                       "A100", "--json")
    assert code == 0
    layers = [row["layer"] for row in json.loads(out)["layers"]]
    assert "moe_experts" not in layers and {"attention", "mlp", "lm_head"} <= set(layers)
    code, out, _ = run("--model", str(CHECKPOINTS / "gpt-oss-20b-mxfp4"), "--gpu", "A100",
                       "--json")
    assert "moe_experts" in [row["layer"] for row in json.loads(out)["layers"]]
