"""Giving way: where the robot can stand out of a mover's way, and the route there.

A stand-off: the robot waits on its route for a person or forklift to move on, and the
mover waits for the robot, because the robot stands where the mover's way goes on (a
forklift at the dead end of its loop, on the very dock the robot waits to reach, in an
aisle too narrow for the two to pass). Waiting longer changes nothing; the robot has to
step out of the mover's way. The mover is taken to be heading for the robot (it stopped
because its next step would bring it nearer), so out of its way is beside the line from
the mover through the robot, by the mover's size plus the robot's radius and clearance.
When the mover was seen moving, its way is also the line it last
moved along, both ways (a mover turns back in a stand-off): a spot beside the line from
the mover through the robot may still lie on that way, where the mover cannot pass
either. (A forklift at the dead end of its lane, the robot waiting diagonally below it:
the spot beside the line from the forklift through the robot lay on the lane, between
it and the wall; the forklift never came out and the robot never reached the dock on the
lane, for a whole run.) The spot is on the robot's side of the mover, never past it,
and not behind a shelf: the straight line to it crosses no shelf or zone, and the route
there is at most ``_DETOUR`` times that line plus ``_DETOUR_SLACK``. (Docks at the
closed end of 1.9 m bays, a picker walking up to one: the spot chosen lay in the next
bay, three metres away through a shelf and ten by route; the robot backed off towards it,
the picker stepped on, the robot came back, for a whole run.) The nearest such spot
within 6 m the robot may stand on, with a route there that keeps clear of the movers and
never closes in on the mover it gives way to, is where it gives way; with none, the
robot is cornered (``StandOff.take_cornered``). (A robot standing within the safety
margin of a person may only move away from it: a route that slips past the person's side
is stopped at once by the monitor, and the stand-off never ends; on one generated world
it lasted three minutes.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import shapely
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import Point2, Route, RoutePlanner

__all__ = ["give_way_route", "travel_direction"]

_RINGS: Final = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0)  # m from the robot: where to look
_BEARINGS: Final = 24  # directions looked in on each ring
_TRIED: Final = 12  # routes planned at most, nearest spots first
_DETOUR: Final = 1.5  # the longest route to a spot, as a multiple of the straight way
_DETOUR_SLACK: Final = 1.0  # m added to it
_CLOSING_TOLERANCE: Final = 0.01  # m a route to the spot may close in on the mover
_MOVING: Final = 0.05  # m/s a mover's sensed speed must reach to say where it is heading


def travel_direction(props: Mapping[str, Any]) -> Point2 | None:
    """The unit direction a mover moves in, from its map feature's sensed ``vx`` and
    ``vy``; None when it stands (or they are missing or malformed)."""
    vx, vy = props.get("vx"), props.get("vy")
    if not all(
        isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
        for c in (vx, vy)
    ):
        return None
    assert isinstance(vx, (int, float)) and isinstance(vy, (int, float))
    speed = math.hypot(vx, vy)
    if speed < _MOVING:
        return None
    return (vx / speed, vy / speed)


def give_way_route(
    router: RoutePlanner,
    pose: Point2,
    mover: BaseGeometry,
    *,
    blocked: Sequence[BaseGeometry],
    radius: float,
    clearance: float,
    heading: Point2 | None = None,
) -> Route | None:
    """A route from ``pose`` to the nearest spot out of ``mover``'s way (see the module
    docstring), keeping clear of ``blocked``; None when there is no such spot in reach.
    ``heading`` is the unit direction the mover was last seen moving in, if known."""
    centre = mover.centroid
    mx, my = float(centre.x), float(centre.y)
    size = math.sqrt(mover.area / math.pi) if mover.area > 0 else 0.0
    dx, dy = pose[0] - mx, pose[1] - my
    gap = math.hypot(dx, dy)
    if gap < 1e-9:
        return None
    ux, uy = dx / gap, dy / gap  # the way the mover is taken to be heading
    beside = size + radius + clearance
    walls = np.array([*router.problem.obstacles, *router.problem.forbidden], dtype=object)
    spots: list[tuple[float, Point2]] = []
    for ring in _RINGS:
        for k in range(_BEARINGS):
            angle = 2.0 * math.pi * k / _BEARINGS
            spot = (pose[0] + ring * math.cos(angle), pose[1] + ring * math.sin(angle))
            along = (spot[0] - mx) * ux + (spot[1] - my) * uy
            lateral = abs((spot[0] - mx) * uy - (spot[1] - my) * ux)
            if along < 0.0:
                continue  # past the mover: not on the robot's side of it
            if lateral < beside:
                continue  # still on the mover's way
            if heading is not None and _across(spot, (mx, my), heading) < beside:
                continue  # on the line it moves along, ahead or behind
            if Point(spot).distance(mover) < radius + clearance:
                continue
            if walls.size and shapely.intersects(walls, LineString((pose, spot))).any():
                continue  # behind a shelf or a zone: in the next bay, say
            if router.is_free(spot, blocked=blocked):
                spots.append((ring, spot))
    # the route may not bring the robot nearer the mover than it stands now, nor within
    # its radius and clearance of it when it stands farther off
    keep = min(Point(pose).distance(mover), radius + clearance) - _CLOSING_TOLERANCE
    tried = 0
    for _, spot in spots:
        if tried >= _TRIED:
            break
        tried += 1
        route = router.plan(pose, spot, blocked=blocked)
        if route is None:
            continue
        line = LineString(route) if len(route) >= 2 else None
        if line is not None and line.distance(mover) < keep:
            continue
        if line is not None and line.length > _DETOUR * math.dist(pose, spot) + _DETOUR_SLACK:
            continue  # round a shelf: not a spot beside the robot
        return route
    return None


def _across(spot: Point2, centre: Point2, direction: Point2) -> float:
    """How far ``spot`` lies from the line through ``centre`` along unit ``direction``."""
    return abs((spot[0] - centre[0]) * direction[1] - (spot[1] - centre[1]) * direction[0])
