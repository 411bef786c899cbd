"""What a checkpoint declares: read its quantization config into a :class:`Declaration`.

The same "NVFP4" label covers a W4A4 checkpoint (FP4 x FP4 tensor-core math expected) and a
W4A16 one (4-bit weights, 16-bit math by design); only the activation declaration tells them
apart. This module reads every common declaration — ModelOpt ``hf_quant_config.json`` and
``quant_method: modelopt``, compressed-tensors ``config_groups``, HF ``fp8``/``fbgemm_fp8``,
``mxfp4`` (gpt-oss), GPTQ, AWQ, bitsandbytes, AMD Quark, TensorRT-LLM checkpoint configs,
GGUF ``general.file_type`` and plain ``torch_dtype`` — and names the datatype path the GEMMs
should run (DESIGN.md vocabulary). Field meanings: shared/research/engines.md §5.
Tables (ModelOpt/TRT-LLM algorithms, GGUF file types) live in ``rules/_checkpoints.toml``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

from tracekit.errors import ConfigError
from tracekit.expect._data import load_table

CHECKPOINTS_FILE = "_checkpoints.toml"

#: Paths in which activations are quantized at run time (the math runs below 16 bits).
QUANTIZED_PATHS = frozenset({"fp4", "fp8", "int8"})
#: Every path word a declaration may expect (DESIGN.md vocabulary, less "unknown").
PATH_WORDS = ("fp4", "fp8", "int8", "weight_only", "bf16", "fp16", "tf32", "fp32", "fp64")
# Which declared path is "the" path of a mixed checkpoint: the most aggressive one.
_PATH_PRIORITY = {word: rank for rank, word in enumerate(PATH_WORDS)}

_TORCH_DTYPES = {
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

    @property
    def paths(self) -> frozenset[str]:
        """Every path some layer group is declared to run."""
        return frozenset(layer.path for layer in self.layers) | {self.path}

    @property
    def mixed(self) -> bool:
        """Whether layer groups declare different paths (e.g. FP8 attention + W4A16 MLP)."""
        return len(self.paths) > 1

    @property
    def quantized_activations(self) -> bool:
        """Whether the main declared path quantizes activations (fp4, fp8, int8)."""
        return self.path in QUANTIZED_PATHS

    @property
    def label(self) -> str:
        """Short human label for verdicts: "W4A4 NVFP4", or "mixed W4A16 NVFP4 + W8A8 FP8"."""
        if self.mixed and self.layers:
            parts = dict.fromkeys(f"{layer.scheme} {layer.quant}" for layer in self.layers)
            return "mixed " + " + ".join(parts)
        if self.method in {"unquantized", "expect"} and self.scheme == self.quant:
            return self.quant
        return f"{self.scheme} {self.quant}"


# ---------------------------------------------------------------------------------------------
# Entry points


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
    return Declaration(
        path=normalized,
        scheme=scheme,
        quant=quant,
        format=f"{quant} {scheme} (--expect)" if scheme != quant else f"{quant} (--expect)",
        method="expect",
        activations=None if normalized not in QUANTIZED_PATHS else normalized,
        source="--expect",
    )


def read_declaration(path: Path) -> Declaration:
    """Read a model directory, ``config.json``, ``hf_quant_config.json``, a bare
    ``quantization_config`` JSON file, or a GGUF file.

    Raises ConfigError (naming the file) when nothing readable declares the model's types.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if path.is_dir():
        return _read_directory(path)
    if _is_gguf(path):
        return _read_gguf(path)
    return _from_json(_load_json(path), path)


# ---------------------------------------------------------------------------------------------
# Files


def _load_json(path: Path) -> dict[str, Any]:
    if path.suffix.lower() in {".safetensors", ".bin", ".pt", ".pth"}:
        raise ConfigError(
            f"{path}: is a weights file, not a config",
            hint="pass the model directory or its config.json",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: neither a JSON config nor a GGUF file") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read checkpoint config ({exc.strerror or exc})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    return data


_SIDE_CONFIGS = ("quantization_config.json", "quantize_config.json", "quant_config.json")


def _read_directory(directory: Path) -> Declaration:
    config_path = directory / "config.json"
    modelopt_path = directory / "hf_quant_config.json"
    config = _load_json(config_path) if config_path.is_file() else None
    modelopt = _load_json(modelopt_path) if modelopt_path.is_file() else None

    if config is not None and _quant_section(config) is not None:
        declaration = _from_json(config, config_path)
        if declaration.kv_cache is None and modelopt is not None:
            kv = _modelopt_kv(modelopt.get("quantization", {}))
            if kv:
                declaration = replace(declaration, kv_cache=kv)
        return declaration
    if modelopt is not None:
        declaration = _from_json(modelopt, modelopt_path)
        if config is not None and declaration.compute_dtype is None:
            declaration = replace(declaration, compute_dtype=_torch_dtype(config))
        return declaration
    for name in _SIDE_CONFIGS:  # AutoGPTQ / AutoAWQ / bare quantization_config files
        side = directory / name
        if side.is_file():
            declaration = _from_json(_load_json(side), side)
            if config is not None and declaration.compute_dtype is None:
                declaration = replace(declaration, compute_dtype=_torch_dtype(config))
            return declaration
    ggufs = sorted(p for p in directory.iterdir() if p.suffix.lower() == ".gguf")
    if ggufs:
        return _read_gguf(ggufs[0])
    if config is not None:
        return _from_json(config, config_path)
    raise ConfigError(
        f"{directory}: no config.json, hf_quant_config.json or .gguf file in this directory"
    )


def _quant_section(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The quantization declaration inside a config.json, wherever this model family keeps it."""
    for holder in (config, config.get("text_config") or {}, config.get("llm_config") or {}):
        section = holder.get("quantization_config")
        if isinstance(section, Mapping):
            return section
    trtllm = config.get("quantization")
    if isinstance(trtllm, Mapping) and "quant_algo" in trtllm:
        return {**trtllm, "quant_method": "trtllm"}
    return None


def _from_json(data: Mapping[str, Any], source: Path) -> Declaration:
    dtype = _torch_dtype(data)
    if isinstance(data.get("producer"), Mapping) and isinstance(data.get("quantization"), Mapping):
        producer = str(data["producer"].get("name", "modelopt"))
        declaration = _modelopt(data["quantization"], source, producer=producer)
    elif (section := _quant_section(data)) is not None:
        declaration = _from_quant_config(section, source)
    elif any(key in data for key in ("quant_method", "config_groups", "quant_algo")):
        declaration = _from_quant_config(data, source)
    elif "w_bit" in data:  # AutoAWQ quant_config.json
        declaration = _int_weight_only(data, source, "AWQ")
    elif "bits" in data and ("group_size" in data or "desc_act" in data):  # quantize_config.json
        declaration = _int_weight_only(data, source, "GPTQ")
    elif dtype is not None:
        return _unquantized(dtype, source)
    else:
        raise ConfigError(
            f"{source}: no quantization declaration found (no quantization_config, quant_method, "
            "quant_algo, config_groups or torch_dtype)",
            hint="pass --expect PATH_WORD to state the expected path",
        )
    if declaration.compute_dtype is None and dtype is not None:
        declaration = replace(declaration, compute_dtype=dtype)
    return declaration


def _torch_dtype(data: Mapping[str, Any]) -> str | None:
    for holder in (data, data.get("text_config") or {}):
        value = holder.get("torch_dtype") or holder.get("dtype")
        if isinstance(value, str) and value.lower().removeprefix("torch.") in _TORCH_DTYPES:
            return _TORCH_DTYPES[value.lower().removeprefix("torch.")]
    return None


def _unquantized(dtype: str, source: Path) -> Declaration:
    return Declaration(
        path=dtype,
        scheme=dtype.upper(),
        quant=dtype.upper(),
        format=f"{dtype.upper()} (unquantized)",
        method="unquantized",
        weights=dtype,
        activations=dtype,
        compute_dtype=dtype,
        source=str(source),
    )


def _from_quant_config(config: Mapping[str, Any], source: Path) -> Declaration:
    method = str(config.get("quant_method", "")).lower().replace("_", "-")
    if not method:
        if "config_groups" in config:
            method = "compressed-tensors"
        elif "quant_algo" in config:
            method = "modelopt"
    readers = {
        "modelopt": lambda: _modelopt(config, source),
        # vLLM's method names for ModelOpt checkpoints; quant_algo decides the scheme
        "modelopt-fp4": lambda: _modelopt(config, source),
        "modelopt-fp8": lambda: _modelopt(config, source),
        "modelopt-mxfp8": lambda: _modelopt(config, source),
        "modelopt-mixed": lambda: _modelopt(config, source),
        "trtllm": lambda: _modelopt(config, source, producer="TensorRT-LLM"),
        "compressed-tensors": lambda: _compressed_tensors(config, source),
        "fp8": lambda: _fp8(config, source, "fp8"),
        "fbgemm-fp8": lambda: _fp8(config, source, "fbgemm_fp8"),
        "mxfp4": lambda: _mxfp4(config, source),
        "gptq": lambda: _int_weight_only(config, source, "GPTQ"),
        "auto-gptq": lambda: _int_weight_only(config, source, "GPTQ"),
        "gptq-marlin": lambda: _int_weight_only(config, source, "GPTQ"),
        "awq": lambda: _int_weight_only(config, source, "AWQ"),
        "auto-round": lambda: _int_weight_only(config, source, "AutoRound"),
        "awq-marlin": lambda: _int_weight_only(config, source, "AWQ"),
        "bitsandbytes": lambda: _bitsandbytes(config, source),
        "quark": lambda: _quark(config, source),
    }
    reader = readers.get(method)
    if reader is None:
        raise ConfigError(
            f"{source}: unknown quant_method {config.get('quant_method')!r}",
            hint="known: " + ", ".join(sorted(readers)) + "; or pass --expect PATH_WORD",
        )
    return reader()


# ---------------------------------------------------------------------------------------------
# ModelOpt / TensorRT-LLM


@cache
def _quant_algos() -> dict[str, dict[str, Any]]:
    return dict(load_table(CHECKPOINTS_FILE).get("quant_algo", {}))


def _modelopt_kv(section: Mapping[str, Any]) -> str | None:
    algo = section.get("kv_cache_quant_algo")
    if isinstance(algo, str) and algo.upper() not in {"", "NONE", "NO_QUANT"}:
        return algo.lower()
    scheme = section.get("kv_cache_scheme")
    if isinstance(scheme, Mapping):
        return _args_kind(scheme)
    return None


def _algo_layer(algo: str, source: Path, targets: tuple[str, ...]) -> LayerScheme:
    row = _quant_algos().get(algo.upper())
    if row is None:
        raise ConfigError(
            f"{source}: unknown ModelOpt/TensorRT-LLM quant_algo {algo!r}",
            hint="known: " + ", ".join(sorted(_quant_algos())),
        )
    return LayerScheme(
        targets=targets,
        weights=row.get("weights"),
        activations=row.get("activations"),
        scheme=row["scheme"],
        path=row["path"],
        quant=row["quant"],
    )


def _modelopt(section: Mapping[str, Any], source: Path, producer: str = "modelopt") -> Declaration:
    inner = section.get("quantization")
    if isinstance(inner, Mapping) and "quant_algo" in inner:
        section = {**section, **inner}
    algo = section.get("quant_algo")
    if not isinstance(algo, str) or not algo:
        raise ConfigError(f"{source}: ModelOpt config without a quant_algo")
    excluded = tuple(_strings(section.get("exclude_modules")) + _strings(section.get("ignore")))
    kv = _modelopt_kv(section)
    display = "ModelOpt" if producer.lower() == "modelopt" else producer
    notes: list[str] = []

    if algo.upper() == "MIXED_PRECISION":
        per_layer = section.get("quantized_layers")
        if not isinstance(per_layer, Mapping) or not per_layer:
            raise ConfigError(f"{source}: MIXED_PRECISION without quantized_layers")
        grouped: dict[str, list[str]] = {}
        for name, entry in per_layer.items():
            layer_algo = entry.get("quant_algo") if isinstance(entry, Mapping) else entry
            grouped.setdefault(str(layer_algo), []).append(str(name))
        layers = tuple(_algo_layer(a, source, tuple(names)) for a, names in grouped.items())
        return _combine(layers, f"mixed precision ({display})", "modelopt", source, excluded, kv)

    layer = _algo_layer(algo, source, ("*",))
    groups = section.get("config_groups")
    if (
        layer.path == "fp4"
        and isinstance(groups, Mapping)
        and groups
        and all(
            isinstance(g, Mapping) and g.get("input_activations") is None for g in groups.values()
        )
    ):
        # vLLM modelopt.py re-routes NVFP4 whose every config group has no activations to W4A16.
        layer = _algo_layer("W4A16_NVFP4", source, ("*",))
        notes.append("quant_algo NVFP4 but every config group has input_activations null: W4A16")
    declaration = _combine(
        (layer,), f"{layer.quant} {layer.scheme} ({display})", "modelopt", source, excluded, kv
    )
    return replace(declaration, notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# compressed-tensors (llm-compressor)


def _args_kind(args: Mapping[str, Any] | None) -> str | None:
    """A compressed-tensors QuantizationArgs block → a format word; None means 16-bit."""
    if not isinstance(args, Mapping):
        return None
    bits = args.get("num_bits")
    kind = str(args.get("type", "int")).lower()
    group = args.get("group_size")
    if not isinstance(bits, int) or bits >= 16:
        return None
    if kind == "float":
        if bits == 4:
            return {16: "nvfp4", 32: "mxfp4"}.get(group if isinstance(group, int) else 0, "fp4")
        if bits == 8:
            return "mxfp8" if group == 32 else "fp8"
        if bits == 6:
            return "mxfp6" if group == 32 else "fp6"
        return f"fp{bits}"
    return f"int{bits}"


def _activation_path(activations: str | None) -> str:
    if activations is None:
        return "weight_only"
    if activations in {"nvfp4", "mxfp4", "fp4"}:
        return "fp4"
    if activations.startswith(("fp8", "mxfp8", "fp6", "mxfp6")):
        return "fp8"  # FP6 MMA runs at FP8 rate (kind::f8f6f4)
    if activations == "int8":
        return "int8"
    return "unknown"


def _bits(word: str | None) -> str:
    if word is None:
        return "16"
    digits = "".join(ch for ch in word if ch.isdigit())
    return digits or "?"


def _ct_layer(group: Mapping[str, Any], name: str) -> LayerScheme | None:
    weights = _args_kind(group.get("weights"))
    activations = _args_kind(group.get("input_activations"))
    if weights is None and activations is None:
        return None
    targets = tuple(_strings(group.get("targets"))) or (name,)
    path = _activation_path(activations) if weights is not None else "unknown"
    scheme = f"W{_bits(weights)}A{_bits(activations)}"
    return LayerScheme(
        targets=targets,
        weights=weights,
        activations=activations,
        scheme=scheme,
        path=path,
        quant=(weights or activations or "?").upper(),
    )


def _compressed_tensors(config: Mapping[str, Any], source: Path) -> Declaration:
    groups = config.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ConfigError(f"{source}: compressed-tensors config without config_groups")
    layers = tuple(
        layer
        for name, group in groups.items()
        if isinstance(group, Mapping) and (layer := _ct_layer(group, str(name))) is not None
    )
    if not layers:
        raise ConfigError(f"{source}: compressed-tensors config_groups quantize nothing")
    kv = _args_kind(config.get("kv_cache_scheme"))
    fmt = config.get("format")
    main = _main_layer(layers)
    name = f"{main.quant} {main.scheme} (compressed-tensors"
    name += f", {fmt})" if isinstance(fmt, str) and fmt else ")"
    return _combine(
        layers, name, "compressed-tensors", source, tuple(_strings(config.get("ignore"))), kv
    )


# ---------------------------------------------------------------------------------------------
# Other quant_method values


def _fp8(config: Mapping[str, Any], source: Path, method: str) -> Declaration:
    block = config.get("weight_block_size")
    dynamic = str(config.get("activation_scheme", "dynamic"))
    quant = "FP8 block-128" if block else "FP8"
    if method == "fbgemm_fp8":
        quant = "FP8 per-channel"
    layer = LayerScheme(("*",), "fp8", "fp8", "W8A8", "fp8", quant)
    excluded = _strings(config.get("modules_to_not_convert")) + _strings(
        config.get("ignored_layers")
    )
    declaration = _combine(
        (layer,),
        f"{quant} W8A8 ({method}, {dynamic} activations)",
        method,
        source,
        tuple(excluded),
        None,
    )
    return declaration


def _mxfp4(config: Mapping[str, Any], source: Path) -> Declaration:
    layer = LayerScheme(("experts",), "mxfp4", None, "W4A16", "weight_only", "MXFP4")
    declaration = _combine(
        (layer,),
        "MXFP4 W4A16 (mxfp4, gpt-oss)",
        "mxfp4",
        source,
        tuple(_strings(config.get("modules_to_not_convert"))),
        None,
    )
    # vLLM may run MXFP4 x MXFP8 on sm100 and llama.cpp native W4A4 on Blackwell (engines.md §3.5).
    return replace(
        declaration,
        alternatives=frozenset({"fp8", "fp4"}),
        notes=("MXFP4 is weight-only by declaration; engines may opt into MXFP8/FP4 activations",),
    )


def _int_weight_only(config: Mapping[str, Any], source: Path, method: str) -> Declaration:
    bits = config.get("bits", config.get("w_bit", 4))
    group = config.get("group_size", config.get("q_group_size"))
    layer = LayerScheme(("*",), f"int{bits}", None, f"W{bits}A16", "weight_only", f"INT{bits}")
    detail = f", group {group}" if group else ""
    excluded = _strings(config.get("modules_to_not_convert"))
    return _combine(
        (layer,),
        f"INT{bits} W{bits}A16 ({method}{detail})",
        method.lower(),
        source,
        tuple(excluded),
        None,
    )


def _bitsandbytes(config: Mapping[str, Any], source: Path) -> Declaration:
    excluded = tuple(_strings(config.get("llm_int8_skip_modules")))
    compute = _TORCH_DTYPES.get(
        str(config.get("bnb_4bit_compute_dtype", "")).removeprefix("torch.")
    )
    if config.get("load_in_4bit"):
        kind = str(config.get("bnb_4bit_quant_type", "fp4")).lower()
        layer = LayerScheme(("*",), kind, None, "W4A16", "weight_only", kind.upper())
        declaration = _combine(
            (layer,), f"{kind.upper()} W4A16 (bitsandbytes)", "bitsandbytes", source, excluded, None
        )
        return replace(declaration, compute_dtype=compute)
    if config.get("load_in_8bit"):
        # LLM.int8(): activations are quantized to int8 per vector for an int8 matmul, outlier
        # columns stay 16-bit (Dettmers et al. 2022, arXiv:2208.07339).
        layer = LayerScheme(("*",), "int8", "int8", "W8A8", "int8", "INT8 LLM.int8()")
        return _combine(
            (layer,), "INT8 W8A8 LLM.int8() (bitsandbytes)", "bitsandbytes", source, excluded, None
        )
    raise ConfigError(f"{source}: bitsandbytes config sets neither load_in_4bit nor load_in_8bit")


_QUARK_DTYPES = {
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "int8": "int8",
    "uint8": "int8",
    "int4": "int4",
    "uint4": "int4",
    "fp4": "mxfp4",
    "mx_fp4": "mxfp4",
    "mxfp4": "mxfp4",
    "fp6_e2m3": "fp6",
    "fp6_e3m2": "fp6",
}


def _quark(config: Mapping[str, Any], source: Path) -> Declaration:
    glob = config.get("global_quant_config")
    if not isinstance(glob, Mapping):
        raise ConfigError(f"{source}: quark config without global_quant_config")

    def kind(block: Any) -> str | None:
        if isinstance(block, list):
            block = block[0] if block else None
        if not isinstance(block, Mapping):
            return None
        return _QUARK_DTYPES.get(str(block.get("dtype", "")).lower(), str(block.get("dtype")))

    weights, activations = kind(glob.get("weight")), kind(glob.get("input_tensors"))
    if weights is None:
        raise ConfigError(f"{source}: quark global_quant_config has no weight dtype")
    layer = LayerScheme(
        ("*",),
        weights,
        activations,
        f"W{_bits(weights)}A{_bits(activations)}",
        _activation_path(activations),
        weights.upper(),
    )
    kv = None
    kv_block = config.get("kv_cache_quant_config")
    if isinstance(kv_block, Mapping) and kv_block:
        first = next(iter(kv_block.values()))
        kv = kind(first.get("output_tensors") if isinstance(first, Mapping) else None)
    return _combine(
        (layer,),
        f"{layer.quant} {layer.scheme} (Quark)",
        "quark",
        source,
        tuple(_strings(config.get("exclude"))),
        kv,
    )


# ---------------------------------------------------------------------------------------------
# GGUF

_GGUF_MAGIC = b"GGUF"
_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_MAX_KV = 1_000_000
_GGUF_MAX_STRING = 1 << 24  # no metadata string is 16 MiB; a larger length means a corrupt header
_GGUF_MAX_ITEMS = 1 << 28


def _is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == _GGUF_MAGIC
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from exc


def _read_exact(handle: BinaryIO, size: int, path: Path) -> bytes:
    data = handle.read(size)
    if len(data) != size:
        raise ConfigError(f"{path}: GGUF header is truncated")
    return data


def _gguf_string(handle: BinaryIO, path: Path, length_format: str) -> str:
    (length,) = struct.unpack(
        length_format, _read_exact(handle, struct.calcsize(length_format), path)
    )
    if length > _GGUF_MAX_STRING:
        raise ConfigError(f"{path}: GGUF header is corrupt (a {length}-byte metadata string)")
    return _read_exact(handle, length, path).decode("utf-8", errors="replace")


def _gguf_value(handle: BinaryIO, kind: int, path: Path, length_format: str) -> Any:
    if kind in _GGUF_SCALARS:
        fmt = _GGUF_SCALARS[kind]
        return struct.unpack(fmt, _read_exact(handle, struct.calcsize(fmt), path))[0]
    if kind == _GGUF_STRING:
        return _gguf_string(handle, path, length_format)
    if kind == _GGUF_ARRAY:
        (item_kind,) = struct.unpack("<I", _read_exact(handle, 4, path))
        (count,) = struct.unpack(
            length_format, _read_exact(handle, struct.calcsize(length_format), path)
        )
        if count > _GGUF_MAX_ITEMS:
            raise ConfigError(f"{path}: GGUF header is corrupt (an array of {count} items)")
        if item_kind in _GGUF_SCALARS:  # skip without reading: tokenizer arrays are large
            handle.seek(count * struct.calcsize(_GGUF_SCALARS[item_kind]), 1)
        else:
            for _ in range(count):
                _gguf_value(handle, item_kind, path, length_format)
        return None
    raise ConfigError(f"{path}: GGUF value type {kind} is not in the GGUF specification")


def _gguf_metadata(path: Path, wanted: Iterable[str]) -> dict[str, Any]:
    """Read GGUF key/value metadata up to the keys in ``wanted`` (ggml docs/gguf.md layout)."""
    remaining = set(wanted)
    found: dict[str, Any] = {}
    with path.open("rb") as handle:
        _read_exact(handle, 4, path)
        (version,) = struct.unpack("<I", _read_exact(handle, 4, path))
        length_format = "<I" if version == 1 else "<Q"  # GGUF v1 used 32-bit counts
        count_size = struct.calcsize(length_format)
        struct.unpack(length_format, _read_exact(handle, count_size, path))  # tensor count
        (kv_count,) = struct.unpack(length_format, _read_exact(handle, count_size, path))
        if kv_count > _GGUF_MAX_KV:
            raise ConfigError(f"{path}: GGUF header claims {kv_count} metadata entries")
        for _ in range(kv_count):
            key = _gguf_string(handle, path, length_format)
            (kind,) = struct.unpack("<I", _read_exact(handle, 4, path))
            value = _gguf_value(handle, kind, path, length_format)
            if key in remaining:
                found[key] = value
                remaining.discard(key)
                if not remaining:
                    break
    found["__version__"] = version
    return found


def _read_gguf(path: Path) -> Declaration:
    meta = _gguf_metadata(path, ("general.file_type", "general.architecture"))
    file_type = meta.get("general.file_type")
    if file_type is None:
        raise ConfigError(
            f"{path}: GGUF file has no general.file_type", hint="pass --expect PATH_WORD"
        )
    row = load_table(CHECKPOINTS_FILE).get("gguf_file_type", {}).get(str(file_type))
    if row is None:
        raise ConfigError(
            f"{path}: GGUF general.file_type {file_type} is not in rules/_checkpoints.toml"
        )
    arch = meta.get("general.architecture")
    weights, activations = row.get("weights"), row.get("activations")
    return Declaration(
        path=row["path"],
        scheme=row["scheme"],
        quant=f"GGUF {row['name']}",
        format=f"GGUF {row['name']} (llama.cpp{', ' + arch if arch else ''})",
        method="gguf",
        weights=weights,
        activations=activations,
        compute_dtype=None,
        source=str(path),
        layers=(
            LayerScheme(("*",), weights, activations, row["scheme"], row["path"], row["name"]),
        ),
        alternatives=frozenset(row.get("alternatives", ())),
    )


# ---------------------------------------------------------------------------------------------
# Helpers


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return [str(v) for v in value]
    return []


def _main_layer(layers: tuple[LayerScheme, ...]) -> LayerScheme:
    return min(layers, key=lambda layer: _PATH_PRIORITY.get(layer.path, len(_PATH_PRIORITY)))


def _combine(
    layers: tuple[LayerScheme, ...],
    format_name: str,
    method: str,
    source: Path,
    excluded: tuple[str, ...],
    kv_cache: str | None,
) -> Declaration:
    main = _main_layer(layers)
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
    )
