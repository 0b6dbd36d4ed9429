"""The assembler: freezes one working set per tick from the board, the map and the log.

Under the sources' lock, for the union of all cabin specs, it reads board keys
(stale readings skipped), the map window around each spec's centre and the
corridor along its route, and the event window; upserts what it read into
working memory; lets memory evict down to capacity; and freezes the result,
with each spec's selection and what each spec required but cannot have.
Queries that several specs share are made once per tick.

Scratchpads: a cabin given a ``Scratchpad`` has its notes enter the working set
at each freeze, as ``note:<key>`` items in its view only (importance = its spec's
weight for ``note:<key>``, via ``note:scratchpad``), subject to capacity and
eviction like every other item. In working memory, and so in ``WorkingSet.items``
and eviction records, a note is held as ``note:<cabin>/<key>`` so that two
cabins' pads never collide. A pad scoped to a task whose goal key has left the
board is cleared (and unscoped) at the freeze, before its notes are read.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from runtime.board import StateBoard
from runtime.errors import SettingError
from runtime.freeze import FrozenDict
from runtime.logs import debug_enabled
from runtime.memory import Eviction, EvictionReason, Source, WorkingMemory, WorkItem
from runtime.pack import MissingReason, Occupancy, Selection, Versions, WorkingSet
from runtime.patterns import is_glob, literal_prefix
from runtime.position import read_route, read_xy
from runtime.scratchpad import NOTE_PREFIX, Scratchpad, memory_key

if TYPE_CHECKING:
    from runtime.cabin_map import CabinMap, Feature
    from runtime.log import Event, EventLog
    from runtime.spec import ContextSpec


_log = structlog.get_logger("tickwork.assembler")


@dataclass(slots=True)
class _Candidate:
    value: Any
    source: Source
    stamp: float | None
    seq: int
    importance: float
    via: str = ""


class Assembler:
    """Builds the ``WorkingSet`` of each tick for a fixed set of specs."""

    def __init__(
        self,
        board: StateBoard,
        cabin_map: CabinMap,
        log: EventLog,
        memory: WorkingMemory,
        specs: Iterable[ContextSpec] | Mapping[str, ContextSpec],
        *,
        scratchpads: Mapping[str, Scratchpad] | None = None,
    ) -> None:
        self.board = board
        self.cabin_map = cabin_map
        self.log = log
        self.memory = memory
        spec_list = list(specs.values()) if isinstance(specs, Mapping) else list(specs)
        names = [s.name for s in spec_list]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SettingError(f"two specs share the cabin name(s) {', '.join(duplicates)}")
        self.specs: dict[str, ContextSpec] = {s.name: s for s in spec_list}
        pads = dict(scratchpads or {})
        unknown = sorted(set(pads) - set(self.specs))
        if unknown:
            raise SettingError(
                f"scratchpads for cabin(s) {', '.join(unknown)} that have no spec "
                f"(specs: {', '.join(sorted(self.specs)) or 'none'})"
            )
        for name, pad in pads.items():
            if not isinstance(pad, Scratchpad):
                raise TypeError(
                    f"the scratchpad of cabin {name!r} must be a Scratchpad, "
                    f"got {type(pad).__name__}"
                )
        shared = sorted(n for n, p in pads.items() if sum(q is p for q in pads.values()) > 1)
        if shared:
            raise SettingError(
                f"cabins {', '.join(shared)} share one Scratchpad; give each cabin its own"
            )
        self.scratchpads: FrozenDict[str, Scratchpad] = FrozenDict(pads)
        self._required = {
            name: [
                (
                    p,
                    re.compile(fnmatch.translate(p)).match if is_glob(p) else None,
                    literal_prefix(p),
                )
                for p in spec.required
            ]
            for name, spec in self.specs.items()
        }
        self._centers = _shared_windows(self.specs.values())
        self._vias = {name: _Vias.of(spec) for name, spec in self.specs.items()}
        self._keys_of: dict[str, tuple[str, ...]] = {}  # pattern -> board keys, while
        self._keys_version = -1  # the board's key set is unchanged
        self._windows: dict[tuple[Any, ...], tuple[float, int, int, tuple[Event, ...]]] = {}
        locks: list[threading.RLock] = []
        for lock in (board.lock, cabin_map.lock, log.lock, *(p.lock for p in pads.values())):
            if all(lock is not held for held in locks):
                locks.append(lock)
        self._locks = tuple(locks)

    def assemble(self, tick: int, now: float) -> WorkingSet:
        """Freeze the working set of ``tick`` at time ``now``."""
        with contextlib.ExitStack() as stack:
            for lock in self._locks:
                stack.enter_context(lock)
            return self._assemble(tick, now)

    def _assemble(self, tick: int, now: float) -> WorkingSet:
        board, memory = self.board, self.memory
        versions = Versions(board.seq, self.cabin_map.version, self.log.seq)
        self._end_finished_tasks(tick)

        candidates: dict[str, _Candidate] = {}
        stale: set[str] = set()
        picks: dict[str, dict[str, str]] = {}
        renames: dict[str, dict[str, str]] = {}  # per cabin: memory key -> view key (notes)
        maps: dict[str, tuple[tuple[Feature, ...], tuple[Feature, ...]]] = {}
        events: dict[str, tuple[Event, ...]] = {}
        window_cache: dict[tuple[Any, ...], Any] = {}
        goal_kinds = frozenset(
            k.split(":", 2)[1] for k in self._board_keys("goal:*") if k.count(":") >= 1
        )
        fresh: dict[str, Any] = {}  # key -> its reading this tick, None when absent or stale
        map_version = versions.map_version

        for name, spec in self.specs.items():
            chosen: dict[str, str] = {}
            picks[name] = chosen
            weight = spec.weigher
            vias = self._vias[name]

            def offer(
                key: str,
                value: Any,
                source: Source,
                stamp: float | None,
                seq: int,
                via: str,
                weight: Any = weight,
                chosen: dict[str, str] = chosen,
            ) -> None:
                importance = weight(key)
                have = candidates.get(key)
                if have is None:
                    candidates[key] = _Candidate(value, source, stamp, seq, importance, via)
                elif importance > have.importance:
                    have.importance = importance
                if key not in chosen:
                    chosen[key] = via

            for pattern, via in vias.board:
                for key in self._board_keys(pattern):
                    if key in fresh:
                        reading = fresh[key]
                    else:
                        reading = board.read(key)
                        if reading is not None and reading.is_stale(now):
                            stale.add(key)
                            reading = None
                        fresh[key] = reading
                    if reading is not None:
                        offer(key, reading.value, "board", reading.stamp, reading.seq, via)

            nearby, corridor = self._map_for(spec, now, goal_kinds, window_cache)
            maps[name] = (nearby, corridor)
            for feature in nearby:
                offer(feature.key, feature, "map", None, map_version, vias.window)
            for feature in corridor:
                offer(feature.key, feature, "map", None, map_version, vias.corridor)

            recent: tuple[Event, ...] = ()
            if spec.event_window > 0:
                recent = self._recent_events(spec, now)
                via = vias.log
                for event in recent:
                    offer(event.key, event, "log", event.stamp, event.seq, via)
            events[name] = recent

            pad = self.scratchpads.get(name)
            renamed: dict[str, str] = {}
            renames[name] = renamed
            if pad is not None:
                for note in pad.notes():
                    view_key = NOTE_PREFIX + note.key
                    held_key = memory_key(name, NOTE_PREFIX + note.key)
                    candidates[held_key] = _Candidate(
                        note, "note", None, note.seq, weight(view_key), "note:scratchpad"
                    )
                    chosen[held_key] = "note:scratchpad"
                    renamed[held_key] = view_key

        evictions = self._let_go(candidates, tick, now)
        for key, c in candidates.items():
            # recency is when the source last refreshed the item: a reading not rewritten for
            # a while, or an older event, goes before a fresh one of the same importance
            used = now if c.stamp is None else min(c.stamp, now)
            held_before = memory.get(key)
            if (
                held_before is not None
                and held_before.value is c.value
                and held_before.last_used == used
                and held_before.seq == c.seq
                and held_before.importance == c.importance
                and held_before.via == c.via
            ):
                continue  # held as it would be written: no new item, no new rank
            first = now if held_before is None else held_before.first_seen
            memory.upsert(
                WorkItem(key, c.value, c.importance, used, first, c.source, c.stamp, c.seq, c.via)
            )
        evicted = memory.evict_to_fit(tick)
        evictions.extend(evicted)
        if evictions and debug_enabled(_log):
            _log.debug(
                "evicted",
                tick=tick,
                count=len(evictions),
                keys=[(e.key, e.reason) for e in evictions],
            )
        evicted_keys = frozenset(e.key for e in evicted)

        held = memory.contents()
        selections: dict[str, Selection] = {}
        for name, spec in self.specs.items():
            chosen = picks[name]
            renamed = renames[name]
            items: dict[str, WorkItem] = {}
            for key, via in chosen.items():
                item = held.get(key)
                if item is not None:
                    view_key = renamed.get(key, key)
                    items[view_key] = _with_via(item, via, view_key)
            missing: dict[str, MissingReason] = {}
            ordered: list[str] | None = None
            for pattern, rx, prefix in self._required[name]:
                if rx is None:
                    if pattern in items:
                        continue
                    match: Any = pattern.__eq__
                else:
                    if ordered is None:
                        ordered = sorted(items)
                    if _any_from(ordered, prefix, rx):
                        continue
                    match = rx
                if any(match(renamed.get(k, k)) for k in evicted_keys if k in chosen):
                    missing[pattern] = "evicted"
                elif any(match(k) for k in stale):
                    missing[pattern] = "stale"
                else:
                    missing[pattern] = "absent"
            nearby, corridor = maps[name]
            selections[name] = Selection(
                required=tuple(spec.required),
                items=FrozenDict(items),
                missing=FrozenDict(missing),
                nearby_map=tuple(f for f in nearby if f.key in items),
                corridor_map=tuple(f for f in corridor if f.key in items),
                recent_events=tuple(e for e in events[name] if e.key in items),
            )
        return WorkingSet(
            tick=tick,
            time=now,
            versions=versions,
            items=FrozenDict(held),
            evictions=tuple(evictions),
            capacity_alarm=memory.capacity_alarm,
            selections=FrozenDict(selections),
            occupancy=Occupancy(len(held), memory.pinned_count, memory.capacity),
        )

    def _board_keys(self, pattern: str) -> tuple[str, ...]:
        if self._keys_version != self.board.key_set_version:
            self._keys_of.clear()
            self._keys_version = self.board.key_set_version
        keys = self._keys_of.get(pattern)
        if keys is None:
            keys = self._keys_of[pattern] = self.board.keys(pattern)
        return keys

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_keys_of"], state["_keys_version"] = {}, -1  # rebuilt from the board
        state["_windows"] = {}  # and from the log
        return state

    def _recent_events(self, spec: ContextSpec, now: float) -> tuple[Event, ...]:
        """The spec's event window at ``now``: the last tick's answer while it cannot have
        changed (no newer event of its kinds, none aged out, the clock not gone back),
        else a new query. Specs with the same event filter share one answer."""
        kinds = spec.event_kinds or None
        query = (spec.event_window, spec.event_kinds, spec.event_tags, spec.event_limit)
        since = now - spec.event_window
        log = self.log
        newest = log.newest(kinds)
        known = self._windows.get(query)
        if known is not None:
            at, dropped, marker, found = known
            if (
                at <= now
                and dropped == log.dropped
                and marker == newest[0]
                and (not found or found[0].stamp >= since)
            ):
                self._windows[query] = (now, dropped, marker, found)
                return found
        found = log.query(
            since, now, kinds=kinds, tags=spec.event_tags or None, limit=spec.event_limit
        )
        if newest[1] <= now:  # an event stamped after now would enter the window later
            self._windows[query] = (now, log.dropped, newest[0], found)
        else:
            self._windows.pop(query, None)
        return found

    def _let_go(self, candidates: Mapping[str, Any], tick: int, now: float) -> list[Eviction]:
        """Remove what no spec offered this tick: first what its source no longer holds,
        or holds stale (``retracted``, ``stale``), then what left every spec's window
        (``expired``). An item offered again is current, so only the rest are checked."""
        memory = self.memory
        gone = [
            (item.key, self._retraction(item, now))
            for item in memory.items()
            if item.key not in candidates
        ]
        expired: EvictionReason = "expired"
        ordered = [(k, r) for k, r in gone if r is not None] + [
            (k, expired) for k, r in gone if r is None
        ]
        out: list[Eviction] = []
        for key, reason in ordered:
            removed = memory.remove(key, reason=reason, tick=tick)
            if removed is not None:
                out.append(removed)
        return out

    def _retraction(self, item: WorkItem, now: float) -> EvictionReason | None:
        """Why ``item``'s source no longer backs it (``retracted``, ``stale``), or None."""
        if item.source == "board":
            reading = self.board.read(item.key)
            if reading is None:
                return "retracted"
            return "stale" if reading.is_stale(now) else None
        if item.source == "map":
            return "retracted" if self.cabin_map.get(item.key[4:]) is None else None
        if item.source == "note":
            cabin, _, note_key = item.key[len(NOTE_PREFIX) :].partition("/")
            pad = self.scratchpads.get(cabin)
            return "retracted" if pad is None or note_key not in pad else None
        return None

    def _end_finished_tasks(self, tick: int) -> None:
        """Clear (and unscope) every pad whose task's goal key has left the board."""
        for pad in self.scratchpads.values():
            task = pad.task
            if task is not None and self.board.read(task) is None:
                pad.end_task(tick=tick)

    def _map_for(
        self,
        spec: ContextSpec,
        now: float,
        goal_kinds: frozenset[str],
        cache: dict[tuple[Any, ...], Any],
    ) -> tuple[tuple[Feature, ...], tuple[Feature, ...]]:
        kinds = frozenset(spec.map_kinds) if spec.map_kinds else None
        tags = frozenset(spec.map_tags) if spec.map_tags else None
        nearby: tuple[Feature, ...] = ()
        corridor: tuple[Feature, ...] = ()
        if spec.map_center is not None and spec.map_radius > 0:
            reading = self.board.read(spec.map_center)
            center = None if reading is None or reading.is_stale(now) else read_xy(reading.value)
            if center is not None:
                shared = self._centers[spec.map_center]
                query: tuple[Any, ...] = ("w", spec.map_center, center)
                pairs = cache.get(query)
                if pairs is None:
                    pairs = self.cabin_map.nearby(
                        center, shared.radius, kinds=shared.kinds, tags=shared.tags
                    )
                    cache[query] = pairs
                radius = spec.map_radius
                if kinds is None and tags is None:
                    nearby = tuple(f for f, d in pairs if d <= radius)
                else:
                    nearby = tuple(
                        f
                        for f, d in pairs
                        if d <= radius
                        and (kinds is None or f.kind in kinds)
                        and (tags is None or not tags.isdisjoint(f.tags))
                    )
        if spec.corridor_width > 0:
            reading = self.board.read(spec.route_key)
            route = None if reading is None or reading.is_stale(now) else read_route(reading.value)
            if route is not None:
                query = ("c", route, spec.corridor_width, kinds, tags)
                found = cache.get(query)
                if found is None:
                    found = self.cabin_map.corridor(
                        route, spec.corridor_width, kinds=kinds, tags=tags
                    )
                    cache[query] = found
                corridor = found
        keep = _relevant(spec, goal_kinds)
        if keep is not None:
            nearby = tuple(f for f in nearby if f.kind in keep or not keep.isdisjoint(f.tags))
            corridor = tuple(f for f in corridor if f.kind in keep or not keep.isdisjoint(f.tags))
        return nearby, corridor


@dataclass(frozen=True, slots=True)
class _Vias:
    """The provenance strings of one spec's filters, made once rather than per item."""

    board: tuple[tuple[str, str], ...]
    window: str
    corridor: str
    log: str

    @classmethod
    def of(cls, spec: ContextSpec) -> _Vias:
        return cls(
            tuple((p, f"board:{p}") for p in spec.board_keys),
            f"map:window({spec.map_center},{spec.map_radius:g})",
            f"map:corridor({spec.route_key},{spec.corridor_width:g})",
            f"log:window({spec.event_window:g}s)",
        )


@dataclass(frozen=True, slots=True)
class _SharedWindow:
    """One map query around a centre key that answers every spec's window around it."""

    radius: float
    kinds: frozenset[str] | None
    tags: frozenset[str] | None


def _shared_windows(specs: Iterable[ContextSpec]) -> dict[str, _SharedWindow]:
    """Per centre key: the largest radius and the union of the kind and tag filters."""
    by_center: dict[str, list[ContextSpec]] = {}
    for spec in specs:
        if spec.map_center is not None and spec.map_radius > 0:
            by_center.setdefault(spec.map_center, []).append(spec)
    out: dict[str, _SharedWindow] = {}
    for center, group in by_center.items():
        kinds = (
            None
            if any(not s.map_kinds for s in group)
            else frozenset(k for s in group for k in s.map_kinds)
        )
        tags = (
            None
            if any(not s.map_tags for s in group)
            else frozenset(t for s in group for t in s.map_tags)
        )
        out[center] = _SharedWindow(max(s.map_radius for s in group), kinds, tags)
    return out


def _relevant(spec: ContextSpec, goal_kinds: frozenset[str]) -> frozenset[str] | None:
    """The map kinds/tags the active goals keep, or None when nothing is filtered.

    Filtering applies only when every active goal kind has a relevance entry:
    a goal the spec says nothing about might need anything.
    """
    if not spec.relevance or not goal_kinds or not goal_kinds <= spec.relevance.keys():
        return None
    keep: set[str] = set()
    for kind in goal_kinds:
        keep.update(spec.relevance[kind])
    return frozenset(keep)


def _any_from(ordered: Sequence[str], prefix: str, match: Callable[[str], Any]) -> bool:
    """Whether a key of the sorted ``ordered`` that starts with ``prefix`` passes ``match``
    (only those keys are looked at)."""
    for i in range(bisect_left(ordered, prefix), len(ordered)):
        key = ordered[i]
        if not key.startswith(prefix):
            return False
        if match(key):
            return True
    return False


def _with_via(item: WorkItem, via: str, key: str | None = None) -> WorkItem:
    key = item.key if key is None else key
    if item.via == via and item.key == key:
        return item
    return WorkItem(
        key,
        item.value,
        item.importance,
        item.last_used,
        item.first_seen,
        item.source,
        item.stamp,
        item.seq,
        via,
    )
