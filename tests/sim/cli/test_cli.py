"""The command line end to end, in subprocesses, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.e2e


def sim(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "sim", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_help_lists_the_commands() -> None:
    done = sim("--help")
    assert done.returncode == 0
    for command in ("run", "scenarios", "check-spec"):
        assert command in done.stdout


@pytest.mark.slow
def test_run_prints_a_readable_summary() -> None:
    done = sim("run", "--ticks", "300")
    assert done.returncode == 0, done.stderr
    for label in (
        "deliveries",
        "safety violations",
        "collisions",
        "re-plans",
        "alarms",
        "evictions",
        "capacity alarms",
        "cabin · planner",
        "missing items · executor",
        "tick compute",
        "real-time factor",
    ):
        assert label in done.stdout, label  # whole, on one line: a person greps for it


@pytest.mark.slow
def test_run_json_is_one_object() -> None:
    done = sim("run", "--seed", "3", "--duration", "10", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["seed"] == 3 and summary["ticks"] == 200
    for key in (
        "deliveries_done",
        "deliveries_assigned",
        "mean_delivery_time",
        "safety_violations",
        "collisions",
        "replans",
        "alarms",
        "evictions",
        "capacity_alarms",
        "missing",
        "tick_compute_p50_ms",
        "tick_compute_p99_ms",
        "real_time_factor",
    ):
        assert key in summary, key


def test_scenarios_lists_the_shipped_ones() -> None:
    done = sim("scenarios", "--json")
    assert done.returncode == 0
    names = [row["name"] for row in json.loads(done.stdout)]
    assert "warehouse" in names and "narrow_aisles" in names


@pytest.mark.slow
def test_bad_scenario_file_is_a_clear_error(tmp_path: Path) -> None:
    text = (ROOT / "sim" / "world" / "scenarios" / "warehouse.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("max_speed = 1.5", "max_speed = -1.5", 1))
    done = sim("run", "--scenario", str(bad))
    assert done.returncode == 2
    assert "bad.toml" in done.stderr and "robot.max_speed" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_unknown_scenario_name_is_a_clear_error() -> None:
    done = sim("run", "--scenario", "atlantis")
    assert done.returncode == 2
    assert "atlantis" in done.stderr and "Traceback" not in done.stderr


def test_bad_arguments_exit_2() -> None:
    assert sim("run", "--ticks", "-3").returncode == 2
    assert sim("run", "--ticks", "5", "--duration", "3").returncode == 2


@pytest.mark.slow
def test_check_spec_shows_what_each_cabin_receives() -> None:
    done = sim("check-spec", "specs", "--json")
    assert done.returncode == 0, done.stderr
    reports = {Path(r["path"]).name: r for r in json.loads(done.stdout)}
    assert {"planner.toml", "executor.toml", "monitor.toml"} <= set(reports)
    planner = reports["planner.toml"]
    assert planner["errors"] == []
    assert any(item.startswith("goal:deliver:") for item in planner["receives"]["items"])
    human = sim("check-spec", "specs/planner.toml")
    assert human.returncode == 0 and "receives in warehouse" in human.stdout


def test_check_spec_bad_spec_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "cabin.toml"
    bad.write_text('name = "cabin"\n[weights]\n"goal:*" = 1.5\n')
    done = sim("check-spec", str(bad))
    assert done.returncode == 2
    assert 'weights."goal:*"' in done.stdout + done.stderr


@pytest.mark.slow
def test_check_spec_warns_about_undeclared_reactions(tmp_path: Path) -> None:
    spec = tmp_path / "cabin.toml"
    spec.write_text('name = "cabin"\nboard_keys = ["pose"]\nrequired = ["pose"]\n')
    done = sim("check-spec", str(spec), "--json")
    assert done.returncode == 0
    (report,) = json.loads(done.stdout)
    assert any("no declared reaction" in w for w in report["warnings"])
