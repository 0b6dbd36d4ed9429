"""benchmarks.hard_campaign: its figures and its resuming, without running a simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import hard_campaign


def _row(world: int, seed: int, fault: str = "(none)", **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "world": world,
        "seed": seed,
        "fault": fault,
        "passed": True,
        "status": "passed",
        "verdict": "safe and delivered: 4 of 4 tasks",
        "reactions_ok": True,
        "expected": 0,
        "collisions": 0,
        "safety_violations": 0,
        "delivered": 4,
        "reachable": 4,
        "stalled_episodes": 0,
        "abandoned": 0,
        "capacity_pressure": {},
        "sim_time": 300.0,
        "wall_seconds": 10.0,
        "cpu_seconds": 9.0,
        "code": "c0",
    }
    return row | over


def test_the_figures_count_what_failed_and_keep_missed_reactions_to_faulted_runs() -> None:
    rows = [
        _row(0, 0),
        _row(0, 1, passed=False, verdict="FAILED: 1 stalled episode", stalled_episodes=1),
        _row(1, 0, delivered=2, passed=False, verdict="FAILED: 2 undelivered"),
        _row(1, 0, "missing:planner:pose@200-600", reactions_ok=False, passed=False),
        _row(2, 0, capacity_pressure={"planner": 2}),
    ]
    free = hard_campaign.figures([r for r in rows if r["fault"] == "(none)"])
    assert (free["runs"], free["passed"], free["stalled_runs"]) == (4, 2, 1)
    assert (free["delivered"], free["reachable"], free["missed_reactions"]) == (14, 16, 0)
    assert free["pressure_by_spec"] == {"planner": 2}
    assert free["failed"] == [
        "hard:0 seed 1 (none): FAILED: 1 stalled episode",
        "hard:1 seed 0 (none): FAILED: 2 undelivered",
    ]
    text = hard_campaign.table(rows)
    assert "| fault-free: 4 | 2 | 0 | 0 | - | 14 / 16 (87.5 %) | 1 |" in text
    assert "| under faults: 1 | 0 | 0 | 0 | 1 |" in text


def test_runs_already_in_the_jsonl_are_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text("".join(json.dumps(_row(w, s)) + "\n" for w in (3, 4) for s in (0, 1)))
    ran: list[tuple[int, int, str | None]] = []

    def fake(world: int, seed: int, fault: str | None) -> dict[str, Any]:
        ran.append((world, seed, fault))
        return _row(world, seed)

    monkeypatch.setattr(hard_campaign, "run_one", fake)
    monkeypatch.setattr(hard_campaign, "code_version", lambda: "c0")
    table = tmp_path / "t.md"
    args = ["--worlds", "3-5", "--seeds", "0-1", "--jsonl", str(jsonl), "--table", str(table)]
    assert hard_campaign.main(args) == 0
    assert ran == [(5, 0, None), (5, 1, None)]
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(lines) == 6 and {line["code"] for line in lines} == {"c0"}
    assert "| fault-free: 6 | 6 |" in table.read_text()


def test_runs_are_not_added_to_a_file_of_runs_of_other_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a campaign resumed across commits mixed two versions of the planner in one table
    jsonl = tmp_path / "runs.jsonl"
    old = "".join(json.dumps(_row(3, s, code="c0")) + "\n" for s in (0, 1))
    unnamed = {k: v for k, v in _row(4, 0).items() if k != "code"}  # a line of before
    jsonl.write_text(old + json.dumps(unnamed) + "\n")
    ran: list[int] = []
    monkeypatch.setattr(hard_campaign, "run_one", lambda w, s, f: ran.append(w) or _row(w, s))
    monkeypatch.setattr(hard_campaign, "code_version", lambda: "c1")
    table = tmp_path / "t.md"
    args = ["--worlds", "3-5", "--seeds", "0-1", "--jsonl", str(jsonl), "--table", str(table)]
    assert hard_campaign.main(args) == 2
    err = capsys.readouterr().err
    assert "other code (c0, unknown)" in err and "(c1)" in err and "fresh file" in err
    assert ran == [] and not table.exists()
    assert jsonl.read_text() == old + json.dumps(unnamed) + "\n"
    # with nothing to add, the table of the runs in the file is written as before
    args = ["--worlds", "3", "--seeds", "0-1", "--jsonl", str(jsonl), "--table", str(table)]
    assert hard_campaign.main(args) == 0
    assert ran == [] and "| fault-free: 3 | 3 |" in table.read_text()
    assert "holds runs of 2 code versions" in capsys.readouterr().err  # said, not silent


def test_the_code_version_is_the_commit_and_a_digest_of_its_changes(tmp_path: Path) -> None:
    import subprocess

    assert hard_campaign.code_version(tmp_path) == "unknown"  # not a git checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert hard_campaign.code_version(tmp_path) == head.strip()
    (tmp_path / "b.txt").write_text("untracked files are not the code\n")
    assert hard_campaign.code_version(tmp_path) == head.strip()
    (tmp_path / "a.py").write_text("x = 2\n")
    one = hard_campaign.code_version(tmp_path)
    (tmp_path / "a.py").write_text("x = 3\n")
    two = hard_campaign.code_version(tmp_path)
    assert one.startswith(head.strip() + "+") and two.startswith(head.strip() + "+")
    assert one != two  # two different changes to one commit are two versions
