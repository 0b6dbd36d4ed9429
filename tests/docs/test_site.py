"""The documentation site stays true to the code: its reference pages are generated from
the code and cover every name, its code blocks are the files in ``examples/``, the commands
it gives parse, and ``mkdocs build --strict`` builds it without a warning."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))


def reference_pages() -> ModuleType:
    sys.path.insert(0, str(DOCS))
    try:
        return importlib.import_module("reference_pages")
    finally:
        sys.path.remove(str(DOCS))


# -- the generated reference ---------------------------------------------------------------


def test_the_runtime_api_page_documents_every_public_name() -> None:
    """Every name of ``runtime.__all__`` resolves and has its mkdocstrings directive (the
    README's hand-kept API block and table used to be checked by importing the block)."""
    import runtime

    page = reference_pages().runtime_api_page()
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None
        assert f"::: {runtime._WHERE[name]}.{name}\n" in page, name


def test_every_module_the_api_pages_name_imports() -> None:
    pages = reference_pages()
    for module in (*pages.TESTING_MODULES, *pages.AGENT_MODULES, *pages.CABINS_MODULES,
                   *pages.SIM_MODULES):  # fmt: skip
        imported = importlib.import_module(module)
        for member in pages.MEMBERS.get(module, ()):
            assert hasattr(imported, member), (module, member)


def test_the_cli_page_has_every_command_and_every_command_its_exit_status() -> None:
    pages = reference_pages()
    page = pages.cli_page()
    statuses = pages.exit_statuses()  # raises for a command whose --help has none
    assert set(statuses) == set(pages.commands())
    for name in pages.commands():
        assert f"## `{name}`\n" in page
    exit_page = pages.exit_codes_page()
    for name, text in statuses.items():
        assert f"| `python -m sim {name}` | {text} |" in exit_page


def test_the_exit_status_of_a_run_is_documented() -> None:
    """Moved from the README (tests/sim/cli/test_verdict_cli.py checked it there)."""
    from sim.cli.run import RUN_EPILOG

    status = reference_pages().exit_statuses()["run"]
    assert status.startswith("0 safe and delivered")
    assert "1 the verdict failed" in status and "cut short" in status
    assert " ".join(RUN_EPILOG.split()).count(status) == 1


def test_the_names_page_lists_the_registry() -> None:
    from cabins.warehouse.registry import WAREHOUSE

    page = reference_pages().names_page()
    for entry in WAREHOUSE.board:
        assert f"| `{entry.key}` |" in page, entry.key
    for event in WAREHOUSE.events:
        assert f"| `{event.kind}` |" in page, event.kind
    for kind in WAREHOUSE.map_kinds:
        assert f"`{kind}`" in page


def test_the_recording_page_lists_every_channel() -> None:
    from runtime.recording import format as fmt

    page = reference_pages().recording_page()
    for topic, channel in fmt.ALL_CHANNELS.items():
        assert f"| `{topic}` | `{channel.schema_name}` |" in page
        assert f"### `{channel.record.__name__}`" in page


def test_the_faults_page_lists_every_kind() -> None:
    from sim.faults.grammar import GRAMMAR
    from sim.faults.model import FAULT_KINDS

    pages = reference_pages()
    assert [c.model_fields["kind"].default for c in pages.fault_classes()] == list(FAULT_KINDS)
    page = pages.faults_page()
    assert GRAMMAR.rstrip() in page
    for kind in FAULT_KINDS:
        assert f"| `{kind}` |" in page


def test_the_spec_schema_page_lists_every_key() -> None:
    from runtime.spec import json_schema

    page = reference_pages().spec_schema_page()
    for key in json_schema()["properties"]:
        assert f"| `{key}` |" in page


def test_the_errors_page_holds_every_error_class() -> None:
    from runtime.errors import SettingError, TickworkError
    from runtime.spec import SpecError

    pages = reference_pages()
    classes = [cls for _, cls in pages.error_classes()]
    assert {TickworkError, SettingError, SpecError} <= set(classes)
    page = pages.errors_page()
    for cls in classes:
        assert f"`{cls.__module__}.{cls.__qualname__}`" in page


# -- the pages' code -----------------------------------------------------------------------

FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>\w+)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M
)


def fences(path: Path) -> Iterator[tuple[str, str]]:
    for match in FENCE.finditer(path.read_text(encoding="utf-8")):
        yield match.group("lang"), match.group("body")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_a_pages_code_is_included_from_a_file(path: Path) -> None:
    """A Python or TOML block holds one snippet line: the code is a file that a test runs
    or loads, never kept only in a page."""
    for lang, body in fences(path):
        if lang in ("python", "toml"):
            assert re.fullmatch(r'--8<-- "[^"]+"\n', body), (path.name, body[:80])


def included() -> set[str]:
    found: set[str] = set()
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'^ *--8<-- "([^":]+)', text, re.M))
    return found


def test_every_example_is_shown_by_a_page() -> None:
    shown = included()
    for path in sorted((ROOT / "examples").rglob("*")):
        if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
            assert str(path.relative_to(ROOT)) in shown, path
    for name in shown:
        assert (ROOT / name).is_file(), name


def sim_commands(text: str) -> Iterator[str]:
    """The ``python -m sim ...`` lines of the ``sh`` blocks of a page, continuations joined
    and comments dropped."""
    for match in FENCE.finditer(text):
        if match.group("lang") != "sh":
            continue
        for line in match.group("body").replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("python -m sim "):
                yield line


COMMAND_PAGES = [*PAGES, ROOT / "README.md"]


@pytest.mark.parametrize("path", COMMAND_PAGES, ids=lambda p: p.name)
def test_the_commands_a_page_gives_parse(path: Path) -> None:
    from sim.cli.app import build_parser

    parser = build_parser()
    for line in sim_commands(path.read_text(encoding="utf-8")):
        argv = shlex.split(line)[3:]
        try:
            parser.parse_args(argv)
        except SystemExit as exc:  # argparse's way of saying no
            raise AssertionError(f"{path.name}: {line}") from exc


def test_the_command_finder_finds_commands() -> None:
    text = "```sh\npython -m sim run --seed 1 \\\n    --json   # a comment\nls\n```\n"
    assert list(sim_commands(text)) == ["python -m sim run --seed 1      --json"]


# -- the build -----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """Broken links, missing anchors, snippets naming no file and API names that do not
    resolve are warnings, and ``--strict`` makes any warning fail the build."""
    pytest.importorskip("mkdocs")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


# -- the few tables kept by hand: they explain values the code enumerates ------------------


def first_column(page: str, header: str) -> list[str]:
    """The first column of the table whose header row starts with ``header``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    table = text.split(f"| {header} |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", table, re.M)


def test_the_hand_kept_tables_name_exactly_the_codes_values() -> None:
    import tomllib
    import typing

    from runtime.memory import REASONS
    from runtime.pack import MissingReason

    assert first_column("concepts/absence.md", "reason") == list(typing.get_args(MissingReason))
    assert set(first_column("concepts/working-memory.md", "reason")) == REASONS
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert set(first_column("getting-started.md", "extra")) == set(extras)
