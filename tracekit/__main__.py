"""Allow ``python -m tracekit``."""

from tracekit.cli import cli

if __name__ == "__main__":
    cli()
