"""The expected-path tables of docs/engines.md are the data, and `tracekit expect`'s layer rows
are the verdict's expected paths."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.support import paths
from tracekit.expect.checkpoint import read_declaration
from tracekit.expect.checkpoint.layers import declare_layers
from tracekit.expect.checkpoint.shape import read_model_shape
from tracekit.expect.kernel_paths import ENGINES, ExpectedPath, expected_path, kernel_path_table
from tracekit.expect.matrix import cell, layer_expectations, markdown_matrix, shown_layers

GENERATOR = paths.REPO / "docs" / "make_expected_paths.py"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_expected_paths", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_table_is_current() -> None:
    assert load_generator().main(["--check"]) == 0, (
        "docs/engines.md's expected-path tables are out of date: run "
        "python docs/make_expected_paths.py")


def test_the_table_has_a_row_per_format_and_a_table_per_engine() -> None:
    text = markdown_matrix()
    for fmt in kernel_path_table().formats:
        assert text.count(f"| {fmt.label} |") == len(ENGINES), fmt.label
    assert "| weight_only (engine) +fp8, MoE fp8 |" in text  # vLLM block FP8 on sm89


def test_cells() -> None:
    assert cell(ExpectedPath("fp4", "native", "")) == "fp4"
    assert cell(ExpectedPath("weight_only", "hardware_fallback", "")) == "weight_only (hw)"
    assert cell(ExpectedPath("weight_only", "by_design", "", better=frozenset({"fp8"}))) == (
        "weight_only +fp8")
    assert cell(ExpectedPath("unknown", "unsupported", "")) == "no"
    assert cell(ExpectedPath("unknown", "unknown", "")) == "?"


def test_layer_rows_are_the_verdicts_expected_paths() -> None:
    model = paths.CHECKPOINTS / "modelopt-mixed-qwen3.6-27b"
    declaration = read_declaration(model)
    shape = read_model_shape(model)
    rows = layer_expectations(declaration, shape, "sm120", [*ENGINES, None])
    declared = declare_layers(declaration)
    assert [row.layer for row in rows] == shown_layers(declared, shape)
    for row in rows:
        for engine, answer in row.expected.items():
            assert answer == expected_path(declared[row.layer], "sm120", engine)
