"""Typed errors. The CLI turns every TracekitError into one stderr line and exit code 2; the
Python API (``tracekit.analyze``, ``tracekit.open_store`` …) raises them as they are.

Library code raises these with a message that names the file or value at fault and,
where one exists, a hint the user can act on. Nothing outside ``tracekit.cli`` prints.
"""

from __future__ import annotations


class TracekitError(Exception):
    """A problem the user can fix: bad input, a missing tool, an incompatible store."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message and hint as one line, as printed on stderr."""
        text = " ".join(self.message.split())
        if self.hint:
            text += f" ({' '.join(self.hint.split())})"
        return text


class UsageError(TracekitError):
    """A value given to tracekit (a command-line option or an argument of the Python API) is
    not one it accepts; the message names the value and what would be accepted."""


class InputError(TracekitError):
    """An input file is missing, unreadable, or not in a format tracekit understands."""


class UnknownFormat(InputError):
    """No parser spec recognized the file's content."""


class ToolNotFound(TracekitError):
    """An external tool (nsys, ncu, QdstrmImporter) is needed and is not installed."""


class StoreError(TracekitError):
    """The store cannot be opened, written, or has an incompatible schema."""


class StoreSchemaMismatch(StoreError):
    """The store's schema revision differs from the one this tracekit needs."""


class RuleFileError(TracekitError):
    """A rule or table TOML file is invalid; the message names the file and the key."""


class ConfigError(TracekitError):
    """A checkpoint config or expectation could not be read."""
