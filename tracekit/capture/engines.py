"""Engine presets: what each inference engine needs to be profiled well, as data.

A preset says how to recognise the engine in a command line, which environment it needs under
a profiler, which engine flag turns its profiling hook into a CUDA capture window, how a client
opens and closes that window, and where its server listens by default. Each preset cites the
engine's public docs or source it follows (``source``; overview in
docs/engines.md#profiling-an-engine-tracekit-audit); every fact can be overridden from the
command line (``--engine``, ``--window``, ``--nsys-arg``, ``--url``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class HttpWindow:
    """Profiling window opened and closed with HTTP calls to the engine's server."""

    start_path: str
    stop_path: str
    start_body: Mapping[str, object] | None = None
    stop_body: Mapping[str, object] | None = None


@dataclass(frozen=True)
class TorchHook:
    """An engine's own torch profiler: how to switch it on and open its window.

    ``{dir}`` in any value is replaced by the run folder's ``torch/`` directory.
    """

    window: HttpWindow
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    #: env replacing ``args`` before the engine version that introduced them
    legacy_env: Mapping[str, str] = field(default_factory=dict)


def fill(value: Any, directory: str) -> Any:
    """``value`` with every ``{dir}`` replaced (strings, lists, tuples and dicts)."""
    if isinstance(value, str):
        return value.replace("{dir}", directory)
    if isinstance(value, Mapping):
        return {key: fill(item, directory) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(fill(item, directory) for item in value)
    return value


@dataclass(frozen=True)
class EnginePreset:
    """How one engine is profiled (see the module docstring)."""

    name: str
    #: regexes matched against the command line joined by spaces
    detect: tuple[str, ...]
    #: environment set under every profiler (values already present in the user's env win)
    env: Mapping[str, str] = field(default_factory=dict)
    #: engine arguments appended when its own hook drives a cudaProfilerApi capture range
    window_args: tuple[str, ...] = ()
    #: how a client opens/closes that window (None: the engine has no client-driven hook)
    http_window: HttpWindow | None = None
    #: an environment variable that makes the engine open the window itself (TRT-LLM)
    env_window: str | None = None
    #: nsys ``--capture-range-end`` value for this engine's window
    capture_range_end: str = "stop"
    #: True when the command starts an HTTP server a workload can talk to
    server: bool = False
    default_port: int = 8000
    #: the Python distribution whose version run.json records
    package: str | None = None
    #: (first version with ``window_args``, env that opens the hook in older versions)
    legacy_window: tuple[str, Mapping[str, str]] | None = None
    #: the engine's own torch profiler (``--backend torch`` on a server)
    torch_hook: TorchHook | None = None
    #: where the facts come from
    source: str = ""


PRESETS: dict[str, EnginePreset] = {
    "vllm": EnginePreset(
        name="vllm",
        detect=(r"(^|[\s/])vllm\s+serve\b", r"-m\s+vllm\.entrypoints", r"(^|[\s/])vllm\s+bench\b"),
        # fork-started workers give empty/partial nsys profiles (vLLM docs, PR vllm#23802)
        env={"VLLM_WORKER_MULTIPROC_METHOD": "spawn"},
        # profiler=cuda: /start_profile calls cudaProfilerStart in every worker (0.13+)
        window_args=("--profiler-config.profiler", "cuda"),
        http_window=HttpWindow("/start_profile", "/stop_profile"),
        capture_range_end="repeat",
        server=True,
        default_port=8000,
        package="vllm",
        # before 0.13 (--profiler-config), VLLM_TORCH_CUDA_PROFILE=1 did the same; an unknown
        # flag aborts startup, so the engine's version decides
        legacy_window=("0.13", {"VLLM_TORCH_CUDA_PROFILE": "1"}),
        # record_shapes is off by default and is the only way to GEMM shapes in a torch trace
        torch_hook=TorchHook(
            window=HttpWindow("/start_profile", "/stop_profile"),
            args=("--profiler-config.profiler", "torch",
                  "--profiler-config.torch_profiler_dir", "{dir}",
                  "--profiler-config.torch_profiler_record_shapes", "true"),
            legacy_env={"VLLM_TORCH_PROFILER_DIR": "{dir}",
                        "VLLM_TORCH_PROFILER_RECORD_SHAPES": "1"}),
        source="vLLM 0.33: https://docs.vllm.ai/en/stable/contributing/profiling/, "
               "vllm/profiler/wrapper.py, vllm/entrypoints/serve/profile/api_router.py",
    ),
    "sglang": EnginePreset(
        name="sglang",
        detect=(r"-m\s+sglang\.launch_server", r"(^|[\s/])sglang\s+serve\b",
                r"sglang\.launch_server"),
        http_window=HttpWindow("/start_profile", "/stop_profile",
                               start_body={"activities": ["CUDA_PROFILER"]}),
        torch_hook=TorchHook(
            window=HttpWindow("/start_profile", "/stop_profile",
                              start_body={"activities": ["CPU", "GPU"], "record_shapes": True,
                                          "output_dir": "{dir}"}),
            env={"SGLANG_TORCH_PROFILER_DIR": "{dir}"}),
        capture_range_end="stop",
        server=True,
        default_port=30000,
        package="sglang",
        source="SGLang 0.5.23: "
               "https://docs.sglang.ai/developer_guide/benchmark_and_profiling.html, "
               "srt/entrypoints/http_server.py, ProfileReq in srt/managers/io_struct.py",
    ),
    "trtllm": EnginePreset(
        name="trtllm",
        detect=(r"(^|[\s/])trtllm-(serve|bench|llmapi-launch)\b", r"tensorrt_llm"),
        env={"TLLM_LLMAPI_ENABLE_NVTX": "1"},
        # TLLM_PROFILE_START_STOP=A-B: the executor calls cudaProfilerStart/Stop at iterations
        env_window="TLLM_PROFILE_START_STOP",
        capture_range_end="stop",
        server=True,
        default_port=8000,
        package="tensorrt_llm",
        source="TensorRT-LLM: https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/"
               "developer-guide/perf-analysis.md",
    ),
    "llamacpp": EnginePreset(
        name="llamacpp",
        detect=(r"(^|[\s/])llama-(server|bench|cli)\b",),
        server=False,
        default_port=8080,
        source="llama.cpp: single process, no NVTX, no profiling endpoint "
               "(https://github.com/ggml-org/llama.cpp/tree/master/ggml/src/ggml-cuda)",
    ),
}

#: llama-server is a server; llama-bench and llama-cli are not
_SERVER_OVERRIDES = {r"(^|[\s/])llama-server\b": True}


def detect_engine(command: Sequence[str]) -> EnginePreset | None:
    """The preset whose patterns match ``command``, or None for an unknown program."""
    joined = " ".join(command)
    for preset in PRESETS.values():
        if any(re.search(pattern, joined) for pattern in preset.detect):
            return preset
    return None


def preset_for(name: str | None, command: Sequence[str]) -> EnginePreset | None:
    """``--engine NAME`` when given, else detection from the command."""
    if name:
        return PRESETS[name]
    return detect_engine(command)


def is_server(preset: EnginePreset | None, command: Sequence[str]) -> bool:
    """Whether ``command`` starts an HTTP server (a workload can only drive servers)."""
    if preset is None:
        return False
    joined = " ".join(command)
    for pattern, server in _SERVER_OVERRIDES.items():
        if re.search(pattern, joined):
            return server
    return preset.server


def server_url(preset: EnginePreset | None, command: Sequence[str]) -> str:
    """The base URL the engine will listen on, from ``--host``/``--port`` in its command."""
    host, port = "127.0.0.1", preset.default_port if preset else 8000
    args = list(command)
    for index, arg in enumerate(args):
        name, _, inline = arg.partition("=")
        value = inline or (args[index + 1] if index + 1 < len(args) else "")
        if name == "--port" and value.isdigit():
            port = int(value)
        elif name == "--host" and value and value not in ("0.0.0.0", "::"):
            host = value
    return f"http://{host}:{port}"


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.12.1rc2"`` → ``(0, 12, 1)``: enough to compare release numbers."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def for_version(preset: EnginePreset, version: str | None, backend: str = "nsys"
                ) -> EnginePreset:
    """The preset adjusted to an engine version: older vLLM switches its hooks on with env."""
    if version is None or preset.legacy_window is None:
        return preset
    first, env = preset.legacy_window
    if version_tuple(version) >= version_tuple(first):
        return preset
    if backend == "torch" and preset.torch_hook is not None:
        hook = replace(preset.torch_hook, args=(),
                       env={**preset.torch_hook.env, **preset.torch_hook.legacy_env})
        return replace(preset, torch_hook=hook)
    return replace(preset, window_args=(), env={**preset.env, **env})


def engine_env(preset: EnginePreset | None, environ: Mapping[str, str] | None = None
               ) -> dict[str, str]:
    """Environment deltas the preset needs; variables the user already set are kept."""
    current = os.environ if environ is None else environ
    if preset is None:
        return {}
    return {key: value for key, value in preset.env.items() if key not in current}
