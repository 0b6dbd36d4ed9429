"""The planner's recovery of a stalled task (re-route, defer, abandon, in that order and
bounded), and the goal stack with tasks set aside: one blocked task no longer blocks
every later one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cabins.planner.goals import Goals
from cabins.planner.recovery import Recovery
from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from runtime.cabin import Outbox
from runtime.errors import SettingError
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
DOCKS = {"a": (1.0, 1.0), "b": (5.0, 1.0)}
SETTINGS = PlannerSettings(defer_s=30.0, max_deferrals=2)


def goal(task: str, released: float = 0.0) -> dict[str, Any]:
    return {"task": task, "pickup": "a", "drop": "b", "released": released}


def seen(tasks: dict[str, float], *, now: float = 10.0, order: Any = None) -> Seen:
    board: dict[str, Any] = {f"goal:deliver:{t}": goal(t, r) for t, r in tasks.items()}
    board["docks"] = DOCKS
    if order is not None:
        board["dispatch:order"] = order
    return ViewReader(SETTINGS).read(make_view(SPEC, board=board, now=now))


def events(out: Outbox) -> list[tuple[str, dict[str, Any]]]:
    return [(e.kind, dict(e.data)) for e in out.events]


def test_a_task_is_re_routed_then_deferred_then_abandoned() -> None:
    recovery = Recovery(SETTINGS)
    remedies = [recovery.remedy("t1", carried=False) for _ in range(4)]
    # deferring is what counts the deferrals: without it, it would defer for ever
    assert remedies == ["reroute", "defer", "defer", "defer"]
    recovery = Recovery(SETTINGS)
    out = Outbox("planner")
    found = []
    for _ in range(5):
        remedy = recovery.remedy("t1", carried=False)
        found.append(remedy)
        if remedy == "defer":
            recovery.defer("t1", "stalled", 0.0, out)
    assert found == ["reroute", "defer", "defer", "abandon", "abandon"]


@given(st.integers(1, 5), st.integers(1, 12))
def test_a_task_is_abandoned_after_at_most_max_deferrals_plus_two_strikes(
    max_deferrals: int, strikes: int
) -> None:
    recovery = Recovery(PlannerSettings(max_deferrals=max_deferrals))
    out = Outbox("planner")
    given_up = None
    for strike in range(1, strikes + 1):
        remedy = recovery.remedy("t1", carried=False)
        if remedy == "defer":
            recovery.defer("t1", "stalled", 0.0, out)
        elif remedy == "abandon" and given_up is None:
            given_up = strike
    if strikes >= max_deferrals + 2:
        assert given_up == max_deferrals + 2
    else:
        assert given_up is None


def test_a_task_whose_item_the_robot_carries_is_only_ever_re_routed() -> None:
    recovery = Recovery(SETTINGS)
    assert {recovery.remedy("t1", carried=True) for _ in range(10)} == {"reroute"}


def test_deferring_abandoning_and_resuming_say_so_with_the_contracts_data() -> None:
    recovery = Recovery(SETTINGS)
    out = Outbox("planner")
    recovery.defer("t1", "stalled: stand_off", 12.5, out)
    assert recovery.waiting("t1", 42.0) and not recovery.waiting("t1", 42.5)
    recovery.resume("t1", out)
    recovery.resume("t1", out)  # not deferred any more: nothing to say
    recovery.abandon("t2", "stalled: no_route", out)
    assert events(out) == [
        ("task_deferred", {"task": "t1", "reason": "stalled: stand_off", "until": 42.5}),
        ("task_resumed", {"task": "t1"}),
        ("task_abandoned", {"task": "t2", "reason": "stalled: no_route"}),
    ]
    assert all(e.tags == frozenset({"plan"}) for e in out.events)
    assert recovery.waiting("t2", 1e9) and recovery.abandoned == {"t2": "stalled: no_route"}


def choose(goals: Goals, view: Seen, recovery: Recovery, out: Outbox | None = None) -> str | None:
    out = Outbox("planner") if out is None else out
    goals.update(view)
    return goals.choose(view, out, recovery).started and goals.task


def test_a_deferred_task_goes_to_the_back_and_comes_back_after_its_time() -> None:
    # the oldest task is blocked: before, it was taken again and again, first
    recovery, goals = Recovery(SETTINGS), Goals()
    tasks = {"t1": 0.0, "t2": 5.0, "t3": 10.0}
    assert choose(goals, seen(tasks), recovery) == "t1"
    out = Outbox("planner")
    recovery.defer("t1", "stalled", 10.0, out)
    goals.put_aside()
    assert choose(goals, seen(tasks, now=10.0), recovery) == "t2"
    goals.put_aside()  # (t2 is set aside in this test only to see what comes next)
    recovery.defer("t2", "stalled", 10.0, out)
    assert choose(goals, seen(tasks, now=11.0), recovery) == "t3"
    goals.put_aside()
    recovery.abandon("t3", "stalled", out)
    # only deferred tasks whose time has not come: none is taken, and no plan_done
    idle = Outbox("planner")
    assert choose(goals, seen(tasks, now=39.0), recovery, idle) is None
    assert not [e for e in idle.events if e.kind == "plan_done"]
    # their time came: the oldest again, resumed
    resumed = Outbox("planner")
    assert choose(goals, seen(tasks, now=40.0), recovery, resumed) == "t1"
    assert events(resumed) == [("task_resumed", {"task": "t1"})]


def test_a_task_deferred_whose_time_came_still_goes_after_the_fresh_ones() -> None:
    recovery, goals = Recovery(SETTINGS), Goals()
    recovery.defer("t1", "stalled", 0.0, Outbox("planner"))
    assert choose(goals, seen({"t1": 0.0, "t2": 5.0}, now=100.0), recovery) == "t2"


def test_the_dispatch_order_still_ranks_the_tasks_not_set_aside() -> None:
    recovery, goals = Recovery(SETTINGS), Goals()
    recovery.defer("t3", "stalled", 0.0, Outbox("planner"))
    tasks = {"t1": 0.0, "t2": 5.0, "t3": 10.0}
    assert choose(goals, seen(tasks, now=100.0, order=["t3", "t2", "t1"]), recovery) == "t2"


def test_plan_done_once_only_abandoned_tasks_are_left() -> None:
    recovery, goals = Recovery(SETTINGS), Goals()
    tasks = {"t1": 0.0, "t2": 5.0}
    assert choose(goals, seen(tasks), recovery) == "t1"
    out = Outbox("planner")
    recovery.abandon("t1", "stalled", out)
    goals.put_aside()
    assert choose(goals, seen(tasks), recovery) == "t2"
    done = Outbox("planner")
    assert choose(goals, seen({"t1": 0.0}), recovery, done) is None  # t2 delivered
    assert events(done) == [("plan_done", {"tasks_done": 1})]
    again = Outbox("planner")
    choose(goals, seen({"t1": 0.0}), recovery, again)
    assert not again.events  # once


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("watchdog_s", 0.0, r"watchdog_s: .*greater than 0, got 0\.0"),
        ("defer_s", -1.0, r"defer_s: .*greater than 0, got -1\.0"),
        ("max_deferrals", 0, r"max_deferrals: .*greater than or equal to 1, got 0"),
    ],
)
def test_bad_liveness_settings_are_refused_with_the_value(
    name: str, value: float, message: str
) -> None:
    with pytest.raises(SettingError, match=message):
        PlannerSettings(**{name: value})
