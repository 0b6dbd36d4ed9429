"""The "Write a cabin" guide (``docs/guides/write-a-cabin.md``) works exactly as written:
the two files it includes, the commands it gives, and the unit test it shows."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PAGE = (ROOT / "docs" / "guides" / "write-a-cabin.md").read_text(encoding="utf-8")
SECTION = PAGE.split("## What a cabin can rely on", 1)[0]
INCLUDED = re.compile(r'```\w+ title="([^"]+)"\n--8<-- "([^"]+)"\n```')


def included_files() -> list[tuple[str, Path]]:
    """The files the walk-through shows, as (the name the reader saves it under, the file)."""
    return [(name, ROOT / path) for name, path in INCLUDED.findall(SECTION)]


@pytest.mark.slow
@pytest.mark.e2e
def test_walkthrough(tmp_path: Path) -> None:
    files = included_files()
    assert [name for name, _ in files] == [
        "people_watch.toml",
        "people_watch.py",
        "test_people_watch.py",
    ]
    for name, path in files:
        (tmp_path / name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    commands = re.search(r'```sh title="in the folder of the two files"\n(.*?)```', SECTION, re.S)
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

    # "run python -m pytest test_people_watch.py" beside the two files
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_people_watch.py", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_the_shipped_example_is_the_guides_cabin() -> None:
    """The walk-through shows exactly the files of ``examples/people_watch/``, so the
    ``--cabin`` example of ``run --help`` is the guide's cabin."""
    from sim.cli.inputs import EXAMPLE_CABIN

    for name, path in included_files():
        assert path == ROOT / "examples" / "people_watch" / name
    assert "examples/people_watch/people_watch.toml" in EXAMPLE_CABIN


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
