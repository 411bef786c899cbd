"""The declaration per layer group: which scheme each group of the model is declared to run.

A checkpoint names modules (``model.layers.0.mlp.gate_proj``, ``re:.*self_attn.*``,
``Linear``, ``lm_head``) in its targets and exclusions; the judgement works on layer groups
(``tracekit.vocabulary.LAYERS``). ``module_layer`` maps a module name or pattern to its group
by the words of ``rules/_layer_names.toml``; ``declare_layers`` then gives every group one
:class:`LayerDeclaration`: quantized with a scheme, excluded (16-bit, and which entry said so),
not targeted (16-bit by default: lm_head, embeddings, routers, vision towers), or mixed (the
group's modules are declared differently, which only a per-module attribution could judge).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from tracekit.datafiles import load_table
from tracekit.expect.checkpoint.declaration import Declaration, LayerScheme
from tracekit.vocabulary import DEFAULT_16BIT_LAYERS, LAYERS

LAYER_NAMES_FILE = "_layer_names.toml"
#: the layer groups a declaration speaks of (the attribution's fallbacks are not declared)
DECLARED_LAYERS: tuple[str, ...] = tuple(
    layer for layer in LAYERS if layer not in {"decoder_layers", "unknown"})
#: targets that mean "every linear layer" (compressed-tensors class names, ModelOpt's "*")
_ALL_LINEAR = re.compile(r"^(?:\*|Linear|nn\.Linear|torch\.nn\.Linear|re:\.\*|\.\*)$")

_REGEX_SYNTAX = re.compile(r"\.\*|\.\+|\\\.|[\^$()?+|\[\]]")

STATUSES = ("quantized", "excluded", "not_targeted", "mixed")


@dataclass(frozen=True)
class LayerDeclaration:
    """What one layer group is declared to compute.

    ``scheme`` is None for a 16-bit group (``excluded`` or ``not_targeted``); ``reason`` names
    the config entry that decided (``ignore: lm_head``, ``config_groups.group_0 targets
    Linear``), so the layer table can show it.
    """

    layer: str
    status: str  # one of STATUSES
    scheme: LayerScheme | None
    reason: str
    #: the schemes of a ``mixed`` group's modules
    schemes: tuple[LayerScheme, ...] = ()

    @property
    def sixteen_bit(self) -> bool:
        """Whether the group is declared to stay in 16-bit math."""
        return self.status in {"excluded", "not_targeted"}


@cache
def _layer_words() -> tuple[tuple[str, re.Pattern[str]], ...]:
    rows = load_table(LAYER_NAMES_FILE).get("layer", [])
    return tuple((str(row["layer"]), re.compile(str(row["regex"]), re.IGNORECASE))
                 for row in rows)


def module_layer(name: str) -> str | None:
    """The layer group a module name or target pattern speaks of, or None when it names no
    single group (``Linear``, ``*``, a pattern over several)."""
    # a pattern's syntax (``re:.*mlp\.experts.*$``) becomes separators between the words
    text = _REGEX_SYNTAX.sub(".", name.removeprefix("re:"))
    for layer, regex in _layer_words():
        if regex.search(text):
            return layer
    return None


def declare_layers(declaration: Declaration) -> dict[str, LayerDeclaration]:
    """Every declared layer group's declaration (``DECLARED_LAYERS``)."""
    result: dict[str, LayerDeclaration] = {}
    excluded: dict[str, str] = {}
    for pattern in declaration.excluded:
        layer = module_layer(pattern)
        if layer is not None:
            excluded.setdefault(layer, pattern)
    for layer in DECLARED_LAYERS:
        schemes: list[tuple[LayerScheme, str]] = []
        for scheme in declaration.layers or ():
            reason = _targets_layer(scheme, layer)
            if reason is not None:
                schemes.append((scheme, reason))
        if layer in excluded:
            result[layer] = LayerDeclaration(layer, "excluded", None,
                                             f"excluded: {excluded[layer]}")
        elif not schemes:
            result[layer] = LayerDeclaration(layer, "not_targeted", None,
                                             "not named by the quantization config")
        elif len({(s.path, s.weights, s.activations) for s, _ in schemes}) == 1:
            scheme, reason = schemes[0]
            result[layer] = LayerDeclaration(layer, "quantized", scheme, reason)
        else:
            result[layer] = LayerDeclaration(
                layer, "mixed", None, "; ".join(reason for _, reason in schemes),
                schemes=tuple(s for s, _ in schemes))
    return result


def _targets_layer(scheme: LayerScheme, layer: str) -> str | None:
    """Why ``scheme`` applies to ``layer`` (the target that names it), or None."""
    for target in scheme.targets:
        named = module_layer(target)
        if named == layer:
            return f"{scheme.scheme} {scheme.quant}: targets {target}"
        if named is None and _ALL_LINEAR.match(target) and layer not in DEFAULT_16BIT_LAYERS:
            return f"{scheme.scheme} {scheme.quant}: targets {target}"
    return None
