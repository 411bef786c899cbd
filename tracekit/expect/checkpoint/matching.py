"""How each format's module patterns match a module name — the engines' own rules, one per kind.

A checkpoint names modules in its targets and exclusions, but every format means something else
by a name:

- ``ct`` (compressed-tensors ``targets`` / ``ignore``, Quark ``exclude``): ``re:`` + a regular
  expression matched at the start of the name, else the exact name (vLLM
  ``compressed_tensors/utils.py`` ``_is_equal_or_regex_match``, SGLang ``should_ignore_layer``);
- ``wildcard`` (ModelOpt ``exclude_modules`` / ``ignore`` / ``quantized_layers``, TensorRT-LLM,
  gpt-oss ``modules_to_not_convert``): ``*`` matches anything, the whole name must match, and a
  module inside a named block is covered by it (``model.layers.0.mlp`` covers its
  ``gate_proj``; vLLM ``modelopt.py`` ``is_layer_excluded``);
- ``substring`` (AWQ ``modules_to_not_convert``, bitsandbytes ``llm_int8_skip_modules``): the
  pattern anywhere in the name — AutoAWQ and vLLM's ``is_layer_skipped_awq`` both test
  ``name in prefix``, so ``mlp.gate`` also covers ``mlp.gate_proj``;
- ``dotted`` (HF ``fp8`` ``modules_to_not_convert`` / ``ignored_layers``): the pattern as whole
  dot-separated parts of the name (SGLang PR 23467 "dot-boundary match in is_layer_skipped for FP8
  modules_to_not_convert"), so ``gate`` covers ``block_sparse_moe.gate`` but not ``gate_proj``;
- ``regex`` (GPTQModel ``dynamic`` keys after their ``+:`` / ``-:`` sign): a regular expression
  matched at the start of the name (vLLM ``gptq_utils.get_dynamic_override``);
- ``exact``: the name itself (GGUF tensor names);
- ``class``: a class target (``Linear``, ``*``, a method that quantizes every linear layer) —
  it has no name to match; :mod:`tracekit.expect.checkpoint.layers` applies it by layer group.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

MATCH_KINDS = ("ct", "wildcard", "substring", "dotted", "regex", "exact", "class")
#: class names compressed-tensors / Quark targets use for "every linear layer"
CLASS_TARGETS = frozenset({"Linear", "nn.Linear", "torch.nn.Linear", "LinearBase", "*",
                           "re:.*", ".*"})


@lru_cache(maxsize=4096)
def matcher(pattern: str, kind: str) -> Callable[[str], bool]:
    """A predicate telling whether ``pattern`` of this kind names a module."""
    if kind == "class":
        return lambda name: True
    if kind == "exact":
        return lambda name: name == pattern
    if kind == "substring":
        return lambda name: pattern in name
    if kind == "regex":
        compiled = _compile(pattern)
        return lambda name: compiled.match(name) is not None
    if kind == "ct":
        if pattern.startswith("re:"):
            compiled = _compile(pattern[3:])
            return lambda name: compiled.match(name) is not None
        return lambda name: name == pattern
    if kind == "wildcard":
        if pattern.endswith("*") and "*" not in pattern[:-1]:  # "model.layers.3.self_attn*"
            prefix = pattern[:-1]
            return lambda name: name.startswith(prefix)
        whole = _compile(_wildcard(pattern) + r"(?:\..*)?")
        return lambda name: whole.fullmatch(name) is not None
    if kind == "dotted":
        if "*" in pattern:
            return matcher(pattern, "wildcard")
        needle = f".{pattern}."
        return lambda name: needle in f".{name}."
    raise ValueError(f"unknown match kind {kind!r}")


def _wildcard(pattern: str) -> str:
    return ".*".join(re.escape(part) for part in pattern.split("*"))


def _compile(expression: str) -> re.Pattern[str]:
    try:
        return re.compile(expression)
    except re.error:
        # a pattern no engine could compile matches nothing (and is not fatal here)
        return re.compile(r"(?!)")
