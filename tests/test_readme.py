"""The README's examples run exactly as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


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
