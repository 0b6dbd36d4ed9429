"""The planner's stall watch: no progress along the route for stall_ticks is a re-plan."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from shapely.geometry import LineString

from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from cabins.planner.stall import StallWatch
from runtime.agent.plan import PlanStep, ReplanTrigger
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
ROUTE = ((0.0, 0.0), (10.0, 0.0))
LINE = LineString(ROUTE)
GO = PlanStep("t1:go_drop", "go to the drop dock", "go_to", "b")


def at(x: float, tick: int) -> Seen:
    return ViewReader(PlannerSettings()).read(
        make_view(SPEC, board={"pose": (x, 0.0, 0.0)}, tick=tick)
    )


def watch(
    xs: list[float], *, stall_ticks: int = 5, step: PlanStep = GO
) -> list[ReplanTrigger | None]:
    stall = StallWatch(PlannerSettings(stall_ticks=stall_ticks, progress_step=0.25))
    return [stall.check(step, at(x, tick), ROUTE, LINE) for tick, x in enumerate(xs)]


def test_standing_still_for_stall_ticks_is_no_progress() -> None:
    found = watch([1.0] * 7)
    assert found[:5] == [None] * 5
    trigger = found[5]
    assert trigger is not None and (trigger.reason, trigger.step) == ("no_progress", GO.id)
    assert trigger.detail == "5 ticks without progress along the route"
    assert found[6] is None  # the watch starts again after it fired


def test_creeping_on_less_than_a_progress_step_is_no_progress() -> None:
    assert watch([1.0 + 0.04 * i for i in range(6)])[5] is not None


def test_getting_a_progress_step_further_starts_the_clock_again() -> None:
    xs = [1.0, 1.0, 1.0, 1.0, 1.3, 1.3, 1.3, 1.3, 1.3]
    found = watch(xs)
    assert found[:9] == [None] * 9  # 1.3 at tick 4: five ticks from there is tick 9
    assert watch([*xs, 1.3])[9] is not None


def test_only_a_go_to_step_on_a_route_is_watched() -> None:
    pick = PlanStep("t1:pick", "pick", "pick", "a")
    assert watch([1.0] * 10, step=pick) == [None] * 10
    stall = StallWatch(PlannerSettings(stall_ticks=2, progress_step=0.25))
    assert [stall.check(GO, at(1.0, t), None, None) for t in range(5)] == [None] * 5
    assert [stall.check(None, at(1.0, t), ROUTE, LINE) for t in range(5)] == [None] * 5


def test_a_new_route_for_the_same_step_keeps_the_clock_and_the_progress() -> None:
    stall = StallWatch(PlannerSettings(stall_ticks=5, progress_step=0.25))
    other = ((0.0, 1.0), (10.0, 1.0))
    found = []
    for tick in range(6):  # a new route every tick, the robot standing: still stalled
        route = ROUTE if tick % 2 == 0 else other
        found.append(stall.check(GO, at(1.0, tick), route, LineString(route)))
    assert found[:5] == [None] * 5 and found[5] is not None


@given(st.lists(st.floats(0.0, 0.2), min_size=12, max_size=12))
def test_with_no_step_of_progress_it_fires_after_exactly_stall_ticks(steps: list[float]) -> None:
    # every move smaller than a progress step, and never further than 0.2 m from the start
    xs = [1.0 + s for s in steps]
    found = watch(xs, stall_ticks=10)
    assert [f is not None for f in found[:11]] == [False] * 10 + [True]
