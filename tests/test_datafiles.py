"""The one TOML loading layer (``tracekit/datafiles.py``): every data file is parsed there, and
a broken file is one error naming the file and the line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import paths
from tracekit.capture.workload import load_spec
from tracekit.classifier.loader import load_ruleset
from tracekit.datafiles import builtin_file, parse_toml, read_toml
from tracekit.errors import InputError, RuleFileError
from tracekit.phases.markers import load_markers

PACKAGE = paths.PACKAGE


def test_only_the_data_layer_imports_a_toml_parser() -> None:
    importers = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                       if re.search(r"^\s*(import|from) (tomllib|tomli)\b", path.read_text(),
                                    re.M))
    assert importers == ["datafiles.py"]


def test_invalid_toml_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('id = "x"\n\n[table\nkey = 1\n')
    with pytest.raises(RuleFileError, match=rf"^{re.escape(str(path))}:3: invalid TOML"):
        read_toml(path)
    with pytest.raises(InputError, match=r"^w\.toml:1: invalid TOML"):
        parse_toml("= 1", "w.toml", error=InputError)


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError, match="cannot read"):
        read_toml(tmp_path / "missing.toml")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(RuleFileError, match="not UTF-8"):
        read_toml(latin)


def test_a_missing_key_of_a_shipped_table_names_its_line() -> None:
    gpus = builtin_file("_gpus.toml")
    row = dict(gpus.data["model"]["h100-sxm"])
    del row["regex"]
    with pytest.raises(RuleFileError) as caught:
        gpus.require(row, "regex", "[model.h100-sxm]")
    header = gpus.line_of("[model.h100-sxm]")
    assert caught.value.message == f"rules/_gpus.toml:{header}: [model.h100-sxm] has no 'regex'"
    entry = {"id": "only", "regex": "x"}
    line = gpus.line_of('id = "only"')
    with pytest.raises(RuleFileError, match=rf"_gpus\.toml:{line}: \[\[kernel_arch\]\] has no"):
        gpus.require(entry, "examples", "[[kernel_arch]]")


def test_user_rule_pack_with_bad_toml_is_located(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text('id = "mine"\ndescription = "x"\npatterns = [\n')
    with pytest.raises(RuleFileError, match=r"mine\.toml:\d+: invalid TOML"):
        load_ruleset([tmp_path], use_env=False)


def test_user_marker_file_with_bad_toml_is_located(tmp_path: Path) -> None:
    path = tmp_path / "markers.toml"
    path.write_text("[[marker]]\nid = \n")
    with pytest.raises(RuleFileError, match=r"markers\.toml:2: invalid TOML"):
        load_markers(path)


def test_workload_files_say_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "load.toml"
    broken.write_text("requests = 4\nconcurrency = \n")
    with pytest.raises(InputError, match=r"load\.toml:2: invalid TOML"):
        load_spec(str(broken))
    unknown = tmp_path / "typo.toml"
    unknown.write_text("requests = 4\nconcurency = 2\n")
    with pytest.raises(InputError, match=r"typo\.toml:2: unknown workload keys concurency"):
        load_spec(str(unknown))
    array = tmp_path / "list.json"
    array.write_text("[1, 2]")
    with pytest.raises(InputError, match="one table of settings"):
        load_spec(str(array))
