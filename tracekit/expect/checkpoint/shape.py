"""The model's dimensions from its ``config.json``: what a GEMM's operand shapes are matched to.

A linear layer's weight is ``N × K``: q/k/v project ``hidden_size`` to heads × ``head_dim``, o
back, the MLP ``hidden_size`` to ``intermediate_size`` (gate and up, often fused) and back
(down), the router ``hidden_size`` to the expert count, lm_head to ``vocab_size``. Families
spell these fields differently (``n_embd``, ``num_local_experts``, ``n_routed_experts``…) and
vision-language models nest the language model's under ``text_config``; every spelling read
is listed in ``_FIELDS``. A field the config does not give stays ``None``: the layer
attribution then does not use it (it never guesses a dimension).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: ModelShape field → the config keys that spell it, first found wins
_FIELDS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),
    "intermediate_size": ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"),
    "moe_intermediate_size": ("moe_intermediate_size", "expert_intermediate_size"),
    "shared_expert_intermediate_size": ("shared_expert_intermediate_size",),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads"),
    "num_key_value_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "head_dim": ("head_dim", "kv_channels"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_experts": ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"),
}


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of a decoder LLM that decide its linear layers' weight shapes."""

    hidden_size: int | None = None
    intermediate_size: int | None = None
    moe_intermediate_size: int | None = None
    shared_expert_intermediate_size: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    num_hidden_layers: int | None = None
    num_experts: int | None = None
    model_type: str | None = None
    source: str | None = None

    @property
    def resolved_head_dim(self) -> int | None:
        """``head_dim``, or ``hidden_size / num_attention_heads`` when the config omits it."""
        if self.head_dim:
            return self.head_dim
        if self.hidden_size and self.num_attention_heads:
            return self.hidden_size // self.num_attention_heads
        return None

    @property
    def kv_heads(self) -> int | None:
        """Key/value heads: ``num_key_value_heads``, else as many as attention heads (MHA)."""
        return self.num_key_value_heads or self.num_attention_heads


def shape_from_config(config: Mapping[str, Any], source: str | None = None) -> ModelShape | None:
    """A ModelShape from a parsed ``config.json``; None when it names no dimension at all."""
    holder: Mapping[str, Any] = config
    text = config.get("text_config") or config.get("llm_config")
    if isinstance(text, Mapping) and not _has_any(config) and _has_any(text):
        holder = text
    values: dict[str, Any] = {}
    for field_name, keys in _FIELDS.items():
        for key in keys:
            value = holder.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                values[field_name] = value
                break
    if not values:
        return None
    model_type = holder.get("model_type") or config.get("model_type")
    return ModelShape(**values, model_type=str(model_type) if model_type else None,
                      source=source)


def read_model_shape(path: Path) -> ModelShape | None:
    """The shape in a model folder's ``config.json`` (or the given config file); None when
    there is none or it names no dimension. Never raises: the declaration's reader reports
    unreadable configs."""
    path = Path(path)
    config_path = path / "config.json" if path.is_dir() else path
    try:
        data = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, Mapping):
        return None
    return shape_from_config(data, str(config_path))


def _has_any(config: Mapping[str, Any]) -> bool:
    return any(key in config for keys in _FIELDS.values() for key in keys)
