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


def test_the_shipped_example_is_the_readmes_cabin() -> None:
    """``examples/people_watch/`` holds exactly the walk-through's two files, so the
    ``--cabin`` example of ``run --help`` is the README's cabin."""
    files = dict(re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', SECTION, re.S))
    for name, text in files.items():
        assert (ROOT / "examples" / "people_watch" / name).read_text(encoding="utf-8") == text


def test_a_cabin_module_is_found_beside_its_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the project's root (or any folder), ``--cabin MODULE:CLASS@SPEC`` imports
    ``MODULE`` from the spec's folder when the current folder does not hold it; when neither
    does, the error says where it looked and what to do."""
    from sim.cli.exits import InputError
    from sim.cli.inputs import EXAMPLE_CABIN, cabin_ref, load_cabin

    monkeypatch.chdir(tmp_path)
    spec = ROOT / "examples" / "people_watch" / "people_watch.toml"
    ref = cabin_ref(f"people_watch:PeopleWatch@{spec}")
    assert Path(ref.folder) == spec.parent
    monkeypatch.chdir(ROOT)
    assert load_cabin(EXAMPLE_CABIN).spec.name == "people_watch"
    (tmp_path / "lonely.toml").write_text('name = "lonely"\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        cabin_ref(f"congestion:Congestion@{tmp_path / 'lonely.toml'}")
    message = str(caught.value)
    assert "no module named 'congestion'" in message
    assert str(ROOT) in message and str(tmp_path) in message
    assert "put congestion.py beside its spec file" in message
