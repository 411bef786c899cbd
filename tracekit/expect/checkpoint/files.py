"""Where a checkpoint keeps its declaration: model folders, config files, GGUF, and dispatch.

A model folder's ``config.json`` ``quantization_config`` (or the legacy ``compression_config``
key of older compressed-tensors exports, or the sections some families nest under
``text_config``/``llm_config``), ModelOpt's ``hf_quant_config.json`` (with a TensorRT-LLM
``quant_cfg.json`` beside it for mixed precision), AutoGPTQ/AutoAWQ side files, a GGUF file, or
plain ``torch_dtype``; then the ``quant_method`` names the reader (the ``[quant_method.*]``
table of ``rules/_checkpoints.toml``). A method no reader understands is a declaration that
says so (``not_understood``), never an error: only a file that cannot be read raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from tracekit.datafiles import load_table
from tracekit.errors import ConfigError
from tracekit.expect.checkpoint import compressed_tensors, modelopt, other_formats
from tracekit.expect.checkpoint.declaration import (
    CHECKPOINTS_FILE,
    TORCH_DTYPES,
    Declaration,
    LayerScheme,
    not_understood,
)
from tracekit.expect.checkpoint.gguf import is_gguf, read_gguf
from tracekit.expect.checkpoint.schemes import everywhere, single
from tracekit.expect.checkpoint.shape import shape_from_config


def read_declaration(path: Path) -> Declaration:
    """Read a model directory, ``config.json``, ``hf_quant_config.json``, a bare
    ``quantization_config`` JSON file, or a GGUF file.

    Raises ConfigError (naming the file, and the line for invalid JSON) when the file cannot be
    read or nothing in it declares the model's types.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if path.is_dir():
        return _read_directory(path)
    if is_gguf(path):
        return read_gguf(path)
    data = load_json(path)
    return _with_shape(_from_json(data, path, _side_layers(path.parent)), data, path)


def load_json(path: Path) -> dict[str, Any]:
    """A config file's JSON object; ConfigError (file and line) when it is not one."""
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
        raise ConfigError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    return data


_SIDE_CONFIGS = ("quantization_config.json", "quantize_config.json", "quant_config.json")


def _read_directory(directory: Path) -> Declaration:
    config_path = directory / "config.json"
    modelopt_path = directory / "hf_quant_config.json"
    config = load_json(config_path) if config_path.is_file() else None
    hf_quant = load_json(modelopt_path) if modelopt_path.is_file() else None
    side_layers = _side_layers(directory)

    def finish(declaration: Declaration) -> Declaration:
        if config is not None and declaration.compute_dtype is None:
            declaration = replace(declaration, compute_dtype=_torch_dtype(config))
        return _with_shape(declaration, config, config_path)

    if config is not None and _quant_section(config) is not None:
        declaration = _from_json(config, config_path, side_layers)
        if declaration.kv_cache is None and hf_quant is not None:
            kv = modelopt.modelopt_kv(hf_quant.get("quantization", {}))
            if kv:
                declaration = replace(declaration, kv_cache=kv)
        return finish(declaration)
    if hf_quant is not None:
        return finish(_from_json(hf_quant, modelopt_path, side_layers))
    for name in _SIDE_CONFIGS:  # AutoGPTQ / AutoAWQ / bare quantization_config files
        side = directory / name
        if side.is_file():
            return finish(_from_json(load_json(side), side, side_layers))
    ggufs = sorted(p for p in directory.iterdir() if p.suffix.lower() == ".gguf")
    if ggufs:
        return read_gguf(ggufs[0])
    if config is not None:
        return finish(_from_json(config, config_path, side_layers))
    raise ConfigError(
        f"{directory}: no config.json, hf_quant_config.json or .gguf file in this directory"
    )


def _side_layers(directory: Path) -> Mapping[str, Any] | None:
    """A TensorRT-LLM ``quant_cfg.json`` (MIXED_PRECISION ``quantized_layers``), if any."""
    side = directory / "quant_cfg.json"
    return load_json(side) if side.is_file() else None


def _with_shape(declaration: Declaration, config: Mapping[str, Any] | None,
                source: Path) -> Declaration:
    if config is None or declaration.shape is not None:
        return declaration
    return replace(declaration, shape=shape_from_config(config, str(source)))


def _quant_section(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The quantization declaration inside a config.json, wherever this model family keeps it."""
    for holder in (config, config.get("text_config") or {}, config.get("llm_config") or {}):
        if not isinstance(holder, Mapping):
            continue
        section = holder.get("quantization_config")
        if isinstance(section, Mapping):
            return section
        legacy = holder.get("compression_config")
        if isinstance(legacy, Mapping):
            return {**legacy, "__legacy__": True}
    trtllm = config.get("quantization")
    if isinstance(trtllm, Mapping) and "quant_algo" in trtllm:
        return {**trtllm, "quant_method": "trtllm"}
    return None


def _from_json(data: Mapping[str, Any], source: Path,
               side_layers: Mapping[str, Any] | None = None) -> Declaration:
    dtype = _torch_dtype(data)
    if isinstance(data.get("producer"), Mapping) and isinstance(data.get("quantization"), Mapping):
        producer = str(data["producer"].get("name", "modelopt"))
        declaration = modelopt.modelopt(data["quantization"], source, producer=producer,
                                        side_layers=side_layers)
    elif (section := _quant_section(data)) is not None:
        declaration = _from_quant_config(section, source, side_layers)
    elif any(key in data for key in ("quant_method", "config_groups", "quant_algo")):
        declaration = _from_quant_config(data, source, side_layers)
    elif "w_bit" in data:  # AutoAWQ quant_config.json
        declaration = other_formats.int_weight_only(data, source, "awq", "AWQ")
    elif "bits" in data and ("group_size" in data or "desc_act" in data):  # quantize_config.json
        declaration = other_formats.int_weight_only(data, source, "gptq", "GPTQ")
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
        if not isinstance(holder, Mapping):
            continue
        value = holder.get("torch_dtype") or holder.get("dtype")
        if isinstance(value, str) and value.lower().removeprefix("torch.") in TORCH_DTYPES:
            return TORCH_DTYPES[value.lower().removeprefix("torch.")]
    return None


def _unquantized(dtype: str, source: Path) -> Declaration:
    layer = LayerScheme(("*",), dtype, dtype, dtype.upper(), dtype, dtype.upper())
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
        layers=(layer,),
    )


@cache
def quant_methods() -> dict[str, dict[str, Any]]:
    """The ``[quant_method.*]`` table: every method an engine accepts and its reader."""
    return dict(load_table(CHECKPOINTS_FILE).get("quant_method", {}))


def method_row(method: str) -> tuple[str, dict[str, Any]] | None:
    """The table row of a quant_method, however spelled (``modelopt-fp4``, ``gptq_marlin``)."""
    table = quant_methods()
    lowered = method.strip().lower()
    for spelling in (lowered, lowered.replace("-", "_"), lowered.replace("_", "-")):
        if spelling in table:
            return spelling, table[spelling]
    return None


def _from_quant_config(config: Mapping[str, Any], source: Path,
                       side_layers: Mapping[str, Any] | None = None) -> Declaration:
    raw = config.get("quant_method")
    method = str(raw or "").strip()
    if not method:
        if "quant_algo" in config or isinstance(config.get("producer"), Mapping):
            method = "modelopt"
        elif "config_groups" in config:
            method = "compressed-tensors"
    found = method_row(method) if method else None
    if found is None:
        return not_understood(method or "unknown", f"quant_method {raw!r} is not one vLLM or "
                              "SGLang accept (rules/_checkpoints.toml [quant_method])", source)
    name, row = found
    reader = _READERS.get(str(row.get("reader")))
    if reader is None:
        reason = str(row.get("reason") or f"no reader for quant_method {name!r}")
        return not_understood(name, reason, source)
    return reader(config, source, name, row, side_layers)


def _deepspeedfp(config: Mapping[str, Any], source: Path) -> Declaration:
    bits = config.get("bits", 8)
    layer = LayerScheme(("*",), f"fp{bits}", None, f"W{bits}A16", "weight_only", f"FP{bits}")
    return single(layer, f"FP{bits} W{bits}A16 (deepspeedfp)", "deepspeedfp", source, config,
                  (everywhere(layer, "quant_method deepspeedfp"),))


Reader = Callable[[Mapping[str, Any], Path, str, Mapping[str, Any],
                   Mapping[str, Any] | None], Declaration]

_READERS: dict[str, Reader] = {
    "modelopt": lambda c, s, m, r, side: modelopt.modelopt(c, s, side_layers=side),
    "trtllm": lambda c, s, m, r, side: modelopt.modelopt(c, s, producer="TensorRT-LLM",
                                                         side_layers=side),
    "compressed_tensors": lambda c, s, m, r, side: compressed_tensors.compressed_tensors(
        c, s, legacy=bool(c.get("__legacy__"))),
    "quark": lambda c, s, m, r, side: compressed_tensors.quark(c, s),
    "fp8": lambda c, s, m, r, side: other_formats.fp8(c, s, m),
    "mxfp4": lambda c, s, m, r, side: other_formats.mxfp4(c, s),
    "int_weight_only": lambda c, s, m, r, side: other_formats.int_weight_only(
        c, s, m, str(r.get("label", m))),
    "auto_round": lambda c, s, m, r, side: other_formats.auto_round(c, s, m),
    "moe_wna16": lambda c, s, m, r, side: other_formats.moe_wna16(c, s),
    "experts_int8": lambda c, s, m, r, side: other_formats.experts_int8(c, s),
    "bitsandbytes": lambda c, s, m, r, side: other_formats.bitsandbytes(c, s),
    "hqq": lambda c, s, m, r, side: other_formats.hqq(c, s),
    "torchao": lambda c, s, m, r, side: other_formats.torchao(c, s),
    "fp_quant": lambda c, s, m, r, side: other_formats.fp_quant(c, s),
    "aqlm": lambda c, s, m, r, side: other_formats.aqlm(c, s),
    "deepspeedfp": lambda c, s, m, r, side: _deepspeedfp(c, s),
    "fixed": lambda c, s, m, r, side: other_formats.fixed(c, s, m, r),
}
