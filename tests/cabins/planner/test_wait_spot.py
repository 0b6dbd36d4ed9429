"""Spots to wait at and to give way at keep the robot's reach from the floor's edge.

The router keeps only the robot's disc on the floor (its clearance is kept from shelves
and zones, not from the walls): a wait spot chosen by that rule alone lay 2 cm from the
wall on hard:25, the executor found no clear way back to its route there, and the robot
turned on the spot, step after failed step, until it touched the wall (a collision).
"""

from __future__ import annotations

from shapely.geometry import LineString, box

from cabins.planner.wait_spot import standable, wait_route
from cabins.warehouse.routing import RoutePlanner, RoutingProblem

RADIUS, CLEARANCE = 0.3, 0.2
REACH = RADIUS + CLEARANCE
FLOOR = (0.0, 0.0, 12.0, 1.8)  # a strip: a mover walks its lower half


def _router(bounds: tuple[float, float, float, float] = FLOOR) -> RoutePlanner:
    return RoutePlanner(
        RoutingProblem(
            bounds=bounds,
            obstacles=(),
            forbidden=(),
            robot_radius=RADIUS,
            clearance=CLEARANCE,
            resolution=0.1,
        )
    )


def test_a_spot_within_reach_of_the_wall_is_free_for_the_router_but_not_standable() -> None:
    router = _router()
    by_the_wall = (5.0, FLOOR[3] - RADIUS - 0.05)
    assert router.is_free(by_the_wall)
    assert not standable(router, by_the_wall, REACH, ())
    assert standable(router, (5.0, FLOOR[3] - REACH), REACH, ())


def test_no_wait_spot_is_taken_within_reach_of_the_wall() -> None:
    router = _router()
    # the stopping point lies on the mover's way; off it, only a band by the wall is left
    route = wait_route(
        router,
        (1.0, 1.0),
        (3.0, 1.0),
        lane=box(4.0, 0.0, 12.0, 1.8),
        swept=[LineString([(0.0, 0.65), (12.0, 0.65)])],
        blocked=[],
        reach=REACH,
        way=2.0,
    )
    # off the mover's way by the reach and a margin, y >= 1.3; off the wall by the reach,
    # y <= 1.3: no spot on the rings is both (one 0.45 m from the wall was taken), so the
    # robot waits at the stopping point
    assert route is None, route


def test_a_robot_just_inside_the_lane_is_not_boxed_in_by_its_ground() -> None:
    router = _router((0.0, 0.0, 10.0, 10.0))
    lane = box(0.0, 4.0, 5.0, 6.0)  # a lane's ground, its entry at x = 5
    keep = REACH + 0.15
    pose, stop = (5.0 - keep - 0.1, 5.0), (4.9, 5.0)  # a sliver of ground beyond its reach
    route = wait_route(
        router,
        pose,
        stop,
        lane=lane,
        swept=[LineString([(4.9, 0.0), (4.9, 10.0)]).buffer(0.3)],  # a way across the entry
        blocked=[],
        reach=REACH,
        way=0.0,
    )
    assert route is not None
    assert route[-1][0] >= 4.9 + 0.3 + keep  # off the way, out of the lane
