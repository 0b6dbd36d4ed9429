"""Asynchronous cabins: slow deciders that never stall the loop.

A cabin whose timing (``runtime.timing.Timing``, from its spec's ``[timing]`` table, from
its own ``timing`` attribute, or from the ``Asynchronous`` wrapper) is ``async`` decides off
the tick thread. On a tick when it is idle the loop hands it that tick's frozen view and goes
on; its outbox comes back at a later apply phase, tagged with the tick it decided on and the
tick it is applied at. At most one decision of a cabin is in flight; while one is, the cabin
gets no new view.

Where the decision runs is a ``DecisionExecutor``:

- ``SimulatedExecutor`` (the default on a ``SimClock``) decides at once and hands the outbox
  back after the cabin's simulated latency (declared, or drawn from the loop's seeded
  generator), counted in ticks, so a run, its replay, a checkpoint and a resumed run agree
  tick for tick. A checkpoint holds its decisions in flight as data.
- ``ThreadExecutor`` (the default on a ``WallClock``) runs decisions on worker threads and
  the loop picks up those that are done at each apply phase.
- ``runtime.testing.ManualExecutor`` finishes decisions when a test says so.

A decision that comes back more than ``max_age`` ticks after the tick it decided on, or more
than ``deadline`` seconds after it started, is late. The cabin's ``LatePolicy``
(``runtime.cabin.late_policy``: ``DropLate``, or ``RecheckLate``: apply it only if the
cabin's ``recheck`` approves, by default if the cabin's view of the tick it came back at
holds the same items and missing items) says what happens;
a ``decision_late`` event says what did. While a decision is overdue the cabin is *late*,
an explicit absence on the board: ``late:<cabin>`` holds since when and why, and is deleted
once a decision of the cabin is applied again. A decision still in flight when it passes a
limit gets a ``decision_late`` event of phase ``overdue`` at once; when it comes back, one of
phase ``dropped`` or ``applied``.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Protocol

import numpy as np
import structlog

from runtime.cabin import (
    LATE_PREFIX,
    Cabin,
    CabinFailure,
    CabinWrapper,
    LatePolicy,
    Outbox,
    decide,
    late_policy,
    latency_share,
    timing_of,
)
from runtime.errors import SettingError, TickworkError
from runtime.timing import Timing

if TYPE_CHECKING:
    from runtime.pack import CabinView, WorkingSet

__all__ = [
    "Asynchronous",
    "DecisionExecutor",
    "Returned",
    "SimulatedExecutor",
    "Task",
    "ThreadExecutor",
]

_TOLERANCE = 1e-9  # seconds: a deadline met to the last float digit is met

Status = Literal["on_time", "rechecked", "dropped", "failed"]

_log = structlog.get_logger("tickwork.asynchronous")


# -- the runtime's wrapper --------------------------------------------------------------------


class Asynchronous(CabinWrapper):
    """Runs ``inner`` asynchronously, whatever its spec says: the runtime's wrapper.

    ``timing`` defaults to the inner cabin's with ``mode = "async"``; keyword settings
    (``deadline``, ``max_age``, ``on_late``, ``latency``, ``latency_max``) change it.
    A wrapper given a ``timing`` or an ``on_late`` has its timing's ``on_late`` decide
    what happens to a late decision; otherwise the inner cabin's own ``late_policy``
    does, if it has one. Everything else is the inner cabin's (``CabinWrapper``).
    """

    def __init__(self, inner: Cabin, *, timing: Timing | None = None, **settings: Any) -> None:
        base = timing if timing is not None else timing_of(inner)
        try:
            own = Timing.model_validate(
                {**base.model_dump(exclude_unset=True), **settings, "mode": "async"}
            )
        except ValueError as exc:
            raise SettingError(f"bad timing for cabin {inner.name!r}: {exc}") from None
        super().__init__(inner)
        self._timing = own
        self._on_late_given = timing is not None or "on_late" in settings

    @property
    def timing(self) -> Timing:
        """The inner cabin's timing made asynchronous, with the wrapper's settings."""
        return self._timing

    @property
    def late_policy(self) -> LatePolicy | None:
        """None when the wrapper was given a ``timing`` or an ``on_late`` (its timing's
        ``on_late`` decides), else the inner cabin's own late policy, if it has one."""
        return None if self._on_late_given else super().late_policy


# -- where decisions run ---------------------------------------------------------------------


class Task(NamedTuple):
    """One decision to make: ``cabin`` on ``view``."""

    cabin: Cabin
    view: CabinView
    timing: Timing
    has_pad: bool

    def run(self) -> Outbox | CabinFailure:
        return decide(self.cabin, self.view, has_pad=self.has_pad)


class DecisionExecutor(Protocol):
    """Where asynchronous decisions run."""

    name: str

    def start(self, task: Task, *, tick: int, period: float) -> Any:
        """Start deciding ``task`` (at ``tick`` of a loop of ``period`` seconds); a handle."""
        ...

    def poll(self, handle: Any, *, tick: int) -> Outbox | CabinFailure | None:
        """The decision's result if it is done by the apply phase of ``tick``, else None."""
        ...

    def close(self) -> None:
        """Stop taking decisions; those in flight are abandoned."""
        ...


class _Simulated(NamedTuple):
    result: Outbox | CabinFailure
    ready_tick: int


class SimulatedExecutor:
    """Decides at once, and hands the result back after the simulated latency (in ticks).

    The latency is the timing's ``latency``, or drawn uniformly from ``[latency,
    latency_max]`` with ``rng`` (drawn for every decision, so the draws do not depend on
    what the cabin decided), times the cabin's ``latency_share`` for the decision (an LLM
    cabin that asked its model nothing takes no time); a latency of ``L`` seconds at a
    period ``p`` comes back at the apply phase ``ceil(L / p)`` ticks later (0: the same
    tick, as a synchronous cabin).
    """

    name = "simulated"
    _state_types: ClassVar[dict[str, Any]] = {}  # its generator is the simulation's

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def latency(self, timing: Timing) -> float:
        if timing.latency_max is None or timing.latency_max == timing.latency:
            return timing.latency
        return float(self.rng.uniform(timing.latency, timing.latency_max))

    def start(self, task: Task, *, tick: int, period: float) -> _Simulated:
        seconds = self.latency(task.timing)
        result = task.run()
        if seconds > 0:
            seconds *= latency_share(task.cabin)
        ticks = max(0, math.ceil(seconds / period - _TOLERANCE)) if seconds > 0 else 0
        return _Simulated(result, tick + ticks)

    def poll(self, handle: _Simulated, *, tick: int) -> Outbox | CabinFailure | None:
        return handle.result if tick >= handle.ready_tick else None

    def close(self) -> None:
        """Nothing runs in the background."""


class ThreadExecutor:
    """Runs decisions on a pool of worker threads (one per asynchronous cabin is enough:
    each has at most one decision in flight)."""

    name = "threads"

    def __init__(self, max_workers: int = 4) -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise SettingError(f"max_workers must be an int >= 1, got {max_workers!r}")
        self.max_workers = max_workers
        self._pool: cf.ThreadPoolExecutor | None = None

    def start(self, task: Task, *, tick: int, period: float) -> cf.Future[Outbox | CabinFailure]:
        if self._pool is None:
            self._pool = cf.ThreadPoolExecutor(
                max_workers=self.max_workers, thread_name_prefix="tickwork-decide"
            )
        return self._pool.submit(task.run)

    def poll(
        self, handle: cf.Future[Outbox | CabinFailure], *, tick: int
    ) -> Outbox | CabinFailure | None:
        return handle.result() if handle.done() else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def get_state(self) -> Any:
        """Refused: a checkpoint cannot hold decisions running on threads."""
        raise TickworkError(
            "a ThreadExecutor cannot be checkpointed: its decisions run on threads "
            "(checkpoint runs on a simulated clock)"
        )

    def set_state(self, data: Any) -> None:
        raise TickworkError("a ThreadExecutor cannot be restored from a checkpoint")


# -- the loop's bookkeeping ------------------------------------------------------------------

_OUTBOX_LISTS = ("writes", "events", "commands", "reactions", "notes", "memories")


def _outbox_state(outbox: Outbox) -> dict[str, Any]:
    return {"cabin": outbox.cabin, **{k: list(getattr(outbox, k)) for k in _OUTBOX_LISTS}}


def _outbox_of(data: Any, cabin: str, where: str) -> Outbox:
    """An outbox of ``cabin`` from what ``_outbox_state`` gave, each entry checked to be the
    record its list holds."""
    from runtime.cabin import BoardWrite, Command, EmittedEvent, MemoryWrite, NoteOp, Reaction
    from runtime.snapshot import StateError, keys_of, list_of, record_of

    data = keys_of(data, ("cabin", *_OUTBOX_LISTS), where)
    if data["cabin"] != cabin:
        raise StateError(f"{where}.cabin: {data['cabin']!r}, not {cabin!r}")
    kinds = (BoardWrite, EmittedEvent, Command, Reaction, NoteOp, MemoryWrite)
    out = Outbox(cabin)
    for name, kind in zip(_OUTBOX_LISTS, kinds, strict=True):
        entries = list_of(data[name], f"{where}.{name}")
        for i, entry in enumerate(entries):
            record_of(entry, kind, f"{where}.{name}[{i}]")
        getattr(out, name).extend(entries)
    return out


class Returned(NamedTuple):
    """An asynchronous decision that came back at an apply phase, and what became of it:
    applied on time, applied after a re-check, dropped as late, or failed."""

    cabin: str
    decided_tick: int
    applied_tick: int
    age_s: float
    status: Status
    outbox: Outbox | None
    failure: CabinFailure | None = None
    late: str | None = None
    """The limit a late decision passed: ``max_age`` or ``deadline``."""

    @property
    def applied(self) -> bool:
        return self.status in ("on_time", "rechecked")


@dataclass(slots=True)
class _Job:
    decided_tick: int
    started: float
    working_set: WorkingSet  # the view is made again from it
    suppressed: tuple[str, ...]
    handle: Any
    overdue: bool = False

    def view(self, cabin: str) -> CabinView:
        return self.working_set.view(cabin, suppress=self.suppressed)


@dataclass(slots=True)
class _Slot:
    timing: Timing
    job: _Job | None = None
    late_since: int | None = None  # the tick late:<cabin> went on the board


@dataclass(slots=True)
class Notices:
    """What the bookkeeping of one tick's collection adds to the sources, applied at that
    tick's apply phase: events and board changes (a value, or None to delete the key)."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    board: list[tuple[str, Mapping[str, Any] | None]] = field(default_factory=list)


class AsyncDecisions:
    """The asynchronous cabins of one loop: which is idle, what is in flight, what is late."""

    def __init__(self, timings: Mapping[str, Timing], executor: DecisionExecutor) -> None:
        self.executor = executor
        self._slots = {name: _Slot(t) for name, t in timings.items()}
        self.late_decisions = 0
        self.dropped_decisions = 0

    def __contains__(self, cabin: object) -> bool:
        return cabin in self._slots

    def get_state(self) -> dict[str, Any]:
        """The decisions in flight and the counters as plain data (for a checkpoint). Only a
        ``SimulatedExecutor``'s decisions can be held: a thread's cannot."""
        if not isinstance(self.executor, SimulatedExecutor):
            self.executor.get_state()  # type: ignore[attr-defined]  # refuses, saying why
        slots: dict[str, Any] = {}
        for name, slot in self._slots.items():
            job = slot.job
            held: dict[str, Any] | None = None
            if job is not None:
                handle: _Simulated = job.handle
                result = handle.result
                held = {
                    "decided_tick": job.decided_tick,
                    "started": job.started,
                    "working_set": job.working_set,
                    "suppressed": job.suppressed,
                    "overdue": job.overdue,
                    "ready_tick": handle.ready_tick,
                    "failure": result if isinstance(result, CabinFailure) else None,
                    "outbox": None if isinstance(result, CabinFailure) else _outbox_state(result),
                }
            slots[name] = {"late_since": slot.late_since, "job": held}
        return {
            "late_decisions": self.late_decisions,
            "dropped_decisions": self.dropped_decisions,
            "slots": slots,
        }

    def set_state(self, data: Any) -> None:
        """Take back what ``get_state`` gave, checked: the same asynchronous cabins, each
        decision in flight a working set of the past and an outbox of that cabin."""
        from runtime.pack import WorkingSet
        from runtime.snapshot import StateError, keys_of, number, record_of, whole

        data = keys_of(data, ("late_decisions", "dropped_decisions", "slots"), "decisions")
        slots = data["slots"]
        if not isinstance(slots, dict) or set(slots) != set(self._slots):
            raise StateError(f"decisions.slots: not the asynchronous cabins {sorted(self._slots)}")
        restored: dict[str, tuple[int | None, _Job | None]] = {}
        for name, given in slots.items():
            where = f"decisions.slots[{name!r}]"
            given = keys_of(given, ("late_since", "job"), where)
            late = given["late_since"]
            late = None if late is None else whole(late, f"{where}.late_since")
            job = given["job"]
            if job is not None:
                names = (
                    "decided_tick", "started", "working_set", "suppressed", "overdue",
                    "ready_tick", "failure", "outbox",
                )  # fmt: skip
                job = keys_of(job, names, f"{where}.job")
                decided = whole(job["decided_tick"], f"{where}.job.decided_tick")
                ws = record_of(job["working_set"], WorkingSet, f"{where}.job.working_set")
                if name not in ws.selections or ws.tick != decided:
                    raise StateError(f"{where}.job.working_set: not one {name!r} decided on")
                suppressed = job["suppressed"]
                if not (type(suppressed) is tuple and all(type(p) is str for p in suppressed)):
                    raise StateError(f"{where}.job.suppressed: not a tuple of patterns")
                if type(job["overdue"]) is not bool:
                    raise StateError(f"{where}.job.overdue: not true or false")
                failure = job["failure"]
                if failure is not None:
                    result: Outbox | CabinFailure = record_of(
                        failure, CabinFailure, f"{where}.job.failure"
                    )
                else:
                    result = _outbox_of(job["outbox"], name, f"{where}.job.outbox")
                ready = whole(job["ready_tick"], f"{where}.job.ready_tick", low=decided)
                started = number(job["started"], f"{where}.job.started")
                job = _Job(
                    decided, started, ws, suppressed, _Simulated(result, ready), job["overdue"]
                )
            restored[name] = (late, job)
        self.late_decisions = whole(data["late_decisions"], "decisions.late_decisions")
        self.dropped_decisions = whole(data["dropped_decisions"], "decisions.dropped_decisions")
        for name, (late, job) in restored.items():
            self._slots[name].late_since = late
            self._slots[name].job = job

    def idle(self, cabin: str) -> bool:
        return self._slots[cabin].job is None

    def at_once(self, cabin: str) -> bool:
        """Whether every decision of ``cabin`` comes back at the tick it was made on: a
        simulated executor and a latency of zero (then ``decide_now`` stands for
        ``start`` and ``collect``, and nothing is ever in flight)."""
        timing = self._slots[cabin].timing
        return (
            isinstance(self.executor, SimulatedExecutor)
            and timing.latency == 0
            and not timing.latency_max
        )

    def decide_now(self, cabin: Cabin, view: CabinView, *, tick: int, has_pad: bool) -> Returned:
        """The decision of a cabin whose decisions take no time (``at_once``), made and back
        at this tick: on time, as it would be from ``start`` and ``collect``."""
        result = decide(cabin, view, has_pad=has_pad)
        if isinstance(result, CabinFailure):
            return Returned(cabin.name, tick, tick, 0.0, "failed", None, result)
        return Returned(cabin.name, tick, tick, 0.0, "on_time", result)

    def in_flight(self) -> dict[str, int]:
        """Cabin → the tick its decision in flight was decided on."""
        return {n: s.job.decided_tick for n, s in self._slots.items() if s.job is not None}

    def start(
        self,
        cabin: Cabin,
        view: CabinView,
        ws: WorkingSet,
        *,
        tick: int,
        now: float,
        period: float,
        has_pad: bool,
    ) -> None:
        slot = self._slots[cabin.name]
        handle = self.executor.start(
            Task(cabin, view, slot.timing, has_pad), tick=tick, period=period
        )
        slot.job = _Job(tick, now, ws, view.suppressed, handle)

    def collect(
        self,
        cabin: Cabin,
        *,
        tick: int,
        now: float,
        current: Callable[[str], CabinView],
        notices: Notices,
    ) -> Returned | None:
        """The decision of ``cabin`` that came back by now, if one did (the runners collect
        at the end of a tick's decide phase, for its apply phase); late decisions are
        judged by the cabin's late policy (``current(name)`` gives its view of this tick
        for a re-check)."""
        name = cabin.name
        slot = self._slots[name]
        job = slot.job
        if job is None:
            return None
        result = self.executor.poll(job.handle, tick=tick)
        age_s = now - job.started
        timing = slot.timing
        limit = (
            None
            if timing.max_age is None and timing.deadline is None
            else _limit(timing, tick - job.decided_tick, age_s)
        )
        if result is None:
            if limit is not None and not job.overdue:
                job.overdue = True
                self.late_decisions += 1
                event = _detail(name, job, tick, age_s, limit)
                notices.events.append(("decision_late", {**event, "phase": "overdue"}))
                self._mark_late(slot, name, job, tick, limit, notices)
            return None
        slot.job = None
        if isinstance(result, CabinFailure):
            return Returned(name, job.decided_tick, tick, age_s, "failed", None, result, limit)
        if limit is None:
            if slot.late_since is not None:
                self._clear_late(slot, name, notices)
            return Returned(name, job.decided_tick, tick, age_s, "on_time", result)
        if not job.overdue:
            self.late_decisions += 1
        policy = late_policy(cabin)
        try:
            kept = policy.keep(cabin, job.view(name), current(name), result)
        except Exception as exc:  # a re-check that raises keeps nothing
            _log.error("recheck_failed", cabin=name, error_type=type(exc).__name__, error=str(exc))
            kept = False
        event = _detail(name, job, tick, age_s, limit)
        event |= {"policy": policy.name, "phase": "applied" if kept else "dropped"}
        notices.events.append(("decision_late", event))
        if kept:
            self._clear_late(slot, name, notices)
            return Returned(name, job.decided_tick, tick, age_s, "rechecked", result, None, limit)
        self.dropped_decisions += 1
        self._mark_late(slot, name, job, tick, limit, notices)
        return Returned(name, job.decided_tick, tick, age_s, "dropped", result, None, limit)

    @staticmethod
    def _mark_late(
        slot: _Slot, name: str, job: _Job, tick: int, limit: str, notices: Notices
    ) -> None:
        if slot.late_since is not None:
            return
        slot.late_since = tick
        notices.board.append(
            (
                LATE_PREFIX + name,
                {
                    "cabin": name,
                    "since_tick": tick,
                    "decided_tick": job.decided_tick,
                    "limit": limit,
                },
            )
        )

    @staticmethod
    def _clear_late(slot: _Slot, name: str, notices: Notices) -> None:
        if slot.late_since is not None:
            slot.late_since = None
            notices.board.append((LATE_PREFIX + name, None))

    def close(self) -> None:
        self.executor.close()


def _detail(name: str, job: _Job, tick: int, age_s: float, limit: str) -> dict[str, Any]:
    """What a ``decision_late`` event says of the decision."""
    return {
        "cabin": name,
        "decided_tick": job.decided_tick,
        "tick": tick,
        "age_ticks": tick - job.decided_tick,
        "age_s": age_s,
        "limit": limit,
    }


def _limit(timing: Timing, age_ticks: int, age_s: float) -> str | None:
    """The limit a decision of this age has passed, if any."""
    if timing.max_age is not None and age_ticks > timing.max_age:
        return "max_age"
    if timing.deadline is not None and age_s > timing.deadline + _TOLERANCE:
        return "deadline"
    return None
