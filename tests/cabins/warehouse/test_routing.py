"""Tests for cabins.warehouse.routing: routes keep the robot's disc clear and stay on the floor."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, Point, Polygon, box
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import Point2, Route, RoutePlanner, RoutingProblem

RADIUS = 0.3
CLEARANCE = 0.05


def planner(
    *,
    bounds: tuple[float, float, float, float] = (0.0, 0.0, 10.0, 6.0),
    obstacles: tuple[BaseGeometry, ...] = (),
    forbidden: tuple[BaseGeometry, ...] = (),
    robot_radius: float = RADIUS,
    clearance: float = CLEARANCE,
    resolution: float = 0.25,
) -> RoutePlanner:
    return RoutePlanner(
        RoutingProblem(
            bounds=bounds,
            obstacles=obstacles,
            forbidden=forbidden,
            robot_radius=robot_radius,
            clearance=clearance,
            resolution=resolution,
        )
    )


def footprint(route: Route, radius: float) -> BaseGeometry:
    return LineString(route).buffer(radius)


def assert_ends(route: Route | None, start: Point2, goal: Point2) -> Route:
    assert route is not None
    assert route[0] == start
    assert route[-1] == goal
    return route


# -- obstacles ---------------------------------------------------------------------------


def test_route_around_a_shelf_keeps_the_robot_radius_clear() -> None:
    shelf = box(4.0, 1.5, 6.0, 4.5)
    start, goal = (2.0, 3.0), (8.0, 3.0)
    route = assert_ends(planner(obstacles=(shelf,)).plan(start, goal), start, goal)

    assert len(route) > 2  # the straight line goes through the shelf
    assert not footprint(route, RADIUS).intersects(shelf)
    assert LineString(route).distance(shelf) > RADIUS + CLEARANCE
    assert footprint(route, RADIUS).covered_by(box(0.0, 0.0, 10.0, 6.0))


def test_clear_straight_line_is_the_route() -> None:
    start, goal = (1.0, 1.0), (9.0, 5.0)
    assert planner(obstacles=(box(4.0, 4.0, 5.0, 5.0),)).plan(start, goal) == (start, goal)


def test_same_start_and_goal_gives_a_two_point_route() -> None:
    assert planner().plan((3.0, 3.0), (3.0, 3.0)) == ((3.0, 3.0), (3.0, 3.0))


def test_start_and_goal_are_the_exact_ends_of_a_detour() -> None:
    wall = box(4.9, 0.0, 5.1, 4.6)
    start, goal = (1.2345678, 0.9876543), (8.7654321, 1.1111111)
    route = assert_ends(planner(obstacles=(wall,)).plan(start, goal), start, goal)
    assert all(isinstance(c, float) for point in route for c in point)
    assert not footprint(route, RADIUS).intersects(wall)


# -- forbidden zones ---------------------------------------------------------------------


def test_never_crosses_a_forbidden_zone_even_when_that_is_shortest() -> None:
    zone = box(4.0, 0.0, 6.0, 4.5)
    start, goal = (2.0, 1.0), (8.0, 1.0)
    route = assert_ends(planner(forbidden=(zone,)).plan(start, goal), start, goal)

    assert not footprint(route, RADIUS).intersects(zone)
    assert LineString(route).length > 2 * (4.5 - 1.0)  # it had to climb over the zone


def test_no_route_when_only_a_forbidden_zone_is_in_the_way() -> None:
    zone = box(4.0, 0.0, 6.0, 6.0)
    assert planner(forbidden=(zone,)).plan((2.0, 3.0), (8.0, 3.0)) is None


def test_forbidden_zone_margin_blocks_a_gap_the_disc_would_fit_through_otherwise() -> None:
    # The gap between the zones is 0.64 wide: the disc (0.6) would fit, the margin does not.
    zones = (box(4.0, 0.0, 6.0, 2.68), box(4.0, 3.32, 6.0, 6.0))
    assert planner(forbidden=zones).plan((2.0, 3.0), (8.0, 3.0)) is None
    wider = (box(4.0, 0.0, 6.0, 2.4), box(4.0, 3.6, 6.0, 6.0))
    route = planner(forbidden=wider).plan((2.0, 3.0), (8.0, 3.0))
    assert route is not None
    assert all(not footprint(route, RADIUS).intersects(z) for z in wider)


def test_goal_or_start_in_a_forbidden_zone_margin_gives_none() -> None:
    zone = box(4.0, 2.0, 6.0, 4.0)
    routes = planner(forbidden=(zone,))
    in_margin = (6.0 + RADIUS + CLEARANCE / 2, 3.0)  # the disc is clear, the margin is not
    assert routes.plan((1.0, 1.0), in_margin) is None
    assert routes.plan(in_margin, (9.0, 1.0)) is None
    assert routes.plan((6.0 + RADIUS + 2 * CLEARANCE, 3.0), (9.0, 1.0)) is not None


# -- unreachable goals -------------------------------------------------------------------


def test_none_when_the_goal_is_walled_off() -> None:
    ring = box(6.0, 1.0, 9.5, 5.0).difference(box(6.5, 1.5, 9.0, 4.5))
    routes = planner(obstacles=(ring,))
    assert routes.is_free((7.75, 3.0))
    assert routes.plan((2.0, 3.0), (7.75, 3.0)) is None


def test_none_when_goal_is_inside_an_obstacle_or_off_the_floor() -> None:
    routes = planner(obstacles=(box(4.0, 2.0, 5.0, 3.0),))
    assert routes.plan((1.0, 1.0), (4.5, 2.5)) is None
    assert routes.plan((1.0, 1.0), (11.0, 2.5)) is None
    assert routes.plan((1.0, 1.0), (9.9, 2.5)) is None  # the disc would leave the floor


# -- start inside an obstacle's clearance margin -----------------------------------------


def test_start_in_an_obstacle_margin_escapes_without_touching_the_obstacle() -> None:
    shelf = box(4.0, 1.0, 6.0, 5.0)
    start = (6.0 + RADIUS + CLEARANCE / 2, 3.0)  # disc clear of the shelf, margin not
    goal = (8.0, 3.0)
    routes = planner(obstacles=(shelf,))
    assert not routes.is_free(start)

    route = assert_ends(routes.plan(start, goal), start, goal)
    assert not footprint(route, RADIUS).intersects(shelf)
    assert all(routes.segment_is_free(a, b) for a, b in itertools.pairwise(route[1:]))


def test_start_whose_disc_touches_an_obstacle_gives_none() -> None:
    shelf = box(4.0, 1.0, 6.0, 5.0)
    assert planner(obstacles=(shelf,)).plan((6.0 + RADIUS / 2, 3.0), (8.0, 3.0)) is None


# -- determinism and blocked geometries --------------------------------------------------


def test_same_inputs_give_the_same_route() -> None:
    # A shelf placed symmetrically across the straight line: above and below tie.
    shelf = box(4.0, 1.5, 6.0, 4.5)
    blocked = (Point(7.0, 3.0).buffer(0.3),)
    start, goal = (2.0, 3.0), (9.0, 3.0)
    first = planner(obstacles=(shelf,)).plan(start, goal, blocked=blocked)
    assert first is not None
    again = planner(obstacles=(shelf,))
    assert [again.plan(start, goal, blocked=blocked) for _ in range(3)] == [first] * 3


def test_blocked_geometries_are_avoided() -> None:
    start, goal = (1.0, 3.0), (9.0, 3.0)
    routes = planner()
    assert routes.plan(start, goal) == (start, goal)

    crate = box(4.5, 2.0, 5.5, 4.5)
    route = assert_ends(routes.plan(start, goal, blocked=(crate,)), start, goal)
    assert len(route) > 2
    assert LineString(route).distance(crate) > RADIUS + CLEARANCE
    assert not routes.segment_is_free(start, goal, blocked=(crate,))
    assert routes.segment_is_free(start, goal)
    assert not routes.is_free((5.0, 1.8), blocked=(crate,))
    # The static grid is untouched by a call with blocked geometries.
    assert routes.plan(start, goal) == (start, goal)


def test_blocked_geometries_can_cut_off_the_goal() -> None:
    barrier = box(4.8, -1.0, 5.2, 7.0)
    assert planner().plan((1.0, 3.0), (9.0, 3.0), blocked=(barrier,)) is None


# -- the planner's interface -------------------------------------------------------------


def test_grid_is_read_only_and_marks_obstacles() -> None:
    routes = planner(obstacles=(box(4.0, 2.0, 6.0, 4.0),))
    assert routes.grid.shape == (24, 40)
    assert not routes.grid[12, 20]  # the cell centred on (5.125, 3.125)
    assert routes.grid[12, 4]
    with pytest.raises(ValueError):
        routes.grid[0, 0] = True


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"bounds": (0.0, 0.0, 0.0, 5.0)}, ValueError, "minx < maxx"),
        ({"bounds": (0.0, 0.0, 5.0)}, ValueError, "bounds"),
        ({"bounds": (0.0, 0.0, math.inf, 5.0)}, ValueError, "bounds\\[2\\]"),
        ({"robot_radius": -0.1}, ValueError, "robot_radius"),
        ({"robot_radius": 3.0}, ValueError, "too small"),
        ({"clearance": -0.01}, ValueError, "clearance"),
        ({"resolution": 0.0}, ValueError, "resolution"),
        ({"obstacles": ((1.0, 2.0),)}, TypeError, "obstacles\\[0\\]"),
        ({"forbidden": (Polygon([(0, 0), (2, 2), (2, 0), (0, 2)]),)}, ValueError, "forbidden"),
    ],
)
def test_bad_problems_are_refused_with_the_field_named(
    changes: dict[str, object], error: type[Exception], message: str
) -> None:
    fields: dict[str, object] = {
        "bounds": (0.0, 0.0, 5.0, 5.0),
        "obstacles": (),
        "forbidden": (),
        "robot_radius": 0.3,
    }
    fields.update(changes)
    with pytest.raises(error, match=message):
        RoutingProblem(**fields)  # type: ignore[arg-type]


def test_bad_points_are_refused() -> None:
    routes = planner()
    with pytest.raises(ValueError, match="start"):
        routes.plan((1.0, math.nan), (2.0, 2.0))
    with pytest.raises(ValueError, match="goal"):
        routes.plan((1.0, 1.0), (2.0, 2.0, 3.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="blocked\\[0\\]"):
        routes.plan((1.0, 1.0), (2.0, 2.0), blocked=("crate",))


# -- property: any route keeps the disc clear and on the floor ---------------------------

FLOOR = (0.0, 0.0, 12.0, 9.0)


@st.composite
def rectangles(draw: st.DrawFn) -> BaseGeometry:
    x = draw(st.floats(2.5, 8.0))
    y = draw(st.floats(-1.0, 8.0))
    w = draw(st.floats(0.1, 3.0))
    h = draw(st.floats(0.1, 5.0))
    return box(x, y, x + w, y + h)


def check_route(
    routes: RoutePlanner,
    route: Route | None,
    start: Point2,
    goal: Point2,
    movers: tuple[BaseGeometry, ...],
) -> None:
    """Every invariant of a returned route; also the cases where None is required."""
    problem = routes.problem
    radius, clearance = problem.robot_radius, problem.clearance
    if routes.is_free(start, blocked=movers) and routes.segment_is_free(
        start, goal, blocked=movers
    ):
        assert route == (start, goal)
    if not routes.is_free(goal, blocked=movers):
        assert route is None
    event("no route" if route is None else f"route of {min(len(route), 4)}+ points")
    if route is None:
        return
    assert route[0] == start
    assert route[-1] == goal
    body = footprint(route, radius)
    assert body.covered_by(box(*problem.bounds))
    for solid in (*problem.obstacles, *problem.forbidden, *movers):
        assert not body.intersects(solid)
    for zone in (*problem.forbidden, *movers):
        assert LineString(route).distance(zone) > radius + clearance
    # Apart from a first escape out of an obstacle's margin, every leg has full clearance.
    legs = list(itertools.pairwise(route))
    first_is_escape = not routes.is_free(start, blocked=movers)
    event(f"escape: {first_is_escape}")
    for a, b in legs[1:] if first_is_escape else legs:
        assert routes.segment_is_free(a, b, blocked=movers)


_SHELVES = st.lists(rectangles(), max_size=5)
_ZONES = st.lists(rectangles(), max_size=2)
_STARTS = st.tuples(st.floats(0.5, 2.5), st.floats(0.5, 8.5))


def _movers(size: float, count: int) -> st.SearchStrategy[list[tuple[float, float, float]]]:
    """Up to ``count`` round movers, (x, y, radius up to ``size``), mid-floor."""
    mover = st.tuples(st.floats(2.0, 10.0), st.floats(0.0, 9.0), st.floats(0.1, size))
    return st.lists(mover, max_size=count)


# Start on the left, goal on the right, solids in between: most examples need a detour.
@settings(max_examples=100, deadline=None)
@given(
    obstacles=_SHELVES,
    forbidden=_ZONES,
    radius=st.floats(0.1, 0.5),
    clearance=st.floats(0.0, 0.2),
    resolution=st.sampled_from([0.2, 0.25, 0.4, 0.5]),
    start=_STARTS,
    goal=st.tuples(st.floats(9.5, 11.5), st.floats(0.5, 8.5)),
    blocked=_movers(1.0, 2),
)
def test_any_route_keeps_the_footprint_clear(
    obstacles: list[BaseGeometry],
    forbidden: list[BaseGeometry],
    radius: float,
    clearance: float,
    resolution: float,
    start: Point2,
    goal: Point2,
    blocked: list[tuple[float, float, float]],
) -> None:
    routes = planner(
        bounds=FLOOR,
        obstacles=tuple(obstacles),
        forbidden=tuple(forbidden),
        robot_radius=radius,
        clearance=clearance,
        resolution=resolution,
    )
    movers = tuple(Point(x, y).buffer(size) for x, y, size in blocked)
    check_route(routes, routes.plan(start, goal, blocked=movers), start, goal, movers)


@settings(max_examples=100, deadline=None)
@given(
    obstacles=_SHELVES,
    forbidden=_ZONES,
    start=_STARTS,
    goals=st.lists(st.tuples(st.floats(2.5, 11.5), st.floats(0.5, 8.5)), min_size=1, max_size=6),
    blocked=_movers(1.5, 3),
)
def test_reachable_says_where_a_route_is_found_past_the_movers(
    obstacles: list[BaseGeometry],
    forbidden: list[BaseGeometry],
    start: Point2,
    goals: list[Point2],
    blocked: list[tuple[float, float, float]],
) -> None:
    # A goal ``reachable`` calls unreachable past the movers that a route reaches would be
    # a place given up that the robot can get to.
    routes = planner(bounds=FLOOR, obstacles=tuple(obstacles), forbidden=tuple(forbidden))
    movers = tuple(Point(x, y).buffer(size) for x, y, size in blocked)
    found = routes.reachable(start, goals, blocked=movers)
    for goal, reached in zip(goals, found, strict=True):
        route = routes.plan(start, goal, blocked=movers)
        event("reached" if route is not None else "not reached")
        assert reached == (route is not None)


def test_reachable_counts_the_movers_only_when_given() -> None:
    barrier = box(4.8, -1.0, 5.2, 7.0)
    routes = planner()
    assert routes.reachable((1.0, 3.0), [(9.0, 3.0)]) == (True,)
    assert routes.reachable((1.0, 3.0), [(9.0, 3.0), (3.0, 3.0)], blocked=(barrier,)) == (
        False,
        True,
    )


@settings(max_examples=50, deadline=None)
@given(
    others=st.lists(rectangles(), max_size=3),
    forbidden=st.lists(rectangles(), max_size=2),
    radius=st.floats(0.1, 0.5),
    clearance=st.floats(0.01, 0.2),
    depth=st.floats(0.0, 1.0),
    height=st.floats(3.0, 6.0),
    goal=st.tuples(st.floats(0.0, 12.0), st.floats(0.0, 9.0)),
)
def test_escape_from_an_obstacle_margin_never_touches_anything(
    others: list[BaseGeometry],
    forbidden: list[BaseGeometry],
    radius: float,
    clearance: float,
    depth: float,
    height: float,
    goal: Point2,
) -> None:
    shelf = box(4.0, 3.0, 6.0, 6.0)
    start = (6.0 + radius + depth * clearance, height)  # in the shelf's margin, or at its edge
    routes = planner(
        bounds=FLOOR,
        obstacles=(shelf, *others),
        forbidden=tuple(forbidden),
        robot_radius=radius,
        clearance=clearance,
    )
    check_route(routes, routes.plan(start, goal), start, goal, ())


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_planning_is_deterministic_for_random_layouts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    corners = rng.uniform((0.0, 0.0), (10.0, 7.0), size=(4, 2))
    shelves = tuple(box(x, y, x + 2.0, y + 0.8) for x, y in corners)
    start = (float(rng.uniform(0.5, 11.5)), float(rng.uniform(0.5, 8.5)))
    goal = (float(rng.uniform(0.5, 11.5)), float(rng.uniform(0.5, 8.5)))
    first = planner(bounds=FLOOR, obstacles=shelves).plan(start, goal)
    assert planner(bounds=FLOOR, obstacles=shelves).plan(start, goal) == first
