"""Gather the user's expectations: ``--model``, ``--expect``, ``--gpu``, ``--log``.

A checkpoint config that cannot be read must not stop the analysis of a trace that was read
fine: problems here become warnings (one line each, naming the file) and the run is still
analyzed, just without that expectation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tracekit.errors import TracekitError
from tracekit.expect.checkpoint import Declaration, declaration_from_word, read_declaration
from tracekit.expect.checkpoint.shape import ModelShape, read_model_shape
from tracekit.expect.logs import LogEvidence, scan_log
from tracekit.gpus import GpuSpec, parse_gpu


class ExpectationOptions(Protocol):
    """The fields of the analysis options this module reads."""

    model: Path | None
    expect: str | None
    gpu: str | None
    logs: Sequence[Path]


@dataclass(frozen=True)
class Expectations:
    """Resolved expectations for one analysis."""

    declaration: Declaration | None = None
    #: --gpu, read; what the run's GPU is is decided with the trace's devices by
    #: tracekit.run_gpu
    gpu: GpuSpec | None = None
    log_evidence: tuple[LogEvidence, ...] = ()
    model_label: str | None = None
    #: the model's dimensions from --model's config.json (the layer attribution's shapes)
    shape: ModelShape | None = None
    warnings: tuple[str, ...] = field(default=())
    #: ``--model`` given but unreadable: one line naming the file (and the line of a JSON
    #: error); the findings turn it into an error-severity finding, ``--fail-on`` into exit 2
    model_error: str | None = None


def load_expectations(options: ExpectationOptions) -> Expectations:
    """Read ``--model``/``--expect``/``--gpu``/``--log``; unreadable ones become warnings."""
    warnings: list[str] = []
    declaration = None
    model_label = None
    shape = None
    model_error = None
    if options.model is not None:
        try:
            declaration = read_declaration(Path(options.model))
            model_label = _model_label(Path(options.model))
        except TracekitError as exc:
            model_error = exc.one_line()
            warnings.append(
                f"--model: {model_error}; analyzing without the checkpoint's declaration"
            )
        shape = declaration.shape if declaration is not None and declaration.shape \
            else read_model_shape(Path(options.model))
        if declaration is not None and declaration.not_understood is not None:
            warnings.append(f"--model: declaration not understood ({declaration.method}): "
                            f"{declaration.not_understood}")
    if options.expect:
        try:
            stated = declaration_from_word(options.expect)
        except TracekitError as exc:
            warnings.append(exc.one_line())
        else:
            if declaration is not None and declaration.path != stated.path:
                warnings.append(
                    f"--expect {stated.path} overrides the checkpoint's declaration "
                    f"({declaration.format})"
                )
            declaration = (
                stated if declaration is None or declaration.path != stated.path else declaration
            )
    gpu = None
    if options.gpu:
        try:
            gpu = parse_gpu(options.gpu)
        except TracekitError as exc:
            warnings.append(exc.one_line())
    evidence: list[LogEvidence] = []
    for log in options.logs or ():
        try:
            evidence += scan_log(Path(log))
        except TracekitError as exc:
            warnings.append(f"--log: {exc.one_line()}")
    return Expectations(
        declaration=declaration,
        gpu=gpu,
        log_evidence=tuple(evidence),
        model_label=model_label,
        shape=shape,
        warnings=tuple(warnings),
        model_error=model_error,
    )


def _model_label(path: Path) -> str:
    """The model's name as people say it: the checkpoint folder's name."""
    folder = path if path.is_dir() else path.parent
    return folder.resolve().name or str(path)
