"""The assembly package's delta path: carried from tick to tick, it freezes exactly what the
from-scratch path does."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Point, box

from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    Feature,
    FifoEviction,
    Scratchpad,
    SimClock,
    StateBoard,
    ValueEviction,
    WorkingMemory,
    WorkItem,
)
from tests.support.assembly_world import EXECUTOR, PLANNER, World

# -- the delta path freezes exactly what the from-scratch path does -------------------------


class _FromScratch(ValueEviction):
    """ValueEviction under another name: memory then takes the assembler's from-scratch
    path (upsert every offer, evict with the policy), the reference the delta path meets."""


_D_KEYS = (
    "pose",
    "route",
    "velocity",
    "battery",
    "goal:deliver:a",
    "goal:charge:b",
    "goal:inspect:c",
    "safety:zone:1",
    "constraint:speed:x",
    "constraint:speed:y",
    "noise:1",
    "noise:2",
)
_D_KINDS = ("shelf", "dock", "obstacle", "charger")
_D_EVENTS = ("action_failed", "action_done", "cabin_failed", "note")
_d_step = st.one_of(
    st.tuples(
        st.just("write"),
        st.sampled_from(_D_KEYS),
        st.integers(0, 4),
        st.sampled_from([None, None, 0.05, 0.3]),
    ),
    st.tuples(st.just("write_map_key"), st.integers(0, 2)),
    st.tuples(st.just("delete"), st.sampled_from(_D_KEYS)),
    st.tuples(
        st.just("feature"),
        st.integers(0, 7),
        st.integers(-4, 4),  # on a grid: equal distances, ordered by id, are common
        st.integers(-3, 3),
        st.sampled_from(_D_KINDS),
        st.booleans(),
    ),
    st.tuples(st.just("unmap"), st.integers(0, 7)),
    st.tuples(
        st.just("event"),
        st.sampled_from(_D_EVENTS),
        st.sampled_from(["", "x"]),
        st.sampled_from([0.0, 0.0, 0.0, 0.5]),
    ),
    st.tuples(st.just("note"), st.sampled_from(["a", "b", "c"]), st.integers(0, 3)),
    st.tuples(st.just("clear_notes")),
    st.tuples(st.just("scope_notes"), st.sampled_from([None, "goal:deliver:a", "goal:charge:b"])),
    st.tuples(st.just("capacity"), st.integers(1, 30)),
)
_d_tick = st.tuples(st.just("tick"), st.sampled_from([0.0, 0.05, 0.05, 0.05, 0.1, 1.0, 4.0]))
_d_steps = st.lists(st.tuples(_d_step, st.none() | _d_tick), min_size=5, max_size=80).map(
    lambda pairs: [s for pair in pairs for s in pair if s is not None]
)
_D_SPECS = (
    ContextSpec(
        name="planner",
        board_keys=("goal:*", "pose", "route", "constraint:*", "safety:*", "battery"),
        weights={"goal:*": 1.0, "constraint:*": 0.9, "map:*": 0.4, "map:f1": 0.9},
        default_weight=0.3,
        required=("goal:*", "pose", "constraint:*", "map:*"),
        map_center="pose",
        map_radius=5.0,
        map_kinds=("shelf", "dock", "obstacle", "charger"),
        corridor_width=1.0,
        event_window=10.0,
        event_kinds=("action_failed", "action_done"),
        event_limit=3,
        relevance={"deliver": ("shelf", "obstacle"), "charge": ("charger", "dock")},
    ),
    ContextSpec(
        name="executor",
        board_keys=("pose", "route", "velocity", "constraint:*", "noise:*", "map:f1"),
        weights={"event:*": 0.8, "map:*": 0.6, "noise:*": 0.2},
        required=("pose", "event:action_failed*", "velocity"),
        map_center="pose",
        map_radius=2.5,
        map_kinds=("obstacle", "dock"),
        corridor_width=0.5,
        event_window=3.0,
        event_kinds=("action_failed", "action_done"),
    ),
    ContextSpec(
        name="monitor",
        board_keys=("pose", "velocity", "goal:*", "safety:*", "battery"),
        weights={"safety:*": 1.0, "map:*": 0.7, "battery": 0.1},
        required=("pose", "safety:*", "battery"),
        map_center="pose",
        map_radius=2.0,
        map_tags=("person",),
        event_window=3.0,
        event_limit=2,
        event_tags=("x",),
    ),
    ContextSpec(
        name="writer",
        board_keys=("goal:*", "noise:*"),
        weights={"note:*": 0.6},
        required=("note:*",),
    ),
)


_CAPS = (
    st.sampled_from([None, None, 1, 2, 3]),
    st.sampled_from([None, None, 0.05, 0.2, 0.5]),
    st.sampled_from([None, None, 1, 2]),
)


def _capped(spec: ContextSpec, caps: tuple[Any, Any, Any]) -> ContextSpec:
    """``spec`` with its map window and corridor capped: ``map_limit``, ``map_share`` and
    ``corridor_limit`` (None: not set)."""
    limit, share, corridor = caps
    return ContextSpec(
        **{
            **spec.model_dump(),
            "map_limit": limit,
            "map_share": share,
            "corridor_limit": corridor,
        }
    )


_d_specs = st.tuples(*(st.tuples(*_CAPS) for _ in _D_SPECS)).map(
    lambda drawn: tuple(_capped(s, caps) for s, caps in zip(_D_SPECS, drawn, strict=True))
)
"""The four specs with map caps drawn for each (capacity changes move ``map_share``'s)."""


def _random_specs(rng: np.random.Generator) -> tuple[ContextSpec, ...]:
    """``_d_specs`` drawn from a seeded generator."""
    choices = ([None, None, 1, 2, 3], [None, None, 0.05, 0.2, 0.5], [None, None, 1, 2])
    return tuple(
        _capped(spec, tuple(c[int(rng.integers(0, len(c)))] for c in choices))  # type: ignore[arg-type]
        for spec in _D_SPECS
    )


class _TwinWorld:
    """A world whose sources, memory and scratchpad one assembler freezes."""

    def __init__(
        self, policy: Any, capacity: int, specs: tuple[ContextSpec, ...] = _D_SPECS
    ) -> None:
        self.clock = SimClock()
        lock = threading.RLock()
        self.board = StateBoard(clock=self.clock, lock=lock)
        self.map = CabinMap(lock=lock, overflow_limit=2)
        self.log = EventLog(clock=self.clock, lock=lock)
        self.memory = WorkingMemory(capacity=capacity, policy=policy)
        self.pad = Scratchpad(lock=lock)
        self.assembler = Assembler(
            self.board,
            self.map,
            self.log,
            self.memory,
            specs,
            scratchpads={"writer": self.pad},
        )

    def apply(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "write":
            key = step[1]
            value: Any = (
                [(-3.0, 0.0), (float(step[2]) - 2.0, 1.0), (3.0, 1.0)]
                if key == "route"
                else (float(step[2]) - 2.0, 0.0, 0.0)
            )
            self.board.write(key, value, ttl=step[3])
        elif kind == "write_map_key":  # a board key like a map key: the from-scratch path
            if step[1] == 2:
                self.board.delete("map:f1")
            else:
                self.board.write("noise:map" if step[1] else "map:f1", step[1])
        elif kind == "delete":
            self.board.delete(step[1])
        elif kind == "feature":
            _, n, x, y, fkind, person = step
            tags = frozenset({"person"}) if person else frozenset()
            self.map.add(Feature(f"f{n}", Point(float(x), float(y)), fkind, tags), replace=True)
        elif kind == "unmap":
            self.map.discard(f"f{step[1]}")
        elif kind == "event":
            last = self.log.newest()[1]
            self.log.append(
                step[1],
                {},
                tags=(step[2],) if step[2] else (),
                stamp=max(self.clock.now() + step[3], last),
            )
        elif kind == "note":
            self.pad.write(step[1], step[2], tick=0)
        elif kind == "clear_notes":
            self.pad.clear(tick=0)
        elif kind == "scope_notes":
            self.pad.scope(step[1], tick=0)
        elif kind == "capacity":
            self.memory.capacity = step[1]
        else:
            raise AssertionError(kind)


def _item_fields(item: Any) -> tuple[Any, ...]:
    return (
        item.key,
        item.value,
        item.importance,
        item.last_used,
        item.first_seen,
        item.source,
        item.stamp,
        item.seq,
        item.via,
    )


def _everything(ws: Any, memory: WorkingMemory) -> tuple[Any, ...]:
    """A working set and the memory behind it, in order, every field."""
    selections = tuple(
        (
            name,
            sel.required,
            tuple((k, _item_fields(i)) for k, i in sel.items.items()),
            tuple(sel.missing.items()),
            tuple(f.id for f in sel.nearby_map),
            tuple(f.id for f in sel.corridor_map),
            tuple(e.seq for e in sel.recent_events),
            tuple(
                (k, (e.tick, e.key, e.importance, e.last_used, e.reason))
                for k, e in sel.evicted.items()
            ),
        )
        for name, sel in ws.selections.items()
    )
    return (
        ws.tick,
        ws.time,
        ws.versions,
        tuple((k, _item_fields(i)) for k, i in ws.items.items()),
        tuple((e.tick, e.key, e.importance, e.last_used, e.reason) for e in ws.evictions),
        ws.capacity_alarm,
        ws.occupancy,
        selections,
        tuple(_item_fields(i) for i in memory.items()),
        memory.evicted_total,
        memory.capacity_alarms,
        memory.pinned_count,
    )


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(steps=_d_steps, capacity=st.integers(2, 16), specs=_d_specs)
def test_the_delta_path_freezes_what_the_from_scratch_path_does(
    steps: list[tuple[Any, ...]], capacity: int, specs: tuple[ContextSpec, ...]
) -> None:
    """Generated writes, deletes, map changes, events (some stamped ahead), notes, goal
    changes (relevance), stale readings, capacity changes and map caps (``map_limit``,
    ``map_share``, ``corridor_limit``): on every tick the delta path freezes the working
    set, views, what each view lost to capacity, evictions and memory that offering
    everything again freezes, in the same order, field for field."""
    delta = _TwinWorld(ValueEviction(), capacity, specs)
    scratch = _TwinWorld(_FromScratch(), capacity, specs)
    assert delta.memory.settles and not scratch.memory.settles
    tick = 0
    for step in [*steps, ("tick", 0.05)]:
        if step[0] != "tick":
            delta.apply(step)
            scratch.apply(step)
            continue
        now = delta.clock.now()
        got = delta.assembler.assemble(tick, now)
        want = scratch.assembler.assemble(tick, now)
        assert _everything(got, delta.memory) == _everything(want, scratch.memory)
        assert got.pressure == want.pressure
        for name in got.cabins:
            assert tuple(got.view(name).items()) == tuple(want.view(name).items())
            assert tuple(got.view(name).evicted) == tuple(want.view(name).evicted)
        tick += 1
        delta.clock.advance(step[1])
        scratch.clock.advance(step[1])
    # the policy catches up with what the delta path settled: later pushes agree
    for memory in (delta.memory, scratch.memory):
        memory.capacity = 2
        memory.push(WorkItem("late", 1, 0.5, 1e6), tick=tick)
    assert _everything(want, delta.memory)[8:] == _everything(want, scratch.memory)[8:]


def _program(rng: np.random.Generator, length: int) -> list[tuple[Any, ...]]:
    """A long random program of the steps ``_d_step`` draws, half of them ticks."""
    out: list[tuple[Any, ...]] = []
    for _ in range(length):
        r = rng.random()
        if r < 0.45:
            out.append(("tick", float(rng.choice([0.0, 0.05, 0.05, 0.05, 0.1, 1.0]))))
        elif r < 0.65:
            out.append(
                (
                    "write",
                    str(rng.choice(_D_KEYS)),
                    int(rng.integers(0, 5)),
                    [None, None, 0.05, 0.3][int(rng.integers(0, 4))],
                )
            )
        elif r < 0.8:
            out.append(
                (
                    "feature",
                    int(rng.integers(0, 12)),
                    int(rng.integers(-4, 5)),
                    int(rng.integers(-3, 4)),
                    str(rng.choice(_D_KINDS)),
                    bool(rng.integers(0, 2)),
                )
            )
        elif r < 0.88:
            out.append(
                (
                    "event",
                    str(rng.choice(_D_EVENTS)),
                    ["", "x"][int(rng.integers(0, 2))],
                    [0.0, 0.0, 0.0, 0.5][int(rng.integers(0, 4))],
                )
            )
        elif r < 0.91:
            out.append(("delete", str(rng.choice(_D_KEYS))))
        elif r < 0.93:
            out.append(("unmap", int(rng.integers(0, 12))))
        elif r < 0.96:
            out.append(("note", ["a", "b", "c"][int(rng.integers(0, 3))], int(rng.integers(0, 4))))
        elif r < 0.97:
            out.append(("clear_notes",))
        elif r < 0.98:
            out.append(
                ("scope_notes", [None, "goal:deliver:a", "goal:charge:b"][int(rng.integers(0, 3))])
            )
        elif r < 0.99:
            out.append(("capacity", int(rng.integers(1, 24))))
        else:
            out.append(("write_map_key", int(rng.integers(0, 3))))
    return out


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), capacity=st.integers(3, 20))
def test_the_delta_path_holds_over_long_random_runs(seed: int, capacity: int) -> None:
    """Long runs (hundreds of ticks) of the same steps, and map caps, drawn from a seed."""
    rng = np.random.default_rng(seed)
    specs = _random_specs(rng)
    delta = _TwinWorld(ValueEviction(), capacity, specs)
    scratch = _TwinWorld(_FromScratch(), capacity, specs)
    tick = 0
    for step in _program(rng, 600):
        if step[0] != "tick":
            delta.apply(step)
            scratch.apply(step)
            continue
        now = delta.clock.now()
        got = delta.assembler.assemble(tick, now)
        want = scratch.assembler.assemble(tick, now)
        assert _everything(got, delta.memory) == _everything(want, scratch.memory), tick
        tick += 1
        delta.clock.advance(step[1])
        scratch.clock.advance(step[1])


def test_a_reading_stamped_ahead_of_the_freeze_is_used_now_until_its_stamp() -> None:
    """While a reading's stamp is ahead of the freeze time its last_used is the freeze
    time; once the freeze time passes it, its stamp (and the item is written again)."""
    delta = _TwinWorld(ValueEviction(), 20)
    scratch = _TwinWorld(_FromScratch(), 20)
    for world in (delta, scratch):
        world.clock.advance(0.12)  # the board's clock runs ahead of the freezes below
        world.apply(("write", "pose", 2, None))
    seen = []
    for tick in range(6):
        now = tick * 0.05
        got = delta.assembler.assemble(tick, now)
        want = scratch.assembler.assemble(tick, now)
        assert _everything(got, delta.memory) == _everything(want, scratch.memory), tick
        seen.append(got.items["pose"].last_used)
    assert seen == pytest.approx([0.0, 0.05, 0.1, 0.12, 0.12, 0.12])


@pytest.mark.parametrize("policy", [ValueEviction, _FromScratch], ids=["delta", "from-scratch"])
def test_a_map_item_is_as_old_as_its_feature_not_as_the_freeze(policy: type) -> None:
    """A map item's seq is its feature's revision and its stamp and last_used the freeze
    time at which a window first offered that revision: a shelf that stays in view
    unchanged is the same WorkItem tick after tick while a person walking beside it is
    fresh at every freeze; a shelf replaced, or one that left every window and came
    back, is fresh again."""
    w = World()
    w.memory = WorkingMemory(capacity=64, policy=policy())
    spec = ContextSpec(name="cabin", board_keys=("pose",), map_center="pose", map_radius=3.0)
    assembler = w.assembler(spec)
    w.map.add(Feature("shelf", box(1, 1, 2, 2), "shelf"))
    shelf_revision = w.map.revision("shelf")
    held = []
    for tick in range(4):
        now = w.clock.now()
        w.board.write("pose", (0.0, 0.0, 0.0))
        w.map.add(Feature("worker", Point(0.5, float(tick) * 0.1), "obstacle"), replace=True)
        ws = assembler.assemble(tick, now)
        shelf, worker = ws.items["map:shelf"], ws.items["map:worker"]
        assert (shelf.seq, shelf.stamp, shelf.last_used) == (shelf_revision, 0.0, 0.0)
        assert (worker.seq, worker.stamp, worker.last_used) == (w.map.revision("worker"), now, now)
        assert ws.view("cabin").provenance["map:shelf"] is shelf
        held.append(shelf)
        w.clock.advance(0.05)
    if policy is ValueEviction:  # written once: no new WorkItem for what did not change
        assert all(item is held[0] for item in held)
    w.map.add(Feature("shelf", box(1, 1, 2, 2), "shelf"), replace=True)  # refreshed
    now = w.clock.now()
    shelf = assembler.assemble(4, now).items["map:shelf"]
    assert (shelf.seq, shelf.last_used, shelf.first_seen) == (w.map.revision("shelf"), now, 0.0)
    w.board.write("pose", (50.0, 0.0, 0.0))  # out of view: the item expires
    w.clock.advance(0.05)
    assert "map:shelf" not in assembler.assemble(5, w.clock.now()).items
    w.board.write("pose", (0.0, 0.0, 0.0))
    w.clock.advance(0.05)
    now = w.clock.now()
    shelf = assembler.assemble(6, now).items["map:shelf"]
    assert (shelf.last_used, shelf.first_seen) == (now, now)  # seen anew


def test_a_restored_assembler_keeps_when_its_map_items_were_first_offered() -> None:
    """A checkpoint (the sources, memory and assembler given their state as data) resumes
    with the same map items' times as the run that was not interrupted."""
    from runtime.testing import round_trip_state

    world = _TwinWorld(ValueEviction(), 8)
    world.apply(("write", "pose", 2, None))
    for n in range(4):
        world.apply(("feature", n, n - 2, 0, "shelf", False))
    for tick in range(3):
        world.assembler.assemble(tick, world.clock.now())
        world.clock.advance(0.05)
    copy = _TwinWorld(ValueEviction(), 8)
    copy.clock.advance(world.clock.now())
    round_trip_state(world.assembler, copy.assembler)  # the board, map, log, memory with it
    for tick in range(3, 6):
        world.apply(("feature", 0, 1, 1, "shelf", False))
        copy.apply(("feature", 0, 1, 1, "shelf", False))
        now = world.clock.now()
        got = copy.assembler.assemble(tick, now)
        want = world.assembler.assemble(tick, now)
        assert _everything(got, copy.memory) == _everything(want, world.memory)
        assert got.items["map:f1"].last_used == 0.0  # first offered at the first freeze
        world.clock.advance(0.05)
        copy.clock.advance(0.05)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(steps=_d_steps, capacity=st.integers(2, 16))
def test_the_first_offered_times_stay_bounded_by_the_map(
    steps: list[tuple[Any, ...]], capacity: int
) -> None:
    """The table of when each map item was first offered holds only features the map still
    has, at their current revision, on both paths: a long run that sees many features
    come and go does not grow it."""
    worlds = (_TwinWorld(ValueEviction(), capacity), _TwinWorld(_FromScratch(), capacity))
    tick = 0
    for step in [*steps, ("tick", 0.05)]:
        for world in worlds:
            if step[0] != "tick":
                world.apply(step)
                continue
            world.assembler.assemble(tick, world.clock.now())
            world.clock.advance(step[1])
            seen = world.assembler._scratch.first_offered.times()  # both paths' one table
            on_map = {f"map:{f.id}": world.map.revision(f.id) for f in world.map.features()}
            assert set(seen) <= set(on_map)
            assert all(revision == on_map[key] for key, (revision, _) in seen.items())
        if step[0] == "tick":
            tick += 1


def test_a_candidate_offered_again_changed_is_written_again() -> None:
    """When a group is offered anew, a candidate whose value is the same object but whose
    reading changed (a new seq) is not taken for the one already held; and an event that
    only a second spec still offers is held with that spec's via (the two windows' events
    are distinct objects, so this part holds with or without the via comparison)."""
    w = World()
    first = ContextSpec(name="first", board_keys=("mode", "extra"), event_window=1.0)
    second = ContextSpec(name="second", board_keys=("mode",), event_window=5.0)
    assembler = w.assembler(first, second)
    mode = "auto"
    w.board.write("mode", mode)
    event = w.log.append("bump", stamp=0.0)
    assembler.assemble(tick=0, now=0.0)
    held = w.memory.get(event.key)
    assert held is not None and held.via == assembler._compiled.vias["first"].log
    w.board.write("mode", mode)  # the same object again, with the key set changing too
    w.board.write("extra", 1)
    reading = w.board.read("mode")
    assert reading is not None
    w.clock.advance(2.0)
    ws = assembler.assemble(tick=1, now=2.0)  # the event left first's window, not second's
    item = ws.view("first").provenance["mode"]
    assert (item.seq, item.stamp) == (reading.seq, reading.stamp)
    held = w.memory.get(event.key)
    assert held is not None and held.via == assembler._compiled.vias["second"].log


def test_a_held_event_is_not_admitted_again_when_a_newer_one_arrives() -> None:
    """An event held is written again only if it changes, so under FIFO it keeps its
    place: a newer event and a newer reading arriving together push out the oldest."""
    w = World()
    w.memory = WorkingMemory(capacity=2, policy=FifoEviction())
    assembler = w.assembler(ContextSpec(name="c", board_keys=("b",), event_window=10.0))
    w.clock.advance(1.0)
    first = w.log.append("a")
    assembler.assemble(tick=0, now=1.0)
    w.board.write("b", 1)
    w.log.append("a")  # both stamped 1.0, like the first event
    ws = assembler.assemble(tick=1, now=1.0)
    assert [(e.key, e.reason) for e in ws.evictions] == [(first.key, "capacity")]


def test_laps_mark_the_delta_paths_stages_in_order_and_are_no_state() -> None:
    """``laps`` is called with each stage's name as it ends, on the delta path (the
    from-scratch path has no stages), and a checkpoint holds no caller's timer."""
    from runtime.assembler import STAGES
    from runtime.snapshot import StateCodec

    w = World()
    w.board.write("pose", (0.0, 0.0, 0.0))
    assembler = w.assembler(PLANNER, EXECUTOR)
    called: list[str] = []
    assembler.laps = called.append
    for tick in range(3):
        assembler.assemble(tick, 0.1 * tick)
    assert called == list(STAGES) * 3
    assert "laps" not in StateCodec().dump(assembler)["$o"][1]
    scratch = Assembler(w.board, w.map, w.log, WorkingMemory(policy=FifoEviction()), [PLANNER])
    scratch.laps = called.append
    scratch.assemble(0, 0.0)
    assert called == list(STAGES) * 3
