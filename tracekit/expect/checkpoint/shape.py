"""The model's dimensions from its ``config.json``: what a GEMM's operand shapes are matched to.

A linear layer's weight is ``N × K``: q/k/v project ``hidden_size`` to heads × ``head_dim``, o
back, the MLP ``hidden_size`` to ``intermediate_size`` (gate and up, often fused) and back
(down), the router ``hidden_size`` to the expert count, lm_head to ``vocab_size``. Multi-head
latent attention (DeepSeek V2/V3, Kimi K2, GLM-5) projects through ``q_lora_rank`` and
``kv_lora_rank`` instead. Families spell these fields differently (``n_embd``,
``num_local_experts``, ``n_routed_experts``…) and vision-language models nest the language
model's under ``text_config`` (or ``llm_config``, ``language_config``); every spelling read is
listed in ``_FIELDS``. Which layers are mixture-of-experts layers is per family too
(``first_k_dense_replace``, ``moe_layer_freq``, ``mlp_only_layers`` / ``decoder_sparse_step``,
``interleave_moe_layer_step``, ``mlp_layer_types``): :meth:`ModelShape.layer_is_moe` answers it.

A field the config does not give stays ``None``: the layer attribution and the declaration per
layer group then do not use it (they never guess a dimension).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: ModelShape integer field → the config keys that spell it, first found wins
_FIELDS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),
    "intermediate_size": ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"),
    "moe_intermediate_size": ("moe_intermediate_size", "expert_intermediate_size"),
    "shared_expert_intermediate_size": ("shared_expert_intermediate_size",),
    "intermediate_size_mlp": ("intermediate_size_mlp",),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads"),
    "num_key_value_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "head_dim": ("head_dim", "kv_channels"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_experts": ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"),
    "num_experts_per_tok": ("num_experts_per_tok", "experts_per_token", "top_k_experts"),
    "num_shared_experts": ("n_shared_experts", "num_shared_experts"),
    # multi-head latent attention
    "q_lora_rank": ("q_lora_rank",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    # which layers are MoE layers
    "first_k_dense_replace": ("first_k_dense_replace",),
    "moe_layer_freq": ("moe_layer_freq",),
    "decoder_sparse_step": ("decoder_sparse_step",),
    "interleave_moe_layer_step": ("interleave_moe_layer_step",),
}
#: fields where 0 is a meaningful value (no dense layers before the MoE ones)
_ZERO_ALLOWED = frozenset({"first_k_dense_replace"})
#: where vision-language and wrapper configs keep the language model's own fields
_TEXT_SECTIONS = ("text_config", "llm_config", "language_config")
#: sections whose presence means a vision tower
_VISION_SECTIONS = ("vision_config", "visual", "vision_tower_config", "mm_vision_tower")


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of a decoder LLM that decide its linear layers' weight shapes."""

    hidden_size: int | None = None
    intermediate_size: int | None = None
    moe_intermediate_size: int | None = None
    shared_expert_intermediate_size: int | None = None
    #: Llama 4: the dense MLP's size where ``intermediate_size`` is the experts'
    intermediate_size_mlp: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    num_hidden_layers: int | None = None
    num_experts: int | None = None
    num_experts_per_tok: int | None = None
    num_shared_experts: int | None = None
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    first_k_dense_replace: int | None = None
    moe_layer_freq: int | None = None
    decoder_sparse_step: int | None = None
    interleave_moe_layer_step: int | None = None
    #: Qwen MoE: layers that keep a dense MLP
    mlp_only_layers: tuple[int, ...] | None = None
    #: per layer, the attention kind (``full_attention``, ``linear_attention``,
    #: ``sliding_attention``) where the config lists it
    layer_types: tuple[str, ...] | None = None
    #: per layer, ``dense`` or ``sparse`` (GLM-5) where the config lists it
    mlp_layer_types: tuple[str, ...] | None = None
    #: Gemma 4: every layer has a dense MLP *and* an expert block
    dense_mlp_beside_experts: bool = False
    tie_word_embeddings: bool | None = None
    #: whether the checkpoint has a vision tower: True (a vision section), False (a plain
    #: text model), None (a nested config that does not say)
    has_vision: bool | None = None
    model_type: str | None = None
    #: the top-level ``model_type`` where the language model's is nested (``kimi_k25`` around
    #: ``kimi_k2``): module names follow both
    outer_model_type: str | None = None
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

    @property
    def latent_attention(self) -> bool:
        """Whether attention is multi-head latent attention (low-rank q/kv projections)."""
        return bool(self.kv_lora_rank)

    @property
    def known_architecture(self) -> bool:
        """Whether the config says enough about the model to tell which layer groups it has."""
        return bool(self.model_type or self.hidden_size or self.num_hidden_layers)

    @property
    def is_moe(self) -> bool | None:
        """Whether the model has mixture-of-experts layers (None: the config does not say —
        no expert count, and no model type or MLP size that would make its absence telling)."""
        if self.num_experts:
            return True
        return False if (self.model_type or self.intermediate_size) else None

    @property
    def expert_intermediate_size(self) -> int | None:
        """One expert's intermediate size: ``moe_intermediate_size``, or ``intermediate_size``
        for families that size experts with it (Mixtral, MiniMax, gpt-oss, Llama 4)."""
        if not self.num_experts:
            return None
        return self.moe_intermediate_size or self.intermediate_size

    def layer_is_moe(self, index: int) -> bool | None:
        """Whether decoder layer ``index`` has an expert block (None when unknown)."""
        moe = self.is_moe
        if not moe:
            return moe
        if self.mlp_layer_types and index < len(self.mlp_layer_types):
            return self.mlp_layer_types[index] != "dense"
        if self.first_k_dense_replace is not None and index < self.first_k_dense_replace:
            return False
        if self.mlp_only_layers and index in self.mlp_only_layers:
            return False
        for step in (self.moe_layer_freq, self.decoder_sparse_step):
            if step and step > 1:
                return (index + 1) % step == 0
        step = self.interleave_moe_layer_step
        if step and step > 1:
            return (index + 1) % step == 0
        return True

    def layer_has_dense_mlp(self, index: int) -> bool | None:
        """Whether decoder layer ``index`` has a dense MLP (None when unknown)."""
        if self.dense_mlp_beside_experts:
            return True
        moe = self.layer_is_moe(index)
        return None if moe is None else not moe

    def attention_kind(self, index: int) -> str:
        """``linear`` for a linear-attention layer (Gated DeltaNet, KDA), else ``full``."""
        if self.layer_types and index < len(self.layer_types):
            return "linear" if "linear" in self.layer_types[index] else "full"
        return "full"


def shape_from_config(config: Mapping[str, Any], source: str | None = None) -> ModelShape | None:
    """A ModelShape from a parsed ``config.json``; None when it names no dimension at all."""
    holder: Mapping[str, Any] = config
    nested = False
    for section in _TEXT_SECTIONS:
        text = config.get(section)
        if isinstance(text, Mapping) and _has_any(text):
            holder, nested = text, True
            break
    values: dict[str, Any] = {}
    for field_name, keys in _FIELDS.items():
        for key in keys:
            value = holder.get(key, config.get(key) if nested else None)
            floor = 0 if field_name in _ZERO_ALLOWED else 1
            if isinstance(value, int) and not isinstance(value, bool) and value >= floor:
                values[field_name] = value
                break
    model_type = holder.get("model_type") or config.get("model_type")
    layer_types = _strings(holder.get("layer_types"))
    mlp_layer_types = _strings(holder.get("mlp_layer_types"))
    mlp_only = holder.get("mlp_only_layers")
    tie = holder.get("tie_word_embeddings", config.get("tie_word_embeddings"))
    if not values and not model_type:
        return None
    return ModelShape(
        **values,
        mlp_only_layers=tuple(int(i) for i in mlp_only if isinstance(i, int))
        if isinstance(mlp_only, Sequence) and not isinstance(mlp_only, str) else None,
        layer_types=layer_types,
        mlp_layer_types=mlp_layer_types,
        dense_mlp_beside_experts=bool(holder.get("enable_moe_block")),
        tie_word_embeddings=tie if isinstance(tie, bool) else None,
        has_vision=_has_vision(config, nested),
        model_type=str(model_type) if model_type else None,
        outer_model_type=str(config["model_type"])
        if nested and config.get("model_type") else None,
        source=source,
    )


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


def _has_vision(config: Mapping[str, Any], nested: bool) -> bool | None:
    if any(isinstance(config.get(key), Mapping) for key in _VISION_SECTIONS):
        return True
    # a plain text model with its model type says everything at the top level; a nested one
    # may have left its vision section out of the copy, a bare one says nothing
    if nested or not (config.get("model_type") or config.get("architectures")):
        return None
    return False


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        return tuple(str(v) for v in value)
    return None
