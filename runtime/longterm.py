"""The long-term store the loop writes through: where the facts a cabin asks to remember go.

A cabin asks through its outbox (``out.remember``) and the loop, in its apply phase,
hands each fact to the store it was given, so a cabin's step has no side effect of its
own. The loop needs only this protocol; ``runtime.agent.memory.LongTermMemory`` (SQLite
with vector recall) is one store, and a user may bring another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class StoreOutcome(Protocol):
    """What a store did with one fact: whether it was ``stored``, and why (not)."""

    @property
    def stored(self) -> bool: ...

    @property
    def reason(self) -> str: ...


class LongTermStore(Protocol):
    """A long-term memory the loop can write facts to."""

    def remember(
        self,
        content: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        stamp: float | None = None,
    ) -> StoreOutcome:
        """Keep ``content`` in ``scope`` (or refuse it, saying why)."""
        ...


__all__ = ["LongTermStore", "StoreOutcome"]
