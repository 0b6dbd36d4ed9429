"""Per-stage timing of a runtime tick, by replaying the assembler's source calls outside it.

``Assembler.assemble`` is one call; to see where its time goes, ``replay`` makes
the calls it makes, in its order and with its per-tick caches, through the public
APIs of the sources: the board keys and readings (board), the map window and
corridor with the relevance filter (map), the event window (log), and retraction,
expiry of what no spec selected, upserts and eviction on a shadow
``WorkingMemory`` that receives exactly what the real one does (eviction). The
real tick is timed right after on the same state; what it spends beyond the
replayed stages is the freeze stage (selections, the frozen pack and the three
views). The replay is a from-scratch tick (without scratchpads, which the benchmark
worlds do not have): it does not carry over what the assembler keeps from one tick
to the next (board keys per pattern, unchanged event windows, the corridor's and the
moving window's tree queries, items held unchanged), so each stage it times is an
upper bound of what that stage costs inside the real tick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from benchmarks.seed_reference import StageClock
from runtime import CabinMap, ContextSpec, StateBoard, WorkingMemory, WorkItem
from runtime.cabin_map import Feature
from runtime.log import Event, EventLog
from runtime.position import read_route as as_route
from runtime.position import read_xy as as_point

Candidate = tuple[Any, str, "float | None", int, float]


def shadow_of(memory: WorkingMemory) -> WorkingMemory:
    """A new memory holding the same items as ``memory`` (same capacity, pins and policy kind)."""
    shadow = WorkingMemory(
        capacity=memory.capacity, pinned=memory.pinned.patterns, policy=type(memory.policy)()
    )
    for item in memory.items():
        shadow.upsert(item)
    return shadow


def _relevant(spec: ContextSpec, goal_kinds: frozenset[str]) -> frozenset[str] | None:
    if not spec.relevance or not goal_kinds or not goal_kinds <= spec.relevance.keys():
        return None
    keep: set[str] = set()
    for kind in goal_kinds:
        keep.update(spec.relevance[kind])
    return frozenset(keep)


class _Offers:
    """The candidates of one tick: key → (value, source, stamp, seq, importance)."""

    def __init__(self) -> None:
        self.items: dict[str, list[Any]] = {}

    def offer(
        self,
        key: str,
        value: Any,
        source: str,
        stamp: float | None,
        seq: int,
        weight: Callable[[str], float],
    ) -> None:
        importance = weight(key)
        have = self.items.get(key)
        if have is None:
            self.items[key] = [value, source, stamp, seq, importance]
        elif importance > have[4]:
            have[4] = importance


def replay(
    board: StateBoard,
    cabin_map: CabinMap,
    log: EventLog,
    shadow: WorkingMemory,
    specs: Mapping[str, ContextSpec],
    tick: int,
    now: float,
    clock: StageClock,
) -> int:
    """Replay one tick's source calls, charging each stage on ``clock``; the candidate count."""
    clock.start()
    offers = _Offers()
    key_cache: dict[str, tuple[str, ...]] = {}

    def keys(pattern: str) -> tuple[str, ...]:
        found = key_cache.get(pattern)
        if found is None:
            found = key_cache[pattern] = board.keys(pattern)
        return found

    goal_kinds = frozenset(k.split(":", 2)[1] for k in keys("goal:*") if k.count(":") >= 1)
    for spec in specs.values():
        for pattern in spec.board_keys:
            for key in keys(pattern):
                reading = board.read(key)
                if reading is None or reading.is_stale(now):
                    continue
                offers.offer(
                    key, reading.value, "board", reading.stamp, reading.seq, spec.weight_for
                )
    clock.lap("board")

    window_cache: dict[tuple[Any, ...], tuple[Feature, ...]] = {}
    version = cabin_map.version
    for spec in specs.values():
        kinds = spec.map_kinds or None
        tags = spec.map_tags or None
        nearby: tuple[Feature, ...] = ()
        corridor: tuple[Feature, ...] = ()
        if spec.map_center is not None and spec.map_radius > 0:
            reading = board.read(spec.map_center)
            center = None if reading is None or reading.is_stale(now) else as_point(reading.value)
            if center is not None:
                q: tuple[Any, ...] = ("w", center, spec.map_radius, kinds, tags)
                if q not in window_cache:
                    window_cache[q] = cabin_map.window(
                        center, spec.map_radius, kinds=kinds, tags=tags
                    )
                nearby = window_cache[q]
        if spec.corridor_width > 0:
            reading = board.read(spec.route_key)
            route = None if reading is None or reading.is_stale(now) else as_route(reading.value)
            if route is not None:
                q = ("c", route, spec.corridor_width, kinds, tags)
                if q not in window_cache:
                    window_cache[q] = cabin_map.corridor(
                        route, spec.corridor_width, kinds=kinds, tags=tags
                    )
                corridor = window_cache[q]
        keep = _relevant(spec, goal_kinds)
        if keep is not None:
            nearby = tuple(f for f in nearby if f.kind in keep or not keep.isdisjoint(f.tags))
            corridor = tuple(f for f in corridor if f.kind in keep or not keep.isdisjoint(f.tags))
        for feature in (*nearby, *corridor):
            offers.offer(f"map:{feature.id}", feature, "map", None, version, spec.weight_for)
    clock.lap("map")

    event_cache: dict[tuple[Any, ...], tuple[Event, ...]] = {}
    for spec in specs.values():
        if spec.event_window <= 0:
            continue
        eq = (spec.event_window, spec.event_kinds, spec.event_tags, spec.event_limit)
        recent = event_cache.get(eq)
        if recent is None:
            recent = event_cache[eq] = log.query(
                now - spec.event_window,
                now,
                kinds=spec.event_kinds or None,
                tags=spec.event_tags or None,
                limit=spec.event_limit,
            )
        for event in recent:
            offers.offer(
                f"event:{event.kind}:{event.seq}",
                event,
                "log",
                event.stamp,
                event.seq,
                spec.weight_for,
            )
    clock.lap("log")

    for item in shadow.items():
        if item.source == "board":
            reading = board.read(item.key)
            if reading is None:
                shadow.remove(item.key, reason="retracted", tick=tick)
            elif reading.is_stale(now):
                shadow.remove(item.key, reason="stale", tick=tick)
        elif item.source == "map" and cabin_map.get(item.key[4:]) is None:
            shadow.remove(item.key, reason="retracted", tick=tick)
    for key in [k for k in shadow if k not in offers.items]:
        shadow.remove(key, reason="expired", tick=tick)  # left every spec's window
    for key, (value, source, stamp, seq, importance) in offers.items.items():
        shadow.upsert(WorkItem(key, value, importance, now, now, source, stamp, seq))
    shadow.evict_to_fit(tick)
    clock.lap("eviction")
    return len(offers.items)
