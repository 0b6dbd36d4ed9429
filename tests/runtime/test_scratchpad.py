"""The scratchpad: the seed's behaviours, notes in the working set, and task scope."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from runtime import (
    Assembler,
    CabinMap,
    CabinView,
    ContextSpec,
    EventLog,
    FreezeError,
    Outbox,
    Scratchpad,
    SimClock,
    StateBoard,
    TickLoop,
    WorkingMemory,
)
from runtime.scratchpad import EMPTY_TEXT, Note, notes_in

# -- the seed's behaviours ----------------------------------------------------------------


def test_write_overwrites_the_same_key() -> None:
    pad = Scratchpad()
    pad.write("total_revenue", 100, "sum of Q1")
    pad.write("total_revenue", 120, "sum of Q1, corrected")
    assert pad.read("total_revenue") == 120
    assert pad.list_keys() == ["total_revenue"]
    note = pad.get("total_revenue")
    assert note is not None and note.description == "sum of Q1, corrected"


def test_reading_a_missing_key_gives_none() -> None:
    pad = Scratchpad()
    assert pad.read("nothing_here") is None
    pad.write("a", 0)
    assert pad.read("a") == 0 and pad.read("b") is None


def test_list_keys_is_sorted_and_clear_empties() -> None:
    pad = Scratchpad()
    for key in ("zeta", "alpha", "mid"):
        pad.write(key, key.upper())
    assert pad.list_keys() == ["alpha", "mid", "zeta"]
    assert pad.clear(tick=4) == 3
    assert pad.list_keys() == [] and len(pad) == 0 and pad.read("alpha") is None


def test_prompt_text_without_notes_has_a_defined_empty_state() -> None:
    assert Scratchpad().to_prompt_text() == EMPTY_TEXT == "Scratchpad: (empty)"


def test_prompt_text_with_notes_is_deterministic_in_key_order() -> None:
    one, two = Scratchpad(), Scratchpad()
    one.write("growth", {"line": "B", "pct": 12.5}, "fastest growing product line")
    one.write("anomalies", ["rent", "travel"])
    two.write("anomalies", ["rent", "travel"])
    two.write("growth", {"pct": 12.5, "line": "B"}, "fastest growing product line")
    expected = (
        "Scratchpad - known so far:\n"
        '- anomalies: ["rent","travel"]\n'
        '- growth (fastest growing product line): {"line":"B","pct":12.5}'
    )
    assert one.to_prompt_text() == two.to_prompt_text() == expected
    one.scope("goal:report:q1")
    assert one.to_prompt_text().startswith("Scratchpad (task goal:report:q1) - known so far:")


def test_values_are_deep_frozen_at_the_write() -> None:
    pad = Scratchpad()
    raw = {"items": [1, 2]}
    pad.write("x", raw)
    raw["items"].append(3)
    assert pad.read("x") == {"items": (1, 2)}
    with pytest.raises(TypeError):
        pad.read("x")["items"] = ()
    with pytest.raises(FreezeError, match="note:y"):
        pad.write("y", object())


@pytest.mark.parametrize("key", ["", "has space", "glob*", "-dash", "a/b", 3, "x" * 129])
def test_bad_keys_are_refused_naming_the_key(key: object) -> None:
    with pytest.raises(ValueError, match="note key"):
        Scratchpad().write(key, 1)  # type: ignore[arg-type]


def test_every_write_and_clear_is_logged_with_its_tick() -> None:
    pad = Scratchpad(task="goal:a")
    pad.write("a", 1, tick=3)
    pad.write("a", 2, tick=4)
    pad.clear(tick=5, reason="cabin")
    assert [(e.action, e.tick, e.key, e.task, e.reason) for e in pad.log] == [
        ("write", 3, "a", "goal:a", ""),
        ("write", 4, "a", "goal:a", ""),
        ("clear", 5, None, "goal:a", "cabin"),
    ]
    assert pad.version == 3


def test_scoping_to_another_task_clears_and_unscoped_notes_are_adopted() -> None:
    pad = Scratchpad()
    pad.write("early", 1)
    pad.scope("goal:a", tick=1)  # from no task: the notes are adopted
    assert pad.read("early") == 1 and pad.get("early").task == "goal:a"  # type: ignore[union-attr]
    pad.scope("goal:a", tick=2)  # the same task: nothing happens
    assert pad.read("early") == 1
    pad.scope("goal:b", tick=3)  # another task: never carried over
    assert pad.list_keys() == [] and pad.task == "goal:b"
    assert any(e.action == "clear" and e.reason == "task_changed" for e in pad.log)


def test_a_draft_takes_only_the_notes_of_its_task() -> None:
    notes = [Note("a", 1, task="goal:x"), Note("b", 2, task="goal:y"), Note("c", 3)]
    draft = Scratchpad.from_notes(notes, task="goal:x")
    assert draft.list_keys() == ["a", "c"] and draft.task == "goal:x"
    assert Scratchpad.from_notes(notes).list_keys() == ["a", "b", "c"]


# -- notes in the working set -------------------------------------------------------------


@dataclass
class Rig:
    clock: SimClock = field(default_factory=SimClock)
    board: StateBoard = field(init=False)
    log: EventLog = field(init=False)

    def __post_init__(self) -> None:
        self.board = StateBoard(clock=self.clock)
        self.log = EventLog(clock=self.clock)

    def assembler(
        self, specs: list[ContextSpec], pads: dict[str, Scratchpad], capacity: int = 64
    ) -> Assembler:
        return Assembler(
            self.board,
            CabinMap(),
            self.log,
            WorkingMemory(capacity=capacity),
            specs,
            scratchpads=pads,
        )


def test_notes_enter_only_their_cabins_view_as_note_items() -> None:
    rig = Rig()
    a_spec = ContextSpec(name="a", weights={"note:*": 0.7, "note:key_fact": 0.9})
    b_spec = ContextSpec(name="b")
    a_pad, b_pad = Scratchpad(), Scratchpad()
    a_pad.write("key_fact", 42, "the answer")
    a_pad.write("other", "x")
    b_pad.write("key_fact", "b's own")  # the same key in another cabin's pad: no collision
    ws = rig.assembler([a_spec, b_spec], {"a": a_pad, "b": b_pad}).assemble(0, 0.0)
    a, b = ws.view("a"), ws.view("b")
    assert sorted(a) == ["note:key_fact", "note:other"]
    assert a["note:key_fact"].value == 42 and a["note:key_fact"].description == "the answer"
    assert b["note:key_fact"].value == "b's own" and "note:other" not in b
    item = a.provenance["note:key_fact"]
    assert (item.source, item.via, item.importance) == ("note", "note:scratchpad", 0.9)
    assert a.provenance["note:other"].importance == 0.7
    assert b.provenance["note:key_fact"].importance == 0.5  # b's default weight
    assert set(ws.items) == {"note:a/key_fact", "note:a/other", "note:b/key_fact"}
    assert [n.key for n in notes_in(a)] == ["key_fact", "other"]


def test_notes_obey_capacity_and_eviction_like_other_items() -> None:
    rig = Rig()
    spec = ContextSpec(
        name="a",
        board_keys=("pose", "goal:*"),
        weights={"pose": 0.9, "goal:*": 1.0, "note:important": 0.8, "note:*": 0.1},
        required=("note:*", "note:important"),
    )
    pad = Scratchpad()
    pad.write("important", 1)
    pad.write("scrap_1", 2)
    pad.write("scrap_2", 3)
    rig.board.write("pose", (0.0, 0.0, 0.0))
    rig.board.write("goal:deliver:t1", {"drop": "B"})
    ws = rig.assembler([spec], {"a": pad}, capacity=3).assemble(0, 0.0)
    view = ws.view("a")
    assert sorted(view) == ["goal:deliver:t1", "note:important", "pose"]
    assert sorted(e.key for e in ws.evictions) == ["note:a/scrap_1", "note:a/scrap_2"]
    assert all(e.reason == "capacity" for e in ws.evictions)
    assert "note:*" not in view.missing  # note:important still matches


def test_a_required_note_lost_to_capacity_is_missing_as_evicted() -> None:
    rig = Rig()
    spec = ContextSpec(
        name="a",
        board_keys=("pose",),
        weights={"pose": 0.9, "note:*": 0.1},
        required=("note:plan_*",),
    )
    pad = Scratchpad()
    pad.write("plan_a", 1)
    rig.board.write("pose", (0.0, 0.0, 0.0))
    view = rig.assembler([spec], {"a": pad}, capacity=1).assemble(0, 0.0).view("a")
    assert list(view) == ["pose"] and view.missing == {"note:plan_*": "evicted"}
    hidden = Rig()
    hidden.board.write("pose", (0.0, 0.0, 0.0))
    ws = hidden.assembler([spec], {"a": pad}).assemble(0, 0.0)
    assert ws.view("a", suppress=("note:*",)).missing == {"note:plan_*": "fault"}


@given(weights=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), capacity=st.integers(1, 12))
def test_held_notes_never_exceed_capacity_and_lose_by_value(
    weights: list[float], capacity: int
) -> None:
    rig = Rig()
    spec = ContextSpec(name="a", weights={f"note:n{i:02d}": w for i, w in enumerate(weights)})
    pad = Scratchpad()
    for i in range(len(weights)):
        pad.write(f"n{i:02d}", i)
    ws = rig.assembler([spec], {"a": pad}, capacity=capacity).assemble(0, 0.0)
    view = ws.view("a")
    assert len(view) == min(capacity, len(weights))
    kept = [view.provenance[k].importance for k in view]
    for eviction in ws.evictions:
        assert all(eviction.importance <= k for k in kept)


def test_a_retracted_note_leaves_working_memory() -> None:
    rig = Rig()
    pad = Scratchpad()
    pad.write("a", 1)
    assembler = rig.assembler([ContextSpec(name="a")], {"a": pad})
    assert "note:a" in assembler.assemble(0, 0.0).view("a")
    pad.clear()
    ws = assembler.assemble(1, 0.05)
    assert "note:a" not in ws.view("a") and "note:a/a" not in ws.items
    assert [(e.key, e.reason) for e in ws.evictions] == [("note:a/a", "retracted")]


def test_the_assembler_refuses_bad_scratchpads() -> None:
    rig = Rig()
    pad = Scratchpad()
    with pytest.raises(ValueError, match="zz that have no spec"):
        rig.assembler([ContextSpec(name="a")], {"zz": pad})
    with pytest.raises(ValueError, match="share one Scratchpad"):
        rig.assembler([ContextSpec(name="a"), ContextSpec(name="b")], {"a": pad, "b": pad})
    with pytest.raises(TypeError, match="must be a Scratchpad"):
        rig.assembler([ContextSpec(name="a")], {"a": {}})  # type: ignore[dict-item]


# -- end to end: task scope through the loop ----------------------------------------------


@dataclass
class Counter:
    """Scopes its pad to the first goal it sees and counts ticks in a note."""

    name: str
    spec: ContextSpec
    seen: list[dict[str, object]] = field(default_factory=list)
    finish_at: int | None = None
    uses_notes: bool = True

    def step(self, view: CabinView, out: Outbox) -> None:
        notes = {n.key: n.value for n in notes_in(view)}
        self.seen.append(notes)
        goals = sorted(view.matching("goal:*"))
        if not goals:
            return
        out.scope_notes(goals[0])
        out.note("ticks", int(notes.get("ticks", 0)) + 1, f"ticks on {goals[0]}")
        if view.tick == self.finish_at:
            out.delete(goals[0])  # the goal completes


def counter_loop(cabin: Counter, pad: Scratchpad) -> tuple[TickLoop, StateBoard]:
    rig = Rig()
    assembler = rig.assembler([cabin.spec], {cabin.name: pad})
    return TickLoop(assembler, [cabin], 20.0, rig.clock), rig.board


def test_notes_written_through_the_outbox_show_from_the_next_tick() -> None:
    cabin = Counter("c", ContextSpec(name="c", board_keys=("goal:*",)))
    pad = Scratchpad()
    loop, board = counter_loop(cabin, pad)
    board.write("goal:deliver:t1", {"drop": "B"})
    loop.run(4)
    assert cabin.seen == [{}, {"ticks": 1}, {"ticks": 2}, {"ticks": 3}]
    assert pad.task == "goal:deliver:t1" and pad.read("ticks") == 4
    assert [e.tick for e in pad.log if e.action == "write"] == [0, 1, 2, 3]


def test_a_pad_is_cleared_when_its_goal_leaves_the_board_and_not_carried_on() -> None:
    spec = ContextSpec(name="c", board_keys=("goal:*",), writes={"delete": ["goal:*"]})  # type: ignore[arg-type]
    cabin = Counter("c", spec, finish_at=2)  # it completes goals: its spec says so
    pad = Scratchpad()
    loop, board = counter_loop(cabin, pad)
    board.write("goal:deliver:t1", {"drop": "B"})
    loop.run(3)  # ticks 0-2; at tick 2 the goal is deleted
    assert pad.read("ticks") == 3 and pad.task == "goal:deliver:t1"
    board.write("goal:deliver:t2", {"drop": "C"})
    with capture_logs() as logs:
        result = loop.step()  # tick 3: t1 is gone, the pad is cleared at the freeze
    assert cabin.seen[3] == {}  # nothing of t1 carried into t2
    gone = [(e.key, e.reason) for e in result.working_set.evictions]
    assert ("note:c/ticks", "retracted") in gone
    assert any(
        e["event"] == "scratchpad_task_done" and e["task"] == "goal:deliver:t1" for e in logs
    )
    done = [e for e in pad.log if e.reason == "task_done"]
    assert done and all(e.tick == 3 for e in done)
    loop.step()
    assert cabin.seen[4] == {"ticks": 1} and pad.task == "goal:deliver:t2"


def test_switching_tasks_while_the_old_goal_lives_clears_the_pad() -> None:
    @dataclass
    class Switcher:
        name: str
        spec: ContextSpec
        seen: list[dict[str, object]] = field(default_factory=list)

        def step(self, view: CabinView, out: Outbox) -> None:
            self.seen.append({n.key: n.value for n in notes_in(view)})
            task = "goal:a" if view.tick < 2 else "goal:b"
            out.scope_notes(task)
            out.note(f"on_{task[5:]}", view.tick)

    cabin = Switcher("s", ContextSpec(name="s", board_keys=("goal:*",)))
    pad = Scratchpad()
    rig = Rig()
    rig.board.write("goal:a", 1)
    rig.board.write("goal:b", 2)
    loop = TickLoop(rig.assembler([cabin.spec], {"s": pad}), [cabin], 20.0, rig.clock)
    loop.run(4)
    assert cabin.seen == [{}, {"on_a": 0}, {"on_a": 1}, {"on_b": 2}]


def test_a_cabin_writing_notes_without_a_pad_fails_like_a_raising_cabin() -> None:
    @dataclass
    class Noter:
        name: str
        spec: ContextSpec

        def step(self, view: CabinView, out: Outbox) -> None:
            out.write("written", True)
            out.note("x", 1)

    rig = Rig()
    cabin = Noter("n", ContextSpec(name="n"))
    loop = TickLoop(rig.assembler([cabin.spec], {}), [cabin], 20.0, rig.clock)
    result = loop.step()
    assert [(f.cabin, f.error_type) for f in result.failures] == [("n", "NoScratchpad")]
    assert rig.board.read("written") is None  # the whole outbox was dropped
    events = rig.log.query(0.0, 10.0, kinds=["cabin_failed"])
    assert events and events[0].data["error_type"] == "NoScratchpad"
    assert "no scratchpad" in events[0].data["message"]


def test_the_loop_refuses_a_cabin_that_uses_notes_without_a_pad() -> None:
    rig = Rig()
    cabin = Counter("c", ContextSpec(name="c"))
    with pytest.raises(ValueError, match=r"use notes.*scratchpads=\{name: Scratchpad\(\)\}"):
        TickLoop(rig.assembler([cabin.spec], {}), [cabin], 20.0, rig.clock)


@pytest.mark.parametrize(
    ("act", "error"),
    [
        (lambda out: out.note("bad key", 1), ValueError),
        (lambda out: out.note("k", object()), FreezeError),
        (lambda out: out.note("k", 1, 5), ValueError),
        (lambda out: out.scope_notes(""), ValueError),
    ],
)
def test_the_outbox_refuses_bad_notes_at_once(
    act: Callable[[Outbox], None], error: type[Exception]
) -> None:
    out = Outbox("c")
    with pytest.raises(error):
        act(out)
    assert not out


def test_outbox_note_values_are_frozen() -> None:
    out = Outbox("c")
    value = [1, 2]
    out.note("k", value)
    value.append(3)
    assert out.notes[0].value == (1, 2) and out


def test_make_view_puts_notes_in_the_cabins_view() -> None:
    from runtime import ContextSpec
    from runtime.testing import make_view

    spec = ContextSpec(name="agent", board_keys=("pose",), weights={"note:*": 0.6})
    view = make_view(spec, board={"pose": (0.0, 0.0, 0.0)}, notes={"next_dock": "A"})
    assert view["note:next_dock"].value == "A"
    assert view.provenance["note:next_dock"].importance == 0.6
