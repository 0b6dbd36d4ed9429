"""The README's examples run exactly as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from tests.support.paths import ROOT

README = ROOT / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_runtime_example_runs_and_prints_what_it_says() -> None:
    block = next(b for b in python_blocks() if "loop.run(10)" in b)
    expected = re.search(r"^# (10 .*)$", block, re.M)
    assert expected is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == expected.group(1)


def test_agent_example_runs_and_prints_what_it_says() -> None:
    block = next(b for b in python_blocks() if "LLMCabin(" in b)
    expected = re.findall(r"^# (.*)$", block, re.M)
    assert len(expected) == 3
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip().splitlines() == expected


def test_recording_example_reads_a_fresh_recording(tmp_path: Path) -> None:
    from sim.run.harness import Simulation

    sim = Simulation(seed=0, record=tmp_path / "run.mcap")
    sim.run(12)
    sim.close()
    block = next(b for b in python_blocks() if "recording.records(WORKING_SET)" in b)
    import os

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        scope: dict[str, object] = {"__name__": "readme"}
        exec(compile(block, "README.md", "exec"), scope)
    finally:
        os.chdir(here)
    assert scope["tick"] == 11
    assert "planner" in scope["ws"]["views"]  # type: ignore[index]


def test_the_public_api_block_imports() -> None:
    block = next(
        b for b in python_blocks() if b.startswith("from runtime import (\n    StateBoard")
    )
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
