"""The assembler and the working set: one frozen pack per tick, explicit absence."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from shapely.geometry import Point, box

from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    Feature,
    SimClock,
    StateBoard,
    WorkingMemory,
)
from tests.support.assembly_world import EXECUTOR, PLANNER, World


def test_views_of_one_tick_agree_and_carry_provenance() -> None:
    w = World()
    w.board.write("pose", (0.0, 0.0, 0.0), ttl=1.0, source="sensor")
    w.board.write("goal:deliver:1", {"to": "B"})
    w.board.write("constraint:speed:z", 0.5)
    w.map.add(Feature("shelf-1", box(1, 1, 2, 2), "shelf"))
    w.map.add(Feature("far", Point(50, 50), "shelf"))
    failed = w.log.append("action_failed", {"action": "pick"})
    ws = w.assembler(PLANNER, EXECUTOR).assemble(tick=0, now=0.0)
    p, e = ws.view("planner"), ws.view("executor")
    shared = set(p) & set(e)
    assert shared == {"pose", "map:shelf-1", f"event:action_failed:{failed.seq}"}
    for key in shared:
        assert p[key] == e[key]
        assert p.provenance[key].stamp == e.provenance[key].stamp
        assert (
            p.provenance[key].importance
            == e.provenance[key].importance
            == max(PLANNER.weight_for(key), EXECUTOR.weight_for(key))
        )
    assert p.provenance["pose"].source == "board"
    assert p.provenance["pose"].via == "board:pose"
    assert p.provenance["map:shelf-1"].via == "map:window(pose,5)"
    assert e.provenance[f"event:action_failed:{failed.seq}"].via == "log:window(10s)"
    assert [f.id for f in p.nearby_map] == ["shelf-1"]
    assert e.recent_events == (failed,)
    assert "goal:deliver:1" in p and "goal:deliver:1" not in e
    assert p.missing == {} and e.missing == {}
    assert dict(p.items()) == {k: p[k] for k in p}  # the usual mapping items: key, value
    assert set(p.provenance) == set(p) and p.item("pose") is p.provenance["pose"]
    assert p.items["pose"] is p.provenance["pose"]  # DESIGN.md's name for it
    assert (ws.occupancy.held, ws.occupancy.pinned, ws.occupancy.capacity) == (
        len(ws.items),
        1,
        64,
    )  # goal:* is pinned by default
    assert p.occupancy == ws.occupancy
    assert ws.versions.board_seq == w.board.seq
    assert ws.versions.map_version == w.map.version
    assert ws.versions.log_seq == w.log.seq
    assert dict(p.items()) == dict(p)


@given(
    keys=st.lists(st.sampled_from(["a", "b", "c:1", "c:2", "d"]), max_size=5, unique=True),
    first=st.lists(st.sampled_from(["a", "b", "c:*", "*"]), min_size=1, max_size=3, unique=True),
    second=st.lists(st.sampled_from(["a", "b", "c:*", "d"]), min_size=1, max_size=3, unique=True),
    capacity=st.integers(1, 6),
)
def test_shared_items_agree_property(
    keys: list[str], first: list[str], second: list[str], capacity: int
) -> None:
    w = World(capacity=capacity)
    for i, key in enumerate(keys):
        w.board.write(key, [i, key])
    a = ContextSpec(name="a", board_keys=tuple(first), weights={"c:*": 0.9})
    b = ContextSpec(name="b", board_keys=tuple(second), default_weight=0.2)
    ws = w.assembler(a, b).assemble(tick=0, now=0.0)
    va, vb = ws.view("a"), ws.view("b")
    for key in set(va) & set(vb):
        assert va[key] == vb[key] == ws.items[key].value
    assert len(ws.items) <= capacity
    assert set(va) | set(vb) <= set(ws.items)


def test_writer_thread_never_tears_a_pack() -> None:
    w = World()
    spec = ContextSpec(name="reader", board_keys=("k:*",))
    assembler = w.assembler(spec)
    writes: list[tuple[int, str, int]] = []
    stop = threading.Event()

    def hammer() -> None:
        i = 0
        while not stop.is_set():
            r = w.board.write(f"k:{i % 8}", i)
            writes.append((r.seq, r.key, r.value))
            i += 1

    writer = threading.Thread(target=hammer)
    writer.start()
    packs = []
    try:
        for tick in range(1000):
            packs.append(assembler.assemble(tick, float(tick)))
    finally:
        stop.set()
        writer.join()
    assert len(writes) > 0
    seqs = [seq for seq, _, _ in writes]
    for ws in packs:
        upto = ws.versions.board_seq
        expected: dict[str, int] = {}
        for _seq, key, value in writes[: _count_le(seqs, upto)]:
            expected[key] = value
        got = {k: item.value for k, item in ws.items.items()}
        assert got == expected, f"torn pack at tick {ws.tick}"


def _count_le(sorted_seqs: list[int], bound: int) -> int:
    import bisect

    return bisect.bisect_right(sorted_seqs, bound)


def test_absence_is_explicit_with_reasons() -> None:
    w = World(capacity=3)
    w.board.write("pose", (0, 0, 0), ttl=0.1)
    w.board.write("goal:deliver:1", 1)
    spec = ContextSpec(
        name="cabin",
        board_keys=("pose", "goal:*", "noise:*", "constraint:*"),
        weights={"noise:*": 0.9, "constraint:*": 0.1},
        required=("pose", "goal:*", "constraint:*", "event:action_failed*"),
        event_window=5.0,
        event_kinds=("action_failed",),
    )
    assembler = w.assembler(spec)
    ws = assembler.assemble(0, 0.0)
    assert ws.view("cabin").missing == {"constraint:*": "absent", "event:action_failed*": "absent"}

    ws = assembler.assemble(1, 1.0)  # pose went stale
    assert ws.view("cabin").missing["pose"] == "stale"
    assert "pose" not in ws.view("cabin")

    w.board.write("constraint:speed:z", 0.5)
    for i in range(3):
        w.board.write(f"noise:{i}", i)
    ws = assembler.assemble(2, 2.0)  # the low-weight constraint loses to heavier noise
    view = ws.view("cabin")
    assert view.missing["constraint:*"] == "evicted"
    assert "goal:deliver:1" in view  # pinned
    assert any(e.key == "constraint:speed:z" and e.reason == "capacity" for e in ws.evictions)


def test_suppressed_items_are_missing_with_reason_fault() -> None:
    w = World()
    w.board.write("pose", (0, 0, 0))
    w.board.write("constraint:speed:z", 0.5)
    spec = ContextSpec(
        name="cabin",
        board_keys=("pose", "constraint:*"),
        required=("constraint:*", "event:action_failed*"),
        event_window=5.0,
    )
    w.log.append("action_failed", {"n": 1})
    ws = w.assembler(spec).assemble(0, 0.0)
    plain = ws.view("cabin")
    assert plain.missing == {}
    hidden = ws.view("cabin", suppress=("constraint:*", "event:action_failed*"))
    assert hidden.missing == {"constraint:*": "fault", "event:action_failed*": "fault"}
    assert "constraint:speed:z" not in hidden and hidden.recent_events == ()
    assert "pose" in hidden
    # the pack itself is untouched: another view still sees everything
    assert ws.view("cabin").missing == {}


def test_no_failures_differs_from_cannot_see_failures() -> None:
    w = World()
    spec = ContextSpec(name="executor", required=("event:action_failed*",), event_window=5.0)
    ws = w.assembler(spec).assemble(0, 0.0)
    assert ws.view("executor").missing == {"event:action_failed*": "absent"}
    assert ws.view("executor", suppress=("event:*",)).missing == {"event:action_failed*": "fault"}


def test_working_set_and_views_are_frozen() -> None:
    w = World()
    w.board.write("route", [[0, 0], [1, 1]])
    w.board.write("plan", {"steps": ["a"]})
    w.board.write("grid", np.ones(3))
    spec = ContextSpec(name="cabin", board_keys=("route", "plan", "grid"))
    ws = w.assembler(spec).assemble(0, 0.0)
    view = ws.view("cabin")
    with pytest.raises(TypeError):
        view["route"] = ()  # type: ignore[index]
    with pytest.raises(AttributeError):
        view.missing = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        view["route"].append((2, 2))
    with pytest.raises(TypeError):
        view["plan"]["steps"] = ()
    with pytest.raises(ValueError):
        view["grid"][0] = 5.0
    with pytest.raises(Exception, match=r"frozen|cannot assign"):
        ws.tick = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        ws.items["route"] = None  # type: ignore[index]


def test_a_view_holds_no_live_source() -> None:
    w = World()
    w.board.write("pose", (0, 0, 0))
    ws = w.assembler(ContextSpec(name="cabin", board_keys=("pose",))).assemble(0, 0.0)
    view = ws.view("cabin")
    w.board.write("pose", (9, 9, 9))
    assert view["pose"] == (0, 0, 0)
    seen: set[int] = set()

    def walk(obj: Any) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        assert not isinstance(obj, (StateBoard, CabinMap, EventLog, WorkingMemory))
        for name in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, name):
                walk(getattr(obj, name))
        if isinstance(obj, dict):
            for v in obj.values():
                walk(v)

    walk(view)
    walk(ws)


def test_retracted_sources_leave_memory_with_reason() -> None:
    w = World()
    w.board.write("pose", (0, 0, 0))
    w.board.write("obstacle:1", 1)
    w.map.add(Feature("crate", Point(1, 0), "obstacle"))
    spec = ContextSpec(
        name="cabin", board_keys=("pose", "obstacle:*"), map_center="pose", map_radius=3.0
    )
    assembler = w.assembler(spec)
    assembler.assemble(0, 0.0)
    w.board.delete("obstacle:1")
    w.map.remove("crate")
    ws = assembler.assemble(1, 0.05)
    reasons = {e.key: e.reason for e in ws.evictions}
    assert reasons == {"obstacle:1": "retracted", "map:crate": "retracted"}
    assert "map:crate" not in ws.items


def test_shared_map_and_log_queries_run_once_per_tick() -> None:
    calls = {"nearest": 0, "query": 0}

    class CountingMap(CabinMap):
        def nearest_keyed(self, *args: Any, **kwargs: Any) -> Any:
            calls["nearest"] += 1
            return super().nearest_keyed(*args, **kwargs)

    class CountingLog(EventLog):
        def query(self, *args: Any, **kwargs: Any) -> Any:
            calls["query"] += 1
            return super().query(*args, **kwargs)

    clock = SimClock()
    board = StateBoard(clock=clock)
    board.write("pose", (0, 0, 0))
    specs = [
        ContextSpec(
            name=n,
            board_keys=("pose",),
            map_center="pose",
            map_radius=r,
            map_kinds=k,
            event_window=3.0,
        )
        for n, r, k in (("a", 4.0, ()), ("b", 2.0, ("dock",)), ("c", 4.0, ("shelf",)))
    ]
    cabin_map = CountingMap()
    for i, (x, kind) in enumerate(
        [(1.0, "dock"), (3.0, "dock"), (1.5, "shelf"), (5.0, "shelf"), (0.5, "marker")]
    ):
        cabin_map.add(Feature(f"f{i}", Point(x, 0), kind))
    assembler = Assembler(board, cabin_map, CountingLog(clock=clock), WorkingMemory(), specs)
    ws = assembler.assemble(0, 0.0)
    assert calls == {"nearest": 1, "query": 1}  # one map query at the largest radius
    for spec in specs:  # each spec's window is what its own query would have found
        own = cabin_map.window((0, 0), spec.map_radius, kinds=spec.map_kinds or None)
        assert ws.view(spec.name).nearby_map == own


def test_relevance_keeps_only_what_the_active_goal_needs() -> None:
    w = World()
    w.board.write("pose", (0, 0, 0))
    w.map.add(Feature("dock-a", Point(1, 0), "dock"))
    w.map.add(Feature("charger-1", Point(0, 1), "charger"))
    spec = ContextSpec(
        name="planner",
        board_keys=("pose", "goal:*"),
        map_center="pose",
        map_radius=5.0,
        relevance={"deliver": ("dock", "shelf"), "charge": ("charger",)},
    )
    assembler = w.assembler(spec)
    assert {f.id for f in assembler.assemble(0, 0.0).view("planner").nearby_map} == {
        "dock-a",
        "charger-1",
    }
    w.board.write("goal:deliver:1", 1)
    assert [f.id for f in assembler.assemble(1, 0.1).view("planner").nearby_map] == ["dock-a"]
    w.board.write("goal:inspect:1", 1)  # a goal kind the spec says nothing about
    assert len(assembler.assemble(2, 0.2).view("planner").nearby_map) == 2


def test_unknown_cabin_view_is_a_clear_error() -> None:
    w = World()
    ws = w.assembler(ContextSpec(name="a")).assemble(0, 0.0)
    with pytest.raises(KeyError, match=r"no spec for cabin 'zz'.*known: a"):
        ws.view("zz")


def test_duplicate_spec_names_refused() -> None:
    w = World()
    with pytest.raises(ValueError, match="share the cabin name"):
        w.assembler(ContextSpec(name="a"), ContextSpec(name="a"))


def test_items_no_spec_selects_any_more_expire() -> None:
    w = World(capacity=4)
    w.board.write("pose", (0, 0, 0))
    spec = ContextSpec(
        name="cabin", board_keys=("pose",), event_window=1.0, weights={"event:*": 0.9, "pose": 0.5}
    )
    assembler = w.assembler(spec)
    old = w.log.append("bump", {"n": 1}, stamp=0.0)
    assert f"event:bump:{old.seq}" in assembler.assemble(0, 0.0).items
    ws = assembler.assemble(1, 2.0)  # the event left the only window: nobody can see it
    assert f"event:bump:{old.seq}" not in ws.items
    assert [(e.key, e.reason) for e in ws.evictions] == [(f"event:bump:{old.seq}", "expired")]
    assert "pose" in ws.items  # and it did not cost a selected item its place


# -- what the assembler carries from tick to tick never changes what a tick sees -----------

_KEYS = ("pose", "route", "goal:a", "goal:b", "constraint:x", "velocity")
_KINDS = ("action_failed", "action_done", "note")
_step = st.one_of(
    st.tuples(
        st.just("write"),
        st.sampled_from(_KEYS),
        st.integers(0, 3),
        st.sampled_from([None, 0.05, 0.3]),
    ),
    st.tuples(st.just("delete"), st.sampled_from(_KEYS)),
    st.tuples(st.just("feature"), st.integers(0, 5), st.floats(-6, 6), st.floats(-6, 6)),
    st.tuples(st.just("unmap"), st.integers(0, 5)),
    st.tuples(
        st.just("event"),
        st.sampled_from(_KINDS),
        st.sampled_from(["", "x"]),
        st.sampled_from([0.0, 0.0, 0.5]),
    ),  # an offset > 0: stamped ahead of the clock
    st.tuples(st.just("tick"), st.sampled_from([0.05, 0.1, 1.0, 4.0])),
)
_SPECS = (
    PLANNER,
    EXECUTOR,
    ContextSpec(
        name="monitor",
        board_keys=("pose", "velocity", "goal:*"),
        map_center="pose",
        map_radius=2.0,
        event_window=3.0,
        event_limit=2,
        event_tags=("x",),
    ),
)


def _seen(ws: Any) -> dict[str, Any]:
    """What each view shows; of a map item its revision rather than its time, which is
    when a window first offered that revision (history a new assembler does not have)."""
    out = {}
    for name in ws.cabins:
        view = ws.view(name)
        out[name] = (
            {
                k: (i.value, i.importance, i.seq if i.source == "map" else i.last_used, i.via)
                for k, i in view.provenance.items()
            },
            view.nearby_map,
            view.corridor_map,
            view.recent_events,
            dict(view.missing),
        )
    return out


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_step, max_size=60))
@example(
    steps=[("event", "action_failed", "x", 0.0), ("tick", 1.0), ("tick", 4.0), ("tick", 4.0)]
)  # the event ages out of the 3 s window, then the 10 s one
@example(steps=[("event", "note", "x", 0.5), ("tick", 0.1), ("tick", 1.0)])  # stamped ahead
def test_a_long_lived_assembler_sees_what_a_new_one_would(steps: list[tuple[Any, ...]]) -> None:
    """Caches across ticks (board keys per pattern, event windows, unchanged items) are
    invisible: every tick equals the working set a brand-new assembler freezes."""
    w = World(capacity=1000)  # nothing evicted for room, so the two memories agree
    kept = w.assembler(*_SPECS)
    tick = 0
    for step in [*steps, ("tick", 0.05)]:
        if step[0] == "write":
            value = (
                [(0.0, 0.0), (float(step[2]), 1.0)]
                if step[1] == "route"
                else (float(step[2]), 0.0, 0.0)
            )
            w.board.write(step[1], value, ttl=step[3])
        elif step[0] == "delete":
            w.board.delete(step[1])
        elif step[0] == "feature":
            w.map.add(Feature(f"f{step[1]}", Point(step[2], step[3]), "thing"), replace=True)
        elif step[0] == "unmap":
            w.map.discard(f"f{step[1]}")
        elif step[0] == "event":
            last = w.log.newest()[1]  # stamps never go backwards
            w.log.append(
                step[1],
                {},
                tags=(step[2],) if step[2] else (),
                stamp=max(w.clock.now() + step[3], last),
            )
        else:
            now = w.clock.now()
            fresh = Assembler(w.board, w.map, w.log, WorkingMemory(capacity=1000), _SPECS)
            assert _seen(kept.assemble(tick, now)) == _seen(fresh.assemble(tick, now))
            tick += 1
            w.clock.advance(step[1])


_WINDOW_SPECS = (
    ContextSpec(name="all", event_window=2.0, event_limit=3),
    ContextSpec(name="one", event_window=1.0, event_kinds=("a",), event_limit=1),
    ContextSpec(name="two", event_window=5.0, event_kinds=("a", "b"), event_limit=50),
    ContextSpec(name="tagged", event_window=3.0, event_tags=("x",), event_limit=2),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(
                st.just("event"),
                st.sampled_from(["a", "b", "c"]),
                st.sampled_from([(), ("x",), ("y",), ("x", "y")]),
                st.sampled_from([0.0, 0.0, 0.0, 0.3, 3.0]),  # > 0: stamped ahead of now
            ),
            st.tuples(st.just("tick"), st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.5, -0.7])),
        ),
        max_size=80,
    ),
    retention=st.sampled_from([None, 2, 5]),
)
def test_an_event_window_carried_from_tick_to_tick_is_the_logs_answer(
    steps: list[tuple[Any, ...]], retention: int | None
) -> None:
    """Each view's events, carried on from the last tick (aged out at the front, logged
    since at the back), equal a new query of the log: with many events at one stamp,
    events stamped ahead of the clock, the log dropping old events, the clock going back."""
    w = World(capacity=1000)
    w.log = EventLog(clock=w.clock, lock=w.lock, retention=retention)
    assembler = w.assembler(*_WINDOW_SPECS)
    now = 0.0
    for tick, step in enumerate([*steps, ("tick", 0.0)]):
        if step[0] == "event":
            last = w.log.newest()[1]
            w.log.append(step[1], tags=step[2], stamp=max(now + step[3], last))
            continue
        now = max(0.0, now + step[1])
        ws = assembler.assemble(tick, now)
        for spec in _WINDOW_SPECS:
            expected = w.log.query(
                now - spec.event_window,
                now,
                kinds=spec.event_kinds or None,
                tags=spec.event_tags or None,
                limit=spec.event_limit,
            )
            assert ws.view(spec.name).recent_events == expected, spec.name


@given(
    keys=st.lists(st.text("ab:*?[]x", min_size=1, max_size=5), max_size=12),
    pattern=st.sampled_from(
        ["a*", "a:*", "ab?", "a[bx]*", "[ab]*", "*x", "ab", "a:b*x", "b*", "?"]
    ),
)
def test_a_required_pattern_is_found_among_sorted_keys_as_by_a_scan(
    keys: list[str], pattern: str
) -> None:
    import fnmatch
    import re

    from runtime.assembly.freezing import any_from
    from runtime.patterns import literal_prefix

    rx = re.compile(fnmatch.translate(pattern)).match
    assert any_from(sorted(keys), literal_prefix(pattern), rx) == any(
        fnmatch.fnmatchcase(k, pattern) for k in keys
    )


def test_two_centre_keys_at_one_point_keep_their_own_windows() -> None:
    w = World()
    w.board.write("pose", (0.0, 0.0, 0.0))
    w.board.write("dock_pose", (0.0, 0.0, 0.0))  # the robot stands on the dock
    w.map.add(Feature("near", Point(2, 0), "obstacle"))
    w.map.add(Feature("far", Point(8, 0), "shelf"))
    a = ContextSpec(
        name="a", board_keys=("pose",), map_center="pose", map_radius=3.0, map_kinds=("obstacle",)
    )
    b = ContextSpec(name="b", board_keys=("dock_pose",), map_center="dock_pose", map_radius=10.0)
    ws = w.assembler(a, b).assemble(0, 0.0)
    assert [f.id for f in ws.view("a").nearby_map] == ["near"]
    assert [f.id for f in ws.view("b").nearby_map] == ["near", "far"]
