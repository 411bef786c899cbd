"""The layout promises of docs/architecture.md#dependencies-between-packages and docs/README.md:
data folders hold data, every command has help, the README quick start is two commands and CI
runs the README's test command; the packages depend on each other only as the architecture's
layers allow (``lint-imports``)."""

from __future__ import annotations

import importlib
import re

import pytest
from click.testing import CliRunner

from tests.support import paths
from tracekit.cli import COMMANDS, cli
from tracekit.ingest.spec import builtin_specs

REPO = paths.REPO


@pytest.mark.parametrize("folder", ["parsers", "rules"])
def test_data_folders_hold_no_python_but_their_docstring_init(folder):
    python = sorted(p.name for p in (REPO / folder).glob("*.py"))
    assert python == ["__init__.py"]
    source = (REPO / folder / "__init__.py").read_text()
    assert source.strip().startswith('"""') and source.count("\n") <= 2


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help(command):
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and "tracekit, version" in result.output


def test_every_parser_spec_names_a_reader_that_exists():
    converters = {"nsys_rep", "qdstrm"}
    for spec in builtin_specs():
        if spec.reader in converters:
            continue
        module = importlib.import_module(f"tracekit.ingest.readers.{spec.reader}")
        assert callable(module.ingest), spec.id


def test_readme_quick_start_is_two_commands_and_ci_runs_the_test_command():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```\n(.*?)```", section, flags=re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert len(commands) == 2, commands
    install_and_run, install_and_test = commands
    assert install_and_run.startswith("pip install .") and "examples/" in install_and_run
    assert install_and_test.startswith("pip install -e '.[test]'")
    test_command = install_and_test.split("&&", 1)[1].strip()
    assert test_command in (REPO / ".ci" / "run").read_text()
    script = install_and_run.split("&&", 1)[1].strip().split()[-1]
    assert (REPO / script).is_file()


def test_every_python_package_is_in_the_distribution():
    """pyproject lists packages by name: a new subpackage missing there is missing from the
    wheel (the editable install used in development hides it)."""
    from tracekit.datafiles import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts)
             for p in (REPO / "tracekit").rglob("__init__.py")}
    assert found - listed == set()


#: Test folders that mirror no package: suites across packages, the rule files as data, and
#: what the tests share.
NOT_A_PACKAGE = {"system", "rules", "support"}


def test_tests_mirror_the_package() -> None:
    """tests/<package>/ holds the tests of tracekit/<package>/, tests/test_<module>.py those of
    tracekit/<module>.py: a newcomer finds a module's tests by its path (docs/README.md)."""
    tests = REPO / "tests"
    misplaced = []
    for path in sorted(tests.rglob("test_*.py")):
        relative = path.relative_to(tests)
        if relative.parts[0] == "benchmarks":
            continue
        if len(relative.parts) == 1:
            module = relative.name.removeprefix("test_")
            if not (paths.PACKAGE / module).is_file():
                misplaced.append(f"{relative}: no tracekit/{module}")
        elif relative.parts[0] not in NOT_A_PACKAGE:
            package = paths.PACKAGE.joinpath(*relative.parts[:-1])
            if not (package / "__init__.py").is_file():
                misplaced.append(f"{relative}: no package tracekit/{'/'.join(relative.parts[:-1])}")
    assert not misplaced, misplaced


def test_the_architecture_contract_holds() -> None:
    """``lint-imports`` keeps the contracts of pyproject.toml ``[tool.importlinter]``: the
    layers of docs/architecture.md#dependencies-between-packages, independent stages, no
    circle between the modules of any package, a light step marker and recorders."""
    import subprocess
    import sys
    from importlib.util import find_spec
    from pathlib import Path

    if find_spec("importlinter") is None:
        pytest.fail("import-linter is not installed: pip install -e '.[test]'")
    lint = Path(sys.executable).with_name("lint-imports")
    command = [str(lint)] if lint.exists() else [
        sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                              "sys.exit(lint_imports_command())"]
    done = subprocess.run([*command, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
