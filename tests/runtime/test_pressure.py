"""Nothing selected is lost silently: capacity pressure in the view, the event and the stats.

An item a spec selects that working memory evicts for capacity (or never admits) is in
that cabin's ``view.evicted``, the working set names the spec in ``pressure`` and raises
its capacity alarm, and the loop reports it once per episode (``capacity_pressure``) and
counts it (``TickStats.pressure``). A spec can cap its map window (``map_limit``, nearest
first; ``map_share`` of the capacity) and its corridor (``corridor_limit``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from shapely.geometry import Point

from runtime import (
    Assembler,
    CabinMap,
    CabinView,
    ContextSpec,
    EventLog,
    Feature,
    FifoEviction,
    Outbox,
    QuietTicks,
    Scratchpad,
    SimClock,
    StateBoard,
    TickLoop,
    ValueEviction,
    WorkingMemory,
)
from runtime.errors import SettingError
from runtime.patterns import matches
from runtime.pressure import LOST_SHOWN
from runtime.testing import make_view

# -- a world drawn at random -----------------------------------------------------------------

_KEYS = ("pose", "battery", "goal:a", "goal:b", "safety:x", "s:1", "s:2", "s:3", "s:4", "s:5")
_PATTERNS = ("pose", "battery", "goal:*", "safety:*", "s:*", "s:1")
_WEIGHTS = ("pose", "battery", "goal:*", "s:*", "map:*", "map:f1", "event:*", "note:*")


@dataclass(frozen=True)
class Sources:
    """What a world holds at one freeze: board values, features, events and notes."""

    board: dict[str, int]
    features: tuple[tuple[int, int, int, str], ...]
    events: tuple[str, ...]
    notes: tuple[str, ...]


@st.composite
def sources(draw: st.DrawFn) -> Sources:
    board = draw(st.dictionaries(st.sampled_from(_KEYS), st.integers(0, 3), max_size=len(_KEYS)))
    board["pose"] = 0
    features = draw(
        st.lists(
            st.tuples(
                st.integers(0, 9),
                st.integers(-6, 6),
                st.integers(-3, 3),
                st.sampled_from(["shelf", "dock"]),
            ),
            max_size=12,
            unique_by=lambda f: f[0],
        )
    )
    events = draw(st.lists(st.sampled_from(["done", "failed"]), max_size=6))
    notes = draw(st.lists(st.sampled_from(["plan", "seen", "todo"]), max_size=3, unique=True))
    return Sources(board, tuple(features), tuple(events), tuple(notes))


@st.composite
def a_spec(draw: st.DrawFn, name: str) -> ContextSpec:
    radius = draw(st.sampled_from([0.0, 3.0, 10.0]))
    return ContextSpec(
        name=name,
        board_keys=tuple(draw(st.lists(st.sampled_from(_PATTERNS), unique=True, max_size=4))),
        weights=draw(
            st.dictionaries(st.sampled_from(_WEIGHTS), st.sampled_from([0.1, 0.5, 0.7, 0.9, 1.0]))
        ),
        default_weight=draw(st.sampled_from([0.2, 0.5])),
        required=tuple(
            draw(st.lists(st.sampled_from(["battery", "s:*", "map:*", "event:done*"]), unique=True))
        ),
        map_center="pose" if radius else None,
        map_radius=radius,
        map_limit=draw(st.sampled_from([None, None, 1, 3])),
        corridor_width=draw(st.sampled_from([0.0, 1.0])),
        corridor_limit=draw(st.sampled_from([None, 2])),
        event_window=draw(st.sampled_from([0.0, 5.0])),
        event_kinds=draw(st.sampled_from([(), ("done",)])),
        event_limit=draw(st.integers(1, 4)),
    )


specs = st.integers(1, 3).flatmap(
    lambda n: st.tuples(*(a_spec(name) for name in ("a", "b", "c")[:n]))
)


def build(
    found: Sources, specs: tuple[ContextSpec, ...], capacity: int, policy: Any
) -> tuple[Assembler, SimClock]:
    """An assembler over ``found`` at t = 10 s (spec ``a`` keeps a scratchpad)."""
    clock = SimClock()
    board = StateBoard(clock=clock)
    cabin_map = CabinMap()
    log = EventLog(clock=clock)
    for key, value in found.board.items():
        board.write(key, value)
    board.write("route", [(-5.0, 1.0), (5.0, 1.0)])
    for n, x, y, kind in found.features:
        cabin_map.add(Feature(f"f{n}", Point(float(x), float(y)), kind))
    clock.sleep_until(10.0)
    for kind in found.events:
        log.append(kind, {})
    pad = Scratchpad()
    for key in found.notes:
        pad.write(key, key)
    memory = WorkingMemory(capacity=capacity, policy=policy)
    return Assembler(board, cabin_map, log, memory, specs, scratchpads={"a": pad}), clock


# -- the invariant ---------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(
    found=sources(),
    specs=specs,
    capacity=st.integers(1, 16),
    fifo=st.booleans(),
)
def test_nothing_selected_is_lost_silently(
    found: Sources, specs: tuple[ContextSpec, ...], capacity: int, fifo: bool
) -> None:
    """Random specs, capacities, sources and eviction policies: every item a spec selects
    (what its view holds when memory has room for everything) is either in its view or in
    its ``view.evicted`` as a capacity eviction, never both; a spec that lost something is
    under pressure, raises the capacity alarm, gets a ``capacity_pressure`` event and is
    counted; a required pattern only lost items match is missing for ``evicted``."""
    roomy, _ = build(found, specs, 10_000, ValueEviction())
    wanted = roomy.assemble(0, 10.0)
    policy = FifoEviction() if fifo else ValueEviction()
    tight, clock = build(found, specs, capacity, policy)
    loop = TickLoop(tight, [_Idle(s) for s in specs], 20.0, clock)
    result = loop.step()
    ws = result.working_set
    event("under pressure" if ws.pressure else "no pressure")
    for spec in specs:
        view, selected = ws.view(spec.name), wanted.view(spec.name)
        assert set(view) | set(view.evicted) == set(selected)
        assert set(view).isdisjoint(view.evicted)
        for key, eviction in view.evicted.items():
            assert (eviction.key, eviction.reason) == (key, "capacity")
        assert list(view.evicted) == [k for k in selected if k in view.evicted]  # offer order
        assert (spec.name in ws.pressure) == bool(view.evicted)
        for pattern in spec.required:
            if not any(matches(k, pattern) for k in view) and any(
                matches(k, pattern) for k in view.evicted
            ):
                assert view.missing[pattern] == "evicted"
    assert ws.capacity_alarm == (bool(ws.pressure) or ws.overflow)
    events = tight.log.query(0.0, kinds=["capacity_pressure"], limit=None)
    assert [e.data["spec"] for e in events] == list(ws.pressure)
    for logged in events:
        lost = ws.pressure[logged.data["spec"]]
        assert logged.data["count"] == len(lost)
        assert list(logged.data["lost"]) == list(lost[:LOST_SHOWN])
        assert {"capacity", "alarm"} <= logged.tags
    stats = loop.stats()
    assert {n: (c.episodes, c.ticks, c.lost) for n, c in stats.pressure.items()} == {
        n: (1, 1, len(lost)) for n, lost in ws.pressure.items()
    }


@dataclass
class _Idle:
    spec: ContextSpec
    views: list[CabinView] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        self.views.append(view)


# -- the starvation miniature ----------------------------------------------------------------

PLANNER = ContextSpec(
    name="planner",
    board_keys=("goal:*", "pose", "battery", "docks"),
    weights={"goal:*": 1.0, "pose": 0.9, "battery": 0.7, "docks": 0.7, "map:shelf:*": 0.9},
    default_weight=0.5,
    required=("goal:*", "pose"),
    map_center="pose",
    map_radius=40.0,
    event_window=3.0,
    event_kinds=("action_done",),
    event_limit=8,
)
"""The planner of issue 29 in small: a wide window over shelves weighted 0.9, above its
battery (0.7) and the executor's ``action_done`` reports (0.6, the default here 0.5)."""


def _starving(capacity: int, spec: ContextSpec = PLANNER) -> tuple[TickLoop, _Idle]:
    clock = SimClock()
    board = StateBoard(clock=clock)
    cabin_map = CabinMap()
    log = EventLog(clock=clock)
    for row in range(4):
        for n in range(6):
            cabin_map.add(Feature(f"shelf:R{row}S{n}", Point(3.0 * n, 4.0 * row), "shelf"))
    board.write("pose", (1.0, 1.0))
    board.write("goal:deliver:t0", {"pickup": "D0"})
    board.write("battery", 0.42)
    board.write("docks", {"D0": (0.0, 0.0)})
    cabin = _Idle(spec)
    memory = WorkingMemory(capacity=capacity)
    loop = TickLoop(Assembler(board, cabin_map, log, memory, [spec]), [cabin], 20.0, clock)
    return loop, cabin


def test_a_wide_window_that_crowds_out_a_cabins_state_and_events_says_so() -> None:
    """24 shelves within the planner's window, weighted above its battery and the pick's
    ``action_done``: in 16 items of memory both are lost every tick. The view says so
    (``evicted``, with ``capacity_alarm``), one ``capacity_pressure`` event names the spec
    and what it lost with advice naming ``map_limit``, and the stats count every tick.
    Before issue 29 the view said nothing, the alarm was off and no event was logged."""
    loop, cabin = _starving(capacity=16)
    loop.step()
    loop.assembler.log.append("action_done", {"action": "pick", "task": "t0"})
    for _ in range(39):
        loop.step()
    view = cabin.views[-1]
    assert "battery" in view.evicted and "battery" not in view
    assert any(k.startswith("event:action_done:") for k in view.evicted)
    assert view.capacity_alarm and not view.occupancy.overflows
    (event,) = loop.assembler.log.query(0.0, kinds=["capacity_pressure"], limit=None)
    assert event.data["spec"] == "planner" and "battery" in event.data["lost"]
    assert event.data["capacity"] == 16 and event.data["held"] == 16
    assert "map_limit = " in event.data["advice"] and "capacity" in event.data["advice"]
    stats = loop.stats()
    assert stats.pressure["planner"].episodes == 1
    assert stats.pressure["planner"].ticks == 40
    assert stats.capacity_alarms == 40
    assert not loop.assembler.log.query(0.0, kinds=["capacity_alarm"])  # no pinned overflow


def test_a_map_limit_leaves_room_for_the_cabins_events_and_state() -> None:
    """The same world with the window capped at its 8 nearest shelves: nothing is lost."""
    capped = PLANNER.model_copy(update={"map_limit": 8})
    loop, cabin = _starving(capacity=16, spec=ContextSpec(**capped.model_dump()))
    loop.step()
    loop.assembler.log.append("action_done", {"action": "pick", "task": "t0"})
    loop.run(5)
    view = cabin.views[-1]
    assert not view.evicted and not view.capacity_alarm
    assert "battery" in view and any(k.startswith("event:action_done:") for k in view)
    assert len(view.nearby_map) == 8
    assert not loop.stats().pressure


# -- episodes --------------------------------------------------------------------------------


def test_pressure_is_reported_once_per_episode() -> None:
    """Pressure that stops for a tick and comes back within the quiet time is one
    episode; after a longer pause it is a new one (here ``QuietTicks(3)``)."""
    loop, _ = _starving(capacity=16)
    loop.pressure = type(loop.pressure)(QuietTicks(3))
    memory = loop.assembler.memory
    plan = [16] * 3 + [64] * 2 + [16] * 3 + [64] * 5 + [16] * 2
    for capacity in plan:
        memory.capacity = capacity
        loop.step()
    events = loop.assembler.log.query(0.0, kinds=["capacity_pressure"], limit=None)
    assert [e.data["tick"] for e in events] == [0, 13]
    count = loop.stats().pressure["planner"]
    assert (count.episodes, count.ticks) == (2, 8)


# -- the caps --------------------------------------------------------------------------------


def _line_world(**caps: Any) -> CabinView:
    spec = ContextSpec(
        name="c",
        board_keys=("pose", "route"),
        map_center="pose",
        map_radius=50.0,
        corridor_width=0.5,
        **caps,
    )
    features = [Feature(f"f{n}", Point(float(n), 3.0), "shelf") for n in range(10)]
    features += [Feature(f"r{n}", Point(float(9 - n), 0.0), "dock") for n in range(6)]
    route = [(9.0, 0.0), (0.0, 0.0)]  # from x = 9 back to x = 0: r0 is first along it
    return make_view(
        spec, board={"pose": (0.0, 3.0), "route": route}, features=features, capacity=40
    )


def test_map_limit_keeps_the_nearest_features() -> None:
    view = _line_world(map_limit=3)
    assert [f.id for f in view.nearby_map] == ["f0", "f1", "f2"]
    assert not any(k in view for k in ("map:f3", "map:f9"))
    assert not view.evicted  # not selected is not lost


def test_corridor_limit_keeps_the_first_features_along_the_route() -> None:
    view = _line_world(map_limit=1, corridor_limit=2)
    assert [f.id for f in view.corridor_map] == ["r0", "r1"]


def test_map_share_caps_the_window_at_a_share_of_the_capacity() -> None:
    view = _line_world(map_share=0.1)  # 10% of 40 items: 4 features
    assert [f.id for f in view.nearby_map] == ["f0", "f1", "f2", "f3"]  # f3 before r5: ties by id
    view = _line_world(map_share=0.5, map_limit=2)  # the smaller cap holds
    assert len(view.nearby_map) == 2


@pytest.mark.parametrize(
    ("caps", "problem"),
    [
        ({"map_limit": 0}, "greater than or equal to 1"),
        ({"corridor_limit": -1}, "greater than or equal to 1"),
        ({"map_share": 0.0}, "greater than 0"),
        ({"map_share": 1.5}, "less than or equal to 1"),
        ({"map_limit": True}, "valid integer"),
    ],
)
def test_caps_out_of_range_are_refused(caps: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ContextSpec(name="c", map_center="pose", map_radius=5.0, **caps)


# -- hand-built views ------------------------------------------------------------------------


def test_make_view_builds_views_that_lost_items_to_capacity() -> None:
    spec = ContextSpec(
        name="c",
        board_keys=("battery", "pose"),
        required=("battery", "pose"),
        weights={"note:*": 0.5},
    )
    view = make_view(
        spec,
        board={"battery": 0.4, "pose": (0, 0)},
        notes={"plan": 1},
        evicted=["battery", "note:plan"],
    )
    assert list(view.evicted) == ["battery", "note:plan"]
    assert "battery" not in view and "note:plan" not in view
    assert view.missing == {"battery": "evicted"}
    assert view.capacity_alarm
    with pytest.raises(SettingError, match="would not hold"):
        make_view(spec, board={"pose": (0, 0)}, evicted=["battery"])
