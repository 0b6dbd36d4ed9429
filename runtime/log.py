"""The event log (航行日志, voyage log): append-only, time-ordered events.

Beside the state board, the log is the other truth layer: what happened, when,
and in which order. Each event gets a sequence number one higher than the last
and a stamp from the injected clock (or given explicitly); stamps never go
backwards. The assembler reads a window of the log every tick, so a query over a
time window costs O(log n + k): events are held in columns (stamps in an
``array('d')``), the window is found by bisection and walked from its newest end.
A per-kind index (stamps and sequence numbers of each kind) lets kind-filtered
queries skip other kinds' events. ``Event`` objects are built only when read,
which keeps a held event at a few dozen bytes beyond its payload.

With ``retention`` set, the oldest events are dropped in chunks once the log
holds more than ``retention * 1.25`` events, down to ``retention``; every drop is
counted in ``dropped`` and logged, never silent.

A log's state (for a checkpoint: ``get_state``) is its events, without its lock and its
listeners.
"""

from __future__ import annotations

import heapq
import itertools
import math
import numbers
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from runtime.clock import Clock
from runtime.errors import SettingError
from runtime.freeze import FreezeError, freeze

_log = structlog.get_logger(__name__)

# Distinct tag sets are shared between events; the cache is cleared when it grows past this.
_TAGSET_CACHE_SIZE = 1024


@dataclass(frozen=True, slots=True)
class Event:
    """One logged event. ``data`` is deep-frozen; ``seq`` orders events totally."""

    seq: int
    stamp: float
    kind: str
    tags: frozenset[str]
    data: Any

    @property
    def key(self) -> str:
        """The event's key in working memory and views: ``event:<kind>:<seq>``."""
        return f"event:{self.kind}:{self.seq}"


class _KindIndex:
    """Stamps and sequence numbers of one kind's held events, oldest first."""

    __slots__ = ("kind", "seqs", "stamps")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.stamps = array("d")
        self.seqs = array("q")

    def newest_first(self, since: float, until: float | None) -> Iterator[int]:
        """Sequence numbers of this kind with ``since <= stamp <= until``, newest first."""
        lo = bisect_left(self.stamps, since)
        hi = len(self.stamps) if until is None else bisect_right(self.stamps, until)
        seqs = self.seqs
        return (seqs[j] for j in range(hi - 1, lo - 1, -1))


class EventLog:
    """Append-only, time-ordered events with windowed queries and optional retention;
    its state is its events (``get_state``/``set_state``)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        lock: threading.RLock | None = None,
        retention: int | None = None,
    ) -> None:
        if retention is not None and (
            isinstance(retention, bool) or not isinstance(retention, int) or retention < 1
        ):
            raise SettingError(f"retention must be an integer >= 1 or None, got {retention!r}")
        self.lock: threading.RLock = threading.RLock() if lock is None else lock
        self._clock = clock
        self._retention = retention
        self._dropped = 0
        self._last_stamp = -math.inf
        # Columns of the held events; position i holds seq ``self._dropped + 1 + i``.
        self._stamps = array("d")
        self._kinds: list[str] = []
        self._tags: list[frozenset[str]] = []
        self._data: list[Any] = []
        self._by_kind: dict[str, _KindIndex] = {}
        self._tagsets: dict[frozenset[str], frozenset[str]] = {}
        self._listeners: tuple[Callable[[Event], None], ...] = ()

    def get_state(self) -> dict[str, Any]:
        """The log's state as plain data (for a checkpoint): the held events, how many were
        dropped, the last stamp and the order its kinds were first logged in."""
        with self.lock:
            return {
                "dropped": self._dropped,
                "last_stamp": self._last_stamp,
                "stamps": np.frombuffer(self._stamps, dtype=np.float64).copy(),
                "kinds": list(self._kinds),
                "tags": [sorted(t) for t in self._tags],
                "data": list(self._data),
                "kind_order": list(self._by_kind),
            }

    def set_state(self, data: Any) -> None:
        """Take back what ``get_state`` gave, checked (stamps finite and in order, kinds and
        tags strings, data frozen); the per-kind index is built again."""
        from runtime.snapshot import StateError, keys_of, list_of, number, whole

        names = ("dropped", "last_stamp", "stamps", "kinds", "tags", "data", "kind_order")
        data = keys_of(data, names, "log")
        stamps = data["stamps"]
        if not (isinstance(stamps, np.ndarray) and stamps.dtype == np.float64 and stamps.ndim == 1):
            raise StateError("log.stamps: expected a one-dimensional float64 array")
        kinds, tags, values = (list_of(data[k], f"log.{k}") for k in ("kinds", "tags", "data"))
        if not len(stamps) == len(kinds) == len(tags) == len(values):
            raise StateError("log: its columns differ in length")
        if not np.isfinite(stamps).all() or (len(stamps) > 1 and (np.diff(stamps) < 0).any()):
            raise StateError("log.stamps: not finite, or not in order")
        last = number(data["last_stamp"], "log.last_stamp", finite=False)
        if last != (stamps[-1] if len(stamps) else -math.inf):
            raise StateError("log.last_stamp: not the last event's stamp")
        dropped = whole(data["dropped"], "log.dropped")
        order = list_of(data["kind_order"], "log.kind_order")
        if len(set(map(str, order))) != len(order) or set(order) != set(kinds):
            raise StateError("log.kind_order: not the held events' kinds")
        held_tags = []
        frozen_data = []
        for i, (kind, tag_list, value) in enumerate(zip(kinds, tags, values, strict=True)):
            if type(kind) is not str or not kind:
                raise StateError(f"log.kinds[{i}]: not a kind")
            held_tags.append(_strings(list_of(tag_list, f"log.tags[{i}]"), "tags"))
            frozen_data.append(freeze(value))
        by_kind = {kind: _KindIndex(kind) for kind in order}
        for i, kind in enumerate(kinds):
            index = by_kind[kind]
            index.stamps.append(float(stamps[i]))
            index.seqs.append(dropped + 1 + i)
        with self.lock:
            self._dropped = dropped
            self._last_stamp = last
            self._stamps = array("d", stamps.tolist())
            self._kinds = [by_kind[k].kind for k in kinds]
            self._tagsets = {}
            self._tags = [self._shared_tags(t) for t in held_tags]
            self._data = frozen_data
            self._by_kind = by_kind

    @property
    def seq(self) -> int:
        """The sequence number of the last appended event (0 before the first)."""
        with self.lock:
            return self._dropped + len(self._stamps)

    @property
    def dropped(self) -> int:
        """How many events retention has dropped so far."""
        with self.lock:
            return self._dropped

    def __len__(self) -> int:
        with self.lock:
            return len(self._stamps)

    def __repr__(self) -> str:
        with self.lock:
            return (
                f"EventLog(held={len(self._stamps)}, seq={self._dropped + len(self._stamps)}, "
                f"dropped={self._dropped}, retention={self._retention})"
            )

    def add_listener(self, callback: Callable[[Event], None]) -> None:
        """Call ``callback(event)`` after each append, in append order, under the lock.

        An exception from a listener propagates to the caller of ``append``; the
        event is already in the log by then.
        """
        if not callable(callback):
            raise TypeError(f"a listener must be callable, got {callback!r}")
        with self.lock:
            self._listeners = (*self._listeners, callback)

    def append(
        self,
        kind: str,
        data: Any = None,
        *,
        stamp: float | None = None,
        tags: Iterable[str] = (),
    ) -> Event:
        """Log an event of ``kind`` and return it.

        ``stamp`` defaults to the clock's ``now()``; a stamp earlier than the last
        one is refused. ``data`` is deep-frozen; a value that cannot be frozen is
        refused with a ``FreezeError`` naming the kind. A refused append changes
        nothing.
        """
        if not isinstance(kind, str):
            raise TypeError(f"an event kind must be a string, got {type(kind).__name__}")
        if not kind:
            raise SettingError("an event kind must not be empty")
        tag_set = _strings(tags, "tags")
        try:
            frozen = freeze(data)
        except FreezeError as exc:
            raise FreezeError(f"cannot log event of kind {kind!r}: {exc}") from exc
        with self.lock:
            at = self._stamp_for(kind, stamp)
            index = self._by_kind.get(kind)
            if index is None:
                index = self._by_kind[kind] = _KindIndex(kind)
            tag_set = self._shared_tags(tag_set)
            seq = self._dropped + len(self._stamps) + 1
            self._stamps.append(at)
            self._kinds.append(index.kind)
            self._tags.append(tag_set)
            self._data.append(frozen)
            index.stamps.append(at)
            index.seqs.append(seq)
            self._last_stamp = at
            event = Event(seq, at, index.kind, tag_set, frozen)
            self._enforce_retention()
            for listener in self._listeners:
                listener(event)
            return event

    def query(
        self,
        since: float,
        until: float | None = None,
        *,
        kinds: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        limit: int | None = 16,
    ) -> tuple[Event, ...]:
        """The newest ``limit`` held events with ``since <= stamp <= until``, oldest first.

        ``until=None`` has no upper bound. ``kinds`` keeps events of any of the
        given kinds, ``tags`` events carrying at least one of the given tags (so
        an empty collection matches nothing); ``None`` does not filter.
        ``limit=None`` returns every match.
        """
        low = _bound(since, "since")
        high = None if until is None else _bound(until, "until")
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise SettingError(f"limit must be an integer >= 1 or None, got {limit!r}")
        kind_set = None if kinds is None else _strings(kinds, "kinds")
        tag_set = None if tags is None else _strings(tags, "tags")
        with self.lock:
            first = self._dropped + 1
            seqs: Iterator[int]
            if kind_set is None:
                lo = bisect_left(self._stamps, low)
                hi = len(self._stamps) if high is None else bisect_right(self._stamps, high)
                seqs = iter(range(first + hi - 1, first + lo - 1, -1))
            else:
                windows = [
                    self._by_kind[k].newest_first(low, high) for k in kind_set if k in self._by_kind
                ]
                seqs = windows[0] if len(windows) == 1 else heapq.merge(*windows, reverse=True)
            if tag_set is not None:
                held_tags = self._tags
                seqs = (s for s in seqs if not held_tags[s - first].isdisjoint(tag_set))
            picked = list(itertools.islice(seqs, limit))
            return tuple(self._event_at(s - first) for s in reversed(picked))

    def newest(self, kinds: Iterable[str] | None = None) -> tuple[int, float]:
        """``(seq, stamp)`` of the newest held event of any of ``kinds`` (any kind when
        None), or ``(0, -inf)``: enough to tell whether a window query could have changed."""
        with self.lock:
            if kinds is None:
                if not self._stamps:
                    return 0, -math.inf
                return self._dropped + len(self._stamps), self._stamps[-1]
            best = (0, -math.inf)
            for kind in kinds:
                index = self._by_kind.get(kind)
                if index is not None and index.seqs and index.seqs[-1] > best[0]:
                    best = (index.seqs[-1], index.stamps[-1])
            return best

    def last(self, kind: str | None = None) -> Event | None:
        """The newest held event (of ``kind``, if given), or None."""
        with self.lock:
            if kind is None:
                return self._event_at(len(self._stamps) - 1) if self._stamps else None
            index = self._by_kind.get(kind)
            if index is None or not index.seqs:
                return None
            return self._event_at(index.seqs[-1] - self._dropped - 1)

    def get(self, seq: int) -> Event | None:
        """The event numbered ``seq``, or None if it was dropped or never logged."""
        with self.lock:
            pos = seq - self._dropped - 1
            return self._event_at(pos) if 0 <= pos < len(self._stamps) else None

    def _event_at(self, pos: int) -> Event:
        return Event(
            self._dropped + 1 + pos,
            self._stamps[pos],
            self._kinds[pos],
            self._tags[pos],
            self._data[pos],
        )

    def _stamp_for(self, kind: str, stamp: float | None) -> float:
        if stamp is None:
            if self._clock is None:
                raise SettingError(
                    f"event {kind!r} has no stamp and the log has no clock to stamp it"
                )
            stamp = self._clock.now()
        at = _bound(stamp, "stamp")
        if not math.isfinite(at):
            raise SettingError(f"event {kind!r}: stamp must be finite, got {stamp!r}")
        if at < self._last_stamp:
            raise SettingError(
                f"event {kind!r} stamped {at} is earlier than the last event's stamp "
                f"{self._last_stamp}: stamps never go backwards"
            )
        return at

    def _shared_tags(self, tags: frozenset[str]) -> frozenset[str]:
        shared = self._tagsets.get(tags)
        if shared is None:
            if len(self._tagsets) >= _TAGSET_CACHE_SIZE:
                self._tagsets.clear()
            shared = self._tagsets[tags] = tags
        return shared

    def _enforce_retention(self) -> None:
        retention = self._retention
        held = len(self._stamps)
        # held > retention * 1.25, in integers.
        if retention is None or held <= retention + retention // 4:
            return
        n = held - retention
        del self._stamps[:n]
        del self._kinds[:n]
        del self._tags[:n]
        del self._data[:n]
        self._dropped += n
        first = self._dropped + 1
        for kind, index in list(self._by_kind.items()):
            cut = bisect_left(index.seqs, first)
            if cut == len(index.seqs):
                del self._by_kind[kind]
            elif cut:
                del index.seqs[:cut]
                del index.stamps[:cut]
        _log.warning(
            "event_log_retention_dropped",
            dropped=n,
            total_dropped=self._dropped,
            retention=retention,
        )


def _strings(values: Iterable[str], what: str) -> frozenset[str]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} must be a collection of strings, not the single value {values!r}")
    result = frozenset(values)
    for value in result:
        if not isinstance(value, str):
            raise TypeError(f"{what} must be strings, got {type(value).__name__} {value!r}")
        if not value:
            raise SettingError(f"{what} must not contain an empty string")
    return result


def _bound(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {value!r}")
    result = float(value)
    if math.isnan(result):
        raise SettingError(f"{what} must not be NaN")
    return result
