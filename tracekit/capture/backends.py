"""Capture backends: how the wrapped command is run under a profiler, and what it leaves.

Each backend checks its tool is there (one clear ``ToolNotFound`` line saying what to install
otherwise), turns the user's command into the command line that actually runs, and after the
run collects the trace files the analysis reads.

* ``nsys``  — Nsight Systems around any command (``nsys.py``);
* ``torch`` — the torch profiler around a Python program (``torch_runner.py``);
* ``cupti`` — CUPTI activity records from inside a Python program (``cupti_runner.py``);
* ``ncu``   — Nsight Compute on a few GEMMs (``ncu.py``);
* ``rocprof`` — rocprofv3 around any command on AMD GPUs (``rocprof.py``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tracekit.capture import ncu as ncu_tool
from tracekit.capture import nsys as nsys_tool
from tracekit.capture import rocprof as rocprof_tool
from tracekit.capture.engines import EnginePreset, fill
from tracekit.errors import InputError, ToolNotFound
from tracekit.ingest.convert import find_ncu, find_nsys, ncu_rep_to_csv

BACKENDS = ("nsys", "torch", "cupti", "ncu", "rocprof")


@dataclass
class CaptureRequest:
    """Everything the user asked for that shapes the command line."""

    command: Sequence[str]
    backend: str
    preset: EnginePreset | None
    engine_window: bool
    nsys: nsys_tool.NsysSettings = field(default_factory=nsys_tool.NsysSettings)
    ncu: ncu_tool.NcuSettings = field(default_factory=ncu_tool.NcuSettings)


@dataclass
class CapturePlan:
    """The exact command line to run, the environment it adds, and where its output lands."""

    backend: str
    argv: list[str]
    env: dict[str, str]
    output: Path
    tool: str | None = None
    tool_version: str | None = None
    notes: list[str] = field(default_factory=list)


def has_gpu() -> bool:
    """Whether an NVIDIA GPU is usable: a ``/dev/nvidiaN`` node or a GPU listed by nvidia-smi.

    ``/dev/nvidiactl`` and an ``nvidia-smi`` binary alone prove nothing (containers without a
    GPU have both; nvidia-smi then fails to reach the driver).
    """
    if any(Path("/dev").glob("nvidia[0-9]*")):
        return True
    listing = run_quiet(["nvidia-smi", "-L"]) if shutil.which("nvidia-smi") else None
    return bool(listing and "GPU " in listing)


def gpu_names() -> list[str]:
    """GPU names and compute capabilities from nvidia-smi, when it is there."""
    if shutil.which("nvidia-smi") is None:
        return []
    out = run_quiet(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"])
    return [line.strip() for line in (out or "").splitlines() if line.strip()]


def run_quiet(argv: Sequence[str], timeout: float = 20.0) -> str | None:
    try:
        completed = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                                   check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout if completed.returncode == 0 else None


def python_program(command: Sequence[str]) -> tuple[str, list[str]]:
    """(interpreter, program args) for ``python PROG ARGS``, ``python -m MOD`` or ``PROG.py``.

    The in-process backends (torch, cupti) run the program through a tracekit runner in the
    program's own interpreter, so they need to know which interpreter that is.
    """
    first = Path(command[0]).name
    if re.fullmatch(r"python[\d.]*", first):
        rest = list(command[1:])
        while rest and rest[0].startswith("-") and rest[0] != "-m":
            if rest[0] == "-c":
                raise InputError("python -c cannot be wrapped by the torch/cupti backends",
                                 hint="put the code in a file")
            # interpreter flags such as -u are dropped; -X/-W take a value
            rest = rest[2:] if rest[0] in ("-X", "-W") else rest[1:]
        if not rest:
            raise InputError("the torch/cupti backends need a program: python PROGRAM ARGS")
        return command[0], rest
    if command[0].endswith(".py"):
        return sys.executable, list(command)
    script = shutil.which(command[0])
    if script:
        try:
            with open(script, "rb") as stream:
                shebang = stream.readline().decode("utf-8", "replace")
        except OSError:
            shebang = ""
        parts = shebang[2:].split() if shebang.startswith("#!") else []
        if parts and "python" in shebang:
            interpreter = parts[-1] if Path(parts[0]).name == "env" else parts[0]
            return interpreter, [script, *command[1:]]
    raise InputError(f"{command[0]}: the torch and cupti backends run Python programs only",
                     hint="use --backend nsys for other commands")


def runner_env() -> dict[str, str]:
    """PYTHONPATH so the program's interpreter can import tracekit's runner modules."""
    package_parent = str(Path(__file__).resolve().parents[2])  # the folder holding tracekit/
    current = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": package_parent + (os.pathsep + current if current else "")}


def plan_nsys(request: CaptureRequest, run_dir: Path, dry_run: bool = False) -> CapturePlan:
    nsys = find_nsys()
    if dry_run and nsys is None:
        nsys = Path("nsys")
    elif nsys is None or not (nsys.is_file() or shutil.which(str(nsys))):
        raise ToolNotFound("the nsys backend needs Nsight Systems (nsys), which was not found",
                           hint="install Nsight Systems (Debian: apt-get install nsight-systems) "
                                "or set TRACEKIT_NSYS")
    settings = dataclasses.replace(request.nsys)  # the caller's settings stay as given
    command = list(request.command)
    notes: list[str] = []
    preset = request.preset
    if request.engine_window and preset is not None:
        settings.capture_range = True
        settings.capture_range_end = preset.capture_range_end
        command = nsys_tool.window_command(preset, command)
        notes.append(f"capture window: {preset.name}'s own profiler hook (cudaProfilerApi)")
    if not has_gpu():
        notes.append("no NVIDIA GPU visible: the trace will hold CPU-side events (NVTX) only")
    output = run_dir / nsys_tool.REPORT_STEM
    return CapturePlan("nsys", nsys_tool.profile_command(nsys, output, settings, command), {},
                       output, tool=str(nsys),
                       tool_version=None if dry_run else nsys_tool.nsys_version(nsys),
                       notes=notes)


def plan_torch_engine(request: CaptureRequest, run_dir: Path) -> CapturePlan:
    """A server engine's own torch profiler, switched on by flags/env, opened by the workload."""
    assert request.preset is not None and request.preset.torch_hook is not None
    hook = request.preset.torch_hook
    output = run_dir / "torch"
    argv = [*request.command, *fill(hook.args, str(output))]
    return CapturePlan("torch", argv, dict(fill(dict(hook.env), str(output))), output,
                       tool=f"{request.preset.name} torch profiler",
                       notes=[f"{request.preset.name}'s own torch profiler writes into {output}"])


def plan_torch(request: CaptureRequest, run_dir: Path, dry_run: bool = False) -> CapturePlan:
    if request.engine_window and request.preset is not None and request.preset.torch_hook:
        return plan_torch_engine(request, run_dir)
    interpreter, program = python_program(request.command)
    output = run_dir / "torch"
    argv = [interpreter, "-m", "tracekit.capture.torch_runner", "--out", str(output), "--",
            *program]
    if dry_run:
        return CapturePlan("torch", argv, runner_env(), output, tool="torch")
    version = run_quiet([interpreter, "-c", "import torch; print(torch.__version__)"], 120)
    if version is None:
        raise ToolNotFound(f"the torch backend needs PyTorch in {interpreter}",
                           hint="pip install torch")
    notes = [] if has_gpu() else ["no NVIDIA GPU: the torch profiler records CPU activity only"]
    return CapturePlan("torch", argv, runner_env(), output, tool="torch",
                       tool_version=version.strip(), notes=notes)


def plan_cupti(request: CaptureRequest, run_dir: Path) -> CapturePlan:
    interpreter, program = python_program(request.command)
    probe = run_quiet([interpreter, "-c", "import importlib.metadata as m; import cupti; "
                    "print(m.version('cupti-python'))"], 120)
    if probe is None:
        raise ToolNotFound("the cupti backend needs cupti-python and an NVIDIA GPU",
                           hint=f"pip install cupti-python (into {interpreter})")
    if not has_gpu():
        raise ToolNotFound("the cupti backend needs an NVIDIA GPU with its driver; none found",
                           hint="run on a GPU machine, or use --backend nsys")
    output = run_dir / "cupti.jsonl"
    argv = [interpreter, "-m", "tracekit.capture.cupti_runner", "--out", str(output), "--",
            *program]
    return CapturePlan("cupti", argv, runner_env(), output, tool="cupti-python",
                       tool_version=probe.strip())


def plan_ncu(request: CaptureRequest, run_dir: Path, dry_run: bool = False) -> CapturePlan:
    ncu = find_ncu()
    if dry_run and ncu is None:
        ncu = Path("ncu")
    elif ncu is None:
        raise ToolNotFound("the ncu backend needs Nsight Compute (ncu), which was not found",
                           hint="install Nsight Compute (CUDA toolkit) or set TRACEKIT_NCU")
    if not dry_run and not has_gpu():
        raise ToolNotFound("the ncu backend needs an NVIDIA GPU; none found",
                           hint="run on a GPU machine (use --dry-run to see the command line)")
    output = run_dir / ncu_tool.REPORT_STEM
    argv = ncu_tool.profile_command(ncu, output, request.ncu, request.command)
    notes = ([f"ncu profiles {len(request.ncu.kernel_names)} kernel name(s)"]
             if request.ncu.kernel_names else
             ["no previous run with classified GEMMs: ncu profiles the first launches only"])
    version = None if dry_run else run_quiet([str(ncu), "--version"])
    match = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", version or "")
    return CapturePlan("ncu", argv, {}, output, tool=str(ncu),
                       tool_version=match.group(1) if match else None, notes=notes)


def plan_rocprof(request: CaptureRequest, run_dir: Path, dry_run: bool = False) -> CapturePlan:
    """rocprofv3 around the command: rocpd output from 1.0.0 on, JSON before (by version)."""
    tool = rocprof_tool.find_rocprofv3()
    if tool is None and dry_run:
        tool = Path("rocprofv3")
    elif tool is None or not (tool.is_file() or shutil.which(str(tool))):
        raise ToolNotFound("the rocprof backend needs rocprofv3 (ROCm's rocprofiler-sdk), "
                           "which was not found",
                           hint="install ROCm 6.2 or newer (rocprofiler-sdk) or set "
                                f"{rocprof_tool.ROCPROF_ENV}")
    version = rocprof_tool.rocprof_version(tool) if tool.is_file() or shutil.which(str(tool)) \
        else None
    fmt = rocprof_tool.output_format(version)
    output = run_dir / rocprof_tool.OUTPUT_DIR
    notes = [f"rocprofv3 {version or 'before 1.0.0 (no --version)'}: {fmt} output"]
    if not rocprof_tool.has_amd_gpu():
        notes.append("no AMD GPU visible (no /dev/kfd): rocprofv3 will record no dispatch")
    return CapturePlan("rocprof", rocprof_tool.profile_command(tool, output, fmt,
                                                               request.command),
                       {}, output, tool=str(tool), tool_version=version, notes=notes)


def plan_capture(request: CaptureRequest, run_dir: Path, *, dry_run: bool = False) -> CapturePlan:
    """The plan for ``request.backend`` (tool checks raise ``ToolNotFound``)."""
    if request.backend == "nsys":
        return plan_nsys(request, run_dir, dry_run)
    if request.backend == "torch":
        return plan_torch(request, run_dir, dry_run)
    if request.backend == "cupti":
        if dry_run:
            interpreter, program = python_program(request.command)
            output = run_dir / "cupti.jsonl"
            return CapturePlan("cupti", [interpreter, "-m", "tracekit.capture.cupti_runner",
                                         "--out", str(output), "--", *program],
                               runner_env(), output)
        return plan_cupti(request, run_dir)
    if request.backend == "ncu":
        return plan_ncu(request, run_dir, dry_run)
    if request.backend == "rocprof":
        return plan_rocprof(request, run_dir, dry_run)
    raise InputError(f"unknown backend {request.backend!r}", hint=f"one of {', '.join(BACKENDS)}")


#: lines a profiler prints when it could not start the capture at all (usage lines last)
STARTUP_FAILURES = {
    "nsys": (re.compile(r"^(Illegal .*|Program not found.*|Unrecognized option.*|"
                        r"Option .* cannot be .*|.*[Ff]ailed to (create|launch|start).*|"
                        r"Error: .*|ERROR: .*)$", re.MULTILINE),
             re.compile(r"^usage: nsys profile.*$", re.MULTILINE)),
    "ncu": (re.compile(r"^==ERROR== .*$", re.MULTILINE),),
    "rocprof": (re.compile(r"^rocprofv3: error: .*$", re.MULTILINE),),
}


def startup_failure(plan: CapturePlan, log_text: str) -> str | None:
    """The profiler's own complaint when it produced nothing because it could not start."""
    for pattern in STARTUP_FAILURES.get(plan.backend, ()):
        match = pattern.search(log_text)
        if match:
            return match.group(0).strip()
    return None


def check_command(command: Sequence[str]) -> None:
    """Refuse a command that cannot be executed before anything starts."""
    program = command[0]
    if os.sep in program:
        if not os.access(program, os.X_OK):
            raise InputError(f"{program}: no such executable")
    elif shutil.which(program) is None:
        raise InputError(f"{program}: command not found", hint="check the command after --")


def collect(plan: CapturePlan) -> list[Path]:
    """The trace files a finished capture left, ready for the analysis (may be empty)."""
    if plan.backend == "nsys":
        return nsys_tool.finish_outputs(plan.output, plan.notes)
    if plan.backend == "torch":
        if not plan.output.is_dir():
            return []
        traces = sorted(plan.output.glob("*.json")) + sorted(plan.output.glob("*.json.gz"))
        return [plan.output] if traces else []
    if plan.backend == "cupti":
        return [plan.output] if plan.output.is_file() and plan.output.stat().st_size else []
    if plan.backend == "rocprof":
        fmt = plan.argv[plan.argv.index("--output-format") + 1]
        return rocprof_tool.finish_outputs(plan.output, fmt)
    if plan.backend == "ncu":
        report = plan.output.with_name(plan.output.name + ".ncu-rep")
        if not report.exists() or plan.tool is None:
            return []
        try:
            return [ncu_rep_to_csv(report, report.parent, ncu=Path(plan.tool))]
        except (InputError, ToolNotFound) as exc:
            plan.notes.append(exc.one_line())
            return [report]
    return []
