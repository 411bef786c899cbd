"""The declaration per layer group: which scheme each group of the model is declared to run.

A checkpoint names modules (``model.layers.0.mlp.gate_proj``, ``re:.*self_attn.*``,
``Linear``, ``lm_head``) in its targets and exclusions; the judgement works on layer groups
(``tracekit.vocabulary.LAYERS``). ``module_layer`` maps a module name or pattern to its group
by the words of ``rules/_layer_names.toml``. ``declare_layers`` matches the declaration's rules
(:class:`ModuleRule`, in the engine's order) against the modules the model has
(:mod:`tracekit.expect.checkpoint.modules`) and gives every group one
:class:`LayerDeclaration`:

- ``quantized``: every module of the group gets the same scheme;
- ``excluded``: every module stays 16-bit and an entry of the config says so for some of them;
- ``not_targeted``: no entry names the group's modules — 16-bit by default. A class target
  (``Linear``, a method that quantizes "every linear layer") reaches attention, MLP and expert
  linears only: lm_head, embeddings, routers and vision towers stay 16-bit unless a target
  names them (docs/engines.md#checkpoint-declarations says why, with the engine sources);
- ``mixed``: the group's modules are declared differently (some layers excluded, FP8 and W4A16
  projections in one group, GPTQModel overrides per layer) — ``schemes`` lists each part, a
  16-bit part as a ``W16A16`` scheme, and ``counts`` how many of the group's modules each has.

A pattern that matches none of the modules tracekit knows for the model but names a group by
its words (``model.layers.vision_model*``) is applied to that whole group: the checkpoint's
spelling wins over the family's. A declaration tracekit does not understand
(``Declaration.not_understood``) declares every linear group ``quantized`` with an ``unknown``
scheme and the 16-bit groups ``not_targeted``, each with that reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from tracekit.expect.checkpoint.declaration import (
    Declaration,
    LayerScheme,
    ModuleRule,
    sixteen_bit_scheme,
)
from tracekit.expect.checkpoint.layer_names import module_layer
from tracekit.expect.checkpoint.matching import matcher
from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.vocabulary import DEFAULT_16BIT_LAYERS, LAYERS

#: the layer groups a declaration speaks of (the attribution's fallbacks are not declared)
DECLARED_LAYERS: tuple[str, ...] = tuple(
    layer for layer in LAYERS if layer not in {"decoder_layers", "unknown"})

_LAYER_INDEX = re.compile(r"layers(?:\\)?\.(\d+)(?:\\)?[.*]")
#: a pattern whose last part is a norm, a bias or a convolution names no GEMM (Qwen3-FP8 lists
#: its layernorms in modules_to_not_convert): it must not exclude the group its words recall
_NOT_A_GEMM = re.compile(r"(norm|bias|conv1d|conv|rotary|scale)[^.]*$", re.IGNORECASE)

STATUSES = ("quantized", "excluded", "not_targeted", "mixed")

#: why a group nothing names stays 16-bit (docs/engines.md#checkpoint-declarations)
_DEFAULT_REASONS = {
    "lm_head": "lm_head is not named by the quantization config: 16-bit (engines quantize the "
               "output projection only where the method says so, e.g. GPTQ lm_head: true)",
    "embedding": "the embeddings are not named: a 16-bit lookup, not a quantized GEMM",
    "moe_router": "the MoE router is not named: 16-bit (vLLM and SGLang build routers "
                  "without the checkpoint's quantization)",
    "vision": "the vision tower is not named: 16-bit",
}


@dataclass(frozen=True)
class LayerDeclaration:
    """What one layer group is declared to compute.

    ``scheme`` is None for a 16-bit group (``excluded`` or ``not_targeted``) and for a
    ``mixed`` one; ``reason`` names the config entry that decided (``ignore: lm_head``,
    ``config_groups.group_0.targets Linear``), so the layer table can show it.
    """

    layer: str
    status: str  # one of STATUSES
    scheme: LayerScheme | None
    reason: str
    #: the schemes of a ``mixed`` group's modules (a 16-bit part as a W16A16 scheme)
    schemes: tuple[LayerScheme, ...] = ()
    #: how many of the group's modules each of ``schemes`` covers (aligned with it)
    counts: tuple[int, ...] = ()
    #: whether the model has this group: True, False, or None when its config does not say
    present: bool | None = None

    @property
    def sixteen_bit(self) -> bool:
        """Whether the group is declared to stay in 16-bit math."""
        return self.status in {"excluded", "not_targeted"}


# One module's decision: its scheme (None: 16-bit), the status a 16-bit decision gives, and the
# rule that decided (None: nothing named it).
_Decision = tuple[LayerScheme | None, str, ModuleRule | None]


def declare_layers(declaration: Declaration,
                   shape: ModelShape | None = None) -> dict[str, LayerDeclaration]:
    """Every declared layer group's declaration (``DECLARED_LAYERS``).

    ``shape`` (default: the one read with the declaration) tells which layers and groups the
    model has; without one, a few layers of the family's module names stand for the model and
    every group's ``present`` is None.
    """
    return dict(_declare(declaration, shape if shape is not None else declaration.shape))


@lru_cache(maxsize=64)
def _declare(declaration: Declaration,
             shape: ModelShape | None) -> tuple[tuple[str, LayerDeclaration], ...]:
    """declare_layers, once per (declaration, shape): the judgement asks for every phase."""
    return tuple(_declare_uncached(declaration, shape).items())


def _declare_uncached(declaration: Declaration,
                      shape: ModelShape | None) -> dict[str, LayerDeclaration]:
    from tracekit.expect.checkpoint.modules import Module, model_modules

    if declaration.not_understood is not None:
        return _not_understood(declaration, shape)
    if declaration.module_names:  # the file lists every module (GGUF): no names to guess
        modules = [Module(name, layer) for name in declaration.module_names
                   if (layer := module_layer(name)) is not None]
        have = {m.layer for m in modules}
        present: dict[str, bool | None] = {g: g in have for g in DECLARED_LAYERS}
    else:
        inventory = model_modules(shape, _rule_names(declaration.rules), DECLARED_LAYERS)
        modules = list(inventory.modules)
        present = dict(inventory.present)
    decisions = _decide(declaration, modules)
    sixteen = sixteen_bit_scheme(declaration.compute_dtype)
    result: dict[str, LayerDeclaration] = {}
    for layer in DECLARED_LAYERS:
        mine = [decisions[i] for i, module in enumerate(modules) if module.layer == layer]
        if layer == "vision" and any(d[2] is not None for d in mine):
            # the vision names are alternative spellings of one tower: those the config's
            # entries name decide, the spellings nothing names are not other modules
            mine = [d for d in mine if d[2] is not None]
        result[layer] = _group(layer, mine, sixteen, present.get(layer), declaration)
    return result


def _rule_names(rules: Iterable[ModuleRule]) -> list[str]:
    return [rule.pattern for rule in rules if rule.match != "class"]


def _decide(declaration: Declaration, modules: list) -> list[_Decision]:
    rules = declaration.rules
    if declaration.method == "unquantized" or not rules:
        return [(None, "not_targeted", None) for _ in modules]
    # plain names (a MIXED_PRECISION checkpoint lists hundreds) are looked up, not matched:
    # an exact name decides the module it names, a wildcard-kind name also the modules inside
    exact: dict[str, int] = {}
    blocks: dict[str, int] = {}
    patterned: list[int] = []
    for number, rule in enumerate(rules):
        plain = rule.match in {"exact", "ct", "wildcard"} and "*" not in rule.pattern \
            and not rule.pattern.startswith("re:")
        if plain:
            table = blocks if rule.match == "wildcard" else exact
            table.setdefault(rule.pattern, number)
        else:
            patterned.append(number)
    decided: list[_Decision | None] = [None] * len(modules)
    hits = Counter[int]()
    for index, module in enumerate(modules):
        best = exact.get(module.name, len(rules))
        parts = module.name.split(".")
        for cut in range(len(parts), 0, -1):
            best = min(best, blocks.get(".".join(parts[:cut]), len(rules)))
        for number in patterned:
            if number >= best:
                break
            rule = rules[number]
            if rule.match == "class":
                if module.layer in (rule.groups or ()):
                    best = number
                    break
            elif matcher(rule.pattern, rule.match)(module.name):
                best = number
                break
        if best < len(rules):
            rule = rules[best]
            hits[best] += 1
            decided[index] = (rule.scheme, rule.status, rule)
    # patterns in a spelling the family's names lack: apply them to the group their words name
    for number, rule in enumerate(rules):
        if rule.match == "class" or hits[number]:
            continue
        layer = module_layer(rule.pattern)
        if layer is None or _NOT_A_GEMM.search(rule.pattern.rstrip("*$")):
            continue
        index_match = _LAYER_INDEX.search(rule.pattern)
        only = int(index_match.group(1)) if index_match else None
        for index, module in enumerate(modules):
            if module.layer != layer or (only is not None and module.index != only):
                continue
            current = decided[index]
            if current is None or current[2] is None or current[2].match == "class":
                decided[index] = (rule.scheme, rule.status, rule)
    return [d if d is not None else (None, "not_targeted", None) for d in decided]


def _group(layer: str, decisions: list[_Decision], sixteen: LayerScheme,
           present: bool | None, declaration: Declaration) -> LayerDeclaration:
    if not decisions:
        return LayerDeclaration(layer, "not_targeted", None, _default_reason(layer),
                                present=present)
    parts: dict[tuple[object, ...], list[_Decision]] = {}
    for decision in decisions:
        scheme = decision[0]
        key: tuple[object, ...] = ("16",) if scheme is None else (
            scheme.path, scheme.weights, scheme.activations, scheme.scheme)
        parts.setdefault(key, []).append(decision)
    total = len(decisions)
    if len(parts) == 1:
        members = next(iter(parts.values()))
        scheme = members[0][0]
        if scheme is None:
            rules = [d[2] for d in members if d[2] is not None and d[1] == "excluded"]
            if rules:
                return LayerDeclaration(layer, "excluded", None,
                                        _reason(rules, total, "16-bit"), present=present)
            rules = [d[2] for d in members if d[2] is not None]
            reason = _reason(rules, total, "16-bit") if rules else _default_reason(layer)
            return LayerDeclaration(layer, "not_targeted", None, reason, present=present)
        rules = [d[2] for d in members if d[2] is not None]
        return LayerDeclaration(layer, "quantized", scheme,
                                _reason(rules, total, f"{scheme.scheme} {scheme.quant}"),
                                present=present)
    schemes: list[LayerScheme] = []
    counts: list[int] = []
    reasons: list[str] = []
    for _, members in sorted(parts.items(), key=lambda item: -len(item[1])):
        scheme = members[0][0]
        schemes.append(sixteen if scheme is None else scheme)
        counts.append(len(members))
        label = "16-bit" if scheme is None else f"{scheme.scheme} {scheme.quant}"
        rules = [d[2] for d in members if d[2] is not None]
        reasons.append(_reason(rules, total, label, count=len(members)))
    return LayerDeclaration(layer, "mixed", None, "; ".join(reasons), schemes=tuple(schemes),
                            counts=tuple(counts), present=present)


def _reason(rules: list[ModuleRule], total: int, label: str, count: int | None = None) -> str:
    """``<count>/<total> modules <label>: <entry> <pattern>`` naming the most frequent rule."""
    share = "" if count is None else f"{count}/{total} modules "
    if not rules:
        return f"{share}{label}: not named by the quantization config"
    common = Counter((rule.entry, rule.pattern, rule.match) for rule in rules)
    (entry, pattern, match), _ = common.most_common(1)[0]
    named = entry if match == "class" else f"{entry}: {pattern}"
    more = len(common) - 1
    suffix = f" (and {more} more entr{'y' if more == 1 else 'ies'})" if more else ""
    return f"{share}{label}: {named}{suffix}"


def _default_reason(layer: str) -> str:
    return _DEFAULT_REASONS.get(layer, "not named by the quantization config: 16-bit")


def _not_understood(declaration: Declaration,
                    shape: ModelShape | None) -> dict[str, LayerDeclaration]:
    from tracekit.expect.checkpoint.modules import model_modules

    present = model_modules(shape, (), DECLARED_LAYERS).present
    unknown = LayerScheme(("*",), None, None, "unknown", "unknown", declaration.method)
    reason = f"declaration not understood: {declaration.not_understood}"
    result: dict[str, LayerDeclaration] = {}
    for layer in DECLARED_LAYERS:
        if layer in DEFAULT_16BIT_LAYERS:
            result[layer] = LayerDeclaration(layer, "not_targeted", None, reason,
                                             present=present.get(layer))
        else:
            result[layer] = LayerDeclaration(layer, "quantized", unknown, reason,
                                             present=present.get(layer))
    return result
