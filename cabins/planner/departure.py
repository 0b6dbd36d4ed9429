"""Where a new route departs from: a robot at speed cannot turn or stop at once.

A new route begins with the ground the robot covers while it brakes: the current
route's continuation while the robot is on it, else straight along its heading, when
that ground is clear. At a crawl, or with no clear way ahead, it starts where the robot
is.
"""

from __future__ import annotations

import itertools
import math
from typing import Final

import shapely.ops
from shapely.geometry import Point
from shapely.geometry.base import BaseGeometry

from cabins.planner.seen import Seen
from cabins.warehouse.motion import BRAKE_FRACTION, REACTION_S
from cabins.warehouse.routing import Point2, Route, RoutePlanner

__all__ = ["departure"]

_DEPART_SPEED: Final = 0.3  # m/s: slower than this, a new route starts where the robot is
_DEPART_MARGIN: Final = 0.2  # m added to the braking distance
_ON_ROUTE: Final = 0.3  # m: nearer the route than this, the robot is following it


def departure(
    router: RoutePlanner, seen: Seen, blocked: list[BaseGeometry], line: BaseGeometry | None
) -> tuple[Point2, Route]:
    """Where a new route may start, and the way there (``()``: start where the robot
    is), clear of ``blocked``; ``line`` is the route the robot follows now, if any."""
    pose, speed = seen.pose, seen.speed
    assert pose is not None
    if speed is None or abs(speed) < _DEPART_SPEED:
        return pose, ()
    brake = BRAKE_FRACTION * seen.limits.max_accel
    reach = speed * speed / (2.0 * brake) + abs(speed) * REACTION_S + _DEPART_MARGIN
    if line is not None and float(line.distance(Point(pose))) <= _ON_ROUTE:
        along = float(line.project(Point(pose)))
        end = min(float(line.length), along + reach)
        if end - along >= reach * 0.5:
            ahead = shapely.ops.substring(line, along, end)
            coords = [(float(c[0]), float(c[1])) for c in ahead.coords]
            points = [pose, *coords[1:]]
            if all(
                router.segment_is_free(a, b, blocked=blocked)
                for a, b in itertools.pairwise(points[1:])
            ):
                return points[-1], tuple(points)
    ahead_xy = (
        pose[0] + reach * math.cos(seen.heading),
        pose[1] + reach * math.sin(seen.heading),
    )
    if speed > 0 and router.segment_is_free(pose, ahead_xy, blocked=blocked):
        return ahead_xy, (pose, ahead_xy)
    return pose, ()
