"""Parser specs (``parsers/*.toml``) are validated when they load: a missing, misspelled or
mistyped key is a RuleFileError naming the spec file and line, never a KeyError in a reader."""

from __future__ import annotations

import re

import pytest

from tracekit.datafiles import PARSERS_PACKAGE, builtin_file, builtin_names, parse_toml
from tracekit.errors import RuleFileError
from tracekit.ingest.spec import (
    MAPPINGS,
    KinetoMapping,
    NcuCsvMapping,
    NsysSqliteMapping,
    builtin_specs,
    parse_specs,
    spec_by_id,
)


def shipped(name: str) -> str:
    return builtin_file(name, PARSERS_PACKAGE).text


def load(**texts: str):  # type: ignore[no-untyped-def]
    """Specs from texts keyed by file stem, plus every shipped spec not replaced."""
    files = {name.removesuffix(".toml"): builtin_file(name, PARSERS_PACKAGE)
             for name in builtin_names(PARSERS_PACKAGE)}
    for stem, text in texts.items():
        files[stem] = parse_toml(text, f"parsers/{stem}.toml")
    return parse_specs(list(files.values()))


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_every_shipped_spec_validates_against_its_reader() -> None:
    specs = {spec.id: spec for spec in builtin_specs()}
    assert set(specs) == {name.removesuffix(".toml") for name in builtin_names(PARSERS_PACKAGE)}
    for spec in specs.values():
        assert isinstance(spec.mapping, MAPPINGS[spec.reader]), spec.id
    assert isinstance(specs["nsys-sqlite"].mapping, NsysSqliteMapping)
    assert specs["nsys-sqlite"].mapping.tables.kernel == "CUPTI_ACTIVITY_KIND_KERNEL"


def test_extends_gives_the_other_specs_tables() -> None:
    """The Kineto event array and the .ncu-rep read with the tables of the spec they extend:
    said in the spec data, not by an id hard-coded in a reader."""
    assert isinstance(spec_by_id("kineto-json-list").mapping, KinetoMapping)
    assert spec_by_id("kineto-json-list").mapping == spec_by_id("kineto-json").mapping
    assert isinstance(spec_by_id("ncu-rep").mapping, NcuCsvMapping)
    assert spec_by_id("ncu-rep").mapping == spec_by_id("ncu-csv").mapping
    assert 'extends = "kineto-json"' in shipped("kineto-json-list.toml")


def test_a_missing_key_names_the_file_and_the_table() -> None:
    text = shipped("nsys-sqlite.toml")
    broken = re.sub(r"(?m)^product_version_key = .*\n", "", text)
    with pytest.raises(RuleFileError) as caught:
        load(**{"nsys-sqlite": broken})
    message = caught.value.message
    assert message.startswith(f"parsers/nsys-sqlite.toml:{line_of(broken, '[metadata]')}:")
    assert "product_version_key" in message


def test_a_misspelled_key_names_its_line() -> None:
    text = shipped("ncu-csv.toml")
    broken = text.replace("[launch]\n", "[launch]\nduraton = [\"gpu__time_duration.sum\"]\n")
    with pytest.raises(RuleFileError) as caught:
        load(**{"ncu-csv": broken})
    assert caught.value.message.startswith(
        f"parsers/ncu-csv.toml:{line_of(broken, 'duraton')}:")
    assert "duraton" in caught.value.message


def test_a_missing_role_of_a_reader_is_found_when_the_spec_loads() -> None:
    text = shipped("kineto-json.toml")
    broken = re.sub(r"(?m)^cpu_op = .*\n", "", text)
    with pytest.raises(RuleFileError, match=r"kineto-json\.toml:\d+: .*cpu_op"):
        load(**{"kineto-json": broken})


def test_a_mistyped_value_and_a_bad_header_are_errors() -> None:
    text = shipped("cupti-jsonl.toml")
    with pytest.raises(RuleFileError, match=r"cupti-jsonl\.toml:\d+: .*int"):
        load(**{"cupti-jsonl": text.replace("priority = 10", 'priority = "high"')})
    with pytest.raises(RuleFileError, match=r"cupti-jsonl\.toml:\d+: reader 'cupti_json'"):
        load(**{"cupti-jsonl": text.replace('reader = "cupti_jsonl"', 'reader = "cupti_json"')})
    with pytest.raises(RuleFileError, match="schema 2"):
        load(**{"cupti-jsonl": text.replace("schema = 1", "schema = 2")})
    with pytest.raises(RuleFileError, match="also the id of"):
        load(**{"cupti-copy": text})


def test_extends_must_name_a_spec_of_the_same_reader() -> None:
    text = shipped("kineto-json-list.toml")
    with pytest.raises(RuleFileError, match=r"kineto-json-list\.toml:\d+: extends 'kineto'"):
        load(**{"kineto-json-list": text.replace('"kineto-json"\n', '"kineto"\n', 1)})
    with pytest.raises(RuleFileError, match="whose reader 'ncu_csv'"):
        load(**{"kineto-json-list": text.replace('extends = "kineto-json"',
                                                 'extends = "ncu-csv"')})
    without = text.replace('extends = "kineto-json"\n', "")
    with pytest.raises(RuleFileError, match=r"kineto-json-list\.toml: .*categories"):
        load(**{"kineto-json-list": without})
