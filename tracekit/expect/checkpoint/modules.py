"""The linear modules a model has, by name and layer group: what a checkpoint's patterns are
matched against.

A checkpoint's exclusions name modules (``model.layers.10.self_attn*``,
``re:.*mlp\\.(gate|up|down)_proj.*``, ``model.layers.0*``); only matching them against the
modules the model really has tells whether a whole layer group is excluded, part of it, or
none. The names follow the family's conventions (the ``[[family]]`` rows of
``rules/_layer_names.toml``), corrected by the names the config itself uses (its layer prefix,
its attention projections), and the layer structure of :class:`ModelShape` (how many layers,
which are dense or mixture-of-experts, which use linear attention). One module per linear
projection per layer is enough: patterns name projections, blocks or layers, never tensors.

Groups the model does not have still get their family's names (so every group has a declared
status); :attr:`ModuleInventory.present` says which groups the model has.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from tracekit.datafiles import load_table
from tracekit.expect.checkpoint.layer_names import module_layer
from tracekit.expect.checkpoint.shape import ModelShape

LAYER_NAMES_FILE = "_layer_names.toml"
#: decoder layers probed when the config does not say how many there are
UNKNOWN_LAYER_COUNT = 4
_LAYER_INDEX = re.compile(r"(?:^|\.)layers\.(\d+)(?:\.|\*|$)")
_PREFIX = re.compile(r"^(?P<prefix>[\w.]*?)layers\.(?:\d+|\*)")
_PLAIN = re.compile(r"^[\w.*]+$")


@dataclass(frozen=True)
class Module:
    """One linear module of the model (or one block standing for a fused set of them)."""

    name: str
    layer: str  # a LAYERS word
    index: int | None = None  # the decoder layer, None outside the decoder stack


@dataclass(frozen=True)
class ModuleInventory:
    """The modules of every declared layer group, and which groups the model has."""

    modules: tuple[Module, ...]
    #: layer group → True (the model has it), False (it has not), None (the config does not say)
    present: Mapping[str, bool | None]
    layer_count: int
    #: whether the layer count came from the config (False: guessed from names or a default)
    layer_count_known: bool


@cache
def _families() -> tuple[dict[str, Any], ...]:
    return tuple(dict(row) for row in load_table(LAYER_NAMES_FILE).get("family", []))


def family(*model_types: str | None) -> dict[str, Any]:
    """The module naming of a model: the default row overlaid by every row naming one of its
    ``model_types`` (the language model's and the wrapper's)."""
    merged: dict[str, Any] = {}
    wanted = {t for t in model_types if t}
    for row in _families():
        types = row.get("model_types", [])
        if "*" in types or wanted & set(types):
            merged.update({key: value for key, value in row.items() if key != "model_types"})
    return merged


def model_modules(shape: ModelShape | None, names: Iterable[str] = (),
                  groups: Iterable[str] = ()) -> ModuleInventory:
    """The inventory of a model of ``shape`` whose config names the modules ``names``."""
    names = [name for name in names if isinstance(name, str)]
    fam = family(shape.model_type, shape.outer_model_type) if shape else family()
    prefix = _learned_prefix(names, fam)
    count, known = _layer_count(shape, names)
    learned = _learned_leaves(names, prefix)
    modules: list[Module] = []
    for index in range(count):
        base = f"{prefix}layers.{index}."
        modules += _attention(base, index, shape, fam, learned)
        dense = shape.layer_has_dense_mlp(index) if shape else None
        moe = shape.layer_is_moe(index) if shape else None
        if dense is not False:
            modules += [Module(f"{base}{fam['mlp']}.{leaf}", "mlp", index)
                        for leaf in fam["mlp_leaves"]]
        if moe is not False:
            modules += _experts(base, index, shape, fam)
    # groups the layer structure left out still get names (their declared status)
    have = {module.layer for module in modules}
    base = f"{prefix}layers.0."
    if "mlp" not in have:
        modules += [Module(f"{base}{fam['mlp']}.{leaf}", "mlp", 0) for leaf in fam["mlp_leaves"]]
    if "moe_experts" not in have:
        modules += _experts(base, 0, None, fam)
    modules += [Module(name, "lm_head") for name in _named(names, "lm_head", fam["lm_head"])]
    modules += [Module(name, "embedding")
                for name in _named(names, "embedding", fam["embedding"])]
    modules += [Module(name, "vision") for name in fam["vision"]]
    return ModuleInventory(tuple(modules), _presence(shape, groups), count, known)


def _attention(base: str, index: int, shape: ModelShape | None, fam: Mapping[str, Any],
               learned: Mapping[str, list[str]]) -> list[Module]:
    if shape is not None and shape.attention_kind(index) == "linear":
        block, leaves = fam["linear_attention"], list(fam["linear_attention_leaves"])
    elif shape is not None and shape.latent_attention:
        block, leaves = fam["attention"], list(fam["latent_attention_leaves"])
        if not shape.q_lora_rank and "q_a_proj" in leaves:  # DeepSeek-V2-Lite: one q_proj
            leaves = ["q_proj"] + [leaf for leaf in leaves if leaf not in ("q_a_proj", "q_b_proj")]
    else:
        block, leaves = fam["attention"], list(fam["attention_leaves"])
    leaves += [leaf for leaf in learned.get(block, []) if leaf not in leaves]
    return [Module(f"{base}{block}.{leaf}", "attention", index) for leaf in leaves]


def _experts(base: str, index: int, shape: ModelShape | None,
             fam: Mapping[str, Any]) -> list[Module]:
    experts = fam["experts"]
    if fam.get("fused_experts"):
        modules = [Module(f"{base}{experts}.{leaf}", "moe_experts", index)
                   for leaf in fam["expert_leaves"]]
    else:
        modules = [Module(f"{base}{experts}.0.{leaf}", "moe_experts", index)
                   for leaf in fam["expert_leaves"]]
    shared = shape is None or bool(shape.num_shared_experts
                                   or shape.shared_expert_intermediate_size)
    if shared and fam.get("shared_experts"):
        modules += [Module(f"{base}{fam['shared_experts']}.{leaf}", "moe_experts", index)
                    for leaf in fam["mlp_leaves"]]
    modules.append(Module(f"{base}{fam['router']}", "moe_router", index))
    if shared:
        modules += [Module(f"{base}{router}", "moe_router", index)
                    for router in fam.get("extra_routers", [])]
    return modules


def _learned_prefix(names: list[str], fam: Mapping[str, Any]) -> str:
    """The text before ``layers.N.`` most names of the config use (the family's otherwise)."""
    found = Counter(match.group("prefix") for name in names if _PLAIN.match(name)
                    and (match := _PREFIX.match(name)))
    return found.most_common(1)[0][0] if found else str(fam["layer_prefix"])


def _learned_leaves(names: list[str], prefix: str) -> dict[str, list[str]]:
    """Attention projections the config names that the family's list lacks."""
    leaves: dict[str, list[str]] = {}
    pattern = re.compile(rf"^{re.escape(prefix)}layers\.\d+\.(\w+)\.(\w+)$")
    for name in names:
        match = pattern.match(name)
        if match and module_layer(f"{match.group(1)}.{match.group(2)}") == "attention":
            found = leaves.setdefault(match.group(1), [])
            if match.group(2) not in found:
                found.append(match.group(2))
    return leaves


def _named(names: list[str], layer: str, default: str) -> list[str]:
    """The family's name for a top-level module plus the exact spellings the config uses."""
    spelled = [name for name in names if re.fullmatch(r"[\w.]+", name)
               and module_layer(name) == layer and not _LAYER_INDEX.search(name)]
    return list(dict.fromkeys([default, *spelled]))


def _layer_count(shape: ModelShape | None, names: list[str]) -> tuple[int, bool]:
    if shape is not None and shape.num_hidden_layers:
        return shape.num_hidden_layers, True
    indices = [int(match.group(1)) for name in names
               if (match := _LAYER_INDEX.search(name)) and int(match.group(1)) < 1000]
    return (max(indices) + 1, False) if indices else (UNKNOWN_LAYER_COUNT, False)


def _presence(shape: ModelShape | None, groups: Iterable[str]) -> dict[str, bool | None]:
    groups = tuple(groups)
    if shape is None or not shape.known_architecture:
        return {group: None for group in groups}
    layers = shape.num_hidden_layers or 1
    moe = shape.is_moe
    dense = [shape.layer_has_dense_mlp(i) for i in range(layers)]
    present: dict[str, bool | None] = {
        "attention": True,
        "mlp": True if any(dense) else (None if None in dense else False),
        "moe_experts": moe,
        "moe_router": moe,
        "lm_head": True,
        "embedding": True,
        "vision": shape.has_vision,
    }
    return {group: present.get(group) for group in groups}
