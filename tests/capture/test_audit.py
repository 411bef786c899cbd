"""``tracekit audit``: real end-to-end captures with the real nsys, and command lines up to the GPU.

The end-to-end tests run ``tracekit audit -- python PROGRAM`` as a separate process group, the
way a user's shell would, with a PROGRAM that emits vLLM-style step ranges through
``nvtx==0.2.10`` (newer nvtx releases are not recorded by nsys 2022.4: NSYS_NOTES.md). They
skip cleanly without nsys, QdstrmImporter or that nvtx. Each checks afterwards that no process
of the capture (the program, nsys, an ``nsys --start-agent`` daemon) is left running.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tracekit.capture import backends, engines, nsys, procs
from tracekit.capture.cupti_runner import JsonLinesWriter
from tracekit.capture.lifecycle import StopPolicy, Supervisor
from tracekit.cli import cli
from tracekit.ingest.convert import find_nsys, find_qdstrm_importer

STEPS = [("execute_context_1(16)_generation_0(0)", 2), ("execute_context_0(0)_generation_4(4)", 3)]

PROGRAM = textwrap.dedent('''
    import pathlib, sys, time
    import nvtx

    print("engine says hello", flush=True)
    ready = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else None
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    for _ in range(rounds):
        for name, count in {steps!r}:
            for _ in range(count):
                with nvtx.annotate(name):
                    time.sleep(0.01)
        if ready is not None and not ready.exists():
            ready.touch()
    sys.exit(int(sys.argv[1]))
''').format(steps=STEPS)


def nvtx_recordable() -> bool:
    try:
        version = importlib.metadata.version("nvtx")
    except importlib.metadata.PackageNotFoundError:
        return False
    return version in ("0.2.10", "0.2.11")


_skip_without_nsys = pytest.mark.skipif(
    find_nsys() is None or find_qdstrm_importer() is None or not nvtx_recordable(),
    reason="needs nsys with QdstrmImporter and nvtx==0.2.10")


def needs_nsys(test):  # type: ignore[no-untyped-def]
    """A real nsys capture: marked ``nsys``, skipped where nsys or nvtx 0.2.10 is missing."""
    return pytest.mark.nsys(_skip_without_nsys(test))


def audit_argv(run_dir: Path, store: Path, *command: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "tracekit", "audit", "-o", str(run_dir), "--store",
            str(store), "--json", *extra, "--", *command]


def start_audit(argv: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def assert_nothing_left(run_dir: Path) -> None:
    """No process of the capture survives: none mentions the run folder, no agent of its nsys."""
    record = json.loads((run_dir / "run.json").read_text())
    nsys_pid = record.get("pid")
    deadline = time.monotonic() + 10
    while True:
        left = [info for info in procs.all_procs()
                if (str(run_dir) in info.cmdline and info.state != "Z")
                or (nsys_pid is not None and nsys.agent_session_pid(info.cmdline) == nsys_pid
                    and info.state != "Z")]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, [info.cmdline for info in left]


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "fake_engine.py"
    path.write_text(PROGRAM)
    return path


def stored_ranges(store: Path) -> list[str]:
    with sqlite3.connect(store) as connection:
        return [row[0] for row in connection.execute(
            "SELECT text FROM nvtx_ranges WHERE kind IN ('push_pop', 'start_end') "
            "ORDER BY start_ns")]


@needs_nsys
def test_audit_captures_nvtx_ranges_into_run_folder_store_and_json(tmp_path: Path,
                                                                    program: Path) -> None:
    run_dir, store = tmp_path / "run", tmp_path / "store.db"
    audit = start_audit(audit_argv(run_dir, store, sys.executable, str(program), "0"), tmp_path)
    out, err = audit.communicate(timeout=180)
    assert audit.returncode == 0, err
    document = json.loads(out)

    # run folder: trace, log, record
    assert (run_dir / "trace.nsys-rep").is_file()
    assert not (run_dir / "trace.qdstrm").exists()
    assert "engine says hello" in (run_dir / "engine.log").read_text()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "complete" and record["exit_code"] == 0
    assert record["command"] == [sys.executable, str(program), "0"]
    assert "--trace-fork-before-exec=true" in record["argv"]
    assert "--cuda-graph-trace=node" in record["argv"]
    assert record["tool"]["version"].startswith("20")
    assert record["analysis"]["run_id"] == document["run"]["id"]
    assert record["started_at"] and record["ended_at"] and record["wall_s"] > 0

    # store: every range, in order
    expected = [name for name, count in STEPS for _ in range(count)]
    assert stored_ranges(store) == expected

    # JSON: the ranges became steps of the right phases
    assert document["summary"]["nvtx_ranges"] == len(expected)
    assert document["phases"]["prefill"]["steps"] == 2
    assert document["phases"]["decode"]["steps"] == 3
    assert document["audit"]["run_dir"] == str(run_dir.resolve())
    assert "run folder" in err
    assert_nothing_left(run_dir)


@needs_nsys
def test_audit_returns_the_commands_exit_code_and_still_analyzes(tmp_path: Path,
                                                                 program: Path) -> None:
    """Also the terminal mode: the command's output and the summary on stdout."""
    run_dir, store = tmp_path / "run", tmp_path / "store.db"
    argv = [arg for arg in audit_argv(run_dir, store, sys.executable, str(program), "3")
            if arg != "--json"]
    audit = start_audit(argv, tmp_path)
    out, err = audit.communicate(timeout=180)
    assert audit.returncode == 3, err
    assert "exited with code 3" in err
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "failed" and record["exit_code"] == 3
    assert "run_id" in record["analysis"]
    assert "engine says hello" in out and "5 NVTX ranges" in out
    assert f"run folder: {run_dir.resolve()}" in err
    assert len(stored_ranges(store)) == 5
    assert_nothing_left(run_dir)


@needs_nsys
def test_sigint_stops_the_command_and_still_leaves_an_analyzed_run(tmp_path: Path,
                                                                   program: Path) -> None:
    run_dir, store, ready = tmp_path / "run", tmp_path / "store.db", tmp_path / "ready"
    # 400 rounds of 5 ranges of 10 ms: far longer than the test waits
    audit = start_audit(audit_argv(run_dir, store, sys.executable, str(program), "0",
                                   str(ready), "400"), tmp_path)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert audit.poll() is None, audit.communicate()
        assert time.monotonic() < deadline, "the program never became ready"
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(audit.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    out, err = audit.communicate(timeout=180)
    assert audit.returncode == 130, err
    assert "interrupted" in err
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    assert record["signals_sent"][0] == "SIGINT"
    assert "run_id" in record["analysis"]
    document = json.loads(out)
    ranges = stored_ranges(store)
    assert len(ranges) >= 5 and document["summary"]["nvtx_ranges"] == len(ranges)
    assert len(ranges) < 400 * 5
    assert document["phases"]["decode"]["steps"] >= 3
    assert_nothing_left(run_dir)


# --- without a profiler run ---------------------------------------------------------------

def invoke(*args: str, env: dict[str, str] | None = None) -> SimpleNamespace:
    result = CliRunner().invoke(cli, ["audit", *args], env=env)
    return SimpleNamespace(code=result.exit_code, out=result.stdout, err=result.stderr)


def test_dry_run_vllm_uses_its_profiler_hook_as_capture_window() -> None:
    result = invoke("--dry-run", "--load", "smoke", "--", "vllm", "serve", "M", "--port", "8123")
    assert result.code == 0, result.err
    command_line = next(line for line in result.out.splitlines() if "profile" in line
                        and not line.startswith("#"))
    assert command_line.startswith("env VLLM_WORKER_MULTIPROC_METHOD=spawn ")
    for flag in ("--trace-fork-before-exec=true", "--cuda-graph-trace=node", "-t cuda,nvtx",
                 "--capture-range=cudaProfilerApi", "--capture-range-end=repeat"):
        assert flag in command_line
    assert command_line.endswith("vllm serve M --port 8123 --profiler-config.profiler cuda")
    lines = result.out.splitlines()
    start = lines.index("POST http://127.0.0.1:8123/start_profile")
    stop = lines.index("POST http://127.0.0.1:8123/stop_profile")
    assert start < next(i for i, line in enumerate(lines) if "/v1/completions" in line) < stop


def test_dry_run_sglang_trtllm_llamacpp_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    sglang = invoke("--dry-run", "--load", "smoke", "--", "python", "-m",
                    "sglang.launch_server", "--model-path", "M")
    assert "--capture-range-end=stop" in sglang.out
    assert 'POST http://127.0.0.1:30000/start_profile {"activities": ["CUDA_PROFILER"]}' \
        in sglang.out
    trt = invoke("--dry-run", "--", "trtllm-serve", "M")
    assert "cudaProfilerApi" not in trt.out and "TLLM_LLMAPI_ENABLE_NVTX=1" in trt.out
    monkeypatch.setenv("TLLM_PROFILE_START_STOP", "100-150")
    trt_window = invoke("--dry-run", "--", "trtllm-serve", "M")
    assert "--capture-range=cudaProfilerApi" in trt_window.out
    llama = invoke("--dry-run", "--nsys-trace", "cublas,osrt", "--delay", "5", "--duration",
                   "30", "--", "llama-bench", "-m", "m.gguf")
    assert "engine llamacpp" in llama.out and "cudaProfilerApi" not in llama.out
    assert "-t cuda,nvtx,cublas,osrt" in llama.out
    own = invoke("--dry-run", "--nsys-arg=-t", "--nsys-arg=cuda", "--nsys-arg=--sample=cpu",
                 "--", "llama-bench")
    assert "-t cuda " in own.out and "cuda,nvtx" not in own.out
    assert "--sample=cpu" in own.out and "--sample=none" not in own.out
    assert "--delay=5 --duration=30" in llama.out
    whole = invoke("--dry-run", "--window", "whole", "--load", "smoke", "--", "vllm", "serve", "M")
    assert "cudaProfilerApi" not in whole.out and "start_profile" not in whole.out
    insist = invoke("--dry-run", "--window", "engine", "--", "vllm", "serve", "M")
    assert insist.code == 2 and "--window engine" in insist.err
    not_a_server = invoke("--dry-run", "--load", "smoke", "--", "python", "train.py")
    assert not_a_server.code == 2 and "--load needs a server command" in not_a_server.err
    any_server = invoke("--dry-run", "--load", "smoke", "--url", "http://10.1.2.3:9000", "--",
                        "python", "my_server.py")
    assert any_server.code == 0 and "POST http://10.1.2.3:9000/v1/completions" in any_server.out


def test_engine_detection_and_server_url() -> None:
    assert engines.detect_engine(["vllm", "serve", "m"]).name == "vllm"
    assert engines.detect_engine(["/venv/bin/vllm", "serve", "m"]).name == "vllm"
    assert engines.detect_engine(["python", "-m", "vllm.entrypoints.openai.api_server"]).name \
        == "vllm"
    assert engines.detect_engine(["python", "-m", "sglang.launch_server"]).name == "sglang"
    assert engines.detect_engine(["trtllm-bench", "x"]).name == "trtllm"
    assert engines.detect_engine(["./build/bin/llama-server", "-m", "x"]).name == "llamacpp"
    assert engines.detect_engine(["python", "train.py"]) is None
    llama = engines.PRESETS["llamacpp"]
    assert engines.is_server(llama, ["llama-server"])
    assert not engines.is_server(llama, ["llama-bench"])
    assert engines.server_url(engines.PRESETS["vllm"], ["vllm", "serve", "m", "--port=9000"]) \
        == "http://127.0.0.1:9000"
    assert engines.server_url(engines.PRESETS["sglang"], ["x", "--host", "10.0.0.2"]) \
        == "http://10.0.0.2:30000"
    old_vllm = engines.for_version(engines.PRESETS["vllm"], "0.12.0")
    assert old_vllm.window_args == () and old_vllm.env["VLLM_TORCH_CUDA_PROFILE"] == "1"
    assert engines.for_version(engines.PRESETS["vllm"], "0.33.0") is engines.PRESETS["vllm"]
    assert engines.engine_env(engines.PRESETS["vllm"], {}) == \
        {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    assert engines.engine_env(engines.PRESETS["vllm"],
                              {"VLLM_WORKER_MULTIPROC_METHOD": "fork"}) == {}


def test_nsys_agent_is_matched_to_its_session() -> None:
    line = ("/usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys --start-agent "
            "--session-name=profile-python-9000 --shm-name=quadd-create-agent-1")
    assert nsys.agent_session_pid(line) == 9000
    assert nsys.agent_session_pid("nsys profile -o x python p.py") is None
    assert nsys.window_command(engines.PRESETS["vllm"],
                               ["vllm", "serve", "m", "--profiler-config", "{}"])[-1] == "{}"


def test_numbered_reports_of_repeated_capture_windows_are_all_collected(tmp_path: Path) -> None:
    for name in ("trace.2.nsys-rep", "trace.10.nsys-rep", "trace.1.nsys-rep", "x.nsys-rep"):
        (tmp_path / name).write_text("stand-in")
    found = nsys.finish_outputs(tmp_path / "trace", [])
    assert [path.name for path in found] == ["trace.1.nsys-rep", "trace.2.nsys-rep",
                                             "trace.10.nsys-rep"]
    assert nsys.finish_outputs(tmp_path / "none", []) == []


def test_missing_profiler_is_one_line_exit_2(tmp_path: Path) -> None:
    result = invoke("-o", str(tmp_path / "r"), "--", sys.executable, "x.py",
                    env={"TRACEKIT_NSYS": str(tmp_path / "no-nsys"), "PATH": "/nonexistent"})
    assert result.code == 2
    assert result.err.count("\n") == 1 and "needs Nsight Systems" in result.err
    ncu = invoke("--backend", "ncu", "--ncu-kernel", "k", "-o", str(tmp_path / "n"), "--",
                 sys.executable, "x.py", env={"TRACEKIT_NCU": "", "PATH": "/nonexistent"})
    assert ncu.code == 2 and "ncu" in ncu.err and "Traceback" not in ncu.err


def test_cupti_backend_says_what_it_needs(tmp_path: Path) -> None:
    result = invoke("--backend", "cupti", "-o", str(tmp_path / "r"), "--", sys.executable,
                    "prog.py")
    if result.code == 2:
        assert "cupti" in result.err and result.err.count("\n") == 1
    else:  # pragma: no cover - a GPU machine with cupti-python
        pytest.skip("cupti-python and a GPU are present")
    dry = invoke("--backend", "cupti", "--dry-run", "--", "python", "prog.py", "--n", "3")
    assert "-m tracekit.capture.cupti_runner --out 'tracekit-runs/<timestamp>/cupti.jsonl' -- " \
           "prog.py --n 3" in dry.out
    assert "PYTHONPATH=" in dry.out


def test_torch_backend_command_line(tmp_path: Path) -> None:
    dry = invoke("--backend", "torch", "--dry-run", "-o", str(tmp_path / "r"), "--",
                 "python", "-u", "prog.py", "a")
    assert dry.code == 0, dry.err
    assert f"python -m tracekit.capture.torch_runner --out {tmp_path / 'r' / 'torch'} -- " \
           "prog.py a" in dry.out
    with pytest.raises(Exception, match="Python programs only"):
        backends.python_program(["/bin/true"])
    cupti_server = invoke("--backend", "cupti", "--dry-run", "--", "vllm", "serve", "m")
    assert cupti_server.code == 2 and "worker processes" in cupti_server.err
    assert "--backend nsys" in cupti_server.err
    no_load = invoke("--backend", "torch", "--dry-run", "--", "vllm", "serve", "m")
    assert no_load.code == 2 and "add --load" in no_load.err


def test_torch_backend_on_servers_uses_the_engines_own_profiler(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    vllm = invoke("--backend", "torch", "--dry-run", "--load", "smoke", "-o", str(run_dir),
                  "--", "vllm", "serve", "M")
    assert vllm.code == 0, vllm.err
    assert (f"vllm serve M --profiler-config.profiler torch --profiler-config.torch_profiler_dir "
            f"{run_dir / 'torch'} --profiler-config.torch_profiler_record_shapes true") in vllm.out
    assert "nsys" not in vllm.out and "POST http://127.0.0.1:8000/start_profile" in vllm.out
    sglang = invoke("--backend", "torch", "--dry-run", "--load", "smoke", "-o", str(run_dir),
                    "--", "python", "-m", "sglang.launch_server", "--model-path", "M")
    assert f"SGLANG_TORCH_PROFILER_DIR={run_dir / 'torch'} python -m sglang" in sglang.out
    start = next(line for line in sglang.out.splitlines() if "/start_profile" in line)
    assert json.loads(start.split(" ", 2)[2]) == {
        "activities": ["CPU", "GPU"], "record_shapes": True, "output_dir": str(run_dir / "torch")}
    old = engines.for_version(engines.PRESETS["vllm"], "0.10.2", "torch")
    assert old.torch_hook.args == () and old.window_args == ("--profiler-config.profiler", "cuda")
    assert old.torch_hook.env["VLLM_TORCH_PROFILER_DIR"] == "{dir}"


def test_torch_backend_end_to_end_needs_a_gpu(tmp_path: Path, program: Path) -> None:
    try:
        import torch
    except ImportError:
        pytest.skip("needs PyTorch and a GPU (torch not installed)")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU (torch.cuda.is_available() is False)")
    run_dir = tmp_path / "run"  # pragma: no cover - GPU machines only
    audit = start_audit(audit_argv(run_dir, tmp_path / "s.db", sys.executable, str(program), "0",
                                   extra=("--backend", "torch")), tmp_path)
    out, err = audit.communicate(timeout=600)
    assert audit.returncode == 0, err
    assert json.loads(out)["summary"]["kernel_count"] > 0


def test_ncu_command_line_targets_top_gemms_of_a_stored_run(tmp_path: Path, make_trace,
                                                            simple_scenario) -> None:
    store = tmp_path / "store.db"
    trace = make_trace(simple_scenario)
    analyzed = CliRunner().invoke(cli, ["analyze", str(trace), "--store", str(store), "--json"])
    assert analyzed.exit_code == 0, analyzed.stderr
    result = invoke("--backend", "ncu", "--dry-run", "--store", str(store), "-o",
                    str(tmp_path / "r"), "--", "python", "bench.py")
    assert result.code == 0, result.err
    assert "top 1 GEMM(s) of run 1" in result.err
    line = next(line for line in result.out.splitlines() if "--metrics" in line)
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in line
    assert "sm__inst_executed_pipe_tensor.sum" in line
    assert "--target-processes all" in line and "--kernel-name-base demangled" in line
    assert "regex:^(?:sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n" in line
    assert line.endswith("python bench.py")
    assert "--import" in result.out and "--page raw" in result.out


def test_cupti_writer_output_is_read_by_the_cupti_reader(tmp_path: Path) -> None:
    """The JSON lines the cupti backend writes ingest as kernels (no GPU needed)."""
    kinds = SimpleNamespace(CONCURRENT_KERNEL=1, KERNEL=None, RUNTIME=2, DRIVER=3, MEMCPY=4,
                            MEMSET=5, EXTERNAL_CORRELATION=6, DEVICE=7)
    fake = SimpleNamespace(ActivityKind=kinds, get_version=lambda: 130400,
                           CallbackDomain=SimpleNamespace(RUNTIME_API=1, DRIVER_API=2),
                           get_callback_name=lambda domain, cbid: "cudaLaunchKernel")
    path = tmp_path / "cupti.jsonl"
    mangled = "_Z6kernelILi4EEvPf"
    with path.open("w") as stream:
        writer = JsonLinesWriter(stream, fake)
        writer.header(["python", "x.py"])
        writer.activity(SimpleNamespace(kind=7, id=0, name="NVIDIA H100 80GB HBM3",
                                        compute_capability_major=9, compute_capability_minor=0,
                                        num_multiprocessors=132, global_memory_size=80 << 30))
        for index in range(3):
            writer.activity(SimpleNamespace(
                kind=1, name=mangled, start=1000 * index, end=1000 * index + 500,
                device_id=0, context_id=1, stream_id=7, correlation_id=10 + index,
                grid_x=1, grid_y=1, grid_z=1, block_x=128, block_y=1, block_z=1,
                registers_per_thread=32, static_shared_memory=0, dynamic_shared_memory=0,
                graph_id=0, graph_node_id=0))
            writer.activity(SimpleNamespace(kind=2, cbid=211, start=900 * index,
                                            end=900 * index + 10, correlation_id=10 + index,
                                            process_id=1, thread_id=2))
    first = json.loads(path.read_text().splitlines()[0])
    assert first["format"] == "tracekit-cupti" and first["version"] == 1
    result = CliRunner().invoke(cli, ["analyze", str(path), "--store", str(tmp_path / "s.db"),
                                      "--json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["devices"][0]["compute_capability"] == "9.0"
    kernels = document["kernels"]
    assert kernels[0]["count"] == 3 and kernels[0]["name"].startswith("void kernel<4>")


def test_runner_reports_the_programs_exit_status(tmp_path: Path) -> None:
    prog = tmp_path / "p.py"
    prog.write_text("import sys\nprint(sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n")
    code = ("import sys; from tracekit.capture.runner import run_program; "
            f"sys.exit(run_program('path', {str(prog)!r}, sys.argv[1:]) + 100)")
    for status in (0, 3):
        done = subprocess.run([sys.executable, "-c", code, str(status)], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 100 + status
        assert done.stdout.strip() == f"['{status}']"


def test_process_tree_helpers() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        found = procs.descendants(os.getpid(), procs.all_procs())
        mine = [info for info in found if info.pid == sleeper.pid]
        assert mine and procs.alive(mine[0])
        assert procs.end_processes(mine, grace_s=5.0, keep=[sleeper.pid]) == []
        sleeper.wait(timeout=10)
        assert not procs.alive(mine[0])
    finally:
        sleeper.kill()


@needs_nsys
def test_a_crashing_command_is_reported_and_analyzed(tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import os, signal, time, nvtx\n"
                     "with nvtx.annotate('execute_context_0(0)_generation_4(4)'):\n"
                     "    time.sleep(0.01)\n"
                     "os.kill(os.getpid(), signal.SIGSEGV)\n")
    run_dir, store = tmp_path / "run", tmp_path / "store.db"
    audit = start_audit(audit_argv(run_dir, store, sys.executable, str(crash)), tmp_path)
    out, err = audit.communicate(timeout=180)
    assert audit.returncode == 128 + signal.SIGSEGV, err
    assert "(crashed)" in err
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "crashed" and "run_id" in record["analysis"]
    # ranges nsys had not flushed when the process died may be lost; the run is stored anyway
    assert json.loads(out)["run"]["id"] == record["analysis"]["run_id"]
    assert_nothing_left(run_dir)


def supervise(tmp_path: Path, code: str, **policy: float) -> Supervisor:
    supervisor = Supervisor([sys.executable, "-c", code], {"TK_TEST": "1"},
                            tmp_path / "engine.log", None, policy=StopPolicy(**policy))
    supervisor.start()
    return supervisor


def test_stop_ladder_escalates_to_sigterm_when_sigint_is_ignored(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    code = ("import os, signal, time, pathlib; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "print('env', os.environ['TK_TEST'], flush=True); "
            f"pathlib.Path({str(ready)!r}).touch(); "
            "time.sleep(60)")
    supervisor = supervise(tmp_path, code, sigint_s=0.5, sigterm_s=5.0)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    supervisor.request_stop("interrupted")
    outcome = supervisor.wait()
    assert outcome.signals_sent == ["SIGINT", "SIGTERM"]
    assert outcome.returncode == 128 + signal.SIGTERM and outcome.interrupted
    assert (tmp_path / "engine.log").read_text() == "env 1\n"


def test_leftover_daemons_of_the_command_are_ended(tmp_path: Path) -> None:
    """A grandchild that double-forks into its own session (as nsys's agent does) is found."""
    marker = tmp_path / "daemon-pid"
    code = textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(marker)!r}, "w").write(str(os.getpid()))
                time.sleep(120)
            os._exit(0)
        time.sleep(0.5)
    """)
    supervisor = supervise(tmp_path, code)
    outcome = supervisor.wait()
    assert outcome.returncode == 0
    daemon = int(marker.read_text())
    assert any(line.startswith(f"{daemon} ") for line in outcome.leftovers_ended)
    info = procs.read_proc(daemon)
    assert info is None or info.state == "Z"


def test_a_profiler_writing_its_report_is_not_rushed(tmp_path: Path) -> None:
    """After SIGINT, a lone profiler process (the program has ended) may finish its report."""
    fake_nsys = tmp_path / "nsys"
    fake_nsys.symlink_to(sys.executable)
    ready = tmp_path / "ready"
    code = ("import signal, time, pathlib; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            f"pathlib.Path({str(ready)!r}).touch(); time.sleep(2.0)")
    supervisor = Supervisor([str(fake_nsys), "-c", code], {}, tmp_path / "engine.log", None,
                            policy=StopPolicy(sigint_s=0.3, sigterm_s=5.0))
    supervisor.start()
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    supervisor.request_stop("interrupted")
    outcome = supervisor.wait()
    assert outcome.signals_sent == ["SIGINT"] and outcome.returncode == 0


def test_unknown_command_is_refused_before_anything_starts(tmp_path: Path) -> None:
    result = invoke("-o", str(tmp_path / "r"), "--", "no-such-engine-xyz", "serve")
    assert result.code == 2 and "no-such-engine-xyz: command not found" in result.err
    assert not (tmp_path / "r").exists()


@needs_nsys
def test_a_profiler_that_cannot_start_is_one_line_exit_2(tmp_path: Path, program: Path) -> None:
    run_dir = tmp_path / "run"
    audit = start_audit(audit_argv(run_dir, tmp_path / "s.db", sys.executable, str(program), "0",
                                   extra=("--nsys-arg=--trace=no-such-api",)), tmp_path)
    out, err = audit.communicate(timeout=120)
    assert audit.returncode == 2, err
    assert "nsys could not start the capture: Illegal" in err
    assert out == "" and "Traceback" not in err
    assert_nothing_left(run_dir)


def test_a_second_interrupt_skips_the_wait_for_sigint(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    code = ("import signal, time, pathlib; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            f"pathlib.Path({str(ready)!r}).touch(); time.sleep(60)")
    supervisor = supervise(tmp_path, code, sigint_s=60.0, sigterm_s=5.0)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    supervisor.request_stop("interrupted")
    threading.Timer(0.5, supervisor.request_stop, args=("interrupted",)).start()
    started = time.monotonic()
    outcome = supervisor.wait()
    assert outcome.signals_sent == ["SIGINT", "SIGTERM"]
    assert time.monotonic() - started < 10


def test_a_failed_pre_flight_leaves_no_run_folder(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """No profiler: one line, exit 2, and neither tracekit-runs/<timestamp>/ nor a new -o
    folder stays behind (an existing -o folder is left as it was)."""
    monkeypatch.chdir(tmp_path)
    env = {"TRACEKIT_NSYS": str(tmp_path / "no-nsys"), "PATH": "/nonexistent"}
    result = invoke("--", sys.executable, "x.py", env=env)
    assert result.code == 2 and "needs Nsight Systems" in result.err
    assert not (tmp_path / "tracekit-runs").exists()
    assert invoke("-o", str(tmp_path / "new" / "r"), "--", sys.executable, "x.py",
                  env=env).code == 2
    assert not (tmp_path / "new" / "r").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    assert invoke("-o", str(mine), "--", sys.executable, "x.py", env=env).code == 2
    assert (mine / "notes.txt").read_text() == "the user's"
