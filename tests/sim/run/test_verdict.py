"""The verdict of a run, judged from summaries built by hand, and the liveness rows the
summary counts from the event log."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime import EventLog, SimClock
from sim.run.harness import Simulation, _EventTally, failed
from sim.run.verdict import judge


def summary(**changes: Any) -> dict[str, Any]:
    """A summary of a run that reached its scenario's end, safe, with 3 of 3 delivered."""
    base: dict[str, Any] = {
        "ticks": 2400,
        "scenario_ticks": 2400,
        "stopped_by": None,
        "deliveries_done": 3,
        "tasks_total": 3,
        "tasks_undeliverable": [],
        "tasks_undelivered": [],
        "collisions": 0,
        "collision_details": [],
        "safety_violations": 0,
        "stalled_episodes": 0,
        "stalls": [],
        "tasks_abandoned": {},
        "battery_empty_at": None,
    }
    return {**base, **changes}


def undelivered(*tasks: str, **changes: Any) -> dict[str, Any]:
    return summary(deliveries_done=3 - len(tasks), tasks_undelivered=list(tasks), **changes)


COLLIDED = {
    "collisions": 2,
    "collision_details": [{"tick": 512, "hit": "shelf:B2"}, {"tick": 900, "hit": "wall"}],
}
STALLED = {
    "stalled_episodes": 1,
    "stalls": [{"time": 60.0, "task": "t2", "step": "go_pick", "cause": "no_progress"}],
}


def test_a_safe_run_that_delivered_everything_passes() -> None:
    verdict = judge(summary())
    assert verdict.status == "passed" and not verdict.failed and verdict.reasons == ()
    assert verdict.line == "safe and delivered: 3 of 3 tasks"


def test_tasks_refused_at_load_are_not_expected() -> None:
    verdict = judge(summary(tasks_total=4, tasks_undeliverable=["t4"]))
    assert verdict.status == "passed"
    assert verdict.line == "safe and delivered: 3 of 3 tasks (1 refused at load: unreachable)"


@pytest.mark.parametrize(
    ("changes", "kind", "text"),
    [
        (COLLIDED, "collision", "2 collisions (shelf:B2 at tick 512, wall at tick 900)"),
        ({"safety_violations": 1}, "safety_violation", "1 safety violation"),
        (STALLED, "stalled", "1 stalled episode (t2: no_progress)"),
        ({"tasks_abandoned": {"t3": "dock_blocked"}}, "abandoned", "1 task abandoned (t3: "),
        ({"battery_empty_at": 412.25}, "battery_flat", "the battery ran flat at 412.2 s"),
    ],
)
def test_each_failure_alone_fails_the_run(changes: dict[str, Any], kind: str, text: str) -> None:
    verdict = judge(summary(**changes))
    assert verdict.status == "failed" and verdict.failed
    assert [r.kind for r in verdict.reasons] == [kind]
    assert verdict.reasons[0].fails and verdict.reasons[0].text.startswith(text)
    assert verdict.line == "FAILED: " + verdict.reasons[0].text
    assert failed(summary(**changes))


def test_reachable_tasks_undelivered_at_the_scenarios_end_fail_the_run_by_name() -> None:
    verdict = judge(undelivered("t2", "t3"))
    assert verdict.status == "failed"
    (reason,) = verdict.reasons
    assert (reason.kind, reason.count, reason.fails) == ("undelivered", 2, True)
    assert reason.facts["tasks"] == ["t2", "t3"]
    assert (reason.facts["delivered"], reason.facts["reachable"]) == (1, 3)
    assert verdict.line == "FAILED: 2 reachable tasks undelivered (t2, t3)"


def test_a_long_list_of_tasks_is_cut_in_the_line_not_in_the_facts() -> None:
    tasks = [f"t{i}" for i in range(12)]
    verdict = judge(
        summary(tasks_total=12, deliveries_done=0, tasks_undelivered=tasks),
    )
    assert verdict.line.endswith("(t0, t1, t2, t3, t4, t5, t6, t7, and 4 more)")
    assert verdict.reasons[0].facts["tasks"] == tasks


def test_every_failure_together_is_named_safety_first() -> None:
    verdict = judge(
        undelivered(
            "t3",
            **COLLIDED,
            **STALLED,
            safety_violations=1,
            tasks_abandoned={"t3": "dock_blocked"},
            battery_empty_at=300.0,
        )
    )
    assert verdict.status == "failed"
    assert [r.kind for r in verdict.reasons] == [
        "collision",
        "safety_violation",
        "undelivered",
        "stalled",
        "abandoned",
        "battery_flat",
    ]
    assert verdict.line.startswith("FAILED: 2 collisions (")
    assert "; 1 reachable task undelivered (t3); 1 stalled episode" in verdict.line


@pytest.mark.parametrize(
    ("changes", "how"),
    [
        ({"ticks": 20}, "stopped at tick 20 of 2400"),
        ({"ticks": 700, "stopped_by": "SIGINT"}, "stopped by SIGINT at tick 700 of 2400"),
    ],
)
def test_a_run_cut_short_with_tasks_left_is_neither_a_pass_nor_a_failure(
    changes: dict[str, Any], how: str
) -> None:
    verdict = judge(undelivered("t2", "t3", **changes))
    assert verdict.status == "cut_short" and not verdict.failed
    (reason,) = verdict.reasons
    assert reason.kind == "cut_short" and not reason.fails
    assert reason.facts["tasks"] == ["t2", "t3"]
    assert verdict.line == f"cut short: 1 of 3 delivered ({how})"
    assert not failed(undelivered("t2", "t3", **changes))


def test_a_run_cut_short_still_fails_for_what_went_wrong() -> None:
    verdict = judge(undelivered("t3", ticks=20, safety_violations=1))
    assert verdict.status == "failed"
    assert [(r.kind, r.fails) for r in verdict.reasons] == [
        ("safety_violation", True),
        ("cut_short", False),
    ]
    assert verdict.line == (
        "FAILED: 1 safety violation (forbidden-zone entries); "
        "cut short: 2 of 3 delivered (stopped at tick 20 of 2400)"
    )


def test_a_run_that_delivered_everything_early_passes() -> None:
    assert judge(summary(ticks=900)).status == "passed"
    assert judge(summary(ticks=900, stopped_by="SIGTERM")).status == "passed"


def test_an_older_summary_is_judged_on_what_it_holds() -> None:
    old = {
        "ticks": 6000,
        "deliveries_done": 3,
        "tasks_total": 5,
        "tasks_undeliverable": [],
        "collisions": 0,
        "safety_violations": 0,
        "stopped_by": None,
    }
    verdict = judge(old)
    assert verdict.status == "failed"
    assert verdict.line == "FAILED: 2 reachable tasks undelivered"
    assert judge({}).status == "passed"


def test_the_verdict_as_json() -> None:
    verdict = judge(undelivered("t3", **COLLIDED))
    data = json.loads(json.dumps(verdict.as_json()))
    assert data["status"] == "failed" and data["line"] == verdict.line
    assert (data["delivered"], data["reachable"], data["refused"]) == (2, 3, 0)
    collision, left = data["reasons"]
    assert collision == {
        "kind": "collision",
        "count": 2,
        "text": "2 collisions (shelf:B2 at tick 512, wall at tick 900)",
        "fails": True,
        "hits": ["shelf:B2", "wall"],
    }
    assert left["kind"] == "undelivered" and left["tasks"] == ["t3"]


# -- the liveness rows, counted from the event log ----------------------------------------


def test_the_tally_counts_the_liveness_events_of_a_log_filled_by_hand() -> None:
    log = EventLog(clock=SimClock())
    tally = _EventTally()
    log.add_listener(tally)
    plan = ("cabin:planner",)
    log.append("wait_for_obstacles", {"task": "t1", "step": "go_pick"}, stamp=1.0, tags=plan)
    log.append("wait_for_obstacles", {"task": "t1", "step": "go_pick"}, stamp=2.0, tags=plan)
    log.append("give_way", {"task": "t1", "obstacle": "forklift1"}, stamp=3.0, tags=plan)
    for stamp, reason in (
        (4.0, "no_progress"),
        (5.0, "obstacle_in_corridor"),
        (6.0, "no_progress"),
        (7.0, "give_way_drained"),
        (8.0, "low_battery"),
        (9.0, "give_way_drained"),
    ):
        log.append("replan", {"reason": reason, "task": "t1"}, stamp=stamp, tags=plan)
    waived = {"task": "t1", "battery": 0.85, "need": 0.862, "need_without_reserve": 0.812}
    log.append("reserve_waived", {**waived, "metres": 107.085}, stamp=9.5, tags=plan)
    stalled = {"kind": "stalled", "level": "alarm", "task": "t1", "step": "go_pick"}
    log.append("alarm", {**stalled, "cause": "blocked_by_mover", "seconds": 60.0}, stamp=66.0)
    log.append("alarm", {"kind": "battery", "level": "warning"}, stamp=67.0)
    log.append("task_deferred", {"task": "t1", "reason": "blocked", "until": 90.0}, stamp=68.0)
    log.append("task_deferred", {"task": "t2", "reason": "low_battery", "until": 0.0}, stamp=70.0)
    log.append("task_resumed", {"task": "t1"}, stamp=90.0)
    log.append("task_deferred", {"task": "t1", "reason": "blocked", "until": 200.0}, stamp=150.0)
    for spec in ("planner", "planner", "executor"):
        log.append("capacity_pressure", {"spec": spec, "lost": ["battery"]}, stamp=160.0)
    log.append("task_abandoned", {"task": "t1", "reason": "no_way_to_dock"}, stamp=300.0)
    assert tally.liveness() == {
        "waits": 2,
        "give_ways": 1,
        "no_progress_replans": 2,
        "charge_replans": {"give_way_drained": 2, "low_battery": 1},
        "reserves_waived": 1,
        "stalled_episodes": 1,
        "stalls": [
            {
                "time": 66.0,
                "task": "t1",
                "step": "go_pick",
                "cause": "blocked_by_mover",
                "seconds": 60.0,
            }
        ],
        "tasks_deferred": {"t1": {"blocked": 2}, "t2": {"low_battery": 1}},
        "tasks_abandoned": {"t1": "no_way_to_dock"},
        "capacity_pressure": {"executor": 1, "planner": 2},
    }
    assert tally.kinds["replan"] == 6 and tally.alarms == {"stalled": 1, "battery": 1}


def test_a_run_without_such_events_counts_zero_and_carries_its_verdict() -> None:
    sim = Simulation("warehouse", seed=0)
    try:
        s = sim.run(20)
    finally:
        sim.close()
    assert (s["waits"], s["give_ways"], s["no_progress_replans"], s["stalled_episodes"]) == (
        0,
        0,
        0,
        0,
    )
    assert s["tasks_deferred"] == s["tasks_abandoned"] == s["capacity_pressure"] == {}
    assert s["charge_replans"] == {} and s["reserves_waived"] == 0
    assert s["scenario_ticks"] == 6000 and s["tasks_undelivered"] == ["t1", "t2", "t3", "t4", "t5"]
    assert 0.99 < s["battery_min"] < 1.0 and s["battery_empty_at"] is None
    assert s["verdict"] == judge(s).as_json()
    assert s["verdict"]["status"] == "cut_short"
    assert s["verdict"]["line"] == "cut short: 0 of 5 delivered (stopped at tick 20 of 6000)"


# -- tasks refused by cabins (the task protocol) ---------------------------------------------

REFUSED = {"t3": {"cabin": "triage", "reason": "battery too low for the far dock"}}


def test_a_task_a_cabin_refused_with_a_reason_does_not_fail_the_run_but_is_said() -> None:
    verdict = judge(summary(deliveries_done=2, tasks_refused=REFUSED))
    assert verdict.status == "passed" and verdict.refused_by_cabins == 1
    assert verdict.line == (
        "safe and delivered: 2 of 3 tasks; "
        "1 task refused by cabins (t3 by triage: battery too low for the far dock)"
    )
    (reason,) = verdict.reasons
    assert reason.kind == "refused" and not reason.fails
    shown = verdict.as_json()
    assert shown["refused_by_cabins"] == 1 and shown["reasons"][0]["tasks"] == REFUSED


def test_a_refused_task_beside_an_undelivered_one_still_fails_for_the_undelivered() -> None:
    verdict = judge(summary(deliveries_done=1, tasks_undelivered=["t2"], tasks_refused=REFUSED))
    assert verdict.failed
    assert [r.kind for r in verdict.reasons] == ["undelivered", "refused"]
    assert verdict.line.startswith("FAILED: 1 reachable task undelivered (t2)")


def test_an_older_summary_without_named_tasks_counts_refused_ones_apart() -> None:
    old = summary(deliveries_done=2, tasks_refused=REFUSED)
    del old["tasks_undelivered"]
    assert judge(old).status == "passed"


def test_the_tally_keeps_a_refusal_until_the_task_is_taken_up_again() -> None:
    tally = _EventTally()
    log = EventLog(clock=SimClock())
    log.add_listener(tally)
    log.append("task_refused", {"task": "t1", "cabin": "triage", "reason": "no"})
    log.append("task_refused", {"task": "t2", "cabin": "triage", "reason": "no"})
    log.append("task_resumed", {"task": "t1"})
    assert tally.refused == {"t2": {"cabin": "triage", "reason": "no"}}
