"""The executor's reading of its view: every value read once a tick, each parsed once."""

from __future__ import annotations

import math
import pickle

from shapely.geometry import Point, box

from cabins.executor.seen import ViewReader
from cabins.warehouse.values import DEFAULT_ACCEPTANCE, DEFAULT_LIMITS, Pose, Velocity
from runtime import Feature, load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

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
    assert seen.missing == view.missing and seen.items is view.provenance
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


def test_a_reader_pickles() -> None:
    reader = ViewReader()
    view = make_view(SPEC, board=BOARD, features=[SHELF])
    reader.read(view)
    assert pickle.loads(pickle.dumps(reader)).read(view).plan == reader.read(view).plan
