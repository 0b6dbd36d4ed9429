"""Contact forecast: the condition ``contact_predicted``.

Where would the robot go if it braked now, at its ``max_accel``, keeping its turn rate?
If that braking path brings its disc within ``contact_margin`` of something solid (a
shelf, a forbidden zone or an obstacle on the map, a wall of the world, a person the
scanner sees) and nearer than it is now, contact is predicted. A robot at rest, moving
alongside or away, or with nothing solid within its braking distance predicts none.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final

from cabins.monitor.guards import Scanned
from cabins.monitor.seen import Seen
from cabins.monitor.settings import MonitorSettings
from cabins.warehouse.clearance import Solids, Walls, braking_path, path_geometry
from cabins.warehouse.motion import TICK_S
from cabins.warehouse.shapes import polyline
from cabins.warehouse.values import LastRead, RobotLimits

__all__ = ["ContactForecast"]

_CONTACT_KINDS: Final = frozenset({"shelf", "forbidden", "obstacle"})  # what contact counts


class ContactForecast:
    """Predicts contact along the braking path (see the module docstring)."""

    def __init__(self, settings: MonitorSettings) -> None:
        self._settings = settings
        self._walls = Walls()
        self._solids: Solids | None = None  # last tick's, given back while the same
        self._limits_read: LastRead[RobotLimits] = LastRead()  # once per write, not per tick

    def predict(self, seen: Seen, scanned: Scanned) -> dict[str, Any] | None:
        """What the braking path would bring the disc within ``contact_margin`` of, if the
        robot closes in on it: a solid on the map, a wall, or what the scanner sees."""
        pose, here, velocity, radius = seen.pose, seen.here, seen.velocity, seen.radius
        if pose is None or here is None or velocity is None or abs(velocity.v) < 1e-3:
            return None
        limits = self._limits_read.get(
            (seen.limits_value, seen.radius_value),
            partial(RobotLimits.given, seen.limits_value, seen.radius),
        )
        walls = self._walls(seen.bounds)
        solids = self._solids = Solids.of(
            seen.nearby_map,
            walls + tuple((name, disc) for name, disc, _ in scanned) if scanned else walls,
            kinds=_CONTACT_KINDS,
            last=self._solids,
        )
        if not solids:
            return None
        now_gap = solids.gap(here) - radius
        speed = abs(velocity.v)
        # one tick at speed, then braking: 20 Hz ticks, whatever the run's rate (TICK_S)
        reach = speed * TICK_S + speed * speed / (2.0 * limits.max_accel)
        if now_gap >= reach + self._settings.contact_margin:
            return None  # nothing within the braking distance
        path = braking_path(
            pose.x,
            pose.y,
            pose.theta,
            velocity.v,
            velocity.w,
            accel=limits.max_accel,
            dt=TICK_S,
        )
        nearest = solids.nearest(path_geometry(path))
        assert nearest is not None
        what, distance = nearest
        gap = distance - radius
        if gap >= self._settings.contact_margin:
            return None
        if gap >= now_gap - 1e-6:
            return None  # moving alongside or away: braking brings it no nearer
        return {
            "with": what,
            "gap": round(gap, 3),
            "speed": round(velocity.v, 3),
            "stopping": round(float(polyline(path).length) if len(path) > 1 else 0.0, 3),
        }
