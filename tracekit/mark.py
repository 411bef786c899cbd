"""Step markers for code that no engine marks: two lines make a run's phases measurable.

    import tracekit.mark

    with tracekit.mark.step(prefill_tokens=512, prefill_requests=1):
        logits = model(prompt)            # every kernel launched here belongs to this step

The context manager opens an NVTX range (through the ``nvtx`` package, recorded by
``nsys -t nvtx``) and, when torch is already imported, a ``torch.profiler.record_function``
with the same text (recorded as a ``user_annotation`` in torch profiler traces). tracekit then
attributes every kernel launched inside the range, on the same thread, to this step
(``rules/_phase_markers.toml``, entry ``tracekit-step``).

Text format (stable, documented, matched by the rules)::

    tracekit.step[key=value key=value ...]

with keys ``phase`` (``prefill`` | ``decode`` | ``mixed``), ``prefill_tokens``,
``decode_tokens``, ``prefill_requests``, ``decode_requests`` (non-negative integers) and
``label`` (free text, last, without ``]``). Without ``phase`` the phase follows from the
counts: only prefill work → prefill, only decode → decode, both → mixed.

Without the ``nvtx`` package the NVTX half is skipped with one warning (``pip install
nvtx==0.2.10``: some newer ``nvtx`` releases are not recorded by older nsys, which loses the
markers silently). Nothing here imports torch.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import ModuleType
from typing import Any

from tracekit.vocabulary import STEP_PHASES

PREFIX = "tracekit.step["
PHASES = STEP_PHASES
COUNT_KEYS = ("prefill_tokens", "decode_tokens", "prefill_requests", "decode_requests")
DOMAIN = None  # the default NVTX domain: what engines use and every nsys shows

_nvtx: ModuleType | None = None
_nvtx_checked = False


def step_text(*, phase: str | None = None, prefill_tokens: int | None = None,
              decode_tokens: int | None = None, prefill_requests: int | None = None,
              decode_requests: int | None = None, label: str | None = None) -> str:
    """The marker text for one step (see the module docstring for the format)."""
    parts: list[str] = []
    if phase is not None:
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
        parts.append(f"phase={phase}")
    values = dict(zip(COUNT_KEYS, (prefill_tokens, decode_tokens, prefill_requests,
                                   decode_requests), strict=True))
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{key} must be a non-negative int, not {value!r}")
        parts.append(f"{key}={value}")
    if phase is None and not any(values.values()):
        raise ValueError("say what the step carries: a phase, or prefill/decode token counts")
    if label is not None:
        if "]" in label or "\n" in label:
            raise ValueError("label may not contain ']' or a newline")
        parts.append(f"label={label}")
    return PREFIX + " ".join(parts) + "]"


def _nvtx_module() -> ModuleType | None:
    """The ``nvtx`` package, or None after one warning when it is not installed."""
    global _nvtx, _nvtx_checked
    if not _nvtx_checked:
        _nvtx_checked = True
        try:
            _nvtx = importlib.import_module("nvtx")
        except ImportError:
            warnings.warn("tracekit.mark: the 'nvtx' package is not installed, so steps are not "
                          "recorded as NVTX ranges (pip install nvtx==0.2.10)", RuntimeWarning,
                          stacklevel=3)
            _nvtx = None
    return _nvtx


@contextmanager
def _nvtx_range(message: str) -> Iterator[None]:
    module = _nvtx_module()
    if module is None:
        yield
        return
    module.push_range(message=message, domain=DOMAIN)
    try:
        yield
    finally:
        module.pop_range(domain=DOMAIN)


def _torch_range(message: str) -> Any:
    """A ``record_function`` when torch is already imported (never imports torch itself)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    profiler = getattr(torch, "profiler", None)
    record_function = getattr(profiler, "record_function", None)
    return record_function(message) if record_function is not None else None


@contextmanager
def step(*, phase: str | None = None, prefill_tokens: int | None = None,
         decode_tokens: int | None = None, prefill_requests: int | None = None,
         decode_requests: int | None = None, label: str | None = None) -> Iterator[str]:
    """Mark one engine step; yields the marker text.

    The ranges must open and close on the thread that launches the step's kernels: tracekit
    attributes a kernel by where its launch call ran.
    """
    message = step_text(phase=phase, prefill_tokens=prefill_tokens, decode_tokens=decode_tokens,
                        prefill_requests=prefill_requests, decode_requests=decode_requests,
                        label=label)
    with ExitStack() as stack:
        stack.enter_context(_nvtx_range(message))
        torch_range = _torch_range(message)
        if torch_range is not None:
            stack.enter_context(torch_range)
        yield message
