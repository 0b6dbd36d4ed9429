"""The fixed-rate tick loop: freeze, decide, apply, advance.

Each tick the loop freezes one working set, runs every cabin in a fixed order
on its view of that pack, applies their outboxes in the same order (so effects
show from the next tick), and waits for the next deadline on a fixed grid. A
cabin that raises is isolated: its outbox is dropped, a ``cabin_failed`` event
records the exception, and the tick completes. With a ``WallClock``, a tick that
ends after the next deadline is an overrun, handled by an ``OverrunPolicy``.

An outbox changes only what its cabin's spec declares (``[writes]``, ``runtime.writes``): a
board write, delete or event outside it is refused and counted, with a ``write_refused``
event (tags ``cabin:<name>``, ``refused``) naming the cabin, the key or kind and why, and a
warning, once per episode (``RefusalWatch``: a cabin refused the same change outbox after
outbox is reported when it starts, and again only after an outbox without it);
``goal:*`` and ``safety:*`` keys change only through a cabin whose spec names them. Every
write and delete names its cabin as its source. ``TickStats.cabins`` counts what each
cabin did (``runtime.activity``): commands, events, reactions, writes, deletes, refusals
and failures.

Note changes in an outbox (``note``, ``clear_notes``, ``scope_notes``) are applied
to that cabin's scratchpad, in the order they were made. A cabin that declares
``uses_notes = True`` must have a scratchpad in the assembler (checked when the
loop is built); any other cabin that puts notes in its outbox without having one
fails like a cabin that raised: its outbox is dropped and a ``cabin_failed``
event (error type ``NoScratchpad``) says why.

Facts a cabin asks to remember (``out.remember``) go to the loop's ``long_term``
memory, if it has one, and each gets a ``remembered`` event (``stored``, and
``why``: ``stored``, ``duplicate``, ``recalled``, ``error`` or
``no_long_term_memory``), so that the cabin's step has no side effect of its own.

Capacity trouble is never silent. While the pinned items alone overflow working memory
the loop logs a ``capacity_alarm`` event when that starts and when it ends; and when a
spec loses an item it selected (``WorkingSet.pressure``), a ``capacity_pressure`` event
(tags ``capacity``, ``alarm``) once per episode per spec, naming what it lost and what to
tighten (``runtime.pressure``). ``TickStats.capacity_alarms`` counts the ticks with either
cause, ``TickStats.pressure`` the episodes, ticks and items lost per spec.

An asynchronous cabin (``runtime.asynchronous``) gets a view only on the ticks it is idle
at, decides off the tick thread, and its outbox is applied, in cabin order among the
others, at the apply phase its decision came back by; ``TickResult.returned`` tags it
with both ticks. The loop never waits for it. Each cabin has a runner of its kind
(``runtime.runners``: synchronous, asynchronous, or asynchronous with no latency); the
decide phase goes through the runners twice, in cabin order: each cabin decides, then
what each decided, or what came back, is collected for the apply phase.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
import structlog

from runtime.activity import NO_ACTIVITY, ActivityTally, CabinActivity
from runtime.assembler import Assembler
from runtime.asynchronous import (
    AsyncDecisions,
    DecisionExecutor,
    Notices,
    Returned,
    SimulatedExecutor,
    ThreadExecutor,
)
from runtime.cabin import Cabin, CabinFailure, Command, MemoryWrite, NoteOp, Outbox, timing_of
from runtime.clock import Clock, SimClock, WallClock
from runtime.collection import CollectAnywhere, CollectInSlack, CollectionPolicy
from runtime.episodes import EpisodePolicy
from runtime.errors import SettingError
from runtime.freeze import FrozenDict
from runtime.longterm import LongTermStore
from runtime.pack import CabinView, WorkingSet
from runtime.pressure import (
    NO_PRESSURE,
    PRESSURE_TAGS,
    PressureCount,
    PressureWatch,
    pressure_event,
)
from runtime.runners import LoopContext, TickDecisions, runner_for
from runtime.scratchpad import Scratchpad
from runtime.writes import REFUSED_KIND, Refusal, RefusalWatch, WriteGuard, refused_event

Suppressor = Callable[[int, str], Iterable[str]]

STATS_WINDOW = 100_000
"""Ticks whose compute times the percentiles of ``TickStats`` are taken over (the latest)."""

_log = structlog.get_logger("tickwork.loop")


class OverrunPolicy(Protocol):
    """Chooses the grid slot of the next tick after an overrun."""

    name: str

    def next_slot(self, slot: int, late_slot: int) -> int:
        """``slot`` is the slot just due; ``late_slot`` the slot the clock is already in."""
        ...


class SkipMissed:
    """Drop the ticks whose deadlines passed; resume on the next future deadline."""

    name = "skip"

    def next_slot(self, slot: int, late_slot: int) -> int:
        return max(slot, late_slot + 1)


class CatchUp:
    """Run the missed ticks back to back, without sleeping, until back on the grid."""

    name = "catch-up"

    def next_slot(self, slot: int, late_slot: int) -> int:
        return slot


@dataclass(frozen=True, slots=True)
class TickResult:
    """What one tick did."""

    tick: int
    time: float
    working_set: WorkingSet
    views: tuple[CabinView, ...]
    outboxes: tuple[Outbox, ...]
    commands: tuple[Command, ...]
    failures: tuple[CabinFailure, ...]
    compute_seconds: float
    overrun: bool
    returned: tuple[Returned, ...] = ()
    """The asynchronous decisions that came back at this tick (applied, or dropped as late),
    each with the tick it decided on."""


@dataclass(frozen=True, slots=True)
class TickStats:
    """Summary of the ticks run so far."""

    ticks: int
    compute_p50: float
    compute_p99: float
    compute_max: float
    overruns: int
    skipped_ticks: int
    evictions: int
    capacity_alarms: int
    cabin_failures: int
    late_decisions: int = 0
    """Asynchronous decisions that passed their ``max_age`` or ``deadline``."""
    dropped_decisions: int = 0
    """Of them, those dropped (not applied)."""
    pressure: FrozenDict[str, PressureCount] = NO_PRESSURE
    """Capacity pressure per spec that ever lost a selected item: its episodes (one
    ``capacity_pressure`` event each), the ticks at which it lost something and the items
    lost (summed over those ticks)."""
    cabins: FrozenDict[str, CabinActivity] = NO_ACTIVITY
    """What each cabin did, in the loop's order (``runtime.activity``)."""

    @property
    def writes_refused(self) -> int:
        """Writes, deletes and events refused, all cabins together (``runtime.writes``)."""
        return sum(a.writes_refused for a in self.cabins.values())

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in self.__slots__}
        out["pressure"] = {name: count.as_dict() for name, count in self.pressure.items()}
        out["cabins"] = {name: a.as_dict() for name, a in self.cabins.items()}
        return out


class TickHook(Protocol):
    """Something driven by the loop, such as a simulated world."""

    def before_freeze(self, tick: int, now: float) -> None:
        """Called before the working set of ``tick`` is frozen (e.g. sensors write)."""
        ...

    def after_apply(self, result: TickResult) -> None:
        """Called after the outboxes of a tick were applied (e.g. the world moves)."""
        ...


@dataclass(slots=True)
class _Counters:
    compute: deque[float] = field(default_factory=lambda: deque(maxlen=STATS_WINDOW))
    compute_max: float = 0.0
    overruns: int = 0
    skipped: int = 0
    evictions: int = 0
    capacity_alarms: int = 0
    failures: int = 0


class TickLoop:
    """Runs cabins at a fixed rate on one frozen working set per tick."""

    def __init__(
        self,
        assembler: Assembler,
        cabins: Sequence[Cabin],
        rate_hz: float,
        clock: Clock,
        *,
        overrun: OverrunPolicy | None = None,
        hooks: Sequence[TickHook] = (),
        suppress: Suppressor | None = None,
        timer: Callable[[], float] = time.perf_counter,
        long_term: LongTermStore | None = None,
        executor: DecisionExecutor | None = None,
        rng: np.random.Generator | None = None,
        pressure: EpisodePolicy | None = None,
        collection: CollectionPolicy | None = None,
    ) -> None:
        """``collection``: when the garbage collector runs (``runtime.collection``); by
        default only in the slack between ticks on a ``WallClock``, anywhere otherwise."""
        _check(assembler, cabins, rate_hz)
        self.assembler = assembler
        self.cabins = tuple(cabins)
        self.rate_hz = float(rate_hz)
        self.period = 1.0 / self.rate_hz
        self.clock = clock
        self.overrun: OverrunPolicy = overrun if overrun is not None else SkipMissed()
        self.hooks = tuple(hooks)
        self.suppress = suppress
        self.timer = timer
        self.long_term = long_term
        self.writes = WriteGuard({c.name: assembler.specs[c.name].writes for c in self.cabins})
        """Each cabin's declared writes: what its outboxes may change (``runtime.writes``)."""
        self.activity = ActivityTally(c.name for c in self.cabins)
        self.refusals = RefusalWatch()
        """Each cabin's refusals by episode: one ``write_refused`` event per episode."""
        self.asynchronous = _async_decisions(self.cabins, executor, clock, rng)
        self._runners = tuple(runner_for(c, self.asynchronous) for c in self.cabins)
        self.tick = 0
        self._start: float | None = None
        self._slot = 0
        self._counters = _Counters()
        self._capacity_alarm = False
        self.pressure = PressureWatch() if pressure is None else PressureWatch(pressure)
        """Capacity pressure per spec: one ``capacity_pressure`` event per episode (ended
        by the ``pressure`` policy, by default ``QuietSeconds(2.0)``), and the counts."""
        self._log = structlog.get_logger("tickwork.loop")
        self._context = self._loop_context()
        self.collection: CollectionPolicy = (
            collection
            if collection is not None
            else CollectInSlack()
            if isinstance(clock, WallClock)
            else CollectAnywhere()
        )
        self._collecting = False

    def _loop_context(self) -> LoopContext:
        """What the runners read of the loop at every tick."""
        return LoopContext(
            self._hidden, self.assembler.scratchpads, self.period, self.clock, self._log
        )

    _derived = ("_context", "rate_hz", "period", "writes", "collection", "_collecting")
    """Made from the loop's settings: a checkpoint does not hold them."""
    _state_types: ClassVar[dict[str, Any]] = {
        "tick": int,
        "_start": float | None,
        "_slot": int,
        "_counters": _Counters,
        "_capacity_alarm": bool,
    }

    def run(self, ticks: int) -> TickStats:
        """Run ``ticks`` ticks and return the statistics so far."""
        if ticks < 0:
            raise SettingError(f"ticks must be >= 0, got {ticks}")
        for _ in range(ticks):
            self.step()
        return self.stats()

    def close(self) -> None:
        """Stop the executor of asynchronous decisions (worker threads); safe to call twice."""
        if self.asynchronous is not None:
            self.asynchronous.close()

    def step(self) -> TickResult:
        """Run one tick: freeze, decide, apply, then wait for the next deadline."""
        clock = self.clock
        if not self._collecting:  # before the grid starts: a full collection takes time
            self.collection.start()
            self._collecting = True
        if self._start is None:
            self._start = clock.now()
        self.collection.before_tick()
        try:
            result, deadline = self._tick()
        finally:
            self.collection.after_tick(clock.now(), self._next_deadline())
        clock.sleep_until(deadline)
        return result

    def _next_deadline(self) -> float:
        assert self._start is not None
        return self._start + self._slot * self.period

    def _tick(self) -> tuple[TickResult, float]:
        """Freeze, decide and apply one tick; its result and the next deadline."""
        clock = self.clock
        tick = self.tick
        now = clock.now()
        for hook in self.hooks:
            hook.before_freeze(tick, now)
        started = self.timer()
        ws = self.assembler.assemble(tick, now)
        decided = self._decide(tick, now, ws)
        commands = self._apply(tick, ws, decided.outboxes, decided.failures, decided.notices)
        compute = self.timer() - started
        deadline, late = self._advance(tick, compute, ws, decided.failures)
        result = TickResult(
            tick,
            now,
            ws,
            tuple(decided.views),
            tuple(decided.outboxes),
            commands,
            tuple(decided.failures),
            compute,
            late,
            tuple(decided.returned),
        )
        for hook in self.hooks:
            hook.after_apply(result)
        return result, deadline

    def _decide(self, tick: int, now: float, ws: WorkingSet) -> TickDecisions:
        """Every cabin decides on its view of ``ws`` (or starts deciding, or is still at
        it); then, in cabin order, what each decided and what came back is collected into
        the outboxes to apply and the failures (``_apply`` applies them)."""
        notices = None if self.asynchronous is None else Notices()
        decided = TickDecisions(tick, now, ws, self._context, notices)
        for runner in self._runners:
            runner.decide(decided)
        for runner in self._runners:
            runner.collect(decided)
        return decided

    def _advance(
        self, tick: int, compute: float, ws: WorkingSet, failures: list[CabinFailure]
    ) -> tuple[float, bool]:
        """Move to the next grid slot (past the missed ones, after an overrun, as the
        overrun policy says) and count the tick; the next deadline, and whether this tick
        overran."""
        clock = self.clock
        assert self._start is not None
        self.tick += 1
        self._slot += 1
        deadline = self._start + self._slot * self.period
        late = clock.now() > deadline
        if late:
            late_slot = math.floor((clock.now() - self._start) / self.period)
            slot = self.overrun.next_slot(self._slot, late_slot)
            self._counters.overruns += 1
            self._counters.skipped += slot - self._slot
            self._log.warning(
                "tick_overrun",
                tick=tick,
                compute_s=compute,
                policy=self.overrun.name,
                skipped=slot - self._slot,
            )
            self.assembler.log.append(
                "tick_overrun",
                {"tick": tick, "compute_s": compute, "skipped": slot - self._slot},
                tags=("alarm",),
            )
            self._slot = slot
            deadline = self._start + self._slot * self.period
        c = self._counters
        c.compute.append(compute)
        c.compute_max = max(c.compute_max, compute)
        c.evictions += len(ws.evictions)
        c.capacity_alarms += int(ws.capacity_alarm)
        c.failures += len(failures)
        return deadline, late

    def _hidden(self, tick: int, cabin: str) -> tuple[str, ...]:
        return tuple(self.suppress(tick, cabin)) if self.suppress else ()

    def _apply(
        self,
        tick: int,
        ws: WorkingSet,
        outboxes: list[Outbox],
        failures: list[CabinFailure],
        notices: Notices | None,
    ) -> tuple[Command, ...]:
        """Apply the outboxes in cabin order (one that cannot be applied fails its cabin),
        log the failures, apply the bookkeeping's notices; the commands for the world."""
        board, log = self.assembler.board, self.assembler.log
        commands: list[Command] = []
        with board.lock, log.lock:
            for out in outboxes:
                try:
                    self._apply_outbox(tick, ws.time, out)
                except Exception as exc:  # the outbox checks its contents; this is a backstop
                    failures.append(
                        CabinFailure(
                            out.cabin, type(exc).__name__, f"its outbox could not be applied: {exc}"
                        )
                    )
                    self._log.error(
                        "outbox_failed",
                        tick=tick,
                        cabin=out.cabin,
                        error_type=type(exc).__name__,
                        message=str(exc),
                    )
                    continue
                commands.extend(out.commands)
            for f in failures:
                self.activity.add(f.cabin, failures=1)
                log.append(
                    "cabin_failed",
                    {
                        "cabin": f.cabin,
                        "tick": tick,
                        "error_type": f.error_type,
                        "message": f.message,
                    },
                    tags=(f"cabin:{f.cabin}", "failure"),
                )
            self._bookkeep(tick, ws, notices)
        return tuple(commands)

    def _bookkeep(self, tick: int, ws: WorkingSet, notices: Notices | None) -> None:
        """Apply what the asynchronous bookkeeping noticed (``decision_late`` events, the
        ``late:<cabin>`` keys), log the start or end of pinned items overflowing memory
        (``capacity_alarm``) and each spec's episode of capacity pressure
        (``capacity_pressure``)."""
        board, log = self.assembler.board, self.assembler.log
        if notices is not None:
            for kind, data in notices.events:
                log.append(kind, data, tags=(f"cabin:{data['cabin']}", "late"))
            for key, value in notices.board:
                if value is None:
                    board.delete(key, source="loop")
                else:
                    board.write(key, value, source="loop")
        if ws.overflow != self._capacity_alarm:  # log when it starts and ends
            self._capacity_alarm = ws.overflow
            memory = self.assembler.memory
            log.append(
                "capacity_alarm",
                {
                    "tick": tick,
                    "held": len(memory),
                    "pinned": memory.pinned_count,
                    "capacity": memory.capacity,
                    "phase": "start" if ws.overflow else "end",
                },
                tags=("alarm",),
            )
        if ws.capacity_alarm:
            for name in self.pressure.observe(tick, ws.time, ws):
                data = pressure_event(tick, ws, name, self.assembler.specs)
                log.append("capacity_pressure", data, tags=PRESSURE_TAGS)
                self._log.warning(
                    "capacity_pressure",
                    tick=tick,
                    spec=name,
                    count=data["count"],
                    lost=data["lost"][:4],
                    capacity=data["capacity"],
                )
        elif self.pressure.active:
            self.pressure.observe(tick, ws.time, ws)

    def _apply_outbox(self, tick: int, time: float, out: Outbox) -> None:
        """Apply one outbox: its notes, then what its spec's ``[writes]`` allows of its
        writes, deletes and events (the rest refused, each counted, with a
        ``write_refused`` event when its episode starts), its reactions and its memory
        writes; count what the cabin did."""
        board, log, guard = self.assembler.board, self.assembler.log, self.writes
        cabin = out.cabin
        if out.notes:
            _apply_notes(self.assembler.scratchpads[cabin], out.notes, tick)
        tag = f"cabin:{cabin}"
        refused: list[Refusal] = []
        deletes = removed = 0
        for w in out.writes:
            no = guard.refusal(cabin, "delete" if w.delete else "write", w.key)
            if no is not None:
                refused.append(no)
            elif w.delete:
                deletes += 1
                removed += board.delete(w.key, source=cabin)
            else:
                board.write(w.key, w.value, ttl=w.ttl, source=cabin)
        events = 0
        for e in out.events:
            no = guard.refusal(cabin, "emit", e.kind)
            if no is not None:
                refused.append(no)
                continue
            log.append(e.kind, e.data, tags=e.tags | {tag})
            events += 1
        for r in out.reactions:
            log.append(
                "reaction",
                {"cabin": r.cabin, "pattern": r.pattern, "reaction": r.reaction, **r.detail},
                tags=(tag, "reaction"),
            )
        for m in out.memories:
            log.append("remembered", remember(self.long_term, m), tags=(tag, "memory"))
        for no in self.refusals.observe(cabin, refused, tick=tick, time=time):
            log.append(REFUSED_KIND, refused_event(no, tick), tags=(tag, "refused"))
            self._log.warning(
                "write_refused", tick=tick, cabin=cabin, op=no.op, name=no.name, reason=no.reason
            )
        self.activity.add(
            cabin,
            commands=len(out.commands),
            events=events,
            reactions=len(out.reactions),
            writes=len(out.writes) - deletes - sum(n.op != "emit" for n in refused),
            deletes=removed,
            writes_refused=len(refused),
        )

    def stats(self) -> TickStats:
        c = self._counters
        compute = np.asarray(c.compute) if c.compute else np.zeros(1)
        return TickStats(
            ticks=self.tick,
            compute_p50=float(np.percentile(compute, 50)),
            compute_p99=float(np.percentile(compute, 99)),
            compute_max=c.compute_max,
            overruns=c.overruns,
            skipped_ticks=c.skipped,
            evictions=c.evictions,
            capacity_alarms=c.capacity_alarms,
            cabin_failures=c.failures,
            late_decisions=0 if self.asynchronous is None else self.asynchronous.late_decisions,
            dropped_decisions=0
            if self.asynchronous is None
            else self.asynchronous.dropped_decisions,
            pressure=self.pressure.counts(),
            cabins=self.activity.snapshot(),
        )


def remember(long_term: LongTermStore | None, write: MemoryWrite) -> dict[str, Any]:
    """Keep ``write`` in ``long_term``; the ``remembered`` event's data: the fact's metadata,
    its content, whether it was ``stored`` and ``why`` (not)."""
    stored, why = False, "no_long_term_memory"
    if long_term is not None:
        try:
            result = long_term.remember(
                write.content,
                scope=dict(write.scope),
                metadata=dict(write.metadata),
                stamp=write.stamp,
            )
            stored, why = result.stored, str(result.reason)
        except Exception as exc:
            # a locked or broken store, or metadata it cannot keep, must not stop the robot
            _log.warning(
                "remember_failed",
                error_type=type(exc).__name__,
                error=str(exc),
                content=write.content,
            )
            why = "error"
    return {**write.metadata, "content": write.content, "stored": stored, "why": why}


def _apply_notes(pad: Scratchpad, ops: Sequence[NoteOp], tick: int) -> None:
    with pad.lock:
        for op in ops:
            if op.op == "write" and op.key is not None:
                pad.write(op.key, op.value, op.description, tick=tick)
            elif op.op == "clear":
                pad.clear(tick=tick, reason="cabin")
            elif op.op == "scope":
                pad.scope(op.task, tick=tick)


def _check(assembler: Assembler, cabins: Sequence[Cabin], rate_hz: float) -> None:
    """Refuse a rate that is not a positive number, cabins that share a name or have no
    spec, and cabins that use notes but have no scratchpad."""
    if not rate_hz > 0 or not math.isfinite(rate_hz):
        raise SettingError(f"rate_hz must be a positive number, got {rate_hz!r}")
    names = [c.name for c in cabins]
    if len(set(names)) != len(names):
        raise SettingError(f"cabin names must be unique, got {names}")
    unknown = [n for n in names if n not in assembler.specs]
    if unknown:
        raise SettingError(
            f"cabins {unknown} have no spec in the assembler (specs: {sorted(assembler.specs)})"
        )
    pads = assembler.scratchpads
    padless = [
        n
        for n, c in zip(names, cabins, strict=True)
        if getattr(c, "uses_notes", False) is True and n not in pads
    ]
    if padless:
        raise SettingError(
            f"cabins {padless} use notes (uses_notes=True) but the assembler has no "
            "scratchpad for them; pass Assembler(..., scratchpads={name: Scratchpad()})"
        )


def _async_decisions(
    cabins: Sequence[Cabin],
    executor: DecisionExecutor | None,
    clock: Clock,
    rng: np.random.Generator | None,
) -> AsyncDecisions | None:
    """The bookkeeping of the asynchronous cabins among ``cabins`` (None if there are
    none), deciding on ``executor``: by default simulated on a ``SimClock`` (latencies drawn
    with ``rng``), else on threads."""
    timings = {c.name: timing_of(c) for c in cabins}
    asynchronous = {name: t for name, t in timings.items() if t.is_async}
    if not asynchronous:
        return None
    if executor is None:
        executor = SimulatedExecutor(rng) if isinstance(clock, SimClock) else ThreadExecutor()
    return AsyncDecisions(asynchronous, executor)
