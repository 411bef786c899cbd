"""Layer NVTX range texts → module paths or classes, and module paths → layer groups.

vLLM (``--enable-layerwise-nvtx-tracing``), SGLang (``--enable-layerwise-nvtx-marker``) and
TensorRT-LLM (``enable_layerwise_nvtx_marker``) push the same dict text around every module's
forward, ``{'Module': 'LlamaForCausalLM.model.layers.0.self_attn.qkv_proj', …}``;
TensorRT-LLM's layer-wise benchmarks name ranges by class (``Attention``, ``Deepseekv3MoE``).
The formats are data (``rules/_layer_markers.toml``): SQL ``LIKE`` patterns and exact texts
find the candidate texts in one pass, a regex reads each distinct text once. A module path names its
group by the module-name words the checkpoint declarations use
(``tracekit.expect.checkpoint.layers.module_layer``), with the table's own path rows for
engine modules those words do not name (vLLM's ``logits_processor`` holds lm_head's GEMM).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from tracekit.datafiles import load_table, require
from tracekit.expect.checkpoint.layer_names import module_layer
from tracekit.layers.model import Call

MARKERS_FILE = "_layer_markers.toml"


@dataclass(frozen=True)
class MarkerFormat:
    """One way engines write a layer range's text."""

    id: str
    like: tuple[str, ...]
    texts: tuple[str, ...]
    regex: re.Pattern[str]


@dataclass(frozen=True)
class Label:
    """What a range text names: a module ``path`` or a module ``class``."""

    kind: str
    value: str
    format: str


@cache
def formats() -> tuple[MarkerFormat, ...]:
    """The table's formats, in file order."""
    rows = []
    for index, row in enumerate(load_table(MARKERS_FILE).get("format", [])):
        where = f"[[format]] {index + 1}"
        rows.append(MarkerFormat(
            id=str(require(row, "id", MARKERS_FILE, where)),
            like=tuple(str(p) for p in row.get("like", ())),
            texts=tuple(str(t) for t in row.get("texts", ())),
            regex=re.compile(str(require(row, "regex", MARKERS_FILE, where)))))
    return tuple(rows)


@cache
def _paths() -> tuple[tuple[str, bool, re.Pattern[str]], ...]:
    rows = []
    for index, row in enumerate(load_table(MARKERS_FILE).get("path", [])):
        where = f"[[path]] {index + 1}"
        rows.append((str(require(row, "layer", MARKERS_FILE, where)), bool(row.get("before")),
                     re.compile(str(require(row, "regex", MARKERS_FILE, where)))))
    return tuple(rows)


def like_patterns() -> list[str]:
    """Every format's SQL LIKE patterns (the prefilter of the range texts)."""
    return [pattern for marker in formats() for pattern in marker.like]


def exact_texts() -> list[str]:
    """Every format's exact range texts (the rest of the prefilter)."""
    return [value for marker in formats() for value in marker.texts]


def parse(text: str) -> Label | None:
    """The module path or class a range text names, or None when it is no layer marker."""
    for marker in formats():
        found = marker.regex.search(text)
        if found:
            groups = found.groupdict()
            if groups.get("path"):
                return Label("path", groups["path"], marker.id)
            if groups.get("class"):
                return Label("class", groups["class"], marker.id)
    return None


def path_layer(path: str) -> str | None:
    """The layer group a module path names: the table's ``before`` rows, the declarations'
    module words, then the table's other rows."""
    rows = _paths()
    for layer, before, regex in rows:
        if before and regex.search(path):
            return layer
    named = module_layer(path)
    if named is not None:
        return named
    for layer, before, regex in rows:
        if not before and regex.search(path):
            return layer
    return None


def decide_path(path: str) -> Call:
    """The call of a launch whose innermost layer range names ``path``."""
    layer = path_layer(path)
    if layer is None:
        return Call(None, "nvtx", f"layer range {path}: the path names no layer group")
    if layer == "decoder_layers":
        return Call(layer, "nvtx", f"layer range {path}: inside a decoder layer, outside any "
                                   "attention or MLP module")
    return Call(layer, "nvtx", f"layer range {path}: {layer}")


def check_examples() -> tuple[int, list[str]]:
    """The table's examples (``tracekit rules test``): how many, and what failed."""
    data = load_table(MARKERS_FILE)
    count, failures = 0, []
    for row in data.get("format", []):
        for example in row.get("examples", []):
            count += 1
            label = parse(example["text"])
            if example.get("match", True) is False:
                if label is not None and label.format == row["id"]:
                    failures.append(f"{example['text']!r}: must not be read by {row['id']}")
                continue
            wanted = ("path", example["path"]) if "path" in example else (
                "class", example.get("class"))
            if label is None or (label.kind, label.value) != wanted or label.format != row["id"]:
                failures.append(f"{example['text']!r}: read as {label}, expected {wanted}")
    for row in data.get("path", []):
        for path in row.get("examples", []):
            count += 1
            if path_layer(path) != row["layer"]:
                failures.append(f"{path!r}: {path_layer(path)}, expected {row['layer']}")
        for path in row.get("not_examples", []):
            count += 1
            if path_layer(path) == row["layer"]:
                failures.append(f"{path!r}: must not be {row['layer']}")
    return count, failures
