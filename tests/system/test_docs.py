"""The documentation in docs/ stays true to the code and inside the repository.

- the CLI reference (docs/cli.md) is what click renders now, and the README's command table
  names every command;
- real ``--json`` documents validate against docs/schema/*.schema.json, whose word lists equal
  the vocabulary's owners in code and data;
- the vocabulary and JSON pages name every word and key the schemas hold;
- nothing under docs/ points outside the repository (a clone has no ``../shared`` and no
  design notes beside it), and every relative link resolves to a file of the repository;
- nor does any other tracked file (code, rules, parser specs, fixtures, tests): they cite
  ``docs/<page>.md#section``, which must name a page and a heading, or public sources;
- the index (docs/README.md) names every package, reader and test file.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema  # a test extra (pip install -e '.[test]')
import pytest
from click.testing import CliRunner

from tests.support.paths import REPO
from tracekit.cli import cli

DOCS = REPO / "docs"
SCHEMAS = DOCS / "schema"
H200 = REPO / "fixtures" / "h200"
EXAMPLE = REPO / "examples" / "nvfp4_two_checkpoints"

#: a Markdown link target: [text](target)
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: a whole Markdown link, text and target
WHOLE_LINK = re.compile(r"\[[^\]]*\]\([^)\s]+\)")
#: what a clone does not have: the design and research notes that once lay beside the repository,
#: their numbered sections (a section sign and a number), and the machine's paths. The
#: repository's own pages are named ``docs/formats.md`` (or linked inside docs/), never bare.
NOTES = re.compile(r"DESIGN\.md|anchors\.md|aesthetics\.md|PROVENANCE\.md|shared/(?:research)"
                   r"|/work(?=/)|§\s?[0-9]|§[A-D](?:\b|\.[0-9])"
                   r"|(?<![\w/.-])(?:formats|engines)\.md")
#: the folder of real traces recorded by others, which only tests that read it may name
TRACES = re.compile(r"\.\./shared\b|\bshared/(?:traces)\b")
#: how a test reads those traces at run time (and skips without them): tests/conftest.py
READS_TRACES = re.compile(r"shared_trace|TRACEKIT_SHARED_TRACES|\"shared\" / \"traces\"")


def load_generator() -> ModuleType:
    """docs/make_cli_reference.py, imported from its file (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("make_cli_reference",
                                                  DOCS / "make_cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validator(name: str) -> Any:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid(name: str, document: dict[str, Any]) -> None:
    errors = sorted(validator(name).iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}"
        for e in errors[:10])


def run_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


# -- the CLI reference ------------------------------------------------------------------------

def test_cli_reference_is_current() -> None:
    assert load_generator().main(["--check"]) == 0, (
        "docs/cli.md is out of date: run python docs/make_cli_reference.py")


def test_cli_reference_has_every_command() -> None:
    generator = load_generator()
    paths = [" ".join(path) for path, _ in generator.walk(cli, ("tracekit",), None)]
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert {"tracekit analyze", "tracekit rules test", "tracekit db upgrade"} <= set(paths)
    for path in paths:
        assert f"`{path}`" in text, path


def readme_command_table() -> list[str]:
    """The first cells of the README's command table."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    return [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]


def test_readme_command_table_names_every_command() -> None:
    generator = load_generator()
    rows = readme_command_table()
    assert rows, "README.md has no command table under '## Commands'"
    for path, _ in generator.walk(cli, ("tracekit",), None):
        if len(path) < 2:
            continue
        command = f"tracekit {path[1]}"
        row = next((r for r in rows if re.search(rf"`{command}(?![\w-])", r)), None)
        assert row is not None, f"README.md's command table does not name `{command}`"
        if len(path) == 3:  # a subcommand: named in its group's row (`rules list\|test…`)
            assert re.search(rf"(?<![\w-]){re.escape(path[2])}(?![\w-])", row), (
                f"README.md's row for `{command}` does not name its subcommand {path[2]}")


# -- the JSON schemas -------------------------------------------------------------------------

def enum(schema: dict[str, Any], *keys: str) -> set[Any]:
    node: Any = schema
    for key in keys:
        node = node[key]
    return set(node["enum"])


def _toml(path: Path) -> dict[str, Any]:
    from tracekit.datafiles import read_toml

    return read_toml(path).data


def test_schemas_use_the_vocabulary_of_the_code() -> None:
    from tracekit.classifier.model import CONFIDENCE, EVIDENCE, OPS, PATHS
    from tracekit.cli.common import SEVERITIES
    from tracekit.findings.rules import load_rules
    from tracekit.ingest.spec import builtin_specs
    from tracekit.report.diff import DIFF_VERSION
    from tracekit.report.document import DOCUMENT_VERSION, PHASES

    analysis = json.loads((SCHEMAS / "analysis.schema.json").read_text(encoding="utf-8"))
    diff = json.loads((SCHEMAS / "diff.schema.json").read_text(encoding="utf-8"))
    defs = analysis["$defs"]
    assert enum(defs, "path") == set(PATHS) == enum(diff["$defs"], "path")
    assert enum(defs, "op") == set(OPS)
    kernel = defs["kernel"]["properties"]
    assert enum(kernel, "evidence") == set(EVIDENCE)
    assert enum(kernel, "confidence") == set(CONFIDENCE)
    operand_types = set(_toml(REPO / "rules" / "_paths.toml")["operand_types"])
    assert enum(defs, "operand") == operand_types | {None}
    assert enum(defs, "phase_word") == set(PHASES)
    assert set(analysis["properties"]["phases"]["required"]) == set(PHASES)
    finding = defs["finding"]["properties"]
    assert enum(finding, "rule") == set(load_rules().rules)
    assert enum(finding, "severity") == set(SEVERITIES)
    assert enum(defs["run"]["properties"], "format") == {spec.id for spec in builtin_specs()}
    assert analysis["properties"]["tracekit_document"]["const"] == DOCUMENT_VERSION
    assert diff["properties"]["tracekit_diff"]["const"] == DIFF_VERSION


def test_the_pages_name_every_word_and_key_of_the_schemas() -> None:
    """vocabulary.md and json-document.md say what each schema word and key means."""
    analysis = json.loads((SCHEMAS / "analysis.schema.json").read_text(encoding="utf-8"))
    diff = json.loads((SCHEMAS / "diff.schema.json").read_text(encoding="utf-8"))
    vocabulary = (DOCS / "vocabulary.md").read_text(encoding="utf-8")
    defs = analysis["$defs"]
    words = (enum(defs, "path") | enum(defs, "op") | enum(defs, "finding", "properties", "rule")
             | enum(defs, "kernel", "properties", "evidence")
             | enum(defs, "kernel", "properties", "confidence")) - {None}
    missing = sorted(word for word in words if f"`{word}`" not in vocabulary)
    assert not missing, f"docs/vocabulary.md does not explain {missing}"
    page = (DOCS / "json-document.md").read_text(encoding="utf-8")
    keys = set(analysis["properties"]) | set(diff["properties"])
    for name in ("run", "device", "summary", "phase", "phase_attribution", "finding",
                 "launcher", "kernel"):
        keys |= set(defs[name]["properties"])
    for name in ("side", "kernels", "findings", "move"):
        keys |= set(diff["$defs"][name]["properties"])
    keys |= enum(defs, "evidence", "properties", "source")
    missing = sorted(key for key in keys if f"`{key}`" not in page
                     and f'"{key}"' not in page)
    assert not missing, f"docs/json-document.md does not mention {missing}"


@pytest.fixture(scope="module")
def h200_documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """``tracekit analyze --json`` of the three H200 recordings (one store), and ``report``."""
    store = str(tmp_path_factory.mktemp("h200") / "store.db")
    documents = {}
    for name in ("torch-trace.pt.trace.json.gz", "cupti.jsonl.gz", "ncu.csv"):
        documents[name] = run_json("analyze", str(H200 / name), "--store", store)
    documents["report"] = run_json("report", "1", "--store", store)
    return documents


@pytest.mark.parametrize("name", ["torch-trace.pt.trace.json.gz", "cupti.jsonl.gz", "ncu.csv",
                                  "report"])
def test_h200_documents_match_the_schema(h200_documents: dict[str, dict[str, Any]],
                                         name: str) -> None:
    document = h200_documents[name]
    assert document["kernels"] and document["devices"][0]["arch"] == "sm90"
    assert ("warnings" in document) is (name != "report")
    assert_valid("analysis.schema.json", document)


def test_synthetic_nsys_export_documents_match_the_schema(make_trace, simple_scenario,
                                                           tmp_path: Path) -> None:
    """Marker phases, a declaration the GPU lacks (findings with evidence), --gpu."""
    store = str(tmp_path / "store.db")
    trace = str(make_trace(simple_scenario))
    plain = run_json("analyze", trace, "--store", store)
    judged = run_json("analyze", trace, "--store", store, "--expect", "fp4", "--gpu", "A100")
    assert plain["phase_attribution"]["method"] == "marker"
    assert judged["findings"] and judged["verdict"]
    for document in (plain, judged):
        assert_valid("analysis.schema.json", document)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped two-checkpoints example, built by its own script in a temporary folder."""
    folder = tmp_path_factory.mktemp("example")
    shutil.copy(EXAMPLE / "build.py", folder / "build.py")
    subprocess.run([sys.executable, str(folder / "build.py")], check=True, capture_output=True)
    return folder


def test_example_documents_and_their_diff_match_the_schemas(example: Path,
                                                             tmp_path: Path) -> None:
    store = str(tmp_path / "store.db")
    model = str(example / "checkpoints" / "w4a4")
    fallback = run_json("analyze", str(example / "w4a4-fallback-marlin.sqlite"), "--store",
                        store, "--model", model, "--log", str(example / "engine-fallback.log"),
                        "--label", "fallback")
    native = run_json("analyze", str(example / "w4a4-cutlass-fp4.sqlite"), "--store", store,
                      "--model", model, "--label", "fp4")
    sources = {item["source"] for finding in fallback["findings"]
               for item in finding["evidence"]}
    assert {"gemm_time", "kernel", "checkpoint", "gpu", "log", "hint"} <= sources
    for document in (fallback, native):
        assert_valid("analysis.schema.json", document)
    comparison = run_json("diff", "fallback", "fp4", "--store", store)
    assert comparison["findings"]["only_a"] and comparison["kernels"]["only_b"]
    assert_valid("diff.schema.json", comparison)


# -- links and the index -----------------------------------------------------------------------

def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes for a page's headings, plus explicit ``<a id>`` anchors."""
    text = page.read_text(encoding="utf-8")
    found = set(re.findall(r'<a id="([^"]+)"', text))
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE):
        heading = re.sub(r"<[^>]+>", "", heading).strip().lower()
        found.add(re.sub(r"[^\w\- ]", "", heading).replace(" ", "-"))
    return found


def doc_files() -> list[Path]:
    return sorted(path for path in DOCS.rglob("*") if path.is_file()
                  and path.suffix in (".md", ".json", ".py"))


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(DOCS)))
def test_docs_point_inside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = NOTES.search(WHOLE_LINK.sub("", text)) or TRACES.search(text)
    assert found is None, f"{path.relative_to(REPO)} points outside the repository: {found[0]}"
    for target in LINK.findall(text) if path.suffix == ".md" else ():
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve()
        assert resolved.is_relative_to(REPO), f"{path.name}: link {target} leaves the repository"
        assert resolved.exists(), f"{path.name}: link {target} names no file"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{path.name}: link {target} names no heading"



# -- nothing in the repository points outside it ------------------------------------------------

#: a reference to a page of docs/, with its section: docs/vocabulary.md#a-classification
DOCS_REFERENCE = re.compile(r"(?<![\w/.-])docs/([\w/.-]+?\.md)(?:#([\w-]+))?")


def tracked_text_files() -> list[tuple[Path, str]]:
    """Every file git tracks, as text (binary and non-UTF-8 files left out)."""
    try:
        listing = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], check=True,
                                 capture_output=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = []
    for name in filter(None, listing.split("\0")):
        path = REPO / name
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "\0" not in text:
            files.append((path, text))
    return files


def test_nothing_in_the_repository_points_outside_it() -> None:
    """Code, rule files, parser specs, fixtures, tests and docs cite in-repo pages
    (``docs/…#section``) or public sources, never notes a clone does not have. Tests that read
    real traces from ``$TRACEKIT_SHARED_TRACES`` (skipping without them) may name that folder."""
    problems = []
    for path, text in tracked_text_files():
        relative = path.relative_to(REPO)
        # Markdown links inside docs/ resolve (test_docs_point_inside_the_repository)
        scanned = WHOLE_LINK.sub("", text) if path.suffix == ".md" else text
        problems += [f"{relative}: {found[0]!r}" for found in NOTES.finditer(scanned)]
        reads_traces = (relative.parts[0] == "tests" and path.suffix == ".py"
                        and READS_TRACES.search(text) is not None)
        if not reads_traces:
            problems += [f"{relative}: {found[0]!r}" for found in TRACES.finditer(text)]
    assert not problems, "references to files outside the repository:\n" + "\n".join(problems)


def test_references_to_docs_pages_resolve() -> None:
    """Every ``docs/<page>.md#section`` named in the repository names a page and a heading."""
    problems = []
    for path, text in tracked_text_files():
        for found in DOCS_REFERENCE.finditer(text):
            page = DOCS / found[1]
            if not page.is_file():
                problems.append(f"{path.relative_to(REPO)}: {found[0]} names no page")
            elif found[2] and found[2] not in anchors(page):
                problems.append(f"{path.relative_to(REPO)}: {found[0]} names no heading")
    assert not problems, "\n".join(problems)


def test_the_index_names_every_package_reader_and_test_file() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    wanted = [f"tracekit/{p.name}/" for p in (REPO / "tracekit").iterdir()
              if p.is_dir() and (p / "__init__.py").exists()]
    wanted += [f"readers/{p.name}" for p in (REPO / "tracekit/ingest/readers").glob("*.py")
               if p.name != "__init__.py"]
    wanted += [str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")]
    wanted += [f"{p.name}" for p in (DOCS).glob("*.md") if p.name != "README.md"]
    missing = sorted(name for name in wanted if name not in index)
    assert not missing, f"docs/README.md does not say where these live: {missing}"


# -- the README's recipes and example output ------------------------------------------------------

#: an engine recipe: ``<!-- engine-recipe NAME -->`` and a block whose first line is a
#: ``$ tracekit audit --dry-run …`` command and whose other lines are what it prints
RECIPE = re.compile(r"<!-- engine-recipe (\w+) -->\n```\n(.*?)```", re.S)
#: the profiler wherever it is installed, as the README writes it
NSYS_PATH = re.compile(r"(?<![\w./-])\S*/nsys(?= profile )")


def readme_recipes() -> dict[str, tuple[list[str], list[str]]]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    recipes = {}
    for name, block in RECIPE.findall(readme):
        command, *shown = block.strip().splitlines()
        assert command.startswith("$ tracekit audit --dry-run "), command
        recipes[name] = (shlex.split(command[2:])[1:], shown)
    return recipes


def test_readme_engine_recipes_are_what_audit_runs(tmp_path: Path) -> None:
    """Each engine's recipe in the README is ``tracekit audit --dry-run``'s output for that
    command now: the presets of tracekit/capture/engines.py and the nsys flags cannot drift
    from what the README tells people to run. Every preset has a recipe."""
    from tracekit.capture.engines import PRESETS

    recipes = readme_recipes()
    assert set(recipes) == set(PRESETS), "README.md needs one engine recipe per audit preset"
    quiet = {name: None for name in ("TLLM_PROFILE_START_STOP", "VLLM_WORKER_MULTIPROC_METHOD",
                                     "TLLM_LLMAPI_ENABLE_NVTX", "VLLM_TORCH_CUDA_PROFILE")}
    for name, (args, shown) in recipes.items():
        run_dir = tmp_path / name
        argv = [str(run_dir) if arg == "RUN" else arg for arg in args]
        result = CliRunner().invoke(cli, argv, env=quiet)
        assert result.exit_code == 0, result.output
        printed = [NSYS_PATH.sub("nsys", line).replace(str(run_dir), "RUN")
                   for line in result.stdout.splitlines() if line and not line.startswith("#")]
        assert printed == shown, f"README.md's {name} recipe is not what audit prints:\n" + \
            "\n".join(printed)


def test_readme_example_output_is_what_analyze_prints(shared_trace: Any, tmp_path: Path) -> None:
    """The README's real example (vLLM on a B200 with gpt-oss-120b's config): every line it
    shows is a line of the summary, in order (the README leaves some out)."""
    import io

    from tracekit.analysis import AnalysisOptions, analyze
    from tracekit.report.terminal import render
    from tracekit.store.db import open_store

    trace = shared_trace("tracelens/b200__eager_trace.json.gz")
    store = open_store(str(tmp_path / "store.db"), write=True)
    document = analyze(store, [trace], AnalysisOptions(
        model=REPO / "tests" / "data" / "checkpoints" / "gpt-oss-120b-mxfp4",
        engine="vllm")).document
    store.dispose()
    stream = io.StringIO()
    render(document, stream, width=100)
    printed = [line.rstrip().replace(str(trace), "eager_trace.json.gz")
               for line in stream.getvalue().splitlines()]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- verdict-example -->\n```\n", 1)[1].split("```", 1)[0]
    position = 0
    for line in block.rstrip().splitlines():
        assert line in printed[position:], (
            f"README.md's example shows {line!r}, which analyze no longer prints there:\n"
            + "\n".join(printed))
        position = printed.index(line, position) + 1
