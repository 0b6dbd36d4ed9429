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
the picker stepped on, the robot came back, for a whole run.) Spots are looked at on 24
bearings per ring, then, when none of those will do, between them every ``_SPACING`` of
arc (hard:15: a bay mouth 1.8 m wide beside a forklift fell between two bearings, and the
robot retreated 16 m ahead of it; looked at all at once, the routes tried were spent on
neighbours of one ring, and spots farther out that had been found were lost). The nearest
such spot within 6 m the robot may stand on (``standable``: its reach inside the floor's edge too),
with a route there that keeps clear of the movers and never closes in on the mover it
gives way to (never within its reach of it, nor nearer than the robot stands when
that is less), is where it gives way; with none, the robot is cornered
(``StandOff.take_cornered``). (A robot standing within the safety margin of a person may
only move away from it: a route that slips past the person's side is stopped at once by
the monitor, and the stand-off never ends; on one generated world it lasted three
minutes.)

**Retreat.** Deep in a single lane (a dead-end bay, a long corridor) with the mover
between the robot and where it goes, there is no such spot within 6 m: the mover cannot
pass the robot anywhere near, and the robot cannot pass it. When the robot may not set the
task aside (it carries the item, or no other task can be served), it retreats: the rings
reach on to ``_RETREAT_RINGS`` (the lane's mouth, the corridor's end), where the spot need
not be in sight in a straight line (the way out of a bay turns into the lane) but the
route there is still at most ``_DETOUR`` times the straight way plus ``_DETOUR_SLACK`` (so
not the long way round a shelf into the next bay) and never closes in on the mover.
(hard:0: a picker walking a 1.9 m bay up to just short of its dock, the robot 14 m in with
the item for that dock: it waited below the picker for the rest of the run.) The retreat's
spots are many (every ``_SPACING`` of nine rings) and most of its routes fail for one
reason (round a shelf, closing in on the mover), so they rank by the way there: one search
of the grid from the robot past the movers and past the mover's keep-out (the closing-in
above) gives each spot about its route's length (``RoutePlanner.ways``); a spot it has no
way to, or a way far longer than the detour allows, is dropped, and the routes are planned
shortest way first. (hard:15 with the movers' map lost: the bay mouth beside the robot
taken by a picker, a forklift at its loop's end; with the spots in sight tried first, it
retreated 19 m up the lane, past the end of the forklift's loop, and followed the forklift
back: a stalled alarm. The next bay, 7 m up round a shelf's corner, lets the forklift by.
A cap on the spots out of sight tried instead cornered the robot on a generated world,
whose one way out ranked after the cap.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

import numpy as np
import shapely
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.planner.wait_spot import standable
from cabins.warehouse.routing import Point2, Route, RoutePlanner

__all__ = ["give_way_route", "travel_direction"]

_RINGS: Final = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0)  # m from the robot: where to look
_RETREAT_RINGS: Final = (7.0, 8.5, 10.0, 12.0, 14.0, 16.5, 19.0, 22.0, 25.0)  # on a retreat
_BEARINGS: Final = 24  # directions looked in first on each near ring
_SPACING: Final = 0.3  # m at most between two spots looked at on a ring, when looked between
_TRIED: Final = 12  # routes planned at most, nearest spots first
_RETREAT_TRIED: Final = 24  # on a retreat
_WAY_OVER: Final = 1.25  # the grid's way over the route planned, at most, with the slack
_WAY_SLACK: Final = 4.0  # grid cells added to that (``_by_way``)
_DETOUR: Final = 1.5  # the longest route to a spot, as a multiple of the straight way
_DETOUR_SLACK: Final = 1.0  # m added to it
_CLOSING_TOLERANCE: Final = 0.01  # m a route to the spot may close in on the mover
_SWEPT_MARGIN: Final = 0.15  # m beyond the robot's reach a spot keeps off a mover's ground
_ASIDE_MARGIN: Final = 0.1  # m more off a mover's line that counts as out of its way already
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
    retreat: bool = False,
    swept: BaseGeometry | None = None,
) -> Route | None:
    """A route from ``pose`` to the nearest spot out of ``mover``'s way (see the module
    docstring), keeping clear of ``blocked``; None when there is no such spot in reach, and
    no route (stand still) when the robot is out of its way already. ``heading`` is the
    unit direction the mover was last seen moving in, if known, and ``swept`` the ground it
    was seen to walk (``tracks``); with ``retreat``, the spots out to ``_RETREAT_RINGS`` are
    looked at when none nearer is."""
    away = _Away(mover, radius + clearance, heading, swept)
    if away.aside(pose):
        return ()
    near = partial(_nearest_spot, router, pose, away, blocked, radius, clearance, _RINGS)
    route = near(tries=_TRIED)
    if route is None:  # between those bearings, every _SPACING of arc or less
        route = near(tries=_TRIED, between=True)
    if route is None and retreat:
        route = _nearest_spot(
            router, pose, away, blocked, radius, clearance, _RETREAT_RINGS, tries=_RETREAT_TRIED
        )
    return route


class _Away:
    """What out of a mover's way means: off the line from it through the robot and off the
    line it moves along (``heading``) by its size and the robot's ``reach``, and off the
    ground it was seen to walk (``swept``) by the reach and ``_SWEPT_MARGIN``."""

    def __init__(
        self,
        mover: BaseGeometry,
        reach: float,
        heading: Point2 | None,
        swept: BaseGeometry | None,
    ) -> None:
        centre = mover.centroid
        self.mover = mover
        self.centre = (float(centre.x), float(centre.y))
        self.size = math.sqrt(mover.area / math.pi) if mover.area > 0 else 0.0
        self.reach = reach
        self.heading = heading
        self.swept = swept

    def off_its_ways(self, spot: Point2) -> bool:
        """Off the line it moves along and off the ground it was seen to walk."""
        heading, swept = self.heading, self.swept
        if heading is not None and _across(spot, self.centre, heading) < self.size + self.reach:
            return False
        return swept is None or Point(spot).distance(swept) >= self.reach + _SWEPT_MARGIN

    def aside(self, pose: Point2) -> bool:
        """Whether a robot at ``pose`` is out of the way of a mover seen moving already: off
        the line it moves along by ``_ASIDE_MARGIN`` more, and off its ground."""
        heading = self.heading
        if heading is None or self.swept is None:
            return False
        beside = self.size + self.reach + _ASIDE_MARGIN
        return _across(pose, self.centre, heading) >= beside and self.off_its_ways(pose)


def _nearest_spot(
    router: RoutePlanner,
    pose: Point2,
    away: _Away,
    blocked: Sequence[BaseGeometry],
    radius: float,
    clearance: float,
    rings: Sequence[float],
    *,
    tries: int,
    between: bool = False,
) -> Route | None:
    """``give_way_route`` on ``rings``, planning ``tries`` routes at most; the straight way
    to a spot crosses no shelf or zone on the near rings (``_RINGS``), not on a retreat,
    where the spots rank by the grid's way there (``_by_way``). With ``between``, the spots
    between the near rings' bearings (``_spots``)."""
    mover = away.mover
    spots = _spots(router, pose, away, blocked, rings, between=between)
    # the route may not bring the robot nearer the mover than it stands now, nor within
    # its radius and clearance of it when it stands farther off
    keep = min(Point(pose).distance(mover), radius + clearance) - _CLOSING_TOLERANCE
    if rings is not _RINGS:
        # a route keeps radius + clearance off what blocks it: off the mover shrunk by the
        # rest, it keeps ``keep`` off a round mover (a little less by a forklift's corners,
        # which the check below refuses)
        nearer = mover.buffer(keep - radius - clearance - 1e-6)
        blocked = [*blocked, *([] if nearer.is_empty else [nearer])]
        spots = _by_way(router, pose, spots, blocked)
    for spot in spots[:tries]:
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


def _by_way(
    router: RoutePlanner, pose: Point2, spots: list[Point2], blocked: Sequence[BaseGeometry]
) -> list[Point2]:
    """The ``spots`` whose way from ``pose`` past ``blocked`` on the grid may be a route the
    detour allows, shortest way first. The grid's way is never shorter than the route
    planned there; it is longer by the grid's steps (8 % at most) and by a half-diagonal
    of a cell more kept off each corner it goes round (a way past two turned shelves was
    17 % longer), so a spot is dropped only when its way is more than ``_WAY_OVER`` times the detour
    allowed plus ``_WAY_SLACK`` cells."""
    slack = _WAY_SLACK * router.problem.resolution
    limits = [
        _WAY_OVER * (_DETOUR * math.dist(pose, spot) + _DETOUR_SLACK) + slack for spot in spots
    ]
    ways = router.ways(pose, spots, blocked=blocked, within=max(limits, default=0.0))
    ranked = sorted(
        (way, k) for k, (way, limit) in enumerate(zip(ways, limits, strict=True)) if way <= limit
    )
    return [spots[k] for _, k in ranked]


def _spots(
    router: RoutePlanner,
    pose: Point2,
    away: _Away,
    blocked: Sequence[BaseGeometry],
    rings: Sequence[float],
    *,
    between: bool = False,
) -> list[Point2]:
    """The free spots on ``rings`` out of the mover's way on the robot's side of it,
    nearest first. The near rings are looked at on ``_BEARINGS`` bearings, or with
    ``between`` on the bearings between those, every ``_SPACING`` of arc or less; a
    retreat's rings every ``_SPACING``."""
    in_sight = rings is _RINGS
    mover, reach, size = away.mover, away.reach, away.size
    mx, my = away.centre
    dx, dy = pose[0] - mx, pose[1] - my
    gap = math.hypot(dx, dy)
    if gap < 1e-9:
        return []
    ux, uy = dx / gap, dy / gap  # the way the mover is taken to be heading
    beside = size + reach
    walls = np.array([*router.problem.obstacles, *router.problem.forbidden], dtype=object)
    spots: list[tuple[float, Point2]] = []
    for ring in rings:
        arc = 2.0 * math.pi * ring
        split = math.ceil(arc / (_SPACING * _BEARINGS)) if between else 1
        bearings = _BEARINGS * split if in_sight else math.ceil(arc / _SPACING)
        for k in range(bearings):
            if between and k % split == 0:
                continue  # on one of the bearings looked at first
            angle = 2.0 * math.pi * k / bearings
            spot = (pose[0] + ring * math.cos(angle), pose[1] + ring * math.sin(angle))
            along = (spot[0] - mx) * ux + (spot[1] - my) * uy
            lateral = abs((spot[0] - mx) * uy - (spot[1] - my) * ux)
            if along < 0.0:
                continue  # past the mover: not on the robot's side of it
            if lateral < beside:
                continue  # still on the mover's way
            if not away.off_its_ways(spot):
                continue  # on the line it moves along, ahead or behind, or its ground
            if Point(spot).distance(mover) < reach or not standable(router, spot, reach, blocked):
                continue
            if in_sight and _crosses(walls, pose, spot):
                continue  # behind a shelf or a zone: in the next bay, say
            spots.append((ring, spot))
    spots.sort(key=lambda s: s[0])
    return [spot for _, spot in spots]


def _crosses(walls: Any, pose: Point2, spot: Point2) -> bool:
    """Whether the straight way from ``pose`` to ``spot`` crosses one of ``walls``."""
    return bool(walls.size and shapely.intersects(walls, LineString((pose, spot))).any())


def _across(spot: Point2, centre: Point2, direction: Point2) -> float:
    """How far ``spot`` lies from the line through ``centre`` along unit ``direction``."""
    return abs((spot[0] - centre[0]) * direction[1] - (spot[1] - centre[1]) * direction[0])
