"""The work of one GEMM op: FLOPs and bytes moved, from its recorded operand shapes and types.

A torch profiler trace recorded with shapes gives, for the CPU op behind each kernel, its
``Input Dims`` and ``Input type``. ``rules/_roofline.toml`` says, per op, which argument is which
operand and how M, N, K follow from their shapes; this module applies it. It works on one op
signature at a time (the caller has already grouped launches by signature in SQL), and it never
guesses: an op that is not in the table, arguments that fit none of its forms, or a type with
no known size give :class:`Unknown` with the reason.

FLOPs = 2·M·N·K·batch. Bytes = every tensor argument read once at its stored size plus the
output written once — the compulsory traffic of the classic roofline model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from math import prod
from typing import Any

from tracekit.datafiles import load_table, require
from tracekit.errors import RuleFileError

ROOFLINE_FILE = "_roofline.toml"
_EXPR = re.compile(r"^\s*(?P<name>[a-z_]+)\[(?P<index>-?\d+|:-1)\]\s*(?:\*\s*(?P<factor>\d+))?\s*$")


@dataclass(frozen=True)
class Work:
    """What one op computes and moves; ``weight_bytes`` and the operand sizes feed the
    expected-path estimate (which re-costs activations and weights in another format)."""

    flops: int
    bytes: int
    m: int
    n: int
    k: int
    batch: int
    a_bytes: int  # the left operand (activations) as stored
    weight_bytes: int | None  # the weight operand as stored; None when the op has no weights
    out_bytes: int  # the output written
    note: str | None = None  # an assumption the model made for this op

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte."""
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class Unknown:
    """No work for this op signature, and why."""

    reason: str


@dataclass(frozen=True)
class _Form:
    args: frozenset[int]
    operands: dict[str, int]
    rank: dict[str, int]
    m: str
    n: str
    k: str
    batch: str
    equal: tuple[tuple[str, str], ...]
    weights: str | None
    output: str


@dataclass(frozen=True)
class _OpSpec:
    name: str
    forms: tuple[_Form, ...]
    note: str | None
    examples: tuple[dict[str, Any], ...]


@cache
def _table() -> dict[str, Any]:
    return load_table(ROOFLINE_FILE)


@cache
def type_sizes() -> dict[str, int]:
    """Bytes per element of each torch ``Input type`` spelling the table knows."""
    return {str(name): int(size) for name, size in _table().get("types", {}).items()}


@cache
def expected_bits() -> dict[str, float]:
    """Bits per value (scales included) of each quantized format on its native path."""
    return {str(name): float(bits) for name, bits in _table().get("expected_bits", {}).items()}


@cache
def op_specs() -> dict[str, _OpSpec]:
    """The op table, by op name."""
    specs: dict[str, _OpSpec] = {}
    for row in _table().get("op", []):
        name = require(row, "name", ROOFLINE_FILE, "[[op]]")
        forms = []
        examples: list[dict[str, Any]] = []
        for form in require(row, "form", ROOFLINE_FILE, f"[[op]] {name}"):
            where = f"[[op.form]] of {name}"
            operands = {str(k): int(v) for k, v in require(form, "operands", ROOFLINE_FILE,
                                                           where).items()}
            expressions = [form.get("batch", "")] + [require(form, key, ROOFLINE_FILE, where)
                                                     for key in ("m", "n", "k")]
            for expression in [e for e in expressions if e] + [
                    side for pair in form.get("equal", []) for side in pair]:
                found = _EXPR.match(expression)
                if not found or found.group("name") not in operands:
                    raise RuleFileError(f"rules/{ROOFLINE_FILE}: {where}: {expression!r} is not "
                                        "OPERAND[i] / OPERAND[:-1] [* N] over its operands")
            weights = form.get("weights")
            if weights is not None and weights not in operands:
                raise RuleFileError(f"rules/{ROOFLINE_FILE}: {where}: weights {weights!r} "
                                    "is not one of its operands")
            forms.append(_Form(
                args=frozenset(int(n) for n in require(form, "args", ROOFLINE_FILE, where)),
                operands=operands,
                rank={str(k): int(v) for k, v in form.get("rank", {}).items()},
                m=form["m"], n=form["n"], k=form["k"], batch=form.get("batch", ""),
                equal=tuple((str(a), str(b)) for a, b in form.get("equal", [])),
                weights=weights, output=require(form, "output", ROOFLINE_FILE, where),
            ))
            examples += form.get("examples", [])
        specs[name] = _OpSpec(name, tuple(forms), row.get("note"), tuple(examples))
    return specs


def parse_list(raw: str | None) -> list[Any] | None:
    """A stored ``input_dims``/``input_types`` JSON text as a list (None when absent or broken)."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def op_work(op_name: str, input_types: str | None, input_dims: str | None) -> Work | Unknown:
    """The work of one op signature as stored (``cpu_ops.input_types``/``input_dims`` JSON)."""
    spec = op_specs().get(op_name)
    if spec is None:
        return Unknown(f"{op_name}: its arguments do not say M, N and K "
                       f"(no entry in rules/{ROOFLINE_FILE})")
    dims = parse_list(input_dims)
    types = parse_list(input_types)
    if dims is None:
        return Unknown(f"{op_name}: no operand shapes recorded (profile with record_shapes=True)")
    if types is None or len(types) != len(dims):
        return Unknown(f"{op_name}: operand types missing or not one per argument")
    return signature_work(spec, [str(t) for t in types], dims)


def signature_work(spec: _OpSpec, types: list[str], dims: list[Any]) -> Work | Unknown:
    """Apply the first form of ``spec`` that fits the recorded arguments."""
    shapes = [_shape(d) for d in dims]
    reasons = []
    for form in spec.forms:
        if len(dims) not in form.args:
            reasons.append(f"{len(dims)} arguments (forms take {sorted(form.args)})")
            continue
        fitted = _fit(form, types, shapes)
        if isinstance(fitted, Unknown):
            reasons.append(fitted.reason)
            continue
        return _work(spec, form, types, shapes, fitted)
    return Unknown(f"{spec.name}: " + (reasons[0] if len(set(reasons)) == 1 else
                                       "; ".join(dict.fromkeys(reasons))))


def _shape(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list) or not all(isinstance(d, int) and d >= 0 for d in value):
        return None  # nested lists (TensorList) and other non-tensor arguments
    return tuple(value)


def _operand(form: _Form, shapes: list[tuple[int, ...] | None], name: str
             ) -> tuple[int, ...] | None:
    index = form.operands[name]
    return shapes[index] if index < len(shapes) else None


def _evaluate(expression: str, form: _Form, shapes: list[tuple[int, ...] | None]) -> int | None:
    found = _EXPR.match(expression)
    assert found is not None  # checked when the table was loaded
    shape = _operand(form, shapes, found.group("name"))
    if not shape:
        return None
    index = found.group("index")
    if index == ":-1":
        value = prod(shape[:-1])
    else:
        position = int(index)
        if not -len(shape) <= position < len(shape):
            return None
        value = shape[position]
    return value * int(found.group("factor") or 1)


def _fit(form: _Form, types: list[str], shapes: list[tuple[int, ...] | None]
         ) -> dict[str, int] | Unknown:
    for name, rank in form.rank.items():
        shape = _operand(form, shapes, name)
        if shape is None or len(shape) != rank:
            return Unknown(f"operand {name} is not {rank}-D")
    values: dict[str, int] = {}
    for key in ("m", "n", "k", "batch"):
        expression = getattr(form, key)
        if not expression:
            values[key] = 1
            continue
        value = _evaluate(expression, form, shapes)
        if value is None:
            return Unknown(f"{key} = {expression}: that operand has no such dimension "
                           f"(shapes {_shapes_text(shapes)})")
        values[key] = value
    for left, right in form.equal:
        a, b = _evaluate(left, form, shapes), _evaluate(right, form, shapes)
        if left.startswith("out[") and _operand(form, shapes, "out") in (None, ()):
            continue  # no output argument recorded: nothing to agree with
        if a is None or b is None or a != b:
            return Unknown(f"{left} = {a} and {right} = {b} should agree "
                           f"(shapes {_shapes_text(shapes)})")
    return values


def _shapes_text(shapes: list[tuple[int, ...] | None]) -> str:
    return ", ".join("[" + ",".join(map(str, s)) + "]" if s is not None else "-" for s in shapes)


def _tensor_bytes(type_name: str, shape: tuple[int, ...] | None) -> int | None:
    """Stored bytes of one argument: 0 for None/scalars, None when the type has no known size."""
    if shape is None or not type_name or type_name.startswith("Scalar") or \
            type_name in ("TensorList", "GenericList"):
        return 0
    size = type_sizes().get(type_name)
    if size is None:
        return None
    return prod(shape) * size  # prod(()) == 1: a 0-d tensor is one element


def _work(spec: _OpSpec, form: _Form, types: list[str], shapes: list[tuple[int, ...] | None],
          values: dict[str, int]) -> Work | Unknown:
    m, n, k, batch = values["m"], values["n"], values["k"], values["batch"]
    total = 0
    sizes: list[int] = []
    for type_name, shape in zip(types, shapes, strict=True):
        stored = _tensor_bytes(type_name, shape)
        if stored is None:
            return Unknown(f"{spec.name}: input type {type_name!r} has no size in "
                           f"rules/{ROOFLINE_FILE}")
        sizes.append(stored)
        total += stored
    out_index = form.operands.get("out")
    out_shape = shapes[out_index] if out_index is not None and out_index < len(shapes) else None
    if out_shape:
        out_bytes = sizes[out_index] if out_index is not None else 0
    else:
        out_type = types[form.operands["a"]] if form.output == "a" else form.output
        size = type_sizes().get(out_type)
        if size is None:
            return Unknown(f"{spec.name}: output type {out_type!r} has no size in "
                           f"rules/{ROOFLINE_FILE}")
        out_bytes = batch * m * n * size
        total += out_bytes
    weights = sizes[form.operands[form.weights]] if form.weights else None
    return Work(flops=2 * m * n * k * batch, bytes=total, m=m, n=n, k=k, batch=batch,
                a_bytes=sizes[form.operands["a"]], weight_bytes=weights, out_bytes=out_bytes,
                note=spec.note)
