"""Garbage collection out of ticks: when Python's cyclic collector may run.

CPython's collector starts whenever enough objects were allocated, which on a wall clock
can be in the middle of a tick: a full (generation-2) collection over a large world costs
milliseconds, an outlier in the tick's compute time that has nothing to do with the
cabins. A ``CollectionPolicy`` decides when collections happen, as the loop's other
policies decide what happens on an overrun:

- ``CollectAnywhere``: the interpreter's own collector, untouched (the default on a
  simulated clock, where a tick's wall time means nothing).
- ``CollectInSlack``: at the loop's first tick, one full collection, then ``gc.freeze()``
  (the objects alive after start-up, the loaded world and specs, are never scanned again);
  the automatic collector is switched off for the length of each tick, and after the
  tick, in the slack before the next deadline, the generations the interpreter would have
  collected are collected (a full one only when the slack is long enough) and the
  collector is switched back on. The default on a ``WallClock``.

The collector is the process's, not the loop's. It is off only inside a tick (the loop
switches it back on in a ``finally``, so a tick that raises or a loop never closed leaves
it on), and a policy switches it back on only if it switched it off, so two loops in one
process leave it as they found it (while their ticks overlap, one of them may tick with
the interpreter's collector on: the guarantee is lost, nothing else).
"""

from __future__ import annotations

import gc
from typing import Any, Protocol

from runtime.errors import SettingError


class Collector(Protocol):
    """The part of the ``gc`` module a policy uses (a test passes a fake)."""

    def collect(self, generation: int = 2) -> int: ...

    def get_count(self) -> tuple[int, int, int]: ...

    def get_threshold(self) -> tuple[int, ...]: ...

    def isenabled(self) -> bool: ...

    def enable(self) -> None: ...

    def disable(self) -> None: ...

    def freeze(self) -> None: ...


class CollectionPolicy(Protocol):
    """When the cyclic garbage collector runs, relative to the loop's ticks."""

    name: str

    def start(self) -> None:
        """Called once, before the loop's first tick."""

    def before_tick(self) -> None:
        """Called as each tick starts."""

    def after_tick(self, now: float, deadline: float) -> None:
        """Called after each tick (also one that raised), at ``now``, before the loop
        waits for ``deadline``."""


class CollectAnywhere:
    """Leaves the interpreter's collector as it is: it may run inside a tick."""

    name = "anywhere"

    def start(self) -> None:
        pass

    def before_tick(self) -> None:
        pass

    def after_tick(self, now: float, deadline: float) -> None:
        pass


class CollectInSlack:
    """Collects only between ticks, in the time left before the next deadline.

    ``min_slack``: the seconds of slack a young (generation 0 or 1) collection needs;
    ``full_slack``: those a full collection needs (a full collection due but without that
    much slack waits for a tick that leaves it). ``backlog``: how many thresholds' worth of
    young allocations may wait for slack before generation 0 is collected anyway (a loop
    that overruns every tick must not grow without bound).
    """

    name = "in_slack"

    def __init__(
        self,
        *,
        min_slack: float = 0.001,
        full_slack: float = 0.010,
        backlog: int = 20,
        collector: Collector | None = None,
    ) -> None:
        if not 0 <= min_slack <= full_slack:
            raise SettingError(f"need 0 <= min_slack <= full_slack, got {min_slack}, {full_slack}")
        if backlog < 1:
            raise SettingError(f"backlog must be >= 1, got {backlog}")
        self.min_slack = min_slack
        self.full_slack = full_slack
        self.backlog = backlog
        self.gc: Any = gc if collector is None else collector
        self._switched_off = False
        self.collections = [0, 0, 0]
        """Collections run in slack, by generation."""
        self.forced = 0
        """Young collections run without slack, because the backlog was reached."""

    def start(self) -> None:
        self.gc.collect()
        self.gc.freeze()

    def before_tick(self) -> None:
        if self.gc.isenabled():
            self.gc.disable()
            self._switched_off = True

    def after_tick(self, now: float, deadline: float) -> None:
        try:
            self._collect(deadline - now)
        finally:
            if self._switched_off:
                self.gc.enable()
                self._switched_off = False

    def _collect(self, slack: float) -> None:
        count = self.gc.get_count()
        threshold = self.gc.get_threshold()
        young = max(1, threshold[0])
        generation = self._due(count, threshold, slack)
        if generation is not None:
            self.gc.collect(generation)
            self.collections[generation] += 1
        elif count[0] >= self.backlog * young:
            self.gc.collect(0)
            self.forced += 1

    def _due(
        self, count: tuple[int, int, int], threshold: tuple[int, ...], slack: float
    ) -> int | None:
        """The oldest generation the interpreter would collect now that the slack allows."""
        if slack < self.min_slack or count[0] < max(1, threshold[0]):
            return None
        if count[1] >= threshold[1]:
            if count[2] >= threshold[2] and slack >= self.full_slack:
                return 2
            return 1
        return 0


__all__ = ["CollectAnywhere", "CollectInSlack", "CollectionPolicy", "Collector"]
