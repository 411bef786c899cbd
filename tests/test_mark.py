"""tracekit.mark: the text it writes is what the phase rules read, and it degrades quietly."""

from __future__ import annotations

import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

import tracekit.mark as mark
from tracekit.phases.markers import load_markers


class FakeNvtx(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("nvtx")
        self.calls: list[tuple[str, Any]] = []

    def push_range(self, message: str | None = None, domain: Any = None, **_: Any) -> None:
        self.calls.append(("push", message))

    def pop_range(self, domain: Any = None) -> None:
        self.calls.append(("pop", None))


@pytest.fixture
def fake_nvtx(monkeypatch: pytest.MonkeyPatch) -> FakeNvtx:
    fake = FakeNvtx()
    monkeypatch.setattr(mark, "_nvtx", fake)
    monkeypatch.setattr(mark, "_nvtx_checked", True)
    return fake


@pytest.mark.parametrize("kwargs, phase", [
    ({"prefill_tokens": 512, "decode_tokens": 0, "prefill_requests": 1, "decode_requests": 0},
     "prefill"),
    ({"decode_tokens": 16, "decode_requests": 16}, "decode"),
    ({"prefill_tokens": 100, "decode_tokens": 7, "label": "chunk 3 of req-42"}, "mixed"),
    ({"phase": "decode"}, "decode"),
    ({"phase": "prefill", "label": "pp512"}, "prefill"),
])
def test_text_is_recognized_by_the_phase_rules(kwargs: dict[str, Any], phase: str) -> None:
    text = mark.step_text(**kwargs)
    info = load_markers().parse(text)
    assert info is not None and info.marker == "tracekit-step" and info.engine == "tracekit"
    assert info.phase == phase
    for key in mark.COUNT_KEYS:
        if kwargs.get(key) is not None:
            assert getattr(info, key) == kwargs[key]


def test_documented_format() -> None:
    assert mark.step_text(prefill_tokens=512, decode_tokens=0, prefill_requests=1,
                          decode_requests=0) == (
        "tracekit.step[prefill_tokens=512 decode_tokens=0 prefill_requests=1 decode_requests=0]")


@pytest.mark.parametrize("kwargs", [
    {}, {"prefill_tokens": 0, "decode_tokens": 0}, {"phase": "warmup"},
    {"prefill_tokens": -1}, {"decode_tokens": 1.5}, {"prefill_tokens": True},
    {"phase": "decode", "label": "a]b"},
])
def test_bad_arguments_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        mark.step_text(**kwargs)


def test_step_pushes_and_pops_an_nvtx_range(fake_nvtx: FakeNvtx,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with mark.step(prefill_tokens=8, prefill_requests=1) as text:
        assert fake_nvtx.calls == [("push", text)]
    assert fake_nvtx.calls == [("push", text), ("pop", None)]


def test_range_is_closed_when_the_step_raises(fake_nvtx: FakeNvtx) -> None:
    with pytest.raises(RuntimeError):
        with mark.step(phase="decode"):
            raise RuntimeError("boom")
    assert [call[0] for call in fake_nvtx.calls] == ["push", "pop"]


def test_record_function_when_torch_is_imported(fake_nvtx: FakeNvtx,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, str]] = []

    class RecordFunction:
        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self) -> None:
            events.append(("enter", self.name))

        def __exit__(self, *exc: Any) -> None:
            events.append(("exit", self.name))

    torch = types.ModuleType("torch")
    torch.profiler = types.SimpleNamespace(record_function=RecordFunction)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    with mark.step(decode_tokens=4, decode_requests=4) as text:
        pass
    assert events == [("enter", text), ("exit", text)]
    assert fake_nvtx.calls[0] == ("push", text)


def test_torch_is_never_imported(fake_nvtx: FakeNvtx, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with mark.step(phase="prefill"):
        pass
    assert "torch" not in sys.modules


def test_missing_nvtx_warns_once_and_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mark, "_nvtx", None)
    monkeypatch.setattr(mark, "_nvtx_checked", False)
    monkeypatch.setitem(sys.modules, "nvtx", None)  # makes `import nvtx` raise ImportError
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with pytest.warns(RuntimeWarning, match="nvtx"):
        with mark.step(phase="decode") as text:
            assert text == "tracekit.step[phase=decode]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with mark.step(phase="decode"):
            pass


def test_real_nvtx_package_accepts_the_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nvtx")
    monkeypatch.setattr(mark, "_nvtx", None)
    monkeypatch.setattr(mark, "_nvtx_checked", False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with mark.step(prefill_tokens=3):
        pass


PROGRAM = """
import tracekit.mark as mark
with mark.step(prefill_tokens=512, prefill_requests=1):
    sum(range(10000))
with mark.step(decode_tokens=8, decode_requests=8, label="token 1"):
    sum(range(10000))
"""


def test_real_nsys_records_the_marks_and_the_rules_read_them(tmp_path: Path) -> None:
    """nsys (2022.4 in CI) + nvtx 0.2.10 record tracekit.mark ranges; the stage makes steps."""
    import shutil
    import subprocess

    nsys = shutil.which("nsys")
    if nsys is None:
        pytest.skip("nsys not installed")
    pytest.importorskip("nvtx")
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    completed = subprocess.run(
        [nsys, "profile", "-t", "nvtx", "--sample=none", "--cpuctxsw=none", "-f", "true",
         "-o", str(tmp_path / "run"), sys.executable, str(program)],
        capture_output=True, text=True, timeout=300, check=False)
    captures = sorted(tmp_path.glob("run.*"))
    if completed.returncode != 0 or not captures:
        pytest.skip(f"nsys could not profile here: {completed.stderr[-300:]}")
    from sqlalchemy import text

    from tracekit.errors import TracekitError
    from tracekit.ingest.pipeline import ingest
    from tracekit.phases.stage import attribute_phases
    from tracekit.store.db import open_store

    store = open_store(str(tmp_path / "store.db"))
    try:
        run_id = ingest(store, [captures[-1]], allow_no_kernels=True).run_id
    except TracekitError as exc:  # e.g. no QdstrmImporter to turn a .qdstrm into a report
        pytest.skip(f"capture not importable here: {exc}")
    with store.begin() as connection:
        report = attribute_phases(connection, run_id)
        steps = connection.execute(text(
            "SELECT phase, engine, source, prefill_tokens, decode_tokens, decode_requests "
            "FROM steps WHERE run_id = :r ORDER BY start_ns"), {"r": run_id}).all()
    assert report.method == "marker" and report.engines == ["tracekit"]
    assert [tuple(row) for row in steps] == [
        ("prefill", "tracekit", "marker", 512, None, None),
        ("decode", "tracekit", "marker", None, 8, 8),
    ]
