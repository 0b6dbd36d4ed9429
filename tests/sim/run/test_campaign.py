"""Fault injection end to end, and campaigns on both backends."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import load_specs
from sim.faults.model import parse_fault
from sim.run.campaign import Campaign, RunRequest, auto_faults, local_executor, run_one, table
from sim.run.harness import SPECS_DIR, Simulation
from sim.world.scenario import load_scenario
from tests.support.paths import ROOT

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_executor_turns_conservative_when_its_failure_records_are_missing() -> None:
    fault = parse_fault("missing:executor:event:action_failed*@100-300")
    sim = Simulation("warehouse", seed=0, faults=[fault])
    modes = {}
    sim.add_tick_listener(lambda r: modes.__setitem__(r.tick, sim.board.value("retry:mode")))
    sim.run(320, until_done=False)
    assert modes[99] in (None, "normal")
    assert all(modes[t] == "conservative" for t in range(105, 300))
    result = run_one(RunRequest("warehouse", 0, fault, ticks=400))
    assert result["expected"] and result["reactions_ok"], result
    assert {c["reaction"] for c in result["expected"]} == {"retry:conservative"}


def test_planner_raises_constraint_check_alarm_when_constraints_are_missing() -> None:
    result = run_one(
        RunRequest("warehouse", 1, parse_fault("missing:planner:constraint:*@100-300"), ticks=400)
    )
    assert any(
        c["cabin"] == "planner" and c["reaction"] == "alarm:constraint_check" and c["ok"]
        for c in result["expected"]
    ), result
    assert result["safe"]


def test_without_safety_items_the_robot_stops_and_stays_out() -> None:
    fault = parse_fault("missing:*:safety:*@200-400")
    sim = Simulation("warehouse", seed=2, faults=[fault])
    speeds = {}
    sim.add_tick_listener(lambda r: speeds.__setitem__(r.tick, abs(sim.world.state.robot.v)))
    summary = sim.run(500, until_done=False)
    assert all(speeds[t] < 1e-9 for t in range(215, 400)), "the robot kept moving"
    assert summary["safety_violations"] == 0
    assert summary["emergency_stops"].get("fail_safe", 0) >= 1


def test_a_crashing_cabin_does_not_stop_the_loop_and_the_monitor_alarms() -> None:
    sim = Simulation("warehouse", seed=0, faults=[parse_fault("crash:planner@150-160")])
    summary = sim.run(600, until_done=False)
    assert summary["ticks"] == 600
    assert summary["cabin_failures"] == 10
    assert summary["alarms"].get("cabin_failed", 0) >= 1
    faults = sim.log.query(0.0, kinds=["fault"], limit=None)
    assert [(e.data["phase"], e.data["tick"]) for e in faults] == [("start", 150), ("end", 160)]


def test_every_fault_kind_is_applied_and_logged() -> None:
    labels = [
        "stale:pose@50-80",
        "dropout@90-120",
        "map-loss:shelf:*@130-160",
        "event-loss:action_*@170-200",
    ]
    sim = Simulation("warehouse", seed=0, faults=[parse_fault(t) for t in labels])
    stale_seen = []
    sim.add_tick_listener(
        lambda r: (
            stale_seen.append(r.tick)
            if any(v.missing.get("pose") == "stale" for v in r.views)
            else None
        )
    )
    shelves_during = []
    sim.add_tick_listener(
        lambda r: (
            shelves_during.append(sum(1 for f in sim.cabin_map.features() if f.kind == "shelf"))
            if r.tick == 140
            else None
        )
    )
    sim.run(260, until_done=False)
    assert any(50 < t < 85 for t in stale_seen) and any(90 < t < 125 for t in stale_seen)
    assert shelves_during == [0]
    assert sum(1 for f in sim.cabin_map.features() if f.kind == "shelf") == 6  # restored
    logged = [
        e.data["fault"]
        for e in sim.log.query(0.0, kinds=["fault"], limit=None)
        if e.data["phase"] == "start"
    ]
    assert logged == labels


def test_auto_faults_cover_every_required_pattern_and_every_kind() -> None:
    from runtime import load_specs

    specs = load_specs(ROOT / "specs")
    faults = auto_faults(specs)
    missing = {(f.cabin, f.pattern) for f in faults if f.kind == "missing"}
    assert missing == {(name, p) for name, s in specs.items() for p in s.required}
    assert {f.kind for f in faults} == {
        "missing",
        "stale",
        "dropout",
        "map-loss",
        "event-loss",
        "crash",
    }


@pytest.mark.slow
def test_a_dying_worker_loses_only_its_own_run() -> None:
    from tests.support import crashy_runs

    requests = [RunRequest("warehouse", seed) for seed in (1, 13, 2, 3)]
    results = Campaign(requests, local_executor, 2, runner=crashy_runs.run_or_die).run()
    by_seed = {r["seed"]: r for r in results}
    assert sorted(by_seed) == [1, 2, 3, 13]
    assert by_seed[13]["error"] and not by_seed[13]["passed"]
    assert all(by_seed[s]["passed"] for s in (1, 2, 3))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "sim", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.slow
def test_campaign_auto_faults_pass_on_the_default_scenario(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = cli(
        "campaign",
        "--faults",
        "auto",
        "--seeds",
        "0-2",
        "--workers",
        "2",
        "--ticks",
        "800",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["passed"]
    assert len(report["runs"]) == 3 * (1 + len(report["table"]) - 1)
    labels = [row["fault"] for row in report["table"]]
    assert "missing:executor:event:action_failed*@200-600" in labels
    assert "every declared reaction seen, no safety violation" in done.stdout


@pytest.mark.slow
def test_campaign_specs_option_checks_the_contract_the_given_specs_declare(tmp_path: Path) -> None:
    import shutil

    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", specs)
    executor = specs / "executor.toml"
    text = executor.read_text().replace("required = [\n", 'required = [\n    "lidar:front",\n', 1)
    reaction = '[on_missing]\n"lidar:front" = "stop:hold"\n'
    executor.write_text(text.replace("[on_missing]\n", reaction, 1))
    (specs / "mine.toml").write_text('name = "mine"\nboard_keys = ["pose"]\n')
    out = tmp_path / "results.json"
    done = cli(
        "campaign",
        "--specs",
        str(specs),
        "--faults",
        "auto",
        "--seeds",
        "0",
        "--ticks",
        "210",
        "--workers",
        "2",
        "--out",
        str(out),
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert "ignoring the spec(s) of mine" in done.stderr  # campaigns run the built-in cabins
    labels = [row["fault"] for row in json.loads(out.read_text())["table"]]
    assert "missing:executor:lidar:front@200-600" in labels
    assert not any(":mine:" in label for label in labels)

    (specs / "monitor.toml").unlink()
    done = cli("campaign", "--specs", str(specs), "--faults", "auto")
    assert done.returncode == 2 and "no spec for the built-in cabin(s) monitor" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--specs", "no/such/folder"], "folder not found"),
        (["--fault", "bogus:x@1-2"], "unknown kind"),
        (["--faults", "nope.toml"], "no such fault file"),
        (["--seeds", "x"], "seeds"),
        (["--fault", "missing:exector:constraint:*@50-100"], "there is no cabin 'exector'"),
    ],
)
def test_bad_campaign_input_exits_2(args: list[str], message: str) -> None:
    done = cli("campaign", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_bad_run_fault_exits_2() -> None:
    done = cli("run", "--fault", "missing:executor@1-2")
    assert done.returncode == 2 and "missing:CABIN:PATTERN" in done.stderr
    done = cli("run", "--fault", "crash:nobody@5", "--ticks", "10")
    assert done.returncode == 2 and "there is no cabin 'nobody'" in done.stderr
    done = cli("run", "--fault", "crash:*@5", "--ticks", "10")
    assert done.returncode == 2 and "a crash names one cabin" in done.stderr


# As the CLI sends them: specs and scenario loaded by the driver, so workers read no files.
SMALL = [
    RunRequest(
        "warehouse",
        seed,
        parse_fault(text),
        ticks=300,
        specs=load_specs(SPECS_DIR),
        world=load_scenario("warehouse"),
    )
    for seed in (0, 1)
    for text in ("missing:executor:event:action_failed*@50-150", "crash:planner@60")
]


def test_a_run_uses_the_specs_its_request_carries() -> None:
    specs = load_specs(SPECS_DIR)
    blind = specs["executor"].model_copy(
        update={"required": (*specs["executor"].required, "lidar:front")}
    )
    request = RunRequest(
        "warehouse",
        0,
        None,
        ticks=20,
        specs={**specs, "executor": blind},
        world=load_scenario("warehouse"),
    )
    assert run_one(request)["ticks"] == 20
    sim = Simulation(request.world, specs=request.specs)
    seen: list[str] = []
    sim.add_tick_listener(
        lambda result: seen.extend(
            key for view in result.views if view.cabin == "executor" for key in view.missing
        )
    )
    sim.run(1, until_done=False)
    assert "lidar:front" in seen  # the carried spec, not the shipped one


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install 'tickwork[ray]')",
)
@pytest.mark.slow
def test_local_and_ray_backends_give_identical_results() -> None:
    import ray

    from sim.run.ray_backend import RaySession, ray_lost_errors

    local = Campaign(SMALL, local_executor, 2).run()
    with RaySession() as session:
        remote = Campaign(SMALL, session.executor, 2, lost_errors=ray_lost_errors()).run()
    assert not ray.is_initialized()
    assert local == remote
    assert table(local) == table(remote)
