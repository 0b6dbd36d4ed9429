"""Eviction at a freeze: letting go of what no spec offers, and saying what went.

What working memory holds but no spec offered at this freeze leaves it first: what its
source no longer holds, or holds stale (``retracted``, ``stale``: ``Sources.retraction``
says which), then what left every spec's window (``expired``). Then memory evicts down
to capacity (the from-scratch path lets memory's policy choose; the delta path's
``CandidateTable`` chooses the victims by ``ValueEviction``'s rank before anything is
written). Every freeze that evicted logs one ``evicted`` debug line.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from runtime.logs import debug_enabled

if TYPE_CHECKING:
    from runtime.memory import Eviction, EvictionReason, WorkingMemory, WorkItem

_log = structlog.get_logger("tickwork.assembler")


def let_go(
    memory: WorkingMemory,
    offered: Container[str],
    tick: int,
    now: float,
    retraction: Callable[[WorkItem, float], EvictionReason | None],
) -> list[Eviction]:
    """Remove from ``memory`` what no spec ``offered`` this tick: first what its source no
    longer holds, or holds stale (``retracted``, ``stale``), then what left every spec's
    window (``expired``). An item offered again is current, so only the rest are checked."""
    gone = [(item.key, retraction(item, now)) for item in memory.items() if item.key not in offered]
    expired: EvictionReason = "expired"
    ordered = [(k, r) for k, r in gone if r is not None] + [
        (k, expired) for k, r in gone if r is None
    ]
    out: list[Eviction] = []
    for key, reason in ordered:
        removed = memory.remove(key, reason=reason, tick=tick, log=False)
        if removed is not None:
            out.append(removed)
    return out


def debugging() -> bool:
    """Whether the ``evicted`` debug line would be logged."""
    return debug_enabled(_log)


def log_evictions(tick: int, evictions: Sequence[Eviction]) -> None:
    """The ``evicted`` debug line of one freeze."""
    _log.debug(
        "evicted",
        tick=tick,
        count=len(evictions),
        keys=[(e.key, e.reason) for e in evictions],
    )


class DebugSwitch:
    """``debugging()``, asked again only when structlog's configuration (its wrapper class)
    changed: the delta path asks at every freeze that evicts."""

    __slots__ = ("_debug", "_wrapper")

    def __init__(self) -> None:
        self._wrapper: Any = None
        self._debug: bool | None = None

    def __call__(self) -> bool:
        wrapper = structlog.get_config()["wrapper_class"] if structlog.is_configured() else None
        if wrapper is not self._wrapper or self._debug is None:
            self._wrapper = wrapper
            self._debug = debugging()
        return self._debug
