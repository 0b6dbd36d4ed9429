"""Forgetting by value in long-term memory: per-scope capacity, time-to-live, history.

As in working memory, a scope over its ``capacity`` forgets the memory of lowest
importance, then the least recently used (``last_used``: when it was stored, or last
recalled with ``touch``), then the oldest id, among memories that are not pinned;
pinned memories are never forgotten for capacity, and when they alone exceed it the
write says so (``capacity_alarm``) and nothing pinned goes. A memory with a
time-to-live (its own, or the ``Retention``'s default) expires once the memory's time
(the stamps it is given, or its clock) passes ``stamp + ttl``. A structured fact keeps
at most ``history`` superseded or retired versions of its subject. Every memory
forgotten leaves a ``MemoryEviction`` record (reason ``capacity``, ``expired`` or
``forgotten``) in the store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from runtime.errors import SettingError
from runtime.freeze import FrozenDict

__all__ = ["EvictionReason", "MemoryEviction", "Retention"]

EvictionReason = Literal["capacity", "expired", "forgotten"]


@dataclass(frozen=True, slots=True)
class Retention:
    """How much a long-term memory keeps per scope, and for how long (module docstring)."""

    capacity: int | None = None
    ttl: float | None = None
    history: int = 8

    def __post_init__(self) -> None:
        if self.capacity is not None and (
            isinstance(self.capacity, bool)
            or not isinstance(self.capacity, int)
            or self.capacity < 1
        ):
            raise SettingError(f"capacity must be an int >= 1 or None, got {self.capacity!r}")
        if self.ttl is not None and (
            isinstance(self.ttl, bool)
            or not isinstance(self.ttl, int | float)
            or not (math.isfinite(self.ttl) and self.ttl > 0)
        ):
            raise SettingError(f"ttl must be a positive number or None, got {self.ttl!r}")
        if isinstance(self.history, bool) or not isinstance(self.history, int) or self.history < 0:
            raise SettingError(f"history must be an int >= 0, got {self.history!r}")


@dataclass(frozen=True, slots=True)
class MemoryEviction:
    """One memory long-term memory let go of, and why."""

    memory_id: int
    scope: FrozenDict[str, str]
    content: str
    subject: str | None
    importance: float
    last_used: float
    pinned: bool
    reason: EvictionReason
    stamp: float
