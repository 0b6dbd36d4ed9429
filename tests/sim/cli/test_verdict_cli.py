"""``sim run``'s verdict through the command line: the table's last line, ``--json`` and the
exit status, on tiny worlds whose verdict is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim import cli
from sim.cli.run import RUN_EPILOG
from tests.support.worlds import RUNS_FLAT, TOO_SHORT, write_world

pytestmark = pytest.mark.e2e

WHY_LEFT = "FAILED: 1 reachable task undelivered (t1: in progress at the end, on t1:"
"""The verdict of the run too short for its task: the task, and why it was left."""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``python -m sim ARGV`` in this process: its exit status, stdout and stderr."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_a_reachable_task_undelivered_at_the_end_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = write_world(tmp_path, TOO_SHORT)
    code, out, _ = run_cli(capsys, "run", "--scenario", str(world))
    assert code == 1
    assert out.rstrip().splitlines()[-1].startswith(f"{WHY_LEFT}")
    code, out, _ = run_cli(capsys, "run", "--scenario", str(world), "--json")
    assert code == 1
    summary = json.loads(out)
    assert summary["tasks_undelivered"] == ["t1"] and summary["ticks"] == 100
    verdict = summary["verdict"]
    assert verdict["status"] == "failed"
    assert verdict["line"].startswith(WHY_LEFT)
    (reason,) = verdict["reasons"]
    assert reason["kind"] == "undelivered" and reason["fails"] and reason["tasks"] == ["t1"]


def test_a_run_cut_short_exits_0_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = write_world(tmp_path, TOO_SHORT)
    code, out, _ = run_cli(capsys, "run", "--scenario", str(world), "--duration", "2")
    assert code == 0
    assert (
        out.rstrip().splitlines()[-1] == "cut short: 0 of 1 delivered (stopped at tick 40 of 100)"
    )
    code, out, _ = run_cli(capsys, "run", "--ticks", "20", "--json")
    assert code == 0
    verdict = json.loads(out)["verdict"]
    assert verdict["status"] == "cut_short"
    assert [r["kind"] for r in verdict["reasons"]] == ["cut_short"]


@pytest.mark.slow
def test_a_flat_battery_fails_the_run_and_says_when(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = write_world(tmp_path, RUNS_FLAT)
    code, out, _ = run_cli(capsys, "run", "--scenario", str(world), "--json")
    assert code == 1
    summary = json.loads(out)
    empty = summary["battery_empty_at"]
    assert isinstance(empty, float) and 0 < empty < 60
    assert summary["battery_min"] == 0.0 and summary["battery_min_at"] == empty
    kinds = [r["kind"] for r in summary["verdict"]["reasons"]]
    assert kinds == ["undelivered", "battery_flat"]
    assert summary["verdict"]["line"].endswith(f"the battery ran flat at {empty:.1f} s")


def test_the_table_shows_the_liveness_rows_and_the_verdict_last(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "run", "--duration", "3")
    assert code == 0
    for label in (
        "waits for movers",
        "give-ways",
        "no-progress re-plans",
        "re-plans to charge first",
        "reserves waived",
        "stalled episodes",
        "deferred tasks",
        "abandoned tasks",
        "lowest battery",
        "capacity pressure",
    ):
        assert label in out, label
    assert out.rstrip().splitlines()[-1].startswith("cut short: 0 of 5 delivered")


def test_the_json_summary_has_the_liveness_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "--ticks", "5", "--json")
    assert code == 0
    summary = json.loads(out)
    for key in (
        "waits",
        "give_ways",
        "no_progress_replans",
        "charge_replans",
        "reserves_waived",
        "stalled_episodes",
        "stalls",
        "tasks_deferred",
        "tasks_abandoned",
        "capacity_pressure",
        "battery_min",
        "battery_min_at",
        "battery_empty_at",
        "tasks_undelivered",
        "tasks_refused",
        "cabins",
        "writes_refused",
        "scenario_ticks",
    ):
        assert key in summary, key
    assert set(summary["verdict"]) == {
        "status",
        "line",
        "delivered",
        "reachable",
        "refused",
        "refused_by_cabins",
        "reasons",
    }


def test_the_exit_statuses_are_documented() -> None:
    assert "1 the verdict failed" in RUN_EPILOG
    assert "a reachable task undelivered" in RUN_EPILOG and "cut short" in RUN_EPILOG
    # the docs' exit-code page is generated from this epilog: tests/docs/test_site.py
