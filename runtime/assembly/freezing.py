"""Freezing: each spec's ``Selection`` and the ``WorkingSet`` of one freeze.

A spec's selection is what it offered and memory kept, each item with the spec's own
``via`` (and a note under its view key, ``note:<key>``), the part of its map window,
corridor and event window that memory kept, what it offered and memory did not keep for
capacity (``evicted``: view key → that freeze's ``capacity`` eviction, in offer order;
an item that lost without ever being held is recorded as evicted too), and each
required pattern that no item matches with the reason: ``evicted`` if something the
spec offered and memory let go for capacity matches it, else ``stale`` if a stale
reading does, else ``absent``. The working set holds every item memory kept, the
evictions, the selections and memory's fill; its ``capacity_alarm`` is raised when the
pinned items alone overflow memory or when any spec lost something. Both paths freeze
through these.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runtime.freeze import FrozenDict, adopt
from runtime.memory import Eviction, WorkItem, new_eviction
from runtime.pack import (
    NOTHING_EVICTED,
    MissingReason,
    Occupancy,
    Selection,
    Versions,
    WorkingSet,
)

if TYPE_CHECKING:
    from runtime.cabin_map import Feature
    from runtime.log import Event
    from runtime.memory import WorkingMemory

NONE_MISSING: FrozenDict[str, MissingReason] = FrozenDict()


def working_set(
    tick: int,
    now: float,
    versions: Versions,
    items: FrozenDict[str, WorkItem],
    evictions: list[Eviction],
    memory: WorkingMemory,
    selections: dict[str, Selection],
) -> WorkingSet:
    """The frozen pack: ``items`` (what memory holds, frozen for this pack), the freeze's
    evictions and selections, memory's fill, and the capacity alarm (pinned items alone
    overflow memory, or a spec lost something it selected)."""
    alarm = memory.capacity_alarm or any(s.evicted for s in selections.values())
    return WorkingSet(
        tick=tick,
        time=now,
        versions=versions,
        items=items,
        evictions=tuple(evictions),
        capacity_alarm=alarm,
        selections=FrozenDict(selections),
        occupancy=Occupancy(len(items), memory.pinned_count, memory.capacity),
    )


def capacity_losses(evictions: Iterable[Eviction]) -> dict[str, Eviction]:
    """The ``capacity`` evictions among a freeze's evictions, by memory key."""
    return {e.key: e for e in evictions if e.reason == "capacity"}


def lost_items(
    offered: Iterable[str], losses: Mapping[str, Eviction], renamed: Mapping[str, str]
) -> FrozenDict[str, Eviction]:
    """What a spec ``offered`` (memory keys, in its offer order) and memory did not keep
    for capacity at this freeze (``losses``), by view key: a note (``renamed`` gives its
    view key) has its eviction under that key."""
    lost: dict[str, Eviction] = {}
    for key in offered:
        eviction = losses.get(key)
        if eviction is not None:
            view_key = renamed.get(key, key)
            if view_key != key:
                eviction = new_eviction(
                    eviction.tick, view_key, eviction.importance, eviction.last_used, "capacity"
                )
            lost[view_key] = eviction
    return adopt(lost) if lost else NOTHING_EVICTED


def missing_reason(
    match: Callable[[str], Any], lost: Iterable[str], stale: Iterable[str]
) -> MissingReason:
    """Why a required pattern (its ``match``) matches nothing in a view: a view key the
    spec offered and memory let go (``lost``) matches it, else a stale board key, else
    nothing did."""
    if any(match(k) for k in lost):
        return "evicted"
    if any(match(k) for k in stale):
        return "stale"
    return "absent"


def any_from(ordered: Sequence[str], prefix: str, match: Callable[[str], Any]) -> bool:
    """Whether a key of the sorted ``ordered`` that starts with ``prefix`` passes ``match``
    (only those keys are looked at)."""
    for i in range(bisect_left(ordered, prefix), len(ordered)):
        key = ordered[i]
        if not key.startswith(prefix):
            return False
        if match(key):
            return True
    return False


def with_via(item: WorkItem, via: str, key: str | None = None) -> WorkItem:
    """``item`` as a view holds it: with that spec's ``via``, under its view ``key``."""
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


def kept(found: tuple[Any, ...], keys: Sequence[str], victims: set[str]) -> tuple[Any, ...]:
    """``found`` without what lost eviction (``keys`` beside it), the same tuple when
    nothing did."""
    if not found or victims.isdisjoint(keys):
        return found
    return tuple([f for f, k in zip(found, keys, strict=True) if k not in victims])


_new_selection = object.__new__
_SELECTION_SLOTS = tuple(
    Selection.__dict__[name].__set__
    for name in (
        "required",
        "items",
        "missing",
        "nearby_map",
        "corridor_map",
        "recent_events",
        "evicted",
    )
)


def selection(
    required: tuple[str, ...],
    items: FrozenDict[str, WorkItem],
    missing: FrozenDict[str, MissingReason],
    nearby_map: tuple[Feature, ...],
    corridor_map: tuple[Feature, ...],
    recent_events: tuple[Event, ...],
    evicted: FrozenDict[str, Eviction],
) -> Selection:
    """A ``Selection``, without its constructor's per-field ``object.__setattr__``."""
    made: Selection = _new_selection(Selection)
    for put, value in zip(
        _SELECTION_SLOTS,
        (required, items, missing, nearby_map, corridor_map, recent_events, evicted),
        strict=True,
    ):
        put(made, value)
    return made
