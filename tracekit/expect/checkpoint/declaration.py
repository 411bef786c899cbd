"""The value a checkpoint reading produces: a :class:`Declaration` of what the GEMMs should compute.

Also the path words a declaration may use and ``declaration_from_word`` (``--expect``), and the
helpers every format reader of this package shares to assemble one from its layer groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.errors import ConfigError
from tracekit.expect.checkpoint.shape import ModelShape
from tracekit.vocabulary import PATHS, QUANTIZED_PATHS  # noqa: F401 - re-exported

#: the data file of checkpoint tables (ModelOpt/TRT-LLM algorithms, GGUF file types)
CHECKPOINTS_FILE = "_checkpoints.toml"

#: Every path word a declaration may expect (the vocabulary's paths, less "unknown").
PATH_WORDS = tuple(word for word in PATHS if word != "unknown")
# Which declared path is "the" path of a mixed checkpoint: the most aggressive one.
_PATH_PRIORITY = {word: rank for rank, word in enumerate(PATH_WORDS)}

TORCH_DTYPES = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "fp32": "fp32",
    "float": "fp32",
}


@dataclass(frozen=True)
class LayerScheme:
    """One group of layers with one scheme (a config group, a mixed-precision entry)."""

    targets: tuple[str, ...]
    weights: str | None
    activations: str | None  # None: 16-bit activations (weight-only when weights are quantized)
    scheme: str  # "W4A4", "W4A16", "W8A8", …
    path: str  # expected path word
    quant: str  # short format name, "NVFP4", "FP8", "INT4" …


@dataclass(frozen=True)
class ModuleRule:
    """One entry of a checkpoint's config that decides the scheme of the modules it names.

    ``pattern`` as written, matched the way its format means it (``match``, a
    :data:`tracekit.expect.checkpoint.matching.MATCH_KINDS` word); ``scheme`` None means the
    modules stay 16-bit (an exclusion: ``status`` ``excluded``, or ``not_targeted`` where the
    entry only records a 16-bit module, as a GGUF F32 tensor). ``entry`` names the config entry
    (``ignore``, ``config_groups.group_0.targets``, ``dynamic``) for the layer table's reason.
    A declaration's rules are tried in order; the first that names a module decides.
    """

    pattern: str
    match: str
    scheme: LayerScheme | None
    entry: str
    status: str = "excluded"
    #: the layer groups a class rule (``match`` "class") reaches; name rules reach any group
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Declaration:
    """What a checkpoint (or ``--expect``) says the GEMMs should compute.

    ``path`` is the expected path word of the main quantized layers; ``layers`` lists every
    scheme when a checkpoint mixes several (then :attr:`paths` has more than one word).
    ``alternatives`` are paths an engine may legitimately choose instead (gpt-oss MXFP4 is
    weight-only by declaration, yet vLLM on sm100 may run MXFP4 x MXFP8): never a fallback.
    """

    path: str
    scheme: str
    quant: str
    format: str  # e.g. "NVFP4 W4A4 (ModelOpt)"
    method: (
        str  # "modelopt", "compressed-tensors", "fp8", "mxfp4", "gguf", "expect", "unquantized" …
    )
    weights: str | None = None
    activations: str | None = None
    compute_dtype: str | None = (
        None  # 16-bit type of the unquantized math ("bf16"/"fp16") when known
    )
    kv_cache: str | None = None  # "fp8", "nvfp4", "int8"; None = 16-bit KV cache
    excluded: tuple[str, ...] = ()
    source: str | None = None
    layers: tuple[LayerScheme, ...] = ()
    alternatives: frozenset[str] = frozenset()
    notes: tuple[str, ...] = field(default=())
    #: how the config assigns schemes to modules, in the order an engine resolves them
    #: (tracekit.expect.checkpoint.layers turns them into the declaration per layer group)
    rules: tuple[ModuleRule, ...] = ()
    #: every module of the checkpoint, where the file lists them all (GGUF tensor infos)
    module_names: tuple[str, ...] = ()
    #: why tracekit cannot say what this checkpoint's GEMMs compute (a quant_method an engine
    #: accepts but tracekit does not read, or one nobody knows); then ``path`` is "unknown"
    not_understood: str | None = None
    #: the model's dimensions, read from the same folder's config.json where there is one
    shape: ModelShape | None = None

    @property
    def paths(self) -> frozenset[str]:
        """Every path some layer group is declared to run."""
        return frozenset(layer.path for layer in self.layers) | {self.path}

    @property
    def mixed(self) -> bool:
        """Whether layer groups declare different paths (e.g. FP8 attention + W4A16 MLP)."""
        return len(self.paths) > 1

    @property
    def label(self) -> str:
        """Short human label for verdicts: "W4A4 NVFP4", or "mixed W4A16 NVFP4 + W8A8 FP8"."""
        if self.not_understood is not None:
            return f"{self.method} (not understood)"
        if self.mixed and self.layers:
            parts = dict.fromkeys(f"{layer.scheme} {layer.quant}" for layer in self.layers)
            return "mixed " + " + ".join(parts)
        if self.method in {"unquantized", "expect"} and self.scheme == self.quant:
            return self.quant
        return f"{self.scheme} {self.quant}"


def declaration_from_word(word: str) -> Declaration:
    """``--expect PATH_WORD``: the expected path stated directly ("fp4", "weight_only" …)."""
    normalized = word.strip().lower().replace("-", "_")
    if normalized == "weightonly":
        normalized = "weight_only"
    if normalized not in PATH_WORDS:
        raise ConfigError(
            f"--expect {word!r} is not a datatype path",
            hint="use one of " + ", ".join(PATH_WORDS),
        )
    scheme = {
        "fp4": "W4A4",
        "fp8": "W8A8",
        "int8": "W8A8",
        "weight_only": "WxA16",
    }.get(normalized, normalized.upper())
    quant = {"fp4": "FP4", "fp8": "FP8", "int8": "INT8", "weight_only": "weight-only"}.get(
        normalized, normalized.upper()
    )
    activations = None if normalized not in QUANTIZED_PATHS else normalized
    # --expect states the path of the model's quantized linears (every linear but lm_head,
    # embeddings, routers and vision towers, which stay 16-bit as in most checkpoints)
    layer = LayerScheme(("Linear",), None, activations, scheme, normalized, quant)
    return Declaration(
        path=normalized,
        scheme=scheme,
        quant=quant,
        format=f"{quant} {scheme} (--expect)" if scheme != quant else f"{quant} (--expect)",
        method="expect",
        activations=activations,
        source="--expect",
        layers=(layer,),
        rules=(ModuleRule("*", "class", layer, "--expect",
                          groups=("attention", "mlp", "moe_experts")),),
    )


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return [str(v) for v in value]
    return []


def main_layer(layers: tuple[LayerScheme, ...]) -> LayerScheme:
    return min(layers, key=lambda layer: _PATH_PRIORITY.get(layer.path, len(_PATH_PRIORITY)))


def combine(
    layers: tuple[LayerScheme, ...],
    format_name: str,
    method: str,
    source: Path,
    excluded: tuple[str, ...],
    kv_cache: str | None,
    rules: tuple[ModuleRule, ...] = (),
) -> Declaration:
    main = main_layer(layers)
    return Declaration(
        path=main.path,
        scheme=main.scheme,
        quant=main.quant,
        format=format_name,
        method=method,
        weights=main.weights,
        activations=main.activations,
        kv_cache=kv_cache,
        excluded=excluded,
        source=str(source),
        layers=layers,
        rules=rules,
    )


def not_understood(method: str, reason: str, source: Path, *,
                   compute_dtype: str | None = None) -> Declaration:
    """A declaration tracekit cannot read: path "unknown", no layer schemes, and why."""
    return Declaration(
        path="unknown",
        scheme="unknown",
        quant=method,
        format=f"{method} (not understood)",
        method=method,
        compute_dtype=compute_dtype,
        source=str(source),
        not_understood=reason,
    )


def sixteen_bit_scheme(dtype: str | None) -> LayerScheme:
    """The scheme of modules a checkpoint keeps in 16-bit math (a mixed group's 16-bit part)."""
    path = dtype if dtype in PATHS else "bf16"
    return LayerScheme((), None, None, "W16A16", path, path.upper())
