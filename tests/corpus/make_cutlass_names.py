"""Write ``cutlass_generated.jsonl``: CUTLASS library names, their types known by construction.

The names are not copied from traces: NVIDIA's own generator makes them. ``cutlass_library``
(the ``nvidia-cutlass`` package on PyPI, version pinned below) is the script that CUTLASS's
CMake build runs to decide which kernels its library instantiates; every ``Operation`` it
appends to the manifest carries its ``procedural_name()`` (the name the kernel struct, and so
the launched ``cutlass::device_kernel<…>`` / profiler line, is given) together with the element
types of A and B, the math instruction and its opcode class. The truth below is computed from
those objects, never from the name and never by running tracekit:

- the math instruction's kind decides: block-scaled (``bstensorop``) FP4 x FP4 is ``fp4``;
  every other FP8/FP6/FP4 combination runs the FP8-rate ``f8f6f4`` kind (``fp8``); integer MMA
  is ``int8``; TF32 (and CUTLASS ``f32`` tensor-op data, and 3xTF32 "fast f32") is ``tf32``;
- mixed-input kernels (one 16-bit operand, the other narrower, upcast in the mainloop) are
  ``weight_only``; an integer operand upcast to FP8 runs FP8 math (``fp8``);
- "fast" math (``multiply_add_fast_bf16`` / ``_f16``) converts FP32 data to the 16-bit MMA type;
- SIMT kernels compute in their element type (``fp32``, ``fp64``);
- complex and binary (``b1``) kernels are left out: the path vocabulary has no word for them.

A stratified sample (every architecture x operand pair x math operation x opcode class x kind x
variant seen, up to ``PER_STRATUM`` names each, fixed seed) keeps the file a few hundred lines.
Run it again after bumping the pinned version, then review the snapshot diff::

    pip install --no-deps nvidia-cutlass==4.2.0.0
    python tests/corpus/make_cutlass_names.py

``tests/classifier/test_corpus.py`` re-runs the generator when ``cutlass_library`` is
importable and checks that the committed file is what it writes (skipped where it is not
installed: the package pulls in cuda-python, too heavy for a test dependency).
"""

from __future__ import annotations

import json
import logging
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

VERSION = "4.2.0.0"
ARCHITECTURES = "80;89;90a;100a;103a;120a"
CUDA_VERSION = "12.9.0"
PER_STRATUM = 2
SEED = 24
OUT = Path(__file__).resolve().parent / "cutlass_generated.jsonl"
SOURCE = ("https://github.com/NVIDIA/cutlass/blob/v4.2.0/python/cutlass_library/generator.py "
          f"(nvidia-cutlass {VERSION} on PyPI, architectures {ARCHITECTURES}, "
          "via tests/corpus/make_cutlass_names.py)")

HALF = {"f16": "fp16", "bf16": "bf16"}
INTEGER = {"s8", "u8", "s4", "u4", "s2", "u2"}
FP8 = {"e4m3", "e5m2", "f8"}
SUB8 = {"e2m1", "f4", "e3m2", "e2m3", "f6"}
FP4 = {"e2m1", "f4"}
SKIP_MATH = {"multiply_add_complex", "multiply_add_complex_fast_f32",
             "multiply_add_complex_gaussian", "xor_popc", "and_popc"}


def truth(a: str, b: str, math: str, opcode: str) -> tuple[str, str] | None:
    """(path, why) from the operation's construction; None for kinds the corpus leaves out."""
    if math in SKIP_MATH or "b1" in (a, b) or a.startswith("c") or b.startswith("c"):
        return None
    if math == "multiply_add_fast_bf16":
        return "bf16", "FP32 data converted to BF16 for the MMA (multiply_add_fast_bf16)"
    if math == "multiply_add_fast_f16":
        return "fp16", "FP32 data converted to FP16 for the MMA (multiply_add_fast_f16)"
    if math == "multiply_add_fast_f32":
        return "tf32", "3xTF32: FP32 data split into TF32 MMAs (multiply_add_fast_f32)"
    pair = {a, b}
    if opcode == "Simt":
        word = {"f32": "fp32", "f64": "fp64", "f16": "fp16"}.get(a)
        return (word, f"SIMT {a} math") if word and a == b else None
    if pair <= set(HALF):
        return (HALF[a], f"{a} x {b} MMA") if a == b else None
    if pair <= {"f32", "tf32"}:
        return "tf32", "f32/tf32 tensor-op operands run the TF32 MMA"
    if pair == {"f64"}:
        return "fp64", "FP64 DMMA"
    if pair <= INTEGER:
        return "int8", f"integer MMA ({a} x {b})"
    if pair & set(HALF) and len(pair) == 2:
        narrow = (pair - set(HALF)).pop()
        if narrow in INTEGER | FP8 | SUB8:
            return "weight_only", f"mixed input: {narrow} upcast to 16-bit for the MMA"
        return None
    if pair <= INTEGER | FP8 and pair & FP8:
        return "fp8", f"{a} x {b}: the integer operand is upcast to FP8, FP8 MMA"
    if pair <= FP8 | SUB8:
        if opcode == "BlockScaledTensorOp" and pair <= FP4:
            return "fp4", "block-scaled FP4 x FP4 MMA (mxf4 / nvf4 kind)"
        kind = "block-scaled " if opcode == "BlockScaledTensorOp" else ""
        return "fp8", f"{kind}{a} x {b} runs the FP8-rate f8f6f4 MMA kind"
    return None


def variant(name: str) -> str:
    """The naming variant a name shows (kind of operation and scheme flags), for the sample."""
    flags = [word for word in ("grouped", "fprop", "dgrad", "wgrad", "3d", "spgemm", "bstensorop",
                               "f32x", "interleaved", "nc32hw32", "nc64hw64", "fastaccum",
                               "stream_k", "cvt", "shfl") if word in name]
    return ",".join(flags) + ("|3x" if name.startswith("cutlass3x") else "|2x")


def generate() -> list[dict]:
    logging.disable(logging.WARNING)
    from cutlass_library import generator
    from cutlass_library.library import DataTypeNames, OperationKind
    from cutlass_library.manifest import Manifest

    args = generator.define_parser().parse_args([
        "--architectures", ARCHITECTURES, "--kernels", "all", "--cuda-version", CUDA_VERSION,
        "--disable-cutlass-package-imports"])
    manifest = Manifest(args)
    for step in (generator.GenerateSM80, generator.GenerateSM89, generator.GenerateSM90,
                 generator.GenerateSM100, generator.GenerateSM120):
        step(manifest, args.cuda_version)
    kinds = {OperationKind.Gemm: "gemm", OperationKind.Conv2d: "gemm", OperationKind.Conv3d: "gemm"}
    strata: dict[tuple, list[dict]] = defaultdict(list)
    for name in sorted(manifest.operations_by_name):
        operation = manifest.operations_by_name[name]
        if operation.operation_kind not in kinds:
            continue
        instruction = operation.tile_description.math_instruction
        a, b = DataTypeNames[operation.A.element], DataTypeNames[operation.B.element]
        math = str(instruction.math_operation).split(".")[1]
        opcode = str(instruction.opcode_class).split(".")[1]
        decided = truth(a, b, math, opcode)
        if decided is None:
            continue
        path, why = decided
        arch = f"sm{operation.arch}"
        kind = operation.operation_kind.name
        strata[(arch, a, b, math, opcode, kind, variant(name))].append({
            "name": name, "path": path, "op": "gemm", "weights": None, "activations": None,
            "family": "cutlass3x" if name.startswith("cutlass3x") else "cutlass2x",
            "source": SOURCE,
            "why": (f"generated by cutlass_library: {kind} A={a} B={b}, {opcode} "
                    f"{math}: {why}"),
            "arch": arch,
        })
    rng = random.Random(SEED)
    chosen: list[dict] = []
    for key in sorted(strata):
        group = strata[key]
        chosen.extend(rng.sample(group, min(PER_STRATUM, len(group))))
    return sorted(chosen, key=lambda entry: entry["name"])


def lines(entries: list[dict]) -> str:
    return "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)


def main() -> None:
    import cutlass_library  # noqa: F401 - fail early with the install hint

    entries = generate()
    OUT.write_text(lines(entries), encoding="utf-8")
    per = defaultdict(int)
    for entry in entries:
        per[(entry["arch"], entry["path"])] += 1
    print(f"wrote {len(entries)} names to {OUT}", file=sys.stderr)
    for key in sorted(per):
        print(f"  {key[0]:6} {key[1]:12} {per[key]}", file=sys.stderr)


if __name__ == "__main__":
    if not re.match(r"^\d", VERSION):
        raise SystemExit("bad VERSION")
    main()
