"""Demangle Itanium C++ names, once per distinct name, with binutils as the fallback.

The first demangler is cxxfilt, which wraps the C++ runtime's ``abi::__cxa_demangle``. The
libstdc++ of GCC 12 and older does not know the C++23 extended floating-point types: it rejects
names with ``DF16_`` (``_Float16``) or ``DB8_`` (``_BitInt(8)``), and it *misreads*
``DF16b`` (``std::bfloat16_t``, in many aiter / Composable Kernel / sgl-kernel names) as the
fixed-point ``DF16`` followed by ``b``, printing ``bool _Accum``. Fixed-point types
(ISO/IEC TR 18037, C only) never appear in C++ GPU kernels, so an answer that mentions
``_Accum`` or ``_Fract`` is taken as a failure, not as text to classify.

Names the first demangler fails on are handed, in one batch, to binutils' ``c++filt`` when it
is on ``PATH`` (binutils 2.40 reads ``DF16b``, ``DF16_`` and ``DB8_``; ``-r`` lifts its
recursion limit, which Composable Kernel's deeply nested templates exceed). One process per
batch of distinct names, never one per kernel record; without ``c++filt`` such a name stays
mangled and the rules that read mangled type codes (``rules/_ck_types.toml``) still apply.
No text substitution is made on mangled names: builtin types are not substitution candidates
while a replacement such as ``u6__bf16`` would be, which would shift every later ``S_``
back-reference.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

#: demangled text (None: not demangled) per mangled name; bounded as the lru_cache it replaces
#: (65,536 names), cleared when full
_CACHE: dict[str, str | None] = {}
_CACHE_MAX = 1 << 16
#: words a misread extended-float code produces (fixed-point types of TR 18037)
_MISREAD = ("_Accum", "_Fract")
#: binutils' demangler: no leading-underscore stripping, no recursion limit
BINUTILS_COMMAND = ("c++filt", "--no-strip-underscore", "--no-recurse-limit")
_BINUTILS_TIMEOUT_S = 120


def demangle(name: str) -> str | None:
    """The demangled form of an Itanium-mangled name, or None when it is not one or fails."""
    if not name.startswith("_Z"):
        return None
    if name not in _CACHE:
        demangle_all((name,))
    return _CACHE.get(name)


def demangle_all(names: Iterable[str]) -> dict[str, str | None]:
    """Demangle each distinct mangled name once; returns name -> text (None when it failed).

    cxxfilt first; its failures go to one ``c++filt`` run together.
    """
    todo = [n for n in dict.fromkeys(names) if n.startswith("_Z") and n not in _CACHE]
    failed: list[str] = []
    found: dict[str, str | None] = {}
    for name in todo:
        text = _runtime_demangle(name)
        if text is None:
            failed.append(name)
        else:
            found[name] = text
    if failed:
        found.update(_binutils_demangle(failed))
    if len(_CACHE) + len(found) > _CACHE_MAX:
        _CACHE.clear()
    _CACHE.update(found)
    return found


def clear_cache() -> None:
    """Forget every demangled name (tests switch the fallback on and off)."""
    _CACHE.clear()


def binutils_available() -> bool:
    """True when binutils' ``c++filt`` is on ``PATH`` (the fallback demangler)."""
    return shutil.which(BINUTILS_COMMAND[0]) is not None


def runtime_demangles(name: str) -> bool:
    """True when the first demangler (the C++ runtime's, through cxxfilt) reads ``name``."""
    return _runtime_demangle(name) is not None


def _runtime_demangle(name: str) -> str | None:
    try:
        import cxxfilt

        text = cxxfilt.demangle(name, external_only=False)
    except Exception:  # cxxfilt raises InvalidName, or the library may be missing
        return None
    if not text or text == name or any(word in text for word in _MISREAD):
        return None
    return str(text)


def _binutils_demangle(names: list[str]) -> dict[str, str | None]:
    """One ``c++filt`` process for all ``names``; every name maps to text or None."""
    out: dict[str, str | None] = dict.fromkeys(names)
    # one name per line: a name with a line break cannot be passed safely
    batch = [n for n in names if "\n" not in n and "\r" not in n]
    if not batch or not binutils_available():
        return out
    try:
        done = subprocess.run(
            BINUTILS_COMMAND, input="\n".join(batch) + "\n", capture_output=True, text=True,
            timeout=_BINUTILS_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return out
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(batch):
        return out  # not binutils (other c++filt builds lack the flags), or a broken run
    for name, text in zip(batch, lines, strict=True):
        if text and text != name and not any(word in text for word in _MISREAD):
            out[name] = text
    return out
