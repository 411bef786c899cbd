"""Run the examples every TOML table carries, the way ``semgrep --test`` runs rule fixtures.

Each data file of ``rules/`` and ``parsers/`` states what it means through examples next to the
data; this module knows, per kind of file, how to check them:

========================  =====================================================================
classification rule       rules/<id>.toml ``[[example]]`` (tracekit.classifier.testing)
decode table              rules/_<table>.toml ``[[example]]``: a real kernel name the winning
                          rule decodes through this table, with the labels it must get
vocabulary                rules/_paths.toml ``[[example]]``: an operand pair and the path it gives
exclude sets              rules/_excludes.toml ``[set.*] examples`` (names the set vetoes: no
                          rule listing it matches them) / ``not_examples`` (the set lets through)
truncation                rules/_truncation.toml ``[[printer.example]]``: full name -> printed
phase markers             rules/_phase_markers.toml ``[[marker.match]]`` / ``no_match``
phase heuristics          rules/_phase_heuristics.toml ``examples`` / ``counter_examples``
log patterns              rules/_log_patterns.toml ``examples`` (engine log lines)
kernel paths              rules/_kernel_paths.toml ``[[example]]``: a declared scheme, layer,
                          GPU and engine, and the path and kind expected_path gives
GPUs                      rules/_gpus.toml ``[[name]] examples`` (device names),
                          ``[[kernel_arch]] examples`` / ``not_examples``, ``[model.*]
                          examples`` (device names that resolve to that product alone)
roofline work model       rules/_roofline.toml ``[[op.form]] examples``: recorded types and
                          shapes with the FLOPs and bytes they must give
checkpoints               rules/_checkpoints.toml ``[[example]]``: a config JSON and its path
layer names               rules/_layer_names.toml ``[[layer]] examples``: module names and the
                          layer group the first matching row gives them
layer modules             rules/_layer_modules.toml ``[[module]] examples`` / ``not_examples``:
                          module class names and the role the first matching row gives them
layer markers             rules/_layer_markers.toml ``[[format]] examples`` (range texts and the
                          module path or class read from them), ``[[path]] examples``
layer kernels             rules/_layer_kernels.toml ``[[kernel]] examples`` / ``not_examples``:
                          kernel names, classified, and the layer group their family gives
layer shapes              rules/_layer_shapes.toml ``[[example]]``: a config's dimensions, a
                          weight N × K and the layer group (or ambiguity) it gives
convolutions              rules/_convolutions.toml ``[[family]] examples`` / ``not_examples``:
                          kernel names that are (or are not) convolutions run as GEMMs
findings                  rules/_findings.toml ``[[rule.example]]``: fields and the message
parser specs              parsers/<id>.toml ``[[example]]``: a file's first bytes (and SQLite
                          tables) that this spec, and no earlier one, must claim
========================  =====================================================================

A table without examples is reported as untested (``tracekit rules test --strict`` fails on it).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.datafiles import PARSERS_PACKAGE, RULES_PACKAGE, data_folder, read_toml
from tracekit.errors import TracekitError


@dataclass
class TableResult:
    """The examples of one data file: how many ran, and what failed."""

    file: str
    kind: str
    examples: int = 0
    failures: list[str] = field(default_factory=list)
    #: examples that failed (one example can fail two checks: the rule alone and the ruleset)
    failed: int = -1

    @property
    def failed_examples(self) -> int:
        return self.failed if self.failed >= 0 else len(self.failures)

    @property
    def untested(self) -> bool:
        return self.examples == 0


def _read(path: Path) -> dict[str, Any]:
    return read_toml(path).data


# --- checkers, one per kind of file --------------------------------------------------------------


def _rules(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.classifier.testing import check_rule_examples

    count, failures = check_rule_examples(ruleset, {path.stem})
    result.examples += count
    result.failures.extend(str(f) for f in failures)
    result.failed = len({(f.rule, f.index) for f in failures})


def _decode_table(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.classifier import classify_name
    from tracekit.classifier.engine import best_match
    from tracekit.classifier.names import prepare

    table = path.stem[1:]
    users = {rule.id for rule in ruleset.rules if any(t == table for _, t, _ in rule.decode)}
    fallback_only = bool(users) and all(
        rule.fallback_over is not None for rule in ruleset.rules if rule.id in users)
    for index, raw in enumerate(_read(path).get("example", [])):
        result.examples += 1
        name = raw["name"]
        if fallback_only:
            _fallback_table_example(result, index, raw, ruleset, table, users)
            continue
        match = best_match(prepare(name).text, ruleset)
        if match is None or match.rule.id not in users:
            winner = match.rule.id if match else "no rule"
            result.failures.append(f"example[{index}] {name[:90]!r}: {winner} wins, "
                                   f"not a rule decoding through _{table}.toml")
            continue
        answer = classify_name(name, ruleset, arch=raw.get("arch"))
        for key, want in raw.items():
            if key in ("name", "note", "arch"):
                continue
            got = getattr(answer, key, None)
            if got != want:
                result.failures.append(f"example[{index}] {name[:90]!r}: {key} is {got!r}, "
                                       f"expected {want!r}")


def _fallback_table_example(result: TableResult, index: int, raw: dict[str, Any],
                            ruleset: Any, table: str, users: set[str]) -> None:
    """A table only fallback rules read: its example is checked against their own reading.

    A fallback rule stands back wherever a family rule answers, so on every name the corpus
    holds a family rule may win; the example then shows what the fallback reads through this
    table (the first user rule that matches), and the fallback rule's own examples check the
    whole rule set's answer.
    """
    from tracekit.classifier.engine import evaluate, rule_matches
    from tracekit.classifier.names import prepare

    name = raw["name"]
    text = prepare(name).text
    for rule in ruleset.rules:
        found = rule_matches(rule, text) if rule.id in users else None
        if found is None:
            continue
        match = evaluate(rule, found, ruleset)
        labels = {**match.labels, "path": match.path}
        for key, want in raw.items():
            if key not in ("name", "note", "arch") and labels.get(key) != want:
                result.failures.append(f"example[{index}] {name[:90]!r}: {key} is "
                                       f"{labels.get(key)!r} by {rule.id}, expected {want!r}")
        return
    result.failures.append(f"example[{index}] {name[:90]!r}: none of the fallback rules "
                           f"decoding through _{table}.toml ({', '.join(sorted(users))}) matches")


def _vocabulary(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.classifier.engine import derive_path

    for index, raw in enumerate(_read(path).get("example", [])):
        result.examples += 1
        got = derive_path(raw.get("weights"), raw.get("activations"), ruleset.operand_types)
        if (got or "unknown") != raw["path"]:
            result.failures.append(f"example[{index}] weights={raw.get('weights')} activations="
                                   f"{raw.get('activations')}: path {got!r}, expected "
                                   f"{raw['path']!r}")


def _exclude_sets(result: TableResult, path: Path, ruleset: Any) -> None:
    """Each set's examples are vetoed by one of its patterns and matched by no rule that lists
    the set; its not_examples by none of its patterns. Sets a later file replaced are skipped."""
    from tracekit.classifier.engine import rule_matches
    from tracekit.classifier.names import prepare

    for name, spec in ruleset.exclude_sets.items():
        if Path(spec.source) != path:
            continue
        users = [rule for rule in ruleset.rules if name in rule.exclude_sets]
        for example in spec.examples:
            result.examples += 1
            text = prepare(example).text
            if not any(pattern.search(text) for pattern in spec.patterns):
                result.failures.append(f"set {name}: {example[:80]!r} is not vetoed")
            for rule in users:
                if rule_matches(rule, text) is not None:
                    result.failures.append(f"set {name}: {example[:80]!r} still matches "
                                           f"{rule.id}")
        for example in spec.not_examples:
            result.examples += 1
            if any(pattern.search(prepare(example).text) for pattern in spec.patterns):
                result.failures.append(f"set {name}: {example[:80]!r} must not be vetoed")


def _truncation(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.classifier.truncation import parse_printers

    for printer in parse_printers(_read(path), str(path)):
        for full, printed in printer.examples:
            result.examples += 1
            if printer.cut(full) != printed:
                result.failures.append(f"{printer.id}: {full[:60]!r} prints as "
                                       f"{printer.cut(full)!r}, expected {printed!r}")


def _phase_markers(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.phases.markers import check_marker_examples, parse_marker_file

    markers = parse_marker_file(path.read_text(encoding="utf-8"), str(path))
    result.examples += sum(len(m.matches) + len(m.no_match) for m in markers.markers)
    result.failures.extend(check_marker_examples(markers))


def _phase_heuristics(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.phases.heuristics import load_signals

    signals = load_signals()
    for signal in signals.signals:
        for example in signal.examples:
            result.examples += 1
            found = signals.match(example)
            if found is None or found.id != signal.id:
                result.failures.append(f"{signal.id}: {example[:80]!r} matched by "
                                       f"{found.id if found else None}")
        for example in signal.counter_examples:
            result.examples += 1
            found = signals.match(example)
            if found is not None and found.id == signal.id:
                result.failures.append(f"{signal.id}: {example[:80]!r} must not match")


def _log_patterns(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.expect.logs import match_line

    for row in _read(path).get("pattern", []):
        for example in row.get("examples", []):
            result.examples += 1
            evidence = match_line(example, 1)
            if evidence is None or evidence.rule != row["id"]:
                got = evidence.rule if evidence else None
                result.failures.append(f"{row['id']}: {example[:80]!r} matched by {got}")


def _kernel_paths(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.expect.kernel_paths import layer_scope, scheme_from_example, scheme_path

    for index, raw in enumerate(_read(path).get("example", [])):
        result.examples += 1
        got = scheme_path(scheme_from_example(raw), layer_scope(raw["layer"]), raw["arch"],
                          raw.get("engine"))
        wanted = (raw["path"], raw["kind"], frozenset(raw.get("better", got.better)))
        if (got.path, got.kind, got.better) != wanted:
            result.failures.append(
                f"example[{index}] {raw.get('weights')}/{raw.get('activations')} "
                f"{raw['layer']} on {raw['arch']} in {raw.get('engine')}: {got.path} "
                f"({got.kind}, better {sorted(got.better)}), expected {raw['path']} "
                f"({raw['kind']}, better {sorted(wanted[2])})")


def _gpus(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.gpus import arch_from_gpu_name, kernel_archs

    data = _read(path)
    for row in data.get("name", []):
        for example in row.get("examples", []):
            result.examples += 1
            got = arch_from_gpu_name(example)
            if got != row["arch"]:
                result.failures.append(f"[[name]] {row['regex']}: {example!r} gives {got}, "
                                       f"expected {row['arch']}")
    for row in data.get("kernel_arch", []):
        for example in row.get("examples", []):
            result.examples += 1
            if not kernel_archs(example):
                result.failures.append(f"[[kernel_arch]] {row['id']}: {example!r} gives no arch")
        for example in row.get("not_examples", []):
            result.examples += 1
            if kernel_archs(example):
                result.failures.append(f"[[kernel_arch]] {row['id']}: {example!r} must give none")
    _gpu_models(result, data)


def _gpu_models(result: TableResult, data: dict[str, Any]) -> None:
    from tracekit.gpus import match_gpu_model

    for key, row in data.get("model", {}).items():
        for example in row.get("examples", []):
            result.examples += 1
            found = match_gpu_model(example, row["arch"])
            if found.model is None or found.model.key != key:
                got = found.model.key if found.model else found.reason
                result.failures.append(f"[model.{key}]: {example!r} gives {got}")


def _roofline(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.roofline.work import Work, op_work

    for row in _read(path).get("op", []):
        for form in row.get("form", []):
            for example in form.get("examples", []):
                result.examples += 1
                got = op_work(row["name"], json.dumps(example["types"]),
                              json.dumps(example["dims"]))
                if not isinstance(got, Work):
                    result.failures.append(f"{row['name']}: {example['dims']}: {got.reason}")
                elif (got.flops, got.bytes) != (example["flops"], example["bytes"]):
                    result.failures.append(f"{row['name']}: {example['dims']}: {got.flops} "
                                           f"FLOPs and {got.bytes} bytes, expected "
                                           f"{example['flops']} and {example['bytes']}")


def _checkpoints(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.expect.checkpoint import read_declaration

    for index, raw in enumerate(_read(path).get("example", [])):
        result.examples += 1
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / raw.get("file", "config.json")
            config.write_text(json.dumps(json.loads(raw["config"])), encoding="utf-8")
            try:
                declaration = read_declaration(config)
            except TracekitError as exc:
                result.failures.append(f"example[{index}]: {exc.one_line()}")
                continue
        for key in ("path", "scheme", "quant"):
            if key in raw and getattr(declaration, key) != raw[key]:
                result.failures.append(f"example[{index}]: {key} is "
                                       f"{getattr(declaration, key)!r}, expected {raw[key]!r}")


def _layer_names(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.expect.checkpoint.layers import module_layer

    for row in _read(path).get("layer", []):
        for example in row.get("examples", []):
            result.examples += 1
            got = module_layer(example)
            if got != row["layer"]:
                result.failures.append(f"{example!r}: maps to {got}, expected {row['layer']}")


def _convolutions(result: TableResult, path: Path, ruleset: Any) -> None:
    import re

    for row in _read(path).get("family", []):
        regex = re.compile(row["regex"])
        for example in row.get("examples", []):
            result.examples += 1
            if not regex.search(example):
                result.failures.append(f"{row['family']}: does not match {example!r}")
        for example in row.get("not_examples", []):
            result.examples += 1
            if regex.search(example):
                result.failures.append(f"{row['family']}: must not match {example!r}")


def _layer_table(module: str) -> Callable[[TableResult, Path, Any], None]:
    """A checker that runs ``tracekit.layers.<module>.check_examples``."""

    def check(result: TableResult, path: Path, ruleset: Any) -> None:
        import importlib

        count, failures = importlib.import_module(f"tracekit.layers.{module}").check_examples()
        result.examples += count
        result.failures.extend(failures)

    return check


def _findings(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.findings.rules import load_rules

    rules = load_rules()
    for row in _read(path).get("rule", []):
        rule = rules.rules[row["id"]]
        for index, example in enumerate(row.get("example", [])):
            result.examples += 1
            fields = example.get("fields", {})
            missing = set(row.get("fields", [])) - set(fields)
            if missing:
                result.failures.append(f"{row['id']} example[{index}]: no value for "
                                       f"{sorted(missing)}")
                continue
            try:
                message = rule.render(**fields)
            except TracekitError as exc:
                result.failures.append(f"{row['id']} example[{index}]: {exc.one_line()}")
                continue
            if message != example["message"]:
                result.failures.append(f"{row['id']} example[{index}]: renders {message!r}")


def _parser(result: TableResult, path: Path, ruleset: Any) -> None:
    from tracekit.ingest.detect import Sniff, matches
    from tracekit.ingest.spec import builtin_specs

    spec_id = _read(path)["id"]
    specs = builtin_specs()
    for index, raw in enumerate(_read(path).get("example", [])):
        result.examples += 1
        head = raw["head"].encode("utf-8")
        tables = raw.get("sqlite_tables")
        sniffed = Sniff(Path(raw.get("file", "trace")), head, head, bool(raw.get("gzip")),
                        frozenset(tables) if tables is not None else None)
        first = next((spec.id for spec in specs if matches(spec, sniffed)), None)
        wanted = raw.get("match", True)
        if wanted and first != spec_id:
            result.failures.append(f"example[{index}] {raw.get('file')}: claimed by {first}")
        if not wanted and first == spec_id:
            result.failures.append(f"example[{index}] {raw.get('file')}: must not be claimed")


#: table file name -> (kind, checker); rule files and other decode tables are found by shape
_KNOWN: dict[str, tuple[str, Callable[[TableResult, Path, Any], None]]] = {
    "_paths.toml": ("vocabulary", _vocabulary),
    "_excludes.toml": ("exclude sets", _exclude_sets),
    "_truncation.toml": ("truncation", _truncation),
    "_phase_markers.toml": ("phase markers", _phase_markers),
    "_phase_heuristics.toml": ("phase heuristics", _phase_heuristics),
    "_log_patterns.toml": ("log patterns", _log_patterns),
    "_kernel_paths.toml": ("kernel paths", _kernel_paths),
    "_gpus.toml": ("GPUs", _gpus),
    "_checkpoints.toml": ("checkpoints", _checkpoints),
    "_layer_names.toml": ("layer names", _layer_names),
    "_layer_modules.toml": ("layer modules", _layer_table("modules")),
    "_layer_markers.toml": ("layer markers", _layer_table("markers")),
    "_layer_kernels.toml": ("layer kernels", _layer_table("kernels")),
    "_layer_shapes.toml": ("layer shapes", _layer_table("shapes")),
    "_convolutions.toml": ("convolutions", _convolutions),
    "_findings.toml": ("findings", _findings),
    "_roofline.toml": ("roofline work model", _roofline),
}


def builtin_files() -> list[Path]:
    """Every data file shipped with tracekit: rules/*.toml and parsers/*.toml."""
    rules = data_folder(RULES_PACKAGE)
    parsers = data_folder(PARSERS_PACKAGE)
    return sorted(rules.glob("*.toml")) + sorted(parsers.glob("*.toml"))


def check_files(files: Iterable[Path], ruleset: Any) -> list[TableResult]:
    """Run the examples of each file; one result per file, in the order given."""
    results = []
    checker: Callable[[TableResult, Path, Any], None]
    for path in files:
        if path.parent.name == "parsers" or path.parent == data_folder(PARSERS_PACKAGE):
            kind, checker = "parser spec", _parser
        elif not path.name.startswith("_"):
            kind, checker = "rule", _rules
        elif path.name in _KNOWN:
            kind, checker = _KNOWN[path.name]
        else:
            kind, checker = "decode table", _decode_table
        result = TableResult(file=f"{path.parent.name}/{path.name}", kind=kind)
        try:
            checker(result, path, ruleset)
        except (TracekitError, KeyError, ValueError, TypeError) as exc:
            result.examples = max(result.examples, 1)
            result.failures.append(f"cannot run the examples: {type(exc).__name__}: {exc}")
        results.append(result)
    return results
