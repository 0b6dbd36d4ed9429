"""Cross-track deviation: how far the robot is off its route, in which band, and whether
it is drifting further.

Each tick the distance from the pose to the route (a line, or a point for a one-point
route) is the cross-track error; it is kept in a bounded history and classified into the
deviation bands, and climbing into a higher band raises an ``alarm`` {"kind":
"deviation"}. Without a route at all there is nothing to deviate from (the band is "ok");
an unreadable route is a bad reading. ``growing`` is the condition
``deviation_growing``: in a band and still growing by ``growth`` within ``growth_window``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.monitor.bands import RANK, DeviationBands, Level
from cabins.monitor.incidents import Incidents
from cabins.monitor.names import ALARM_TAGS
from cabins.monitor.parsed import same
from cabins.monitor.seen import Seen
from cabins.monitor.settings import MonitorSettings
from cabins.warehouse.values import route_points
from runtime.cabin import Outbox

__all__ = ["Deviation"]


class Deviation:
    """The robot's cross-track error from its route (see the module docstring)."""

    def __init__(self, settings: MonitorSettings, route_key: str, incidents: Incidents) -> None:
        self.bands = DeviationBands(
            settings.warn_deviation, settings.alarm_deviation, settings.hysteresis
        )
        self.level: Level = "ok"
        """The band the robot is in now."""
        self.error: float | None = None
        """The last cross-track error (m), or None when it cannot be measured."""
        self.history: deque[tuple[float, float]] = deque(maxlen=settings.history)
        """Recent (time, cross-track error) samples, oldest first."""
        self._route_key = route_key
        self._settings = settings
        self._incidents = incidents
        self._route_value: Any = None
        self._route_line: BaseGeometry | None = None

    def track(self, seen: Seen, out: Outbox) -> None:
        """Measure this tick's error, keep it, and alarm on climbing into a band."""
        line = self._line(seen, out) if seen.route_shown else None
        if line is None:
            self.error = None
            if seen.missing.get(self._route_key, "absent") == "absent":
                self.level = "ok"  # no route at all: nothing to deviate from
            return
        here = seen.here
        if here is None:
            self.error = None
            return
        error = float(line.distance(here))
        self.history.append((seen.time, error))
        self.error = error
        level = self.bands.classify(error, self.level)
        if RANK[level] > RANK[self.level]:
            limit = self.bands.alarm if level == "alarm" else self.bands.warn
            out.emit(
                "alarm",
                {"kind": "deviation", "level": level, "error": error, "limit": limit},
                tags=ALARM_TAGS,
            )
        self.level = level

    def growing(self, now: float) -> dict[str, Any] | None:
        """The deviation's growth, while it is in a band and still growing."""
        if self.level == "ok" or self.error is None or not self.history:
            return None
        since = now - self._settings.growth_window
        recent = [error for t, error in self.history if t >= since]
        grown = self.error - min(recent, default=self.error)
        if grown < self._settings.growth:
            return None
        return {"deviation": round(self.error, 3), "grown": round(grown, 3)}

    def _line(self, seen: Seen, out: Outbox) -> BaseGeometry | None:
        value = seen.route
        if value is self._route_value or (
            self._route_value is not None and same(value, self._route_value)
        ):
            return self._route_line
        points = route_points(value)
        line: BaseGeometry | None = None
        if points is None:
            self._incidents.bad(
                out,
                self._route_key,
                f"a route must be ((x, y), ...), got {value!r}",
                tick=seen.tick,
                time=seen.time,
            )
        elif len(points) == 1:
            line = Point(points[0])
        elif points:
            line = LineString(points)
        self._route_value, self._route_line = value, line
        return line
