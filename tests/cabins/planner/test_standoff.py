"""The planner's stand-off: when it starts, whom the robot gives way to, when it ends."""

from __future__ import annotations

import math

from shapely.geometry import Point

from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from cabins.planner.standoff import StandOff
from cabins.warehouse.routing import RoutePlanner, RoutingProblem
from runtime.cabin_map import Feature
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
REACH = 0.35 + 0.25


def mover(x: float, y: float, name: str = "p1", **props: float) -> Feature:
    return Feature(
        f"obstacle:{name}",
        Point(x, y).buffer(0.3),
        "obstacle",
        frozenset({"moving", "person"}),
        {"id": name, **props},
    )


def seen(*movers: Feature, now: float = 10.0, pose: tuple[float, float] = (5.0, 5.0)) -> Seen:
    view = make_view(SPEC, board={"pose": (*pose, 0.0)}, features=movers, now=now)
    return ViewReader(PlannerSettings()).read(view)


def stand_off(give_way_s: float = 15.0) -> StandOff:
    return StandOff(PlannerSettings(give_way_s=give_way_s, obstacle_moved=0.5))


def test_no_progress_with_no_mover_near_and_no_wait_is_no_stand_off() -> None:
    standoff = stand_off()
    standoff.begin(seen(mover(9.0, 5.0)), progress=3, waiting=False, reach=REACH)
    assert standoff.giving_way is None and not standoff.gone_round(3)


def test_no_progress_while_waiting_for_movers_goes_round_them_until_a_step_is_done() -> None:
    standoff = stand_off()
    standoff.begin(seen(mover(9.0, 5.0)), progress=3, waiting=True, reach=REACH)
    assert standoff.giving_way is None  # none near enough to give way to
    assert standoff.gone_round(3) and not standoff.gone_round(4)


def test_it_gives_way_to_the_nearest_mover_beside_it() -> None:
    standoff = stand_off()
    near = seen(mover(6.2, 5.0, "far"), mover(5.9, 5.0, "near"))
    standoff.begin(near, progress=0, waiting=False, reach=REACH)
    assert standoff.giving_way == "obstacle:near" and standoff.gone_round(0)
    # a second stand-off while it gives way keeps the first mover
    standoff.begin(seen(mover(5.8, 5.0, "other")), progress=0, waiting=False, reach=REACH)
    assert standoff.giving_way == "obstacle:near"


def test_giving_way_ends_once_the_mover_has_gone_a_step_is_done_or_time_is_up() -> None:
    def started() -> StandOff:
        standoff = stand_off(give_way_s=15.0)
        standoff.begin(seen(mover(5.9, 5.0)), progress=0, waiting=False, reach=REACH)
        return standoff

    standoff = started()
    assert not standoff.ends(seen(mover(6.0, 5.0), now=20.0), 0)  # still there
    assert standoff.giving_way is not None
    assert started().ends(seen(mover(5.9, 5.0), now=25.5), 0)  # give_way_s passed
    assert started().ends(seen(mover(5.9, 5.0)), 1)  # a step was done
    assert started().ends(seen(), 0)  # out of sight
    moved = started()
    assert moved.ends(seen(mover(7.2, 5.0)), 0)  # more than 2 * 0.3 + 0.5 m away
    assert moved.giving_way is None
    assert not moved.ends(seen(mover(7.2, 5.0)), 0)  # ended once


def test_a_mover_abreast_of_the_robot_has_not_passed_it() -> None:
    # A main lane along y; the robot beside it at x 5.7, the step's target down it and
    # round a corner. A mover coming up the lane, level with the robot, is a little
    # farther from that target than the robot only because it walks the lane's middle.
    pose, target = (5.7, 6.0), (15.0, -10.0)
    standoff = stand_off()
    standoff.begin(
        seen(mover(5.0, 4.8), pose=pose), progress=0, waiting=True, reach=REACH, target=target
    )
    assert standoff.giving_way == "obstacle:p1"
    abreast = mover(5.0, 6.2)
    assert math.dist((5.0, 6.2), target) > math.dist(pose, target)
    assert not standoff.ends(seen(abreast, pose=pose, now=12.0), 0)
    assert standoff.ends(seen(mover(5.0, 7.5), pose=pose, now=14.0), 0)  # past it


def test_the_way_aside_leads_away_from_the_mover_and_none_ends_the_giving_way() -> None:
    router = RoutePlanner(
        RoutingProblem(
            bounds=(0.0, 0.0, 10.0, 10.0),
            obstacles=(),
            forbidden=(),
            robot_radius=0.35,
            clearance=0.25,
            resolution=0.25,
        )
    )
    standoff = stand_off()
    person = mover(5.9, 5.0)
    standoff.begin(seen(person), progress=0, waiting=False, reach=REACH)
    route = standoff.aside(router, seen(person), [], radius=0.35, clearance=0.25)
    assert route is not None and route[0] == (5.0, 5.0)
    gap = Point(5.0, 5.0).distance(person.geometry)
    assert Point(route[-1]).distance(person.geometry) > gap
    assert standoff.aside(router, seen(), [], radius=0.35, clearance=0.25) is None
    assert standoff.giving_way is None
