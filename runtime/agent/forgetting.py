"""Forgetting by value in long-term memory: per-scope capacity, time-to-live, history,
and the bounds of what a memory file keeps.

As in working memory, a scope over its ``capacity`` forgets the memory of lowest
importance, then the least recently used (``last_used``: when it was stored, or last
recalled with ``touch``), then the oldest id, among memories that are not pinned;
pinned memories are never forgotten for capacity, and when they alone exceed it the
write says so (``capacity_alarm``) and nothing pinned goes. A memory with a
time-to-live (its own, or the ``Retention``'s default) expires once the memory's time
(the stamps it is given, or its clock) passes ``stamp + ttl``. A structured fact keeps
at most ``history`` superseded or retired versions of its subject. Every memory
forgotten leaves a ``MemoryEviction`` record (reason ``capacity``, ``expired`` or
``forgotten``) in the store; the store keeps the latest ``evictions`` of them (10,000 by
default, over all scopes), deleting the oldest as new ones come.

A memory is a fact, not a document: a text longer than ``max_chars`` (4,096 characters
by default, about four times what all-MiniLM-L6-v2 reads of a text) is refused with a
``MemoryTooLarge`` before anything is embedded or written (a 1.9 MB HTML page took 8.7 s
to embed and was kept whole). The store does not cut or summarise it: what to keep of a
tool's output is the agent's decision, so, as the design says, summarise it first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from runtime.errors import SettingError
from runtime.freeze import FrozenDict

__all__ = ["EvictionReason", "MemoryEviction", "MemoryTooLarge", "Retention"]

EvictionReason = Literal["capacity", "expired", "forgotten"]


@dataclass(frozen=True, slots=True)
class Retention:
    """How much a long-term memory keeps per scope, and for how long (module docstring)."""

    capacity: int | None = None
    ttl: float | None = None
    history: int = 8
    evictions: int = 10_000
    max_chars: int = 4096

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
        for name in ("evictions", "max_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingError(f"{name} must be an int >= 1, got {value!r}")

    def check_size(self, content: str) -> None:
        """Refuse (``MemoryTooLarge``) a text longer than ``max_chars``."""
        if len(content) > self.max_chars:
            raise MemoryTooLarge(
                f"a memory holds at most {self.max_chars:,} characters "
                f"(Retention.max_chars); this one has {len(content):,}: summarise it first "
                "(a memory is a fact, not a document; keep what the agent will need)"
            )


class MemoryTooLarge(SettingError):
    """A text too long to be one memory (longer than ``Retention.max_chars``)."""


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
