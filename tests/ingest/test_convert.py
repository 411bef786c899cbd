"""One place finds ncu and runs ``ncu --import``: the ingest of an ``.ncu-rep`` and
``tracekit audit --backend ncu`` use the same search and the same conversion.

The ncu here is a stand-in shell script (Nsight Compute is not installed on CI machines);
it checks the arguments it is given the way the real one would need them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.errors import InputError, ToolNotFound
from tracekit.ingest import convert
from tracekit.ingest.convert import find_ncu, ncu_rep_to_csv

RAW_CSV = '"ID","Kernel Name","gpu__time_duration.sum"\n"0","gemm","1000"\n'


def fake_ncu(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "ncu"
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(0o755)
    return tool


@pytest.fixture
def no_ncu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TRACEKIT_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(convert, "NCU_FALLBACKS", ())


@pytest.mark.usefixtures("no_ncu")
def test_find_ncu_looks_in_the_environment_then_path_then_the_cuda_toolkit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_ncu() is None
    toolkit = fake_ncu(tmp_path / "cuda" / "bin", "exit 0")
    monkeypatch.setattr(convert, "NCU_FALLBACKS", (tmp_path / "missing" / "ncu", toolkit))
    assert find_ncu() == toolkit
    on_path = fake_ncu(tmp_path / "bin", "exit 0")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_ncu() == on_path
    monkeypatch.setenv("TRACEKIT_NCU", str(tmp_path / "chosen" / "ncu"))
    assert find_ncu() == tmp_path / "chosen" / "ncu"


@pytest.mark.usefixtures("no_ncu")
def test_import_without_ncu_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolNotFound, match="needs Nsight Compute"):
        ncu_rep_to_csv(tmp_path / "r.ncu-rep", tmp_path)


def test_import_streams_the_raw_page_into_the_work_folder(tmp_path: Path) -> None:
    source = tmp_path / "page.csv"
    source.write_text(RAW_CSV)
    ncu = fake_ncu(tmp_path / "bin", '[ "$1" = "--import" ] && [ "$3" = "--csv" ] && '
                   f'[ "$4" = "--page" ] && [ "$5" = "raw" ] || exit 3\ncat "{source}"')
    report = tmp_path / "run" / "ncu.ncu-rep"
    report.parent.mkdir()
    report.write_bytes(b"\x00report")
    output = ncu_rep_to_csv(report, report.parent, ncu=ncu)
    assert output == report.parent / "ncu.csv"
    assert output.read_text() == RAW_CSV


@pytest.mark.parametrize(("body", "words"), [
    ("echo 'ERROR: report version 9 is newer' >&2; exit 1", "report version 9 is newer"),
    ("exit 0", "no output"),
    ("exit 7", "exit code 7"),
])
def test_a_failed_import_is_one_line_naming_the_report(tmp_path: Path, body: str,
                                                       words: str) -> None:
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"\x00")
    with pytest.raises(InputError) as raised:
        ncu_rep_to_csv(report, tmp_path / "work", ncu=fake_ncu(tmp_path / "bin", body))
    line = raised.value.one_line()
    assert line.startswith(f"{report}: ncu --import failed: ") and words in line, line
    assert "\n" not in line
