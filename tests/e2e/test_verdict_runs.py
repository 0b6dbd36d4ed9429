"""Issue 29's silent starvation, through the command line: a run that leaves reachable
deliveries undone when its scenario ends must not exit 0.

The world is the issue's generator draw (seed 3, 48 x 32 m, 1.82 m aisles, 6 people, 2
forklifts, 8 tasks). Before the verdict its run delivered 0 of 8 and exited 0, with nothing
on screen to say so. Whatever the planner and the runtime make of it, the exit status and
the verdict must agree with what was delivered: exit 1 and every undelivered task named,
or exit 0 and "safe and delivered".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.world.generate import GeneratorSettings, generate, to_toml
from tests.support.paths import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_starved_run_exits_1_and_names_every_undelivered_task(tmp_path: Path) -> None:
    settings = GeneratorSettings(
        size=(48.0, 32.0), aisle_width=1.82, people=6, forklifts=2, tasks=8
    )
    world = tmp_path / "starve.toml"
    world.write_text(to_toml(generate(3, settings)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sim", "run", "--scenario", str(world), "--json"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = json.loads(done.stdout)
    verdict = summary["verdict"]
    left = summary["tasks_undelivered"]
    assert summary["tasks_total"] == 8 and summary["tasks_undeliverable"] == []
    assert len(left) == 8 - summary["deliveries_done"]
    if left:
        assert done.returncode == 1, done.stderr
        assert verdict["status"] == "failed"
        undelivered = next(r for r in verdict["reasons"] if r["kind"] == "undelivered")
        assert undelivered["tasks"] == left and undelivered["count"] == len(left)
        assert verdict["line"].startswith(f"FAILED: {len(left)} reachable task")
        assert all(task in verdict["line"] for task in left)
    else:
        assert (done.returncode, verdict["status"]) == (0, "passed"), done.stderr
