"""Where a checkpoint keeps its declaration: model folders, config files, GGUF, and dispatch.

A model folder's ``config.json`` ``quantization_config`` (or the sections some families nest
under ``text_config``/``llm_config``), ModelOpt's ``hf_quant_config.json``, AutoGPTQ/AutoAWQ side
files, a GGUF file, or plain ``torch_dtype``; then the ``quant_method`` names the reader in
``tracekit.expect.checkpoint.schemes``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from tracekit.errors import ConfigError
from tracekit.expect.checkpoint import schemes
from tracekit.expect.checkpoint.declaration import TORCH_DTYPES, Declaration
from tracekit.expect.checkpoint.gguf import is_gguf, read_gguf


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
    if is_gguf(path):
        return read_gguf(path)
    return _from_json(_load_json(path), path)


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
            kv = schemes.modelopt_kv(modelopt.get("quantization", {}))
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
        return read_gguf(ggufs[0])
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
        declaration = schemes.modelopt(data["quantization"], source, producer=producer)
    elif (section := _quant_section(data)) is not None:
        declaration = _from_quant_config(section, source)
    elif any(key in data for key in ("quant_method", "config_groups", "quant_algo")):
        declaration = _from_quant_config(data, source)
    elif "w_bit" in data:  # AutoAWQ quant_config.json
        declaration = schemes.int_weight_only(data, source, "AWQ")
    elif "bits" in data and ("group_size" in data or "desc_act" in data):  # quantize_config.json
        declaration = schemes.int_weight_only(data, source, "GPTQ")
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
        if isinstance(value, str) and value.lower().removeprefix("torch.") in TORCH_DTYPES:
            return TORCH_DTYPES[value.lower().removeprefix("torch.")]
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
        "modelopt": lambda: schemes.modelopt(config, source),
        # vLLM's method names for ModelOpt checkpoints; quant_algo decides the scheme
        "modelopt-fp4": lambda: schemes.modelopt(config, source),
        "modelopt-fp8": lambda: schemes.modelopt(config, source),
        "modelopt-mxfp8": lambda: schemes.modelopt(config, source),
        "modelopt-mixed": lambda: schemes.modelopt(config, source),
        "trtllm": lambda: schemes.modelopt(config, source, producer="TensorRT-LLM"),
        "compressed-tensors": lambda: schemes.compressed_tensors(config, source),
        "fp8": lambda: schemes.fp8(config, source, "fp8"),
        "fbgemm-fp8": lambda: schemes.fp8(config, source, "fbgemm_fp8"),
        "mxfp4": lambda: schemes.mxfp4(config, source),
        "gptq": lambda: schemes.int_weight_only(config, source, "GPTQ"),
        "auto-gptq": lambda: schemes.int_weight_only(config, source, "GPTQ"),
        "gptq-marlin": lambda: schemes.int_weight_only(config, source, "GPTQ"),
        "awq": lambda: schemes.int_weight_only(config, source, "AWQ"),
        "auto-round": lambda: schemes.int_weight_only(config, source, "AutoRound"),
        "awq-marlin": lambda: schemes.int_weight_only(config, source, "AWQ"),
        "bitsandbytes": lambda: schemes.bitsandbytes(config, source),
        "quark": lambda: schemes.quark(config, source),
    }
    reader = readers.get(method)
    if reader is None:
        raise ConfigError(
            f"{source}: unknown quant_method {config.get('quant_method')!r}",
            hint="known: " + ", ".join(sorted(readers)) + "; or pass --expect PATH_WORD",
        )
    return reader()
