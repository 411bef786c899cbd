"""Scan an engine log for the lines engines print when they pick a GEMM kernel or fall back.

Log lines are a second opinion next to the kernel trace: vLLM's ``Using <Kernel> for NVFP4
GEMM`` names the kernel class per layer type, its Marlin warning announces weight-only math.
They are attached to findings as evidence and never decide a verdict alone — the Marlin
warning is also printed for W4A16 layers on GPUs that do compute FP4 (vllm#47749).
Patterns are data: ``rules/_log_patterns.toml``, each the real string of an engine's source
with the file and versions that print it.

What the per-layer judgement reads of a line: :attr:`LogEvidence.announces_fallback` (the
line's own words say the engine runs less than declared), :attr:`LogEvidence.format` (the
declared format family it speaks of, the ``family`` of
:class:`tracekit.expect.kernel_paths.ExpectedPath`) and :attr:`LogEvidence.scope` (``linear``,
``moe`` or None); :meth:`LogEvidence.speaks_of` matches a line to a layer group's expected
path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from tracekit.datafiles import load_table, require
from tracekit.errors import InputError, RuleFileError
from tracekit.gpus import arch_from_capability

PATTERNS_FILE = "_log_patterns.toml"
#: the layer scopes a line can speak of (as tracekit.expect.kernel_paths.SCOPES)
SCOPES = ("linear", "moe")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MAX_LINE = 8192  # engine logs can carry giant JSON dumps; patterns never need that much


@dataclass(frozen=True)
class LogEvidence:
    """One recognized log line."""

    line_no: int  # 1-based, first occurrence
    text: str  # the line, ANSI codes removed, stripped
    # kernel-selected, moe-backend, fallback-warning, emulation, declared-weight-only, declared,
    # user-override, device
    kind: str
    rule: str  # pattern id in rules/_log_patterns.toml
    engine: str
    kernel: str | None = None  # kernel class / backend named by the line
    path: str | None = None  # path the line implies, None when it does not say
    gpu_arch: str | None = None  # for device lines: the architecture they report
    count: int = 1  # identical messages are reported once, with how often they occurred
    matched: str = ""  # the part of the line the pattern matched (repeats are keyed on it)
    #: the line's own words say the engine runs less than the checkpoint declares
    announces_fallback: bool = False
    #: the declared format family the line speaks of (nvfp4, mxfp4, mxfp8, fp8, int8, wna16,
    #: gguf, unquantized), None when it does not say
    format: str | None = None
    #: which layers: "linear" (dense), "moe" (the experts), None when the line does not say
    scope: str | None = None

    def speaks_of(self, family: str, scope: str) -> bool:
        """Whether the line is about layers of this format family and scope (a line that does
        not name one of them speaks of any)."""
        return ((self.format is None or self.format == family)
                and (self.scope is None or self.scope == scope))

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready form for a finding's evidence list."""
        return {
            "source": "log",
            "line": self.line_no,
            "text": self.text,
            "kind": self.kind,
            "rule": self.rule,
            "kernel": self.kernel,
            "path": self.path,
            "count": self.count,
            "announces_fallback": self.announces_fallback,
            "format": self.format,
            "scope": self.scope,
        }


@dataclass(frozen=True)
class _Pattern:
    id: str
    engine: str
    kind: str
    regex: re.Pattern[str]
    path: str | None
    context: str | None
    announces_fallback: bool = False
    format: str | None = None
    scope: str | None = None
    kernel_paths: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Backend:
    regex: re.Pattern[str]
    path: str
    context: re.Pattern[str] | None


@cache
def _patterns() -> tuple[_Pattern, ...]:
    rows = load_table(PATTERNS_FILE).get("pattern", [])
    result = []
    for row in rows:
        where = f"[[pattern]] {row.get('id', '?')}"
        scope = row.get("scope")
        if scope not in (None, *SCOPES):
            raise RuleFileError(f"rules/{PATTERNS_FILE}: {where}: scope {scope!r} is not one of "
                                f"{', '.join(SCOPES)}")
        result.append(
            _Pattern(
                id=require(row, "id", PATTERNS_FILE, where),
                engine=require(row, "engine", PATTERNS_FILE, where),
                kind=require(row, "kind", PATTERNS_FILE, where),
                regex=re.compile(require(row, "regex", PATTERNS_FILE, where)),
                path=row.get("path"),
                context=row.get("context"),
                announces_fallback=bool(row.get("announces_fallback", False)),
                format=row.get("format"),
                scope=scope,
                kernel_paths=tuple(row.get("kernel_path", {}).items()),
            )
        )
    return tuple(result)


@cache
def _backends() -> tuple[_Backend, ...]:
    rows = load_table(PATTERNS_FILE).get("backend", [])
    return tuple(
        _Backend(
            regex=re.compile(require(row, "regex", PATTERNS_FILE, "[[backend]]")),
            path=require(row, "path", PATTERNS_FILE, "[[backend]]"),
            context=re.compile(row["context"], re.IGNORECASE) if row.get("context") else None,
        )
        for row in rows
    )


@cache
def _context_paths() -> dict[str, str]:
    return {k.lower(): v for k, v in load_table(PATTERNS_FILE).get("context_path", {}).items()}


@cache
def _context_formats() -> dict[str, str]:
    return {k.lower(): v for k, v in load_table(PATTERNS_FILE).get("context_format", {}).items()}


@cache
def _kernel_formats() -> tuple[tuple[re.Pattern[str], str], ...]:
    rows = load_table(PATTERNS_FILE).get("kernel_format", [])
    return tuple((re.compile(require(row, "regex", PATTERNS_FILE, "[[kernel_format]]")),
                  require(row, "format", PATTERNS_FILE, "[[kernel_format]]")) for row in rows)


def _line_format(pattern: _Pattern, context: str | None, kernel: str | None) -> str | None:
    if pattern.format:
        return pattern.format
    if context:
        return _context_formats().get(context.lower())
    if kernel:
        return next((fmt for regex, fmt in _kernel_formats() if regex.search(kernel)), None)
    return None


def backend_path(kernel: str, context: str | None) -> str | None:
    """The path a kernel/backend name implies, read with the quantization the line is about."""
    ctx = (context or "").lower()
    for backend in _backends():
        if backend.context is not None and not backend.context.fullmatch(ctx):
            continue
        if backend.regex.search(kernel):
            return backend.path
    return None


def match_line(line: str, line_no: int = 0) -> LogEvidence | None:
    """Recognize one log line; None when no pattern matches."""
    text = _ANSI.sub("", line[:_MAX_LINE]).strip()
    if not text:
        return None
    for pattern in _patterns():
        match = pattern.regex.search(text)
        if match is None:
            continue
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        kernel = groups.get("kernel") or groups.get("kernel2")
        context = groups.get("context") or pattern.context
        path = dict(pattern.kernel_paths).get(kernel) if kernel else None
        if kernel and path is None:
            path = backend_path(kernel, context)
        if path is None:
            path = pattern.path
        if path is None and context:
            path = _context_paths().get(context.lower())
        line_format = _line_format(pattern, context, kernel)
        scope = pattern.scope
        if "moe" in pattern.regex.groupindex:
            scope = "moe" if "moe" in groups else "linear"
        gpu_arch = None
        if "major" in groups and "minor" in groups:
            gpu_arch = arch_from_capability(int(groups["major"]), int(groups["minor"]))
            kernel = groups.get("device")
        return LogEvidence(
            line_no=line_no,
            text=text,
            kind=pattern.kind,
            rule=pattern.id,
            engine=pattern.engine,
            kernel=kernel,
            path=path,
            gpu_arch=gpu_arch,
            matched=match.group(0),
            announces_fallback=pattern.announces_fallback,
            format=line_format,
            scope=scope,
        )
    return None


def scan_log(path: Path) -> list[LogEvidence]:
    """Every recognized line of an engine log, in file order; repeated lines are counted once.

    Raises InputError when the file cannot be read.
    """
    path = Path(path)
    found: dict[tuple[str, str], LogEvidence] = {}
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            for line_no, line in enumerate(handle, start=1):
                evidence = match_line(line, line_no)
                if evidence is None:
                    continue
                key = (evidence.rule, evidence.matched)
                previous = found.get(key)
                if previous is None:
                    found[key] = evidence
                else:
                    found[key] = _bump(previous)
    except OSError as exc:
        raise InputError(f"{path}: cannot read engine log ({exc.strerror or exc})") from exc
    return sorted(found.values(), key=lambda e: e.line_no)


def _bump(evidence: LogEvidence) -> LogEvidence:
    return replace(evidence, count=evidence.count + 1)
