"""Why a reachable task was left undelivered at a run's end (``sim.run.left``): each one
carries its cause in the summary, the ``--json`` output and the verdict's line.

hard:85 (seeds 0 and 2) ended with "2 reachable tasks undelivered (t2, t3)" and nothing
else: no stalled episode, no abandoned task, no word of why. Here the same shape in
miniature: a run whose time runs out while the robot is on its first task, with the
second never started.
"""

from __future__ import annotations

from typing import Any

from runtime import EventLog, SimClock
from sim.run.harness import Simulation
from sim.run.left import TaskTrail, left
from sim.run.verdict import judge
from sim.world.scenario import Scenario


def _trail(*events: tuple[float, str, dict[str, Any]]) -> TaskTrail:
    clock = SimClock()
    log = EventLog(clock=clock)
    trail = TaskTrail()
    log.add_listener(trail)
    for stamp, kind, data in events:
        clock.advance(stamp - clock.now())
        log.append(kind, data)
    return trail


def _left(trail: TaskTrail, *tasks: str, in_hand: str | None, step: str | None = None) -> Any:
    return left(
        trail,
        tasks,
        in_hand=in_hand,
        step=step,
        released={t: True for t in tasks},
        picked={"t2": 601.25},
    )


def test_a_task_in_hand_waiting_for_movers_says_since_when() -> None:
    trail = _trail(
        (10.0, "task_started", {"task": "t2"}),
        (601.25, "action_done", {"task": "t2", "step": "t2:pick"}),
        (812.0, "wait_for_obstacles", {"task": "t2", "reason": "single_lane"}),
        (900.0, "give_way", {"task": "t2"}),
        (1500.0, "wait_for_obstacles", {"task": "t2", "reason": "single_lane"}),
    )
    why = _left(trail, "t2", "t3", in_hand="t2", step="t2:go_drop")
    assert why["t2"].state == "in_progress"
    assert why["t2"].cause == "waiting_for_mover" and why["t2"].since == 812.0
    assert why["t2"].text == (
        "in progress at the end, on t2:go_drop (picked at 601.2 s): waiting for movers "
        "since 812.0 s (2 waits, the last at 1500.0 s); in a stand-off since 900.0 s "
        "(1 give-way, the last at 900.0 s)"
    )
    assert why["t3"].state == "never_started"
    assert why["t3"].text == "never started: the run's time ran out while t2 was in progress"


def test_a_mover_let_pass_is_the_same_wait_going_on() -> None:
    # a lane's wait out of patience holds on for a mover coming at the way in (let_pass):
    # the wait lasts to then, and it is not one more wait
    trail = _trail(
        (10.0, "task_started", {"task": "t2"}),
        (812.0, "wait_for_obstacles", {"task": "t2", "reason": "single_lane"}),
        (842.0, "let_pass", {"task": "t2", "mover": "obstacle:forklift0", "waited": 30.0}),
    )
    why = _left(trail, "t2", in_hand="t2", step="t2:go_drop")
    assert why["t2"].cause == "waiting_for_mover" and why["t2"].since == 812.0
    assert "since 812.0 s (1 wait, the last at 842.0 s)" in why["t2"].text
    alone = _trail(
        (10.0, "task_started", {"task": "t2"}),
        (842.0, "let_pass", {"task": "t2", "mover": "obstacle:forklift0", "waited": 30.0}),
    )  # (its wait said before the trail began: a resumed run, say)
    assert (
        "since 842.0 s (1 wait, the last at 842.0 s)"
        in _left(alone, "t2", in_hand="t2", step="t2:go_drop")["t2"].text
    )


def test_a_step_done_clears_what_held_the_task_up_before_it() -> None:
    trail = _trail(
        (10.0, "task_started", {"task": "t1"}),
        (20.0, "wait_for_obstacles", {"task": "t1"}),
        (30.0, "alarm", {"kind": "stalled", "task": "t1", "cause": "waiting_for_mover"}),
        (40.0, "action_done", {"task": "t1", "step": "t1:go_pickup"}),
    )
    why = _left(trail, "t1", in_hand="t1", step="t1:pick")["t1"]
    assert (why.state, why.cause, why.since) == ("in_progress", "moving", 40.0)
    assert "under way since 40.0 s" in why.text


def test_set_aside_tasks_say_how_and_why() -> None:
    trail = _trail(
        (10.0, "task_started", {"task": "t1"}),
        (70.0, "task_deferred", {"task": "t1", "reason": "stalled: stand_off"}),
        (71.0, "task_started", {"task": "t2"}),
        (200.0, "task_abandoned", {"task": "t2", "reason": "stalled: no_progress"}),
    )
    why = _left(trail, "t1", "t2", in_hand=None)
    assert why["t1"].state == "deferred" and why["t1"].since == 70.0
    assert "stalled: stand_off" in why["t1"].text
    assert why["t2"].state == "abandoned"
    assert why["t2"].text == "abandoned at 200.0 s: stalled: no_progress"


def test_an_older_summary_is_judged_without_causes() -> None:
    summary = {
        "ticks": 10,
        "scenario_ticks": 10,
        "deliveries_done": 0,
        "tasks_total": 1,
        "tasks_undelivered": ["t1"],
    }
    assert judge(summary).line == "FAILED: 1 reachable task undelivered (t1)"


def _short_world(duration: float) -> Scenario:
    """Two deliveries 16 m apart on an open floor, and a run too short for both."""
    return Scenario.model_validate(
        {
            "name": "too-short",
            "duration": duration,
            "rate_hz": 20.0,
            "floor": {"max_x": 20.0, "max_y": 8.0},
            "docks": [{"id": "A", "x": 2.0, "y": 4.0}, {"id": "B", "x": 18.0, "y": 4.0}],
            "chargers": [{"id": "C0", "x": 10.0, "y": 1.0}],
            "tasks": [
                {"id": "t1", "pickup": "A", "drop": "B", "release": 0.0},
                {"id": "t2", "pickup": "B", "drop": "A", "release": 0.0},
            ],
            "robot": {
                "radius": 0.35,
                "max_speed": 1.0,
                "max_turn_rate": 1.6,
                "max_accel": 1.0,
                "start": {"x": 2.0, "y": 2.0, "theta": 0.0},
                "battery_wh": 200.0,
                "drain_wh_per_m": 0.05,
                "drain_wh_per_s": 0.005,
                "charge_wh_per_s": 1.0,
            },
            "failures": {"pick_fail_p": 0.0, "drop_fail_p": 0.0, "sensor_dropout_p": 0.0},
        }
    )


def test_a_run_that_runs_out_of_time_names_why_each_task_was_left() -> None:
    sim = Simulation(_short_world(15.0), seed=0)
    try:
        summary = sim.run()
    finally:
        sim.close()
    assert summary["tasks_undelivered"] == ["t1", "t2"]
    left_ = summary["tasks_left"]
    assert left_["t1"]["state"] == "in_progress"
    assert left_["t1"]["text"].startswith("in progress at the end, on t1:")
    assert left_["t2"] == {
        "state": "never_started",
        "cause": "time_ran_out",
        "since": None,
        "text": "never started: the run's time ran out while t1 was in progress",
    }
    verdict = summary["verdict"]
    assert verdict["line"].startswith("FAILED: 2 reachable tasks undelivered (t1: in progress")
    assert "t2: never started: the run's time ran out while t1 was in progress" in verdict["line"]
    reason = next(r for r in verdict["reasons"] if r["kind"] == "undelivered")
    assert reason["tasks"] == ["t1", "t2"] and set(reason["causes"]) == {"t1", "t2"}
