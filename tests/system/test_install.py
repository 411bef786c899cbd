"""Importable from anywhere: after a non-editable ``pip install .`` the README's "From Python"
lines run from the repository root, as a new user runs them.

The editable install the other tests use maps ``parsers/`` and ``rules/`` into the package
and hides what a wheel and a source checkout each need: from the repository root Python
imports the source tree's ``tracekit/``, beside which the data folders sit, and from
anywhere else the installed wheel, inside which they sit. Here a copy of the tracked files is
installed into a fresh virtual environment (``--system-site-packages --no-deps``: the
dependencies are the machine's, nothing is downloaded but, where the machine lacks them,
the build backend from the configured index) and both are tried.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO


def tracked_copy(target: Path) -> Path:
    """The repository's tracked files (a fresh clone's) copied to ``target``."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot list the tracked files")
    for name in listed.stdout.decode().split("\0"):
        if not name or not (REPO / name).is_file():
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)
    return target


def from_python_lines() -> str:
    """The first code block of the README's "From Python" section (the walk through a run;
    a later block shows step markers inside a user's own model code)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks and "tracekit.analyze(" in blocks[0], "the README's From Python lines moved"
    return str(blocks[0])


def install(clone: Path, venv: Path) -> Path:
    """``pip install --no-deps`` of the clone into a new venv that sees this machine's
    packages; its interpreter. Skips when no build backend can be had offline."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, capture_output=True)
    python = venv / "bin" / "python"
    attempts = (["--no-build-isolation"], [])  # the machine's setuptools, else the index's
    errors = []
    for extra in attempts:
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *extra,
                               str(clone)], cwd=clone, capture_output=True, text=True)
        if done.returncode == 0:
            return python
        errors.append(done.stderr.strip().splitlines()[-1:] or [""])
    pytest.skip(f"cannot build the wheel here: {errors}")


@pytest.mark.slow
def test_the_readme_python_lines_run_after_a_non_editable_install(tmp_path: Path) -> None:
    clone = tracked_copy(tmp_path / "tracekit")
    python = install(clone, tmp_path / "venv")
    subprocess.run([str(python), "examples/nvfp4_two_checkpoints/build.py"], cwd=clone,
                   check=True, capture_output=True)
    script = ("import tracekit, importlib.resources as r\n"
              "print('FROM', tracekit.__file__)\n"
              + from_python_lines()
              + "\nprint('VERDICT', run.verdict[0])\n"
                "print('RULES', len(list(r.files('tracekit.rules').iterdir())))\n")
    # from the repository root: the source tree's tracekit, the checkout's data folders
    root = subprocess.run([str(python), "-c", script], cwd=clone, capture_output=True,
                          text=True)
    assert root.returncode == 0, root.stderr
    assert f"FROM {clone / 'tracekit' / '__init__.py'}" in root.stdout
    assert "silent fallback" in root.stdout
    # from anywhere else: the installed wheel, its own data folders
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    installed = subprocess.run(
        [str(python), "-c", "import tracekit, tracekit.parsers, tracekit.rules\n"
         "from tracekit.ingest.spec import builtin_specs\n"
         "print(tracekit.__file__, tracekit.rules.__file__, len(builtin_specs()))"],
        cwd=elsewhere, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    package, rules, specs = installed.stdout.split()
    assert "site-packages" in package and rules.startswith(str(Path(package).parent))
    assert int(specs) >= 8
