"""The candidate table: what the specs offer at a freeze, kept from one tick to the next.

At every freeze each spec offers items (its board keys, its map window and corridor, its
event window, its notes); a freeze combines the offers into candidates (an item's
importance is the highest weight among the specs that offer it, its ``via`` the filter of
the first spec that offers it), lets working memory keep the candidates it has room for
and evicts the rest by ``ValueEviction``'s rank. The table keeps all of that from tick to
tick and changes only what changed:

- *stable* candidates (board readings, events, notes) are combined again only when their
  shape changes (the board's key set, which readings are stale, an event window, a pad),
  and otherwise refreshed one by one from the board's change feed;
- *map* candidates are combined again only when a spec's window or corridor gains or
  loses a feature, and otherwise refreshed one by one from the map's change feed (the
  features added or replaced since the last freeze). A map candidate's ``seq`` is its
  feature's revision (the map version its last put made) and its ``stamp`` the freeze
  time at which a window first offered that revision (``FirstOffered``, shared with the
  from-scratch path), so a feature that stays in view unchanged keeps both, as a reading
  nobody rewrites does;
- the non-pinned candidates are kept sorted by rank, so the victims of a freeze are the
  first few and are known before anything is written: an item that loses never becomes
  a ``WorkItem``. A candidate's rank is ``(importance, last_used, key)`` where
  ``last_used`` is ``min(stamp, now)`` (the freeze time for notes, which have no stamp).
  All candidates used "now" share that time, so their order among themselves does not
  change as the clock advances: the table ranks them by ``(importance, 1, 0.0, key)``
  and the others by ``(importance, 0, stamp, key)``, which orders every pair as the rank
  does at any one freeze. Only what changed, what was stamped at or after the last
  freeze, the notes and the last freeze's victims are written again: a candidate that
  did not change is held as it would be written.

The delta path (``runtime.assembly.delta``) feeds the table and builds the views;
``tests/runtime/test_assembler.py`` checks that this freezes exactly what the from-scratch path
(``runtime.assembly.scratch``) freezes.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from runtime.memory import Eviction, EvictionReason, Source, WorkingMemory, WorkItem

if TYPE_CHECKING:
    from runtime.assembly.maps import FirstOffered, FirstTimes

Rank = tuple[float, int, float, str]
Group = Literal["board", "log", "note"]
Row = tuple[str, Any, float, float, Source, "float | None", int, str]
MapOffers = Mapping[str, tuple[list[str], Sequence[Any]]]
"""Per spec: the keys and features its window (or its corridor) offers, in order."""


class Entry:
    """One candidate (a reading, an event, a note or a map feature): its value and
    provenance, importance and first ``via``."""

    __slots__ = ("importance", "seq", "source", "stamp", "value", "via")

    def __init__(
        self,
        value: Any,
        source: Source,
        stamp: float | None,
        seq: int,
        importance: float,
        via: str,
    ) -> None:
        self.value = value
        self.source: Source = source
        self.stamp = stamp
        self.seq = seq
        self.importance = importance
        self.via = via


NOTE_VIA = "note:scratchpad"


class CandidateTable:
    """The candidates of the last freeze, their combination, their ranks, and what memory
    was left holding. One table serves one assembler and one memory."""

    def __init__(
        self, names: Sequence[str], memory: WorkingMemory, first_offered: FirstOffered
    ) -> None:
        self.names = tuple(names)
        self.memory = memory
        self.pinned_patterns = memory.pinned
        self._pinned: dict[str, bool] = {}
        # stable candidates (board readings, events, notes) and each spec's part of them
        self._groups: dict[Group, dict[str, Entry]] = {"board": {}, "log": {}, "note": {}}
        self._keys: dict[Group, dict[str, list[str]]] = {"board": {}, "log": {}, "note": {}}
        self._fixes: dict[Group, dict[str, dict[str, tuple[str, str]]]] = {
            "board": {},
            "log": {},
            "note": {},
        }
        self.stable: dict[str, Entry] = {}
        self.heads: dict[str, list[str]] = {n: [] for n in self.names}  # board keys
        self.tails: dict[str, list[str]] = {n: [] for n in self.names}  # events, notes
        self.stable_fixes: dict[str, dict[str, tuple[str, str]]] = {n: {} for n in self.names}
        self._notes: list[str] = []  # memory keys of the notes among the stable ones
        self._awake: set[str] = set()  # candidates whose stamp is not behind the clock
        self._rerank: set[str] = set()  # of those, the ones the clock has passed since
        # map candidates (value, revision, first-offered time, importance, first via) and
        # each spec's keys; their (revision, first-offered time), kept in ``first_offered``
        self.map_entries: dict[str, Entry] = {}
        self.map_fixes: dict[str, dict[str, tuple[str, str]]] = {n: {} for n in self.names}
        self._map_sets: dict[str, tuple[set[str], set[str]]] = {}
        self.first_offered = first_offered
        self.near: dict[str, list[str]] = {n: [] for n in self.names}
        self.along: dict[str, list[str]] = {n: [] for n in self.names}  # corridor, not near
        # ranks of the non-pinned candidates, sorted
        self._rank: dict[str, Rank] = {}
        self._ranked: list[Rank] = []
        self.now = -math.inf
        # what the last settle left: memory's version after it, and its victims
        self._memory_version = -1
        self._victims: set[str] = set()
        self._dirty: set[str] = set()
        self._whole = True  # memory changed behind the table's back: look at everything
        self._reoffered = True  # the candidates' key set may have changed since let_go

    # -- pinning and ranks --------------------------------------------------------------

    def _is_pinned(self, key: str) -> bool:
        pinned = self._pinned.get(key)
        if pinned is None:
            pinned = self._pinned[key] = self.pinned_patterns.match(key)
        return pinned

    def _set_rank(self, key: str, rank: Rank | None) -> None:
        old = self._rank.get(key)
        if old == rank:
            return
        ranked = self._ranked
        if old is not None:
            del ranked[bisect.bisect_left(ranked, old)]
        if rank is None:
            del self._rank[key]
        else:
            self._rank[key] = rank
            bisect.insort(ranked, rank)

    def _stable_rank(self, key: str, entry: Entry) -> Rank | None:
        self._rerank.discard(key)
        stamp = entry.stamp
        recent = stamp is None or stamp >= self.now  # last_used is the freeze time
        if stamp is not None and recent:
            self._awake.add(key)
        else:
            self._awake.discard(key)
        if self._is_pinned(key):
            return None
        if stamp is None or recent:
            return (entry.importance, 1, 0.0, key)
        return (entry.importance, 0, stamp, key)

    # -- offers -------------------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Move to the freeze at ``now`` (never earlier than the last one): readings,
        events and map features stamped at the last freeze's time rank as older ones from
        now on."""
        self.now = now
        stable, on_map = self.stable, self.map_entries
        for key in self._awake:
            entry = stable.get(key) or on_map[key]
            if entry.stamp < now:  # type: ignore[operator]
                self._rerank.add(key)  # ranked again at settle, unless refreshed before
                self._dirty.add(key)  # its last_used is its stamp now, not the freeze time

    def offer(self, group: Group, offers: Mapping[str, Sequence[tuple[Any, ...]]]) -> None:
        """Combine one group of stable offers anew (its shape changed): per spec, in its
        order, ``(key, via, importance, value, stamp, seq)`` of its board readings or its
        events, or ``(memory key, view key, importance, note, seq)`` of its notes."""
        entries, keys, vias = self._combine(group, offers)
        self._fixes[group] = {
            name: {
                k: (via, view)
                for k, (via, view) in mine.items()
                if via != entries[k].via or view != k
            }
            for name, mine in vias.items()
        }
        previous = self._groups[group]
        for key in previous:
            if key not in entries:
                self._set_rank(key, None)
                self._awake.discard(key)
        # a candidate offered as it was stays as it was: ranked and written already
        changed = []
        for key, entry in entries.items():
            old = previous.get(key)
            if (
                old is not None
                and old.value is entry.value
                and old.seq == entry.seq
                and old.stamp == entry.stamp
                and old.importance == entry.importance
                and old.via == entry.via
            ):
                entries[key] = old
            else:
                changed.append(key)
                self._set_rank(key, self._stable_rank(key, entry))
        self._groups[group] = entries
        self._keys[group] = keys
        self._reoffered = True
        self._dirty.update(changed)
        self._regroup()

    def _combine(
        self, group: Group, offers: Mapping[str, Sequence[tuple[Any, ...]]]
    ) -> tuple[dict[str, Entry], dict[str, list[str]], dict[str, dict[str, tuple[str, str]]]]:
        """One group's offers combined: the entries, each spec's keys in its order, and
        each spec's ``(via, view key)`` of them."""
        entries: dict[str, Entry] = {}
        keys: dict[str, list[str]] = {}
        vias: dict[str, dict[str, tuple[str, str]]] = {}
        source: Source = group
        for name in self.names:
            mine: dict[str, tuple[str, str]] = {}
            if group == "note":
                for held, view, importance, note, seq in offers[name]:
                    entries[held] = Entry(note, "note", None, seq, importance, NOTE_VIA)
                    mine[held] = (NOTE_VIA, view)
            else:
                for key, via, importance, value, stamp, seq in offers[name]:
                    have = entries.get(key)
                    if have is None:
                        entries[key] = Entry(value, source, stamp, seq, importance, via)
                    elif importance > have.importance:
                        have.importance = importance
                    if key not in mine:
                        mine[key] = (via, key)
            keys[name] = list(mine)
            vias[name] = mine
        return entries, keys, vias

    def _regroup(self) -> None:
        """The stable candidates and each spec's part of them, from the three groups."""
        board, log, notes = self._groups["board"], self._groups["log"], self._groups["note"]
        self.stable = {**board, **log, **notes}
        self._notes = list(notes)
        for name in self.names:
            self.heads[name] = self._keys["board"].get(name, [])
            self.tails[name] = self._keys["log"].get(name, []) + self._keys["note"].get(name, [])
            self.stable_fixes[name] = {
                **self._fixes["board"].get(name, {}),
                **self._fixes["log"].get(name, {}),
                **self._fixes["note"].get(name, {}),
            }

    def view_keys(self, group: Group, name: str) -> list[str]:
        """The keys ``name``'s view shows for its offers of ``group``, in its order."""
        keys = self._keys[group].get(name, [])
        if group != "note":
            return keys
        fixes = self._fixes[group].get(name, {})
        return [fixes[k][1] if k in fixes else k for k in keys]

    def refresh(self, key: str, value: Any, stamp: float, seq: int) -> None:
        """A stable candidate's source changed (a board key was written again)."""
        entry = self.stable.get(key)
        if entry is None:
            return
        entry.value, entry.stamp, entry.seq = value, stamp, seq
        self._set_rank(key, self._stable_rank(key, entry))
        self._dirty.add(key)

    def offer_map(
        self,
        near: MapOffers,
        corridor: MapOffers,
        weighers: Mapping[str, Callable[[str], float]],
        vias: Mapping[str, tuple[str, str]],
        revisions: Mapping[str, int],
        changed: Iterable[str],
        feature: Callable[[str], Any],
    ) -> None:
        """This tick's map offers: per spec its window's and its corridor's keys and
        features, in order; ``revisions`` by feature id, the ids of the features put
        since the last freeze, and ``feature`` (the map's feature of an id). Combined
        again only when some spec's sets changed, else the candidates whose feature was
        put since are refreshed."""
        changed_sets = len(self._map_sets) != len(self.names)
        sets = self._map_sets
        if not changed_sets:
            for name in self.names:
                near_keys = near[name][0]
                along_keys = corridor[name][0]
                had_near, had_along = sets[name]
                if (
                    len(near_keys) != len(had_near)
                    or len(along_keys) != len(had_along)
                    or not had_near.issuperset(near_keys)
                    or not had_along.issuperset(along_keys)
                ):
                    changed_sets = True
                    break
        if not changed_sets:
            entries, first_offered = self.map_entries, self.first_offered
            for feature_id in changed:
                key = "map:" + feature_id
                entry = entries.get(key)
                if entry is not None and entry.seq != revisions[feature_id]:
                    entry.value = feature(feature_id)
                    entry.seq, entry.stamp = first_offered.renew(
                        key, revisions[feature_id], self.now
                    )
                    self._set_rank(key, self._stable_rank(key, entry))
                    self._dirty.add(key)
            for name in self.names:
                along_keys = corridor[name][0]
                if along_keys:
                    near_set = sets[name][0]
                    self.along[name] = [k for k in along_keys if k not in near_set]
                self.near[name] = near[name][0]
            return
        self._combine_map(near, corridor, weighers, vias, revisions)

    def _combine_map(
        self,
        near: MapOffers,
        corridor: MapOffers,
        weighers: Mapping[str, Callable[[str], float]],
        vias: Mapping[str, tuple[str, str]],
        revisions: Mapping[str, int],
    ) -> None:
        """Combine every spec's map offers anew: importance, first via, and each feature's
        revision and first-offered time (``FirstOffered.at``). A candidate that stays as it
        was keeps its entry and its rank."""
        importance, first, features = self._map_parts(near, corridor, weighers, vias)
        now = self.now
        old_entries = self.map_entries
        first_offered = self.first_offered
        times: FirstTimes = {}
        entries: dict[str, Entry] = {}
        for key, w in importance.items():
            revision = revisions[key[4:]]
            via = first[key]
            known = times[key] = first_offered.at(key, revision, now)
            old = old_entries.get(key)
            if old is not None and old.seq == revision and old.importance == w and old.via == via:
                entries[key] = old  # as it was: same entry, same rank
                continue
            entry = entries[key] = Entry(features[key], "map", known[1], revision, w, via)
            self._set_rank(key, self._stable_rank(key, entry))
            self._dirty.add(key)
        for key in old_entries:
            if key not in entries:
                self._set_rank(key, None)
                self._awake.discard(key)
        self.map_entries = entries
        first_offered.keep(times)
        self._reoffered = True

    def _map_parts(
        self,
        near: MapOffers,
        corridor: MapOffers,
        weighers: Mapping[str, Callable[[str], float]],
        vias: Mapping[str, tuple[str, str]],
    ) -> tuple[dict[str, float], dict[str, str], dict[str, Any]]:
        """Every map candidate's importance, first via and feature; and each spec's sets,
        keys (window, then corridor without the window) and fixes, kept."""
        importance: dict[str, float] = {}
        first: dict[str, str] = {}
        features: dict[str, Any] = {}
        sets = self._map_sets
        for name in self.names:
            weigh = weighers[name]
            window_via, corridor_via = vias[name]
            near_keys, near_features = near[name]
            along_all, along_features = corridor[name]
            near_set = set(near_keys)
            along_keys = [k for k in along_all if k not in near_set]
            for keys, found, via in (
                (near_keys, near_features, window_via),
                (along_all, along_features, corridor_via),
            ):
                for key, feature in zip(keys, found, strict=True):
                    w = weigh(key)
                    have = importance.get(key)
                    if have is None:
                        importance[key] = w
                        first[key] = via
                        features[key] = feature
                    elif w > have:
                        importance[key] = w
            sets[name] = (near_set, set(along_all))
            self.near[name] = near_keys
            self.along[name] = along_keys
            self.map_fixes[name] = {
                **{k: (window_via, k) for k in near_keys if first[k] != window_via},
                **{k: (corridor_via, k) for k in along_keys if first[k] != corridor_via},
            }
        return importance, first, features

    # -- settling -------------------------------------------------------------------------

    def order(self) -> dict[str, None]:
        """Every candidate in first-offer order: spec by spec, its board keys, map window,
        corridor, events and notes."""
        parts: list[list[str]] = []
        for name in self.names:
            parts += (self.heads[name], self.near[name], self.along[name], self.tails[name])
        return dict.fromkeys(k for part in parts for k in part)

    def let_go(
        self, tick: int, retraction: Callable[[WorkItem], EvictionReason | None]
    ) -> list[Eviction]:
        """Remove what memory holds but no spec offered: first what its source no longer
        holds, or holds stale (``retraction`` says which), then what left every spec's
        window (``expired``), each group in memory's order."""
        memory = self.memory
        self._whole = memory.version != self._memory_version
        stable, on_map = self.stable, self.map_entries
        out: list[Eviction] = []
        if not self._whole and not self._reoffered:
            return out  # memory holds the last settle's candidates, and they are the same
        self._reoffered = False
        gone = [
            (item, retraction(item))
            for item in memory.items()
            if item.key not in stable and item.key not in on_map
        ]
        if not gone:
            return out
        for item, reason in gone:
            if reason is not None:
                out.append(memory.remove(item.key, reason=reason, tick=tick, log=False))  # type: ignore[arg-type]
        for item, reason in gone:
            if reason is None:
                out.append(memory.remove(item.key, reason="expired", tick=tick, log=False))  # type: ignore[arg-type]
        return out

    def settle(self, tick: int) -> tuple[list[Eviction], set[str]]:
        """Let memory keep what it has room for, as ``ValueEviction`` decides; the
        capacity evictions (in eviction order) and their keys. Call ``let_go`` first."""
        memory = self.memory
        now = self.now
        stable, on_map = self.stable, self.map_entries
        for key in list(self._rerank):
            entry = stable.get(key) or on_map.get(key)
            if entry is None:
                self._rerank.discard(key)
            else:
                self._set_rank(key, self._stable_rank(key, entry))
        excess = len(stable) + len(on_map) - memory.capacity
        losers = self._ranked[:excess] if excess > 0 else []
        victims = {r[3] for r in losers}
        touched: Iterable[str]
        if self._whole:
            touched = [*stable, *on_map]
        else:
            touched = {*self._dirty, *self._awake, *self._notes, *self._victims}
        held = memory.holding()
        rows: list[Row] = []
        new_keys: list[str] = []
        for key in touched:
            if key in victims:
                continue
            entry = stable.get(key) or on_map.get(key)
            if entry is None:
                continue  # no longer a candidate
            if key in held:
                rows.append(_row(key, entry, now))
            else:
                new_keys.append(key)
        if len(new_keys) > 1:
            wanted = set(new_keys)
            new_keys = [k for k in self.order() if k in wanted]
        for key in new_keys:
            rows.append(_row(key, stable.get(key) or on_map[key], now))
        evicted = memory.settle(
            [
                (key, importance, now if klass else stamp)
                for importance, klass, stamp, key in losers
            ],
            rows,
            tick=tick,
            now=now,
        )
        self._memory_version = memory.version
        self._victims = victims
        self._dirty = set()
        return evicted, victims


def _row(key: str, entry: Entry, now: float) -> Row:
    """The working-memory row of a candidate: used now, or at its stamp if older."""
    stamp = entry.stamp
    used = now if stamp is None or stamp > now else stamp
    return (key, entry.value, entry.importance, used, entry.source, stamp, entry.seq, entry.via)
