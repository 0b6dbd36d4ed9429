"""The from-scratch path: every spec offers everything again at each freeze.

Each spec offers its fresh board readings (stale ones are noted, for ``missing``), its
map window and corridor, its event window and its pad's notes. The offers are combined
into candidates (an item's importance is the highest weight among the specs that offer
it, its ``via`` the filter of the first spec that offers it); what memory holds and no
spec offered is let go; every candidate not already held as it would be written is
upserted; memory evicts down to capacity by its own policy; and each spec's selection
is read back from what memory kept. This is the reference the delta path
(``runtime.assembly.delta``) is held to, and the path any eviction policy other than
``ValueEviction`` takes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from runtime.assembly.eviction import debugging, let_go, log_evictions
from runtime.assembly.freezing import (
    any_from,
    capacity_losses,
    lost_items,
    missing_reason,
    with_via,
    working_set,
)
from runtime.assembly.specs import goal_kinds
from runtime.freeze import FrozenDict
from runtime.memory import Source, WorkItem
from runtime.pack import NOTHING_EVICTED, MissingReason, Selection
from runtime.scratchpad import NOTE_PREFIX, memory_key

if TYPE_CHECKING:
    from runtime.assembly.events import EventWindows
    from runtime.assembly.maps import FirstOffered, FirstTimes, Found, MapWindows
    from runtime.assembly.sources import Sources
    from runtime.assembly.specs import CompiledSpecs, Vias
    from runtime.board import Reading
    from runtime.log import Event
    from runtime.memory import Eviction, WorkingMemory
    from runtime.pack import WorkingSet
    from runtime.spec import ContextSpec


@dataclass(slots=True)
class _Candidate:
    value: Any
    source: Source
    stamp: float | None
    seq: int
    importance: float
    via: str = ""


class _Offers:
    """What the specs offered at one freeze, combined, and what each spec chose."""

    __slots__ = (
        "candidates",
        "events",
        "first_offered",
        "fresh",
        "maps",
        "now",
        "picks",
        "renames",
        "revisions",
        "stale",
        "times",
        "window_cache",
    )

    def __init__(self, now: float, revisions: Mapping[str, int], first_offered: FirstOffered):
        self.now = now
        self.candidates: dict[str, _Candidate] = {}
        self.stale: set[str] = set()
        self.picks: dict[str, dict[str, str]] = {}  # per cabin: key -> its via
        self.renames: dict[str, dict[str, str]] = {}  # per cabin: memory key -> view key
        self.maps: dict[str, Found] = {}
        self.events: dict[str, tuple[Event, ...]] = {}
        self.window_cache: dict[tuple[Any, ...], Any] = {}
        self.fresh: dict[str, Reading | None] = {}  # a key's reading; None: absent or stale
        # a map feature's seq is its revision, its stamp the freeze time a window first
        # offered that revision (``first_offered`` says which); this freeze's, by key
        self.revisions = revisions
        self.first_offered = first_offered
        self.times: FirstTimes = {}

    def add(
        self,
        chosen: dict[str, str],
        importance: float,
        key: str,
        value: Any,
        source: Source,
        stamp: float | None,
        seq: int,
        via: str,
    ) -> None:
        """One spec's offer of ``key`` (``chosen`` is that spec's choice so far)."""
        have = self.candidates.get(key)
        if have is None:
            self.candidates[key] = _Candidate(value, source, stamp, seq, importance, via)
        elif importance > have.importance:
            have.importance = importance
        if key not in chosen:
            chosen[key] = via

    def first_offered_at(self, key: str) -> tuple[int, float]:
        """The map item ``key``'s revision and the time a window first offered it."""
        known = self.times.get(key)
        if known is None:
            revision = self.revisions[key[4:]]
            known = self.times[key] = self.first_offered.at(key, revision, self.now)
        return known


class FromScratch:
    """Freezes a working set from everything the specs offer now."""

    _state_types: ClassVar[dict[str, Any]] = {}  # its parts check theirs; nothing plain

    def __init__(
        self,
        sources: Sources,
        compiled: CompiledSpecs,
        memory: WorkingMemory,
        events: EventWindows,
        maps: MapWindows,
        first_offered: FirstOffered,
    ) -> None:
        self.sources = sources
        self.compiled = compiled
        self.memory = memory
        self.events = events
        self.maps = maps
        self.first_offered = first_offered

    def freeze(self, tick: int, now: float) -> WorkingSet:
        """The working set of ``tick`` at ``now``; the times at which a window first
        offered its map items are kept in ``first_offered``."""
        memory = self.memory
        versions = self.sources.versions()
        self.sources.end_finished_tasks(tick)
        offers = _Offers(now, self.sources.cabin_map.revisions(), self.first_offered)
        kinds = goal_kinds(self.sources.board_keys("goal:*"))
        for name, spec in self.compiled.by_name.items():
            self._offer(offers, name, spec, kinds)
        evictions = let_go(memory, offers.candidates, tick, now, self.sources.retraction)
        self._write(offers.candidates, now)
        evicted = memory.evict_to_fit(tick, log=False)
        evictions.extend(evicted)
        if evictions and debugging():
            log_evictions(tick, evictions)
        losses = capacity_losses(evicted)
        held = memory.contents()
        selections = {
            name: self._select(offers, name, spec, held, losses)
            for name, spec in self.compiled.by_name.items()
        }
        self.first_offered.keep(offers.times)
        return working_set(tick, now, versions, FrozenDict(held), evictions, memory, selections)

    def _offer(
        self, offers: _Offers, name: str, spec: ContextSpec, goal_kinds: frozenset[str]
    ) -> None:
        """Everything ``spec`` offers now: board readings, map window and corridor, event
        window and notes, in that order."""
        chosen: dict[str, str] = {}
        offers.picks[name] = chosen
        weight = spec.weigher
        vias = self.compiled.vias[name]
        self._offer_board(offers, chosen, weight, vias)
        nearby, corridor = self.maps.of(
            spec, offers.now, goal_kinds, offers.window_cache, self.memory.capacity
        )
        offers.maps[name] = (nearby, corridor)
        for features, via in ((nearby, vias.window), (corridor, vias.corridor)):
            for feature in features:
                key = feature.key
                revision, stamp = offers.first_offered_at(key)
                offers.add(chosen, weight(key), key, feature, "map", stamp, revision, via)
        recent: tuple[Event, ...] = ()
        if spec.event_window > 0:
            recent = self.events.recent(spec, offers.now)
            via = vias.log
            for event in recent:
                key = event.key
                offers.add(chosen, weight(key), key, event, "log", event.stamp, event.seq, via)
        offers.events[name] = recent
        pad = self.sources.scratchpads.get(name)
        renamed: dict[str, str] = {}
        offers.renames[name] = renamed
        if pad is not None:
            for note in pad.notes():
                view_key = NOTE_PREFIX + note.key
                held_key = memory_key(name, NOTE_PREFIX + note.key)
                offers.candidates[held_key] = _Candidate(
                    note, "note", None, note.seq, weight(view_key), "note:scratchpad"
                )
                chosen[held_key] = "note:scratchpad"
                renamed[held_key] = view_key

    def _offer_board(
        self,
        offers: _Offers,
        chosen: dict[str, str],
        weight: Callable[[str], float],
        vias: Vias,
    ) -> None:
        """A spec's fresh board readings (each key read once per freeze)."""
        board, fresh, stale, now = self.sources.board, offers.fresh, offers.stale, offers.now
        for pattern, via in vias.board:
            for key in self.sources.board_keys(pattern):
                if key in fresh:
                    reading = fresh[key]
                else:
                    reading = board.read(key)
                    if reading is not None and reading.is_stale(now):
                        stale.add(key)
                        reading = None
                    fresh[key] = reading
                if reading is not None:
                    value, stamp, seq = reading.value, reading.stamp, reading.seq
                    offers.add(chosen, weight(key), key, value, "board", stamp, seq, via)

    def _write(self, candidates: Mapping[str, _Candidate], now: float) -> None:
        """Upsert every candidate that memory does not already hold as it would be written."""
        memory = self.memory
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

    def _select(
        self,
        offers: _Offers,
        name: str,
        spec: ContextSpec,
        held: Mapping[str, WorkItem],
        losses: Mapping[str, Eviction],
    ) -> Selection:
        """``name``'s selection: what it chose and memory kept, under its view keys with
        its vias; what it chose and memory did not keep for capacity (``losses``); what
        it required and cannot have, and why."""
        chosen = offers.picks[name]
        renamed = offers.renames[name]
        evicted = lost_items(chosen, losses, renamed) if losses else NOTHING_EVICTED
        items: dict[str, WorkItem] = {}
        for key, via in chosen.items():
            item = held.get(key)
            if item is not None:
                view_key = renamed.get(key, key)
                items[view_key] = with_via(item, via, view_key)
        missing: dict[str, MissingReason] = {}
        ordered: list[str] | None = None
        for pattern, rx, prefix in self.compiled.required[name]:
            if rx is None:
                if pattern in items:
                    continue
                match: Any = pattern.__eq__
            else:
                if ordered is None:
                    ordered = sorted(items)
                if any_from(ordered, prefix, rx):
                    continue
                match = rx
            missing[pattern] = missing_reason(match, evicted, offers.stale)
        nearby, corridor = offers.maps[name]
        return Selection(
            required=tuple(spec.required),
            items=FrozenDict(items),
            missing=FrozenDict(missing),
            nearby_map=tuple(f for f in nearby if f.key in items),
            corridor_map=tuple(f for f in corridor if f.key in items),
            recent_events=tuple(e for e in offers.events[name] if e.key in items),
            evicted=evicted,
        )
