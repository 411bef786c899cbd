"""What a checkpoint declares: read its quantization config into a :class:`Declaration`.

The same "NVFP4" label covers a W4A4 checkpoint (FP4 x FP4 tensor-core math expected) and a
W4A16 one (4-bit weights, 16-bit math by design); only the activation declaration tells them
apart. This package reads every ``quant_method`` vLLM or SGLang accept (or says it does not
understand one), ModelOpt ``hf_quant_config.json``, TensorRT-LLM checkpoint configs, GGUF
headers and plain ``torch_dtype``, and names the datatype path the GEMMs should run (a word of
docs/vocabulary.md#path-what-the-math-unit-multiplies), per layer group. Field meanings:
docs/engines.md#checkpoint-declarations. Tables (methods, ModelOpt/TRT-LLM algorithms, GGUF
file and tensor types) live in ``rules/_checkpoints.toml``, module names in
``rules/_layer_names.toml``.

Layout: ``declaration`` (the value, its ``ModuleRule``s and path words), ``files`` (where
configs live, the ``quant_method`` dispatch over ``rules/_checkpoints.toml`` ``[quant_method]``),
``modelopt``, ``compressed_tensors`` (and Quark), ``other_formats`` (fp8, mxfp4, GPTQ/AWQ,
bitsandbytes, AutoRound, HQQ, torchao, FP-Quant, fixed-scheme methods), ``gguf`` (the binary
header and tensor infos), ``schemes`` (the scheme words they share), ``matching`` (each
format's pattern semantics), ``modules`` (the modules a model has), ``layers`` (the declaration
per layer group), ``shape`` (the model's dimensions).
"""

from __future__ import annotations

from tracekit.expect.checkpoint.declaration import (
    PATH_WORDS,
    QUANTIZED_PATHS,
    Declaration,
    LayerScheme,
    ModuleRule,
    declaration_from_word,
)
from tracekit.expect.checkpoint.files import read_declaration

__all__ = ["PATH_WORDS", "QUANTIZED_PATHS", "Declaration", "LayerScheme", "ModuleRule",
           "declaration_from_word", "read_declaration"]
