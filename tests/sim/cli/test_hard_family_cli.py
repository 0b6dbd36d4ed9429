"""The ``hard:N`` family on the command line: ``generate --family hard`` writes what
``hard:N`` names, with the family's own settings and none of the other's; ``run`` and
``campaign`` take ``hard:N`` for ``--scenario`` as they take ``gen:N``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.cli.app import main
from sim.world.generate import generate
from sim.world.hard import HardSettings, generate_hard
from sim.world.hard.traits import traits
from sim.world.scenario import load_scenario

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_generate_writes_what_hard_n_names_the_same_every_time(tmp_path: Path) -> None:
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["generate", "--family", "hard", "--seed", "3", "-o", str(first)]) == 0
    assert main(["generate", "--family", "hard", "--seed", "3", "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    assert load_scenario(first) == generate_hard(3)


@pytest.mark.slow
def test_generate_takes_the_hard_familys_settings(tmp_path: Path) -> None:
    out = tmp_path / "bays.toml"
    argv = ["generate", "--family", "hard", "--seed", "2", "--layout", "bays"]
    argv += ["--battery", "tight", "--tasks", "2", "--movers", "6", "-o", str(out)]
    assert main(argv) == 0
    scenario = load_scenario(out)
    settings = HardSettings(layout="bays", tight_battery=True, tasks=2, movers=6)
    assert scenario == generate_hard(2, settings)
    assert len(scenario.tasks) == 2
    assert {"dead_end_dock", "mid_task_charge"} <= traits(scenario)
    small = tmp_path / "small.toml"
    argv = ["generate", "--family", "hard", "--seed", "4", "--max-floor", "50x36"]
    assert main([*argv, "-o", str(small)]) == 0
    assert load_scenario(small).floor.max_x <= 50


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--family", "hard", "--size", "50x40"], "--size: only --family gen takes it"),
        (
            ["--family", "hard", "--people", "2", "--docks", "3"],
            "--people, --docks: only --family gen takes them",
        ),
        (["--layout", "bays"], "--layout: only --family hard takes it"),
        (["--battery", "tight"], "--battery: only --family hard takes it"),
        (["--family", "hard", "--max-floor", "30x30"], "max_floor must be within 40x30"),
        (["--family", "hard", "--movers", "21"], "movers must be a whole number in 0-20"),
        (["--family", "hard", "--layout", "maze"], "invalid choice: 'maze'"),
        (["--family", "maze"], "invalid choice: 'maze'"),
    ],
)
def test_generate_refuses_the_other_familys_settings(
    tmp_path: Path, capsys: Any, argv: list[str], message: str
) -> None:
    out = tmp_path / "x.toml"
    try:
        status = main(["generate", "--seed", "1", *argv, "-o", str(out)])
    except SystemExit as exc:  # argparse's own refusals exit 2 from within
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_the_gen_family_is_still_the_default(tmp_path: Path) -> None:
    out = tmp_path / "gen.toml"
    assert main(["generate", "--seed", "5", "-o", str(out)]) == 0
    assert load_scenario(out) == generate(5)


@pytest.mark.slow
def test_run_and_campaign_take_hard_n(capsys: Any) -> None:
    assert main(["run", "--scenario", "hard:1", "--ticks", "20", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scenario"] == "hard:1"
    assert summary["tasks_total"] == len(generate_hard(1).tasks)
    argv = ["campaign", "--scenario", "hard:1-2", "--seeds", "0", "--faults", "none"]
    argv += ["--ticks", "20"]
    assert main([*argv, "--workers", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["scenarios"] == ["hard:1", "hard:2"]
    assert {run["scenario"] for run in report["runs"]} == {"hard:1", "hard:2"}
