"""A stand-off: the robot and a mover each waiting for the other, and how it ends.

A go-to step that makes no progress while the robot waits for moving obstacles, or
with one beside it, is a stand-off. From then until the next step is done, the robot
goes round the movers however long the way round (``gone_round``), and first gives way
to the nearest one: it drives to the nearest spot out of that mover's way
(``give_way.give_way_route``) until the mover has gone, ``give_way_s`` have passed, or
a step is done. The way each mover last moved is watched every tick: a mover waiting
for the robot stands still, and giving way to it needs the way it goes on. With no spot
to give way to, the robot is cornered: the planner defers the task when it can serve
another (``recovery``). When it may not (it carries the item, or no other task can be
served, ``retreat``), it retreats first: the spot may lie farther back, out of the lane
(``give_way_route``'s retreat), and giving way lasts ``give_way_s`` more for each metre
of the way there at ``_RETREAT_SPEED``, so the mover has time to come out of the lane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from shapely.geometry import LineString
from shapely.geometry.base import BaseGeometry

from cabins.planner.give_way import give_way_route, travel_direction
from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.planner.shrink import shrunk
from cabins.planner.tracks import Tracks
from cabins.warehouse.routing import Point2, Route, RoutePlanner

__all__ = ["StandOff"]

_NEAR = 6.0  # m: a way aside longer than this is a retreat
_RETREAT_SPEED = 0.5  # m/s: the time a retreat adds to giving way, per metre of its route


@dataclass(frozen=True, slots=True)
class _GiveWay:
    """A stand-off the robot gives way in: the mover it waited for, where that stood and
    how big it is, and when the robot started giving way (at how many steps done)."""

    mover: str
    at: Point2
    size: float
    since: float
    progress: int
    target: Point2 | None
    extra: float = 0.0  # s giving way lasts beyond give_way_s (a retreat's way there)


class StandOff:
    """Whether the robot is in a stand-off, and whom it gives way to (see the module
    docstring). ``progress`` below is the count of steps done, across plans."""

    def __init__(self, settings: PlannerSettings, tracks: Tracks | None = None) -> None:
        self._settings = settings
        self._tracks = Tracks() if tracks is None else tracks
        self._give_way: _GiveWay | None = None
        self._headings: dict[str, Point2] = {}  # mover id -> the way it last moved (unit)
        self._waited_out: int | None = None  # progress when a wait for movers ran out
        self._cornered: str | None = None  # a mover given way to with no spot to give way
        self._stood_off: int | None = None  # progress when a stand-off began
        self.retreat = False  # the planner cannot set the task aside: retreat if cornered

    @property
    def giving_way(self) -> str | None:
        """The id of the mover the robot gives way to, if it does."""
        return None if self._give_way is None else self._give_way.mover

    def gone_round(self, progress: int) -> bool:
        """Whether the robot goes round the movers however long the way: it waited for
        them without getting a step further."""
        return self._waited_out == progress

    def in_stand_off(self, progress: int) -> bool:
        """Whether a stand-off began since the last step was done (``progress``)."""
        return self._give_way is not None or self._stood_off == progress

    def reset(self) -> None:
        """The task was set aside, or the robot charges first instead of giving way
        (``RouteKeeper``): no stand-off, no giving way, no going round."""
        self._give_way = None
        self._waited_out = None
        self._stood_off = None
        self._cornered = None

    def go_round(self, progress: int) -> None:
        """Go round the movers however long the way, until a step is done (a re-route
        the watchdog asked for)."""
        self._waited_out = progress

    def take_cornered(self) -> str | None:
        """The id of the mover the robot had to give way to but found no spot to give way
        to (``aside``), once; None when it did not happen since the last call."""
        cornered, self._cornered = self._cornered, None
        return cornered

    def watch(self, seen: Seen) -> None:
        """Remember the way each mover in view last moved."""
        for feature in seen.obstacles:
            direction = travel_direction(feature.props)
            if direction is not None:
                self._headings[feature.id] = direction

    def begin(
        self,
        seen: Seen,
        *,
        progress: int,
        waiting: bool,
        reach: float,
        target: Point2 | None = None,
    ) -> None:
        """A step made no progress: a stand-off when the robot waited for movers
        (``waiting``) or one is beside it (``Seen.obstacle_beside``, ``reach`` plus a
        metre); give way to the nearest such one. ``target`` is where the step went."""
        near = seen.obstacle_beside(reach)
        if near is None and not waiting:
            return
        self._waited_out = progress
        self._stood_off = progress
        if near is not None and self._give_way is None:
            mover = near.geometry
            centre = mover.centroid
            self._give_way = _GiveWay(
                mover=near.id,
                at=(float(centre.x), float(centre.y)),
                size=math.sqrt(mover.area / math.pi) if mover.area > 0 else 0.0,
                since=seen.time,
                progress=progress,
                target=target,
            )

    def ends(self, seen: Seen, progress: int) -> bool:
        """Stop giving way once a step is done, after ``give_way_s``, or once the mover
        has gone (out of sight, or well away from where it stood and past the robot:
        farther from the step's target than the robot by the mover's size and
        ``obstacle_moved``); True when it stopped now."""
        give = self._give_way
        if give is None or not self._over(give, seen, progress):
            return False
        self._give_way = None
        return True

    def _over(self, give: _GiveWay, seen: Seen, progress: int) -> bool:
        if give.progress != progress or seen.time - give.since > (
            self._settings.give_way_s + give.extra
        ):
            return True
        mover = next((f for f in seen.obstacles if f.id == give.mover), None)
        if mover is None:
            return True
        centre = mover.geometry.centroid
        x, y = float(centre.x), float(centre.y)
        moved = math.hypot(x - give.at[0], y - give.at[1])
        if moved <= 2.0 * give.size + self._settings.obstacle_moved:
            return False
        # A mover walking out of a dead-end bay past the robot has moved well away from
        # where it stood long before it is out: going back in then met it half way,
        # and the robot gave way again and again, for a whole run.
        target, pose = give.target, seen.pose
        if target is None or pose is None:
            return True
        # Past the robot, not abreast of it: a forklift beside the robot in a main lane,
        # a few cm farther from a target round the corner, had not passed; the robot
        # went back into the lane and the two faced each other for 90 s (hard:5 seed 1).
        past = give.size + self._settings.obstacle_moved
        return math.dist((x, y), target) > math.dist(pose, target) + past

    def aside(
        self,
        router: RoutePlanner,
        seen: Seen,
        fixed: list[BaseGeometry],
        *,
        radius: float,
        clearance: float,
    ) -> Route | None:
        """The route out of the way of the mover the robot gives way to, clear of
        ``fixed`` and the movers; None (and no more giving way) when there is none: the
        robot is cornered (``take_cornered``)."""
        give = self._give_way
        assert give is not None and seen.pose is not None
        mover = next((f for f in seen.obstacles if f.id == give.mover), None)
        route = None
        if mover is not None:
            reach = radius + clearance
            movers = [shrunk(f.geometry, (seen.pose,), reach) for f in seen.obstacles]
            route = give_way_route(
                router,
                seen.pose,
                mover.geometry,
                blocked=[*fixed, *(g for g in movers if g is not None)],
                radius=radius,
                clearance=clearance,
                heading=self._headings.get(give.mover),
                retreat=self.retreat,
                swept=self._tracks.swept(give.mover),
            )
        if route is not None and len(route) >= 2:
            length = float(LineString(route).length)
            if length > _NEAR:
                self._give_way = replace(give, extra=length / _RETREAT_SPEED)
        if route is None:
            self._give_way = None
            if mover is not None:
                self._cornered = give.mover
        return route
