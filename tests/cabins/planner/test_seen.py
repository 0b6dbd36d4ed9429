"""The planner reads its view once per tick, into a Seen; no part of it reads the view."""

from __future__ import annotations

from typing import Any

import pytest
from shapely.geometry import Point, box

from cabins.planner import Planner, PlannerSettings
from cabins.planner.seen import ViewReader
from runtime.agent.memory import LongTermMemory
from runtime.cabin import Outbox
from runtime.cabin_map import Feature
from runtime.pack import CabinView
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT
from tests.support.sealed import RealViewReader, SealedView

SPEC = load_spec(ROOT / "specs" / "planner.toml")


def person(x: float, y: float, name: str = "p1") -> Feature:
    return Feature(
        f"obstacle:{name}",
        Point(x, y).buffer(0.3),
        "obstacle",
        frozenset({"moving", "person"}),
        {"id": name, "kind": "person", "vx": 0.5, "vy": 0.0},
    )


def test_obstacles_near_the_robot_come_first_then_those_only_along_the_route() -> None:
    near, ahead = person(3.0, 0.0, "near"), person(55.0, 0.0, "ahead")
    beside = person(55.0, 20.0, "beside")  # neither near nor along the route
    board = {"pose": (0.0, 0.0, 0.0), "route": ((0.0, 0.0), (60.0, 0.0))}
    seen = ViewReader(PlannerSettings()).read(
        make_view(SPEC, board=board, features=[ahead, near, beside])
    )
    assert [f.id for f in seen.obstacles] == ["obstacle:near", "obstacle:ahead"]
    assert {f.id for f in seen.corridor_obstacles} == {"obstacle:near", "obstacle:ahead"}


def test_missing_items_absent_ones_left_out_and_goals_not_read_while_missing() -> None:
    board = {"goal:deliver:t1": {"task": "t1"}, "docks": {"a": (1.0, 1.0)}}
    reader = ViewReader(PlannerSettings())
    seen = reader.read(make_view(SPEC, board=board, suppress=["goal:*"], tick=4, now=12.5))
    assert seen.missing["goal:*"] == "fault" and "pose" not in seen.missing  # pose: absent
    assert (seen.goals, dict(seen.docks)) == ((), {})
    assert (seen.tick, seen.time, seen.pose) == (4, 12.5, None)
    seen = reader.read(make_view(SPEC, board=board))
    assert seen.goals == (("goal:deliver:t1", {"task": "t1"}),)
    assert dict(seen.docks) == {"a": (1.0, 1.0)}


@pytest.mark.parametrize(
    ("setting", "board", "low"),
    [
        (None, {}, 0.25),
        (None, {"battery:low": 0.4}, 0.4),
        (None, {"battery:low": 1.0}, 0.25),  # would charge for ever: the default
        (0.1, {"battery:low": 0.4}, 0.1),
    ],
)
def test_the_low_battery_level_is_the_setting_else_the_board_else_the_default(
    setting: float | None, board: dict[str, Any], low: float
) -> None:
    assert (
        ViewReader(PlannerSettings(low_battery=setting))
        .read(make_view(SPEC, board=board))
        .low_battery
        == low
    )


def test_no_part_of_the_planner_reads_the_view_after_the_reader() -> None:
    shelf = Feature("shelf:S", box(8.0, 0.0, 9.0, 7.0), "shelf", frozenset({"static"}))
    board: dict[str, Any] = {
        "goal:deliver:t1": {"task": "t1", "pickup": "a", "drop": "b", "released": 0.0},
        "pose": (2.0, 2.0, 0.0),
        "velocity": (0.5, 0.0),
        "battery": 0.8,
        "cargo": None,
        "world:bounds": (0.0, 0.0, 20.0, 10.0),
        "robot:radius": 0.35,
        "docks": {"a": (16.0, 2.0), "b": (2.0, 8.5)},
        "chargers": {"c1": (18.0, 8.0)},
        "dispatch:order": ["t1"],
        "safety:forbidden:hv": {"zone": "hv", "polygon": ((4, 4), (6, 4), (6, 10), (4, 10))},
    }
    planner = Planner(
        SPEC,
        PlannerSettings(stall_ticks=5, obstacle_replan_interval=0.1),
        long_term=LongTermMemory(":memory:"),
    )
    reader = planner._reader = RealViewReader(planner._reader)  # type: ignore[assignment]
    kinds: set[str] = set()
    for tick in range(40):
        features = [shelf]
        if 10 <= tick < 30:
            features.append(person(3.0 + 0.02 * tick, 2.2))  # ahead, then beside
        events = []
        if tick == 35:
            current = board["plan"]["current"]
            events = [("action_failed", {"step": current, "task": "t1", "reason": "blocked"})]
        view: CabinView = make_view(
            SPEC,
            board=board,
            features=features,
            events=events,
            tick=tick,
            now=10.0 + tick * 0.05,
            suppress=["constraint:*"] if tick == 5 else ["pose"] if tick == 6 else (),
        )
        reader.view = view
        out = Outbox(planner.name)
        planner.step(SealedView(), out)  # type: ignore[arg-type]
        for write in out.writes:
            board[write.key] = write.value
        kinds |= {e.kind for e in out.events} | {r.reaction for r in out.reactions}
        kinds |= {f"replan:{e.data['reason']}" for e in out.events if e.kind == "replan"}
    # every part ran: goals, steps, reactions, route, obstacle ahead, stall, stand-off, memory
    assert {
        "task_started",
        "alarm:constraint_check",
        "hold:no_plan",
        "replan:obstacle_in_corridor",
        "replan:no_progress",
        "give_way",
        "recalled",
    } <= kinds


def test_the_obstacle_beside_the_robot_is_the_nearest_within_reach_and_a_metre() -> None:
    board = {"pose": (0.0, 0.0, 0.0)}
    near, far = person(1.5, 0.0, "near"), person(2.0, 0.0, "far")
    seen = ViewReader(PlannerSettings()).read(make_view(SPEC, board=board, features=[far, near]))
    beside = seen.obstacle_beside(0.6)  # 1.2 from near's disc: within 0.6 + 1
    assert beside is not None and beside.id == "obstacle:near"
    assert seen.obstacle_beside(0.6) is beside  # measured once a tick
    assert seen.obstacle_beside(0.1) is None  # 1.2 > 0.1 + 1
    alone = ViewReader(PlannerSettings()).read(make_view(SPEC, board={}, features=[near]))
    assert alone.obstacle_beside(5.0) is None  # no pose: nothing is beside it
