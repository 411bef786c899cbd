"""The ``tracekit`` command group.

Commands live one per module in this package and are imported lazily from ``COMMANDS``, so
``tracekit --help`` stays fast and a heavy import (plotly, SQLAlchemy) is paid only by the
command that needs it. Every ``TracekitError`` becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from tracekit.errors import TracekitError
from tracekit.version import __version__

#: command name -> "module:attribute" under tracekit.cli
COMMANDS: dict[str, str] = {
    "analyze": "tracekit.cli.analyze:analyze",
    "audit": "tracekit.cli.audit:audit",
    "classify": "tracekit.cli.classify:classify",
    "expect": "tracekit.cli.expect:expect",
    "rules": "tracekit.cli.rules:rules",
    "report": "tracekit.cli.report:report",
    "diff": "tracekit.cli.diff:diff",
    "runs": "tracekit.cli.runs:runs",
    "query": "tracekit.cli.query:query",
    "db": "tracekit.cli.db:db",
}


def fail(message: str, code: int = 2) -> None:
    """Print one line on stderr and exit: the single way a command reports a user error."""
    click.echo(f"tracekit: error: {' '.join(message.split())}", err=True)
    sys.exit(code)


class LazyGroup(click.Group):
    """A click group that imports a command's module only when the command is used.

    Usage errors click finds itself (a missing argument, a path that does not exist, a
    value outside a choice) are one line too, like every other bad input: click's own
    message would be four lines (usage, a "Try" line, a blank, the error).
    """

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "tracekit"
            fail(f"{exc.format_message()} (see `{where} --help`)", exc.exit_code)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            click.echo("tracekit: interrupted", err=True)
            sys.exit(130)
        sys.exit(result if isinstance(result, int) else 0)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)  # type: ignore[no-any-return]

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe must surface here, not in click's exit path
            return result
        except TracekitError as exc:
            fail(exc.one_line(), exc.exit_code)
        except KeyboardInterrupt:
            click.echo("tracekit: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            # `tracekit report 1 | head`: the reader left. Not an error (exit 1 is reserved
            # for --fail-on); point stdout at /dev/null so the exit flush cannot fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tracekit")
def cli() -> None:
    """tracekit: which arithmetic did your GPU really run?

    Runs an inference engine under a profiler (audit) or reads a finished trace (analyze),
    classifies every GEMM by its real datatype path (fp4, fp8, int8, weight_only, bf16, …),
    separates prefill from decode and flags silent 16-bit fallbacks.
    """
