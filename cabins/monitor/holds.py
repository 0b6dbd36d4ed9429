"""The stop rule for one shape, and the holds that keep a robot at rest from creeping in.

Within a margin of a shape the robot is stopped when its centre is inside, when its
velocity is unknown, or when its motion shrinks the gap; a robot moving away, alongside or
turning on the spot is let go, so it cannot get stuck beside a shape. A stopped robot
reads speed 0, so a driver pushing at the shape would creep in one accelerating tick at a
time: within ``hold_fraction`` of the margin a robot at rest that faces the shape is
*held* (and stays held within twice the margin, as noise may move its pose but nothing
moves the robot), with one free tick after ``hold_release`` seconds in which a driver can
start to turn away: a robot turning on the spot is not at rest, so its turn goes on and
the hold ends. A driver that uses its free tick to push on waits twice as long for the
next (up to 8 times ``hold_release``), so it creeps in by no more than about one
accelerating tick every 8 seconds.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final

import shapely
from shapely.geometry.base import BaseGeometry

from cabins.monitor.seen import Robot
from cabins.monitor.settings import MonitorSettings

__all__ = ["HOLD_REACH", "Hold", "Holds"]

HOLD_REACH: Final = 2.0  # a hold lasts while the measured gap is within this many margins
_HOLD_FACING: Final = 0.1  # heading within ~84 degrees of straight at the shape
_AT_REST_TURN: Final = 0.05  # rad/s: slower turns count as at rest


@dataclass(frozen=True, slots=True)
class Hold:
    """A robot at rest held beside a shape: since when, how often it pushed on when let go,
    and whether this tick is its free one."""

    since: float
    pushes: int
    released: bool = False


class Holds:
    """The stop rule, with last tick's holds by shape (see the module docstring)."""

    def __init__(self, settings: MonitorSettings) -> None:
        self._settings = settings
        self._held: dict[Hashable, Hold] = {}  # last tick's holds, by shape
        self._holding: dict[Hashable, Hold] = {}  # this tick's

    def must_stop(
        self, shape: BaseGeometry, robot: Robot, margin: float, key: Hashable, now: float
    ) -> float | None:
        """The disc's gap to ``shape`` (known by ``key`` from tick to tick) if the robot
        must stop for it this tick, else None."""
        centre_distance = float(shape.distance(robot.here))
        gap = centre_distance - robot.radius
        hold = self._held.get(key)
        # a held robot at rest has not moved: only pose noise says otherwise
        if gap >= (HOLD_REACH * margin if hold is not None and not hold.released else margin):
            return None
        if robot.speed is None or centre_distance <= 0.0:
            return self._keep(key, hold, gap)
        nearest_x, nearest_y = shapely.shortest_line(robot.here, shape).coords[-1]
        away_x = (robot.here.x - float(nearest_x)) / centre_distance
        away_y = (robot.here.y - float(nearest_y)) / centre_distance
        facing = robot.cos * away_x + robot.sin * away_y  # < 0: heading points at shape
        settings = self._settings
        if robot.speed * facing < -settings.closing_speed:
            if hold is not None and hold.released:  # it pushed on in its free tick
                hold = Hold(now, hold.pushes + 1)
            return self._keep(key, hold, gap)
        at_rest = abs(robot.speed) <= settings.closing_speed and abs(robot.turn) <= _AT_REST_TURN
        if not at_rest or facing >= -_HOLD_FACING:
            return None
        if hold is None:
            if gap >= margin * settings.hold_fraction:
                return None
            hold = Hold(now, 0)
        elif hold.released:
            hold = Hold(now, hold.pushes)
        elif now - hold.since >= settings.hold_release * 2 ** min(hold.pushes, 3):
            self._holding[key] = Hold(now, hold.pushes, released=True)
            return None
        return self._keep(key, hold, gap)

    def next_tick(self) -> None:
        """This tick's holds become last tick's: the holds not kept this tick end."""
        self._held, self._holding = self._holding, {}

    def _keep(self, key: Hashable, hold: Hold | None, gap: float) -> float:
        if hold is not None:
            self._holding[key] = hold
        return gap
