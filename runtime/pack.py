"""The working set: one frozen pack per tick, and each cabin's view of it.

A ``WorkingSet`` is what the assembler froze at one tick: every item working
memory kept, stamped with the tick, the time and the versions of the sources it
was read from. A ``CabinView`` is one cabin's read-only slice of it: the items
its spec selected this tick and memory kept, what it selected but memory did not
keep for capacity (``evicted``), what it required but cannot see (``missing``,
with a reason), the nearby map and the recent events. Nothing in either refers
to the live board, map or log.

Nothing selected is lost silently: an item a spec selected that memory evicted
for capacity (or never admitted) is in that spec's ``evicted``, and the working
set's ``pressure`` names every spec that lost something. ``capacity_alarm`` is
raised by either cause of capacity trouble, told apart by ``overflow`` (pinned
items alone exceed the capacity) and ``pressure``.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from runtime.freeze import FrozenDict
from runtime.memory import Eviction, WorkItem
from runtime.patterns import PatternSet, matches, overlaps

if TYPE_CHECKING:
    from runtime.cabin_map import Feature
    from runtime.log import Event

MissingReason = Literal["absent", "stale", "evicted", "fault"]
MISSING_REASONS: tuple[MissingReason, ...] = ("absent", "stale", "evicted", "fault")


@dataclass(frozen=True, slots=True)
class Versions:
    """The source versions a working set was read at."""

    board_seq: int
    map_version: int
    log_seq: int


NOTHING_EVICTED: FrozenDict[str, Eviction] = FrozenDict()


@dataclass(frozen=True, slots=True)
class Selection:
    """What one spec selected at a freeze, before any view-level suppression: what memory
    kept (``items``), and what it did not keep for capacity (``evicted``: view key → the
    ``capacity`` eviction of this freeze, in the spec's offer order)."""

    required: tuple[str, ...]
    items: FrozenDict[str, WorkItem]
    missing: FrozenDict[str, MissingReason]
    nearby_map: tuple[Feature, ...]
    corridor_map: tuple[Feature, ...]
    recent_events: tuple[Event, ...]
    evicted: FrozenDict[str, Eviction] = NOTHING_EVICTED


@dataclass(frozen=True, slots=True)
class Occupancy:
    """How full working memory was at the freeze: items held, how many of them are
    pinned, and the capacity. Over capacity means the pinned items alone overflow it."""

    held: int
    pinned: int
    capacity: int

    @property
    def overflows(self) -> bool:
        """Whether the pinned items alone overflow the capacity (memory holds more than it
        may: nothing pinned is ever evicted for capacity)."""
        return self.held > self.capacity


@dataclass(frozen=True, slots=True)
class WorkingSet:
    """The frozen pack of one tick."""

    tick: int
    time: float
    versions: Versions
    items: FrozenDict[str, WorkItem]
    evictions: tuple[Eviction, ...]
    capacity_alarm: bool
    """Capacity trouble at this freeze: the pinned items alone overflow working memory
    (``overflow``), or a spec lost an item it selected (``pressure``)."""
    selections: FrozenDict[str, Selection]
    occupancy: Occupancy = Occupancy(0, 0, 0)
    """Working memory's fill at the freeze (zeros in a working set rebuilt from a
    recording that did not hold it)."""

    @property
    def cabins(self) -> tuple[str, ...]:
        return tuple(self.selections)

    @property
    def overflow(self) -> bool:
        """Whether the pinned items alone overflow working memory (one cause of
        ``capacity_alarm``)."""
        return self.occupancy.overflows

    @property
    def pressure(self) -> FrozenDict[str, tuple[str, ...]]:
        """Capacity pressure (the other cause of ``capacity_alarm``): per spec that lost
        something, the view keys of the items it selected and memory did not keep for
        capacity at this freeze, in its offer order. Empty when every spec kept all it
        selected."""
        lost = {name: tuple(s.evicted) for name, s in self.selections.items() if s.evicted}
        return FrozenDict(lost) if lost else _NO_PRESSURE

    def view(self, cabin: str | Any, *, suppress: Iterable[str] = ()) -> CabinView:
        """The view of ``cabin`` (a name, or anything with a ``name``).

        Items matching a ``suppress`` pattern are hidden from the view; a required
        pattern left unmatched by that shows up in ``missing`` with reason ``fault``.
        """
        name = cabin if isinstance(cabin, str) else cabin.name
        try:
            selection = self.selections[name]
        except KeyError:
            known = ", ".join(self.selections) or "none"
            raise KeyError(
                f"no spec for cabin {name!r} in this working set (known: {known})"
            ) from None
        return CabinView(name, self, selection, tuple(suppress))


_NO_PRESSURE: FrozenDict[str, tuple[str, ...]] = FrozenDict()


class Provenance(Mapping[str, WorkItem]):
    """``view.items`` as the shared design names it: key → ``WorkItem``, as ``view.provenance``;
    called, as ``view.items()``, it is the usual mapping items view (key, value)."""

    __slots__ = ("_items", "_view")

    def __init__(self, items: FrozenDict[str, WorkItem], view: CabinView) -> None:
        self._items = items
        self._view = view

    def __getitem__(self, key: str) -> WorkItem:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __call__(self) -> ItemsView[str, Any]:
        return ItemsView(self._view)


class CabinView(Mapping[str, Any]):
    """A read-only mapping of key → value for one cabin at one tick."""

    __slots__ = (
        "cabin",
        "capacity_alarm",
        "corridor_map",
        "evicted",
        "missing",
        "nearby_map",
        "occupancy",
        "provenance",
        "recent_events",
        "suppressed",
        "tick",
        "time",
        "versions",
    )

    cabin: str
    tick: int
    time: float
    versions: Versions
    capacity_alarm: bool
    occupancy: Occupancy
    suppressed: tuple[str, ...]
    missing: FrozenDict[str, MissingReason]
    evicted: FrozenDict[str, Eviction]
    """Key → ``Eviction``: what the spec selected at this freeze and working memory did not
    keep for capacity (evicted, or never admitted), under its view key, in the spec's offer
    order. Empty when nothing was lost; a required pattern such a key matches is missing
    for ``evicted``."""
    nearby_map: tuple[Feature, ...]
    corridor_map: tuple[Feature, ...]
    recent_events: tuple[Event, ...]
    provenance: FrozenDict[str, WorkItem]
    """Key → ``WorkItem``: each item with its provenance (source, stamp, seq, importance,
    first_seen, last_used, and ``via``, the filter that let it in). ``stamp`` and
    ``last_used`` say when the source last refreshed the item (for a map feature: the
    freeze at which a window first offered its current revision, its ``seq``), not when
    it was read."""

    def __init__(
        self, cabin: str, ws: WorkingSet, selection: Selection, suppress: tuple[str, ...]
    ) -> None:
        (
            s_cabin,
            s_tick,
            s_time,
            s_versions,
            s_alarm,
            s_occupancy,
            s_suppressed,
            s_evicted,
            s_provenance,
            s_missing,
            s_nearby,
            s_corridor,
            s_events,
        ) = _VIEW_SLOTS
        s_cabin(self, cabin)
        s_tick(self, ws.tick)
        s_time(self, ws.time)
        s_versions(self, ws.versions)
        s_alarm(self, ws.capacity_alarm)
        s_occupancy(self, ws.occupancy)
        s_suppressed(self, suppress)
        s_evicted(self, selection.evicted)
        if not suppress:
            s_provenance(self, selection.items)
            s_missing(self, selection.missing)
            s_nearby(self, selection.nearby_map)
            s_corridor(self, selection.corridor_map)
            s_events(self, selection.recent_events)
            return
        put = object.__setattr__
        hidden = PatternSet(suppress)
        items = FrozenDict({k: v for k, v in selection.items.items() if not hidden.match(k)})
        missing = dict(selection.missing)
        for pattern in selection.required:
            if any(matches(k, pattern) for k in items):
                continue
            if any(overlaps(pattern, s) for s in suppress):
                missing[pattern] = "fault"
        put(self, "provenance", items)
        put(self, "missing", FrozenDict(missing))
        put(self, "nearby_map", tuple(f for f in selection.nearby_map if f.key in items))
        put(self, "corridor_map", tuple(f for f in selection.corridor_map if f.key in items))
        put(self, "recent_events", tuple(e for e in selection.recent_events if e.key in items))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a CabinView is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a CabinView is frozen: cannot delete {name!r}")

    def __getitem__(self, key: str) -> Any:
        return self.provenance[key].value

    def __iter__(self) -> Iterator[str]:
        return iter(self.provenance)

    def __len__(self) -> int:
        return len(self.provenance)

    def __contains__(self, key: object) -> bool:
        return key in self.provenance

    def get(self, key: str, default: Any = None) -> Any:  # cabins call it often: one lookup
        item = self.provenance.get(key)
        return default if item is None else item.value

    @property
    def items(self) -> Provenance:
        """The shared design's name for ``provenance``; ``view.items()`` still works as on any
        mapping."""
        return Provenance(self.provenance, self)

    def item(self, key: str) -> WorkItem | None:
        """The ``WorkItem`` of ``key`` (with its provenance), or None."""
        return self.provenance.get(key)

    def matching(self, pattern: str) -> dict[str, Any]:
        """Key → value of the items whose key matches ``pattern``, in key order."""
        return {k: self.provenance[k].value for k in sorted(self.provenance) if matches(k, pattern)}

    def is_missing(self, pattern: str) -> MissingReason | None:
        return self.missing.get(pattern)

    def __repr__(self) -> str:
        lost = f", evicted={list(self.evicted)!r}" if self.evicted else ""
        return (
            f"CabinView(cabin={self.cabin!r}, tick={self.tick}, items={len(self.provenance)}, "
            f"missing={dict(self.missing)!r}{lost})"
        )


_VIEW_SLOTS = tuple(
    CabinView.__dict__[name].__set__
    for name in (
        "cabin",
        "tick",
        "time",
        "versions",
        "capacity_alarm",
        "occupancy",
        "suppressed",
        "evicted",
        "provenance",
        "missing",
        "nearby_map",
        "corridor_map",
        "recent_events",
    )
)
