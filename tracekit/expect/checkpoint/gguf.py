"""GGUF files (llama.cpp): the declared quantization is ``general.file_type`` in the header.

Reads the key/value metadata of the binary header (layout:
https://github.com/ggml-org/ggml/blob/master/docs/gguf.md) up to the keys it needs, skipping
large arrays without reading them, and refuses corrupt lengths instead of allocating them. The
file types' meanings are the ``gguf_file_type`` table of ``rules/_checkpoints.toml``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from tracekit.datafiles import load_table
from tracekit.errors import ConfigError
from tracekit.expect.checkpoint.declaration import (
    CHECKPOINTS_FILE,
    Declaration,
    LayerScheme,
    ModuleRule,
)
from tracekit.expect.checkpoint.layers import module_layer
from tracekit.vocabulary import DEFAULT_16BIT_LAYERS, WIDE_PATHS

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
_GGUF_MAX_TENSORS = 1 << 20
#: paths of unquantized tensors (16-bit or wider math)
WIDE_OR_16BIT = frozenset(WIDE_PATHS)


def is_gguf(path: Path) -> bool:
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
    """Read GGUF key/value metadata (the keys in ``wanted``) and the tensor infos that follow
    them (name and ggml type of every tensor, under ``__tensors__``), after ggml's gguf.md. A
    header cut short after the wanted keys keeps what was read (no tensor infos)."""
    remaining = set(wanted)
    found: dict[str, Any] = {}
    with path.open("rb") as handle:
        _read_exact(handle, 4, path)
        (version,) = struct.unpack("<I", _read_exact(handle, 4, path))
        length_format = "<I" if version == 1 else "<Q"  # GGUF v1 used 32-bit counts
        count_size = struct.calcsize(length_format)
        (tensor_count,) = struct.unpack(length_format, _read_exact(handle, count_size, path))
        (kv_count,) = struct.unpack(length_format, _read_exact(handle, count_size, path))
        if kv_count > _GGUF_MAX_KV:
            raise ConfigError(f"{path}: GGUF header claims {kv_count} metadata entries")
        if tensor_count > _GGUF_MAX_TENSORS:
            raise ConfigError(f"{path}: GGUF header claims {tensor_count} tensors")
        for _ in range(kv_count):
            try:
                key = _gguf_string(handle, path, length_format)
                (kind,) = struct.unpack("<I", _read_exact(handle, 4, path))
                value = _gguf_value(handle, kind, path, length_format)
            except ConfigError:
                if remaining:
                    raise
                found["__version__"] = version
                return found  # every wanted key was read before the cut
            if key in remaining:
                found[key] = value
                remaining.discard(key)
        tensors: list[tuple[str, int]] = []
        try:
            for _ in range(tensor_count):
                name = _gguf_string(handle, path, length_format)
                (dims,) = struct.unpack("<I", _read_exact(handle, 4, path))
                if dims > 8:
                    raise ConfigError(f"{path}: GGUF tensor {name} claims {dims} dimensions")
                handle.seek(dims * count_size, 1)
                (ggml_type,) = struct.unpack("<I", _read_exact(handle, 4, path))
                _read_exact(handle, 8, path)  # offset of the data
                if dims >= 2:  # 1-D tensors are norms and biases, no GEMM operand
                    tensors.append((name, ggml_type))
        except ConfigError:
            tensors = []  # a header without (complete) tensor infos: the file type decides
        found["__tensors__"] = tensors
    found["__version__"] = version
    return found


def _tensor_schemes(path: Path, tensors: list[tuple[str, int]],
                    fallback: LayerScheme) -> tuple[tuple[ModuleRule, ...], tuple[str, ...]]:
    """One exact rule per weight tensor: its own ggml type's scheme (``[ggml_type]`` table)."""
    table = load_table(CHECKPOINTS_FILE).get("ggml_type", {})
    rules: list[ModuleRule] = []
    names: list[str] = []
    for name, ggml_type in tensors:
        module = name.removesuffix(".weight")
        row = table.get(str(ggml_type))
        if row is None:
            layer: LayerScheme | None = replace(fallback, targets=(module,))
            rules.append(ModuleRule(module, "exact", layer, f"ggml type {ggml_type}"))
        elif row.get("path") in WIDE_OR_16BIT:
            rules.append(ModuleRule(module, "exact", None, f"stored {row['name']}",
                                    status="not_targeted" if module_layer(module)
                                    in DEFAULT_16BIT_LAYERS else "excluded"))
        else:
            layer = LayerScheme((module,), row.get("weights"), row.get("activations"),
                                row["scheme"], row["path"], row["name"])
            rules.append(ModuleRule(module, "exact", layer, f"stored {row['name']}"))
        names.append(module)
    return tuple(rules), tuple(names)


def read_gguf(path: Path) -> Declaration:
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
    main = LayerScheme(("*",), weights, activations, row["scheme"], row["path"], row["name"])
    rules, names = _tensor_schemes(path, meta.get("__tensors__", []), main)
    if not rules:
        rules = (ModuleRule("*", "class", main, f"general.file_type {row['name']}",
                            groups=("attention", "mlp", "moe_experts")),)
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
        layers=(main,),
        alternatives=frozenset(row.get("alternatives", ())),
        rules=rules,
        module_names=names,
    )
