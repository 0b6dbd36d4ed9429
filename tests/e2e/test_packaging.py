"""The wheel carries everything a run needs: shipped specs, scenarios, report templates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # From a copy without build/: setuptools reuses build/lib, so a wheel built in a used
    # checkout carries whatever an earlier build left there, packages dropped since included.
    source = tmp_path_factory.mktemp("source") / "tickwork"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", ".git", "__pycache__", ".*_cache", ".hypothesis"
        ),
    )
    done = subprocess.run(  # built as pip install would: isolated, with pyproject's setuptools
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--quiet",
            "--wheel-dir",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (found,) = out.glob("tickwork-*.whl")
    return found


def test_the_wheel_holds_the_shipped_specs_and_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for spec in (ROOT / "specs").glob("*.toml"):
        assert f"tickwork_specs/{spec.name}" in names
    assert "tickwork_specs/context-spec.schema.json" in names
    assert "tickwork_specs/examples/dispatcher.toml" in names
    assert "sim/world/scenarios/warehouse.toml" in names
    for package in ("runtime", "cabins", "sim"):  # a user cabin type-checks against any of them
        assert f"{package}/py.typed" in names
    assert any(n.startswith("sim/report/templates/") for n in names)


def test_the_wheel_holds_every_package_of_the_source_tree(wheel: Path) -> None:
    """A package missing from pyproject's list is missing from the wheel; a run from the
    wheel could still import it from a development install (its import hook finds what
    site-packages lacks), so this is checked on the wheel's own file list."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for top in ("runtime", "cabins", "sim"):
        for init in sorted((ROOT / top).rglob("__init__.py")):
            module = init.relative_to(ROOT).as_posix()
            assert module in names, f"{module} is not in the wheel: add it to pyproject.toml"


def test_an_installed_wheel_runs_the_simulator_on_its_shipped_specs(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # what pip would put in site-packages
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sim, cabins.shipped as s; print(sim.__file__); print(s.shipped_specs_dir())",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    sim_file, specs_dir = done.stdout.split()
    assert sim_file.startswith(str(site)) and specs_dir == str(site / "tickwork_specs")
    run = subprocess.run(
        [sys.executable, "-m", "sim", "run", "--ticks", "20", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode in (0, 1), run.stderr  # 1: deliveries not done in 20 ticks
    assert json.loads(run.stdout)["ticks"] == 20
