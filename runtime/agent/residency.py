"""Which scopes' vector indexes a long-term memory holds in RAM: a bounded LRU cache.

A scope's ``ScopeIndex`` is loaded from the file when the scope is first used and kept
in step with every write after. Kept forever, a memory that serves many scopes holds
every index it ever loaded (20,000 users with one memory each held 379 MB). So the
loaded indexes are bounded by an ``IndexBudget``: at most ``scopes`` of them, holding
at most ``bytes`` between them (``ScopeIndex.nbytes``, each measured when it is used);
past either, the least recently used are unloaded, never the one being used. An
unloaded index is loaded again from the file at its scope's next use: nothing is lost,
its load is paid again (about 0.3 ms for a scope of a few memories, 2 to 3 s for
100,000).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from runtime.agent.vectors import ScopeIndex
from runtime.errors import SettingError

__all__ = ["IndexBudget", "LoadedIndexes"]


@dataclass(frozen=True, slots=True)
class IndexBudget:
    """How many scope indexes a memory keeps loaded, and how many bytes they may hold."""

    scopes: int = 1024
    bytes: int = 256 * 2**20

    def __post_init__(self) -> None:
        for name in ("scopes", "bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingError(f"{name} must be an int >= 1, got {value!r}")


class LoadedIndexes:
    """The loaded indexes by scope key, least recently used first (module docstring)."""

    def __init__(self, budget: IndexBudget) -> None:
        self.budget = budget
        self.unloaded = 0  # indexes let go of for the budget, since the memory opened
        self._held: OrderedDict[str, ScopeIndex] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self._total = 0

    def __len__(self) -> int:
        return len(self._held)

    def __bool__(self) -> bool:
        return bool(self._held)

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    @property
    def nbytes(self) -> int:
        """Bytes the loaded indexes held when each was last used."""
        return self._total

    def use(self, key: str) -> ScopeIndex | None:
        """The index of ``key`` if it is loaded, made the most recently used (and
        measured again: it may have grown since)."""
        index = self._held.get(key)
        if index is not None:
            self._held.move_to_end(key)
            self._measure(key, index)
            if self._total > self.budget.bytes:
                self._fit(keep=key)
        return index

    def peek(self, key: str) -> ScopeIndex | None:
        """The index of ``key`` if it is loaded, without making it recently used."""
        return self._held.get(key)

    def put(self, key: str, index: ScopeIndex) -> None:
        """Hold a freshly loaded index, unloading the least recently used over budget."""
        self._held[key] = index
        self._held.move_to_end(key)
        self._measure(key, index)
        self._fit(keep=key)

    def clear(self) -> None:
        self._held.clear()
        self._bytes.clear()
        self._total = 0

    def _measure(self, key: str, index: ScopeIndex) -> None:
        size = index.nbytes
        self._total += size - self._bytes.get(key, 0)
        self._bytes[key] = size

    def _fit(self, *, keep: str) -> None:
        budget = self.budget
        while len(self._held) > 1 and (
            len(self._held) > budget.scopes or self._total > budget.bytes
        ):
            key = next(iter(self._held))
            if key == keep:  # the one in use stays: unload the next least recent
                self._held.move_to_end(key)
                continue
            del self._held[key]
            self._total -= self._bytes.pop(key)
            self.unloaded += 1
