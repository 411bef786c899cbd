"""The ``nsys profile`` command line, and what to do with what it leaves behind.

Flags engines need (docs/engines.md#under-nsight-systems-the-default-backend; the Nsight
Systems User Guide, https://docs.nvidia.com/nsight-systems/UserGuide/index.html;
fixtures/nsys/NSYS_NOTES.md):

* ``--trace-fork-before-exec=true``: engines run their GPU work in child processes;
* ``--cuda-graph-trace=node``: decode runs as CUDA graphs, and graph-level records hide the
  kernel names tracekit classifies;
* ``-t cuda,nvtx``: kernels and the engines' step markers (``cublas``/``osrt`` on request);
* ``--sample=none --cpuctxsw=none``: tracekit reads no CPU samples; they make big reports, and
  nsys 2022.4 with sampling on was seen to hang after the program ended (agent spinning);
* ``--capture-range=cudaProfilerApi`` when the engine's own hook opens the window;
* ``--force-overwrite=true`` and an output inside the run folder: nsys exits 0 *without*
  writing anything when the output exists.

nsys 2022.4 on a machine without its importer leaves a ``.qdstrm``; ``finish_outputs`` turns it
into the ``.nsys-rep`` with QdstrmImporter. ``agent_session_pid`` tells which ``nsys profile``
an ``nsys --start-agent`` daemon belongs to (``--session-name=profile-<prog>-<nsys pid>``), so
that ``capture/procs.py`` can stop the one a killed session leaves running.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tracekit.capture.engines import EnginePreset
from tracekit.errors import InputError
from tracekit.ingest.convert import (
    IMPORTER_ENV,
    find_qdstrm_importer,
    qdstrm_to_nsys_rep,
)

DEFAULT_TRACE = ("cuda", "nvtx")
BASE_FLAGS = ("--trace-fork-before-exec=true", "--cuda-graph-trace=node",
              "--sample=none", "--cpuctxsw=none", "--force-overwrite=true")
REPORT_STEM = "trace"
#: short nsys options → long names, so ``--nsys-arg -t …`` replaces tracekit's own ``-t``
ALIASES = {"-t": "--trace", "-s": "--sample", "-c": "--capture-range", "-f": "--force-overwrite",
           "-y": "--delay", "-d": "--duration"}


@dataclass
class NsysSettings:
    """What the user chose for an nsys capture."""

    trace: Sequence[str] = DEFAULT_TRACE
    capture_range: bool = False
    capture_range_end: str = "stop"
    delay_s: float | None = None
    duration_s: float | None = None
    extra_args: Sequence[str] = field(default_factory=tuple)


def trace_list(requested: Sequence[str]) -> list[str]:
    """``-t`` values: the defaults plus what was asked for, each once, in a stable order."""
    values: list[str] = []
    for item in (*DEFAULT_TRACE, *requested):
        for part in item.split(","):
            part = part.strip()
            if part and part not in values:
                values.append(part)
    return values


def profile_command(nsys: Path, output_base: Path, settings: NsysSettings,
                    command: Sequence[str]) -> list[str]:
    """``nsys profile … -o OUTPUT_BASE -- COMMAND`` (``output_base`` without extension)."""
    overridden = {ALIASES.get(arg.split("=")[0], arg.split("=")[0])
                  for arg in settings.extra_args if arg.startswith("-")}
    argv = [str(nsys), "profile"]
    argv += [flag for flag in BASE_FLAGS if flag.split("=")[0] not in overridden]
    if "--trace" not in overridden:
        argv += ["-t", ",".join(trace_list(settings.trace))]
    if settings.capture_range and "--capture-range" not in overridden:
        argv += ["--capture-range=cudaProfilerApi",
                 f"--capture-range-end={settings.capture_range_end}"]
    if settings.delay_s is not None:
        argv += [f"--delay={_seconds(settings.delay_s)}"]
    if settings.duration_s is not None:
        argv += [f"--duration={_seconds(settings.duration_s)}"]
    argv += list(settings.extra_args)
    argv += ["-o", str(output_base)]
    return argv + list(command)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def window_command(preset: EnginePreset | None, command: Sequence[str]) -> list[str]:
    """The engine command with the flags that let its hook open a capture window."""
    if preset is None or not preset.window_args:
        return list(command)
    if preset.window_args[0] in command or any(
            arg.startswith(preset.window_args[0] + "=") or arg.startswith("--profiler-config")
            for arg in command):
        return list(command)
    return [*command, *preset.window_args]


def nsys_version(nsys: Path) -> str | None:
    """``2022.4.2.1`` from ``nsys --version``, or None when it cannot be run."""
    try:
        out = subprocess.run([str(nsys), "--version"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", out)
    return match.group(1) if match else (out.strip() or None)


def finish_outputs(output_base: Path, notes: list[str]) -> list[Path]:
    """The reports nsys wrote, importing left-over ``.qdstrm`` files into ``.nsys-rep``.

    ``--capture-range-end=repeat`` numbers its reports (``trace.1.nsys-rep``, …), so every
    ``trace[.N]`` is collected, in order. Returns the files to analyze (empty when nsys wrote
    nothing usable). A ``.qdstrm`` is removed once imported, as nsys itself does.
    """
    stems = sorted({path.name.removesuffix(".nsys-rep").removesuffix(".qdstrm")
                    for pattern in ("{}.nsys-rep", "{}.*.nsys-rep", "{}.qdstrm", "{}.*.qdstrm")
                    for path in output_base.parent.glob(pattern.format(output_base.name))},
                   key=_report_order)
    return [found for stem in stems
            if (found := _finish_one(output_base.with_name(stem), notes)) is not None]


def _report_order(stem: str) -> tuple[int, str]:
    suffix = stem.rpartition(".")[2]
    return (int(suffix) if suffix.isdigit() else -1, stem)


def _finish_one(base: Path, notes: list[str]) -> Path | None:
    report = base.with_name(base.name + ".nsys-rep")
    stream = base.with_name(base.name + ".qdstrm")
    if report.exists():
        if stream.exists():
            stream.unlink()
        return report
    if not stream.exists():
        return None
    importer = find_qdstrm_importer()
    if importer is None:
        notes.append(f"nsys left {stream.name} and QdstrmImporter was not found; "
                     "analyzing needs it (set TRACEKIT_QDSTRM_IMPORTER)")
        return stream
    previous = os.environ.get(IMPORTER_ENV)
    os.environ[IMPORTER_ENV] = str(importer)
    try:
        imported = qdstrm_to_nsys_rep(stream, stream.parent)
    except InputError as exc:
        notes.append(f"could not import {stream.name}: {exc.one_line()}")
        return stream
    finally:
        if previous is None:
            del os.environ[IMPORTER_ENV]
        else:
            os.environ[IMPORTER_ENV] = previous
    notes.append(f"nsys left {stream.name}; imported it with QdstrmImporter into {imported.name}")
    stream.unlink()
    return imported


AGENT_PATTERN = re.compile(r"--session-name=profile-\S*-(\d+)(?=\s|$)")


def agent_session_pid(cmdline: str) -> int | None:
    """The ``nsys profile`` pid an ``nsys --start-agent`` command line belongs to."""
    if "--start-agent" not in cmdline:
        return None
    match = AGENT_PATTERN.search(cmdline)
    return int(match.group(1)) if match else None
