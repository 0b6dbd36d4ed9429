"""The equal-work peer: the runtime's job done the way a py_trees user would do it.

``benchmarks.peer``'s anchor reads 20 blackboard keys; a freeze plus the three shipped
views delivers about 110 items with spatial and event windows, eviction and absence. This
peer does that same job with the common tools, sharing no code with ``runtime/``:

- the board is a py_trees blackboard: a writer client keeps every reading there (value,
  stamp, time-to-live) as the world writes it, outside the tick, and keeps the sorted key
  list a glob is resolved against;
- the tree is a ``Sequence`` of one ``Gather`` behaviour per cabin and an ``Evict``
  behaviour; each ``Gather`` reads its spec's board keys through its own blackboard client
  (its glob patterns resolved again only when the key set changed), asks a shapely
  ``STRtree`` over the map's features for its window (nearest first, then id) and its
  corridor along the route (in order along it, then id), scanning the few features
  replaced since the tree was built, and takes its event window from per-kind ``bisect``
  over stamps; each offer carries the spec's weight for its key (exact, else the most
  specific glob);
- ``Evict`` merges the offers (the highest weight, the first ``via``), keeps ``goal:*`` and
  ``safety:*`` pinned and drops the non-pinned items of lowest (importance, last used, key)
  while over capacity, and puts each cabin's view on the blackboard: its items in offer
  order, what it requires and cannot see (``evicted``, ``stale`` or ``absent``), its
  window, corridor and events as far as they were kept.

A map item's last use is the tick at which a window first offered its revision (as the
runtime stamps it), so the eviction's ties break alike. ``parity`` checks that the peer's
views hold the same items as the runtime's, field by field, in order.
"""

from __future__ import annotations

import bisect
import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import shapely
from shapely.geometry import LineString, Point

NAMESPACE = "/tickwork_peer"
GLOB = frozenset("*?[")
PINNED_PREFIXES = ("goal:", "safety:")


def _is_glob(pattern: str) -> bool:
    return not GLOB.isdisjoint(pattern)


def _literal_prefix(pattern: str) -> str:
    for i, c in enumerate(pattern):
        if c in GLOB:
            return pattern[:i]
    return pattern


def _weight(spec: Any, key: str) -> float:
    """The spec's weight for ``key``: exact, else the glob with most literal characters
    (then the longest, then the first declared), else its default weight."""
    weights: Mapping[str, float] = spec.weights
    if key in weights and not _is_glob(key):
        return float(weights[key])
    best: tuple[int, int, int] | None = None
    found = float(spec.default_weight)
    for order, (pattern, weight) in enumerate(weights.items()):
        if _is_glob(pattern) and fnmatch.fnmatchcase(key, pattern):
            rank = (sum(1 for c in pattern if c not in GLOB), len(pattern), -order)
            if best is None or rank > best:
                best, found = rank, float(weight)
    return found


def _xy(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (tuple, list)) and len(value) >= 2:
        x, y = value[0], value[1]
        numbers = isinstance(x, float | int) and isinstance(y, float | int)
        if numbers and math.isfinite(x) and math.isfinite(y):
            return float(x), float(y)
    return None


class PeerMap:
    """Features in an STRtree built once, plus those put since (scanned at each query)."""

    def __init__(self, features: Iterable[Any]) -> None:
        self.features: dict[str, Any] = {}
        self.revision: dict[str, int] = {}
        self.version = 0
        for feature in features:
            self.put(feature)
        self.static = list(self.features.values())
        self.geoms = np.array([f.geometry for f in self.static], dtype=object)
        self.tree = shapely.STRtree(self.geoms)
        self.masked: set[int] = set()
        self.position = {f.id: i for i, f in enumerate(self.static)}
        self.moved: dict[str, Any] = {}

    def put(self, feature: Any) -> None:
        self.features[feature.id] = feature
        self.version += 1
        self.revision[feature.id] = self.version
        if hasattr(self, "position"):
            at = self.position.get(feature.id)
            if at is not None:
                self.masked.add(at)
            self.moved[feature.id] = feature

    def near(self, geometry: Any, distance: float) -> list[tuple[float, Any]]:
        """Every feature within ``distance`` of ``geometry``, with its exact distance."""
        hits = self.tree.query(geometry, predicate="dwithin", distance=distance)
        if self.masked:
            hits = np.array([h for h in hits.tolist() if h not in self.masked], dtype=np.intp)
        out: list[tuple[float, Any]] = []
        if len(hits):
            gaps = shapely.distance(self.geoms[hits], geometry).tolist()
            static = self.static
            out = [
                (d, static[h]) for d, h in zip(gaps, hits.tolist(), strict=True) if d <= distance
            ]
        if self.moved:
            moved = list(self.moved.values())
            gaps = shapely.distance(np.array([f.geometry for f in moved], dtype=object), geometry)
            out += [(d, f) for d, f in zip(gaps.tolist(), moved, strict=True) if d <= distance]
        return out


class PeerLog:
    """Events by kind, each kind's stamps beside them for ``bisect``."""

    def __init__(self, events: Iterable[Any]) -> None:
        self.events: dict[str, list[Any]] = {}
        self.stamps: dict[str, list[float]] = {}
        for event in events:
            self.append(event)

    def append(self, event: Any) -> None:
        self.events.setdefault(event.kind, []).append(event)
        self.stamps.setdefault(event.kind, []).append(event.stamp)

    def window(
        self, kinds: Sequence[str], tags: frozenset[str], since: float, now: float, limit: int
    ) -> list[Any]:
        found: list[Any] = []
        for kind in kinds or list(self.events):
            stamps = self.stamps.get(kind)
            if stamps:
                lo = bisect.bisect_left(stamps, since)
                hi = bisect.bisect_right(stamps, now)
                found.extend(self.events[kind][lo:hi])
        if tags:
            found = [e for e in found if not tags.isdisjoint(e.tags)]
        found.sort(key=lambda e: e.seq)
        return found[-limit:] if limit else []


class EqualWorkPeer:
    """The three shipped cabins' views, assembled by a py_trees tree (see the module doc)."""

    def __init__(
        self,
        specs: Mapping[str, Any],
        *,
        readings: Iterable[Any],
        features: Iterable[Any],
        events: Iterable[Any],
        capacity: int,
    ) -> None:
        import py_trees

        self._py_trees = py_trees
        self.specs = dict(specs)
        self.capacity = capacity
        self.writer = py_trees.blackboard.Client(name="peer_world", namespace=NAMESPACE)
        self.keys: list[str] = []
        self.key_version = 0
        self.meta: dict[str, tuple[float, float | None, int]] = {}  # stamp, ttl, seq
        for reading in readings:
            self.put(reading)
        self.map = PeerMap(features)
        self.log = PeerLog(events)
        self.seen: dict[str, tuple[int, float]] = {}  # map key -> revision, first offered
        self.now = 0.0
        self.offers: dict[str, dict[str, Any]] = {}
        self.views: dict[str, dict[str, Any]] = {}
        gathers = [self._gather(name, spec) for name, spec in self.specs.items()]
        root = py_trees.composites.Sequence(
            "peer", memory=False, children=[*gathers, self._evict()]
        )
        self.tree = py_trees.trees.BehaviourTree(root)
        self.tree.setup()

    # -- the world, mirrored outside the tick -----------------------------------------------

    def put(self, reading: Any) -> None:
        key = reading.key
        if key not in self.meta:
            self.writer.register_key(key=key, access=self._py_trees.common.Access.WRITE)
            bisect.insort(self.keys, key)
            self.key_version += 1
        self.meta[key] = (reading.stamp, reading.ttl, reading.seq)
        self.writer.set(key, reading.value)

    def delete(self, key: str) -> None:
        if self.meta.pop(key, None) is not None:
            self.keys.remove(key)
            self.key_version += 1
            self.writer.unset(key)

    def put_feature(self, feature: Any) -> None:
        self.map.put(feature)

    def append(self, event: Any) -> None:
        self.log.append(event)

    # -- the tick ------------------------------------------------------------------------------

    def tick(self, now: float) -> dict[str, dict[str, Any]]:
        """One tick of the tree at ``now``: each cabin's view."""
        self.now = now
        self.tree.tick()
        return self.views

    def close(self) -> None:
        self.tree.shutdown()
        self._py_trees.blackboard.Blackboard.clear()

    def resolve(self, pattern: str) -> list[str]:
        """The board keys a pattern names, in sorted order."""
        if not _is_glob(pattern):
            return [pattern] if pattern in self.meta else []
        prefix = _literal_prefix(pattern)
        keys = self.keys
        out = []
        for i in range(bisect.bisect_left(keys, prefix), len(keys)):
            key = keys[i]
            if not key.startswith(prefix):
                break
            if fnmatch.fnmatchcase(key, pattern):
                out.append(key)
        return out

    def _gather(self, name: str, spec: Any) -> Any:
        py_trees = self._py_trees
        peer = self

        class Gather(py_trees.behaviour.Behaviour):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__(f"gather:{name}")
                self.board = self.attach_blackboard_client(name=f"peer_{name}", namespace=NAMESPACE)
                self.registered: set[str] = set()
                self.version = -1
                self.keys: list[tuple[str, str]] = []
                self.weights: dict[str, float] = {}
                self.window_via = f"map:window({spec.map_center},{spec.map_radius:g})"
                self.corridor_via = f"map:corridor({spec.route_key},{spec.corridor_width:g})"
                self.log_via = f"log:window({spec.event_window:g}s)"
                caps = [spec.map_limit] if spec.map_limit is not None else []
                if spec.map_share is not None:
                    caps.append(max(1, math.floor(spec.map_share * peer.capacity + 1e-9)))
                self.cap = min(caps) if caps else None
                self.event_tags = frozenset(spec.event_tags)

            def weight(self, key: str) -> float:
                w = self.weights.get(key)
                if w is None:
                    w = self.weights[key] = _weight(spec, key)
                return w

            def fresh(self, key: str, now: float) -> tuple[bool, Any]:
                stamp, ttl, _ = peer.meta[key]
                if ttl is not None and now - stamp > ttl:
                    return False, None
                return True, self.board.get(key)

            def update(self) -> Any:
                now = peer.now
                if self.version != peer.key_version:  # the key set changed: resolve again
                    self.keys = [
                        (key, f"board:{pattern}")
                        for pattern in spec.board_keys
                        for key in peer.resolve(pattern)
                    ]
                    for key, _ in self.keys:
                        if key not in self.registered:
                            self.board.register_key(key=key, access=py_trees.common.Access.READ)
                            self.registered.add(key)
                    self.version = peer.key_version
                mine: dict[str, Any] = {}  # key -> (value, source, stamp, seq, weight, via)
                stale: list[str] = []
                meta = peer.meta
                for key, via in self.keys:
                    if key in mine:
                        continue
                    ok, value = self.fresh(key, now)
                    if not ok:
                        stale.append(key)
                        continue
                    stamp, _, seq = meta[key]
                    mine[key] = (value, "board", stamp, seq, self.weight(key), via)
                near, along = self.maps(now)
                for features, via in ((near, self.window_via), (along, self.corridor_via)):
                    for feature in features:
                        key = "map:" + feature.id
                        if key in mine:
                            continue
                        revision, stamp = peer.offered(key, feature.id, now)
                        mine[key] = (feature, "map", stamp, revision, self.weight(key), via)
                events: list[Any] = []
                if spec.event_window > 0:
                    events = peer.log.window(
                        spec.event_kinds,
                        self.event_tags,
                        now - spec.event_window,
                        now,
                        spec.event_limit,
                    )
                for event in events:
                    key = f"event:{event.kind}:{event.seq}"
                    if key not in mine:
                        mine[key] = (
                            event,
                            "log",
                            event.stamp,
                            event.seq,
                            self.weight(key),
                            self.log_via,
                        )
                peer.offers[name] = {
                    "items": mine,
                    "stale": stale,
                    "near": near,
                    "along": along,
                    "events": events,
                }
                return py_trees.common.Status.SUCCESS

            def maps(self, now: float) -> tuple[list[Any], list[Any]]:
                near: list[Any] = []
                along: list[Any] = []
                if (
                    spec.map_center is not None
                    and spec.map_radius > 0
                    and spec.map_center in peer.meta
                ):
                    ok, value = self.fresh(spec.map_center, now)
                    xy = _xy(value) if ok else None
                    if xy is not None:
                        near = self.window(Point(xy), spec.map_radius)
                if spec.corridor_width > 0 and spec.route_key in peer.meta:
                    ok, value = self.fresh(spec.route_key, now)
                    points = [_xy(p) for p in value] if ok and isinstance(value, tuple) else []
                    if points and all(p is not None for p in points):
                        along = self.corridor(points, spec.corridor_width)
                keep = peer.relevant(spec)
                if keep is not None:
                    near = [f for f in near if f.kind in keep or not keep.isdisjoint(f.tags)]
                    along = [f for f in along if f.kind in keep or not keep.isdisjoint(f.tags)]
                if self.cap is not None:
                    near = near[: self.cap]
                if spec.corridor_limit is not None:
                    along = along[: spec.corridor_limit]
                return near, along

            def kept(self, feature: Any) -> bool:
                kinds, tags = spec.map_kinds, spec.map_tags
                if kinds and feature.kind not in kinds:
                    return False
                return not tags or not feature.tags.isdisjoint(tags)

            def window(self, center: Any, radius: float) -> list[Any]:
                rows = [(d, f.id, f) for d, f in peer.map.near(center, radius) if self.kept(f)]
                rows.sort(key=lambda r: (r[0], r[1]))
                return [f for _, _, f in rows]

            def corridor(self, points: list[Any], width: float) -> list[Any]:
                distinct = [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]
                if len(distinct) == 1:
                    return self.window(Point(distinct[0]), width)
                line = LineString(distinct)
                found = [f for _, f in peer.map.near(line, width) if self.kept(f)]
                if not found:
                    return []
                geoms = np.array([f.geometry for f in found], dtype=object)
                on_line = shapely.get_point(shapely.shortest_line(geoms, line), 1)
                along = shapely.line_locate_point(line, on_line).tolist()
                rows = sorted(
                    zip(along, [f.id for f in found], found, strict=True),
                    key=lambda r: (r[0], r[1]),
                )
                return [f for _, _, f in rows]

        return Gather()

    def offered(self, key: str, fid: str, now: float) -> tuple[int, float]:
        """A map item's revision and the time a window first offered that revision."""
        revision = self.map.revision[fid]
        known = self.next_seen.get(key)
        if known is None:
            before = self.seen.get(key)
            known = (revision, now) if before is None or before[0] != revision else before
            self.next_seen[key] = known
        return known

    def relevant(self, spec: Any) -> frozenset[str] | None:
        if not spec.relevance:
            return None
        goals = {k.split(":", 2)[1] for k in self.resolve("goal:*")}
        if not goals or not goals <= set(spec.relevance):
            return None
        return frozenset(x for g in goals for x in spec.relevance[g])

    def _evict(self) -> Any:
        py_trees = self._py_trees
        peer = self

        class Evict(py_trees.behaviour.Behaviour):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__("evict")
                self.board = self.attach_blackboard_client(name="peer_evict", namespace=NAMESPACE)
                for name in peer.specs:
                    self.board.register_key(key=f"view/{name}", access=py_trees.common.Access.WRITE)

            def update(self) -> Any:
                now = peer.now
                merged: dict[str, list[Any]] = {}
                for offer in peer.offers.values():
                    for key, row in offer["items"].items():
                        have = merged.get(key)
                        if have is None:
                            merged[key] = list(row)
                        elif row[4] > have[4]:
                            have[4] = row[4]
                peer.seen, peer.next_seen = peer.next_seen, {}
                over = len(merged) - peer.capacity
                victims: set[str] = set()
                if over > 0:
                    free = [
                        (row[4], now if row[2] is None else min(row[2], now), key)
                        for key, row in merged.items()
                        if not key.startswith(PINNED_PREFIXES)
                    ]
                    free.sort()
                    victims = {key for _, _, key in free[:over]}
                stale_keys = set()
                for offer in peer.offers.values():
                    stale_keys.update(k for k in offer["stale"] if k in peer.meta)
                for name, spec in peer.specs.items():
                    offer = peer.offers[name]
                    items = {k: row[0] for k, row in offer["items"].items() if k not in victims}
                    lost = [k for k in offer["items"] if k in victims]
                    missing = {}
                    for pattern in spec.required:
                        if any(fnmatch.fnmatchcase(k, pattern) for k in items):
                            continue
                        if any(fnmatch.fnmatchcase(k, pattern) for k in lost):
                            missing[pattern] = "evicted"
                        elif any(fnmatch.fnmatchcase(k, pattern) for k in stale_keys):
                            missing[pattern] = "stale"
                        else:
                            missing[pattern] = "absent"
                    view = {
                        "items": items,
                        "missing": missing,
                        "nearby": [f.id for f in offer["near"] if "map:" + f.id in items],
                        "corridor": [f.id for f in offer["along"] if "map:" + f.id in items],
                        "events": [
                            e.seq for e in offer["events"] if f"event:{e.kind}:{e.seq}" in items
                        ],
                        "evicted": lost,
                    }
                    self.board.set(f"view/{name}", view)
                    peer.views[name] = view
                return py_trees.common.Status.SUCCESS

        self.next_seen: dict[str, tuple[int, float]] = {}
        return Evict()


def parity(views: Sequence[Any], peer_views: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Where the runtime's views and the peer's first differ (None when they hold the same
    items, values, absences, windows, corridors, events and losses, in order)."""
    for view in views:
        mine = peer_views.get(view.cabin)
        if mine is None:
            return f"{view.cabin}: the peer has no view"
        got = [(k, view[k]) for k in view]
        want = list(mine["items"].items())
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            if a[0] != b[0] or not _same(a[1], b[1]):
                return f"{view.cabin} items[{i}]: runtime {a[0]!r}, peer {b[0]!r}"
        if len(got) != len(want):
            return f"{view.cabin} items: runtime has {len(got)}, peer {len(want)}"
        checks = (
            ("missing", sorted(view.missing.items()), sorted(mine["missing"].items())),
            ("nearby", [f.id for f in view.nearby_map], mine["nearby"]),
            ("corridor", [f.id for f in view.corridor_map], mine["corridor"]),
            ("events", [e.seq for e in view.recent_events], mine["events"]),
            ("evicted", list(view.evicted), mine["evicted"]),
        )
        for what, a, b in checks:
            if list(a) != list(b):
                return f"{view.cabin} {what}: runtime {a!r}, peer {b!r}"
    return None


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except ValueError:  # numpy arrays
        return bool(np.array_equal(a, b))


def peer_of(features: Iterable[Any], runtime: Any) -> EqualWorkPeer:
    """A peer holding what a freshly loaded ``benchmarks.world.RuntimeWorld`` holds (its
    readings and events taken as data; ``features``: the world's, as generated)."""
    return EqualWorkPeer(
        runtime.specs,
        readings=runtime.board.readings("*"),
        features=features,
        events=runtime.log.query(-math.inf, limit=None),
        capacity=runtime.memory.capacity,
    )
