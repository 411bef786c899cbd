"""Files read in parallel: worker processes, one scratch store each, parts that describe
their file; the same rows as a single-file ingest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.ingest.test_merge import START_UTC_NS, nsys_rank
from tracekit.errors import InputError
from tracekit.ingest.parts import MAX_WORKERS, read_parts, worker_count
from tracekit.ingest.pipeline import ingest_file


def test_worker_count_is_the_cores_at_most_one_per_file_and_the_attach_limit():
    assert worker_count(None, 1) == 1
    assert worker_count(3, 2) == 2
    assert worker_count(64, 64) == MAX_WORKERS
    assert worker_count(None, 64) == min(os.cpu_count() or 1, MAX_WORKERS)


@pytest.mark.parametrize("jobs", [1, 2])
def test_parts_describe_their_file(tmp_path: Path, jobs: int) -> None:
    paths = [nsys_rank(tmp_path / f"rank{r}.sqlite", r, host="node7") for r in range(3)]
    with read_parts(paths, ingest_file, jobs=jobs) as parts:
        assert [part.index for part in parts] == [0, 1, 2]
        assert [part.path for part in parts] == paths
        scratches = {part.scratch for part in parts}
        assert len(scratches) <= jobs and all(path.is_file() for path in scratches)
        for r, part in enumerate(parts):
            assert part.identity.host == "node7"
            assert part.identity.gpus == {"NVIDIA H100 80GB HBM3"}
            assert part.clock_base_ns == START_UTC_NS
            assert part.identity.start_ns is not None and part.identity.start_ns > START_UTC_NS
            assert part.counts["kernels"] == sum(use.kernels for use in part.usage) == 3 * (
                4 + r + 1)
            assert {use.device for use in part.usage} == {r}
            assert len(part.sha256) == 64
    assert not any(path.exists() for path in scratches)  # the scratch goes with the block


def test_a_worker_error_is_the_files_one_line(tmp_path: Path) -> None:
    good = nsys_rank(tmp_path / "rank0.sqlite", 0)
    bad = tmp_path / "rank1.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    with pytest.raises(InputError, match="rank1.sqlite"), \
            read_parts([good, bad], ingest_file, jobs=2):
        pass


def test_workers_never_run_the_callers_main_again(tmp_path: Path) -> None:
    """Python read from stdin (or a script without a main guard) analyzing a folder with
    two workers: the workers start from the caller's state, they do not import its main."""
    import subprocess
    import sys

    folder = tmp_path / "job"
    folder.mkdir()
    for r in range(2):
        nsys_rank(folder / f"rank{r}.sqlite", r)
    script = (f"import tracekit\nprint('MAIN RAN')\n"
              f"run = tracekit.analyze({str(folder)!r}, store={str(tmp_path / 's.db')!r}, "
              "jobs=2)\nprint(len(run.ranks()))\n")
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["MAIN", "RAN", "2"]
