"""What a checkpoint declares: read its quantization config into a :class:`Declaration`.

The same "NVFP4" label covers a W4A4 checkpoint (FP4 x FP4 tensor-core math expected) and a
W4A16 one (4-bit weights, 16-bit math by design); only the activation declaration tells them
apart. This module reads every common declaration — ModelOpt ``hf_quant_config.json`` and
``quant_method: modelopt``, compressed-tensors ``config_groups``, HF ``fp8``/``fbgemm_fp8``,
``mxfp4`` (gpt-oss), GPTQ, AWQ, bitsandbytes, AMD Quark, TensorRT-LLM checkpoint configs,
GGUF ``general.file_type`` and plain ``torch_dtype`` — and names the datatype path the GEMMs
should run (a word of docs/vocabulary.md#path-what-the-math-unit-multiplies). Field meanings:
docs/engines.md#checkpoint-declarations.
Tables (ModelOpt/TRT-LLM algorithms, GGUF file types) live in ``rules/_checkpoints.toml``.

Layout: ``declaration`` (the value and its path words), ``files`` (where configs live, which
reader applies), ``schemes`` (one reader per ``quant_method``), ``gguf`` (the binary header).
"""

from __future__ import annotations

from tracekit.expect.checkpoint.declaration import (
    PATH_WORDS,
    QUANTIZED_PATHS,
    Declaration,
    LayerScheme,
    declaration_from_word,
)
from tracekit.expect.checkpoint.files import read_declaration

__all__ = ["PATH_WORDS", "QUANTIZED_PATHS", "Declaration", "LayerScheme",
           "declaration_from_word", "read_declaration"]
