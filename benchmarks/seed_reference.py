"""The seed reference: the seed's ``WorkingMemory.assemble``, kept here to measure against.

The seed (``seeds/002``, section 5.2) assembles each cabin's pack separately under
one lock: it reads the cabin's board keys, asks the map for a window by distance
and the log for a time window, touches each item into working memory and evicts
with an O(n) ``min()`` scan per victim. This module keeps that algorithm and its
naive data structures (a dict of readings, a list of features scanned whole, a
list of events scanned whole) and gives it the inputs the runtime gets, so the two
can be timed side by side and their selections compared. It never belongs in
``runtime/``.

Where the seed is ambiguous or wrong, this reference takes the runtime's meaning,
so that both select the same items (each point is cheap next to the scans):

- eviction is stalest-first, ``(importance, last_used, key)`` (the seed's
  ``-last_used`` evicts the freshest, see DESIGN.md), down to capacity (the seed's
  ``>=`` leaves one slot empty), and stops when only pinned items remain;
- a touched item takes the new value and, within a tick, the highest weight of the
  specs that selected it (the seed keeps the first value and importance), and
  ``last_used`` is the tick's ``now`` (the seed reads ``time.monotonic()``), so runs
  are deterministic;
- spec globs (``goal:*``) are expanded by scanning every board key, stale readings
  are skipped by their time-to-live, and goal kinds for the relevance filter come
  from a scan of the keys as well;
- the map window applies the spec's kinds, tags and relevance, and a corridor
  along the route is added; the scan is one vectorised ``shapely.distance`` over
  every feature (a generous choice: a per-feature Python loop of
  ``geometry.distance`` is about 2.5 times slower at 100,000 features);
- the event window starts at ``now - event_window`` (the seed passes the window
  length itself as ``since``) with the spec's kinds, tags and ``event_limit``;
- map features and events are touched into memory too, as the runtime does (the
  seed only touches board keys, which would leave its eviction nothing to do).

The pack is a plain dict, as in the seed: nothing is frozen.
"""

from __future__ import annotations

import fnmatch
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import shapely
from shapely.geometry import LineString, Point

from benchmarks.reference_model import position as as_point
from benchmarks.reference_model import route_points as as_route
from runtime.board import Reading
from runtime.cabin_map import Feature
from runtime.log import Event
from runtime.spec import ContextSpec

STAGES = ("board", "map", "log", "eviction", "freeze")
"""The stages a tick is broken into, in order."""

PINNED_PREFIXES = ("goal:", "safety:")
"""The seed's lifelong exemptions, ``goal:*`` and ``safety:*``."""


class StageClock:
    """Accumulates the time spent in each stage of a tick (in seconds)."""

    __slots__ = ("_last", "_timer", "totals")

    def __init__(self, timer: Callable[[], float] = time.perf_counter) -> None:
        self._timer = timer
        self.totals: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self._last = timer()

    def start(self) -> None:
        self._last = self._timer()

    def lap(self, stage: str) -> None:
        """Charge the time since the last lap (or ``start``) to ``stage``."""
        now = self._timer()
        self.totals[stage] += now - self._last
        self._last = now


class SeedBoard:
    """Key → current ``Reading``, in a plain dict."""

    def __init__(self, readings: Iterable[Reading] = ()) -> None:
        self._readings: dict[str, Reading] = {r.key: r for r in readings}

    def put(self, reading: Reading) -> None:
        self._readings[reading.key] = reading

    def delete(self, key: str) -> None:
        self._readings.pop(key, None)

    def read(self, key: str) -> Reading | None:
        return self._readings.get(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._readings)

    def __len__(self) -> int:
        return len(self._readings)


class SeedMap:
    """Every feature in one list, scanned whole by distance for each query."""

    def __init__(self, features: Iterable[Feature] = ()) -> None:
        self._features: list[Feature] = list({f.id: f for f in features}.values())
        self._position: dict[str, int] = {f.id: i for i, f in enumerate(self._features)}
        self._geoms: npt.NDArray[np.object_] = np.array(
            [f.geometry for f in self._features], dtype=object
        )

    def put(self, feature: Feature) -> None:
        """Add ``feature``, or replace the feature with its id."""
        at = self._position.get(feature.id)
        if at is None:
            self._position[feature.id] = len(self._features)
            self._features.append(feature)
            self._geoms = np.append(self._geoms, np.array([feature.geometry], dtype=object))
        else:
            self._features[at] = feature
            self._geoms[at] = feature.geometry

    def get(self, feature_id: str) -> Feature | None:
        at = self._position.get(feature_id)
        return None if at is None else self._features[at]

    def __len__(self) -> int:
        return len(self._features)

    def _scan(
        self,
        geometry: Any,
        distance: float,
        kinds: frozenset[str] | None,
        tags: frozenset[str] | None,
    ) -> tuple[list[Feature], list[float]]:
        distances = shapely.distance(self._geoms, geometry)
        found: list[Feature] = []
        found_distances: list[float] = []
        for i in np.flatnonzero(distances <= distance).tolist():
            feature = self._features[i]
            if kinds is not None and feature.kind not in kinds:
                continue
            if tags is not None and tags.isdisjoint(feature.tags):
                continue
            found.append(feature)
            found_distances.append(float(distances[i]))
        return found, found_distances

    def window(
        self,
        center: tuple[float, float],
        radius: float,
        *,
        kinds: frozenset[str] | None = None,
        tags: frozenset[str] | None = None,
    ) -> tuple[Feature, ...]:
        """Features within ``radius`` of ``center``, nearest first, then by id."""
        found, distances = self._scan(Point(center), radius, kinds, tags)
        order = sorted(range(len(found)), key=lambda i: (distances[i], found[i].id))
        return tuple(found[i] for i in order)

    def corridor(
        self,
        route: Sequence[tuple[float, float]],
        width: float,
        *,
        kinds: frozenset[str] | None = None,
        tags: frozenset[str] | None = None,
    ) -> tuple[Feature, ...]:
        """Features within ``width`` of the ``route`` polyline, in order along it."""
        points: list[tuple[float, float]] = []
        for p in route:
            if not points or points[-1] != p:
                points.append(p)
        if len(points) == 1:
            return self.window(points[0], width, kinds=kinds, tags=tags)
        line = LineString(points)
        found, _ = self._scan(line, width, kinds, tags)
        if not found:
            return ()
        geoms = np.array([f.geometry for f in found], dtype=object)
        along = shapely.line_locate_point(
            line, shapely.get_point(shapely.shortest_line(geoms, line), 1)
        )
        order = sorted(range(len(found)), key=lambda i: (along[i], found[i].id))
        return tuple(found[i] for i in order)


class SeedLog:
    """Every event in one list, scanned whole for each window."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._events: list[Event] = list(events)

    def append(self, event: Event) -> None:
        self._events.append(event)

    def __len__(self) -> int:
        return len(self._events)

    def query(
        self,
        since: float,
        until: float,
        *,
        kinds: frozenset[str] | None = None,
        tags: frozenset[str] | None = None,
        limit: int = 16,
    ) -> tuple[Event, ...]:
        """The newest ``limit`` events with ``since <= stamp <= until``, oldest first."""
        hits = [
            e
            for e in self._events
            if since <= e.stamp <= until
            and (kinds is None or e.kind in kinds)
            and (tags is None or not tags.isdisjoint(e.tags))
        ]
        return tuple(hits[-limit:])


@dataclass(slots=True)
class SeedItem:
    """The seed's ``WorkingItem``: mutable, touched in place."""

    key: str
    value: Any
    importance: float
    last_used: float


@dataclass(slots=True)
class SeedPack:
    """What ``assemble`` returns for one cabin: a plain dict of board values, the map
    window and corridor, and the recent events."""

    board: dict[str, Any]
    nearby_map: tuple[Feature, ...]
    corridor_map: tuple[Feature, ...]
    recent_events: tuple[Event, ...]

    def keys(self) -> set[str]:
        """The pack's items under the runtime's key names."""
        keys = set(self.board)
        keys.update(f"map:{f.id}" for f in self.nearby_map)
        keys.update(f"map:{f.id}" for f in self.corridor_map)
        keys.update(f"event:{e.kind}:{e.seq}" for e in self.recent_events)
        return keys


def _glob(pattern: str) -> re.Pattern[str] | None:
    return re.compile(fnmatch.translate(pattern)) if any(c in pattern for c in "*?[") else None


class SeedWorkingMemory:
    """The seed's working memory: per-cabin assembly, a dict of items, O(n) eviction."""

    def __init__(
        self, board: SeedBoard, cabin_map: SeedMap, log: SeedLog, *, capacity: int = 64
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.board = board
        self.map = cabin_map
        self.log = log
        self.capacity = capacity
        self._items: dict[str, SeedItem] = {}
        self._lock = threading.RLock()
        self.evicted_total = 0

    def keys(self) -> set[str]:
        return set(self._items)

    def get(self, key: str) -> SeedItem | None:
        return self._items.get(key)

    def assemble(
        self, who: str, spec: ContextSpec, now: float, stages: StageClock | None = None
    ) -> SeedPack:
        """The pack of cabin ``who``: board keys, map window and corridor, event window."""
        del who  # the seed takes the cabin's name but reads only its spec
        with self._lock:
            if stages is not None:
                stages.start()
            board = self._board_values(spec, now)
            if stages is not None:
                stages.lap("board")
            nearby, corridor = self._map(spec, now)
            for feature in (*nearby, *corridor):
                self._touch(f"map:{feature.id}", feature, spec.weight_for(f"map:{feature.id}"), now)
            if stages is not None:
                stages.lap("map")
            events: tuple[Event, ...] = ()
            if spec.event_window > 0:
                events = self.log.query(
                    now - spec.event_window,
                    now,
                    kinds=frozenset(spec.event_kinds) or None,
                    tags=frozenset(spec.event_tags) or None,
                    limit=spec.event_limit,
                )
                for event in events:
                    key = f"event:{event.kind}:{event.seq}"
                    self._touch(key, event, spec.weight_for(key), now)
            if stages is not None:
                stages.lap("log")
            self._evict_to_fit()
            if stages is not None:
                stages.lap("eviction")
            return SeedPack(board, nearby, corridor, events)

    def push(self, item: SeedItem) -> None:
        """Touch ``item`` in and evict to fit (as the seed's self-test uses it)."""
        self._touch(item.key, item.value, item.importance, item.last_used)
        self._evict_to_fit()

    def _board_keys(self, pattern: str) -> list[str]:
        rx = _glob(pattern)
        if rx is None:
            return [pattern]
        return sorted(k for k in self.board if rx.match(k))

    def _board_values(self, spec: ContextSpec, now: float) -> dict[str, Any]:
        pack: dict[str, Any] = {}
        for pattern in spec.board_keys:
            for key in self._board_keys(pattern):
                reading = self.board.read(key)
                if reading is not None and not reading.is_stale(now):
                    pack[key] = reading.value
                    self._touch(key, reading.value, spec.weight_for(key), now)
        return pack

    def _fresh(self, key: str, now: float) -> Any:
        reading = self.board.read(key)
        return None if reading is None or reading.is_stale(now) else reading.value

    def _map(
        self, spec: ContextSpec, now: float
    ) -> tuple[tuple[Feature, ...], tuple[Feature, ...]]:
        kinds = frozenset(spec.map_kinds) or None
        tags = frozenset(spec.map_tags) or None
        nearby: tuple[Feature, ...] = ()
        corridor: tuple[Feature, ...] = ()
        if spec.map_center is not None and spec.map_radius > 0:
            center = as_point(self._fresh(spec.map_center, now))
            if center is not None:
                nearby = self.map.window(center, spec.map_radius, kinds=kinds, tags=tags)
        if spec.corridor_width > 0:
            route = as_route(self._fresh(spec.route_key, now))
            if route is not None:
                corridor = self.map.corridor(route, spec.corridor_width, kinds=kinds, tags=tags)
        keep = self._relevant(spec)
        if keep is not None:
            nearby = tuple(f for f in nearby if f.kind in keep or not keep.isdisjoint(f.tags))
            corridor = tuple(f for f in corridor if f.kind in keep or not keep.isdisjoint(f.tags))
        return nearby, corridor

    def _relevant(self, spec: ContextSpec) -> frozenset[str] | None:
        if not spec.relevance:
            return None
        goal_kinds = {k.split(":", 2)[1] for k in self.board if k.startswith("goal:")}
        if not goal_kinds or not goal_kinds <= spec.relevance.keys():
            return None
        keep: set[str] = set()
        for kind in goal_kinds:
            keep.update(spec.relevance[kind])
        return frozenset(keep)

    def _touch(self, key: str, value: Any, importance: float, now: float) -> None:
        item = self._items.get(key)
        if item is None:
            self._items[key] = SeedItem(key, value, importance, now)
            return
        item.value = value
        # Within one tick the highest weight of the specs that selected it, as the runtime.
        item.importance = max(item.importance, importance) if item.last_used == now else importance
        item.last_used = now

    def _evict_to_fit(self) -> None:
        """While over capacity, drop the lowest (importance, last_used, key) unpinned item."""
        while len(self._items) > self.capacity:
            unpinned = [it for it in self._items.values() if not it.key.startswith(PINNED_PREFIXES)]
            if not unpinned:
                return
            victim = min(unpinned, key=lambda it: (it.importance, it.last_used, it.key))
            del self._items[victim.key]
            self.evicted_total += 1


def seed_tick(
    memory: SeedWorkingMemory,
    specs: Mapping[str, ContextSpec],
    now: float,
    stages: StageClock | None = None,
) -> dict[str, SeedPack]:
    """One seed tick: every cabin assembles its own pack, one after the other."""
    return {name: memory.assemble(name, spec, now, stages) for name, spec in specs.items()}
