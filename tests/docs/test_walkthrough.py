"""The README's "Write your own cabin" walk-through works exactly as written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Write your own cabin", 1)[1].split("\n## ", 1)[0]


@pytest.mark.slow
@pytest.mark.e2e
def test_walkthrough(tmp_path: Path) -> None:
    files = re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', SECTION, re.S)
    assert [name for name, _ in files] == ["people_watch.toml", "people_watch.py"]
    for name, text in files:
        (tmp_path / name).write_text(text, encoding="utf-8")
    commands = re.search(r"```sh\n(.*?)```", SECTION, re.S)
    assert commands is not None
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outputs = []
    for line in commands.group(1).strip().splitlines():
        argv = shlex.split(line)
        assert argv[0] == "python"
        done = subprocess.run(
            [sys.executable, *argv[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        outputs.append(done.stdout)
    assert "receives in warehouse" in outputs[0]
    assert "people_near" in outputs[1]
    assert "people_watch" in outputs[1]

    test_block = re.search(r"```python\n(from runtime import load_spec.*?)```", SECTION, re.S)
    assert test_block is not None
    done = subprocess.run(
        [sys.executable, "-c", test_block.group(1)],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
