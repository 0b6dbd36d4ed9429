"""Where to wait for a single lane: a spot near its entry, out of every mover's way.

The robot waits for a lane a mover contests (``lanes``). Stopping on its own way, short of
the entry, it stood where movers walk: at a bay's mouth a picker comes out of the bay and
turns along the lane, and a robot standing on that way stops the picker (it yields, then
turns back into its bay), so the bay never cleared and the robot, its patience spent, went
in behind the picker and met it at the dock (hard:0, hard:5). So when the stopping point
lies on a mover's swept ground (``tracks``: where movers were seen to walk) the robot
waits at the nearest spot within ``_RINGS`` of it that is:

- free for the robot (clear of shelves, zones and the movers where they stand now) with
  the robot's reach kept from the floor's edge too (``standable``: the router keeps only
  the disc on the floor, and a spot hard by the wall left the robot no way back to its
  route that the executor took to be clear, so it turned on the spot, step after failed
  step, till it touched the wall: hard:25);
- off the lane's own ground, and off every mover's swept ground by the robot's reach and
  ``_MARGIN`` (a mover yields to a robot nearer its way than its radius, the robot's and
  a yield margin);
- in sight of the stopping point (not in the next bay), and reached by a route that keeps
  out of the lane (but for the robot's reach round where it stands and along its way to
  the stopping point) and is not much longer than the way to the stopping point.

None when there is no such spot: the robot waits at the stopping point as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import shapely
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import Point2, Route, RoutePlanner

__all__ = ["standable", "wait_route"]

_RINGS: Final = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0)  # m from the stopping point
_BEARINGS: Final = 24  # directions looked in on each ring
_TRIED: Final = 8  # routes planned at most, nearest spots first
_MARGIN: Final = 0.15  # m beyond the robot's reach a spot keeps from a mover's way
_DETOUR_SLACK: Final = 8.0  # m a route to the spot may be longer than the way to the stop


def wait_route(
    router: RoutePlanner,
    pose: Point2,
    stop: Point2,
    *,
    lane: BaseGeometry,
    swept: Sequence[BaseGeometry],
    blocked: Sequence[BaseGeometry],
    reach: float,
    way: float,
    through: bool = False,
) -> Route | None:
    """A route from ``pose`` to a spot near ``stop`` (a lane's entry) to wait at, out of
    the ``lane`` and of every mover's ``swept`` ground, clear of ``blocked``; ``way`` is
    the length of the robot's way to ``stop`` (see the module docstring). None when
    ``stop`` itself is out of the movers' ways (wait there), or no spot is. With
    ``through``, the robot is in the lane (backing out of a dead end): the route goes out
    through it, and ``stop`` is never the spot."""
    keep = reach + _MARGIN
    ways = [g for g in swept if not g.is_empty]
    if not through and all(Point(stop).distance(g) >= keep for g in ways):
        return None  # the stopping point is out of every way already
    walls = np.array([*router.problem.obstacles, *router.problem.forbidden], dtype=object)
    spots: list[Point2] = []
    for ring in _RINGS:
        for k in range(_BEARINGS):
            angle = 2.0 * math.pi * k / _BEARINGS
            spot = (stop[0] + ring * math.cos(angle), stop[1] + ring * math.sin(angle))
            here = Point(spot)
            if here.intersects(lane) or any(here.distance(g) < keep for g in ways):
                continue
            if walls.size and shapely.intersects(walls, LineString((stop, spot))).any():
                continue  # behind a shelf or a zone
            if standable(router, spot, reach, blocked):
                spots.append(spot)
    # the lane is kept out of, but for what is within the robot's reach of where it stands
    # and of its way to the stopping point (it stands at the lane's entry, or just inside
    # it: a route could not start at all, or started boxed in by a sliver of the lane's
    # ground beyond its reach; every spot was refused and it waited on the picker's way
    # out of the bay for the rest of the run, hard:45 seed 1)
    back = Point(pose) if math.dist(pose, stop) == 0.0 else LineString((pose, stop))
    keep_out = lane.difference(back.buffer(reach + _MARGIN))
    for spot in spots[:_TRIED]:
        route = router.plan(pose, spot, blocked=list(blocked) if through else [*blocked, keep_out])
        if route is None:
            continue
        length = float(LineString(route).length) if len(route) >= 2 else 0.0
        if length <= way + _DETOUR_SLACK + math.dist(stop, spot):
            return route
    return None


def standable(
    router: RoutePlanner, spot: Point2, reach: float, blocked: Sequence[BaseGeometry]
) -> bool:
    """Whether the robot may stop at ``spot``: free for it, clear of ``blocked``, and
    ``reach`` (its radius and clearance) inside the floor's edge."""
    minx, miny, maxx, maxy = router.problem.bounds
    x, y = spot
    inside = minx + reach <= x <= maxx - reach and miny + reach <= y <= maxy - reach
    return inside and router.is_free(spot, blocked=blocked)
