"""Hand-built views: the way to unit-test a cabin without a world or a loop.

``make_view`` puts the given readings, features and events into fresh sources,
assembles one working set for the given spec and returns the cabin's view, so
a test sees exactly what the cabin would see at that tick, missing items and
all. ``run_step`` also runs the cabin on it and returns its outbox.

``round_trip_state(cabin, fresh)`` takes what a cabin (or any component with
``get_state()``/``set_state(data)``) keeps through the checkpoint codec, as a checkpoint
would: written as data, through JSON, read back checked, and given to ``fresh``, a new
one built the way the run builds it; it returns ``fresh``. A test of a user cabin that
keeps state uses it to show the cabin goes on as if it had never stopped.

``ManualExecutor`` is a ``runtime.asynchronous.DecisionExecutor`` for tests of
asynchronous cabins: a decision is made when the test calls ``finish(cabin)``, so a test
decides exactly which apply phase it comes back by, without threads or sleeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.assembler import Assembler
from runtime.asynchronous import Task
from runtime.board import StateBoard
from runtime.cabin import Cabin, CabinFailure, Outbox
from runtime.cabin_map import CabinMap, Feature
from runtime.clock import SimClock
from runtime.errors import SettingError
from runtime.log import EventLog
from runtime.memory import WorkingMemory
from runtime.pack import CabinView
from runtime.scratchpad import Scratchpad
from runtime.spec import ContextSpec


def round_trip_state(
    component: Any, fresh: Any, *, records: Mapping[str, type] | None = None
) -> Any:
    """``fresh`` given ``component``'s state through the checkpoint codec (see the module
    docstring); ``records`` is the table of plain-data classes the state may hold (default:
    the runtime's readings, events, features and memory items)."""
    import json

    from runtime.snapshot import StateCodec, restore, state_classes

    table = dict(records) if records is not None else state_classes(_RUNTIME_RECORDS())
    writer = StateCodec(table)
    tree = json.loads(json.dumps(writer.dump(component), allow_nan=False))
    restore(fresh, tree, StateCodec(table), list(writer.blobs))
    return fresh


def _RUNTIME_RECORDS() -> list[type]:
    from runtime.board import Reading
    from runtime.log import Event
    from runtime.memory import Eviction, WorkItem
    from runtime.scratchpad import Note, PadEntry

    return [Reading, Event, Feature, WorkItem, Eviction, Note, PadEntry]


class Stale:
    """Marks a board value as written long ago with a short ttl, so the view sees it stale."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def make_view(
    spec: ContextSpec,
    *,
    board: Mapping[str, Any] | None = None,
    features: Iterable[Feature] = (),
    events: Iterable[
        tuple[str, Any] | tuple[str, Any, float] | tuple[str, Any, float, Iterable[str]]
    ] = (),
    now: float = 10.0,
    tick: int = 0,
    suppress: Iterable[str] = (),
    capacity: int = 64,
    notes: Mapping[str, Any] | None = None,
) -> CabinView:
    """The view ``spec``'s cabin would get at ``now`` from these sources.

    ``board`` maps keys to values (wrap a value in ``Stale`` to make it stale);
    ``events`` are ``(kind, data)``, ``(kind, data, stamp)`` or ``(kind, data, stamp, tags)``,
    stamped ``now`` when no stamp is given, in non-decreasing stamp order; ``notes`` maps
    note keys to values in the cabin's scratchpad (they show as ``note:<key>`` items, as a
    spec that weights them selects them).
    """
    clock = SimClock(start=0.0)
    state = StateBoard(clock=clock)
    cabin_map = CabinMap()
    log = EventLog(clock=clock)
    for key, value in (board or {}).items():
        if isinstance(value, Stale):
            state.write(key, value.value, ttl=1e-3, source="test")
        else:
            state.write(key, value, source="test")
    for feature in features:
        cabin_map.add(feature)
    for event in events:
        kind, data = event[0], event[1]
        stamp = float(event[2]) if len(event) > 2 else now
        tags: Iterable[str] = event[3] if len(event) > 3 else ()
        log.append(kind, data, stamp=stamp, tags=tags)
    pad = Scratchpad()
    for key, value in (notes or {}).items():
        pad.write(key, value)
    clock.sleep_until(now)
    assembler = Assembler(
        state,
        cabin_map,
        log,
        WorkingMemory(capacity=capacity),
        [spec],
        scratchpads={spec.name: pad},
    )
    return assembler.assemble(tick, now).view(spec.name, suppress=suppress)


def run_step(cabin: Cabin, view: CabinView) -> Outbox:
    """Run ``cabin`` once on ``view`` and return what it intends."""
    out = Outbox(cabin.name)
    cabin.step(view, out)
    return out


class _Held:
    __slots__ = ("result", "task", "tick")

    def __init__(self, task: Task, tick: int) -> None:
        self.task = task
        self.tick = tick
        self.result: Outbox | CabinFailure | None = None


class ManualExecutor:
    """Holds asynchronous decisions until the test finishes them.

    ``started`` lists ``(cabin, tick)`` of every decision started; ``pending`` the cabins
    with one in flight; ``finish(cabin)`` makes that cabin's decision now (its step runs on
    the view it was given), and the loop applies it at its next apply phase.
    """

    name = "manual"

    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []
        self._held: dict[str, _Held] = {}
        self.closed = False

    @property
    def pending(self) -> tuple[str, ...]:
        return tuple(n for n, h in self._held.items() if h.result is None)

    def start(self, task: Task, *, tick: int, period: float) -> _Held:
        held = _Held(task, tick)
        self._held[task.cabin.name] = held
        self.started.append((task.cabin.name, tick))
        return held

    def finish(self, cabin: str) -> Outbox | CabinFailure:
        held = self._held.get(cabin)
        if held is None or held.result is not None:
            raise SettingError(f"cabin {cabin!r} has no decision in flight")
        held.result = held.task.run()
        return held.result

    def poll(self, handle: _Held, *, tick: int) -> Outbox | CabinFailure | None:
        if handle.result is not None and self._held.get(handle.task.cabin.name) is handle:
            del self._held[handle.task.cabin.name]
        return handle.result

    def close(self) -> None:
        self.closed = True
