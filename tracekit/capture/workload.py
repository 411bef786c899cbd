"""A small OpenAI-compatible load driver: the requests that make an engine do prefill and decode.

Standard library only (``http.client``), so it runs wherever tracekit runs. The driver waits
until the server answers ``/health`` or ``/v1/models``, optionally sends warm-up requests
(CUDA graph capture and compilation stay outside the window), opens the engine's profiling
window, sends completions with a chosen prompt length (prefill work) and answer length
(decode work), closes the window and returns what it did. Progress goes to stderr.

Prompt length is approximate in tokens for text prompts (one short common word per token);
``prompt_format = "tokens"`` sends token ids instead, exact for engines that accept them
(vLLM, SGLang). ``ignore_eos`` and ``min_tokens`` ask engines that support them for exactly
``max_tokens`` tokens per answer.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from tracekit.capture.engines import HttpWindow
from tracekit.datafiles import read_toml
from tracekit.errors import InputError

WORDS = ("the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "to", "see")
TOKEN_ID_BASE = 1000  # ids well inside any LLM vocabulary
PROGRESS_EVERY_S = 2.0


@dataclass(frozen=True)
class LoadSpec:
    """What to send. A ``--load`` TOML/JSON file holds these keys; presets are below."""

    requests: int = 8
    prompt_tokens: int = 512
    max_tokens: int = 64
    concurrency: int = 1
    warmup: int = 1
    model: str | None = None
    prompt_format: str = "text"
    temperature: float = 0.0
    health_timeout_s: float = 900.0
    request_timeout_s: float = 300.0
    stop_profile_timeout_s: float = 1200.0
    retries: int = 2
    profile_window: bool = True

    def validate(self) -> LoadSpec:
        if self.requests < 1 or self.prompt_tokens < 1 or self.max_tokens < 1:
            raise InputError("--load: requests, prompt_tokens and max_tokens must be ≥ 1")
        if self.concurrency < 1 or self.retries < 0 or self.warmup < 0:
            raise InputError("--load: concurrency must be ≥ 1, retries and warmup ≥ 0")
        if self.prompt_format not in ("text", "tokens"):
            raise InputError("--load: prompt_format is 'text' or 'tokens'")
        return self


PRESETS: dict[str, LoadSpec] = {
    #: a few short requests: checks the whole chain quickly
    "smoke": LoadSpec(requests=4, prompt_tokens=128, max_tokens=16, concurrency=1),
    #: long prompts, one token out: the window is almost all prefill
    "prefill": LoadSpec(requests=8, prompt_tokens=2048, max_tokens=1, concurrency=4),
    #: short prompts, long answers, batched: the window is almost all decode
    "decode": LoadSpec(requests=16, prompt_tokens=32, max_tokens=256, concurrency=16),
    #: both, concurrently: mixed steps appear (chunked prefill next to decode)
    "mixed": LoadSpec(requests=16, prompt_tokens=1024, max_tokens=128, concurrency=8),
}


def load_spec(value: str) -> LoadSpec:
    """``--load`` value: a preset name or a TOML/JSON file (``preset = …`` to start from one)."""
    if value in PRESETS:
        return PRESETS[value]
    path = Path(value)
    if not path.is_file():
        raise InputError(f"--load {value}: neither a preset ({', '.join(PRESETS)}) nor a file")
    where = str(path)
    if path.suffix == ".json":
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: cannot read workload file ({exc})") from None
    else:
        file = read_toml(path, error=InputError)
        data = file.data
    if not isinstance(data, dict):
        raise InputError(f"{path}: a workload file holds one table of settings")
    base = PRESETS.get(str(data.pop("preset", "")), LoadSpec())
    known = {f.name for f in fields(LoadSpec)}
    unknown = sorted(set(data) - known)
    if unknown:
        if path.suffix != ".json":
            where = file.where(unknown[0])
        raise InputError(f"{where}: unknown workload keys {', '.join(unknown)}",
                         hint=f"known: {', '.join(sorted(known))}")
    try:
        return replace(base, **data).validate()
    except TypeError as exc:
        raise InputError(f"{path}: {exc}") from None


@dataclass
class HttpResult:
    status: int
    body: bytes


class Client:
    """Blocking JSON-over-HTTP calls to one base URL, with bounded retries."""

    def __init__(self, base_url: str, timeout_s: float, retries: int = 0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"--url {base_url}: expected http://HOST:PORT")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout_s, self.retries = timeout_s, retries

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None,
             timeout_s: float | None = None, retries: int | None = None) -> HttpResult:
        """One request; connection errors and 5xx are retried ``retries`` times."""
        attempts = 1 + (self.retries if retries is None else retries)
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        last: Exception | None = None
        for attempt in range(attempts):
            if attempt:
                time.sleep(min(2.0 ** attempt * 0.25, 5.0))
            connection_class = (http.client.HTTPSConnection if self.scheme == "https"
                                else http.client.HTTPConnection)
            connection = connection_class(self.host, self.port,
                                          timeout=timeout_s or self.timeout_s)
            try:
                connection.request(method, self.prefix + path, body=payload, headers=headers)
                response = connection.getresponse()
                result = HttpResult(response.status, response.read())
            except (OSError, http.client.HTTPException) as exc:
                last = exc
                continue
            finally:
                connection.close()
            if result.status >= 500 and attempt + 1 < attempts:
                last = RuntimeError(f"HTTP {result.status}")
                continue
            return result
        raise ConnectionError(f"{method} {path}: {last}")


def make_prompt(spec: LoadSpec, index: int) -> str | list[int]:
    """A prompt of about ``spec.prompt_tokens`` tokens, different per request (no prefix cache)."""
    if spec.prompt_format == "tokens":
        return [TOKEN_ID_BASE + (index * 7919 + i * 31) % 20000 for i in range(spec.prompt_tokens)]
    words = [f"{index}"] + [WORDS[(index + i) % len(WORDS)] for i in range(spec.prompt_tokens - 1)]
    return " ".join(words)


@dataclass
class WorkloadReport:
    """What the driver did, for run.json."""

    url: str
    model: str | None = None
    healthy_after_s: float | None = None
    window: str = "none"
    window_calls: list[dict[str, Any]] = field(default_factory=list)
    sent: int = 0
    succeeded: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Aborted(Exception):
    """The engine went away or the user asked to stop."""


class Driver:
    """Drives one server through health check, warm-up, window and requests."""

    def __init__(self, base_url: str, spec: LoadSpec, window: HttpWindow | None,
                 engine_alive: Callable[[], bool] = lambda: True,
                 stop: threading.Event | None = None, progress: TextIO | None = None) -> None:
        self.spec = spec
        self.window = window if spec.profile_window else None
        self.engine_alive = engine_alive
        self.stop = stop or threading.Event()
        self.progress = progress if progress is not None else sys.stderr
        self.client = Client(base_url, spec.request_timeout_s, spec.retries)
        self.report = WorkloadReport(url=base_url)
        self._lock = threading.Lock()
        self._last_progress = 0.0

    def say(self, message: str) -> None:
        print(f"tracekit: load: {message}", file=self.progress, flush=True)

    def _check(self) -> None:
        if self.stop.is_set():
            raise Aborted("stopped")
        if not self.engine_alive():
            raise Aborted("the engine exited")

    def wait_healthy(self) -> None:
        """Poll ``/health`` (``/v1/models`` where there is no ``/health``) until it says 200."""
        started = time.monotonic()
        deadline = started + self.spec.health_timeout_s
        announced = False
        while True:
            self._check()
            if self._healthy():
                self.report.healthy_after_s = round(time.monotonic() - started, 3)
                self.say(f"server ready after {self.report.healthy_after_s:.1f} s")
                return
            if time.monotonic() > deadline:
                raise Aborted(f"server not healthy after {self.spec.health_timeout_s:.0f} s")
            if not announced:
                self.say(f"waiting for {self.report.url} to become healthy")
                announced = True
            self.stop.wait(1.0)

    def _healthy(self) -> bool:
        try:
            status = self.client.call("GET", "/health", timeout_s=5.0, retries=0).status
            if status == 404:  # no /health: a listed model means the server is up
                status = self.client.call("GET", "/v1/models", timeout_s=5.0, retries=0).status
        except ConnectionError:
            return False
        return status == 200

    def discover_model(self) -> str | None:
        if self.spec.model:
            return self.spec.model
        try:
            result = self.client.call("GET", "/v1/models", timeout_s=10.0)
            data = json.loads(result.body) if result.status == 200 else {}
            models = data.get("data") or []
            return str(models[0]["id"]) if models else None
        except (ConnectionError, ValueError, KeyError, TypeError):
            return None

    def _window(self, which: str) -> None:
        assert self.window is not None
        path = self.window.start_path if which == "start" else self.window.stop_path
        body = self.window.start_body if which == "start" else self.window.stop_body
        timeout = 60.0 if which == "start" else self.spec.stop_profile_timeout_s
        started = time.monotonic()
        try:
            result = self.client.call("POST", path, body=body, timeout_s=timeout, retries=0)
            status: int | str = result.status
        except ConnectionError as exc:
            status = f"error: {exc}"
        self.report.window_calls.append({"call": path, "status": status,
                                         "seconds": round(time.monotonic() - started, 3)})
        if status != 200:
            self.say(f"{path} answered {status}; the capture window may be missing")

    def _complete(self, index: int, counted: bool) -> None:
        self._check()
        body: dict[str, Any] = {
            "prompt": make_prompt(self.spec, index), "max_tokens": self.spec.max_tokens,
            "min_tokens": self.spec.max_tokens, "ignore_eos": True,
            "temperature": self.spec.temperature, "stream": False,
        }
        if self.report.model:
            body["model"] = self.report.model
        try:
            result = self.client.call("POST", "/v1/completions", body=body)
            ok = result.status == 200
            usage = (json.loads(result.body).get("usage") or {}) if ok else {}
        except (ConnectionError, ValueError):
            ok, usage = False, {}
        if not counted:
            return
        with self._lock:
            self.report.sent += 1
            self.report.succeeded += int(ok)
            self.report.failed += int(not ok)
            self.report.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.report.completion_tokens += int(usage.get("completion_tokens") or 0)
            done = self.report.sent
            now = time.monotonic()
            due = (done == self.spec.requests or not ok
                   or now - self._last_progress >= PROGRESS_EVERY_S)
            if due:
                self._last_progress = now
        if due:
            self.say(f"{done}/{self.spec.requests} requests done"
                     + ("" if ok else " (last one failed)"))

    def run(self) -> WorkloadReport:
        """The whole sequence; never raises for engine trouble (``report.error`` says it)."""
        started = time.monotonic()
        opened = False
        try:
            self.wait_healthy()
            self.report.model = self.discover_model()
            for index in range(self.spec.warmup):
                self._complete(-1 - index, counted=False)
            if self.window is not None:
                self._window("start")
                opened = True
                self.report.window = "engine"
            self.say(f"sending {self.spec.requests} requests · prompt ≈{self.spec.prompt_tokens} "
                     f"tokens · answer {self.spec.max_tokens} tokens · concurrency "
                     f"{self.spec.concurrency}")
            with ThreadPoolExecutor(max_workers=self.spec.concurrency) as pool:
                for future in [pool.submit(self._complete, index, True)
                               for index in range(self.spec.requests)]:
                    try:
                        future.result()
                    except Aborted:
                        pass
            self._check()
        except Aborted as exc:
            self.report.error = str(exc)
            self.say(f"stopped: {exc}")
        finally:
            if opened and self.engine_alive():
                self._window("stop")
            self.report.wall_s = round(time.monotonic() - started, 3)
        return self.report
