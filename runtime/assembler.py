"""The assembler: freezes one working set per tick from the board, the map and the log.

Under the sources' lock, for the union of all cabin specs, it reads board keys
(stale readings skipped), the map window around each spec's centre and the
corridor along its route, and the event window; upserts what it read into
working memory; lets memory evict down to capacity; and freezes the result,
with each spec's selection and what each spec required but cannot have.
Queries that several specs share are made once per tick.

An item's ``last_used`` is when its source last refreshed it: a reading's or an event's
stamp (never later than the freeze), the freeze time for a note, and for a map feature
the freeze time at which some spec's window or corridor first offered its current
revision (``CabinMap.revision``, the item's ``seq``). A feature keeps that time while it
is offered at every freeze and not replaced; one replaced, or one that left every window
and came back, is fresh at the freeze that offers it. The assembler carries those times
from freeze to freeze (and pickles them), so a map that never changes costs no writes.

Two paths freeze the same working set. The delta path (when memory forgets by
``ValueEviction``, the default) keeps a ``CandidateTable`` from tick to tick: it reads
only the board keys written since the last freeze (the board's change feed), combines
offers again only when their shape changed, asks the map once per centre key (a smaller
radius is a prefix of the nearest-first answer), chooses the victims of eviction before
anything is written and builds each view from the pack without copying its items. The
from-scratch path (any other policy, or a board key that names a map feature, an event or
a note) offers everything again each tick, upserts it and lets memory evict. The tests
hold the two to the same working sets, views and evictions, tick for tick.

Scratchpads: a cabin given a ``Scratchpad`` has its notes enter the working set
at each freeze, as ``note:<key>`` items in its view only (importance = its spec's
weight for ``note:<key>``, via ``note:scratchpad``), subject to capacity and
eviction like every other item. In working memory, and so in ``WorkingSet.items``
and eviction records, a note is held as ``note:<cabin>/<key>`` so that two
cabins' pads never collide. A pad scoped to a task whose goal key has left the
board is cleared (and unscoped) at the freeze, before its notes are read.
"""

from __future__ import annotations

import fnmatch
import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from math import inf, isfinite
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import structlog

from runtime.board import Reading, StateBoard
from runtime.candidates import CandidateTable, Group
from runtime.errors import SettingError
from runtime.freeze import FrozenDict, adopt
from runtime.logs import debug_enabled
from runtime.memory import (
    Eviction,
    EvictionReason,
    Source,
    WorkingMemory,
    WorkItem,
    new_item,
)
from runtime.pack import MissingReason, Occupancy, Selection, Versions, WorkingSet
from runtime.patterns import is_glob, literal_prefix
from runtime.position import read_route, read_xy
from runtime.scratchpad import NOTE_PREFIX, Scratchpad, memory_key

if TYPE_CHECKING:
    from runtime.cabin_map import CabinMap, Feature
    from runtime.log import Event, EventLog
    from runtime.spec import ContextSpec


_log = structlog.get_logger("tickwork.assembler")

STAGES = ("board", "log", "map", "eviction", "freeze")
"""The stages of a freeze on the delta path, in order: the board's changes and readings,
the event windows and notes, the map windows and corridors, letting go and eviction, and
the views' selections with the frozen pack."""


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
        # per event filter: the last answer, its time, the log's last seq and the newest
        # event of its kinds then
        self._windows: dict[tuple[Any, ...], tuple[float, int, int, float, tuple[Event, ...]]] = {}
        self._delta: _Delta | None = None  # what the delta path carries between ticks
        # per map candidate of the last freeze: its feature's revision and the freeze time
        # a window first offered that revision (while the delta path runs, its table's)
        self._map_seen: dict[str, tuple[int, float]] = {}
        self.laps: Callable[[str], None] | None = None
        """For profiling: called with each stage's name as the stage ends (the delta path's
        stages, in order: ``STAGES``), so that a caller can time them inside the real tick."""
        self._names = tuple(self.specs)
        self._weighers = {name: spec.weigher for name, spec in self.specs.items()}
        self._map_vias = {name: (v.window, v.corridor) for name, v in self._vias.items()}
        self._requires = {name: tuple(spec.required) for name, spec in self.specs.items()}
        locks: list[threading.RLock] = []
        for lock in (board.lock, cabin_map.lock, log.lock, *(p.lock for p in pads.values())):
            if all(lock is not held for held in locks):
                locks.append(lock)
        self._locks = tuple(locks)

    def assemble(self, tick: int, now: float) -> WorkingSet:
        """Freeze the working set of ``tick`` at time ``now``."""
        locks = self._locks
        for lock in locks:
            lock.acquire()
        try:
            if self.memory.settles:
                ws = self._assemble_delta(tick, now)
                if ws is not None:
                    return ws
            if self._delta is not None:
                self._map_seen = self._delta.table.seen()
                self._delta = None
            return self._assemble_from_scratch(tick, now)
        finally:
            for lock in reversed(locks):
                lock.release()

    def _assemble_from_scratch(self, tick: int, now: float) -> WorkingSet:
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
        # a map feature's seq is its revision, its stamp the freeze time a window first
        # offered that revision (kept while it stays offered unchanged)
        revisions = self.cabin_map.revisions()
        seen_before = self._map_seen
        seen: dict[str, tuple[int, float]] = {}

        def first_offered(key: str) -> tuple[int, float]:
            known = seen.get(key)
            if known is None:
                revision = revisions[key[4:]]
                before = seen_before.get(key)
                known = seen[key] = (
                    before if before is not None and before[0] == revision else (revision, now)
                )
            return known

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
            for features, via in ((nearby, vias.window), (corridor, vias.corridor)):
                for feature in features:
                    key = feature.key
                    revision, stamp = first_offered(key)
                    offer(key, feature, "map", stamp, revision, via)

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

        self._map_seen = seen
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

    # -- the delta path -------------------------------------------------------------------

    def _assemble_delta(self, tick: int, now: float) -> WorkingSet | None:
        """The working set of ``tick`` from what changed since the last freeze, or None
        when the from-scratch path must freeze it (see the module doc)."""
        board, memory = self.board, self.memory
        versions = Versions(board.seq, self.cabin_map.version, self.log.seq)
        self._end_finished_tasks(tick)
        d = self._delta
        if d is None or now < d.table.now or memory.pinned is not d.table.pinned_patterns:
            d = self._delta = _Delta(self._names, memory, self._seen_map())
        table = d.table
        table.advance(now)

        # the board: what was written since the last freeze, and what went stale
        changes = board.changes_since(d.board_seq)
        changed: list[str] = []
        if changes is None or board.key_set_version != d.key_set_version:
            if not d.expand(self, board):
                return None
            changes = None
        else:
            selected, readings, ttl_keys = d.selected, d.readings, d.ttl_keys
            for key in changes:
                if key in selected:
                    reading = board.read(key)
                    if reading is None:  # deleted and written again: the key set changed
                        continue
                    readings[key] = reading
                    if reading.ttl is None:
                        ttl_keys.discard(key)
                    else:
                        ttl_keys.add(key)
                    changed.append(key)
        d.board_seq = board.seq
        readings = d.readings
        stale = frozenset(
            k
            for k in d.ttl_keys
            if now - readings[k].stamp > readings[k].ttl  # type: ignore[operator]
        )

        # the stable offers, each group combined again when its shape changed
        offered: list[Group] = []
        if (d.key_set_version, stale) != d.board_shape:
            d.board_shape = (d.key_set_version, stale)
            self._offer_board(d, stale)
            offered.append("board")
        elif changed:
            for key in changed:
                reading = readings[key]
                table.refresh(key, reading.value, reading.stamp, reading.seq)
        laps = self.laps
        if laps is not None:
            laps("board")
        windows = tuple(
            self._recent_events(spec, now) if spec.event_window > 0 else ()
            for spec in self.specs.values()
        )
        seen = d.windows_seen  # compared by identity: an event's data may hold arrays
        if len(seen) != len(windows) or any(a is not b for a, b in zip(seen, windows, strict=True)):
            d.windows_seen = windows
            self._offer_events(d, windows)
            offered.append("log")
        if self.scratchpads:
            pads = tuple((pad.version, pad.task) for pad in self.scratchpads.values())
            if pads != d.pads_shape:
                d.pads_shape = pads
                self._offer_notes(d)
                offered.append("note")
        if offered:
            self._requirements(d, offered)
        if laps is not None:
            laps("log")

        # the map: one query per centre key, each spec's window a prefix of it
        near, along = self._offer_map(d, now)
        cabin_map = self.cabin_map
        changed_features = cabin_map.changed_since(d.map_version) if d.map_version >= 0 else []
        d.map_version = versions.map_version
        table.offer_map(
            near,
            along,
            self._weighers,
            self._map_vias,
            cabin_map.revisions(),
            changed_features,
            cabin_map.get,
        )
        if laps is not None:
            laps("map")

        evictions = table.let_go(tick, lambda item: self._retraction(item, now))
        capacity, victims = table.settle(tick)
        evictions.extend(capacity)
        if evictions and d.debug():
            _log.debug(
                "evicted",
                tick=tick,
                count=len(evictions),
                keys=[(e.key, e.reason) for e in evictions],
            )
        if laps is not None:
            laps("eviction")
        held = memory.contents()
        selections = {
            name: self._select(d, name, held, near[name], along[name], victims, stale)
            for name in self._names
        }
        ws = WorkingSet(
            tick=tick,
            time=now,
            versions=versions,
            items=adopt(held),  # a copy made for this pack
            evictions=tuple(evictions),
            capacity_alarm=memory.capacity_alarm,
            selections=FrozenDict(selections),
            occupancy=Occupancy(len(held), memory.pinned_count, memory.capacity),
        )
        if laps is not None:
            laps("freeze")
        return ws

    def _offer_board(self, d: _Delta, stale: frozenset[str]) -> None:
        """Offer every spec's fresh board readings to the table anew."""
        readings = d.readings
        offers: dict[str, list[tuple[Any, ...]]] = {}
        for name in self._names:
            weight = self._weighers[name]
            offers[name] = [
                (key, via, weight(key), r.value, r.stamp, r.seq)
                for key, via in d.board_pairs[name]
                if key not in stale and (r := readings.get(key)) is not None
            ]
        d.table.offer("board", offers)

    def _offer_events(self, d: _Delta, windows: tuple[tuple[Event, ...], ...]) -> None:
        """Offer every spec's event window to the table anew."""
        offers: dict[str, list[tuple[Any, ...]]] = {}
        for name, found in zip(self._names, windows, strict=True):
            weight = self._weighers[name]
            via = self._vias[name].log
            last = d.event_offers.get(name, {})
            mine = []
            for e in found:
                offer = last.get(e.seq)
                if offer is None or offer[3] is not e:  # not the event offered last time
                    key = e.key
                    offer = (key, via, weight(key), e, e.stamp, e.seq)
                mine.append(offer)
            d.event_offers[name] = {offer[5]: offer for offer in mine}
            d.windows[name] = (found, [offer[0] for offer in mine])
            offers[name] = mine
        d.table.offer("log", offers)

    def _offer_notes(self, d: _Delta) -> None:
        """Offer every spec's notes to the table anew."""
        offers: dict[str, list[tuple[Any, ...]]] = {}
        for name in self._names:
            weight = self._weighers[name]
            pad = self.scratchpads.get(name)
            mine: list[tuple[Any, ...]] = []
            if pad is not None:
                for note in pad.notes():
                    view = NOTE_PREFIX + note.key
                    mine.append((memory_key(name, view), view, weight(view), note, note.seq))
            offers[name] = mine
        d.table.offer("note", offers)

    def _requirements(self, d: _Delta, groups: Sequence[Group]) -> None:
        """Each required pattern of each spec: its glob matcher (None for an exact key), the
        stable view keys it matches, and whether it could match a map key; the matches are
        found again only in the groups offered anew."""
        table = d.table
        for group in groups:
            part: dict[str, list[tuple[str, ...]]] = {}
            every = _GROUP_PREFIX.get(group, "")  # what every view key of the group starts with
            for name in self._names:
                keys = table.view_keys(group, name)
                part[name] = [
                    tuple(k for k in keys if rx(k))
                    if rx is not None and (every.startswith(prefix) or prefix.startswith(every))
                    else ()
                    for _, rx, prefix in self._required[name]
                ]
            d.matches[group] = part
        board, log, notes = d.matches["board"], d.matches["log"], d.matches["note"]
        for name in self._names:
            out: list[tuple[str, Callable[[str], Any] | None, tuple[str, ...], bool]] = []
            for i, (pattern, rx, prefix) in enumerate(self._required[name]):
                known = board[name][i] + log[name][i] + (notes[name][i] if name in notes else ())
                maps = rx is not None and ("map:".startswith(prefix) or prefix.startswith("map:"))
                out.append((pattern, rx, known, maps))
            d.requirements[name] = tuple(out)

    def _offer_map(
        self, d: _Delta, now: float
    ) -> tuple[
        dict[str, tuple[list[str], tuple[Feature, ...]]],
        dict[str, tuple[list[str], tuple[Feature, ...]]],
    ]:
        """Each spec's map window and corridor this tick: keys and features, in order."""
        board, cabin_map = self.board, self.cabin_map
        near: dict[str, tuple[list[str], tuple[Feature, ...]]] = {}
        along: dict[str, tuple[list[str], tuple[Feature, ...]]] = {}
        shared_now: dict[str, tuple[tuple[Feature, ...], tuple[float, ...], list[str]]] = {}
        corridors: dict[tuple[Any, ...], tuple[list[str], tuple[Feature, ...]]] = {}
        for name, spec in self.specs.items():
            keys: list[str] = []
            features: tuple[Feature, ...] = ()
            center_key = spec.map_center
            if center_key is not None and spec.map_radius > 0:
                answer = shared_now.get(center_key)
                if answer is None:
                    reading = board.read(center_key)
                    center = (
                        None if reading is None or reading.is_stale(now) else _xy(reading.value)
                    )
                    if center is None:
                        answer = ((), (), [])
                    else:
                        shared = self._centers[center_key]
                        answer = cabin_map.nearest_keyed(
                            center, shared.radius, kinds=shared.kinds, tags=shared.tags
                        )
                    shared_now[center_key] = answer
                found, gaps, found_keys = answer
                cut = bisect_right(gaps, spec.map_radius)
                features, keys = found[:cut], found_keys[:cut]
                kinds, tags = d.map_filters[name]
                if kinds is not None or tags is not None:
                    pairs = [
                        (f, k)
                        for f, k in zip(features, keys, strict=True)
                        if (kinds is None or f.kind in kinds)
                        and (tags is None or not tags.isdisjoint(f.tags))
                    ]
                    features, keys = tuple(f for f, _ in pairs), [k for _, k in pairs]
            near_here = (keys, features)
            along_here: tuple[list[str], tuple[Feature, ...]] = ([], ())
            if spec.corridor_width > 0:
                route = d.route(name, board.read(spec.route_key), now)
                if route is not None:
                    query = (route, spec.corridor_width, spec.map_kinds, spec.map_tags)
                    along_here = corridors.get(query, along_here)
                    if query not in corridors:
                        path = cabin_map.corridor(
                            route,
                            spec.corridor_width,
                            kinds=frozenset(spec.map_kinds) if spec.map_kinds else None,
                            tags=frozenset(spec.map_tags) if spec.map_tags else None,
                        )
                        along_here = corridors[query] = (["map:" + f.id for f in path], path)
            keep = d.relevant[name]
            if keep is not None:
                near_here = _keep_relevant(near_here, keep)
                along_here = _keep_relevant(along_here, keep)
            near[name] = near_here
            along[name] = along_here
        return near, along

    def _select(
        self,
        d: _Delta,
        name: str,
        held: Mapping[str, WorkItem],
        near: tuple[list[str], tuple[Feature, ...]],
        along: tuple[list[str], tuple[Feature, ...]],
        victims: set[str],
        stale: frozenset[str],
    ) -> Selection:
        """``name``'s selection: what its spec offered and memory kept, in offer order,
        each item with the spec's own ``via``; what it required and cannot have."""
        table = d.table
        kept = d.kept(name, victims)
        # every candidate that did not lose is held (settle wrote it): no lookup can miss
        items = dict(zip(kept, map(held.__getitem__, kept), strict=True))
        renamed = False
        for fixes in (table.stable_fixes[name], table.map_fixes[name]):
            if fixes:
                for key, (via, view) in fixes.items():
                    item = items.get(key)
                    if item is not None:
                        items[key] = d.copy(name, item, via, view)
                        renamed = renamed or view != key
        if renamed:
            items = {item.key: item for item in items.values()}
        missing: dict[str, MissingReason] = {}
        keys = items.keys()
        for pattern, rx, known, maps in d.requirements[name]:
            match: Callable[[str], Any]
            if rx is None:
                if pattern in items:
                    continue
                match = pattern.__eq__
            else:
                if not keys.isdisjoint(known) or (
                    maps
                    and any(rx(k) for k in (*table.near[name], *table.along[name]) if k in keys)
                ):
                    continue
                match = rx
            lost = victims.intersection(d.order(name))
            fixes = table.stable_fixes[name]
            if any(match(fixes[k][1] if k in fixes else k) for k in lost):
                missing[pattern] = "evicted"
            elif any(match(k) for k in stale):
                missing[pattern] = "stale"
            else:
                missing[pattern] = "absent"
        near_keys, near_features = near
        along_keys, along_features = along
        found, found_keys = d.windows[name]
        return _selection(
            self._requires[name],
            adopt(items),
            adopt(missing) if missing else _NONE_MISSING,
            _kept(near_features, near_keys, victims),
            _kept(along_features, along_keys, victims),
            _kept(found, found_keys, victims),
        )

    def _seen_map(self) -> dict[str, tuple[int, float]]:
        """Each map candidate of the last freeze: its revision and first-offered time."""
        return self._map_seen if self._delta is None else self._delta.table.seen()

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
        state["_map_seen"] = self._seen_map()
        state["_delta"] = None  # the delta path starts afresh
        state["_weighers"] = None  # bound methods of the specs: made again
        state["laps"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("_map_seen", {})
        self.__dict__.update(state)
        self._delta = None
        self.laps = None
        self._names = tuple(self.specs)
        self._weighers = {name: spec.weigher for name, spec in self.specs.items()}
        self._map_vias = {name: (v.window, v.corridor) for name, v in self._vias.items()}
        self._requires = {name: tuple(spec.required) for name, spec in self.specs.items()}

    def _recent_events(self, spec: ContextSpec, now: float) -> tuple[Event, ...]:
        """The spec's event window at ``now``, carried on from the last tick's answer:
        events that aged out leave its front, events logged since join its back (the same
        ``Event`` objects stay). A new query only when that cannot be trusted: the clock
        went back, or the log dropped one of the answer's events. Specs with the same
        event filter share one answer."""
        kinds = spec.event_kinds or None
        tags = spec.event_tags or None
        limit = spec.event_limit
        query = (spec.event_window, spec.event_kinds, spec.event_tags, limit)
        since = now - spec.event_window
        log = self.log
        last = log.seq
        at, logged, marker, marker_stamp, found = self._windows.get(query, _NO_WINDOW)
        # the last answer holds while the clock did not go back and the log kept its events
        if at <= now and (not found or found[0].seq > log.dropped):
            newest = (marker, marker_stamp) if last == logged else log.newest(kinds)
            if found and found[0].stamp < since:
                found = found[bisect_left(found, since, key=_EVENT_STAMP) :]
            if marker != newest[0]:  # every event logged since is newer than the answer's
                fresh = [
                    e
                    for e in log.query(
                        max(since, marker_stamp), now, kinds=kinds, tags=tags, limit=limit
                    )
                    if e.seq > marker
                ]
                if fresh:
                    found = (*found, *fresh)
                    if limit is not None and len(found) > limit:
                        found = found[-limit:]
        else:
            newest = log.newest(kinds)
            found = log.query(since, now, kinds=kinds, tags=tags, limit=limit)
        if newest[1] <= now:  # an event stamped after now would enter the window later
            self._windows[query] = (now, last, newest[0], newest[1], found)
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


_NONE_MISSING: FrozenDict[str, MissingReason] = FrozenDict()


class _Delta:
    """What the delta path carries from one freeze to the next (see the module doc)."""

    def __init__(
        self,
        names: Sequence[str],
        memory: WorkingMemory,
        seen: Mapping[str, tuple[int, float]],
    ) -> None:
        self.table = CandidateTable(names, memory, seen)
        self.map_version = -1  # the map version last caught up with
        self.board_seq = -1  # the board seq last caught up with; -1 reads everything
        self.key_set_version = -1
        self.selected: set[str] = set()  # board keys some spec selects
        self.readings: dict[str, Reading] = {}
        self.ttl_keys: set[str] = set()  # those of them whose reading can go stale
        self.board_pairs: dict[str, list[tuple[str, str]]] = {}  # per spec: (key, via)
        self.relevant: dict[str, frozenset[str] | None] = {}
        self.map_filters: dict[str, tuple[frozenset[str] | None, frozenset[str] | None]] = {}
        self.board_shape: tuple[Any, ...] | None = None
        self.pads_shape: tuple[Any, ...] | None = None
        self.windows_seen: tuple[tuple[Event, ...], ...] = ()
        self.windows: dict[str, tuple[tuple[Event, ...], list[str]]] = {}
        self.event_offers: dict[str, dict[int, tuple[Any, ...]]] = {}  # per spec, by seq
        self.requirements: dict[
            str, tuple[tuple[str, Callable[[str], Any] | None, tuple[str, ...], bool], ...]
        ] = {}
        self.matches: dict[Group, dict[str, list[tuple[str, ...]]]] = {
            "board": {},
            "log": {},
            "note": {},
        }
        self._routes: dict[str, tuple[Reading, tuple[tuple[float, float], ...] | None]] = {}
        self._copies: dict[tuple[str, str], tuple[WorkItem, WorkItem]] = {}
        # per view: its offers' parts and the victims it was cut by, and what survived
        self._kept: dict[str, tuple[tuple[list[str], ...], set[str], list[str]]] = {}
        self._debug_wrapper: Any = None
        self._debug: bool | None = None

    def expand(self, assembler: Assembler, board: StateBoard) -> bool:
        """Read the board's key set again: each spec's keys, their readings, the active
        goals. False when a selected board key has the form of a map, event or note key
        (the from-scratch path combines those)."""
        pairs: dict[str, list[tuple[str, str]]] = {}
        selected: set[str] = set()
        for name in assembler.specs:
            mine: dict[str, str] = {}
            for pattern, via in assembler._vias[name].board:
                for key in assembler._board_keys(pattern):
                    if key not in mine:
                        mine[key] = via
            pairs[name] = list(mine.items())
            selected.update(mine)
        if any(k.startswith(("map:", "event:", NOTE_PREFIX)) for k in selected):
            return False
        readings: dict[str, Reading] = {}
        for key in selected:
            reading = board.read(key)
            if reading is not None:
                readings[key] = reading
        self.board_pairs = pairs
        self.selected = selected
        self.readings = readings
        self.ttl_keys = {k for k, r in readings.items() if r.ttl is not None}
        goal_kinds = frozenset(
            k.split(":", 2)[1] for k in assembler._board_keys("goal:*") if k.count(":") >= 1
        )
        self.relevant = {
            name: _relevant(spec, goal_kinds) for name, spec in assembler.specs.items()
        }
        for name, spec in assembler.specs.items():
            kinds = frozenset(spec.map_kinds) if spec.map_kinds else None
            tags = frozenset(spec.map_tags) if spec.map_tags else None
            shared = assembler._centers.get(spec.map_center or "")
            if shared is not None:
                kinds = None if kinds == shared.kinds else kinds
                tags = None if tags == shared.tags else tags
            self.map_filters[name] = (kinds, tags)
        self.key_set_version = board.key_set_version
        self.board_shape = None
        return True

    def debug(self) -> bool:
        """``debug_enabled`` for the assembler's logger, asked again only when structlog's
        configuration (its wrapper class) changed."""
        wrapper = structlog.get_config()["wrapper_class"] if structlog.is_configured() else None
        if wrapper is not self._debug_wrapper or self._debug is None:
            self._debug_wrapper = wrapper
            self._debug = debug_enabled(_log)
        return self._debug

    def route(
        self, name: str, reading: Reading | None, now: float
    ) -> tuple[tuple[float, float], ...] | None:
        """The route ``reading`` holds (None if absent, stale or not a route), parsed once."""
        if reading is None or reading.is_stale(now):
            return None
        known = self._routes.get(name)
        if known is not None and known[0] is reading:
            return known[1]
        route = read_route(reading.value)
        self._routes[name] = (reading, route)
        return route

    def order(self, name: str) -> tuple[str, ...]:
        """Every candidate ``name``'s spec offers, in its order: board keys, map window,
        corridor, events and notes."""
        table = self.table
        return (*table.heads[name], *table.near[name], *table.along[name], *table.tails[name])

    def kept(self, name: str, victims: set[str]) -> list[str]:
        """``order`` without ``victims``: made again only when one of its parts or the
        victims changed (the parts are compared by value, their keys mostly by identity)."""
        table = self.table
        parts = (table.heads[name], table.near[name], table.along[name], table.tails[name])
        known = self._kept.get(name)
        if known is not None and known[1] == victims and known[0] == parts:
            return known[2]
        kept = [k for part in parts for k in part if k not in victims]
        self._kept[name] = (tuple(list(part) for part in parts), set(victims), kept)
        return kept

    def copy(self, name: str, item: WorkItem, via: str, key: str) -> WorkItem:
        """``item`` as ``name``'s view holds it (its spec's ``via``, its view key), made
        once per item."""
        known = self._copies.get((name, item.key))
        if known is not None and known[0] is item and known[1].via == via and known[1].key == key:
            return known[1]
        mine = new_item(
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
        if len(self._copies) >= 4096:
            self._copies.clear()
        self._copies[(name, item.key)] = (item, mine)
        return mine


_NO_WINDOW: tuple[float, int, int, float, tuple[Event, ...]] = (inf, -1, -1, -inf, ())
"""The entry of an event filter with no last answer: never held (its time is later than
any clock)."""

_EVENT_STAMP = attrgetter("stamp")

_GROUP_PREFIX: dict[Group, str] = {"log": "event:", "note": NOTE_PREFIX}
"""What every view key of a stable group starts with (the board's keys: anything)."""


def _xy(value: Any) -> tuple[float, float] | None:
    """``read_xy``, with a shortcut for the usual pose: a tuple of finite floats."""
    if type(value) is tuple and len(value) >= 2:
        x, y = value[0], value[1]
        if type(x) is float and type(y) is float and isfinite(x) and isfinite(y):
            return (x, y)
    return read_xy(value)


def _kept(found: tuple[Any, ...], keys: Sequence[str], victims: set[str]) -> tuple[Any, ...]:
    """``found`` without what lost eviction (``keys`` beside it), the same tuple when
    nothing did."""
    if not found or victims.isdisjoint(keys):
        return found
    return tuple([f for f, k in zip(found, keys, strict=True) if k not in victims])


def _keep_relevant(
    offered: tuple[list[str], tuple[Feature, ...]], keep: frozenset[str]
) -> tuple[list[str], tuple[Feature, ...]]:
    keys, features = offered
    if not features:
        return offered
    mask = [f.kind in keep or not keep.isdisjoint(f.tags) for f in features]
    return list(compress(keys, mask)), tuple(compress(features, mask))


_new_selection = object.__new__
_SELECTION_SLOTS = tuple(
    Selection.__dict__[name].__set__
    for name in ("required", "items", "missing", "nearby_map", "corridor_map", "recent_events")
)


def _selection(
    required: tuple[str, ...],
    items: FrozenDict[str, WorkItem],
    missing: FrozenDict[str, MissingReason],
    nearby_map: tuple[Feature, ...],
    corridor_map: tuple[Feature, ...],
    recent_events: tuple[Event, ...],
) -> Selection:
    """A ``Selection``, without its constructor's per-field ``object.__setattr__``."""
    selection: Selection = _new_selection(Selection)
    for put, value in zip(
        _SELECTION_SLOTS,
        (required, items, missing, nearby_map, corridor_map, recent_events),
        strict=True,
    ):
        put(selection, value)
    return selection


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
