"""How the tick loop runs each kind of cabin: one runner per cabin, chosen by its timing.

A tick's decide phase (``TickLoop._decide``) goes through the runners twice, in cabin
order each time: first every runner has its cabin take its view and decide (or start
deciding, or go on deciding), then every runner collects what is to be applied of its
cabin's decisions (an outbox, or the failure that dropped it), what came back of an
asynchronous one included. The apply phase that follows (``TickLoop._apply``) applies
what was collected; no runner takes part in it.

- ``SyncRunner``: a synchronous cabin decides inside the tick, on this tick's view.
- ``AsyncRunner``: an asynchronous cabin gets a view only on the ticks it is idle at and
  decides off the tick thread (``AsyncDecisions``); what came back by this tick's
  collection, if anything, is handed over, or recorded and dropped as late.
- ``AtOnceRunner``: an asynchronous cabin whose decisions take no time (a simulated
  executor and no latency) decides at once, and its decision is back at this tick, as
  through the executor.

``TickDecisions`` is what one tick's runners share: the views handed out, the outboxes
to apply, the failures, the asynchronous decisions that came back and the notices of
their bookkeeping; what they read of the loop itself, the same at every tick, is its
``LoopContext``, made once per loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from runtime.cabin import Cabin, CabinFailure, Outbox, decide

if TYPE_CHECKING:
    from runtime.asynchronous import AsyncDecisions, Notices, Returned
    from runtime.clock import Clock
    from runtime.pack import CabinView, WorkingSet


@dataclass(frozen=True, slots=True)
class LoopContext:
    """What the runners read of their loop: the same at every tick, made once per loop."""

    hidden: Callable[[int, str], tuple[str, ...]]
    """The patterns hidden from a cabin's view at a tick."""
    pads: Mapping[str, Any]
    """The cabins with a scratchpad."""
    period: float
    """The loop's period, in seconds."""
    clock: Clock
    log: Any
    """The loop's logger: a failure is logged as it is taken."""


@dataclass(slots=True)
class TickDecisions:
    """One tick's decisions: what the cabins were shown, and what is to be applied."""

    tick: int
    now: float
    working_set: WorkingSet
    loop: LoopContext
    notices: Notices | None
    """What the asynchronous bookkeeping adds to the sources (None: no asynchronous cabin)."""
    views: list[CabinView] = field(default_factory=list)
    outboxes: list[Outbox] = field(default_factory=list)
    failures: list[CabinFailure] = field(default_factory=list)
    returned: list[Returned] = field(default_factory=list)

    def current(self, cabin: str) -> CabinView:
        """``cabin``'s view of this tick."""
        return self.working_set.view(cabin, suppress=self.loop.hidden(self.working_set.tick, cabin))

    def show(self, cabin: str) -> CabinView:
        """``cabin``'s view of this tick, handed to it (``TickResult.views``)."""
        view = self.current(cabin)
        self.views.append(view)
        return view

    def take(self, decision: Outbox | CabinFailure | None) -> None:
        """A decision to apply: an outbox, or the failure that dropped one (logged)."""
        if isinstance(decision, CabinFailure):
            self.failures.append(decision)
            self.loop.log.error(
                "cabin_failed",
                tick=self.tick,
                cabin=decision.cabin,
                error_type=decision.error_type,
                message=decision.message,
            )
        elif decision is not None:
            self.outboxes.append(decision)

    def back(self, back: Returned | None) -> None:
        """An asynchronous decision that came back (None: none did): recorded, and taken
        unless it was dropped as late."""
        if back is None:
            return
        self.returned.append(back)
        if not back.applied and back.failure is None:
            return  # dropped as late: recorded, not applied
        self.take(back.failure if back.failure is not None else back.outbox)


class Runner(Protocol):
    """Runs one cabin in the loop's decide phase: its decision, then what is to be applied."""

    cabin: Cabin

    def decide(self, decisions: TickDecisions) -> None:
        """Show the cabin its view and have it decide, if it may (the decide phase's first
        pass)."""
        ...

    def collect(self, decisions: TickDecisions) -> None:
        """Hand over what is to be applied of the cabin's decisions (the decide phase's
        second pass, after every cabin decided; the apply phase applies it)."""
        ...


class SyncRunner:
    """A synchronous cabin: it decides inside the tick, on this tick's view."""

    def __init__(self, cabin: Cabin) -> None:
        self.cabin = cabin
        self._decided: Outbox | CabinFailure | None = None  # from decide to collect

    _state_types: ClassVar[dict[str, Any]] = {"_decided": None}  # none between ticks

    def decide(self, decisions: TickDecisions) -> None:
        name = self.cabin.name
        view = decisions.show(name)
        self._decided = decide(self.cabin, view, has_pad=name in decisions.loop.pads)

    def collect(self, decisions: TickDecisions) -> None:
        decided, self._decided = self._decided, None
        decisions.take(decided)


class AsyncRunner:
    """An asynchronous cabin: it starts a decision on the ticks it is idle at, and what
    comes back is collected at the end of a later decide phase (applied at that tick)."""

    def __init__(self, cabin: Cabin, pending: AsyncDecisions) -> None:
        self.cabin = cabin
        self.pending = pending

    def decide(self, decisions: TickDecisions) -> None:
        name = self.cabin.name
        if self.pending.idle(name):
            view = decisions.show(name)
            self.pending.start(
                self.cabin,
                view,
                decisions.working_set,
                tick=decisions.tick,
                now=decisions.now,
                period=decisions.loop.period,
                has_pad=name in decisions.loop.pads,
            )

    def collect(self, decisions: TickDecisions) -> None:
        assert decisions.notices is not None
        back = self.pending.collect(
            self.cabin,
            tick=decisions.tick,
            now=decisions.loop.clock.now(),
            current=decisions.current,
            notices=decisions.notices,
        )
        decisions.back(back)


class AtOnceRunner:
    """An asynchronous cabin whose decisions take no time: each is made and back at the
    tick it was made on (``AsyncDecisions.decide_now``), nothing is ever in flight."""

    def __init__(self, cabin: Cabin, pending: AsyncDecisions) -> None:
        self.cabin = cabin
        self.pending = pending
        self._back: Returned | None = None  # from decide to collect

    _state_types: ClassVar[dict[str, Any]] = {"_back": None}  # none between ticks

    def decide(self, decisions: TickDecisions) -> None:
        name = self.cabin.name
        view = decisions.show(name)
        self._back = self.pending.decide_now(
            self.cabin, view, tick=decisions.tick, has_pad=name in decisions.loop.pads
        )

    def collect(self, decisions: TickDecisions) -> None:
        back, self._back = self._back, None
        decisions.back(back)


def runner_for(cabin: Cabin, pending: AsyncDecisions | None) -> Runner:
    """The runner of ``cabin``: asynchronous if ``pending`` keeps it, at once if its
    decisions take no time, else synchronous."""
    if pending is None or cabin.name not in pending:
        return SyncRunner(cabin)
    if pending.at_once(cabin.name):
        return AtOnceRunner(cabin, pending)
    return AsyncRunner(cabin, pending)
