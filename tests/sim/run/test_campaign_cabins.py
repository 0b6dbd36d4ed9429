"""User cabins in campaigns: ``campaign --cabin MODULE:CLASS@SPEC``, end to end, with a
real cabin module written to a folder of its own; and generated worlds as scenarios."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import load_spec
from sim.faults.model import parse_fault
from sim.run.campaign import RunRequest, auto_faults, run_one
from sim.run.harness import CabinRef
from tests.support.paths import ROOT

pytestmark = pytest.mark.e2e

WATCH_SPEC = """\
name = "people_watch"
board_keys = ["pose"]
required = ["pose"]
map_center = "pose"
map_radius = 2.5
map_kinds = ["obstacle"]

[on_missing]
pose = "idle:cannot_see"
"""

WATCH_CODE = '''\
"""A cabin that watches for people near the robot, and keeps a note."""

from runtime import CabinView, ContextSpec, Outbox


class PeopleWatch:
    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec
        self.name = spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        if "pose" in view.missing:
            out.react("pose", "idle:cannot_see", reason=view.missing["pose"])
            return
        near = sorted(f.id for f in view.nearby_map)
        if near:
            out.note("near", near)
'''


def _cabin_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "people_watch.toml").write_text(WATCH_SPEC, encoding="utf-8")
    (folder / "watch_cabin.py").write_text(WATCH_CODE, encoding="utf-8")
    return folder


def test_a_run_request_carries_a_user_cabin_that_the_worker_imports(tmp_path: Path) -> None:
    folder = _cabin_folder(tmp_path)
    ref = CabinRef(
        "watch_cabin", "PeopleWatch", load_spec(folder / "people_watch.toml"), str(folder)
    )
    fault = parse_fault("missing:people_watch:pose@100-200")
    try:
        result = run_one(RunRequest("warehouse", 0, fault, ticks=260, cabins=(ref,)))
    finally:
        sys.modules.pop("watch_cabin", None)
        if str(folder) in sys.path:
            sys.path.remove(str(folder))
    assert result["error"] is None
    assert result["cabins"] == ["watch_cabin:PeopleWatch"]
    [check] = result["expected"]
    assert (check["cabin"], check["reaction"], check["ok"]) == (
        "people_watch",
        "idle:cannot_see",
        True,
    )


def test_auto_faults_cover_a_user_cabins_required_patterns(tmp_path: Path) -> None:
    spec = load_spec(_cabin_folder(tmp_path) / "people_watch.toml")
    labels = [f.label for f in auto_faults({"people_watch": spec})]
    assert "missing:people_watch:pose@200-600" in labels


@pytest.mark.slow
def test_campaign_cabin_end_to_end_with_auto_faults(tmp_path: Path) -> None:
    folder = _cabin_folder(tmp_path)
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "campaign",
            "--cabin",
            "watch_cabin:PeopleWatch@people_watch.toml",
            "--faults",
            "auto",
            "--seeds",
            "0",
            "--ticks",
            "260",
            "--workers",
            "2",
            "--out",
            str(out),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["passed"]
    [row] = [r for r in report["table"] if r["fault"] == "missing:people_watch:pose@200-600"]
    assert row["expected"] == ["people_watch idle:cannot_see"]
    assert row["reactions_seen"] == row["runs"] == 1
    assert all(r["cabins"] == ["watch_cabin:PeopleWatch"] for r in report["runs"])


@pytest.mark.slow
def test_a_cabin_that_cannot_be_imported_is_refused_before_any_run(tmp_path: Path) -> None:
    folder = _cabin_folder(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "campaign",
            "--cabin",
            "nope:X@people_watch.toml",
            "--fault",
            "crash:planner@10",
        ],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "no module named 'nope'" in done.stderr


def test_campaign_scenarios_take_generated_worlds_by_seed() -> None:
    from runtime.errors import SettingError
    from sim.cli.campaign import scenario_worlds
    from sim.world.generate import generate, parse_generated

    worlds = scenario_worlds(["gen:3-4", "warehouse"])
    assert list(worlds) == ["gen:3", "gen:4", "warehouse"]
    assert worlds["gen:4"] == generate(4)
    assert parse_generated("narrow_aisles") is None
    for bad in ("gen:x", "gen:5-2", "gen:-1"):
        with pytest.raises(SettingError):
            parse_generated(bad)
