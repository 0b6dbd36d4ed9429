"""Working memory: the volatile cache that forgets by value.

Each ``WorkItem`` carries two scores, its importance (what losing it costs) and
its ``last_used`` time. When memory is over capacity, an ``EvictionPolicy``
object picks the victim. The default ``ValueEviction`` evicts the lowest
importance, then the stalest, then the smallest key, among items that are not
pinned; ``goal:*`` and ``safety:*`` are pinned by default and never evicted for
capacity. If pinned items alone exceed capacity, a capacity alarm is raised and
nothing pinned is dropped. Every eviction is recorded with its reason.

``FifoEviction`` exists to demonstrate the pitfall the design warns about:
forgetting by time alone lets a flood of refreshed, low-value readings push out
a constraint that was written a moment ago.

``settle`` applies one freeze's changes at once when memory forgets by value: the
caller (the assembler) has already chosen the victims by ``ValueEviction``'s rank,
so an item that loses is recorded as evicted without ever becoming a ``WorkItem``.
The policy is brought up to date lazily, the next time something asks it.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

import structlog

from runtime.errors import SettingError
from runtime.logs import debug_enabled
from runtime.patterns import PatternSet

Source = Literal["board", "map", "log", "note"]
EvictionReason = Literal["capacity", "retracted", "stale", "expired"]
REASONS: frozenset[str] = frozenset(("capacity", "retracted", "stale", "expired"))
"""Why an item leaves working memory: ``capacity`` (evicted to fit), ``retracted`` (its
source no longer holds it), ``stale`` (its reading outlived its ttl), ``expired`` (it left
every spec's window)."""

DEFAULT_PINNED = ("goal:*", "safety:*")


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One working-memory item and its provenance.

    ``last_used`` is when the item's source last refreshed it, never later than the
    freeze: the assembler sets it to the source's stamp (a reading's write time, an
    event's time, the freeze time at which a window first offered a map feature's
    current revision) or, for notes, which are current whenever they are selected, to
    the time of the freeze.

    ``source`` is the layer it came from, ``stamp`` the source's time for it
    (reading or event stamp, a map feature's first-offered time), ``seq`` the
    source's sequence number for it (board reading seq, event seq, the map
    feature's revision: the map version its last add or replace made), ``via`` the
    spec filter that let it in (e.g. ``board:goal:*``, ``map:window(pose,8.0)``).
    """

    key: str
    value: Any
    importance: float = 0.5
    last_used: float = 0.0
    first_seen: float = field(default=float("nan"))
    source: Source = "board"
    stamp: float | None = None
    seq: int = 0
    via: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.importance <= 1.0:
            raise SettingError(
                f"importance of {self.key!r} must be in [0, 1], got {self.importance}"
            )
        if self.last_used != self.last_used:  # NaN would make the victim order undefined
            raise SettingError(f"last_used of {self.key!r} must be a number, got NaN")
        if self.first_seen != self.first_seen:  # NaN: not given
            object.__setattr__(self, "first_seen", self.last_used)


@dataclass(frozen=True, slots=True)
class Eviction:
    """An item leaving working memory, and why."""

    tick: int
    key: str
    importance: float
    last_used: float
    reason: EvictionReason


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    return tuple(cls.__dict__[name].__set__ for name in names)


_ITEM_SLOTS = _slot_setters(
    WorkItem,
    ("key", "value", "importance", "last_used", "first_seen", "source", "stamp", "seq", "via"),
)
_EVICTION_SLOTS = _slot_setters(Eviction, ("tick", "key", "importance", "last_used", "reason"))


def new_item(
    key: str,
    value: Any,
    importance: float,
    last_used: float,
    first_seen: float,
    source: Source,
    stamp: float | None,
    seq: int,
    via: str,
) -> WorkItem:
    """A ``WorkItem`` from values already checked (an importance from a spec's weights, in
    [0, 1]): the same object its constructor makes, without the checks, for hot loops."""
    item = _new(WorkItem)
    s_key, s_value, s_importance, s_used, s_first, s_source, s_stamp, s_seq, s_via = _ITEM_SLOTS
    s_key(item, key)
    s_value(item, value)
    s_importance(item, importance)
    s_used(item, last_used)
    s_first(item, first_seen)
    s_source(item, source)
    s_stamp(item, stamp)
    s_seq(item, seq)
    s_via(item, via)
    return item


def new_eviction(
    tick: int, key: str, importance: float, last_used: float, reason: EvictionReason
) -> Eviction:
    """An ``Eviction``, without its constructor's per-field ``object.__setattr__``."""
    eviction = _new(Eviction)
    s_tick, s_key, s_importance, s_used, s_reason = _EVICTION_SLOTS
    s_tick(eviction, tick)
    s_key(eviction, key)
    s_importance(eviction, importance)
    s_used(eviction, last_used)
    s_reason(eviction, reason)
    return eviction


_new = object.__new__


class EvictionPolicy(Protocol):
    """Chooses which non-pinned item to evict next."""

    name: str

    def admit(self, item: WorkItem) -> None:
        """``item`` (not pinned) was inserted or refreshed."""
        ...

    def forget(self, key: str) -> None:
        """The item under ``key`` left memory."""
        ...

    def victim(self) -> str | None:
        """The key to evict next among admitted items, or None when there is none."""
        ...


class _HeapPolicy:
    """A min-heap over a rank, with lazy invalidation: O(log n) per eviction."""

    _state_types: ClassVar[dict[str, Any]] = {
        "_heap": list[tuple[float, float, str]],
        "_live": dict[str, tuple[float, float, str]],
        "_arrivals": int,
    }

    name = "heap"

    def __init__(self) -> None:
        self._heap: list[tuple[Any, ...]] = []
        self._live: dict[str, tuple[Any, ...]] = {}

    def rank(self, item: WorkItem) -> tuple[Any, ...]:
        raise NotImplementedError

    def admit(self, item: WorkItem) -> None:
        rank = self.rank(item)
        if self._live.get(item.key) == rank:
            return
        self._live[item.key] = rank
        heapq.heappush(self._heap, rank)
        if len(self._heap) > 2 * len(self._live) + 64:
            self._heap = list(self._live.values())
            heapq.heapify(self._heap)

    def forget(self, key: str) -> None:
        self._live.pop(key, None)

    def victim(self) -> str | None:
        heap, live = self._heap, self._live
        while heap:
            rank = heap[0]
            key: str = rank[-1]
            if live.get(key) == rank:
                return key
            heapq.heappop(heap)
        return None


class ValueEviction(_HeapPolicy):
    """Evict the lowest importance, then the oldest ``last_used``, then the smallest key."""

    name = "value"

    def rank(self, item: WorkItem) -> tuple[Any, ...]:
        return (item.importance, item.last_used, item.key)


class FifoEviction(_HeapPolicy):
    """Evict the least recently refreshed item, whatever its importance (the pitfall)."""

    name = "fifo"

    def __init__(self) -> None:
        super().__init__()
        self._arrivals = 0

    def rank(self, item: WorkItem) -> tuple[Any, ...]:
        self._arrivals += 1
        return (item.last_used, self._arrivals, item.key)

    def admit(self, item: WorkItem) -> None:
        self._live.pop(item.key, None)
        super().admit(item)


class WorkingMemory:
    """A capacity-bounded map of key → ``WorkItem`` that forgets by policy."""

    _derived = ("capacity", "pinned")  # settings: the run is rebuilt with them
    _state_types: ClassVar[dict[str, Any]] = {
        "_items": dict[str, WorkItem],
        "_pinned_keys": set[str],
        "evictions": deque[Eviction],
        "evicted_total": int,
        "capacity_alarm": bool,
        "capacity_alarms": int,
        "_version": int,
        "_policy_behind": list[str] | None,
    }

    def check_state(self) -> None:
        """After a checkpoint gave memory its state: each item under its own key, with an
        importance in [0, 1]; pinned keys and the policy's keys among the items."""
        from runtime.snapshot import StateError

        for key, item in self._items.items():
            if item.key != key or not 0.0 <= item.importance <= 1.0:
                raise StateError(f"memory._items[{key!r}]: not an item of that key in [0, 1]")
        if not self._pinned_keys <= self._items.keys():
            raise StateError("memory._pinned_keys: keys memory does not hold")
        live = getattr(self.policy, "_live", {})
        behind = set(self._policy_behind or ())
        if not set(live) <= self._items.keys() | behind:
            raise StateError("memory.policy: keys memory does not hold")

    def __init__(
        self,
        capacity: int = 64,
        pinned: Iterable[str] = DEFAULT_PINNED,
        *,
        policy: EvictionPolicy | None = None,
        history: int = 10_000,
    ) -> None:
        if capacity < 1:
            raise SettingError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.pinned = PatternSet(pinned)
        self.policy: EvictionPolicy = policy if policy is not None else ValueEviction()
        self._items: dict[str, WorkItem] = {}
        self._pinned_keys: set[str] = set()
        self.evictions: deque[Eviction] = deque(maxlen=history)
        self.evicted_total = 0
        self.capacity_alarm = False
        self.capacity_alarms = 0
        self._version = 0
        # Keys the policy still holds from before ``settle`` bypassed it (None: in step).
        self._policy_behind: list[str] | None = None
        self._log = structlog.get_logger("tickwork.memory")

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    @property
    def version(self) -> int:
        """A counter that changes whenever what memory holds changes."""
        return self._version

    def keys(self) -> tuple[str, ...]:
        return tuple(self._items)

    def items(self) -> tuple[WorkItem, ...]:
        return tuple(self._items.values())

    def get(self, key: str) -> WorkItem | None:
        return self._items.get(key)

    def contents(self) -> dict[str, WorkItem]:
        """A copy of what is held, key → item, oldest insertion first."""
        return dict(self._items)

    def holding(self) -> Mapping[str, WorkItem]:
        """What is held, key → item, live (not a copy): read it, change it only through
        memory's methods."""
        return self._items

    def is_pinned(self, key: str) -> bool:
        return self.pinned.match(key)

    @property
    def pinned_count(self) -> int:
        return len(self._pinned_keys)

    @property
    def settles(self) -> bool:
        """Whether ``settle`` may be used: the policy is exactly ``ValueEviction``, whose
        rank the caller of ``settle`` chooses victims by."""
        return type(self.policy) is ValueEviction

    def push(self, item: WorkItem, *, tick: int = 0) -> tuple[Eviction, ...]:
        """Upsert ``item`` and evict down to capacity at once: memory never holds more than
        its capacity after a push (unless pinned items alone exceed it: then the capacity
        alarm is raised and nothing pinned goes). The evictions are returned, kept in
        ``evictions`` and logged."""
        self.upsert(item)
        return self.evict_to_fit(tick)

    def upsert(self, item: WorkItem) -> WorkItem:
        """Insert or refresh ``item``; an existing item keeps its ``first_seen``.

        Nothing is evicted: memory may hold more than its capacity until ``evict_to_fit``
        (the assembler offers a whole freeze, then evicts once, so that an item's chance to
        stay does not depend on the order the specs offered it in)."""
        if self._policy_behind is not None:
            self._catch_up_policy()
        old = self._items.get(item.key)
        if old is not None and old.first_seen != item.first_seen:
            item = new_item(
                item.key,
                item.value,
                item.importance,
                item.last_used,
                old.first_seen,
                item.source,
                item.stamp,
                item.seq,
                item.via,
            )
        self._items[item.key] = item
        self._version += 1
        if old is None and self.pinned.match(item.key):
            self._pinned_keys.add(item.key)
        if item.key not in self._pinned_keys:
            self.policy.admit(item)
        return item

    def remove(
        self, key: str, *, reason: EvictionReason, tick: int = 0, log: bool = True
    ) -> Eviction | None:
        """Take ``key`` out for ``reason`` (one of ``REASONS``, e.g. ``retracted``); None if
        it was not held. The removal is kept in ``evictions`` and, with ``log``, logged (the
        assembler logs a freeze's evictions as one line instead)."""
        if reason not in REASONS:
            raise SettingError(
                f"unknown removal reason {reason!r}; one of {', '.join(sorted(REASONS))}"
            )
        item = self._items.pop(key, None)
        if item is None:
            return None
        self._version += 1
        self._pinned_keys.discard(key)
        if self._policy_behind is None:
            self.policy.forget(key)
        removed = self._record(tick, item.key, item.importance, item.last_used, reason)
        if log and self._debug():
            self._log_evictions(tick, (removed,))
        return removed

    def evict_to_fit(self, tick: int = 0, *, log: bool = True) -> tuple[Eviction, ...]:
        """Evict non-pinned items until within capacity, in the policy's order; raise the
        alarm if pins alone exceed it. Each eviction is kept in ``evictions`` and, with
        ``log``, logged (the assembler logs a freeze's evictions as one line instead)."""
        if self._policy_behind is not None:
            self._catch_up_policy()
        out: list[Eviction] = []
        while len(self._items) > self.capacity:
            key = self.policy.victim()
            if key is None:
                break
            item = self._items.pop(key)
            self._version += 1
            self.policy.forget(key)
            out.append(self._record(tick, item.key, item.importance, item.last_used, "capacity"))
        self._check_alarm(tick)
        if out and log and self._debug():
            self._log_evictions(tick, out)
        return tuple(out)

    def _debug(self) -> bool:
        """Whether the ``evicted`` debug line would be logged."""
        return debug_enabled(self._log)

    def _log_evictions(self, tick: int, evictions: Iterable[Eviction]) -> None:
        listed = [(e.key, e.reason) for e in evictions]
        self._log.debug("evicted", tick=tick, count=len(listed), keys=listed)

    def settle(
        self,
        victims: Iterable[tuple[str, float, float]],
        writes: Iterable[tuple[str, Any, float, float, Source, float | None, int, str]],
        *,
        tick: int,
        now: float,
    ) -> list[Eviction]:
        """Apply one freeze at once, as ``upsert`` of every offered item then
        ``evict_to_fit`` would, when the victims are known beforehand.

        ``victims`` are ``(key, importance, last_used)`` of the items that lose, in the
        order ``ValueEviction`` evicts them, held or not: each is recorded as evicted for
        ``capacity`` (and dropped if held) but never becomes a ``WorkItem``. ``writes``
        are ``(key, value, importance, last_used, source, stamp, seq, via)`` of the items
        that stay, in offer order: an item held exactly so is left as it is, a held one
        keeps its place and ``first_seen``, a new one is appended, first seen at ``now``.
        Only for ``settles`` memories; the policy catches up when it is next asked.
        """
        if not self.settles:
            raise SettingError(
                f"settle needs ValueEviction; this memory evicts by {type(self.policy).__name__}"
            )
        if self._policy_behind is None:
            pinned = self._pinned_keys
            self._policy_behind = [k for k in self._items if k not in pinned]
        out = self._settle_victims(victims, tick)
        self._settle_writes(writes, now)
        self._version += 1
        self._check_alarm(tick)
        return out

    def _settle_victims(
        self, victims: Iterable[tuple[str, float, float]], tick: int
    ) -> list[Eviction]:
        """Record each victim as evicted for ``capacity``, dropping the held ones."""
        items = self._items
        pinned = self._pinned_keys
        out: list[Eviction] = []
        new = _new
        e_tick, e_key, e_importance, e_used, e_reason = _EVICTION_SLOTS
        for key, importance, last_used in victims:
            if items.pop(key, None) is not None:
                pinned.discard(key)
            eviction = new(Eviction)
            e_tick(eviction, tick)
            e_key(eviction, key)
            e_importance(eviction, importance)
            e_used(eviction, last_used)
            e_reason(eviction, "capacity")
            out.append(eviction)
        self.evictions.extend(out)
        self.evicted_total += len(out)
        return out

    def _settle_writes(
        self,
        writes: Iterable[tuple[str, Any, float, float, Source, float | None, int, str]],
        now: float,
    ) -> None:
        """Hold each written item (see ``settle``)."""
        items = self._items
        pinned = self._pinned_keys
        new = _new
        s_key, s_value, s_importance, s_used, s_first, s_source, s_stamp, s_seq, s_via = _ITEM_SLOTS
        for key, value, importance, last_used, source, stamp, seq, via in writes:
            old = items.get(key)
            if old is None:
                if self.pinned.match(key):
                    pinned.add(key)
                first = now
            elif (
                old.last_used == last_used
                and old.value is value
                and old.seq == seq
                and old.importance == importance
                and old.via == via
            ):
                continue  # held as it would be written
            else:
                first = old.first_seen
            item = new(WorkItem)
            s_key(item, key)
            s_value(item, value)
            s_importance(item, importance)
            s_used(item, last_used)
            s_first(item, first)
            s_source(item, source)
            s_stamp(item, stamp)
            s_seq(item, seq)
            s_via(item, via)
            items[key] = item

    def clear(self) -> None:
        """Forget everything without recording evictions (the cache is rebuilt from sources)."""
        if self._policy_behind is not None:
            self._catch_up_policy()
        for key in list(self._items):
            self.policy.forget(key)
        self._items.clear()
        self._pinned_keys.clear()
        self._version += 1

    def _catch_up_policy(self) -> None:
        """Tell the policy what ``settle`` changed behind its back: forget what it held,
        admit what is held now."""
        behind, self._policy_behind = self._policy_behind or [], None
        policy = self.policy
        for key in behind:
            policy.forget(key)
        pinned = self._pinned_keys
        for key, item in self._items.items():
            if key not in pinned:
                policy.admit(item)

    def _check_alarm(self, tick: int) -> None:
        was = self.capacity_alarm
        self.capacity_alarm = len(self._items) > self.capacity
        if self.capacity_alarm:
            self.capacity_alarms += 1
            if not was:  # warn when it starts, not at every pass while it lasts
                self._log.warning(
                    "capacity_alarm",
                    tick=tick,
                    pinned=len(self._pinned_keys),
                    capacity=self.capacity,
                )
        elif was:
            self._log.info(
                "capacity_alarm_cleared", tick=tick, held=len(self._items), capacity=self.capacity
            )

    def _record(
        self, tick: int, key: str, importance: float, last_used: float, reason: EvictionReason
    ) -> Eviction:
        eviction = _new(Eviction)
        s_tick, s_key, s_importance, s_used, s_reason = _EVICTION_SLOTS
        s_tick(eviction, tick)
        s_key(eviction, key)
        s_importance(eviction, importance)
        s_used(eviction, last_used)
        s_reason(eviction, reason)
        self.evictions.append(eviction)
        self.evicted_total += 1
        return eviction
