"""The delta path's selections: each spec's view built from the table without copying.

A spec's items are its candidates in offer order (board keys, map window, corridor,
events, notes) less the victims of eviction, taken from what memory holds; an item
held with another spec's ``via``, or a note (held as ``note:<cabin>/<key>``, shown as
``note:<key>``), is copied once for this spec and the copy reused while the item stays
the same. The order without the victims is made again only when a part of it or the
victims changed. Required patterns are checked against the stable view keys they
matched when their group was last offered (``Carried.match_requirements``), and against
the map keys only when they could match one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from runtime.assembly.freezing import NONE_MISSING, kept, lost_items, missing_reason, selection
from runtime.freeze import adopt
from runtime.memory import WorkItem, new_item
from runtime.pack import NOTHING_EVICTED

if TYPE_CHECKING:
    from runtime.assembly.candidates import CandidateTable
    from runtime.assembly.maps import Offered
    from runtime.freeze import FrozenDict
    from runtime.log import Event
    from runtime.memory import Eviction
    from runtime.pack import MissingReason, Selection

Requirement = tuple[str, Callable[[str], Any] | None, tuple[str, ...], bool]
"""A required pattern, its glob's match (None for an exact key), the stable view keys it
matches, and whether it could match a map key."""

_COPIES = 4096
"""Copies of items the views keep at most (all are dropped when it fills)."""


class DeltaViews:
    """Each spec's selection at a delta freeze, and the copies and orders reused."""

    def __init__(self, table: CandidateTable) -> None:
        self.table = table
        self._copies: dict[tuple[str, str], tuple[WorkItem, WorkItem]] = {}
        # per view: its offers' parts and the victims it was cut by, and what survived
        self._kept: dict[str, tuple[tuple[list[str], ...], set[str], list[str]]] = {}

    def select(
        self,
        name: str,
        held: Mapping[str, WorkItem],
        near: Offered,
        along: Offered,
        victims: set[str],
        losses: Mapping[str, Eviction],
        stale: frozenset[str],
        requirements: tuple[Requirement, ...],
        window: tuple[tuple[Event, ...], list[str]],
        required: tuple[str, ...],
    ) -> Selection:
        """``name``'s selection: what its spec offered and memory kept, in offer order,
        each item with the spec's own ``via``; what it offered and memory did not keep for
        capacity (``victims``, their evictions ``losses``); what it required and cannot
        have."""
        items = self._items(name, held, victims)
        missing: dict[str, MissingReason] = {}
        keys = items.keys()
        table = self.table
        evicted = self._lost(name, losses) if victims else NOTHING_EVICTED
        for pattern, rx, known, maps in requirements:
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
            missing[pattern] = missing_reason(match, evicted, stale)
        near_keys, near_features = near
        along_keys, along_features = along
        found, found_keys = window
        return selection(
            required,
            adopt(items),
            adopt(missing) if missing else NONE_MISSING,
            kept(near_features, near_keys, victims),
            kept(along_features, along_keys, victims),
            kept(found, found_keys, victims),
            evicted,
        )

    def _lost(self, name: str, losses: Mapping[str, Eviction]) -> FrozenDict[str, Eviction]:
        """What ``name``'s spec offered and memory did not keep for capacity, by view key
        (a note under ``note:<key>``), in offer order."""
        fixes = self.table.stable_fixes[name]
        renamed = {k: view for k, (_, view) in fixes.items() if view != k}
        return lost_items(self.order(name), losses, renamed)

    def _items(
        self, name: str, held: Mapping[str, WorkItem], victims: set[str]
    ) -> dict[str, WorkItem]:
        """``name``'s items, by view key, in offer order."""
        table = self.table
        keys = self.kept(name, victims)
        # every candidate that did not lose is held (settle wrote it): no lookup can miss
        items = dict(zip(keys, map(held.__getitem__, keys), strict=True))
        renamed = False
        for fixes in (table.stable_fixes[name], table.map_fixes[name]):
            if fixes:
                for key, (via, view) in fixes.items():
                    item = items.get(key)
                    if item is not None:
                        items[key] = self.copy(name, item, via, view)
                        renamed = renamed or view != key
        if renamed:
            items = {item.key: item for item in items.values()}
        return items

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
        out = [k for part in parts for k in part if k not in victims]
        self._kept[name] = (tuple(list(part) for part in parts), set(victims), out)
        return out

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
        if len(self._copies) >= _COPIES:
            self._copies.clear()
        self._copies[(name, item.key)] = (item, mine)
        return mine
