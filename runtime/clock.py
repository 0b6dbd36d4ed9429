"""Clocks: where a runtime's notion of "now" comes from.

``SimClock`` is exact and deterministic: time only moves when the loop asks it
to, so the same run gives the same stamps. ``WallClock`` reads a monotonic
clock and sleeps to deadlines; both its time source and its sleep are injected,
so tests drive it without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, runtime_checkable

from runtime.errors import SettingError


@runtime_checkable
class Clock(Protocol):
    """What the board, the log and the loop need of a clock."""

    def now(self) -> float:
        """Seconds since the clock's epoch."""
        ...

    def sleep_until(self, deadline: float) -> None:
        """Return at ``deadline`` (or at once if it has passed)."""
        ...


class SimClock:
    """Simulated time: starts at ``start`` and moves only by ``sleep_until``/``advance``."""

    _state_types: ClassVar[dict[str, Any]] = {"_now": float}

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def sleep_until(self, deadline: float) -> None:
        if deadline > self._now:
            self._now = float(deadline)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise SettingError(f"a clock cannot go back ({seconds} s)")
        self._now += seconds

    def __repr__(self) -> str:
        return f"SimClock(now={self._now})"


class WallClock:
    """Monotonic wall time, zeroed at construction."""

    def __init__(
        self,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._monotonic = monotonic
        self._sleep = sleep
        self._epoch = monotonic()

    def now(self) -> float:
        return self._monotonic() - self._epoch

    def sleep_until(self, deadline: float) -> None:
        delay = deadline - self.now()
        if delay > 0:
            self._sleep(delay)
