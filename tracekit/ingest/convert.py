"""Turn NVIDIA's binary reports into files a reader reads, with NVIDIA's own tools.

- ``.qdstrm`` → ``QdstrmImporter -i`` → ``.nsys-rep`` → ``nsys export --type sqlite`` →
  ``.sqlite``;
- ``.ncu-rep`` → ``ncu --import … --csv --page raw`` → ``.csv`` (the ingest, and
  ``tracekit audit --backend ncu`` after profiling).
The outputs go to a work folder (the run folder, or a temporary one), never next to the
user's input. Where each tool is looked for is decided here, once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tracekit import progress
from tracekit.errors import InputError, ToolNotFound

NSYS_ENV = "TRACEKIT_NSYS"
IMPORTER_ENV = "TRACEKIT_QDSTRM_IMPORTER"
NCU_ENV = "TRACEKIT_NCU"
EXPORT_TIMEOUT_S = 3600
NCU_IMPORT_TIMEOUT_S = 1800
#: where the CUDA toolkit installs ncu when its bin folder is not on PATH
NCU_FALLBACKS: tuple[Path, ...] = (Path("/usr/local/cuda/bin/ncu"),)


def find_nsys() -> Path | None:
    """The nsys executable: ``$TRACEKIT_NSYS``, then PATH."""
    configured = os.environ.get(NSYS_ENV)
    if configured:
        return Path(configured)
    found = shutil.which("nsys")
    return Path(found) if found else None


def find_ncu() -> Path | None:
    """The ncu executable: ``$TRACEKIT_NCU``, then PATH, then the CUDA toolkit's copy."""
    configured = os.environ.get(NCU_ENV)
    if configured:
        return Path(configured)
    found = shutil.which("ncu")
    if found:
        return Path(found)
    return next((path for path in NCU_FALLBACKS if path.is_file()), None)


def find_qdstrm_importer() -> Path | None:
    """nsys's QdstrmImporter: ``$TRACEKIT_QDSTRM_IMPORTER``, else ``host-linux-x64/`` near nsys.

    The symlink chain is followed one link at a time: on Debian ``/usr/bin/nsys`` →
    ``/usr/lib/nsight-systems/bin/nsys`` → ``…/x86_64-linux-gnu/…/nsys``, and the importer sits
    beside the middle step only (``/usr/lib/nsight-systems/host-linux-x64``).
    """
    configured = os.environ.get(IMPORTER_ENV)
    if configured:
        return Path(configured)
    step = find_nsys()
    for _ in range(16):
        if step is None:
            return None
        for base in (step.parent.parent, step.parent):
            candidate = base / "host-linux-x64" / "QdstrmImporter"
            if candidate.is_file():
                return candidate
        if not step.is_symlink():
            return None
        target = Path(os.readlink(step))
        step = target if target.is_absolute() else step.parent / target
    return None


#: how often a running converter's output is looked at for the progress bar
POLL_S = 0.25


def _run(command: list[str], what: str, source: Path, output: Path | None = None) -> None:
    """Run a converter; while it runs, the bytes it has written to ``output`` so far are the
    progress shown (``tracekit.progress``: nothing unless a person watches)."""
    with tempfile.TemporaryFile("w+") as log, \
            progress.task(f"{what}: {source.name}", unit="bytes") as task:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + EXPORT_TIMEOUT_S
        while True:
            try:
                returncode = process.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    raise InputError(f"{source}: {what} did not finish in {EXPORT_TIMEOUT_S} s"
                                     ) from None
                if output is not None and output.exists():
                    task.update(output.stat().st_size)
        if returncode != 0:
            log.seek(0)
            detail = log.read().strip().splitlines()
            last = detail[-1] if detail else f"exit code {returncode}"
            raise InputError(f"{source}: {what} failed: {last[:300]}")


def nsys_rep_to_sqlite(report: Path, work_dir: Path) -> Path:
    """Export ``report`` with ``nsys export --type sqlite`` into ``work_dir``."""
    nsys = find_nsys()
    if nsys is None:
        raise ToolNotFound(
            f"{report}: reading an .nsys-rep needs nsys, which is not installed",
            hint="install Nsight Systems, or run `nsys export --type sqlite` on a machine "
                 "that has it and pass the .sqlite",
        )
    work_dir.mkdir(parents=True, exist_ok=True)
    output = work_dir / (report.name.removesuffix(".nsys-rep").removesuffix(".qdrep") + ".sqlite")
    _run([str(nsys), "export", "--type", "sqlite", "--force-overwrite", "true",
          "-o", str(output), str(report)], "nsys export", report, output)
    if not output.exists():
        raise InputError(f"{report}: nsys export wrote no SQLite file")
    return output


def qdstrm_to_nsys_rep(stream: Path, work_dir: Path) -> Path:
    """Import a ``.qdstrm`` with QdstrmImporter; the report lands in ``work_dir``."""
    importer = find_qdstrm_importer()
    if importer is None:
        raise ToolNotFound(
            f"{stream}: reading a .qdstrm needs nsys's QdstrmImporter, which was not found",
            hint=f"install Nsight Systems or set {IMPORTER_ENV}",
        )
    work_dir.mkdir(parents=True, exist_ok=True)
    staged = work_dir / stream.name
    if staged.resolve() != stream.resolve():
        shutil.copyfile(stream, staged)
    report = staged.with_suffix(".nsys-rep")
    _run([str(importer), "-i", str(staged)], "QdstrmImporter", stream, report)
    if not report.exists():
        raise InputError(f"{stream}: QdstrmImporter wrote no .nsys-rep")
    if staged.resolve() != stream.resolve():
        staged.unlink()
    return report


def ncu_rep_to_csv(report: Path, work_dir: Path, *, ncu: Path | None = None) -> Path:
    """``ncu --import REPORT --csv --page raw`` into ``work_dir/<name>.csv``.

    ``ncu``: the executable to use (the one that wrote the report), else ``find_ncu()``;
    ToolNotFound without one. The CSV is streamed to its file: a report of many launches
    prints far more than is worth holding in memory.
    """
    ncu = ncu or find_ncu()
    if ncu is None:
        raise ToolNotFound(
            f"{report}: reading an .ncu-rep needs Nsight Compute (ncu), which is not installed",
            hint="install Nsight Compute, or run `ncu --import FILE --csv --page raw > FILE.csv` "
                 "where it is installed and pass the CSV")
    work_dir.mkdir(parents=True, exist_ok=True)
    output = work_dir / (report.name.removesuffix(".ncu-rep") + ".csv")
    try:
        with output.open("w", encoding="utf-8") as sink, \
                progress.task(f"ncu --import: {report.name}"):
            completed = subprocess.run(
                [str(ncu), "--import", str(report), "--csv", "--page", "raw"],
                stdout=sink, stderr=subprocess.PIPE, text=True, timeout=NCU_IMPORT_TIMEOUT_S,
                check=False)
    except subprocess.TimeoutExpired:
        raise InputError(f"{report}: ncu --import did not finish in {NCU_IMPORT_TIMEOUT_S} s"
                         ) from None
    except OSError as exc:
        raise ToolNotFound(f"{report}: cannot run {ncu} ({exc.strerror})") from None
    if completed.returncode != 0 or output.stat().st_size == 0:
        detail = (completed.stderr or "").strip().splitlines()
        last = detail[-1] if detail else (f"exit code {completed.returncode}"
                                          if completed.returncode else "no output")
        raise InputError(f"{report}: ncu --import failed: {last[:300]}",
                         hint="a report opens only with an ncu at least as new as the one "
                              "that wrote it")
    return output
