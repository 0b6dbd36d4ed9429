"""An independent model of what every freeze must produce, for the benchmark's parity check.

``ReferenceModel`` writes down the semantics of a freeze (DESIGN.md, "One tick" and the
invariants) as plainly as it can, sharing no code with ``runtime/``: its own board (a dict
and a sorted key list), map (features bucketed in a grid, measured with shapely), log (each
kind's events in a list), weight lookup, position readers and working memory (a dict,
evicted with a ``min()`` scan). It takes the runtime's records (``Reading``, ``Feature``,
``Event``) and specs (``ContextSpec``) as data only, reading their fields.

At every tick it computes, for the union of the specs, in spec order:

- each spec's offers: its board keys (exact keys, or globs over the sorted keys; stale
  readings skipped and remembered), its map window (features within ``map_radius`` of the
  centre reading, by exact distance, nearest first then id, filtered by kind and tag) and
  corridor (within ``corridor_width`` of the route, in order along it, then id), both
  narrowed to what the active goals need (``relevance``) and then capped (the window's
  first ``map_limit``, or ``map_share`` of the capacity rounded down and at least 1, the
  smaller of the two; the corridor's first ``corridor_limit``), and its event window (the
  newest ``event_limit`` events stamped in ``[now - event_window, now]`` of its kinds and
  tags);
- the candidates: an item offered by several specs takes the highest of their weights and
  the ``via`` of the first that offered it; its ``last_used`` is its source's stamp (never
  later than now). A map feature's ``seq`` is its revision (the map version its last put
  made: the map is loaded by adding the features in order, each put one version) and its
  stamp the freeze time at which a window first offered that revision, kept for as long
  as some window or corridor offers it at every freeze;
- working memory: what no spec offered leaves it (``retracted`` or ``stale`` when its
  source no longer backs it, else ``expired``), offered items are written (a held one keeps
  its place and ``first_seen``), and while it is over capacity the non-pinned item with the
  lowest ``(importance, last_used, key)`` is evicted;
- each view: the items its spec offered that memory kept, in offer order, each with that
  spec's ``via``; each required pattern it cannot see, with its reason (``evicted`` if an
  item it offered and the pattern matches was evicted for capacity this tick, ``stale`` if
  a stale reading matches it, else ``absent``); its map window, corridor and events as far
  as memory kept them; and what it offered that was evicted for capacity this tick, in
  offer order (``evicted``);
- the capacity alarm: memory holds more than its capacity (pinned items alone overflow
  it), or some view lost an item it offered.

``differences`` compares a runtime working set and its views with the model's freeze,
field by field and in order, and says where they first differ. Scratchpad notes are not
modelled: the benchmark worlds have none.
"""

from __future__ import annotations

import bisect
import fnmatch
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np
import shapely
from shapely.geometry import LineString, Point

GLOB = frozenset("*?[")
PINNED = ("goal:*", "safety:*")
CELL = 10.0
"""Metres per side of a grid cell of the model's map."""


def _is_glob(pattern: str) -> bool:
    return not GLOB.isdisjoint(pattern)


def _prefix(pattern: str) -> str:
    for i, c in enumerate(pattern):
        if c in GLOB:
            return pattern[:i]
    return pattern


def _matches(key: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(key, pattern) if _is_glob(pattern) else key == pattern


def _number(value: Any) -> float | None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return None
    return number if math.isfinite(number) else None


def position(value: Any) -> tuple[float, float] | None:
    """(x, y) of a pose: a mapping with x and y, an object with x and y, or a sequence
    (or 1-D array) whose first two entries are finite numbers."""
    if isinstance(value, Mapping):
        x, y = _number(value.get("x")), _number(value.get("y"))
    elif hasattr(value, "x") and hasattr(value, "y") and not isinstance(value, np.ndarray):
        x, y = _number(value.x), _number(value.y)
    elif (isinstance(value, np.ndarray) and value.ndim == 1 and len(value) >= 2) or (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) >= 2
    ):
        x, y = _number(value[0]), _number(value[1])
    else:
        return None
    return None if x is None or y is None else (x, y)


def route_points(value: Any) -> list[tuple[float, float]] | None:
    """The points of a route: a sequence of positions, or a mapping holding one under
    ``points`` (else ``waypoints``)."""
    if isinstance(value, Mapping):
        value = value.get("points", value.get("waypoints"))
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or not value:
        return None
    points = [position(p) for p in value]
    if any(p is None for p in points):
        return None
    return points  # type: ignore[return-value]


def _weight(spec: Any, key: str) -> float:
    """A spec's weight for ``key``: its exact entry, else the most specific matching glob
    (most literal characters, then longest; ties: first declared), else the default."""
    weights: Mapping[str, float] = spec.weights
    if key in weights and not _is_glob(key):
        return float(weights[key])
    best: tuple[tuple[int, int], int, float] | None = None
    for order, (pattern, weight) in enumerate(weights.items()):
        if not _is_glob(pattern) or not fnmatch.fnmatchcase(key, pattern):
            continue
        literal = sum(1 for c in pattern if c not in GLOB)
        rank = ((literal, len(pattern)), -order, float(weight))
        if best is None or rank[:2] > best[:2]:
            best = rank
    return float(spec.default_weight) if best is None else best[2]


@dataclass(slots=True)
class Item:
    """A working-memory item of the model."""

    key: str
    value: Any
    importance: float
    last_used: float
    first_seen: float
    source: str
    stamp: float | None
    seq: int
    via: str

    def fields(self) -> tuple[Any, ...]:
        return (
            self.key,
            self.value,
            self.importance,
            self.last_used,
            self.first_seen,
            self.source,
            self.stamp,
            self.seq,
            self.via,
        )


@dataclass(slots=True)
class View:
    """What one spec's view holds at a freeze."""

    items: list[tuple[Any, ...]]
    missing: list[tuple[str, str]]
    nearby: list[str]
    corridor: list[str]
    events: list[int]
    evicted: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Freeze:
    """The model's working set of one tick."""

    items: list[tuple[Any, ...]]
    evictions: list[tuple[int, str, float, float, str]]
    capacity_alarm: bool
    views: dict[str, View] = field(default_factory=dict)


class _Grid:
    """Features bucketed by the grid cells their bounds touch."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], set[str]] = {}
        self.where: dict[str, list[tuple[int, int]]] = {}

    @staticmethod
    def _span(x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, int]]:
        return [
            (i, j)
            for i in range(math.floor(x0 / CELL), math.floor(x1 / CELL) + 1)
            for j in range(math.floor(y0 / CELL), math.floor(y1 / CELL) + 1)
        ]

    def put(self, fid: str, bounds: Sequence[float]) -> None:
        self.drop(fid)
        cells = self._span(*bounds)
        self.where[fid] = cells
        for cell in cells:
            self.cells.setdefault(cell, set()).add(fid)

    def drop(self, fid: str) -> None:
        for cell in self.where.pop(fid, ()):
            self.cells[cell].discard(fid)

    def near(self, x0: float, y0: float, x1: float, y1: float) -> set[str]:
        found: set[str] = set()
        for cell in self._span(x0, y0, x1, y1):
            found.update(self.cells.get(cell, ()))
        return found


class ReferenceModel:
    """The sources, working memory and specs of one world, as the semantics define them."""

    def __init__(
        self,
        specs: Mapping[str, Any],
        *,
        readings: Iterable[Any],
        features: Iterable[Any],
        events: Iterable[Any],
        capacity: int,
    ) -> None:
        self.specs = dict(specs)
        self.capacity = capacity
        self.board: dict[str, Any] = {r.key: r for r in readings}
        self.sorted_keys = sorted(self.board)
        self.features: dict[str, Any] = {}
        self.revision: dict[str, int] = {}  # feature id -> the map version its put made
        self.grid = _Grid()
        self.map_version = 0
        for feature in features:
            self.put_feature(feature)
        # map key -> (revision, time first offered) of what the last freeze offered
        self.seen: dict[str, tuple[int, float]] = {}
        self.by_kind: dict[str, list[Any]] = {}
        self.stamps: dict[str, list[float]] = {}
        for event in events:
            self.append(event)
        self.memory: dict[str, Item] = {}
        self._weights: dict[str, dict[str, float]] = {}  # per spec: key -> weight, once

    # -- the sources, mirrored ----------------------------------------------------------

    def put(self, reading: Any) -> None:
        if reading.key not in self.board:
            bisect.insort(self.sorted_keys, reading.key)
        self.board[reading.key] = reading

    def delete(self, key: str) -> None:
        if self.board.pop(key, None) is not None:
            self.sorted_keys.remove(key)

    def put_feature(self, feature: Any) -> None:
        self.features[feature.id] = feature
        self.grid.put(feature.id, shapely.bounds(feature.geometry).tolist())
        self.map_version += 1
        self.revision[feature.id] = self.map_version

    def append(self, event: Any) -> None:
        self.by_kind.setdefault(event.kind, []).append(event)
        self.stamps.setdefault(event.kind, []).append(event.stamp)

    # -- reading them -----------------------------------------------------------------------

    def _keys(self, pattern: str) -> list[str]:
        if not _is_glob(pattern):
            return [pattern] if pattern in self.board else []
        prefix = _prefix(pattern)
        keys = self.sorted_keys
        out = []
        for i in range(bisect.bisect_left(keys, prefix), len(keys)):
            key = keys[i]
            if not key.startswith(prefix):
                break
            if fnmatch.fnmatchcase(key, pattern):
                out.append(key)
        return out

    def _fresh(self, key: str, now: float) -> Any | None:
        reading = self.board.get(key)
        if reading is None or (reading.ttl is not None and now - reading.stamp > reading.ttl):
            return None
        return reading

    def _kept(self, spec: Any, feature: Any) -> bool:
        kinds, tags = spec.map_kinds, spec.map_tags
        if kinds and feature.kind not in kinds:
            return False
        return not tags or not feature.tags.isdisjoint(tags)

    def _window(self, spec: Any, x: float, y: float, radius: float) -> list[Any]:
        ids = sorted(self.grid.near(x - radius, y - radius, x + radius, y + radius))
        found = [self.features[i] for i in ids if self._kept(spec, self.features[i])]
        if not found:
            return []
        gaps = shapely.distance(np.array([f.geometry for f in found], dtype=object), Point(x, y))
        inside = [(float(d), f.id, f) for d, f in zip(gaps.tolist(), found, strict=True)]
        return [f for d, _, f in sorted(inside) if d <= radius]

    def _corridor(self, spec: Any, points: list[tuple[float, float]], width: float) -> list[Any]:
        distinct: list[tuple[float, float]] = []
        for p in points:
            if not distinct or distinct[-1] != p:
                distinct.append(p)
        if len(distinct) == 1:
            return self._window(spec, distinct[0][0], distinct[0][1], width)
        line = LineString(distinct)
        ids: set[str] = set()
        for a, b in itertools.pairwise(distinct):
            ids |= self.grid.near(
                min(a[0], b[0]) - width,
                min(a[1], b[1]) - width,
                max(a[0], b[0]) + width,
                max(a[1], b[1]) + width,
            )
        rows = []
        for fid in sorted(ids):
            feature = self.features[fid]
            if not self._kept(spec, feature):
                continue
            if shapely.distance(feature.geometry, line) <= width:
                on_line = shapely.get_point(shapely.shortest_line(feature.geometry, line), 1)
                rows.append((float(shapely.line_locate_point(line, on_line)), fid, feature))
        return [f for _, _, f in sorted(rows, key=lambda r: (r[0], r[1]))]

    def _events(self, spec: Any, now: float) -> list[Any]:
        since = now - spec.event_window
        kinds = spec.event_kinds or list(self.by_kind)
        found = []
        for kind in kinds:
            stamps = self.stamps.get(kind, [])
            lo, hi = bisect.bisect_left(stamps, since), bisect.bisect_right(stamps, now)
            found.extend(self.by_kind[kind][lo:hi])
        if spec.event_tags:
            found = [e for e in found if not e.tags.isdisjoint(spec.event_tags)]
        found.sort(key=lambda e: e.seq)
        return found[-spec.event_limit :]

    def _relevant(self, spec: Any) -> frozenset[str] | None:
        goals = {k.split(":", 2)[1] for k in self._keys("goal:*") if k.count(":") >= 1}
        if not spec.relevance or not goals or not goals <= set(spec.relevance):
            return None
        return frozenset(x for g in goals for x in spec.relevance[g])

    # -- one freeze --------------------------------------------------------------------

    def freeze(self, tick: int, now: float) -> Freeze:
        """The working set of ``tick`` at ``now``; working memory moves on to it."""
        candidates: dict[str, list[Any]] = {}  # key -> value, source, stamp, seq, weight, via
        chosen: dict[str, dict[str, str]] = {}
        maps: dict[str, tuple[list[Any], list[Any]]] = {}
        windows: dict[str, list[Any]] = {}
        stale: set[str] = set()
        seen: dict[str, tuple[int, float]] = {}
        for name, spec in self.specs.items():
            mine: dict[str, str] = {}
            chosen[name] = mine

            weights = self._weights.setdefault(name, {})

            def offer(
                key: str,
                value: Any,
                source: str,
                stamp: float | None,
                seq: int,
                via: str,
                spec: Any = spec,
                mine: dict[str, str] = mine,
                weights: dict[str, float] = weights,
            ) -> None:
                weight = weights.get(key)
                if weight is None:
                    weight = weights[key] = _weight(spec, key)
                have = candidates.get(key)
                if have is None:
                    candidates[key] = [value, source, stamp, seq, weight, via]
                elif weight > have[4]:
                    have[4] = weight
                mine.setdefault(key, via)

            for pattern in spec.board_keys:
                for key in self._keys(pattern):
                    reading = self._fresh(key, now)
                    if reading is None:
                        stale.add(key)
                        continue
                    offer(
                        key, reading.value, "board", reading.stamp, reading.seq, f"board:{pattern}"
                    )
            nearby: list[Any] = []
            corridor: list[Any] = []
            if spec.map_center is not None and spec.map_radius > 0:
                reading = self._fresh(spec.map_center, now)
                xy = None if reading is None else position(reading.value)
                if xy is not None:
                    nearby = self._window(spec, xy[0], xy[1], spec.map_radius)
            if spec.corridor_width > 0:
                reading = self._fresh(spec.route_key, now)
                points = None if reading is None else route_points(reading.value)
                if points is not None:
                    corridor = self._corridor(spec, points, spec.corridor_width)
            keep = self._relevant(spec)
            if keep is not None:
                nearby = [f for f in nearby if f.kind in keep or not keep.isdisjoint(f.tags)]
                corridor = [f for f in corridor if f.kind in keep or not keep.isdisjoint(f.tags)]
            caps = [spec.map_limit] if spec.map_limit is not None else []
            if spec.map_share is not None:
                caps.append(max(1, math.floor(spec.map_share * self.capacity + 1e-9)))
            if caps:
                nearby = nearby[: min(caps)]
            if spec.corridor_limit is not None:
                corridor = corridor[: spec.corridor_limit]
            maps[name] = (nearby, corridor)
            window_via = f"map:window({spec.map_center},{spec.map_radius:g})"
            corridor_via = f"map:corridor({spec.route_key},{spec.corridor_width:g})"
            for features, via in ((nearby, window_via), (corridor, corridor_via)):
                for feature in features:
                    key = f"map:{feature.id}"
                    if key not in seen:
                        revision = self.revision[feature.id]
                        before = self.seen.get(key)
                        fresh = before is None or before[0] != revision
                        seen[key] = (revision, now) if fresh else before  # type: ignore[assignment]
                    revision, stamp = seen[key]
                    offer(key, feature, "map", stamp, revision, via)
            recent = self._events(spec, now) if spec.event_window > 0 else []
            windows[name] = recent
            log_via = f"log:window({spec.event_window:g}s)"
            for event in recent:
                offer(
                    f"event:{event.kind}:{event.seq}", event, "log", event.stamp, event.seq, log_via
                )
        stale = {k for k in stale if k in self.board}  # read, and stale (not absent)
        self.seen = seen

        evictions: list[tuple[int, str, float, float, str]] = []
        memory = self.memory
        gone = [item for key, item in memory.items() if key not in candidates]
        reasons = [(item, self._reason(item, now)) for item in gone]
        for item, reason in [*[r for r in reasons if r[1]], *[r for r in reasons if not r[1]]]:
            del memory[item.key]
            evictions.append((tick, item.key, item.importance, item.last_used, reason or "expired"))
        for key, (value, source, stamp, seq, weight, via) in candidates.items():
            used = now if stamp is None else min(stamp, now)
            held = memory.get(key)
            first = now if held is None else held.first_seen
            memory[key] = Item(key, value, weight, used, first, source, stamp, seq, via)
        capacity_evicted: set[str] = set()
        free = {k: i for k, i in memory.items() if not any(_matches(k, p) for p in PINNED)}
        while len(memory) > self.capacity and free:
            victim = min(free.values(), key=lambda i: (i.importance, i.last_used, i.key))
            del free[victim.key]
            del memory[victim.key]
            capacity_evicted.add(victim.key)
            evictions.append((tick, victim.key, victim.importance, victim.last_used, "capacity"))

        out = Freeze(
            items=[item.fields() for item in memory.values()],
            evictions=evictions,
            capacity_alarm=len(memory) > self.capacity
            or any(k in capacity_evicted for mine in chosen.values() for k in mine),
        )
        for name, spec in self.specs.items():
            mine = chosen[name]
            items = []
            for key, via in mine.items():
                held = memory.get(key)
                if held is not None:
                    items.append((key, *held.fields()[1:-1], via))
            keys = {row[0] for row in items}
            missing = []
            for pattern in spec.required:
                if any(_matches(k, pattern) for k in keys):
                    continue
                if any(_matches(k, pattern) for k in capacity_evicted if k in mine):
                    missing.append((pattern, "evicted"))
                elif any(_matches(k, pattern) for k in stale):
                    missing.append((pattern, "stale"))
                else:
                    missing.append((pattern, "absent"))
            nearby, corridor = maps[name]
            out.views[name] = View(
                items=items,
                missing=missing,
                nearby=[f.id for f in nearby if f"map:{f.id}" in keys],
                corridor=[f.id for f in corridor if f"map:{f.id}" in keys],
                events=[e.seq for e in windows[name] if f"event:{e.kind}:{e.seq}" in keys],
                evicted=[k for k in mine if k in capacity_evicted],
            )
        return out

    def _reason(self, item: Item, now: float) -> str | None:
        if item.source == "board":
            if item.key not in self.board:
                return "retracted"
            return "stale" if self._fresh(item.key, now) is None else None
        if item.source == "map":
            return "retracted" if item.key[4:] not in self.features else None
        return None


def _row(item: Any) -> tuple[Any, ...]:
    return (
        item.key,
        item.value,
        item.importance,
        item.last_used,
        item.first_seen,
        item.source,
        item.stamp,
        item.seq,
        item.via,
    )


def _first_difference(what: str, got: Sequence[Any], want: Sequence[Any]) -> str | None:
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"{what}[{i}]: runtime {_short(a)}, model {_short(b)}"
    if len(got) != len(want):
        return f"{what}: runtime has {len(got)}, model {len(want)}"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def differences(ws: Any, views: Sequence[Any], model: Freeze) -> str | None:
    """Where a runtime working set (and its views) first differs from the model's freeze,
    or None when they agree in every field, in order."""
    found = (
        _first_difference("items", [_row(i) for i in ws.items.values()], model.items)
        or _first_difference(
            "evictions",
            [(e.tick, e.key, e.importance, e.last_used, e.reason) for e in ws.evictions],
            model.evictions,
        )
        or (
            None
            if ws.capacity_alarm == model.capacity_alarm
            else f"capacity alarm: runtime {ws.capacity_alarm}, model {model.capacity_alarm}"
        )
    )
    if found:
        return found
    for view in views:
        want = model.views[view.cabin]
        found = (
            _first_difference(
                f"{view.cabin} items", [_row(i) for i in view.provenance.values()], want.items
            )
            or _first_difference(f"{view.cabin} missing", list(view.missing.items()), want.missing)
            or _first_difference(
                f"{view.cabin} nearby map", [f.id for f in view.nearby_map], want.nearby
            )
            or _first_difference(
                f"{view.cabin} corridor", [f.id for f in view.corridor_map], want.corridor
            )
            or _first_difference(
                f"{view.cabin} events", [e.seq for e in view.recent_events], want.events
            )
            or _first_difference(f"{view.cabin} evicted", list(view.evicted), want.evicted)
        )
        if found:
            return found
    return None
