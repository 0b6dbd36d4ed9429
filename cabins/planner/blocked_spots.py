"""Blocked spots: where the way was found blocked, carried across runs in long-term memory.

When the planner re-plans because an obstacle came into the route ahead, or because the
robot made no progress with an obstacle beside it, it remembers a ``BlockedSpot``: where
the way was blocked, by what, and when. Each is a structured fact whose subject is its
``memory_cell`` square and the obstacle's kind (``blocked_spot:forklift@13,7``), so the
memory compares spots by subject, never by their text: two spots are two facts however
alike their sentences. A spot recalled from an earlier run and found blocked again is
remembered again, with the new time (the newer fact supersedes the older); a spot the
robot drives through with no obstacle near it is "clear now" and is retired. Facts are
asked for through the outbox (``out.remember``); the loop writes them.

The spots of the planner's scope are read once, when it is built; spots learned during
the run are added to them. When it routes, a spot the shortest route passes is treated
as expensive, not as forbidden (people move): the route that keeps clear of every
remembered spot is taken when there is one at most ``memory_detour`` times as long;
otherwise the shortest. A checkpoint keeps the spots (recalled and learned), not the
memory: a resumed planner remembers new ones in the memory file the run is resumed with.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.planner.shrink import shrunk
from cabins.warehouse.routing import Point2, Route, RoutePlanner
from runtime.agent.memory import LongTermMemory, MemoryRecord
from runtime.agent.plan import ReplanTrigger
from runtime.cabin import Outbox
from runtime.cabin_map import Feature
from runtime.errors import SettingError
from runtime.longterm import MemoryTerms
from runtime.position import finite

__all__ = ["BlockedSpot", "BlockedSpots", "blocked_subject"]

_log = structlog.get_logger(__name__)

_Key = tuple[tuple[float, float], str]  # a spot's cell and the kind of obstacle


@dataclass(frozen=True, slots=True)
class BlockedSpot:
    """A place where the way was found blocked, as long-term memory holds it.

    ``(x, y)`` is where the obstacle stood, ``radius`` how far around it to keep clear
    when another way exists, ``kind`` what blocked it (``person``, ``forklift``, ...),
    ``time`` the simulated time it was seen at.
    """

    x: float
    y: float
    radius: float
    kind: str
    time: float

    @property
    def area(self) -> BaseGeometry:
        return Point(self.x, self.y).buffer(self.radius)

    @classmethod
    def from_record(cls, record: MemoryRecord) -> BlockedSpot | None:
        """The spot a ``blocked`` memory record describes, or None for any other record."""
        meta = record.metadata
        if meta.get("fact") != "blocked":
            return None
        x, y = finite(meta.get("x")), finite(meta.get("y"))
        radius, time = finite(meta.get("radius")), finite(meta.get("time"))
        kind = meta.get("kind")
        if x is None or y is None or radius is None or radius <= 0 or not isinstance(kind, str):
            return None
        return cls(x, y, radius, kind, record.stamp if time is None else time)

    def fact(self, cell: tuple[float, float], **detail: Any) -> tuple[str, dict[str, Any]]:
        """The content and metadata of the fact that this spot, in ``cell``, was blocked
        (``detail``: more metadata, such as the reason and the obstacle)."""
        metadata = {
            "fact": "blocked",
            "x": self.x,
            "y": self.y,
            "radius": self.radius,
            "kind": self.kind,
            "time": self.time,
            **detail,
        }
        content = f"a {self.kind} blocked the way near ({cell[0]:g}, {cell[1]:g})"
        return content, MemoryTerms(subject=blocked_subject(self.kind, cell)).attach(metadata)

    def clear_fact(self, cell: tuple[float, float], time: float) -> tuple[str, dict[str, Any]]:
        """The content and metadata of the fact that this spot is clear now: it retires
        the spot's fact."""
        metadata = {"fact": "clear", "x": self.x, "y": self.y, "kind": self.kind, "time": time}
        content = f"the way near ({cell[0]:g}, {cell[1]:g}) is clear of the {self.kind} now"
        terms = MemoryTerms(subject=blocked_subject(self.kind, cell), holds=False)
        return content, terms.attach(metadata)


def blocked_subject(kind: str, cell: tuple[float, float]) -> str:
    """The memory subject of a blocked spot: its cell and what blocked it."""
    return f"blocked_spot:{kind}@{cell[0]:g},{cell[1]:g}"


class BlockedSpots:
    """The blocked spots known, and the long-term memory they are kept in (see the
    module docstring). Of the settings, ``memory_cell`` is the side (m) of the square a
    spot is remembered by, ``memory_radius`` (m) how far round a learned spot a route
    keeps clear, ``memory_detour`` the longest route clear of the spots that is taken, as
    a multiple of the shortest."""

    _derived = ("_long_term",)  # the memory file: the program that resumes gives it

    def __init__(
        self,
        settings: PlannerSettings,
        long_term: LongTermMemory | None,
        scope: Mapping[str, str],
    ) -> None:
        if long_term is not None and not isinstance(long_term, LongTermMemory):
            raise TypeError(f"long_term must be a LongTermMemory, got {type(long_term).__name__}")
        if not isinstance(scope, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in scope.items()
        ):
            raise SettingError(f"memory_scope must map strings to strings, got {scope!r}")
        self.scope: Mapping[str, str] = dict(scope)
        self._settings = settings
        self._long_term = long_term
        # by cell and kind: read from long-term memory once, here, then learned during the
        # run; the recalled ones not yet seen blocked again in this run
        self._spots: dict[_Key, BlockedSpot] = {}
        self._recalled: set[_Key] = set()
        if long_term is not None:
            self._recall(long_term.records(scope=self.scope))

    @property
    def long_term(self) -> LongTermMemory | None:
        """The long-term memory the spots are remembered in, if any."""
        return self._long_term

    @property
    def spots(self) -> tuple[BlockedSpot, ...]:
        """The spots known: remembered from earlier runs, then learned in this one."""
        return tuple(self._spots.values())

    def _recall(self, records: Iterable[MemoryRecord]) -> None:
        for record in records:
            spot = BlockedSpot.from_record(record)
            if spot is not None:
                key = (self._cell(spot.x, spot.y), spot.kind)
                self._spots.setdefault(key, spot)
                self._recalled.add(key)
        _log.debug("planner.spots_recalled", scope=self.scope, spots=len(self._spots))

    def _cell(self, x: float, y: float) -> tuple[float, float]:
        size = self._settings.memory_cell
        return (round(round(x / size) * size, 6), round(round(y / size) * size, 6))

    def remember(
        self, trigger: ReplanTrigger, seen: Seen, task: str | None, reach: float, out: Outbox
    ) -> None:
        """Remember where an obstacle blocked the way, when ``trigger`` says one did: a
        new spot, or a recalled one found blocked again (the newer fact supersedes)."""
        if self._long_term is None:
            return
        feature: Feature | None = None
        if trigger.reason == "obstacle_in_corridor":
            feature = next((f for f in seen.obstacles if f.id == trigger.detail), None)
        elif trigger.reason == "no_progress":
            feature = seen.obstacle_beside(reach)
        if feature is None:
            return
        centre = feature.geometry.centroid
        x, y = round(float(centre.x), 3), round(float(centre.y), 3)
        kind = _obstacle_kind(feature)
        cell = self._cell(x, y)
        key = (cell, kind)
        if key in self._spots and key not in self._recalled:
            return  # learned in this run, or already seen again in it
        self._recalled.discard(key)
        spot = BlockedSpot(x, y, self._settings.memory_radius, kind, seen.time)
        self._spots[key] = spot
        content, metadata = spot.fact(cell, reason=trigger.reason, obstacle=feature.id, task=task)
        out.remember(content, scope=self.scope, metadata=metadata, stamp=seen.time)

    def clear(self, seen: Seen, reach: float, out: Outbox) -> None:
        """Retire the spots the robot stands in with no obstacle near: clear now."""
        if self._long_term is None or not self._spots:
            return
        if seen.pose is None or "pose" in seen.missing:
            return
        px, py = seen.pose
        for key, spot in list(self._spots.items()):
            if math.hypot(px - spot.x, py - spot.y) > spot.radius:
                continue
            centre = Point(spot.x, spot.y)
            if any(
                float(f.geometry.distance(centre)) <= spot.radius + reach for f in seen.obstacles
            ):
                continue
            del self._spots[key]
            self._recalled.discard(key)
            content, metadata = spot.clear_fact(key[0], seen.time)
            out.remember(content, scope=self.scope, metadata=metadata, stamp=seen.time)

    def route(
        self,
        router: RoutePlanner,
        start: Point2,
        target: Point2,
        blocked: list[BaseGeometry],
        reach: float,
    ) -> tuple[Route | None, dict[str, Any] | None]:
        """The shortest route, or the one clear of the spots if it is not more than
        ``detour`` times as long (and the shortest passes one); with the ``recalled``
        event's data when memory chose it."""
        route = router.plan(start, target, blocked=blocked)
        if route is None or not self._spots:
            return route, None
        line = LineString(route)
        passed = [s for s in self._spots.values() if line.distance(s.area) <= reach]
        if not passed:
            return route, None
        avoid = [
            shape
            for s in self._spots.values()
            if (shape := shrunk(s.area, (start, target), reach)) is not None
        ]
        detour = router.plan(start, target, blocked=[*blocked, *avoid]) if avoid else None
        length = float(line.length)
        detour_length = float(LineString(detour).length) if detour is not None else math.inf
        if detour is None or detour_length > self._settings.memory_detour * length:
            return route, None
        recalled = {
            "spots": len(passed),
            "nearest": [passed[0].x, passed[0].y],
            "length": round(detour_length, 3),
            "shortest": round(length, 3),
        }
        return detour, recalled


def _obstacle_kind(feature: Feature) -> str:
    kind = feature.props.get("kind")
    if isinstance(kind, str) and kind:
        return kind
    for tag in ("person", "forklift"):
        if tag in feature.tags:
            return tag
    return "obstacle"
