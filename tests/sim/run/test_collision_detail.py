"""Explaining a collision: the event, the summary and the recording say what was hit,
where, at what speed and heading and the last re-plan; doctor lists the cabin decisions
before it and the report marks it with that."""

from __future__ import annotations

from pathlib import Path

from runtime.recording.format import EVENTS
from runtime.recording.reader import Recording
from sim.analysis.doctor import diagnose
from sim.report.collect import collision_label
from sim.run.harness import Simulation


def _crash_into_a_shelf(record: Path | None = None) -> Simulation:
    sim = Simulation("warehouse", seed=0, record=record)
    for _ in range(30):
        sim.loop.step()
    robot = sim.world.state.robot
    # pushed against shelf B1's south face, driving north-west at 1 m/s
    robot.x, robot.y, robot.theta, robot.v = 10.0, 8.7, 2.0, 1.0
    for _ in range(5):
        sim.loop.step()
    return sim


def test_the_collision_event_and_the_summary_say_what_was_hit_where_and_how(
    tmp_path: Path,
) -> None:
    sim = _crash_into_a_shelf(tmp_path / "run.mcap")
    summary = sim.summary()
    sim.close()
    assert summary["collisions"] >= 1
    [first, *_] = summary["collision_details"]
    assert first["hit"] == "shelf:B1"
    assert abs(first["x"] - 10.0) < 0.2 and abs(first["y"] - 8.7) < 0.2
    assert first["speed"] >= 0 and abs(first["heading"] - 2.0) < 0.3  # the monitor stopped it
    assert set(first) >= {"tick", "turn_rate", "last_replan"}

    recording = Recording.open(tmp_path / "run.mcap")
    events = [e for t in recording.ticks() for e in recording.at(EVENTS, t)]
    [event, *_] = [e for e in events if e["kind"] == "collision"]
    assert event["data"]["hit"] == "shelf:B1" and event["data"]["tick"] == first["tick"]

    report = diagnose(recording)
    [finding, *_] = [f for f in report.findings if f.outcome.kind == "collision"]
    decided = {(d["cabin"], d["decision"]) for d in finding.decisions}
    assert ("executor", "drive") in decided  # what the executor commanded before it
    assert finding.as_json()["decisions"]
    label = collision_label(event["data"])
    assert label.startswith("collision with shelf:B1 at ") and "m/s" in label


def test_a_collision_after_a_replan_names_the_replan() -> None:
    sim = Simulation("warehouse", seed=0)
    for _ in range(30):
        sim.loop.step()
    sim.log.append(
        "replan", {"reason": "obstacle_in_corridor", "task": "t1"}, tags=("cabin:planner",)
    )
    robot = sim.world.state.robot
    robot.x, robot.y, robot.theta, robot.v = 10.0, 8.7, 2.0, 1.0
    sim.loop.step()
    [detail, *_] = sim.summary()["collision_details"]
    assert detail["last_replan"]["reason"] == "obstacle_in_corridor"
    assert detail["last_replan"]["ago"] >= 0
