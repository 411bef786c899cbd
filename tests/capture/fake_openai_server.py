"""A tiny OpenAI-compatible completions server for tests (127.0.0.1 only).

Speaks ``/health``, ``/v1/models``, ``/v1/completions`` and vLLM's ``/start_profile`` /
``/stop_profile``, recording every call. Used in-process by ``tests/capture/test_workload.py``
and as the "engine" of an end-to-end ``tracekit audit --load`` (``python fake_openai_server.py
PORT RECORD_FILE``): then each completion is an NVTX range named like a vLLM prefill step, calls are
appended to RECORD_FILE as JSON lines, and SIGINT shuts the server down gracefully (it writes a
final ``{"event": "graceful_stop"}`` line).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class FakeState:
    """Calls seen and behaviour knobs."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.unhealthy_polls = 0
        self.fail_completions = 0
        self.record_file: Path | None = None
        self.annotate: Any = None

    def add(self, entry: dict[str, Any]) -> None:
        entry["t"] = time.monotonic()
        with self.lock:
            self.calls.append(entry)
            if self.record_file is not None:
                with self.record_file.open("a") as stream:
                    stream.write(json.dumps(entry) + "\n")


def make_server(state: FakeState, port: int = 0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            state.add({"method": "GET", "path": self.path})
            if self.path == "/health":
                with state.lock:
                    unhealthy = state.unhealthy_polls > 0
                    state.unhealthy_polls -= int(unhealthy)
                self._reply(503 if unhealthy else 200, {})
            elif self.path == "/v1/models":
                self._reply(200, {"object": "list", "data": [{"id": "fake-model"}]})
            else:
                self._reply(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            state.add({"method": "POST", "path": self.path, "body": body})
            if self.path in ("/start_profile", "/stop_profile"):
                self._reply(200, {})
            elif self.path == "/v1/completions":
                with state.lock:
                    fail = state.fail_completions > 0
                    state.fail_completions -= int(fail)
                if fail:
                    self._reply(500, {"error": "try again"})
                    return
                prompt = body["prompt"]
                prompt_tokens = len(prompt) if isinstance(prompt, list) else len(prompt.split())
                if state.annotate is not None:
                    with state.annotate(f"execute_context_1({prompt_tokens})_generation_0(0)"):
                        time.sleep(0.005)
                self._reply(200, {
                    "id": "cmpl-1", "object": "text_completion", "model": body.get("model"),
                    "choices": [{"index": 0, "text": " ok" * body["max_tokens"],
                                 "finish_reason": "length"}],
                    "usage": {"prompt_tokens": prompt_tokens,
                              "completion_tokens": body["max_tokens"],
                              "total_tokens": prompt_tokens + body["max_tokens"]}})
            else:
                self._reply(404, {"error": "not found"})

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main() -> int:
    port, record = int(sys.argv[1]), Path(sys.argv[2])
    state = FakeState()
    state.record_file = record
    try:
        import nvtx

        state.annotate = nvtx.annotate
    except ImportError:
        pass
    server = make_server(state, port)
    stopping = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.add({"event": "started", "argv": sys.argv[3:]})
    print(f"fake server listening on 127.0.0.1:{port}", flush=True)
    while not stopping.wait(0.1):
        pass
    server.shutdown()
    state.add({"event": "graceful_stop"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
