"""The layout's rules, read from the source: imports run one way and form no cycle.

Every import counts, at the top of a module or inside a function: a lazy import is a
dependency too. ``runtime`` imports nothing of ``cabins`` or ``sim``, ``cabins`` nothing
of ``sim``, and inside ``sim`` the layers go cli → analysis/report → run → world/faults.
The warehouse contract (``cabins.warehouse``) imports no cabin, and the ground truth
(``sim.world``) imports the contract and never a cabin. No class in ``cabins`` is over 25
methods or 30 instance attributes, and no function there over 60 lines. The tests mirror
the packages, and the architecture page's Layout block names every package. In the
planner, the executor and the monitor only the facade and the reader take the view.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PACKAGES = ("runtime", "cabins", "sim")

SIM_LAYERS = {
    "sim.cli": 3,
    "sim.analysis": 2,
    "sim.report": 2,
    "sim.run": 1,
    "sim.world": 0,
    "sim.faults": 0,
}
"""A sim sub-package may import only sub-packages of a lower layer (or its own)."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """The project modules ``name`` imports (``from a import b`` counts as ``a.b`` when that
    is a module, else as ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


GRAPH = {name: set(_imports(name, path)) for name, path in MODULES.items()}


def _top(name: str) -> str:
    return name.split(".")[0]


def _layer(name: str) -> str | None:
    for prefix in SIM_LAYERS:
        if name == prefix or name.startswith(prefix + "."):
            return prefix
    return None


def test_the_graph_sees_the_packages() -> None:
    assert {
        "runtime.loop",
        "runtime.recording.format",
        "cabins.warehouse.values",
        "sim.cli.app",
    } <= set(MODULES)
    assert "runtime.recording.format" in GRAPH["runtime.recording.writer"]
    assert "sim.run.harness" in GRAPH["sim.cli.inputs"]  # a lazy import, inside a function


def test_runtime_knows_nothing_of_cabins_or_sim() -> None:
    wrong = {
        (m, t)
        for m, targets in GRAPH.items()
        for t in targets
        if _top(m) == "runtime" and _top(t) in ("cabins", "sim")
    }
    assert not wrong


def test_cabins_know_nothing_of_sim() -> None:
    wrong = {
        (m, t) for m, ts in GRAPH.items() for t in ts if _top(m) == "cabins" and _top(t) == "sim"
    }
    assert not wrong


CONTRACT = "cabins.warehouse"


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_warehouse_contract_imports_no_cabin() -> None:
    wrong = {
        (m, t)
        for m, ts in GRAPH.items()
        for t in ts
        if _in(m, CONTRACT) and _top(t) == "cabins" and not _in(t, CONTRACT)
    }
    assert not wrong


def test_the_world_imports_the_contract_and_never_a_cabin() -> None:
    imported = {(m, t) for m, ts in GRAPH.items() for t in ts if _in(m, "sim.world")}
    wrong = {(m, t) for m, t in imported if _top(t) == "cabins" and not _in(t, CONTRACT)}
    assert not wrong
    assert any(_in(t, CONTRACT) for _, t in imported)  # the rule is not vacuous


def test_sim_layers_import_downwards() -> None:
    wrong = set()
    for module, targets in GRAPH.items():
        mine = _layer(module)
        if mine is None:
            continue
        for target in targets:
            theirs = _layer(target)
            if theirs is not None and theirs != mine and SIM_LAYERS[theirs] >= SIM_LAYERS[mine]:
                wrong.add((module, target))
    assert not wrong


def test_no_import_cycles() -> None:
    cycles = _cycles(GRAPH)
    assert not cycles, cycles


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_public_api_names_resolve_and_are_declared_once() -> None:
    import runtime

    tree = ast.parse((ROOT / "runtime" / "__init__.py").read_text(encoding="utf-8"))
    checked = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if node.module and node.module.startswith("runtime")
    }
    assert checked == set(runtime.__all__)  # what type checkers see is what users get
    for name in runtime.__all__:
        value = getattr(runtime, name)
        assert getattr(value, "__name__", name) == name


def test_help_and_the_error_base_import_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from sim.cli.app import build_parser; build_parser(); "
        "import runtime.errors; "
        "print(sorted(m for m in ('numpy', 'shapely', 'pydantic', 'runtime.board') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_no_public_name_is_shadowed_by_a_module_of_the_package() -> None:
    import pkgutil

    import runtime

    modules = {m.name for m in pkgutil.iter_modules(runtime.__path__)}
    assert not modules & set(runtime.__all__)


MAX_METHODS = 25
MAX_ATTRIBUTES = 30
MAX_FUNCTION_LINES = 60


def _self_attributes(cls: ast.ClassDef) -> set[str]:
    """The instance attributes a class declares: the ``self.x`` names its methods assign,
    and the fields its body annotates (a dataclass's, a settings object's, a named
    tuple's; not a ``ClassVar``)."""
    names: set[str] = {
        node.target.id
        for node in cls.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and "ClassVar" not in ast.unparse(node.annotation)
    }
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for part in ast.walk(target):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.value, ast.Name)
                    and part.value.id == "self"
                ):
                    names.add(part.attr)
    return names


def _too_big_in(tree: ast.AST, name: str) -> list[str]:
    """What in one parsed module breaks the size limits, with where it is."""
    found = []
    for node in ast.walk(tree):
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ClassDef):
            methods = [
                n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            if len(methods) > MAX_METHODS:
                found.append(f"{where} class {node.name}: {len(methods)} methods")
            attributes = _self_attributes(node)
            if len(attributes) > MAX_ATTRIBUTES:
                found.append(f"{where} class {node.name}: {len(attributes)} attributes")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(f"{where} {node.name}: {lines} lines")
    return found


def _too_big(package: str) -> list[str]:
    return [
        problem
        for name, path in MODULES.items()
        if _top(name) == package
        for problem in _too_big_in(ast.parse(path.read_text(encoding="utf-8")), name)
    ]


def test_no_cabin_class_or_function_is_too_big_to_read() -> None:
    """No class in ``cabins`` over 25 methods or 30 instance attributes, no function over
    60 lines: a maintainer reads each part whole."""
    assert _too_big("cabins") == []


FACADES = ("cabins.planner", "cabins.executor", "cabins.monitor")
"""The cabins split into a facade (``cabin.py``) and parts that take the tick's ``Seen``."""
READ_ONCE = {"cabin", "seen"}
"""The modules of such a cabin that may take the view: the facade, and the reader that
reads it once a tick."""


def _takes_the_view(tree: ast.AST) -> list[str]:
    """Where a module names ``CabinView`` or has a function with a ``view`` parameter."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and ast.unparse(node).endswith("CabinView"):
            found.append(f"{node.lineno}: CabinView")
        elif isinstance(node, ast.alias) and node.name == "CabinView":
            found.append(f"{node.lineno}: imports CabinView")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            if any(a.arg == "view" for a in arguments):
                found.append(f"{node.lineno}: {node.name}(view)")
    return sorted(found)


def test_a_cabins_parts_take_what_the_tick_read_once_not_the_view() -> None:
    """In the planner, the executor and the monitor only the facade and the reader touch
    the view; every other part takes the ``Seen`` the reader made of it."""
    wrong = [
        f"{name}:{where}"
        for name, path in MODULES.items()
        if name.rpartition(".")[0] in FACADES and name.rpartition(".")[2] not in READ_ONCE
        for where in _takes_the_view(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert wrong == []


def test_the_view_check_sees_each_way_to_take_the_view() -> None:
    source = (
        "from runtime.pack import CabinView\n"
        "def f(seen, view): ...\n"
        "def g(*, view): ...\n"
        "def h(v: pack.CabinView): ...\n"
        "def fine(seen, viewed): ...\n"
    )
    assert _takes_the_view(ast.parse(source)) == [
        "1: imports CabinView",
        "2: f(view)",
        "3: g(view)",
        "4: CabinView",
    ]


def test_the_size_check_sees_each_limit_broken() -> None:
    def methods(count: int, attributes: int) -> str:
        return "\n".join(
            f"    def m{i}(self):\n        self.a{i} = {i}"
            if i < attributes
            else f"    def m{i}(self): ..."
            for i in range(count)
        )

    fine = ast.parse(f"class Fine:\n{methods(25, 25)}\n")
    assert _too_big_in(fine, "m") == []
    many = ast.parse(f"class Many:\n{methods(26, 0)}\n")
    assert _too_big_in(many, "m") == ["m:1 class Many: 26 methods"]
    wide = ast.parse(
        f"class Wide:\n{methods(10, 10)}\n    def __init__(self):\n"
        + "".join(f"        self.b{i} = {i}\n" for i in range(21))
    )
    assert _too_big_in(wide, "m") == ["m:1 class Wide: 31 attributes"]
    fields = "".join(f"    f{i}: int = {i}\n" for i in range(31))
    assert _too_big_in(ast.parse(f"class Fields:\n{fields}"), "m") == [
        "m:1 class Fields: 31 attributes"
    ]
    constants = "".join(f"    c{i}: ClassVar[int] = {i}\n" for i in range(31))
    assert _too_big_in(ast.parse(f"class Constants:\n{constants}"), "m") == []
    body = "".join(f"    x{i} = {i}\n" for i in range(59))
    assert _too_big_in(ast.parse(f"def f():\n{body}"), "m") == []  # 60 lines
    assert _too_big_in(ast.parse(f"def f():\n{body}    y = 0\n"), "m") == ["m:1 f: 61 lines"]


# -- every input through one reader (issue 30) -----------------------------------------------------

OPENERS = {"open", "read_text", "read_bytes", "fromfile", "loadtxt", "make_reader", "connect"}
"""Calls that open or read a file by name (``open``, ``Path.read_bytes``, ``os.open``,
``sqlite3.connect``, ``tomllib.load``, ``json.load``, ``pickle.load``, ``np.load``, ...)."""
LOADERS = {"tomllib", "json", "pickle", "np", "numpy", "marshal"}
"""Modules whose ``load`` reads a file object."""
NOT_FILES = {"Recording.open", "reopen.open"}
"""``open`` methods of our own objects that read through ``runtime.files`` themselves."""
DIRECT_OPENS = {
    ("runtime/files.py", "os.open"): "the one reader",
    ("runtime/recording/writer.py", "open"): "writes a recording (an output)",
    ("sim/cli/app.py", "os.open"): "/dev/null, for writing",
    ("sim/run/journal.py", "os.open"): "the journal, locked; read by runtime.files.read_descriptor",
    ("runtime/agent/memory_file.py", "sqlite3.connect"): "read-only, after files.check_input",
    ("runtime/agent/long_term.py", "sqlite3.connect"): "after memory_file.check_file",
    ("sim/run/checkpoint.py", "load"): "its own load() (resume calls it), not a file's",
}
"""Where a module may open a file itself, and why."""


def _direct_opens(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        text = ast.unparse(func)
        if isinstance(func, ast.Name) and func.id in {"open", "load"}:
            found.add(text)
        elif isinstance(func, ast.Attribute) and text not in NOT_FILES:
            owner = ast.unparse(func.value)
            if func.attr in OPENERS or (func.attr == "load" and owner in LOADERS):
                found.add(text)
    return found


@pytest.mark.slow
def test_no_module_opens_an_input_file_but_through_runtime_files() -> None:
    """Every input is read by ``runtime.files`` (regular files only, bounded): no other
    module opens or reads a file by name, but those ``DIRECT_OPENS`` names, for its reason."""
    seen = {
        (str(path.relative_to(ROOT)), call)
        for path in MODULES.values()
        for call in _direct_opens(path)
    }
    assert seen - DIRECT_OPENS.keys() == set()
    assert DIRECT_OPENS.keys() - seen == set()  # an allowance no longer needed is a hole


def test_the_reader_check_sees_each_way_to_open_a_file(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import os, json, tomllib, sqlite3\n"
        "open('a')\nPath('a').read_bytes()\np.read_text()\nos.open('a', 0)\n"
        "json.load(fh)\ntomllib.load(fh)\nsqlite3.connect('a')\nRecording.open('a')\n"
    )
    assert _direct_opens(source) == {
        "open",
        "Path('a').read_bytes",
        "p.read_text",
        "os.open",
        "json.load",
        "tomllib.load",
        "sqlite3.connect",
    }


# -- the layout documented -------------------------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "development" / "architecture.md"


def _documented_folders(page: str) -> list[str]:
    """The folders the Layout section's one ``text`` block names, each at a line's start."""
    section = page.split("## Layout", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```text\n(.*?)^```$", section, re.S | re.M)
    assert len(blocks) == 1, "the Layout section holds exactly one text block"
    return re.findall(r"^([\w/]+/) ", blocks[0], re.M)


def test_the_layout_page_names_every_package() -> None:
    """Every package of ``runtime``, ``cabins`` and ``sim`` has its line in the Layout
    block; one a level deeper (``sim/world/hard``) is named in its parent's line."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    folders = set(_documented_folders(page))
    packages = [
        path.parent.relative_to(ROOT).parts
        for top in PACKAGES
        for path in (ROOT / top).rglob("__init__.py")
    ]
    assert {"/".join(p) + "/" for p in packages if len(p) <= 2} - folders == set()
    section = page.split("## Layout", 1)[1]
    assert [p for p in packages if len(p) > 2 and f"({p[-1]}/)" not in section] == []


def test_the_folder_finder_reads_one_block() -> None:
    page = "## Layout\n\n```text\nruntime/   the core\n           more\ncabins/    x\n```\n"
    assert _documented_folders(page) == ["runtime/", "cabins/"]
    broken = "## Layout\n\n```text\n```\nruntime/   the core\n```\ncabins/ x\n```\n"
    assert _documented_folders(broken) == []  # an empty block, the folders outside it


# -- the tests mirror the packages -----------------------------------------------------------------

BESIDE_THE_PACKAGES = {"e2e", "hardening", "docs", "benchmarks", "support"}
"""The folders of ``tests/`` that mirror no package: whole runs, bad input and fuzzing, the
docs and the layout, the benchmarks' own tests, and what tests share."""


def test_the_tests_mirror_the_packages() -> None:
    """Every test file sits in a folder that mirrors a package (``tests/cabins/planner/``
    for ``cabins/planner/``) or in one of ``BESIDE_THE_PACKAGES``, never in ``tests/``
    itself."""
    tests = ROOT / "tests"
    packages = {
        path.parent.relative_to(ROOT)
        for top in PACKAGES
        for path in (ROOT / top).rglob("__init__.py")
    }
    stray = sorted(
        str(path.relative_to(ROOT))
        for path in tests.rglob("test_*.py")
        if path.parent.relative_to(tests) not in packages
        and path.relative_to(tests).parts[0] not in BESIDE_THE_PACKAGES
    )
    assert stray == []


# -- a checkpoint is data, never code (issue 30) ---------------------------------------------------

CHECKPOINT_CODE = ("sim/run/checkpoint.py", "sim/run/runstate.py", "runtime/snapshot.py")
"""The modules that write and read a checkpoint."""
CODE_LOADERS = {"pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle", "copyreg", "runpy"}
"""Modules that turn bytes into code or objects of the bytes' choosing."""
CODE_CALLS = {"eval", "exec", "compile", "__import__", "import_module", "find_spec"}
"""Calls that run or import code named by a value."""


def _code_from_data(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            top = name.split(".")[0]
            if top in CODE_LOADERS or (top == "importlib" and name != "importlib.metadata"):
                found.add(f"import {name}")
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called in CODE_CALLS:
                found.add(f"{ast.unparse(func)}()")
    return found


def test_the_checkpoint_code_neither_unpickles_nor_imports_by_name() -> None:
    """The checkpoint was a pickle behind an allow-list, and two crafted files ran code
    through it; now its modules import no deserialiser of objects and call nothing that
    imports or evaluates a name (the version lookup's importlib.metadata aside)."""
    for module in CHECKPOINT_CODE:
        assert _code_from_data((ROOT / module).read_text(encoding="utf-8")) == set(), module


def test_the_code_from_data_check_sees_each_way_in() -> None:
    source = (
        "import pickle\nfrom marshal import loads\nimport importlib\n"
        "from importlib.metadata import version\neval('1')\nimportlib.import_module('x')\n"
    )
    assert _code_from_data(source) == {
        "import pickle",
        "import marshal",
        "import importlib",
        "eval()",
        "importlib.import_module()",
    }
