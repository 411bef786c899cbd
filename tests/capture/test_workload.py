"""The OpenAI-compatible workload driver against a local fake server (127.0.0.1 only).

Checks what the driver sends (counts, prompt and answer lengths, model), the order of the
profiling window around the measured requests, health waiting, retries, aborting when the
engine dies, ``--load`` files, and — end to end under the real nsys — that ``tracekit audit
--load`` stops the server gracefully once the workload is done.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tracekit.capture import procs
from tracekit.capture.engines import PRESETS
from tracekit.capture.workload import Driver, LoadSpec, load_spec, make_prompt
from tracekit.errors import InputError
from tracekit.ingest.convert import find_nsys, find_qdstrm_importer

HERE = Path(__file__).resolve().parent


def _load_fake() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fake_openai_server",
                                                  HERE / "fake_openai_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fake = _load_fake()


@pytest.fixture
def server() -> Iterator[tuple[str, object]]:
    state = fake.FakeState()
    httpd = fake.make_server(state)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    host, port = httpd.server_address[:2]
    assert host == "127.0.0.1"
    yield f"http://127.0.0.1:{port}", state
    httpd.shutdown()
    httpd.server_close()


def quiet(spec: LoadSpec, url: str, **kwargs: object) -> Driver:
    import io

    return Driver(url, spec, PRESETS["vllm"].http_window, progress=io.StringIO(), **kwargs)


def completions(state: object) -> list[dict]:
    return [call for call in state.calls if call.get("path") == "/v1/completions"]


def test_driver_sends_requests_inside_the_profiling_window(server) -> None:
    url, state = server
    spec = LoadSpec(requests=5, prompt_tokens=40, max_tokens=7, concurrency=2, warmup=1)
    report = quiet(spec, url).run()
    assert report.error is None
    assert (report.sent, report.succeeded, report.failed) == (5, 5, 0)
    assert report.prompt_tokens == 5 * 40 and report.completion_tokens == 5 * 7
    assert report.model == "fake-model" and report.window == "engine"
    paths = [call["path"] for call in state.calls if call.get("method") == "POST"]
    # one warm-up request outside the window, then start, the 5 measured requests, stop
    assert paths[0] == "/v1/completions"
    assert paths[1] == "/start_profile" and paths[-1] == "/stop_profile"
    assert paths[2:-1] == ["/v1/completions"] * 5
    for call in completions(state):
        body = call["body"]
        assert len(body["prompt"].split()) == 40
        assert body["max_tokens"] == body["min_tokens"] == 7 and body["ignore_eos"] is True
        assert body["model"] == "fake-model"
    prompts = [call["body"]["prompt"] for call in completions(state)]
    assert len(set(prompts)) == len(prompts)  # no prefix-cache hits between requests
    assert [c["status"] for c in report.window_calls] == [200, 200]


def test_sglang_window_body_and_token_prompts(server) -> None:
    import io

    url, state = server
    spec = LoadSpec(requests=2, prompt_tokens=16, max_tokens=3, warmup=0, prompt_format="tokens",
                    model="given")
    Driver(url, spec, PRESETS["sglang"].http_window, progress=io.StringIO()).run()
    start = next(call for call in state.calls if call.get("path") == "/start_profile")
    assert start["body"] == {"activities": ["CUDA_PROFILER"]}
    for call in completions(state):
        assert len(call["body"]["prompt"]) == 16 and call["body"]["model"] == "given"
    assert all(isinstance(token, int) for token in make_prompt(spec, 0))


def test_driver_waits_for_health_and_retries_server_errors(server) -> None:
    url, state = server
    state.unhealthy_polls = 2
    state.fail_completions = 1
    spec = LoadSpec(requests=2, prompt_tokens=4, max_tokens=2, warmup=0, retries=2)
    report = quiet(spec, url).run()
    assert report.error is None and report.succeeded == 2
    health = [call for call in state.calls if call.get("path") == "/health"]
    assert len(health) >= 3
    assert len(completions(state)) == 3  # one 500, retried


def test_driver_without_window_sends_no_profile_calls(server) -> None:
    import io

    url, state = server
    spec = LoadSpec(requests=1, prompt_tokens=4, max_tokens=2, warmup=0)
    report = Driver(url, spec, None, progress=io.StringIO()).run()
    assert report.window == "none" and report.succeeded == 1
    assert not [c for c in state.calls if "profile" in str(c.get("path"))]


def test_driver_gives_up_when_the_engine_dies() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = LoadSpec(requests=1, health_timeout_s=30)
    report = quiet(spec, f"http://127.0.0.1:{port}", engine_alive=lambda: False).run()
    assert report.error == "the engine exited" and report.sent == 0
    assert report.window_calls == []


def test_driver_stops_on_request(server) -> None:
    url, state = server
    stop = threading.Event()
    stop.set()
    report = quiet(LoadSpec(requests=3), url, stop=stop).run()
    assert report.error == "stopped" and not completions(state)


def test_load_files_and_presets(tmp_path: Path) -> None:
    assert load_spec("decode").max_tokens > load_spec("decode").prompt_tokens
    assert load_spec("prefill").prompt_tokens > load_spec("prefill").max_tokens
    toml = tmp_path / "load.toml"
    toml.write_text('preset = "smoke"\nrequests = 3\nmax_tokens = 9\n')
    spec = load_spec(str(toml))
    assert (spec.requests, spec.max_tokens, spec.prompt_tokens) == (3, 9, 128)
    as_json = tmp_path / "load.json"
    as_json.write_text(json.dumps({"prompt_tokens": 10, "prompt_format": "tokens"}))
    assert load_spec(str(as_json)).prompt_format == "tokens"
    bad = tmp_path / "bad.toml"
    bad.write_text("request = 3\n")
    with pytest.raises(InputError, match="unknown workload keys request"):
        load_spec(str(bad))
    with pytest.raises(InputError, match="neither a preset"):
        load_spec("no-such-preset")
    zero = tmp_path / "zero.toml"
    zero.write_text("requests = 0\n")
    with pytest.raises(InputError):
        load_spec(str(zero))


@pytest.mark.nsys
@pytest.mark.skipif(find_nsys() is None or find_qdstrm_importer() is None,
                    reason="needs nsys with QdstrmImporter")
def test_audit_drives_the_server_then_stops_it_gracefully(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    record, run_dir = tmp_path / "calls.jsonl", tmp_path / "run"
    load = tmp_path / "load.toml"
    load.write_text("requests = 3\nprompt_tokens = 12\nmax_tokens = 4\nwarmup = 0\n")
    argv = [sys.executable, "-m", "tracekit", "audit", "-o", str(run_dir), "--store",
            str(tmp_path / "s.db"), "--json", "--engine", "vllm", "--window", "whole",
            "--load", str(load), "--url", f"http://127.0.0.1:{port}", "--",
            sys.executable, str(HERE / "fake_openai_server.py"), str(port), str(record)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          start_new_session=True)
    assert done.returncode == 0, done.stderr
    assert "3/3 requests done" in done.stderr
    events = [json.loads(line) for line in record.read_text().splitlines()]
    assert events[-1] == {"event": "graceful_stop", "t": events[-1]["t"]}
    posted = [e for e in events if e.get("path") == "/v1/completions"]
    assert len(posted) == 3 and all(len(e["body"]["prompt"].split()) == 12 for e in posted)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "complete" and run["stop_reason"] == "workload finished"
    assert run["signals_sent"] == ["SIGINT"]
    assert run["workload"]["succeeded"] == 3 and run["env"] == {
        "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    assert "fake server listening" in (run_dir / "engine.log").read_text()
    left = [info for info in procs.all_procs()
            if str(record) in info.cmdline and info.state != "Z"]
    assert not left
