"""Before any run: what each layer group declares and what each engine can launch for it here.

``tracekit expect`` answers "what quantization format has optimized kernels on my target
engine?" from a checkpoint's config and a GPU, without a trace. It asks the same
:func:`tracekit.expect.kernel_paths.expected_path` the per-layer verdict asks, so the answer
before a run and the judgement after it cannot disagree. :func:`markdown_matrix` renders the
whole table of ``rules/_kernel_paths.toml`` for docs/engines.md (a test keeps the page equal
to it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracekit.expect.checkpoint.declaration import Declaration, LayerScheme
from tracekit.expect.checkpoint.layers import DECLARED_LAYERS, LayerDeclaration, declare_layers
from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.expect.kernel_paths import (
    ENGINE_NAMES,
    ENGINES,
    ExpectedPath,
    expected_path,
    kernel_path_table,
    scheme_path,
)
from tracekit.gpus import known_archs

#: groups every model has; the MoE groups only where the model has experts, the rest only
#: where the checkpoint names them
_ALWAYS = ("attention", "mlp", "lm_head", "embedding")
_MOE = ("moe_experts", "moe_router")


@dataclass(frozen=True)
class LayerExpectation:
    """One layer group: what it declares, and what each engine asked can launch for it."""

    layer: str
    declared: LayerDeclaration
    expected: dict[str | None, ExpectedPath]  # engine (None: not named) -> its answer

    def as_dict(self) -> dict[str, Any]:
        scheme = self.declared.scheme
        return {
            "layer": self.layer,
            "status": self.declared.status,
            "declared": _scheme_dict(scheme) if scheme else None,
            "schemes": [_scheme_dict(s) for s in self.declared.schemes],
            "reason": self.declared.reason,
            "expected": {engine or "any": expected_dict(answer)
                         for engine, answer in self.expected.items()},
        }


def expected_dict(answer: ExpectedPath) -> dict[str, Any]:
    """An :class:`ExpectedPath` as JSON."""
    return {
        "path": answer.path, "kind": answer.kind, "kernels": answer.kernels,
        "better": sorted(answer.better), "format": answer.format or None,
        "family": answer.family or None, "scope": answer.scope, "versions": answer.versions,
        "cite": answer.cite, "reason": answer.reason,
    }


def _scheme_dict(scheme: LayerScheme) -> dict[str, Any]:
    return {"scheme": scheme.scheme, "quant": scheme.quant, "path": scheme.path,
            "weights": scheme.weights, "activations": scheme.activations}


def shown_layers(declared: dict[str, LayerDeclaration], shape: ModelShape | None) -> list[str]:
    """The groups worth a row: those every model has, those the checkpoint names, and the MoE
    groups of a model whose config has experts (without a config's dimensions, the MoE groups
    the declaration covers)."""
    if shape is not None:  # the config's dimensions say whether there are experts
        has_experts = bool(shape.num_experts)
        return [name for name in DECLARED_LAYERS
                if (name in _MOE and has_experts) or name in _ALWAYS
                or (name not in _MOE and declared[name].status != "not_targeted")]
    return [name for name in DECLARED_LAYERS
            if declared[name].status != "not_targeted" or name in _ALWAYS]


def layer_expectations(declaration: Declaration, shape: ModelShape | None, arch: str,
                       engines: Sequence[str | None]) -> list[LayerExpectation]:
    """Every shown layer group of ``declaration`` with each engine's expected path on ``arch``."""
    declared = declare_layers(declaration)
    return [LayerExpectation(name, declared[name],
                             {engine: expected_path(declared[name], arch, engine)
                              for engine in engines})
            for name in shown_layers(declared, shape)]


# --- the whole table, for docs/engines.md ---------------------------------------------------------

#: columns of the docs table: architectures that behave alike for most rows share a column
MATRIX_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sm70", ("sm70",)), ("sm75", ("sm75",)), ("sm80/86/87", ("sm80", "sm86", "sm87")),
    ("sm89", ("sm89",)), ("sm90", ("sm90",)), ("sm100/103", ("sm100", "sm103")),
    ("sm110", ("sm110",)), ("sm120/121", ("sm120", "sm121")),
    ("gfx90a", ("gfx90a",)), ("gfx942", ("gfx942",)), ("gfx950", ("gfx950",)),
)
_KIND_MARKS = {"native": "", "by_design": "", "hardware_fallback": " (hw)",
               "engine_fallback": " (engine)"}


def cell(answer: ExpectedPath) -> str:
    """One answer in a few characters: the path, how it is expected, what may beat it."""
    if answer.kind == "unsupported":
        return "no"
    if answer.kind == "unknown":
        return "?"
    text = answer.path + _KIND_MARKS.get(answer.kind, "")
    return text + "".join(f" +{p}" for p in sorted(answer.better))


def _column_cell(scheme: LayerScheme, archs: Sequence[str], engine: str) -> str:
    per_arch = []
    for arch in archs:
        linear = cell(scheme_path(scheme, "linear", arch, engine))
        moe = cell(scheme_path(scheme, "moe", arch, engine))
        per_arch.append(linear if linear == moe else f"{linear}, MoE {moe}")
    if len(set(per_arch)) == 1:
        return per_arch[0]
    return "; ".join(f"{arch}: {text}" for arch, text in zip(archs, per_arch, strict=True))


def markdown_matrix() -> str:
    """The expected path of every declared format on every architecture column, one table per
    engine (the docs/engines.md section between its markers)."""
    archs = {arch for _, group in MATRIX_COLUMNS for arch in group}
    assert archs <= known_archs(), sorted(archs - known_archs())
    out: list[str] = []
    for engine in ENGINES:
        out.append(f"**{ENGINE_NAMES[engine]}**")
        out.append("")
        out.append("| declared format | " + " | ".join(name for name, _ in MATRIX_COLUMNS) + " |")
        out.append("|---|" + "---|" * len(MATRIX_COLUMNS))
        for fmt in kernel_path_table().formats:
            scheme = fmt.sample_scheme()
            cells = [_column_cell(scheme, group, engine) for _, group in MATRIX_COLUMNS]
            out.append(f"| {fmt.label} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
