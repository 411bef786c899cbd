"""Run a user's Python program unchanged, as ``python PROGRAM ARGS`` / ``python -m MOD`` would.

Shared by the in-process capture runners (torch profiler, CUPTI): they wrap ``run_program`` in
their recorder and must see the program's exit status (``sys.exit(3)``, an uncaught exception,
Ctrl-C) without losing the recording.
"""

from __future__ import annotations

import runpy
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType


def split_program(argv: Sequence[str]) -> tuple[str, str, list[str]]:
    """``("path", PROGRAM, ARGS)`` or ``("module", MOD, ARGS)`` from the runner's arguments."""
    args = list(argv)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        raise SystemExit("tracekit runner: no program given")
    if args[0] == "-m":
        if len(args) < 2:
            raise SystemExit("tracekit runner: -m needs a module name")
        return "module", args[1], args[2:]
    return "path", args[0], args[1:]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_program(kind: str, target: str, args: Sequence[str]) -> int:
    """Run the program as ``__main__``; return its exit status instead of exiting."""
    sys.argv = [target, *args]
    # A graceful stop arrives as SIGTERM from tracekit after SIGINT: make it an exception too.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if kind == "module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(target).resolve().parent))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:  # noqa: BLE001 - report like the interpreter would, keep recording
        traceback.print_exc()
        return 1
    return 0
