"""Misspellings are caught before a run: check-spec and run warn with the name meant, and
refuse under --strict; ``names`` prints the registry the checks use."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sim.cli import main
from tests.support.paths import ROOT

MISSPELT = 'name = "mine"\nboard_keys = ["pose", "safety:scaner"]\nevent_window = 2.0\n'
MISSPELT += 'event_kinds = ["wait_for_obstacle"]\n'


def test_check_spec_warns_and_strict_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "mine.toml"
    spec.write_text(MISSPELT, encoding="utf-8")
    assert main(["check-spec", str(spec), "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert any("did you mean 'safety:scanner'" in w for w in report["warnings"])
    assert any("did you mean 'wait_for_obstacles'" in w for w in report["warnings"])
    assert main(["check-spec", str(spec), "--strict", "--json"]) == 2
    (report,) = json.loads(capsys.readouterr().out)
    assert len(report["errors"]) == 2


def test_run_warns_about_a_misspelt_spec_and_strict_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", specs)
    planner = specs / "planner.toml"
    planner.write_text(
        planner.read_text(encoding="utf-8").replace('"robot:*",', '"robot:limit",', 1),
        encoding="utf-8",
    )
    code = main(["run", "--specs", str(specs), "--ticks", "2", "--json", "--log-level", "error"])
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: spec 'planner': board_keys 'robot:limit'" in err
    assert "did you mean 'robot:limits'" in err
    code = main(["run", "--specs", str(specs), "--ticks", "2", "--strict"])
    assert code == 2
    assert "(--strict)" in capsys.readouterr().err


def test_names_lists_every_key_and_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["names", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"pose", "robot:limits", "safety:scanner"} <= {row["key"] for row in data["board"]}
    assert {"give_way", "capacity_pressure", "task_abandoned"} <= {
        row["kind"] for row in data["events"]
    }
    assert main(["names", "--markdown"]) == 0
    assert "| `wait_for_obstacles` |" in capsys.readouterr().out
