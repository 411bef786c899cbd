"""``tracekit audit --backend rocprof``: the rocprofv3 command line by version, the output
folder found, a recorded output analyzed, the exit code kept and Ctrl-C keeping what was
recorded.

rocprofv3 cannot be installed here (it needs ROCm and an AMD GPU), so the end-to-end tests
put a *fake* ``rocprofv3`` on PATH: a Python script that parses the flags tracekit passes,
runs the command (which gets the terminal's signals itself), and on its exit writes a
synthetic rocpd database (or JSON, by the version it pretends to be) with
``tracekit.synth.rocprof`` where the real tool writes its output:
``<dir>/<hostname>/<pid>_results.db``. What this cannot test: the real tool's preload into
the command and its children, its buffers at exit, its behaviour under signals. The
lifecycle under test (supervision, exit codes, the stop ladder, the analysis of what was
left) is tracekit's own, the same as for nsys.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracekit.capture import rocprof
from tracekit.cli import cli

FAKE = textwrap.dedent('''\
    #!{python}
    """A stand-in for rocprofv3 (tests/capture/test_rocprof_backend.py): synthetic output."""
    import os, signal, socket, subprocess, sys
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from tracekit.synth.nsys import KernelSpec, StepSpec
    from tracekit.synth.rocprof import AmdProcess, AmdScenario, lay_out, write_json, write_rocpd

    VERSION = {version!r}
    args = sys.argv[1:]
    if args == ["--version"]:
        if VERSION is None:
            print("rocprofv3: error: unrecognized arguments: --version", file=sys.stderr)
            sys.exit(2)
        print(f"         version: {{VERSION}}")
        sys.exit(0)
    split = args.index("--")
    options, command = args[:split], args[split + 1:]
    for flag in ("--kernel-trace", "--hip-trace", "--marker-trace"):
        assert flag in options, flag
    fmt = options[options.index("--output-format") + 1]
    folder = Path(options[options.index("-d") + 1]) / socket.gethostname()
    # The real tool execs the command (one process): here the command is a child, and a
    # signal to the process group reaches it directly; this stand-in only outlives it.
    child = subprocess.Popen(command)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (after the fork: the command keeps its own)
    signal.signal(signal.SIGTERM, lambda number, frame: child.send_signal(number))
    code = child.wait()
    code = 128 - code if code < 0 else code
    steps = [StepSpec("execute_context_1(64)_generation_0(0)",
                      [KernelSpec("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8x1_SN_1LDSB1",
                                  30_000, count=2)]),
             StepSpec("execute_context_0(0)_generation_2(2)",
                      [KernelSpec("Cijk_Alik_Bljk_F8SS_BH_MT256x256x128_MI16x16x1_SN_LDSB1",
                                  8_000)], graph=True, repeat=2)]
    job = lay_out(AmdScenario(processes=[AmdProcess(pid=child.pid, steps=steps)]))
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "rocpd":
        write_rocpd(job, folder / f"{{child.pid}}_results.db")
    else:
        [written] = write_json(job, folder)
    sys.exit(code)
''')

PROGRAM = textwrap.dedent('''\
    import sys, time
    from pathlib import Path
    print("engine on rocm says hello", flush=True)
    if len(sys.argv) > 2:
        Path(sys.argv[2]).touch()
        try:
            time.sleep(120)
        except KeyboardInterrupt:
            sys.exit(130)
    sys.exit(int(sys.argv[1]))
''')

REPO = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def fake_rocprofv3(tmp_path, monkeypatch):
    """Put a fake rocprofv3 of a given version (None: before 1.0.0) first on PATH."""
    def install(version: str | None = "1.0.0") -> Path:
        folder = tmp_path / f"bin-{version}"
        folder.mkdir()
        tool = folder / "rocprofv3"
        tool.write_text(FAKE.format(python=sys.executable, repo=REPO, version=version))
        tool.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.delenv(rocprof.ROCPROF_ENV, raising=False)
        return tool
    return install


def invoke(*args: str):
    result = CliRunner().invoke(cli, ["audit", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("version", "fmt"), [("1.0.0", "rocpd"), ("1.1.2", "rocpd"),
                                              (None, "json")])
def test_command_line_by_version(fake_rocprofv3, tmp_path, version, fmt):
    fake_rocprofv3(version)
    code, out, err = invoke("--backend", "rocprof", "--dry-run", "-o", str(tmp_path / "run"),
                            "--", "python3", "serve.py")
    assert code == 0, err
    [line] = [line for line in out.splitlines() if "rocprofv3" in line and "--" in line.split()]
    argv = line.split()
    assert argv[1:4] == ["--kernel-trace", "--hip-trace", "--marker-trace"]
    assert argv[argv.index("--output-format") + 1] == fmt
    assert argv[argv.index("-d") + 1] == str(tmp_path / "run" / "rocprof")
    assert argv[argv.index("-o") + 1] == "%hostname%/%pid%"
    assert argv[-3:] == ["--", "python3", "serve.py"]


def test_missing_rocprofv3_is_one_line_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(rocprof.ROCPROF_ENV, raising=False)
    monkeypatch.setattr(rocprof, "find_rocprofv3", lambda: None)
    code, _, err = invoke("--backend", "rocprof", "-o", str(tmp_path / "r"), "--",
                          sys.executable, "-c", "pass")
    assert code == 2
    assert "needs rocprofv3" in err and "Traceback" not in err


def test_outputs_of_every_process_are_found(tmp_path):
    folder = tmp_path / "rocprof" / "node1"
    folder.mkdir(parents=True)
    for name in ("41_results.db", "42_results.db", "42_results.json", "empty_results.db"):
        (folder / name).write_bytes(b"" if name.startswith("empty") else b"x")
    assert [p.name for p in rocprof.finish_outputs(tmp_path / "rocprof", "rocpd")] == [
        "41_results.db", "42_results.db"]
    assert rocprof.finish_outputs(tmp_path / "missing", "rocpd") == []


@pytest.mark.parametrize(("version", "suffix"), [("1.0.0", ".db"), (None, ".json")])
def test_a_recorded_output_is_analyzed_and_the_exit_code_kept(fake_rocprofv3, tmp_path,
                                                              version, suffix):
    fake_rocprofv3(version)
    program = tmp_path / "engine.py"
    program.write_text(PROGRAM)
    run_dir, store = tmp_path / "run", tmp_path / "store.db"
    code, out, err = invoke("--backend", "rocprof", "-o", str(run_dir), "--store", str(store),
                            "--json", "--", sys.executable, str(program), "3")
    assert code == 3, err
    document = json.loads(out)
    assert document["run"]["format"] == ("rocpd-sqlite" if suffix == ".db" else "rocprof-json")
    assert document["phases"]["prefill"]["steps"] == 1
    assert document["phases"]["decode"]["steps"] == 2
    assert {k["path"] for k in document["kernels"]} == {"bf16", "fp8"}
    record = json.loads((run_dir / "run.json").read_text())
    assert record["exit_code"] == 3 and record["status"] == "failed"
    assert record["traces"] and record["traces"][0].endswith(suffix)
    assert "engine on rocm says hello" in (run_dir / "engine.log").read_text()


def test_ctrl_c_keeps_what_was_recorded(fake_rocprofv3, tmp_path):
    tool = fake_rocprofv3("1.0.0")
    program = tmp_path / "engine.py"
    program.write_text(PROGRAM)
    run_dir, store, ready = tmp_path / "run", tmp_path / "store.db", tmp_path / "ready"
    env = {**os.environ, "PATH": f"{tool.parent}{os.pathsep}{os.environ['PATH']}"}
    audit = subprocess.Popen(
        [sys.executable, "-m", "tracekit", "audit", "--backend", "rocprof", "-o", str(run_dir),
         "--store", str(store), "--json", "--", sys.executable, str(program), "0", str(ready)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert audit.poll() is None, audit.communicate()
        assert time.monotonic() < deadline, "the program never started"
        time.sleep(0.05)
    os.killpg(audit.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    out, err = audit.communicate(timeout=180)
    assert audit.returncode == 130, err
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    document = json.loads(out)
    assert sum(k["count"] for k in document["kernels"]) == 4
