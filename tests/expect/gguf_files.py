"""GGUF headers written at test time: key/values and tensor infos, no tensor data.

The layout is ggml's gguf.md (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
magic, version, tensor count, key/value count, the key/values, then per tensor its name,
dimension count, dimensions, ggml type and data offset. The tests need only the header.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from tracekit.datafiles import load_table


def gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def ggml_type_id(name: str) -> int:
    """The ggml type id of a type name (``Q4_K``) from the ``[ggml_type]`` table."""
    for key, row in load_table("_checkpoints.toml")["ggml_type"].items():
        if row["name"] == name:
            return int(key)
    raise KeyError(name)


def write_gguf(path: Path, file_type: int | None, *, version: int = 3,
               tensors: Sequence[tuple[str, str]] = ()) -> Path:
    """A GGUF header with general.file_type = file_type and the given (name, type) tensors."""
    kvs = [
        gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama"),
        # a string array, as tokenizers store them, to prove arrays are skipped correctly
        gguf_string("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, 3)
        + b"".join(gguf_string(t) for t in ("<s>", "</s>", "hello")),
        gguf_string("tokenizer.ggml.scores")
        + struct.pack("<IIQ", 9, 6, 3)
        + struct.pack("<3f", 0, 0, 0),
    ]
    if file_type is not None:
        kvs.append(
            gguf_string("general.file_type") + struct.pack("<I", 4) + struct.pack("<I", file_type)
        )
    infos = []
    for name, type_name in tensors:
        dims = (1, 4096) if name.endswith("norm.weight") else (2, 4096, 4096)
        infos.append(gguf_string(name) + struct.pack("<I", dims[0])
                     + struct.pack(f"<{dims[0]}Q", *dims[1:])
                     + struct.pack("<IQ", ggml_type_id(type_name), 0))
    header = b"GGUF" + struct.pack("<I", version) + struct.pack("<QQ", len(infos), len(kvs))
    path.write_bytes(header + b"".join(kvs) + b"".join(infos))
    return path
