"""The planner's goal stack: which goal it works on, when a task is over, plan_done."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cabins.planner.goals import Goals
from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from runtime.cabin import Outbox
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
DOCKS = {"a": (1.0, 1.0), "b": (5.0, 1.0)}


def goal(task: str, released: float = 0.0) -> dict[str, Any]:
    return {"task": task, "pickup": "a", "drop": "b", "released": released}


def seen(goals: dict[str, dict[str, Any]], *, order: Any = None, **board: Any) -> Seen:
    values: dict[str, Any] = {f"goal:deliver:{t}": g for t, g in goals.items()}
    values["docks"] = DOCKS
    if order is not None:
        values["dispatch:order"] = order
    return ViewReader(PlannerSettings()).read(make_view(SPEC, board={**values, **board}))


def choose(goals: Goals, view: Seen) -> tuple[bool, str | None, Outbox]:
    out = Outbox("planner")
    goals.update(view)
    finished, started = goals.choose(view, out)
    return finished, None if started is None else started.task, out


def test_the_oldest_released_goal_is_taken_first_then_by_task_id() -> None:
    view = seen({"t2": goal("t2", 3.0), "t1": goal("t1", 3.0), "t0": goal("t0", 5.0)})
    assert choose(Goals(), view)[:2] == (False, "t1")


def test_the_dispatch_order_ranks_before_the_release_time() -> None:
    goals = {"t0": goal("t0", 1.0), "t1": goal("t1", 2.0), "t2": goal("t2", 3.0)}
    assert choose(Goals(), seen(goals, order=["t2", "t1"]))[1] == "t2"
    assert choose(Goals(), seen(goals, order=["gone", "t1"]))[1] == "t1"
    # an order that is not a list of task ids is no order
    assert choose(Goals(), seen(goals, order="t2"))[1] == "t0"


@given(
    st.dictionaries(
        st.sampled_from(["t0", "t1", "t2", "t3"]),
        st.sampled_from([0.0, 1.0, 2.0]),
        min_size=1,
    ),
    st.lists(st.sampled_from(["t0", "t1", "t2", "t3", "t9"]), unique=True),
)
def test_the_goal_chosen_is_the_first_by_order_then_release_then_id(
    released: dict[str, float], order: list[str]
) -> None:
    view = seen({t: goal(t, r) for t, r in released.items()}, order=order)
    ranked = [t for t in order if t in released]
    rest = sorted((r, t) for t, r in released.items() if t not in ranked)
    expected = ranked[0] if ranked else rest[0][1]
    assert choose(Goals(), view)[1] == expected


def test_a_task_is_worked_on_until_its_goal_leaves_the_board() -> None:
    goals = Goals()
    assert choose(goals, seen({"t1": goal("t1", 5.0)}))[1] == "t1"
    # an older goal comes: the active task goes on
    both = seen({"t1": goal("t1", 5.0), "t0": goal("t0", 1.0)})
    assert choose(goals, both)[:2] == (False, None)
    assert goals.task == "t1" and goals.active is not None and goals.active.task == "t1"
    # t1's goal left the board: delivered, and t0 is next
    assert choose(goals, seen({"t0": goal("t0", 1.0)}))[:2] == (True, "t0")
    assert goals.tasks_done == 1


def test_plan_done_is_said_once_after_the_last_task() -> None:
    goals = Goals()
    choose(goals, seen({"t1": goal("t1")}))
    finished, started, out = choose(goals, seen({}))
    assert (finished, started) == (True, None)
    assert [(e.kind, e.data) for e in out.events] == [("plan_done", {"tasks_done": 1})]
    assert not choose(goals, seen({}))[2].events  # said once
    assert goals.task is None and goals.active is None


def test_a_goal_that_is_not_a_readable_delivery_is_ignored() -> None:
    view = seen({"t1": {"task": "t1", "pickup": "nowhere", "drop": "b"}, "t2": goal("t2", 9.0)})
    goals = Goals()
    assert choose(goals, view)[1] == "t2"
