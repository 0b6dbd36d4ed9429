"""Tracks: where each mover has walked, learnt from the views, as the ground it sweeps.

The robot's own trail is kept too (``trail``): the way back out of a bay it went into.

A person or forklift walks a loop the planner is never told: a picker into its bay to
the dock at the closed end, out to the lane and along it, and back. A spot to wait at,
out of such a mover's way, has to be off its loop, not just off the line it walks now: a
robot that waited at a bay's mouth on the picker's way along the lane stopped the picker
there (it yields to the robot, then turns back into its bay), and the bay never cleared.

``Tracks.observe`` keeps, for each mover in view, the points it was seen at, one every
``_SPACING`` metres it moved (at most ``_POINTS`` of them, the oldest dropped, and at most
``_MOVERS`` movers, the one seen longest ago dropped); ``swept`` is the ground a mover's
track covers, its line buffered by the mover's radius. A mover seen once has a track of
one point: its disc. Where it was out of sight between two points (``_JUMP`` apart or
more) the track is broken, not joined by a straight line: a picker last seen deep in
one bay and next seen on the main lane had a track straight through the shelves and the
next bay, and no spot in there was taken to wait at (hard:45 seed 2). What was learnt
stays after the mover leaves the view (its loop brings it back) and is never written
anywhere: losing it costs a few waits in the way.

**Out of sight is not gone.** The robot senses movers a few metres round it only (6 m in
the simulator): a picker 15 m up its bay is out of sight from the bay's mouth, and a
robot that took the bay for clear drove in and met the picker at the closed end. So a
mover out of sight can be taken to be where it was last seen (``ghosts``), walking as it
was, for ``_GHOST_S`` seconds after: a dead end it walked into is not clear until it was
seen to come out (``lanes``).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from typing import Final

import shapely
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.planner.seen import Seen
from cabins.warehouse.routing import Point2
from runtime.cabin_map import Feature

__all__ = ["Tracks"]

_SPACING: Final = 0.5  # m a mover moves between two points of its track
_POINTS: Final = 400  # points kept per mover: 200 m of its way
_MOVERS: Final = 64  # movers tracked at most
_JUMP: Final = 1.5  # m between two points of a track beyond which it was out of sight between
_GHOST_S: Final = 120.0  # s a mover out of sight is taken to be where it was last seen
_TRAIL: Final = 240  # points of the robot's own way kept: 60 m at _TRAIL_SPACING
_TRAIL_SPACING: Final = 0.25  # m the robot moves between two points of its trail


def mover_radius(feature: Feature) -> float:
    """A mover's radius: its ``radius`` property, else that of a disc of its area."""
    radius = feature.props.get("radius")
    if isinstance(radius, (int, float)) and not isinstance(radius, bool) and radius > 0:
        return float(radius)
    return math.sqrt(feature.geometry.area / math.pi) if feature.geometry.area > 0 else 0.0


class Tracks:
    """The ways the movers in view were seen to walk (see the module docstring)."""

    def __init__(self) -> None:
        self._points: dict[str, deque[Point2]] = {}
        self._radius: dict[str, float] = {}
        self._seen_at: dict[str, float] = {}
        self._last: dict[str, Feature] = {}  # mover -> its feature when last seen
        self._swept: dict[str, BaseGeometry] = {}  # mover -> its swept ground, until it moves
        self._trail: deque[Point2] = deque(maxlen=_TRAIL)  # the robot's own way, newest last

    def observe(self, seen: Seen) -> None:
        """Add where each mover in view stands now to its track, and where the robot stands
        to its trail."""
        pose, trail = seen.pose, self._trail
        if pose is not None and (not trail or math.dist(trail[-1], pose) >= _TRAIL_SPACING):
            trail.append((float(pose[0]), float(pose[1])))
        for feature in seen.obstacles:
            centre = feature.geometry.centroid
            here = (float(centre.x), float(centre.y))
            points = self._points.get(feature.id)
            if points is None:
                if len(self._points) >= _MOVERS:
                    self._forget(min(self._seen_at, key=lambda m: (self._seen_at[m], m)))
                points = self._points[feature.id] = deque(maxlen=_POINTS)
            self._seen_at[feature.id] = seen.time
            self._last[feature.id] = feature
            self._radius[feature.id] = mover_radius(feature)
            if not points or math.dist(points[-1], here) >= _SPACING:
                points.append(here)
                self._swept.pop(feature.id, None)

    def ghosts(self, seen: Seen) -> tuple[Feature, ...]:
        """The movers out of sight now, as last seen, for those last seen within
        ``_GHOST_S`` (see the module docstring)."""
        in_view = {f.id for f in seen.obstacles}
        return tuple(
            last
            for mover, last in sorted(self._last.items())
            if mover not in in_view and seen.time - self._seen_at[mover] <= _GHOST_S
        )

    def swept(self, mover: str) -> BaseGeometry | None:
        """The ground ``mover``'s track covers (None when it was never seen)."""
        known = self._swept.get(mover)
        if known is not None:
            return known
        points = self._points.get(mover)
        if not points:
            return None
        radius = self._radius[mover]
        shape = shapely.union_all([_walked(run).buffer(radius) for run in _runs(points)])
        self._swept[mover] = shape
        return shape

    def trail(self) -> LineString | None:
        """The way the robot came, from where it is now back (None before it moved)."""
        points = list(reversed(self._trail))
        return LineString(points) if len(points) >= 2 else None

    def movers(self) -> tuple[str, ...]:
        """The movers tracked, by id."""
        return tuple(sorted(self._points))

    def _forget(self, mover: str) -> None:
        for store in (self._points, self._radius, self._seen_at, self._swept, self._last):
            store.pop(mover, None)


def _runs(points: deque[Point2]) -> list[list[Point2]]:
    """``points`` split where a mover was out of sight between two of them (``_JUMP``)."""
    runs: list[list[Point2]] = [[points[0]]]
    for a, b in itertools.pairwise(points):
        if math.dist(a, b) > _JUMP:
            runs.append([])
        runs[-1].append(b)
    return runs


def _walked(run: list[Point2]) -> BaseGeometry:
    """The line a mover was seen to walk through ``run``, or the point it was seen at."""
    return LineString(run) if len(run) >= 2 else Point(run[0])
