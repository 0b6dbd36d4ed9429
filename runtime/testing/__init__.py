"""Hand-built views: the way to unit-test a cabin without a world or a loop.

``make_view`` puts the given readings, features and events into fresh sources,
assembles one working set for the given spec and returns the cabin's view, so
a test sees exactly what the cabin would see at that tick, missing items and
all; ``evicted=`` makes the view lose items to capacity as if memory were full
(``view.evicted``, a required pattern they leave unmatched missing for
``evicted``, the capacity alarm raised) without crafting a crowded world.
``run_step`` also runs the cabin on it and returns its outbox; ``refusals(spec, out)`` says
what of that outbox the loop would refuse under the spec's ``[writes]`` (``runtime.writes``).

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

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from runtime.assembler import Assembler
from runtime.asynchronous import Task
from runtime.board import StateBoard
from runtime.cabin import Cabin, CabinFailure, Outbox
from runtime.cabin_map import CabinMap, Feature
from runtime.clock import SimClock
from runtime.errors import SettingError
from runtime.freeze import FrozenDict
from runtime.log import EventLog
from runtime.memory import Eviction, WorkingMemory
from runtime.pack import CabinView, MissingReason, WorkingSet
from runtime.patterns import matches
from runtime.scratchpad import Scratchpad, memory_key
from runtime.spec import ContextSpec
from runtime.writes import Refusal, WriteGuard


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
    evicted: Iterable[str] = (),
) -> CabinView:
    """The view ``spec``'s cabin would get at ``now`` from these sources.

    ``board`` maps keys to values (wrap a value in ``Stale`` to make it stale);
    ``events`` are ``(kind, data)``, ``(kind, data, stamp)`` or ``(kind, data, stamp, tags)``,
    stamped ``now`` when no stamp is given, in non-decreasing stamp order; ``notes`` maps
    note keys to values in the cabin's scratchpad (they show as ``note:<key>`` items, as a
    spec that weights them selects them). ``evicted`` lists view keys (``battery``,
    ``event:action_done:1``, ``note:plan``, ...) the view would otherwise hold that it
    loses to capacity instead (a ``SettingError`` for one it would not hold).
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
    ws = assembler.assemble(tick, now)
    lost = tuple(evicted)
    if lost:
        ws = _lose(ws, spec.name, lost)
    return ws.view(spec.name, suppress=suppress)


def _lose(ws: WorkingSet, name: str, keys: tuple[str, ...]) -> WorkingSet:
    """``ws`` with ``name``'s view having lost ``keys`` to capacity at its freeze."""
    selection = ws.selections[name]
    unknown = [k for k in keys if k not in selection.items]
    if unknown:
        raise SettingError(
            f"cannot evict {', '.join(map(repr, unknown))}: the view would not hold "
            f"{'it' if len(unknown) == 1 else 'them'} (it holds {', '.join(selection.items)})"
        )
    gone = set(keys)
    items = {k: v for k, v in selection.items.items() if k not in gone}
    lost = dict(selection.evicted)
    for key in keys:
        item = selection.items[key]
        lost[key] = Eviction(ws.tick, key, item.importance, item.last_used, "capacity")
    missing: dict[str, MissingReason] = dict(selection.missing)
    for pattern in selection.required:
        if pattern not in missing and not any(matches(k, pattern) for k in items):
            missing[pattern] = "evicted"
    changed = dataclasses.replace(
        selection,
        items=FrozenDict(items),
        missing=FrozenDict(missing),
        nearby_map=tuple(f for f in selection.nearby_map if f.key not in gone),
        corridor_map=tuple(f for f in selection.corridor_map if f.key not in gone),
        recent_events=tuple(e for e in selection.recent_events if e.key not in gone),
        evicted=FrozenDict(lost),
    )
    in_memory = {memory_key(name, k): e for k, e in lost.items() if k in gone}
    held = {k: v for k, v in ws.items.items() if k not in in_memory}
    return dataclasses.replace(
        ws,
        items=FrozenDict(held),
        evictions=ws.evictions + tuple(dataclasses.replace(e, key=k) for k, e in in_memory.items()),
        selections=FrozenDict({**ws.selections, name: changed}),
        capacity_alarm=True,
    )


def run_step(cabin: Cabin, view: CabinView) -> Outbox:
    """Run ``cabin`` once on ``view`` and return what it intends."""
    out = Outbox(cabin.name)
    cabin.step(view, out)
    return out


def refusals(spec: ContextSpec, out: Outbox) -> list[Refusal]:
    """What the loop would refuse of ``out`` under ``spec``'s declared writes, in the order
    it applies them (writes and deletes, then events): empty when it would apply it all."""
    guard = WriteGuard({spec.name: spec.writes})
    found = [guard.refusal(spec.name, "delete" if w.delete else "write", w.key) for w in out.writes]
    found += [guard.refusal(spec.name, "emit", e.kind) for e in out.events]
    return [r for r in found if r is not None]


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
