"""The course: the route the executor follows, how far along it the robot is, and
whether leaving it has been reported.

The track of a route is made once, when the route changes; the robot's progress along
it only moves forward, or back by at most ``BACKTRACK`` (so that a route passing near
itself does not make the robot jump to its later stretch, or back to its start). When
no straight way back to the route is clear, the planner must route again from where
the robot is: that is reported once per route and plan revision.
"""

from __future__ import annotations

import math
from typing import Final

from cabins.executor.track import Track
from cabins.warehouse.values import Point2, Pose

__all__ = ["BACKTRACK", "Course"]

BACKTRACK: Final = 1.0  # m: how far back along the route the projection may jump


class Course:
    """The route being followed (see the module docstring)."""

    __slots__ = ("_off_route", "_progress", "_route", "_track")
    _derived = ("_track",)  # made again from the route when next asked for

    def __init__(self) -> None:
        self._route: tuple[Point2, ...] | None = None
        self._track: Track | None = None
        self._progress = 0.0
        self._off_route: tuple[tuple[Point2, ...], int] | None = None

    def locate(self, route: tuple[Point2, ...], pose: Pose) -> tuple[Track, float]:
        """The track of ``route`` and the robot's arc length along it, now its progress."""
        track = self._track_for(route)
        s = track.project(pose.x, pose.y, self._progress - BACKTRACK)
        self._progress = s
        return track, s

    def first_off(self, route: tuple[Point2, ...], revision: int) -> bool:
        """Whether the robot is cut off from ``route`` for the first time under plan
        ``revision`` (so it is to be reported); later calls for the same are False."""
        if self._off_route == (route, revision):
            return False
        self._off_route = (route, revision)
        return True

    def _track_for(self, route: tuple[Point2, ...]) -> Track:
        if self._track is None or route != self._route:
            self._route = route
            self._track = Track(route)
            self._progress = -math.inf
        return self._track
