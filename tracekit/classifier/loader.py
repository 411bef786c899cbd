"""Load rule packs: ``rules/*.toml`` (one rule per file) and the ``_*.toml`` tables they use.

Rules are data so that kernel-name knowledge can be reviewed, tested and extended without
code. The loader is strict (unknown keys, bad regexes and words outside the vocabulary are
errors naming the file and line) because a typo in a rule would otherwise silently turn
every match into ``unknown``.

Built-in rules come from the ``tracekit.rules`` package; user packs (``--rules DIR``, the
``TRACEKIT_RULES`` environment variable, ``os.pathsep``-separated) are read after it, and a
user rule with a built-in rule's id replaces it. Files starting with ``_`` are tables: only
``_paths.toml``, ``_excludes.toml`` (named exclude sets a rule's ``exclude_sets`` lists) and
tables that a rule's ``decode`` names are read, so tables owned by other stages
(``_gpus.toml``, ``_findings.toml`` …) are ignored here.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tracekit.classifier.model import (
    CONFIDENCE,
    LABEL_KEYS,
    OPS,
    PATHS,
    Example,
    ExcludeSet,
    Rule,
    RuleSet,
    Table,
)
from tracekit.classifier.prefilter import KeywordIndex
from tracekit.datafiles import RULES_PACKAGE, DataFile, data_folder, read_toml
from tracekit.errors import RuleFileError
from tracekit.gpus import parse_arch
from tracekit.vocabulary import WIDE_PATHS

ENV_VAR = "TRACEKIT_RULES"
VOCABULARY_FILE = "_paths.toml"
EXCLUDES_FILE = "_excludes.toml"

_RULE_KEYS = (
    "id",
    "description",
    "priority",
    "confidence",
    "references",
    "patterns",
    "exclude",
    "exclude_sets",
    "keywords",
    "decode",
    "requires_arch",
    "needs_full_name",
    "decisive",
    "fallback_over",
    "reason",
    "example",
    *LABEL_KEYS,
)
_EXAMPLE_KEYS = ("name", "match", "note", "arch", *LABEL_KEYS)
_TABLE_KEYS = ("description", "references", "case_insensitive", "entries", "kind", "example")
_ENTRY_KEYS = (*LABEL_KEYS, "type", "note")
_OPERAND_LABELS = ("weights", "activations", "accum")
_EXCLUDES_KEYS = ("description", "set")
_EXCLUDE_SET_KEYS = ("description", "references", "patterns", "examples", "not_examples")


def builtin_dir() -> Path:
    """The directory holding the built-in rules (the installed ``tracekit.rules`` package)."""
    return data_folder(RULES_PACKAGE)


def env_dirs() -> list[Path]:
    """Rule-pack directories named by ``TRACEKIT_RULES``."""
    value = os.environ.get(ENV_VAR, "")
    return [Path(part) for part in value.split(os.pathsep) if part.strip()]


def load_ruleset(extra_dirs: Sequence[Path] = (), *, use_env: bool = True) -> RuleSet:
    """Built-in rules, then ``extra_dirs``, then ``TRACEKIT_RULES`` dirs; later ids replace earlier.

    Raises ``RuleFileError`` naming the file and line of the first problem found.
    """
    dirs = [builtin_dir(), *map(Path, extra_dirs)]
    if use_env:
        dirs.extend(env_dirs())
    rule_files: dict[str, Path] = {}
    table_files: dict[str, list[Path]] = {}
    for directory in dirs:
        if not directory.is_dir():
            raise RuleFileError(f"{directory}: rule directory does not exist")
        for path in sorted(directory.glob("*.toml")):
            if path.name.startswith("_"):
                table_files.setdefault(path.stem[1:], []).append(path)
            else:
                rule_files[path.stem] = path

    vocab_paths = table_files.get(VOCABULARY_FILE[1:-5], [])
    if not vocab_paths:
        raise RuleFileError(f"{VOCABULARY_FILE}: vocabulary file not found in {dirs[0]}")
    operand_types = _load_vocabulary(vocab_paths)
    exclude_sets = _load_exclude_sets(table_files.get(EXCLUDES_FILE[1:-5], []))

    rules = [_load_rule_checked(path, operand_types, exclude_sets)
             for path in rule_files.values()]
    wanted = {table for rule in rules for _, table, _ in rule.decode}
    tables: dict[str, Table] = {}
    for name in sorted(wanted):
        if name not in table_files:
            user = next(r for r in rules if any(t == name for _, t, _ in r.decode))
            raise RuleFileError(
                f"{user.source}: decode names table '{name}' but no file _{name}.toml exists",
                hint=_suggest(name, table_files),
            )
        tables[name] = _load_table(name, table_files[name], operand_types)
    _check_fallbacks(rules)
    rules.sort(key=lambda r: (-r.priority, r.id))
    return RuleSet(
        rules=tuple(rules),
        tables=tables,
        operand_types=operand_types,
        sources=tuple(dirs),
        exclude_sets=exclude_sets,
        index=KeywordIndex.build(rules),
    )


#: longest keyword a rule may give (found by the property suite: 5,000 characters made the
#: keyword index's regex builder recurse past Python's limit)
MAX_KEYWORD = 200


def _load_rule_checked(path: Path, operand_types: Mapping[str, str],
                       exclude_sets: Mapping[str, ExcludeSet]) -> Rule:
    """``_load_rule``, with a value of a type the checks did not foresee (``patterns = 1.0``,
    found by the property suite) reported as a RuleFileError naming the file."""
    try:
        return _load_rule(path, operand_types, exclude_sets)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise RuleFileError(f"{path}: invalid value ({type(exc).__name__}: {exc})",
                            hint="compare with a rule file in tracekit's rules/ folder") from exc


# --- files -----------------------------------------------------------------------------------


def _read(path: Path) -> DataFile:
    return read_toml(path)


def _suggest(word: str, choices: Any) -> str | None:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"did you mean '{close[0]}'?" if close else None


def _check_keys(
    file: DataFile, data: Mapping[str, Any], allowed: Sequence[str], ctx: str
) -> None:
    for key in data:
        if key not in allowed:
            raise RuleFileError(
                f"{file.where(key)}: {ctx}{key} is not a known key",
                hint=_suggest(key, allowed),
            )


#: keys of a ``[paths.<word>]`` entry: the vocabulary only (what each GPU computes is
#: ``rules/_gpus.toml``'s, read by tracekit/gpus.py)
_PATH_KEYS = ("description",)


def _load_vocabulary(paths: list[Path]) -> dict[str, str]:
    """Read ``_paths.toml``: checks it lists exactly the public path words.

    Returns the operand types (word -> the path class it computes in).
    """
    operand_types: dict[str, str] = {}
    for path in paths:
        file = _read(path)
        data = file.data
        listed = data.get("paths", {})
        if path == paths[0] and set(listed) != set(PATHS):
            missing = sorted(set(PATHS) - set(listed))
            extra = sorted(set(listed) - set(PATHS))
            raise RuleFileError(
                f"{path}: [paths] must list exactly the public path words "
                f"(missing {missing}, unexpected {extra})"
            )
        for word, klass in data.get("operand_types", {}).items():
            if klass not in PATHS:
                raise RuleFileError(
                    f"{file.where(word)}: operand type '{word}' has class '{klass}', "
                    "which is not a path word",
                    hint=_suggest(str(klass), PATHS),
                )
            operand_types[word] = klass
        for word, spec in listed.items():
            if not isinstance(spec, dict):
                raise RuleFileError(f"{file.where(f'[paths.{word}]')}: paths.{word} must be "
                                    "a table")
            for key in spec:
                if key in ("nvidia_min_sm", "amd"):
                    raise RuleFileError(
                        f"{file.where(key)}: paths.{word}.{key}: which GPUs compute a path is "
                        "read from rules/_gpus.toml ([arch.*] native, mma_only)",
                        hint="remove the key from your rule pack's _paths.toml")
            _check_keys(file, spec, _PATH_KEYS, f"paths.{word}.")
    return operand_types


def _check_labels(
    file: DataFile, labels: Mapping[str, Any], operand_types: Mapping[str, str], ctx: str
) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in LABEL_KEYS:
        if key not in labels:
            continue
        value = labels[key]
        if not isinstance(value, str):
            raise RuleFileError(f"{file.where(key)}: {ctx}{key} must be a string")
        if key == "op" and value not in OPS:
            raise RuleFileError(
                f"{file.where(value)}: {ctx}op '{value}' is not one of {', '.join(OPS)}",
                hint=_suggest(value, OPS),
            )
        if key == "path" and value not in PATHS:
            raise RuleFileError(
                f"{file.where(value)}: {ctx}path '{value}' is not in {VOCABULARY_FILE}",
                hint=_suggest(value, PATHS),
            )
        if key in ("weights", "activations", "accum") and value not in operand_types:
            raise RuleFileError(
                f"{file.where(value)}: {ctx}{key} '{value}' is not an operand type "
                f"of {VOCABULARY_FILE}",
                hint=_suggest(value, operand_types),
            )
        out[key] = value
    return out


def _regexes(
    file: DataFile, data: Mapping[str, Any], key: str
) -> tuple[re.Pattern[str], ...]:
    raw = data.get(key, [])
    if isinstance(raw, str):
        raw = [raw]
    compiled = []
    for index, pattern in enumerate(raw):
        if not isinstance(pattern, str):
            raise RuleFileError(f"{file.where(key)}: {key}[{index}] must be a string")
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise RuleFileError(
                f"{file.where(pattern)}: {key}[{index}]: bad regex: {exc}"
            ) from exc
    return tuple(compiled)


def _strings(file: DataFile, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    raw = data.get(key, [])
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise RuleFileError(f"{file.where(key)}: {key} must be a list of strings")
    return tuple(raw)


def _load_rule(path: Path, operand_types: Mapping[str, str],
               exclude_sets: Mapping[str, ExcludeSet]) -> Rule:
    file = _read(path)
    data = file.data
    _check_keys(file, data, _RULE_KEYS, "")
    rule_id = data.get("id")
    if rule_id != path.stem:
        raise RuleFileError(
            f"{file.where('id')}: id '{rule_id}' must equal the file name '{path.stem}'"
        )
    for key in ("description", "patterns"):
        if not data.get(key):
            raise RuleFileError(f"{path}: missing required key '{key}'")
    confidence = data.get("confidence", "high")
    if confidence not in CONFIDENCE:
        raise RuleFileError(
            f"{file.where('confidence')}: confidence '{confidence}' is not one of "
            f"{', '.join(CONFIDENCE)}"
        )
    priority = data.get("priority", 50)
    if not isinstance(priority, int):
        raise RuleFileError(f"{file.where('priority')}: priority must be an integer")
    patterns = _regexes(file, data, "patterns")
    labels = _check_labels(file, data, operand_types, "")
    if "op" not in labels:
        raise RuleFileError(f"{path}: missing required key 'op'")
    decode_raw = data.get("decode", {})
    if not isinstance(decode_raw, dict):
        raise RuleFileError(f"{file.where('decode')}: [decode] must be a table")
    groups = {g for p in patterns for g in p.groupindex}
    decode: list[tuple[str, str, str | None]] = []
    for group, spec in decode_raw.items():
        if group not in groups:
            raise RuleFileError(
                f"{file.where(group)}: decode group '{group}' is not a named group "
                "of any pattern",
                hint=_suggest(group, groups),
            )
        # "group = 'table'" merges the entry's labels; "group = {table='t', as='weights'}"
        # puts the entry's ``type`` into that operand label (one table serves A and B);
        # as='operands' merges the labels and puts the type into weights and activations.
        target = None
        if isinstance(spec, dict):
            target = spec.get("as")
            if target not in (*_OPERAND_LABELS, "operands"):
                raise RuleFileError(
                    f"{file.where(group)}: decode.{group}.as must be one of "
                    f"{', '.join(_OPERAND_LABELS)}, operands"
                )
            spec = spec.get("table", "")
        decode.append((group, str(spec).lstrip("_").removesuffix(".toml"), target))
    examples = []
    for index, raw in enumerate(data.get("example", [])):
        _check_keys(file, raw, _EXAMPLE_KEYS, f"example[{index}].")
        if not isinstance(raw.get("name"), str):
            raise RuleFileError(f"{path}: example[{index}] needs a string 'name'")
        expect = _check_labels(file, raw, operand_types, f"example[{index}].")
        examples.append(
            Example(
                name=raw["name"],
                matches=bool(raw.get("match", True)),
                expect=expect,
                note=raw.get("note"),
                arch=raw.get("arch"),
            )
        )
    # A rule whose every pattern ignores case matches keywords against the lower-cased name.
    ignore_case = bool(patterns) and all(p.flags & re.IGNORECASE for p in patterns)
    keywords = _strings(file, data, "keywords")
    if any(not keyword or len(keyword) > MAX_KEYWORD for keyword in keywords):
        raise RuleFileError(f"{file.where('keywords')}: keywords must be non-empty "
                            f"and at most {MAX_KEYWORD} characters (an empty keyword would "
                            "match every name; the keyword index is built recursively)")
    if ignore_case:
        keywords = tuple(k.lower() for k in keywords)
    set_names = _exclude_set_names(file, data, exclude_sets)
    return Rule(
        id=rule_id,
        source=str(path),
        description=" ".join(str(data["description"]).split()),
        priority=priority,
        confidence=confidence,
        references=_strings(file, data, "references"),
        patterns=patterns,
        exclude=_with_sets(_regexes(file, data, "exclude"), set_names, exclude_sets),
        exclude_sets=set_names,
        keywords=keywords,
        ignore_case=ignore_case,
        needs_full_name=_full_name_paths(file, data.get("needs_full_name", False)),
        decisive=_decisive_groups(file, data, patterns),
        fallback_over=(_strings(file, data, "fallback_over")
                       if "fallback_over" in data else None),
        labels=labels,
        decode=tuple(decode),
        requires_arch=_architectures(file, data),
        reason=data.get("reason"),
        examples=tuple(examples),
    )


def _exclude_set_names(file: DataFile, data: Mapping[str, Any],
                       exclude_sets: Mapping[str, ExcludeSet]) -> tuple[str, ...]:
    """``exclude_sets``: names of ``[set.<name>]`` tables of ``_excludes.toml``.

    A misspelt name would silently drop a veto (and a confident wrong answer would come back),
    so it is an error naming the file and line.
    """
    names = _strings(file, data, "exclude_sets")
    for name in names:
        if name not in exclude_sets:
            raise RuleFileError(
                f"{file.where('exclude_sets')}: exclude_sets names set '{name}', which no "
                f"{EXCLUDES_FILE} defines ([set.{name}])", hint=_suggest(name, exclude_sets))
    return names


def _with_sets(own: tuple[re.Pattern[str], ...], names: Sequence[str],
               exclude_sets: Mapping[str, ExcludeSet]) -> tuple[re.Pattern[str], ...]:
    """The rule's own exclude patterns, then each listed set's, each pattern once."""
    patterns = list(own)
    for name in names:
        patterns.extend(p for p in exclude_sets[name].patterns if p not in patterns)
    return tuple(patterns)


def _load_exclude_sets(paths: list[Path]) -> dict[str, ExcludeSet]:
    """Read ``_excludes.toml``: ``[set.<name>]`` tables of shared veto regexes.

    Like a decode table, a rule pack's file of the same name adds sets, and a set of the same
    name replaces the built-in one.
    """
    sets: dict[str, ExcludeSet] = {}
    for path in paths:
        file = _read(path)
        _check_keys(file, file.data, _EXCLUDES_KEYS, "")
        raw_sets = file.data.get("set", {})
        if not isinstance(raw_sets, dict):
            raise RuleFileError(f"{file.where('set')}: set must be a table of [set.<name>] "
                                "tables")
        for name, spec in raw_sets.items():
            if not isinstance(spec, dict):
                raise RuleFileError(f"{file.where_key(['set', name])}: set.{name} must be a "
                                    "table")
            _check_keys(file, spec, _EXCLUDE_SET_KEYS, f"set.{name}.")
            for key in ("description", "references", "patterns"):
                if not spec.get(key):
                    raise RuleFileError(
                        f"{file.where_key(['set', name])}: set.{name} needs '{key}'")
            try:
                patterns = _regexes(file, spec, "patterns")
            except TypeError as exc:  # ``patterns = 1.0``: not a list
                raise RuleFileError(f"{file.where_key(['set', name])}: set.{name}.patterns "
                                    "must be a list of regexes") from exc
            sets[name] = ExcludeSet(
                name=name,
                source=str(path),
                description=" ".join(str(spec["description"]).split()),
                references=_strings(file, spec, "references"),
                patterns=patterns,
                examples=_strings(file, spec, "examples"),
                not_examples=_strings(file, spec, "not_examples"),
            )
    return sets


def _check_fallbacks(rules: Sequence[Rule]) -> None:
    """``fallback_over`` names rules that exist and are not fallbacks themselves.

    A misspelt id would make the fallback silently never answer over that rule.
    """
    by_id = {rule.id: rule for rule in rules}
    for rule in rules:
        for other in rule.fallback_over or ():
            target = by_id.get(other)
            if target is None:
                raise RuleFileError(f"{rule.source}: fallback_over names rule '{other}', "
                                    "which does not exist", hint=_suggest(other, by_id))
            if target.fallback_over is not None:
                raise RuleFileError(f"{rule.source}: fallback_over names '{other}', which "
                                    "is a fallback rule itself")


def _architectures(file: DataFile, data: Mapping[str, Any]) -> tuple[str, ...]:
    """``requires_arch``: architectures in any spelling ``tracekit.gpus.parse_arch`` reads."""
    archs = _strings(file, data, "requires_arch")
    for arch in archs:
        if parse_arch(arch) is None:
            raise RuleFileError(f"{file.where('requires_arch')}: requires_arch '{arch}' is not "
                                "an architecture (sm100, sm_90a, gfx942)")
    return archs


def _decisive_groups(file: DataFile, data: Mapping[str, Any],
                     patterns: Sequence[re.Pattern[str]]) -> tuple[str, ...]:
    """``decisive``: named groups of the rule's patterns whose token decides the answer."""
    groups = _strings(file, data, "decisive")
    named = {g for p in patterns for g in p.groupindex}
    for group in groups:
        if group not in named:
            raise RuleFileError(
                f"{file.where('decisive')}: decisive group '{group}' is not a named group "
                "of any pattern", hint=_suggest(group, named))
    return groups


#: what ``needs_full_name = true`` stands for: the paths a rule can only conclude from the
#: absence of a narrower operand type


def _full_name_paths(file: DataFile, raw: Any) -> tuple[str, ...]:
    """``needs_full_name``: false, true (the 16/32/64-bit paths), or a list of path words."""
    if raw is False or raw is None:
        return ()
    if raw is True:
        return WIDE_PATHS
    if isinstance(raw, list) and all(isinstance(p, str) and p in PATHS for p in raw):
        return tuple(raw)
    raise RuleFileError(
        f"{file.where('needs_full_name')}: needs_full_name must be true, false or a list "
        f"of path words ({', '.join(PATHS)})"
    )


def _load_table(name: str, paths: list[Path], operand_types: Mapping[str, str]) -> Table:
    """Read a table; a later file of the same name (a user pack) adds or replaces entries."""
    entries: dict[str, dict[str, str]] = {}
    case_insensitive = False
    for path in paths:
        file = _read(path)
        data = file.data
        _check_keys(file, data, _TABLE_KEYS, "")
        case_insensitive = bool(data.get("case_insensitive", case_insensitive))
        raw_entries = data.get("entries")
        if not isinstance(raw_entries, dict):
            raise RuleFileError(f"{path}: a table needs an [entries] table")
        for key, value in raw_entries.items():
            if not isinstance(value, dict):
                raise RuleFileError(f"{file.where(key)}: entry '{key}' must be a table")
            _check_keys(file, value, _ENTRY_KEYS, f"entries.{key}.")
            labels = _check_labels(file, value, operand_types, f"entries.{key}.")
            if "type" in value:
                if value["type"] not in operand_types:
                    raise RuleFileError(
                        f"{file.where(key)}: entries.{key}.type '{value['type']}' is not "
                        f"an operand type of {VOCABULARY_FILE}",
                        hint=_suggest(str(value["type"]), operand_types),
                    )
                labels["type"] = value["type"]
            entries[key.lower() if case_insensitive else key] = labels
    return Table(
        name=name, source=str(paths[-1]), entries=entries, case_insensitive=case_insensitive
    )
