"""Draw a hold-back sample from the kernel names a shipped CUDA library holds (hold-backs 12–15).

Hold-backs 12 to 15 took most of their names from PyPI wheels (cuBLAS, cuDNN, onnxruntime-gpu,
paddlepaddle-gpu, tensorflow, vllm, sgl-kernel, torch, bitsandbytes, autoawq-kernels, torchao):
the names a user's trace really holds, and a source no rule worker had read. This script is the
rule each sample was drawn by, fixed before any name was read; tests/corpus/holdback/README.md
gives the wheels, versions, quotas and counts of each hold-back. It is not run by the tests (the
wheels are hundreds of MB); ``tests/classifier/test_wheel_kernel_names.py`` tests its rules.

The pool (``pool``): only a library's ``.rodata`` section is read, so host symbol tables cannot
leak in. Two kinds of string there name a ``__global__`` kernel:

- the mangled names nvcc's host stubs register (string literals outside any embedded cubin),
  kept when they demangle to a ``void`` function (a kernel returns void);
- in cubins embedded uncompressed in ``.rodata`` (TensorRT-style kernel tables), every ``X``
  with a ``.nv.info.X`` section: per-kernel attributes, which device functions lack.

The demangled form is kept: what nsys and Kineto show. Hold-back 12 used an earlier pool rule for
the stripped cuBLAS / cuDNN libraries (every identifier string, mangled ones demangling to a
``void`` function that is no exported symbol, plain ones ending in ``kernel`` or ``_cublas``);
the README says so.

The sample (``sample``): a name is kept when its qualified function name (namespaces and
function, no template arguments or parameters) holds a matrix word and the name is not already
under tests/corpus/. The qualified name ends at the first parenthesis outside a template, so a
kernel in an ``(anonymous namespace)`` is cut there and kept only if a matrix word comes before
it: a quirk of the rule as the samples were drawn, kept so that they redraw alike. With
``--unseen-families`` (hold-backs 13 and 14) a name whose base function name is the base of any
corpus name is dropped too: a family seen is not unseen. The distinct bases are sorted, every
k-th taken (k = ceil(bases / quota)), and of each base up to ``--per-base`` instantiations,
evenly spread over its sorted names, so one template's thousands of instantiations cannot fill
the sample.

Usage (binutils' ``readelf`` and ``c++filt`` on PATH)::

    python tests/corpus/holdback/wheel_kernel_names.py pool POOL.json LIB.so [LIB.so …]
    python tests/corpus/holdback/wheel_kernel_names.py sample POOL.json QUOTA OUT.jsonl \\
        [--unseen-families] [--per-base N]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import struct
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1]

#: a qualified function name with one of these words is a matrix-kernel family
MATRIX_WORDS = re.compile(
    r"gemm|gemv|matmul|mma|attention|attn|fmha|mha|flash|quant|moe|fp8|fp4|int8|int4|conv|cast"
    r"|w4a|w8a|fpa_intb|weight_only",
    re.IGNORECASE,
)
#: what a demangled kernel starts with: ``void`` or an enable_if that yields void
_VOID = re.compile(r"void |std::enable_if<[^>]*, void>::type ")
#: a NUL-terminated identifier-like string of at least 16 characters
_LITERAL = re.compile(rb"[A-Za-z0-9_$.]{16,}\x00")
_ELF64_LE = re.compile(rb"\x7fELF\x02\x01\x01")


def qualified(name: str) -> str:
    """``ns::Class::function`` of a demangled name: no return type, template arguments or
    parameters (it ends at the first parenthesis outside a template, ``(anonymous namespace)``
    included, as the samples were drawn)."""
    text = _VOID.sub("", name, count=1) if _VOID.match(name) else name
    kept: list[str] = []
    depth = 0
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0:
            break
        elif depth == 0:
            kept.append(char)
    return "".join(kept).strip()


def base(name: str) -> str:
    """The function's own name, the last component of its qualified name."""
    return qualified(name).split("::")[-1]


def elf_extents(data: bytes) -> list[tuple[int, int]]:
    """Where 64-bit little-endian ELF images (embedded cubins) lie in ``data``: start, end."""
    extents = []
    for found in _ELF64_LE.finditer(data):
        start = found.start()
        try:
            (section_offset,) = struct.unpack_from("<Q", data, start + 0x28)
            entry_size, entries = struct.unpack_from("<HH", data, start + 0x3A)
        except struct.error:
            continue
        end = start + section_offset + entry_size * entries
        if section_offset and entry_size == 64 and 0 < entries < 100_000 and end <= len(data):
            extents.append((start, end))
    return extents


def rodata_names(data: bytes) -> tuple[list[str], set[str]]:
    """The registered mangled literals outside any embedded cubin, and the ``.nv.info.X``
    kernels inside one, of a ``.rodata`` section's bytes."""
    extents = elf_extents(data)

    def inside(position: int) -> bool:
        return any(start <= position < end for start, end in extents)

    literals: list[str] = []
    cubin_kernels: set[str] = set()
    for found in _LITERAL.finditer(data):
        if found.start() and data[found.start() - 1] != 0:
            continue  # the tail of a longer string
        text = found.group()[:-1].decode()
        if text.startswith(".nv.info.") and inside(found.start()):
            cubin_kernels.add(text.removeprefix(".nv.info."))
        elif text.startswith("_Z") and not inside(found.start()):
            literals.append(text)
    return literals, cubin_kernels


def demangle(names: Sequence[str]) -> dict[str, str]:
    """Mangled -> demangled by binutils' ``c++filt`` (one process for all names)."""
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return dict(zip(names, out, strict=False))


def kernel_names(mangled: Iterable[str], plain: Iterable[str]) -> list[str]:
    """The demangled kernels among registered mangled names, with the plain cubin kernels."""
    mangled = sorted(set(mangled))
    readable = demangle(mangled)
    kept = [d for m, d in readable.items() if d != m and _VOID.match(d) and "(" in d]
    return sorted(set(kept) | set(plain))


def read_rodata(library: Path) -> bytes:
    """The bytes of a shared library's ``.rodata`` section (offsets from ``readelf -SW``)."""
    listing = subprocess.run(["readelf", "-SW", str(library)], capture_output=True, text=True,
                             check=True).stdout
    for line in listing.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[1] == ".rodata":
            offset, size = int(fields[4], 16), int(fields[5], 16)
            with library.open("rb") as handle:
                handle.seek(offset)
                return handle.read(size)
    raise SystemExit(f"{library}: no .rodata section")


def corpus_names() -> set[str]:
    """Every name under tests/corpus/ (hold-backs included), mangled ones also demangled."""
    names = {json.loads(line)["name"]
             for file in CORPUS.rglob("*.jsonl") if "snapshot" not in file.parts
             for line in file.read_text(encoding="utf-8").splitlines() if line.strip()}
    return names | set(demangle(sorted(n for n in names if n.startswith("_Z"))).values())


def sample(pool: Iterable[str], known: set[str], quota: int, *, unseen_families: bool,
           per_base: int) -> list[str]:
    """The hold-back sample of ``pool`` by the rule in the module docstring."""
    seen_bases = {base(n) for n in known} if unseen_families else set()
    by_base: dict[str, list[str]] = {}
    for name in sorted(pool):
        if (name in known or not MATRIX_WORDS.search(qualified(name))
                or base(name) in seen_bases):
            continue
        by_base.setdefault(base(name), []).append(name)
    bases = sorted(by_base)
    step = max(1, math.ceil(len(bases) / quota)) if quota else 1
    chosen: list[str] = []
    for family in bases[::step]:
        names = by_base[family]
        take = min(per_base, len(names))
        chosen += [names[(2 * i + 1) * len(names) // (2 * take)] for i in range(take)]
    return chosen


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pool_command = commands.add_parser("pool", help="write a library pool: name -> library")
    pool_command.add_argument("out", type=Path)
    pool_command.add_argument("libraries", type=Path, nargs="+")
    sample_command = commands.add_parser("sample", help="draw a sample from a pool")
    sample_command.add_argument("pool", type=Path)
    sample_command.add_argument("quota", type=int)
    sample_command.add_argument("out", type=Path)
    sample_command.add_argument("--unseen-families", action="store_true")
    sample_command.add_argument("--per-base", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "pool":
        pool: dict[str, str] = {}
        for library in args.libraries:
            literals, cubin_kernels = rodata_names(read_rodata(library))
            for name in kernel_names(literals, cubin_kernels):
                pool.setdefault(name, library.name)
        args.out.write_text(json.dumps(pool, indent=0), encoding="utf-8")
        print(f"{len(pool)} kernel names")
        return
    pool = json.loads(args.pool.read_text(encoding="utf-8"))
    names = sample(pool, corpus_names(), args.quota, unseen_families=args.unseen_families,
                   per_base=args.per_base)
    with args.out.open("w", encoding="utf-8") as out:
        for name in names:
            out.write(json.dumps({"name": name, "library": pool[name]}) + "\n")
    print(f"{len(names)} names from {len({base(n) for n in names})} families")


if __name__ == "__main__":
    main()
