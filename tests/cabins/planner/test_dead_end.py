"""Stand-offs at a dead end: docks at the closed end of 1.9 m bays, a picker whose loop
ends in front of a dock, and tasks taken oldest first.

The issue's world, in miniature: five bays open to a lane, a dock at the closed end of
each, a picker walking up and down the middle bay to just in front of its dock, and six
tasks, the oldest of them from that dock. The robot went up the bay, met the picker, and
after ten seconds without progress gave way to a spot in the next bay, behind a shelf:
it backed off a little, the picker stepped on, the robot came back, for the whole run.
0 of 6 delivered, hundreds of re-plans, no alarm, and the five other tasks never started
because the oldest was taken first. Now the spot it gives way to is on its side of the
picker, out of the picker's way and not behind a shelf (out of the bay); a watchdog
raises ``stalled`` when the task gets no nearer for ``watchdog_s``, and recovers it:
re-routed, then deferred (the other tasks are served), then abandoned, with a reason.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import event, given, settings, target
from hypothesis import strategies as st
from shapely.affinity import rotate, translate
from shapely.geometry import LineString, Point, Polygon, box
from shapely.geometry.base import BaseGeometry

from cabins.planner import Planner, PlannerSettings, give_way_route
from cabins.warehouse.routing import Point2, Route, RoutePlanner, RoutingProblem
from runtime.cabin import Outbox
from runtime.cabin_map import Feature
from runtime.spec import load_spec
from runtime.testing import make_view, run_step
from sim.run.harness import Simulation
from sim.world.scenario import Scenario
from tests.support.floors import floor_router
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
SHELF_XS = (2.0, 4.9, 7.8, 10.7, 13.6, 16.5)  # west edges of 1 m shelves, 6 m deep
BAYS = tuple((a + 1.0 + b) / 2 for a, b in pairwise(SHELF_XS))
BAY_MOUTH = 6.0  # the bays run from y = 6 to the north wall at y = 12
DOCK_Y = 11.35
BLOCKED = BAYS[2]  # the middle bay, x = 9.75: its dock is B2
SHELVES = tuple(box(x, BAY_MOUTH, x + 1.0, 12.0) for x in SHELF_XS)


TASKS = (("B2", "L0"), ("L1", "B0"), ("B1", "L0"), ("B3", "L1"), ("L0", "B4"), ("B0", "B3"))
"""t1 .. t6, released 5 s apart: the oldest, t1, is picked up at the blocked dock."""


def world(picker_low: float, *, duration: float) -> Scenario:
    """The bays; the picker walks the middle bay between y = 10.6 (in front of its dock)
    and ``picker_low`` (below 6: out into the lane; above: never out of the bay)."""
    return Scenario.model_validate(
        {
            "name": "dead-end-bays",
            "duration": duration,
            "rate_hz": 20.0,
            "floor": {"max_x": 20.0, "max_y": 12.0},
            "shelves": [
                {"id": f"S{i}", "polygon": [list(p) for p in shelf.exterior.coords[:-1]]}
                for i, shelf in enumerate(SHELVES)
            ],
            "docks": [
                *({"id": f"B{i}", "x": x, "y": DOCK_Y} for i, x in enumerate(BAYS)),
                {"id": "L0", "x": 1.0, "y": 1.5},
                {"id": "L1", "x": 19.0, "y": 1.5},
            ],
            "chargers": [{"id": "C0", "x": 10.0, "y": 0.8}],
            "moving_obstacles": [
                {
                    "id": "picker",
                    "kind": "person",
                    "radius": 0.3,
                    "speed": 0.7,
                    "waypoints": [[BLOCKED, 10.6], [BLOCKED, picker_low]],
                }
            ],
            "tasks": [
                {"id": f"t{i + 1}", "pickup": pickup, "drop": drop, "release": 5.0 * i}
                for i, (pickup, drop) in enumerate(TASKS)
            ],
            "robot": {
                "radius": 0.35,
                "max_speed": 1.0,
                "max_turn_rate": 1.6,
                "max_accel": 1.0,
                "start": {"x": 3.0, "y": 2.5, "theta": 0.0},
                "battery_wh": 200.0,
                "drain_wh_per_m": 0.05,
                "drain_wh_per_s": 0.005,
                "charge_wh_per_s": 1.0,
            },
            "failures": {"pick_fail_p": 0.0, "drop_fail_p": 0.0, "sensor_dropout_p": 0.0},
        }
    )


# -- where to give way (the route planner on the bays, no simulation) ------------------


def _router(clearance: float = 0.25) -> RoutePlanner:
    return RoutePlanner(
        RoutingProblem(
            bounds=(0.0, 0.0, 20.0, 12.0),
            obstacles=SHELVES,
            forbidden=(),
            robot_radius=0.35,
            clearance=clearance,
            resolution=0.25,
        )
    )


def _through_a_shelf(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return any(LineString((a, b)).intersects(shelf) for shelf in SHELVES)


def test_in_a_dead_end_bay_it_gives_way_out_of_the_bay_not_into_the_next_one() -> None:
    # The picker stands in front of the dock, coming down the bay; the robot waits below
    # it. Before, the spot was in the next bay (12.7, 9.05), 3 m away through a shelf and
    # 10 m away by route: the robot backed off towards it and came back, for ever.
    pose = (BLOCKED, 9.0)
    picker = Point(BLOCKED, 10.0).buffer(0.3)
    route = give_way_route(
        _router(), pose, picker, blocked=[], radius=0.35, clearance=0.25, heading=(0.0, -1.0)
    )
    assert route is not None
    spot = route[-1]
    assert spot[1] < BAY_MOUTH  # out of the bay, in the lane
    assert abs(spot[0] - BLOCKED) >= 0.3 + 0.35 + 0.25  # off the picker's way out
    assert not _through_a_shelf(pose, spot)  # not behind a shelf
    length = float(LineString(route).length)
    assert length <= 1.5 * math.dist(pose, spot) + 1.0  # a way there, not round a shelf


def _deep_bays() -> RoutePlanner:
    """The bays 12 m deep, with 6 m of lane below their mouths."""
    return RoutePlanner(
        RoutingProblem(
            bounds=(0.0, -6.0, 20.0, 12.0),
            obstacles=tuple(box(x, 0.0, x + 1.0, 12.0) for x in SHELF_XS),
            forbidden=(),
            robot_radius=0.35,
            clearance=0.25,
            resolution=0.25,
        )
    )


def test_with_no_spot_in_reach_it_finds_none() -> None:
    # Deep in a bay with the picker above: no spot out of its way within 6 m
    pose = (BLOCKED, 10.0)
    picker = Point(BLOCKED, 11.0).buffer(0.3)
    longer = _deep_bays()
    found = give_way_route(
        longer, pose, picker, blocked=[], radius=0.35, clearance=0.25, heading=(0.0, -1.0)
    )
    assert found is None


def test_when_it_cannot_set_the_task_aside_it_retreats_out_of_a_deep_bay() -> None:
    # hard:0: the robot 14 m up a 1.9 m bay with the item for the dock at its closed end,
    # a picker in front of the dock: no spot within 6 m, and it waited below the picker
    # for the rest of the run. On a retreat it backs out of the bay and steps aside.
    pose = (BLOCKED, 10.0)
    picker = Point(BLOCKED, 11.0).buffer(0.3)
    deep = _deep_bays()
    route = give_way_route(
        deep,
        pose,
        picker,
        blocked=[],
        radius=0.35,
        clearance=0.25,
        heading=(0.0, -1.0),
        retreat=True,
    )
    assert route is not None
    spot = route[-1]
    assert min(LineString(route).coords, key=lambda p: p[1])[1] < 0.0  # out through the mouth
    assert abs(spot[0] - BLOCKED) >= 0.3 + 0.35 + 0.25  # off the picker's way out, out of its bay
    line = LineString(route)
    assert line.distance(picker) >= Point(pose).distance(picker) - 0.01  # never nearer
    assert line.length <= 1.5 * math.dist(pose, spot) + 1.0  # not round into the next bay


_LANE_X = 13.54  # hard:15's main lane, along the east wall; bays open to it westwards
_FORKLIFT_LOOP = LineString([(_LANE_X, 16.07), (_LANE_X, 32.76)]).buffer(0.6)


def _retreat_on_hard15(*pickers: tuple[float, float]) -> tuple[Route | None, BaseGeometry]:
    """The retreat from hard:15's bay mouth (12.85, 19.64), the forklift below at the end
    of its loop up the main lane, with pickers standing at ``pickers``; and the forklift."""
    rows = (13.46, 16.09, 17.91, 19.67, 21.78, 24.38, 26.96, 29.55, 31.4, 33.19, 35.03, 37.7)
    shelves = tuple(
        box(0.0, low, 12.1, high) for low, high in zip(rows[::2], rows[1::2], strict=True)
    )
    router = floor_router((0.0, 12.0, 15.0, 45.0), shelves, radius=0.334, clearance=0.25)
    forklift = Point(_LANE_X, 17.31).buffer(0.6)
    route = give_way_route(
        router,
        (12.85, 19.64),
        forklift,
        blocked=[Point(x, y).buffer(0.3) for x, y in pickers],
        radius=0.334,
        clearance=0.25,
        heading=(0.0, 1.0),
        retreat=True,
        swept=_FORKLIFT_LOOP,
    )
    return route, forklift


def test_a_retreat_takes_the_next_bay_round_a_shelf_before_the_lanes_far_end() -> None:
    # hard:15 with the movers' map lost: a forklift at its loop's end in the main lane,
    # the bay mouth beside the robot taken by a picker coming out of it. The retreat took
    # the lane's far end in sight, 19 m up (out of sight came after all in sight), past
    # the forklift's loop's far end: it followed the forklift back, a stalled alarm. The
    # next bay, 7 m up round the corner of a shelf, lets the forklift pass.
    pose = (12.85, 19.64)
    route, forklift = _retreat_on_hard15((11.3, 20.73))
    assert route is not None and len(route) >= 2
    spot = route[-1]
    assert spot[0] < 12.1 and 24.38 < spot[1] < 26.96  # in the next bay up
    line = LineString(route)
    assert line.length <= 1.5 * math.dist(pose, spot) + 1.0
    assert line.distance(forklift) >= Point(pose).distance(forklift) - 0.01  # never nearer


def test_a_retreat_whose_spots_out_of_sight_are_cut_off_still_finds_one_in_sight() -> None:
    # Review: with a picker in the next bay's mouth too, the 24 routes a retreat plans
    # were spent on spots behind the two pickers, and it found none (cornered); the lane's
    # far end had been found before. Spots the grid has no way to past the movers are
    # dropped before any route is planned.
    route, _ = _retreat_on_hard15((11.3, 20.73), (11.4, 25.67))
    assert route is not None and len(route) >= 2
    assert Point(route[-1]).distance(_FORKLIFT_LOOP) >= 0.334 + 0.25  # off its loop


def test_a_retreat_past_spots_out_of_sight_that_will_not_do_finds_the_lane_in_sight() -> None:
    # Review: a cap on the spots out of sight dropped every spot ranked after the 13th of
    # them, in sight or not; here 32 spots out of sight (beyond a shelf, round its end)
    # ranked first, none would do, and the robot was left cornered with the lane in sight.
    # Ranked by the grid's way past the mover's keep-out, they are dropped or come last.
    shelves = (box(0.0, 4.0, 27.0, 5.0), box(29.0, 4.0, 40.0, 5.0))
    router = floor_router((0.0, 0.0, 40.0, 10.0), shelves, radius=0.334, clearance=0.25)
    route = give_way_route(
        router,
        (26.5, 2.0),
        Point(28.0, 3.3).buffer(0.3),
        blocked=[],
        radius=0.334,
        clearance=0.25,
        heading=(-1.0, 0.0),
        retreat=True,
        swept=box(13.0, 0.0, 30.0, 4.0),
    )
    assert route is not None and len(route) >= 2
    assert route[-1][1] < 4.0  # in the lane, in sight


# -- cornered: no spot to give way, another task waiting (the planner on views) -------


def _goal(task: str, pickup: str, drop: str, released: float) -> dict[str, Any]:
    docks = {"B2": (BLOCKED, DOCK_Y), "L0": (1.0, 1.5), "L1": (19.0, 1.5)}
    return {
        "task": task,
        "pickup": pickup,
        "drop": drop,
        "pickup_xy": docks[pickup],
        "drop_xy": docks[drop],
        "released": released,
    }


def _picker(y: float) -> Feature:
    return Feature(
        "obstacle:picker",
        Point(BLOCKED, y).buffer(0.3),
        "obstacle",
        frozenset({"moving", "person"}),
        {"id": "picker", "kind": "person"},
    )


def test_cornered_in_a_stand_off_it_defers_the_task_and_serves_the_next() -> None:
    # The bays 12 m deep, the robot 4 m in with the picker in front of it: no spot out
    # of the picker's way within reach. It used to back off 0.8 m and come back; now it
    # sets the oldest task aside and serves the next one, and says so.
    shelves = [
        Feature(f"shelf:S{i}", box(x, 0.0, x + 1.0, 12.0), "shelf", frozenset({"static"}))
        for i, x in enumerate(SHELF_XS)
    ]
    board: dict[str, Any] = {
        "goal:deliver:t1": _goal("t1", "B2", "L0", 0.0),
        "goal:deliver:t2": _goal("t2", "L1", "L0", 5.0),
        "pose": (BLOCKED, 10.0, math.pi / 2),
        "velocity": (0.0, 0.0),
        "battery": 0.9,
        "cargo": None,
        "world:bounds": (0.0, -6.0, 20.0, 12.0),
        "robot:radius": 0.35,
        "docks": {"B2": (BLOCKED, DOCK_Y), "L0": (1.0, 1.5), "L1": (19.0, 1.5)},
        "chargers": {"C0": (10.0, -5.0)},
    }
    planner = Planner(SPEC)
    events: list[tuple[str, dict[str, Any]]] = []
    now = 10.0
    for tick in range(planner.settings.stall_ticks + 10):
        view = make_view(SPEC, board=board, features=[*shelves, _picker(11.0)], now=now, tick=tick)
        out: Outbox = run_step(planner, view)
        for write in out.writes:
            board[write.key] = write.value
        events += [(e.kind, dict(e.data)) for e in out.events]
        now += 0.05
    kinds = [kind for kind, _ in events]
    assert "give_way" not in kinds
    [deferred] = [data for kind, data in events if kind == "task_deferred"]
    assert deferred["task"] == "t1"
    assert deferred["reason"] == "stand_off: no spot to give way to obstacle:picker"
    stalled_at = 10.0 + 0.05 * planner.settings.stall_ticks  # a stand-off, ten seconds on
    assert deferred["until"] == pytest.approx(stalled_at + 60.0, abs=0.1)
    started = [data["task"] for kind, data in events if kind == "task_started"]
    assert started == ["t1", "t2"]
    assert planner.task == "t2"
    assert board["route"][-1] == (19.0, 1.5)


# -- the miniatures, simulated ------------------------------------------------------------


def _summary(sim: Simulation) -> dict[str, Any]:
    summary = sim.run()
    assert summary["collisions"] == 0, summary["collision_details"]
    assert summary["safety_violations"] == 0
    return summary


@pytest.mark.slow
def test_a_picker_that_leaves_the_bay_now_and_then_lets_every_task_be_delivered() -> None:
    # The picker walks out into the lane and back: giving way out of the bay until it
    # has passed the robot lets the robot in behind it. (Main delivered these 6 too:
    # this guards that giving way out of the bay, not into the next, keeps them.)
    sim = Simulation(world(4.0, duration=400.0), seed=0)
    summary = _summary(sim)
    assert summary["deliveries_done"] == 6, summary
    assert sim.tally.kinds["task_abandoned"] == 0


@pytest.mark.slow
def test_a_dock_blocked_for_good_is_abandoned_with_a_reason_and_the_rest_delivered() -> None:
    # The picker never leaves the bay: its dock cannot be reached. Before: 0 of 6
    # delivered, ~265 re-plans, no alarm. Now the robot does not follow the picker into
    # the bay: it waits at the mouth, sets the task aside after lane_wait_s and serves the
    # other five; back at the mouth with nothing else to do it waits on (the watchdog
    # lets a wait for a lane be, for a while), then stalls, is deferred once more and
    # abandons the task with a reason: never silently.
    sim = Simulation(world(7.5, duration=1500.0), seed=0)
    seen: list[tuple[str, dict[str, Any]]] = []
    sim.log.add_listener(
        lambda e: (
            seen.append((e.kind, dict(e.data)))
            if e.kind in ("alarm", "task_deferred", "task_resumed", "task_abandoned")
            else None
        )
    )
    summary = _summary(sim)
    assert summary["deliveries_done"] == 5, summary
    stalled = [d for k, d in seen if k == "alarm" and d["kind"] == "stalled"]
    assert stalled and {d["task"] for d in stalled} == {"t1"}
    assert all(d["cause"] == "waiting_for_mover" and d["level"] == "alarm" for d in stalled)
    [abandoned] = [d for k, d in seen if k == "task_abandoned"]
    assert abandoned["task"] == "t1" and abandoned["reason"].startswith("stalled")
    deferred = [d for k, d in seen if k == "task_deferred"]
    resumed = [d for k, d in seen if k == "task_resumed"]
    max_deferrals = PlannerSettings().max_deferrals
    assert [d["task"] for d in deferred] == ["t1"] * max_deferrals
    assert deferred[0]["reason"].startswith("single_lane")  # the wait at the bay, first
    assert len(resumed) == max_deferrals
    assert len(stalled) == max_deferrals + 1  # re-routed, deferred, abandoned


_FLOOR = (0.0, 0.0, 20.0, 15.0)


@st.composite
def _walls(draw: st.DrawFn) -> BaseGeometry:
    """A shelf or zone: a strip against one edge of the floor, shallow or deep (the
    generator's zones along a wall are 0.3 to 0.8 m deep), or a box turned anywhere."""
    if draw(st.booleans()):
        depth = draw(st.floats(0.2, 3.0))
        start, length = draw(st.floats(0.0, 14.0)), draw(st.floats(0.5, 6.0))
        edge = draw(st.sampled_from("SNWE"))
        if edge in "SN":
            low = 0.0 if edge == "S" else 15.0 - depth
            return box(start, low, min(start + length, 20.0), low + depth)
        low = 0.0 if edge == "W" else 20.0 - depth
        return box(low, start, low + depth, min(start + length, 15.0))
    shape = box(0.0, 0.0, draw(st.floats(0.3, 6.0)), draw(st.floats(0.3, 6.0)))
    shape = rotate(shape, draw(st.floats(0.0, 180.0)), origin=(0.0, 0.0))
    return translate(shape, draw(st.floats(0.0, 18.0)), draw(st.floats(0.0, 13.0)))


_WEST = st.tuples(st.floats(0.4, 7.0), st.one_of(st.floats(0.34, 1.6), st.floats(0.4, 14.6)))
_EAST = st.tuples(st.floats(13.0, 19.6), st.one_of(st.floats(0.34, 1.6), st.floats(0.4, 14.6)))


_MOVERS = st.lists(
    st.tuples(st.floats(0.5, 19.5), st.floats(0.5, 14.5), st.floats(0.3, 1.2)), max_size=3
)


@settings(max_examples=150, deadline=None)
@given(
    walls=st.lists(_walls(), min_size=1, max_size=6),
    zones=st.integers(0, 6),
    pose=_WEST,
    spots=st.lists(_EAST, min_size=1, max_size=4),
    movers=_MOVERS,
)
def test_the_grids_way_never_drops_a_route_the_detour_allows(
    walls: list[BaseGeometry],
    zones: int,
    pose: tuple[float, float],
    spots: list[tuple[float, float]],
    movers: list[tuple[float, float, float]],
) -> None:
    # The retreat drops a spot whose way on the grid is far longer than the detour allows,
    # and plans the rest shortest way first: a route the planner finds shorter than that
    # way, by more than the grid's excess, is a spot dropped that would do.
    # Shelves and zones (the first ``zones`` walls are forbidden zones) against the
    # floor's edge and turned anywhere, across the floor, with movers about.
    from cabins.planner.give_way import _WAY_OVER, _WAY_SLACK

    problem = RoutingProblem(
        bounds=_FLOOR,
        obstacles=tuple(walls[zones:]),
        forbidden=tuple(walls[:zones]),
        robot_radius=0.334,
        clearance=0.25,
        resolution=0.25,
    )
    router = RoutePlanner(problem)
    blocked = [Point(x, y).buffer(size) for x, y, size in movers]
    ways = router.ways(pose, spots, blocked=blocked)
    for spot, way in zip(spots, ways, strict=True):
        route = router.plan(pose, spot, blocked=blocked)
        event("no route" if route is None else f"route of {min(len(route), 4)}+ points")
        if route is None:
            assert way == math.inf
            continue
        length = float(LineString(route).length)
        assert length - 1e-9 <= way <= _WAY_OVER * length + _WAY_SLACK * 0.25


def test_a_way_longer_than_asked_about_is_none() -> None:
    shelf = box(10.0, 0.0, 11.0, 8.0)
    router = floor_router((0.0, 0.0, 30.0, 10.0), (shelf,), radius=0.334, clearance=0.25)
    near, round_the_shelf = (4.0, 5.0), (16.0, 5.0)
    full = router.ways((2.0, 5.0), [near, round_the_shelf])
    assert full[0] == pytest.approx(2.0)  # the straight way
    assert 16.0 < full[1] < math.inf  # up round the shelf's end (16.1 m) and down again
    assert router.ways((2.0, 5.0), [near, round_the_shelf], within=full[1] - 0.5) == (
        full[0],
        math.inf,
    )
    walled = router.ways((2.0, 5.0), [round_the_shelf], blocked=[box(10.0, 7.5, 11.0, 10.0)])
    assert walled == (math.inf,)


def test_a_spot_whose_route_the_detour_allows_is_kept_past_turned_shelves() -> None:
    # Review: a spot 7.8 m off past two shelves turned 24 degrees, its route 12.63 m (the
    # detour allows 12.75 m), the grid's way 14.74 m: 17 % over the route, where the cut
    # allowed 8 % and 3 cells, and the spot was dropped.
    from cabins.planner.give_way import _by_way

    turned = (
        Polygon([(10.7536, 6.1785), (10.5297, 6.6865), (1.3792, 2.653), (1.6032, 2.145)]),
        Polygon([(18.4682, 12.2299), (17.8109, 13.7209), (4.8754, 8.019), (5.5326, 6.5279)]),
    )
    router = floor_router((-2.0, -4.0, 22.0, 19.0), turned, radius=0.334, clearance=0.25)
    pose, spot = (10.1711, 5.0179), (2.4292, 3.8122)
    route = router.plan(pose, spot)
    assert route is not None
    assert LineString(route).length <= 1.5 * math.dist(pose, spot) + 1.0
    assert _by_way(router, pose, [spot], []) == [spot]


@st.composite
def _turned_rows(draw: st.DrawFn) -> tuple[RoutePlanner, Point2, Point2]:
    """A floor of 2 to 6 thin shelves in rows, open at alternate ends and all turned by
    one angle, a robot beside the face of one and a spot beside another: routes that
    zig-zag round shelf ends, close to the faces, where the grid keeps more off a corner
    than a route does (review: 17 % over the route past two turned shelves)."""
    count, depth = draw(st.integers(2, 6)), draw(st.floats(0.2, 0.8))
    gap = draw(st.floats(1.5, 2.6))
    shelves = [
        box(
            0.0 if i % 2 else 3.0,
            i * (gap + depth),
            17.0 if i % 2 else 20.0,
            i * (gap + depth) + depth,
        )
        for i in range(count)
    ]
    below, above = sorted(draw(st.lists(st.integers(0, count - 1), min_size=2, max_size=2)))
    off = 0.584 + draw(st.floats(-0.2, 0.3))
    pose = Point(draw(st.floats(1.0, 19.0)), below * (gap + depth) - off)
    spot = Point(draw(st.floats(1.0, 19.0)), above * (gap + depth) + depth + off)
    angle, pivot = draw(st.floats(15.0, 45.0)), Point(10.0, 8.0)
    turned = [rotate(shelf, angle, origin=pivot) for shelf in shelves]
    ends = [rotate(p, angle, origin=pivot) for p in (pose, spot)]
    router = floor_router((-8.0, -8.0, 28.0, 28.0), turned, radius=0.334, clearance=0.25)
    return router, (ends[0].x, ends[0].y), (ends[1].x, ends[1].y)


@settings(max_examples=100, deadline=None)
@given(floor=_turned_rows())
def test_round_turned_rows_the_grids_way_keeps_a_route_the_detour_allows(
    floor: tuple[RoutePlanner, Point2, Point2],
) -> None:
    from cabins.planner.give_way import _WAY_OVER, _WAY_SLACK

    router, pose, spot = floor
    route = router.plan(pose, spot)
    (way,) = router.ways(pose, [spot])
    if route is None:
        assert way == math.inf
        return
    length = float(LineString(route).length)
    event(f"route of {min(len(route), 5)}+ points")
    target(way - 1.0824 * length, label="the grid's way over 8 % more than the route")
    assert length - 1e-9 <= way <= _WAY_OVER * length + _WAY_SLACK * 0.25
