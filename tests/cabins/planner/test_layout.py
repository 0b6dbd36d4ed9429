"""The layout the planner remembers: kept when evicted, the route planner built again
only when it changed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shapely.geometry import box

from cabins.planner.layout import Layout
from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from runtime.cabin_map import Feature
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
ZONE = ((4.0, 4.0), (6.0, 4.0), (6.0, 10.0), (4.0, 10.0))
BOARD: dict[str, Any] = {
    "goal:deliver:t1": {"task": "t1"},
    "pose": (1.0, 1.0, 0.0),
    "world:bounds": (0.0, 0.0, 20.0, 10.0),
    "robot:radius": 0.35,
    "safety:forbidden:hv": {"zone": "hv", "polygon": ZONE},
    "constraint:speed:slow": {"zone": "slow", "polygon": ZONE, "max_speed": 0.5},
}


def shelf(x: float = 8.0) -> Feature:
    return Feature("shelf:S", box(x, 0.0, x + 1.0, 7.0), "shelf", frozenset({"static"}))


def seen(features: Iterable[Feature] = (), suppress: Iterable[str] = (), **board: Any) -> Seen:
    values = {k: v for k, v in {**BOARD, **board}.items() if v is not None}
    view = make_view(SPEC, board=values, features=features, suppress=suppress)
    return ViewReader(PlannerSettings()).read(view)


def layout() -> Layout:
    return Layout(PlannerSettings(clearance=0.25, resolution=0.25))


def test_the_route_planner_is_built_again_only_when_the_layout_changed() -> None:
    known = layout()
    known.learn(seen([shelf()]))
    router = known.router()
    assert router is not None
    assert router.problem.obstacles[0].equals(box(8.0, 0.0, 9.0, 7.0))
    assert len(router.problem.forbidden) == 1  # from the board's zone item
    known.learn(seen([shelf()]))  # the same shelf, another object: nothing changed
    assert known.router() is router
    known.learn(seen())  # the shelf evicted from view: still known
    assert known.router() is router
    known.learn(seen([shelf(10.0)]))  # it moved
    moved = known.router()
    assert moved is not router and moved is not None
    assert moved.problem.obstacles[0].equals(box(10.0, 0.0, 11.0, 7.0))
    known.learn(seen(**{"robot:radius": 0.5}))
    assert known.router() is not moved and known.reach == 0.5 + 0.25


def test_speed_zones_are_known_but_no_walls() -> None:
    known = layout()
    zone = Feature("zone:slow2", box(12.0, 7.0, 15.0, 10.0), "speed_zone")
    known.learn(seen([zone]))
    assert set(known.constraints) == {"map:zone:slow2", "constraint:speed:slow"}
    router = known.router()
    assert router is not None and len(router.problem.forbidden) == 1


def test_what_was_learned_of_the_floor_is_said_once() -> None:
    # the watchdog measures a way that grew with a shelf seen afresh (``remeasure``)
    known = layout()
    assert not known.take_learned()  # nothing known yet
    known.learn(seen([shelf()]))
    assert known.take_learned()
    assert not known.take_learned()  # once
    known.learn(seen([shelf()]))  # the same shelf, another object: nothing learned
    known.learn(seen())  # evicted from view: still known
    assert not known.take_learned()
    known.learn(seen([shelf(10.0)]))
    known.learn(seen([shelf(12.0)]))  # two changes between calls: said once
    assert known.take_learned()
    assert not known.take_learned()
