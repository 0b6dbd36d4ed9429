"""A working-memory eviction policy of one's own: forget the least important item first,
and among equals the smallest key, whatever its age (``ValueEviction`` breaks ties by age).

A policy is a small object with ``name``, ``admit``, ``forget`` and ``victim``
(``runtime.memory.EvictionPolicy``); working memory handles pins, capacity, the alarm and
the eviction records around it.
"""

from runtime import WorkItem


class ImportanceOnly:
    name = "importance-only"

    def __init__(self) -> None:
        self._ranks: dict[str, tuple[float, str]] = {}

    def admit(self, item: WorkItem) -> None:
        """``item`` (never a pinned one) was inserted or refreshed."""
        self._ranks[item.key] = (item.importance, item.key)

    def forget(self, key: str) -> None:
        """The item under ``key`` left memory."""
        self._ranks.pop(key, None)

    def victim(self) -> str | None:
        """The key to evict next, or None when nothing can be."""
        return min(self._ranks.values())[1] if self._ranks else None
