"""``tracekit expect``: before a run, what each layer group declares and what an engine can
launch for it on a GPU — "what quantization format has optimized kernels on my target engine?"

The answer is :func:`tracekit.expect.kernel_paths.expected_path`'s, the one the per-layer
verdict compares a trace with; the engines' choices are the cited rows of
``rules/_kernel_paths.toml``.
"""

from __future__ import annotations

from pathlib import Path

import click

from tracekit.cli.common import print_json
from tracekit.errors import ConfigError
from tracekit.expect.checkpoint import read_declaration
from tracekit.expect.checkpoint.shape import read_model_shape
from tracekit.expect.kernel_paths import ENGINE_NAMES, ENGINES, ExpectedPath
from tracekit.expect.matrix import LayerExpectation, cell, expected_dict, layer_expectations
from tracekit.gpus import GpuSpec, arch_info, parse_gpu, short_gpu_name

_STANDARD_CONFIGS = {"config.json", "hf_quant_config.json", "quantization_config.json",
                     "quantize_config.json", "quant_config.json"}
_KIND_WORDS = {
    "native": "native",
    "by_design": "as declared (by design)",
    "hardware_fallback": "hardware fallback: the GPU has no instruction for the declared math",
    "engine_fallback": "engine fallback: the GPU could, this engine's default kernel does not",
    "unsupported": "unsupported: the engine refuses it here",
    "unknown": "unknown",
}


@click.command("expect")
@click.option("--model", "model", metavar="DIR",
              help="Checkpoint folder or config file (config.json, hf_quant_config.json, .gguf).")
@click.option("--gpu", "gpu", metavar="NAME",
              help="Target GPU: a product name (H100, RTX 5090, MI300X) or an architecture "
                   "(sm90, 9.0, gfx942).")
@click.option("--engine", "engine", metavar="ENGINE",
              help=f"One engine ({', '.join(ENGINES)}); default: one column per engine.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def expect(model: str | None, gpu: str | None, engine: str | None, as_json: bool) -> None:
    """Print, per layer group, what the checkpoint declares and which kernel path each engine
    can legally launch for it on the GPU: path, kind, kernel family, better alternatives and
    the engine source that says so. Nothing is run."""
    if not model:
        raise ConfigError("--model DIR is required", hint="the checkpoint folder or its config")
    if not gpu:
        raise ConfigError("--gpu NAME is required", hint="a GPU name (H100) or an arch (sm90)")
    if engine is not None and engine.lower() not in ENGINES:
        raise ConfigError(f"--engine {engine!r} is not an engine tracekit knows",
                          hint="use one of " + ", ".join(ENGINES))
    path = Path(model)
    if not path.exists():
        raise ConfigError(f"--model {model}: no such file or folder")
    spec = parse_gpu(gpu)
    declaration = read_declaration(path)
    shape = read_model_shape(path)
    engines: list[str | None] = [engine.lower()] if engine else list(ENGINES)
    rows = layer_expectations(declaration, shape, spec.arch, engines)
    label = _model_name(path)
    if as_json:
        print_json({
            "model": {"name": label, "source": declaration.source, "format": declaration.format,
                      "method": declaration.method, "label": declaration.label},
            "gpu": {"name": spec.name, "arch": spec.arch,
                    "family": (info.family if (info := arch_info(spec.arch)) else None)},
            "engines": engines,
            "layers": [row.as_dict() for row in rows],
        })
        return
    click.echo(f"{label}: {declaration.format} on {_gpu_words(spec)}")
    click.echo("")
    if engine:
        _one_engine(rows, engine.lower())
    else:
        _engine_columns(rows)


def _model_name(path: Path) -> str:
    """The model as people name it: its folder, or the file when it is no standard config."""
    resolved = path.resolve()
    if resolved.is_dir() or resolved.name in _STANDARD_CONFIGS:
        folder = resolved if resolved.is_dir() else resolved.parent
        return folder.name or str(path)
    return resolved.name


def _gpu_words(spec: GpuSpec) -> str:
    info = arch_info(spec.arch)
    family = f", {info.family}" if info and info.family else ""
    if spec.name:
        return f"the {short_gpu_name(spec.name)} ({spec.arch}{family})"
    return f"{spec.arch}{family}"


def _declared(row: LayerExpectation) -> str:
    declared = row.declared
    if declared.scheme is not None:
        return f"{declared.scheme.scheme} {declared.scheme.quant}"
    if declared.status == "mixed":
        return "mixed: " + " + ".join(f"{s.scheme} {s.quant}" for s in declared.schemes)
    return "16-bit (excluded)" if declared.status == "excluded" else "16-bit"


def _engine_columns(rows: list[LayerExpectation]) -> None:
    header = ["layer group", "declared", *(ENGINE_NAMES[e] for e in ENGINES)]
    table = [header] + [[row.layer, _declared(row), *(cell(row.expected[e]) for e in ENGINES)]
                        for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        click.echo("  ".join(text.ljust(widths[i]) for i, text in enumerate(line)).rstrip())
    click.echo("")
    click.echo("(hw) hardware fallback · (engine) the engine's default is lower than the GPU "
               "could do · +path a better path the engine may choose · no: unsupported · ?: "
               "unknown")
    for row in rows:
        if row.declared.scheme is None:
            continue
        click.echo("")
        click.echo(f"{row.layer} ({_declared(row)}):")
        for engine in ENGINES:
            click.echo(f"  {ENGINE_NAMES[engine]}: {_sentence(row.expected[engine])}")


def _one_engine(rows: list[LayerExpectation], engine: str) -> None:
    for row in rows:
        answer = row.expected[engine]
        click.echo(f"{row.layer}: declared {_declared(row)} ({row.declared.reason})")
        click.echo(f"  {ENGINE_NAMES[engine]}: {_sentence(answer)}")
        if answer.cite:
            click.echo(f"  source: {answer.cite}")
        click.echo("")


def _sentence(answer: ExpectedPath) -> str:
    data = expected_dict(answer)
    words = _KIND_WORDS.get(answer.kind, answer.kind)
    text = words if answer.path == "unknown" else f"{answer.path} — {words}"
    if answer.kernels:
        text += f"; {answer.kernels}"
    if data["better"]:
        text += f"; may also run {', '.join(data['better'])}"
    if answer.versions:
        text += f" [{answer.versions}]"
    if answer.reason and answer.kind != "by_design":
        text += f". {answer.reason}"
    return text
