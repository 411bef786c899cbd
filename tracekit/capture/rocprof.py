"""The ``rocprofv3`` command line, its version, and the files it leaves behind.

``rocprofv3`` (ROCm's rocprofiler-sdk; ``source/bin/rocprofv3.py`` in ROCm/rocm-systems)
preloads its tool library into the command and every child process the command starts, and
each process writes its own output when it exits: ``<dir>/<hostname>/<pid>_results.db`` (the
rocpd database, the default output since rocprofiler-sdk 1.0.0 / ROCm 7.0) or
``…_results.json`` (``--output-format json``, the richest format older releases write).
Flags tracekit passes (docs/engines.md#under-rocprofv3-on-amd-gpus):

* ``--kernel-trace``: the kernel dispatches tracekit classifies;
* ``--hip-trace``: the HIP calls that launched them (the launching thread and CPU time the
  step attribution needs);
* ``--marker-trace``: ROCTx ranges — the engines' step markers (``torch.cuda.nvtx`` is ROCTx
  on ROCm builds of PyTorch);
* ``--output-format rocpd`` from 1.0.0 on, ``json`` before (``rocpd`` did not exist);
* ``-d RUN_DIR/rocprof -o %hostname%/%pid%``: the output inside the run folder, one file per
  process.

``rocprofv3 --version`` exists from 1.0.0 on (CHANGELOG.md "``--version`` option in
``rocprofv3``"); an older one refuses the option, which is how its age is told.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

#: where the tool is found first: an explicit path
ROCPROF_ENV = "TRACEKIT_ROCPROFV3"
TRACE_FLAGS = ("--kernel-trace", "--hip-trace", "--marker-trace")
OUTPUT_DIR = "rocprof"
OUTPUT_FILE = "%hostname%/%pid%"
#: the first release that writes rocpd databases
ROCPD_SINCE = (1, 0)
#: output file name endings per format, as the tool names them
OUTPUTS = {"rocpd": ("_results.db",), "json": ("_results.json",), "csv": ("_kernel_trace.csv",)}


def find_rocprofv3() -> Path | None:
    """The rocprofv3 executable: ``$TRACEKIT_ROCPROFV3``, then PATH, then /opt/rocm/bin."""
    configured = os.environ.get(ROCPROF_ENV)
    if configured:
        return Path(configured)
    found = shutil.which("rocprofv3")
    if found:
        return Path(found)
    fallback = Path("/opt/rocm/bin/rocprofv3")
    return fallback if fallback.is_file() else None


def rocprof_version(tool: Path) -> str | None:
    """``1.0.0`` from ``rocprofv3 --version`` (its ``version:`` line); None when the option
    is refused (releases before 1.0.0) or the tool cannot run."""
    try:
        completed = subprocess.run([str(tool), "--version"], capture_output=True, text=True,
                                   timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    match = re.search(r"^\s*version\s*:\s*(\d+\.\d+(?:\.\d+)*)", completed.stdout, re.MULTILINE)
    return match.group(1) if match else None


def output_format(version: str | None) -> str:
    """rocpd from 1.0.0 on, else JSON (the rocpd writer did not exist)."""
    if version is None:
        return "json"
    parts = tuple(int(part) for part in version.split(".")[:2])
    return "rocpd" if parts >= ROCPD_SINCE else "json"


def profile_command(tool: Path, output_dir: Path, fmt: str, command: Sequence[str],
                    extra_args: Sequence[str] = ()) -> list[str]:
    """``rocprofv3 --kernel-trace --hip-trace --marker-trace --output-format FMT -d DIR -o
    %hostname%/%pid% [EXTRA] -- COMMAND``."""
    return [str(tool), *TRACE_FLAGS, "--output-format", fmt, "-d", str(output_dir),
            "-o", OUTPUT_FILE, *extra_args, "--", *command]


def finish_outputs(output_dir: Path, fmt: str) -> list[Path]:
    """The files of format ``fmt`` the processes wrote (every process its own), in name
    order; a CSV output is its folder."""
    if not output_dir.is_dir():
        return []
    found = sorted(path for ending in OUTPUTS.get(fmt, ())
                   for path in output_dir.rglob(f"*{ending}")
                   if path.is_file() and path.stat().st_size)
    if fmt == "csv":
        return sorted({path.parent for path in found})
    return found


def has_amd_gpu() -> bool:
    """Whether the ROCm kernel driver is there (``/dev/kfd``): rocprofv3 records no
    dispatch without it."""
    return Path("/dev/kfd").exists()
