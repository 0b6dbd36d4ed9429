"""Every file in ``examples/`` runs: the scripts print what their closing comments say, the
example cabins pass their own tests, the spec and fault files load, and the commands the
guides give run as written (the long ones under ``slow``)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import runpy
import shutil
import subprocess
import sys
import tomllib
import unittest
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import ROOT

EXAMPLES = ROOT / "examples"


def expected_output(path: Path) -> list[str]:
    """The closing ``# ...`` comment lines of a script: what it prints."""
    lines = path.read_text(encoding="utf-8").rstrip().splitlines()
    tail: list[str] = []
    while lines and lines[-1].startswith("# "):
        tail.insert(0, lines.pop()[2:])
    return tail


def run_script(path: Path, *argv: str) -> list[str]:
    out = io.StringIO()
    saved = sys.argv
    sys.argv = [str(path), *argv]
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = saved
    return out.getvalue().strip().splitlines()


@pytest.mark.parametrize(
    "name", ["quickstart.py", "asynchronous.py", "agent.py", "long_term_memory.py"]
)
def test_a_script_prints_what_it_says(name: str) -> None:
    path = EXAMPLES / name
    expected = expected_output(path)
    assert expected, f"{name} says nothing about what it prints"
    assert run_script(path) == expected


def test_logging_setup_runs() -> None:
    # in a process of its own: it configures structlog for the whole process
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "logging_setup.py")],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@contextlib.contextmanager
def on_path(folder: Path) -> Iterator[None]:
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))


def load_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with on_path(path.parent):
        spec.loader.exec_module(module)
    return module


CABIN_TESTS = sorted(EXAMPLES.glob("*/test_*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("path", CABIN_TESTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_example_cabin_passes_its_own_tests(path: Path) -> None:
    """What ``python -m pytest test_*.py`` beside the cabin would run: each ``test_*``
    function and each ``unittest.TestCase`` (a hypothesis state machine's)."""
    module = load_module(path)
    ran = 0
    with on_path(path.parent):
        for name, value in vars(module).items():
            if name.startswith("test_") and callable(value):
                value()
                ran += 1
            elif (
                isinstance(value, type)
                and issubclass(value, unittest.TestCase)
                and name.startswith("Test")
            ):
                result = unittest.TestResult()
                unittest.defaultTestLoader.loadTestsFromTestCase(value).run(result)
                assert result.wasSuccessful(), result.failures + result.errors
                ran += result.testsRun
    assert ran, f"{path} holds no test"


def test_every_example_cabin_has_tests() -> None:
    folders = sorted(p for p in EXAMPLES.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders
    for folder in folders:
        assert list(folder.glob("test_*.py")), f"examples/{folder.name} has no test"


def test_the_spec_with_every_key_loads_and_names_every_key() -> None:
    from runtime import load_spec
    from runtime.spec import json_schema

    path = EXAMPLES / "every_key.toml"
    spec = load_spec(path)
    assert spec.timing is not None and spec.writes is not None
    table = tomllib.loads(path.read_text(encoding="utf-8"))
    assert set(table) == set(json_schema()["properties"]), "a key the example leaves out"


def test_the_fault_file_loads() -> None:
    from sim.faults.model import load_faults

    faults = load_faults(EXAMPLES / "faults.toml")
    assert [f.kind for f in faults] == ["missing", "crash"]


def test_the_reader_example_reads_a_fresh_recording(tmp_path: Path) -> None:
    from sim.run.harness import Simulation

    sim = Simulation(seed=0, record=tmp_path / "run.mcap")
    sim.run(12)
    sim.close()
    lines = run_script(EXAMPLES / "read_recording.py", str(tmp_path / "run.mcap"))
    assert [line.split()[:2] for line in lines] == [
        ["0", "executor"],
        ["0", "monitor"],
        ["0", "planner"],
    ]


@pytest.mark.slow
@pytest.mark.e2e
def test_the_simulation_example_runs_the_whole_scenario() -> None:
    lines = run_script(EXAMPLES / "simulation.py")
    assert re.fullmatch(r"\d+ ticks; people_watch raised \d+ alarm\(s\)", lines[0])
    assert lines[1].startswith("safe and delivered: 5 of 5 tasks")


def sim_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sim", *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
@pytest.mark.e2e
def test_triage_refuses_its_task_in_a_run(tmp_path: Path) -> None:
    import json

    for name in ("triage.py", "triage.toml"):
        shutil.copy(EXAMPLES / "triage" / name, tmp_path)
    done = sim_cli("run", "--cabin", "triage:Triage@triage.toml", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["tasks_refused"] == {
        "t4": {"cabin": "triage", "reason": "returns are another robot's"}
    }
    assert summary["verdict"]["status"] == "passed"


@pytest.mark.slow
@pytest.mark.e2e
def test_the_greeter_resumes_from_a_checkpoint(tmp_path: Path) -> None:
    for name in ("greeter.py", "greeter.toml"):
        shutil.copy(EXAMPLES / "greeter" / name, tmp_path)
    cabin = ("--cabin", "greeter:Greeter@greeter.toml")
    first = sim_cli(
        "run", "--ticks", "300", "--record", "run.mcap", "--checkpoint-every", "100", *cabin,
        cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "run.ckpt").is_file()
    resumed = sim_cli("run", "--resume", "run.ckpt", "--ticks", "400", *cabin, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "stopped at tick 400" in resumed.stdout
