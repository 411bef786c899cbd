"""Real release configs (tests/data/checkpoints/<case>/) against the declaration per layer group
written by hand for each in tests/data/checkpoints/cases.toml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib

from tests.expect.gguf_files import write_gguf
from tests.support import paths
from tracekit.expect.checkpoint import read_declaration
from tracekit.expect.checkpoint.layers import DECLARED_LAYERS, declare_layers
from tracekit.expect.checkpoint.shape import ModelShape, read_model_shape
from tracekit.expect.context import load_expectations
from tracekit.vocabulary import PATHS

CHECKPOINTS = paths.CHECKPOINTS
CASES: list[dict[str, Any]] = tomllib.loads(
    (CHECKPOINTS / "cases.toml").read_text(encoding="utf-8"))["case"]
BY_NAME = {case["name"]: case for case in CASES}


def _model_path(case: dict[str, Any], tmp_path: Path) -> Path:
    if "gguf" in case:
        spec = case["gguf"]
        return write_gguf(tmp_path / f"{case['name']}.gguf", spec["file_type"],
                          tensors=[tuple(t) for t in spec["tensors"]])
    return CHECKPOINTS / case["name"]


def _expected_presence(case: dict[str, Any], layer: str) -> bool | None:
    unknown = case.get("unknown_presence", False)
    if unknown is True or (isinstance(unknown, list) and layer in unknown):
        return None
    return layer not in case.get("absent", [])


def test_at_least_forty_real_cases_each_with_a_folder_and_a_source() -> None:
    folders = [case for case in CASES if "gguf" not in case]
    assert len(folders) >= 40
    readme = (CHECKPOINTS / "README.md").read_text(encoding="utf-8")
    for case in folders:
        assert (CHECKPOINTS / case["name"]).is_dir(), case["name"]
        assert f"`{case['name']}`" in readme, f"{case['name']} has no source in README.md"
    listed = {case["name"] for case in CASES}
    on_disk = {p.name for p in CHECKPOINTS.iterdir() if p.is_dir() and p.name != "modelopt-nvfp4"}
    assert on_disk <= listed, f"folders without expectations: {sorted(on_disk - listed)}"


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_declaration_per_layer_group(name: str, tmp_path: Path) -> None:
    case = BY_NAME[name]
    declaration = read_declaration(_model_path(case, tmp_path))
    assert declaration.not_understood is None
    assert (declaration.method, declaration.path) == (case["method"], case["path"])
    assert declaration.kv_cache == case.get("kv_cache")
    layers = declare_layers(declaration)
    assert set(layers) == set(DECLARED_LAYERS)
    for layer, got in layers.items():
        assert got.present is _expected_presence(case, layer), (layer, got.present)
        assert got.reason, layer
        expected = case.get(layer)
        if expected is None:
            continue
        assert got.status == expected["status"], (layer, got.status, got.reason)
        if got.status == "quantized":
            assert got.scheme is not None
            assert (got.scheme.path, got.scheme.scheme, got.scheme.weights,
                    got.scheme.activations) == (expected["path"], expected["scheme"],
                                                expected["weights"],
                                                expected.get("activations")), layer
        elif got.status == "mixed":
            assert got.scheme is None and len(got.schemes) == len(got.counts) >= 2
            assert {s.path for s in got.schemes} == set(expected["paths"]), layer
            assert {s.scheme for s in got.schemes} == set(expected["schemes"]), layer
        else:
            assert got.scheme is None and got.sixteen_bit
        for scheme in (got.scheme, *got.schemes):
            assert scheme is None or scheme.path in PATHS


@pytest.mark.parametrize("name", sorted(n for n, c in BY_NAME.items() if "shape" in c))
def test_model_shape(name: str) -> None:
    shape = read_model_shape(CHECKPOINTS / name)
    assert isinstance(shape, ModelShape)
    for field_name, value in BY_NAME[name]["shape"].items():
        assert getattr(shape, field_name) == value, field_name


@pytest.mark.parametrize("name", sorted(n for n, c in BY_NAME.items()
                                        if "gguf" not in c and "shape" not in c))
def test_configs_without_dimensions_have_no_shape(name: str) -> None:
    assert read_model_shape(CHECKPOINTS / name) is None


def test_expectations_carry_the_shape_read_with_the_declaration() -> None:
    class Options:
        model = CHECKPOINTS / "fp8-block-deepseek-v3"
        expect = None
        gpu = None
        logs = ()

    result = load_expectations(Options())
    assert result.declaration is not None and result.shape is not None
    assert result.shape.kv_lora_rank == 512 and result.model_error is None
    assert result.model_label == "fp8-block-deepseek-v3" and result.warnings == ()


@pytest.mark.parametrize("name", sorted(n for n, c in BY_NAME.items() if "gguf" not in c))
def test_every_case_folder_works_as_model(name: str) -> None:
    class Options:
        model = CHECKPOINTS / name
        expect = None
        gpu = None
        logs = ()

    result = load_expectations(Options())
    assert result.model_error is None and result.warnings == ()
    assert result.declaration is not None and result.model_label == name
