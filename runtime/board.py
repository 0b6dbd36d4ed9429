"""The state board: the truth layer of a runtime.

Each key holds its current ``Reading``: a deep-frozen value, the stamp it was
written at (from the runtime's clock), an optional time-to-live, the writer and
a board-wide sequence number that grows with every write. A delete names its source
too (``last_delete``, read by the listeners it calls). Working memory and working sets
are caches of the board; the board is what they are rebuilt from.

The board keeps a bounded change feed (``changes_since``): the key of every write
and delete, by sequence number, so that a reader that remembers the ``seq`` it last
saw can catch up by looking only at what changed since.

A board's state (for a checkpoint) is its readings and counters (``get_state``), without
its lock, its listeners and its change feed (a reader from before is told to read
everything again).
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.clock import Clock
from runtime.errors import SettingError
from runtime.freeze import freeze
from runtime.patterns import is_glob, literal_prefix, matches

BoardListener = Callable[["Reading | None", str], None]

_FEED_LIMIT = 4096
"""Changes the feed holds at most; past that its older half is dropped."""


@dataclass(frozen=True, slots=True)
class Reading:
    """One write to the board: ``value`` of ``key`` as of ``stamp``."""

    key: str
    value: Any
    stamp: float
    ttl: float | None
    source: str
    seq: int

    def is_stale(self, now: float) -> bool:
        """True when the reading has outlived its time-to-live at ``now``."""
        return self.ttl is not None and now - self.stamp > self.ttl


@dataclass(frozen=True, slots=True)
class Deletion:
    """One delete from the board: ``key`` removed at ``stamp`` by ``source``, the change
    numbered ``seq``."""

    key: str
    stamp: float
    source: str
    seq: int


_TOP = "\U0010ffff"


def _after(prefix: str) -> str:
    """The smallest string greater than every string that starts with ``prefix``."""
    stem = prefix.rstrip(_TOP)
    return stem[:-1] + chr(ord(stem[-1]) + 1)


def check_write(key: str, ttl: float | None) -> None:
    """Refuse a board key or ttl that a write cannot take (``ValueError`` saying why)."""
    _check_key(key)
    _check_ttl(key, ttl)


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key or is_glob(key) or any(c.isspace() for c in key):
        raise SettingError(
            f"board key {key!r} must be a non-empty string without wildcards or white space"
        )


def _check_ttl(key: str, ttl: float | None) -> None:
    if ttl is not None and (
        isinstance(ttl, bool)
        or not isinstance(ttl, numbers.Real)
        or not math.isfinite(ttl)
        or not ttl > 0
    ):
        raise SettingError(f"ttl of board key {key!r} must be positive or None, got {ttl!r}")


class StateBoard:
    """Key → current ``Reading``. Thread-safe under ``lock``; its state is its
    readings and counters (``get_state``/``set_state``)."""

    def __init__(self, *, clock: Clock, lock: threading.RLock | None = None) -> None:
        self.clock = clock
        self.lock = lock if lock is not None else threading.RLock()
        self._readings: dict[str, Reading] = {}
        self._sorted_keys: list[str] = []
        self._seq = 0
        self._key_set_version = 0
        self._listeners: list[BoardListener] = []
        self._feed: list[str] = []  # the key of each change after seq ``_feed_base``, in order
        self._feed_base = 0
        self._last_delete: Deletion | None = None

    @property
    def seq(self) -> int:
        """The sequence number of the last write or delete (0 before any)."""
        return self._seq

    @property
    def key_set_version(self) -> int:
        """A counter that changes whenever a key is added or deleted (not on rewrites):
        ``keys(pattern)`` answers stay valid while it stays the same."""
        return self._key_set_version

    def write(self, key: str, value: Any, *, ttl: float | None = None, source: str = "") -> Reading:
        """Freeze ``value`` and make it the current reading of ``key``."""
        # a key the board holds passed the check when it was first written
        if type(key) is not str or key not in self._readings:
            _check_key(key)
        if ttl is not None and not (type(ttl) is float and 0.0 < ttl < math.inf):
            _check_ttl(key, ttl)
        frozen = freeze(value, key=key)
        with self.lock:
            self._seq += 1
            reading = Reading(key, frozen, self.clock.now(), ttl, source, self._seq)
            if key not in self._readings:
                bisect.insort(self._sorted_keys, key)
                self._key_set_version += 1
            self._readings[key] = reading
            self._note_change(key)
            for listener in self._listeners:
                listener(reading, key)
            return reading

    def read(self, key: str) -> Reading | None:
        with self.lock:
            return self._readings.get(key)

    def value(self, key: str, default: Any = None) -> Any:
        """The current value of ``key`` (stale or not), or ``default``."""
        reading = self.read(key)
        return default if reading is None else reading.value

    def delete(self, key: str, *, source: str = "") -> bool:
        """Remove ``key`` (``source``: who deletes it). True if it existed. A delete counts
        as a write for ``seq``; listeners are called with None, and ``last_delete`` says
        who deleted it."""
        with self.lock:
            if key not in self._readings:
                return False
            del self._readings[key]
            i = bisect.bisect_left(self._sorted_keys, key)
            del self._sorted_keys[i]
            self._seq += 1
            self._last_delete = Deletion(key, self.clock.now(), source, self._seq)
            self._key_set_version += 1
            self._note_change(key)
            for listener in self._listeners:
                listener(None, key)
            return True

    @property
    def last_delete(self) -> Deletion | None:
        """The latest delete (None before any): a listener called with None reads who
        deleted the key from it."""
        return self._last_delete

    def _note_change(self, key: str) -> None:
        feed = self._feed
        feed.append(key)
        if len(feed) > _FEED_LIMIT:
            half = len(feed) // 2
            del feed[:half]
            self._feed_base += half

    def changes_since(self, seq: int) -> tuple[str, ...] | None:
        """The keys written or deleted after sequence number ``seq``, in order (a key
        changed twice is listed twice), or None when the feed no longer reaches back to
        ``seq`` (or ``seq`` is not one this board has reached): then read everything."""
        with self.lock:
            base = self._feed_base
            if seq < base or seq > self._seq:
                return None
            return tuple(self._feed[seq - base :])

    def keys(self, pattern: str = "*") -> tuple[str, ...]:
        """Keys matching an exact key or glob, in sorted order."""
        with self.lock:
            if not is_glob(pattern):
                return (pattern,) if pattern in self._readings else ()
            keys = self._sorted_keys
            prefix = literal_prefix(pattern)
            lo = bisect.bisect_left(keys, prefix)
            hi = bisect.bisect_left(keys, _after(prefix)) if prefix.strip(_TOP) else len(keys)
            if pattern == prefix + "*":
                return tuple(keys[lo:hi])
            return tuple(key for key in itertools.islice(keys, lo, hi) if matches(key, pattern))

    def readings(self, pattern: str = "*") -> tuple[Reading, ...]:
        with self.lock:
            return tuple(self._readings[k] for k in self.keys(pattern))

    def add_listener(self, listener: BoardListener) -> None:
        """Call ``listener(reading, key)`` after every write (``reading`` is None on delete)."""
        with self.lock:
            self._listeners.append(listener)

    def get_state(self) -> dict[str, Any]:
        """The board's state as plain data (for a checkpoint): its readings and counters."""
        with self.lock:
            return {
                "readings": list(self._readings.values()),
                "seq": self._seq,
                "key_set_version": self._key_set_version,
            }

    def set_state(self, data: Any) -> None:
        """Take back what ``get_state`` gave, each reading checked; the change feed starts
        afresh (a reader from before is told to read everything)."""
        from runtime.snapshot import StateError, keys_of, list_of, number, record_of, whole

        data = keys_of(data, ("readings", "seq", "key_set_version"), "board")
        seq = whole(data["seq"], "board.seq")
        readings: dict[str, Reading] = {}
        for i, item in enumerate(list_of(data["readings"], "board.readings")):
            where = f"board.readings[{i}]"
            reading = record_of(item, Reading, where)
            _check_key(reading.key)
            if reading.key in readings:
                raise StateError(f"{where}: a second reading of {reading.key!r}")
            number(reading.stamp, f"{where}.stamp")
            if reading.ttl is not None:
                _check_ttl(reading.key, reading.ttl)
            whole(reading.seq, f"{where}.seq", low=1, high=seq)
            frozen = freeze(reading.value, key=reading.key)
            readings[reading.key] = Reading(
                reading.key, frozen, float(reading.stamp), reading.ttl, reading.source, reading.seq
            )
        with self.lock:
            self._readings = readings
            self._seq = seq
            self._key_set_version = whole(data["key_set_version"], "board.key_set_version")
            self._sorted_keys = sorted(readings)
            self._feed = []
            self._feed_base = seq

    def __len__(self) -> int:
        return len(self._readings)

    def __contains__(self, key: object) -> bool:
        return key in self._readings
