"""The long-term store the loop writes through: where the facts a cabin asks to remember go.

A cabin asks through its outbox (``out.remember``) and the loop, in its apply phase,
hands each fact to the store it was given, so a cabin's step has no side effect of its
own. The loop needs only this protocol; ``runtime.agent.long_term.LongTermMemory``
(SQLite with a vector index) is one store, ``runtime.agent.writer.MemoryWriter`` (which
queues the write and applies it between ticks) another, and a user may bring another.

How a store keeps a fact travels with the fact, in its metadata under the reserved key
``"memory"`` (``MemoryTerms``): the fact's ``subject`` (a structured fact is compared by
its subject, not by its text: a newer fact about the same subject supersedes the older
one, and one that says the subject no longer ``holds`` retires it), its ``importance``,
whether it is ``pinned`` (never forgotten for capacity) and its time-to-live.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from runtime.errors import SettingError

TERMS_KEY: Final = "memory"
"""The metadata key that carries a fact's ``MemoryTerms``."""


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


@dataclass(frozen=True, slots=True)
class MemoryTerms:
    """How long-term memory keeps one fact.

    ``subject`` names what a structured fact is about (e.g. ``blocked_spot:forklift@13,7``):
    facts with a subject are compared by it, never by their text. ``holds=False`` says
    the subject's fact no longer holds ("clear now"): it retires the fact. ``importance``
    (in [0, 1]) and recency decide what is forgotten first when a scope is over capacity;
    a ``pinned`` fact never is. ``ttl`` (seconds of the stamps' clock) makes a fact expire.
    """

    subject: str | None = None
    holds: bool = True
    importance: float = 0.5
    pinned: bool = False
    ttl: float | None = None

    def __post_init__(self) -> None:
        if self.subject is not None and (not isinstance(self.subject, str) or not self.subject):
            raise SettingError(
                f"a subject must be a non-empty string or None, got {self.subject!r}"
            )
        if not isinstance(self.holds, bool) or not isinstance(self.pinned, bool):
            raise SettingError(
                f"holds and pinned must be booleans, got {self.holds!r} and {self.pinned!r}"
            )
        if not self.holds and self.subject is None:
            raise SettingError("only a fact with a subject can say it no longer holds")
        if (
            isinstance(self.importance, bool)
            or not isinstance(self.importance, int | float)
            or not 0.0 <= self.importance <= 1.0
        ):
            raise SettingError(f"importance must be a number in [0, 1], got {self.importance!r}")
        if self.ttl is not None and (
            isinstance(self.ttl, bool)
            or not isinstance(self.ttl, int | float)
            or not (math.isfinite(self.ttl) and self.ttl > 0)
        ):
            raise SettingError(f"ttl must be a positive number or None, got {self.ttl!r}")
        object.__setattr__(self, "importance", float(self.importance))
        if self.ttl is not None:
            object.__setattr__(self, "ttl", float(self.ttl))

    def as_metadata(self) -> dict[str, Any]:
        """The terms as the value of ``metadata["memory"]`` (defaults left out)."""
        out: dict[str, Any] = {}
        if self.subject is not None:
            out["subject"] = self.subject
        if not self.holds:
            out["holds"] = False
        if self.importance != 0.5:
            out["importance"] = self.importance
        if self.pinned:
            out["pinned"] = True
        if self.ttl is not None:
            out["ttl"] = self.ttl
        return out

    def attach(self, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``metadata`` with these terms under ``"memory"``."""
        return {**(metadata or {}), TERMS_KEY: self.as_metadata()}

    @classmethod
    def of(cls, metadata: Mapping[str, Any] | None) -> MemoryTerms:
        """The terms a fact's metadata carries (the defaults when it carries none)."""
        raw = (metadata or {}).get(TERMS_KEY)
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise SettingError(
                f'metadata["{TERMS_KEY}"] must be a mapping of memory terms, got {raw!r}'
            )
        unknown = sorted(set(raw) - {"subject", "holds", "importance", "pinned", "ttl"})
        if unknown:
            raise SettingError(
                f'metadata["{TERMS_KEY}"] has unknown terms {unknown} (known: subject, holds, '
                "importance, pinned, ttl)"
            )
        return cls(
            subject=raw.get("subject"),
            holds=raw.get("holds", True),
            importance=raw.get("importance", 0.5),
            pinned=raw.get("pinned", False),
            ttl=raw.get("ttl"),
        )


__all__ = ["TERMS_KEY", "LongTermStore", "MemoryTerms", "StoreOutcome"]
