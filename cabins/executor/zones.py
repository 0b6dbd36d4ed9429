"""Speed zones: the speed limit of the zones the robot is in or enters within a stopping
distance.

Speed zones are board items (``constraint:speed:*``): a polygon and a ``max_speed``.
The executor drives at ``_ZONE_SPEED_FACTOR`` of the limit of every zone its path
meets from here to a stopping distance ahead. Each zone value is parsed once (a
malformed one is logged and ignored), and the lowest limit seen so far is kept: while
the constraints are hidden, the executor caps its speed everywhere at the lower of
``blind_max_speed`` and that limit (unless its spec says to hold instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import structlog
from shapely.geometry.base import BaseGeometry

from cabins.executor.settings import ExecutorSettings
from cabins.executor.track import Track
from cabins.warehouse.shapes import polyline
from cabins.warehouse.values import Point2, Zone
from runtime.memory import WorkItem

__all__ = ["ZONE_PATTERN", "SpeedZones"]

_log = structlog.get_logger(__name__)

ZONE_PATTERN: Final = "constraint:*"
"""The required pattern of the speed-limit constraints."""

_ZONE_MARGIN: Final = 0.3  # m looked ahead beyond the stopping distance for speed zones
_ZONE_SPEED_FACTOR: Final = 0.9  # drive at this share of a zone's limit


class SpeedZones:
    """The speed zones in view, parsed once each, and the cap they set (see the module
    docstring). ``slow_when_blind``: whether hidden constraints cap the speed (the
    reaction in force for them is ``slow:speed_limits_unknown``), at the setting
    ``blind_max_speed``."""

    __slots__ = ("_lowest_limit", "_settings", "_zone_boxes", "_zones", "slow_when_blind")

    def __init__(self, settings: ExecutorSettings, *, slow_when_blind: bool) -> None:
        self._settings = settings
        self.slow_when_blind = slow_when_blind
        self._zones: dict[str, tuple[int, Zone | None]] = {}  # key -> (seq, zone or bad)
        self._lowest_limit = math.inf
        # shape id -> (shape, its bounds): the shape is held, so its id is not reused
        self._zone_boxes: dict[int, tuple[BaseGeometry, tuple[float, float, float, float]]] = {}

    def cap(
        self,
        items: Sequence[tuple[str, WorkItem]],
        missing: Mapping[str, str],
        track: Track,
        s: float,
        here: Point2,
        stopping: float,
    ) -> float:
        """The speed limit of the zones the robot is in or enters within ``stopping`` metres
        along ``track`` from arc length ``s``; ``items`` are the speed zone items in view,
        (key, item)."""
        zones = self._read(items)
        cap = math.inf
        reason = missing.get(ZONE_PATTERN)
        if reason is not None and reason != "absent" and self.slow_when_blind:
            cap = min(self._settings.blind_max_speed, self._lowest_limit)
        if not zones:
            return cap
        ahead = [here, *track.polyline(s, min(track.length, s + stopping + _ZONE_MARGIN))]
        xs, ys = [p[0] for p in ahead], [p[1] for p in ahead]
        low_x, low_y, high_x, high_y = min(xs), min(ys), max(xs), max(ys)
        path: BaseGeometry | None = None
        for shape, limit in zones:
            if limit * _ZONE_SPEED_FACTOR >= cap:
                continue
            minx, miny, maxx, maxy = self._bounds_of(shape)
            if high_x < minx or low_x > maxx or high_y < miny or low_y > maxy:
                continue  # the boxes do not meet, so neither do the path and the zone
            if path is None:
                path = polyline(ahead)
            if shape.intersects(path):
                cap = limit * _ZONE_SPEED_FACTOR
        return cap

    def _bounds_of(self, shape: BaseGeometry) -> tuple[float, float, float, float]:
        """A zone's bounding box, kept while the zone is the same shape object."""
        known = self._zone_boxes.get(id(shape))
        if known is None or known[0] is not shape:
            if len(self._zone_boxes) >= 256:
                self._zone_boxes.clear()
            known = self._zone_boxes[id(shape)] = (shape, tuple(shape.bounds))
        return known[1]

    def _read(self, items: Sequence[tuple[str, WorkItem]]) -> list[tuple[BaseGeometry, float]]:
        """The speed zones of ``items``, (shape, limit); each value is parsed once."""
        found: list[tuple[BaseGeometry, float]] = []
        for key, item in items:
            cached = self._zones.get(key)
            if cached is not None and cached[0] == item.seq:
                zone = cached[1]
            else:
                zone = _speed_zone(key, item.value)
                self._zones[key] = (item.seq, zone)
                if zone is not None and zone.max_speed is not None:
                    limit = zone.max_speed * _ZONE_SPEED_FACTOR
                    self._lowest_limit = min(self._lowest_limit, limit)
            if zone is not None and zone.max_speed is not None:
                found.append((zone.shape, zone.max_speed))
        return found


def _speed_zone(key: str, value: Any) -> Zone | None:
    """The speed zone of a ``constraint:speed:*`` value (None, logged, if malformed)."""
    zone = Zone.read(key, value)
    if zone is None:
        _log.warning("executor.bad_speed_zone", key=key, value=repr(value))
    return zone
