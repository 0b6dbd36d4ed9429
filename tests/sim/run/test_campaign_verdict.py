"""Campaigns judge each run by its verdict: a run whose reachable task stayed undelivered at
the scenario's end fails, and so does the campaign."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime import load_specs
from sim import cli
from sim.run.campaign import (
    RESULT_FIELDS,
    RunRequest,
    crashed_result,
    passed,
    run_one,
    table,
    verdict_status,
)
from sim.run.harness import SPECS_DIR
from sim.run.journal import Journal
from sim.world.scenario import load_scenario
from tests.support.worlds import TOO_SHORT, write_world

pytestmark = pytest.mark.e2e


def request(folder: Path, **changes: Any) -> RunRequest:
    world = load_scenario(write_world(folder, TOO_SHORT))
    return RunRequest("too_short", 0, specs=load_specs(SPECS_DIR), world=world, **changes)


def test_a_run_whose_reachable_task_stayed_undelivered_fails(tmp_path: Path) -> None:
    result = run_one(request(tmp_path))
    assert result["safe"] and result["reactions_ok"]  # what a campaign checked before
    assert not result["passed"]
    assert result["tasks_undelivered"] == ["t1"] and result["deliveries_done"] == 0
    assert result["verdict"]["status"] == "failed"
    assert result["verdict"]["line"].startswith("FAILED: 1 reachable task undelivered (t1: ")
    assert not passed([result])
    (row,) = table([result])
    assert row["verdicts"] == {"failed": 1} and row["passed"] == 0
    assert (row["delivered"], row["tasks"]) == (0, 1)


def test_a_run_cut_short_by_ticks_passes_as_cut_short(tmp_path: Path) -> None:
    result = run_one(request(tmp_path, ticks=40))
    assert result["passed"] and verdict_status(result) == "cut_short"
    assert table([result])[0]["verdicts"] == {"cut_short": 1}


def test_results_carry_the_verdict_and_a_journal_line_without_it_is_run_again(
    tmp_path: Path,
) -> None:
    req = request(tmp_path, ticks=5)
    result = run_one(req)
    assert result.keys() == RESULT_FIELDS == crashed_result(req, "x").keys()
    assert {"verdict", "tasks_undelivered"} <= RESULT_FIELDS
    lost = crashed_result(req, "its worker died")
    assert lost["verdict"] is None and verdict_status(lost) == "lost"
    with Journal(tmp_path / "c.jsonl", code="c") as journal:
        old = {k: v for k, v in result.items() if k not in ("verdict", "tasks_undelivered")}
        journal.append(req, old)  # a result without its verdict: kept in the file, not taken
        assert journal.held == 0 and journal.get(req) is None
        journal.append(req, result)
        assert journal.get(req) == json.loads(json.dumps(result))
    assert verdict_status(old) == "unknown"


@pytest.mark.slow
def test_the_campaign_exits_1_and_names_the_failed_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # rich folds the tables to 80 columns otherwise
    short = write_world(tmp_path, TOO_SHORT, "short.toml")
    long = write_world(
        tmp_path, TOO_SHORT.replace("duration = 5.0", "duration = 600.0"), "long.toml"
    )
    argv = ["campaign", "--scenario", str(short), "--scenario", str(long), "--faults", "none"]
    # 100 ticks: the short world's whole duration, the long one's first 5 s
    argv += ["--seeds", "0", "--ticks", "100", "--workers", "1", "--out", str(tmp_path / "r.json")]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "runs that failed" in out and "FAILED: 1 reachable task undelivered (t1: " in out
    assert "1 run(s) passed: 0 safe and delivered, 1 cut short by --ticks" in out
    assert "0 of 2 (0%)" in out  # the deliveries column: done of the tasks
    report = json.loads((tmp_path / "r.json").read_text())
    assert not report["passed"]
    assert report["table"][0]["verdicts"] == {"failed": 1, "cut_short": 1}
    short_run, long_run = report["runs"]
    assert short_run["verdict"]["status"] == "failed" and short_run["tasks_undelivered"] == ["t1"]
    assert long_run["passed"] and long_run["verdict"]["status"] == "cut_short"
