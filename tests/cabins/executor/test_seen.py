"""The executor's view read once a tick into a Seen, each value parsed once; no part of
the executor reads the view after the reader."""

from __future__ import annotations

import math
import pickle
from typing import Any

from shapely.geometry import Point, box

from cabins.executor import Executor
from cabins.executor.seen import ViewReader
from cabins.warehouse.values import DEFAULT_ACCEPTANCE, DEFAULT_LIMITS, Pose, Velocity
from runtime import Feature, Outbox, load_spec
from runtime.testing import make_view
from tests.cabins.executor.test_executor import (
    DOCK,
    actions,
    board_with,
    drive,
    failure,
    person,
    plan_of,
    step_of,
)
from tests.support.paths import ROOT
from tests.support.sealed import RealViewReader, SealedView

SPEC = load_spec(ROOT / "specs" / "executor.toml")
PLAN = {
    "task": "t1",
    "revision": 3,
    "current": "go",
    "steps": (
        {"id": "go", "action": "go_to", "target_xy": (5.0, 0.0), "task": "t1"},
        {"id": "bad", "action": "fly"},
    ),
}
BOARD = {
    "pose": (1.0, 2.0, 0.5),
    "velocity": (0.4, 0.1),
    "plan": PLAN,
    "route": ((1.0, 2.0), (5.0, 0.0)),
    "robot:limits": {"radius": 0.3, "max_speed": 1.0, "max_turn_rate": 1.0, "max_accel": 0.5},
    "cargo": "t9",
    "battery": 0.7,
    "world:bounds": (0.0, 0.0, 20.0, 10.0),
}
SHELF = Feature("shelf:a", box(3.0, 3.0, 4.0, 4.0), "shelf")
PERSON = Feature("obstacle:p", Point(2.0, 2.0).buffer(0.3), "obstacle")


def test_a_reading_holds_what_the_view_says() -> None:
    view = make_view(SPEC, board=BOARD, features=[SHELF, PERSON], tick=7, now=3.0)
    seen = ViewReader().read(view)
    assert (seen.tick, seen.time) == (7, 3.0)
    assert seen.pose == Pose(1.0, 2.0, 0.5) and seen.velocity == Velocity(0.4, 0.1)
    assert seen.limits.radius == 0.3 and seen.limits.max_speed == 1.0
    assert seen.accept == DEFAULT_ACCEPTANCE  # not on the board: the defaults
    assert seen.plan is not None and (seen.plan.revision, seen.plan.task) == (3, "t1")
    assert seen.plan.step is not None and seen.plan.step.key == ("t1", "go", "go_to")
    assert seen.route == ((1.0, 2.0), (5.0, 0.0))
    assert (seen.cargo, seen.battery, seen.outcome) == ("t9", 0.7, None)
    assert seen.missing == view.missing
    assert seen.speed_zones == [] and (seen.failures, seen.failures_missing) == (0, "absent")
    assert seen.obstacles() == [f for f in view.nearby_map if f.id == "obstacle:p"]
    # the solids: the shelf and the four walls of the world's bounds, not the person
    assert seen.solids.names[0] == "shelf:a" and len(seen.solids.names) == 5
    assert seen.solids.gap(Point(1.0, 2.0)) == 1.0  # to the wall at x = 0


def test_what_is_not_there_reads_as_none_or_the_defaults() -> None:
    seen = ViewReader().read(make_view(SPEC, board={"pose": (0.0, math.nan, 0.0)}))
    assert seen.pose is None and seen.velocity is None and seen.plan is None
    assert seen.route is None and seen.limits == DEFAULT_LIMITS and not seen.solids


def test_the_same_value_is_parsed_once_and_the_same_solids_kept() -> None:
    reader = ViewReader()
    view = make_view(SPEC, board=BOARD, features=[SHELF])
    first, again = reader.read(view), reader.read(view)
    assert again.plan is first.plan and again.route is first.route
    assert again.limits is first.limits and again.solids is first.solids
    other = reader.read(make_view(SPEC, board={**BOARD, "world:bounds": (0.0, 0.0, 30.0, 10.0)}))
    assert other.solids is not first.solids and other.plan == first.plan


def test_the_speed_zones_and_the_failure_records_are_read_for_the_parts() -> None:
    zone = {"zone": "bay", "polygon": ((10, -2), (14, -2), (14, 2)), "max_speed": 0.5}
    board = {**BOARD, "constraint:speed:bay": zone, "constraint:other": 1}
    failed = ("action_failed", {"step": "go", "reason": "failed"}, 2.5)
    done = ("action_done", {"step": "go"}, 2.6)
    reader = ViewReader()
    seen = reader.read(make_view(SPEC, board=board, events=[failed, done], now=3.0))
    assert [(key, item.value) for key, item in seen.speed_zones] == [("constraint:speed:bay", zone)]
    assert seen.failures == 1 and seen.failures_missing is None
    hidden = reader.read(make_view(SPEC, board=board, suppress=["event:action_failed*"]))
    assert (hidden.failures, hidden.failures_missing) == (0, "fault")
    fewer = ViewReader("event:action_done*").read(make_view(SPEC, board=board, events=[done]))
    assert fewer.failures == 1  # the chooser's pattern, whatever it is


def test_a_reader_pickles_with_what_it_parsed() -> None:
    reader = ViewReader()
    view = make_view(SPEC, board=BOARD, features=[SHELF])
    seen = reader.read(view)
    copy = pickle.loads(pickle.dumps(reader))
    # the caches travel: the values parsed, and what they were parsed into
    assert (copy._plan_value, copy._plan) == (reader._plan_value, seen.plan)
    assert (copy._route_value, copy._route_points) == (reader._route_value, seen.route)
    assert copy._limits_read._read == seen.limits and copy._solids.names == seen.solids.names
    assert copy._walls._walls == reader._walls._walls != ()
    again = copy.read(view)
    assert again.plan == seen.plan and again.solids.names == seen.solids.names


def test_no_part_of_the_executor_reads_the_view_after_the_reader() -> None:
    """Every part runs (the policy, missing items, driving with speed zones, obstacles and
    solids, acting at a dock, outcomes, charging) on a view that fails on any read; only
    the reader reads the real one."""
    go = step_of("go_to", (15.0, 0.0))
    driving = board_with(
        plan=plan_of(go),
        route=((0.0, 0.0), (15.0, 0.0)),
        velocity=(0.8, 0.0),
        world__bounds=(-5.0, -5.0, 30.0, 5.0),
    )
    near = [Feature("shelf:s", box(2.0, 0.6, 4.0, 1.6), "shelf"), person(7.0, 0.0)]
    at_dock = board_with(plan=plan_of(step_of("pick")), pose=(*DOCK, 0.0))
    outcome = {"id": 1, "action": "pick", "task": "t1", "ok": True, "reason": "ok", "stamp": 10.2}
    charging = board_with(plan=plan_of(step_of("charge")), pose=(*DOCK, 0.0), battery=0.3)
    ticks: list[dict[str, Any]] = [
        {"board": driving, "features": near},
        {"board": driving, "features": near, "suppress": ["constraint:*"]},
        {"board": driving, "events": [failure(1)]},
        {"board": at_dock},
        {"board": {**at_dock, "action:last": outcome}},
        {"board": charging},
        {"board": driving, "suppress": ["pose"]},
    ]
    cabin = Executor(SPEC)
    reader = cabin._reader = RealViewReader(cabin._reader)  # type: ignore[assignment]
    seen: list[Outbox] = []
    for n, given in enumerate(ticks):
        view = make_view(SPEC, tick=n, now=10.0 + 0.05 * n, **given)
        reader.view = view
        out = Outbox(cabin.name)
        cabin.step(SealedView(), out)  # type: ignore[arg-type]
        seen.append(out)
    moving, blind, _, acting, done, charged, lost = seen
    assert [w.value for o in seen for w in o.writes] == ["normal", "conservative", "normal"]
    assert drive(moving)[0] > 0 and 0 < drive(blind)[0] < drive(moving)[0]
    assert [r.reaction for r in blind.reactions] == ["slow:speed_limits_unknown"]
    assert actions(acting) == [("pick", {"task": "t1"})]
    assert [e.kind for e in done.events] == ["action_done"]
    assert [name for name, _ in actions(charged)] == ["charge"]
    assert [r.reaction for r in lost.reactions] == ["stop:hold"] and drive(lost) == (0, 0)
