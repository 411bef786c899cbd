"""``python -m tracekit.capture.torch_runner --out DIR -- PROGRAM ARGS``: torch profile, code as is.

Starts ``torch.profiler.profile`` (CPU + CUDA when a GPU is there, ``record_shapes`` on: the
operand dtypes and GEMM shapes are what the classifier uses beyond kernel names), runs the
program as ``__main__``, and exports a Chrome trace into DIR whatever way the program ends.
Imports only the standard library and torch, so it runs in the engine's own interpreter.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tracekit.capture.runner import run_program, split_program


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tracekit.capture.torch_runner")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cpu-only", action="store_true")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    kind, target, args = split_program(options.program)
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("tracekit: error: the torch backend needs PyTorch in this interpreter "
              f"({sys.executable}): pip install torch", file=sys.stderr)
        return 2
    activities = [ProfilerActivity.CPU]
    if not options.cpu_only and torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    else:
        print("tracekit: torch backend: no CUDA device, recording CPU activity only",
              file=sys.stderr)
    options.out.mkdir(parents=True, exist_ok=True)
    trace = options.out / f"torch-trace.{os.getpid()}.pt.trace.json"
    with profile(activities=activities, record_shapes=True, with_stack=False) as profiler:
        code = run_program(kind, target, args)
    profiler.export_chrome_trace(str(trace))
    print(f"tracekit: torch trace written to {trace}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
