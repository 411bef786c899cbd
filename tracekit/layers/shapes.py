"""Operand shapes → layer groups: a GEMM's weight (N × K) against the model's dimensions.

The weight shape of each of a decoder LLM's linear layers follows from its config
(``rules/_layer_shapes.toml``: q/k/v, fused qkv, o, gate/up, down, experts, router, lm_head,
at tensor-parallel degrees 1 to 16). ``weight_fits`` lists every projection a weight fits;
``read_signatures`` takes the run's op signatures (one per distinct op name, types and dims,
their N and K read by the roofline's work model, ``tracekit.roofline.work``) and decides each:
one layer group, ambiguous (several groups fit: said, never guessed), or none.

The tensor-parallel degree is one per run: when the signatures that fit one group at one
degree agree on a single degree, readings at other degrees are dropped from the rest (a
128 × 2880 router of gpt-oss is also one rank's two KV heads at tp 4, until the run's q/k/v
shapes say tp 1).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from tracekit.datafiles import load_table, require
from tracekit.errors import RuleFileError
from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.roofline.work import Unknown, Work, op_work

SHAPES_FILE = "_layer_shapes.toml"
#: tensor-parallel degrees tried
TP_DEGREES = (1, 2, 4, 8, 16)
#: vLLM pads the vocabulary of ParallelLMHead to a multiple of this
VOCAB_PADDING = 64


@dataclass(frozen=True)
class Projection:
    """One linear layer's weight: N and K as expressions over the model's dimensions."""

    layer: str
    role: str
    n: ast.Expression
    k: ast.Expression


@dataclass(frozen=True)
class Fit:
    """A weight that fits ``role`` of ``layer`` at tensor-parallel degree ``tp``."""

    layer: str
    role: str
    tp: int


@dataclass(frozen=True)
class ShapeReading:
    """What one op signature's weight says: ``layer`` (None when none or several fit),
    the fits behind it and the sentence for the layer table."""

    layer: str | None
    fits: tuple[Fit, ...]
    detail: str
    ambiguous: bool = False


_ALLOWED = (ast.Expression, ast.BinOp, ast.Add, ast.Mult, ast.Div, ast.Name, ast.Load,
            ast.Constant)


def _compile(expression: str, where: str) -> ast.Expression:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise RuleFileError(f"rules/{SHAPES_FILE}: {where}: {expression!r} is not an "
                            "expression") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED) or (
                isinstance(node, ast.Constant) and type(node.value) is not int):
            raise RuleFileError(f"rules/{SHAPES_FILE}: {where}: {expression!r}: only names, "
                                "integers, +, * and / are allowed")
    return tree


@cache
def projections() -> tuple[Projection, ...]:
    """The table's projections, in file order."""
    rows = []
    for index, row in enumerate(load_table(SHAPES_FILE).get("projection", [])):
        where = f"[[projection]] {index + 1}"
        rows.append(Projection(
            layer=str(require(row, "layer", SHAPES_FILE, where)),
            role=str(require(row, "role", SHAPES_FILE, where)),
            n=_compile(str(require(row, "n", SHAPES_FILE, where)), where),
            k=_compile(str(require(row, "k", SHAPES_FILE, where)), where)))
    return tuple(rows)


def dimensions(shape: ModelShape, tp: int) -> dict[str, int | None]:
    """The names the table's expressions use, for one tensor-parallel degree."""
    experts = shape.num_experts
    intermediate = shape.intermediate_size
    expert_intermediate = shape.moe_intermediate_size or (intermediate if experts else None)
    dense = intermediate if not experts or shape.moe_intermediate_size else None
    kv = shape.kv_heads
    vocab = shape.vocab_size
    return {
        "hidden": shape.hidden_size, "heads": shape.num_attention_heads, "kv_heads": kv,
        "head_dim": shape.resolved_head_dim, "vocab": vocab,
        "vocab_padded": -(-vocab // VOCAB_PADDING) * VOCAB_PADDING if vocab else None,
        "experts": experts, "tp": tp,
        "kv_per_rank": max(1, kv // tp) if kv and (kv % tp == 0 or tp > kv) else None,
        "dense_intermediate": dense, "expert_intermediate": expert_intermediate,
        "shared_intermediate": shape.shared_expert_intermediate_size,
    }


class _Undefined(Exception):
    """A dimension the config does not give, or a division with a remainder."""


def _value(node: ast.AST, names: Mapping[str, int | None]) -> int:
    if isinstance(node, ast.Expression):
        return _value(node.body, names)
    if isinstance(node, ast.Constant):
        assert type(node.value) is int  # checked when the table was loaded
        return node.value
    if isinstance(node, ast.Name):
        value = names.get(node.id)
        if value is None:
            raise _Undefined(node.id)
        return value
    assert isinstance(node, ast.BinOp)
    left, right = _value(node.left, names), _value(node.right, names)
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Mult):
        return left * right
    if right == 0 or left % right:
        raise _Undefined("remainder")
    return left // right


def weight_fits(n: int, k: int, shape: ModelShape,
                degrees: Iterable[int] = TP_DEGREES) -> list[Fit]:
    """Every projection of the model a weight of N × K fits, at the degrees given."""
    fits = []
    for tp in degrees:
        names = dimensions(shape, tp)
        for projection in projections():
            try:
                if _value(projection.n, names) == n and _value(projection.k, names) == k:
                    fits.append(Fit(projection.layer, projection.role, tp))
            except _Undefined:
                continue
    return fits


def reading(n: int, k: int, fits: list[Fit], op_name: str) -> ShapeReading:
    """The decision for one weight shape from its fits."""
    weight = f"{op_name} weight N={n} K={k}"
    layers = list(dict.fromkeys(fit.layer for fit in fits))
    if not layers:
        return ShapeReading(None, (), f"{weight} is no projection of the model")
    if len(layers) > 1:
        said = "; ".join(f"{layer} ({_roles(fits, layer)})" for layer in layers)
        return ShapeReading(None, tuple(fits), f"{weight} fits {said}: ambiguous", True)
    return ShapeReading(layers[0], tuple(fits), f"{weight} is {_roles(fits, layers[0])}")


def _roles(fits: Iterable[Fit], layer: str) -> str:
    by_role: dict[str, list[int]] = {}
    for fit in fits:
        if fit.layer == layer:
            by_role.setdefault(fit.role, []).append(fit.tp)
    return " or ".join(f"{role} at tp {'/'.join(map(str, tps))}"
                       for role, tps in by_role.items())


@dataclass(frozen=True)
class Signature:
    """One op signature as stored (``cpu_ops.name``, ``input_types``, ``input_dims``)."""

    op_name: str
    input_types: str | None
    input_dims: str | None


def read_signatures(signatures: Iterable[Signature], shape: ModelShape
                    ) -> dict[Signature, ShapeReading | None]:
    """Each signature's reading (None for an op whose work says nothing about a weight:
    not in the work model, no shapes recorded, a batched matmul without weights)."""
    works: dict[Signature, Work] = {}
    out: dict[Signature, ShapeReading | None] = {}
    for signature in signatures:
        work: Work | Unknown = op_work(signature.op_name, signature.input_types,
                                       signature.input_dims)
        if isinstance(work, Work) and work.weight_bytes is not None:
            works[signature] = work
        else:
            out[signature] = None
    fits = {signature: weight_fits(work.n, work.k, shape) for signature, work in works.items()}
    degree = run_degree(fits.values())
    for signature, work in works.items():
        found = fits[signature]
        narrowed = [fit for fit in found if fit.tp == degree]
        result = reading(work.n, work.k, narrowed or found, signature.op_name)
        if narrowed and len(narrowed) < len(found):
            result = ShapeReading(result.layer, result.fits, f"{result.detail} (readings at "
                                  f"other degrees dropped: the run's shapes say tp {degree})",
                                  result.ambiguous)
        out[signature] = result
    return out


def run_degree(all_fits: Iterable[list[Fit]]) -> int | None:
    """The tensor-parallel degree the unambiguous shapes agree on, or None."""
    degrees = set()
    for fits in all_fits:
        if len({fit.layer for fit in fits}) == 1 and len({fit.tp for fit in fits}) == 1:
            degrees.add(fits[0].tp)
    return degrees.pop() if len(degrees) == 1 else None


def shape_from_example(fields: Mapping[str, Any]) -> ModelShape:
    """A ModelShape from a table example's ``shape`` (for ``tracekit rules test``)."""
    values: dict[str, Any] = {str(key): int(value) for key, value in fields.items()}
    return ModelShape(**values)


def check_examples() -> tuple[int, list[str]]:
    """The table's examples (``tracekit rules test``): how many, and what failed."""
    count, failures = 0, []
    for index, example in enumerate(load_table(SHAPES_FILE).get("example", [])):
        count += 1
        shape = shape_from_example(example["shape"])
        degrees = (int(example["tp"]),) if "tp" in example else TP_DEGREES
        fits = weight_fits(int(example["n"]), int(example["k"]), shape, degrees)
        result = reading(int(example["n"]), int(example["k"]), fits, "example")
        got = ("ambiguous" if result.ambiguous else result.layer or "none")
        if got != example["layer"]:
            failures.append(f"example {index + 1}: {result.detail}, expected {example['layer']}")
        elif "role" in example and {fit.role for fit in fits} != {example["role"]}:
            failures.append(f"example {index + 1}: roles {sorted({f.role for f in fits})}, "
                            f"expected {example['role']}")
    return count, failures
