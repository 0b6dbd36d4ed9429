"""Declared writes: a cabin changes only what its spec's ``[writes]`` declares, ``goal:*`` and
``safety:*`` only when it names them, and everything refused is an event and a count."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from runtime import (
    Assembler,
    CabinMap,
    CabinView,
    ContextSpec,
    EventLog,
    Outbox,
    SimClock,
    StateBoard,
    TickLoop,
    WorkingMemory,
)
from runtime.spec import Writes
from runtime.testing import make_view, refusals, run_step
from runtime.writes import PROTECTED, WriteGuard, grants, lint


@dataclass
class Scripted:
    """A cabin that does, at every tick, what its script says: ``("write", key)``,
    ``("delete", key)`` or ``("emit", kind)``."""

    name: str
    spec: ContextSpec
    script: list[tuple[str, str]] = field(default_factory=list)

    def step(self, view: CabinView, out: Outbox) -> None:
        for op, name in self.script:
            if op == "write":
                out.write(name, view.tick)
            elif op == "delete":
                out.delete(name)
            else:
                out.emit(name, {"tick": view.tick})
        out.command("noop")


def loop_of(*cabins: Scripted, board: dict[str, Any] | None = None) -> TickLoop:
    clock = SimClock()
    state = StateBoard(clock=clock)
    for key, value in (board or {}).items():
        state.write(key, value, source="world")
    assembler = Assembler(
        state, CabinMap(), EventLog(clock=clock), WorkingMemory(), [c.spec for c in cabins]
    )
    return TickLoop(assembler, list(cabins), 20.0, clock)


def refused(loop: TickLoop) -> list[dict[str, Any]]:
    return [
        dict(e.data) for e in loop.assembler.log.query(0.0, kinds=("write_refused",), limit=None)
    ]


ZONE = {"safety:forbidden:hv": {"zone": "hv"}, "goal:deliver:t1": {"task": "t1"}}


# -- the rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "key", "granted"),
    [
        ("plan", "plan", True),
        ("plan:*", "plan:a", True),
        ("plan:*", "route", False),
        ("*", "route", True),
        ("*", "safety:forbidden:hv", False),  # a broad pattern never grants a protected key
        ("s*", "safety:forbidden:hv", False),
        ("*:forbidden:*", "safety:forbidden:hv", False),
        ("[s]afety:*", "safety:forbidden:hv", False),
        ("safety:*", "safety:forbidden:hv", True),
        ("safety:forbidden:*", "safety:forbidden:hv", True),
        ("safety:forbidden:hv", "safety:forbidden:hv", True),
        ("goal:*", "goal:deliver:t1", True),
        ("goal:deliver:t2", "goal:deliver:t1", False),
    ],
)
def test_a_pattern_grants_a_protected_key_only_when_it_names_it(
    pattern: str, key: str, granted: bool
) -> None:
    assert grants(pattern, key) is granted


def test_an_undeclared_spec_may_change_anything_but_goals_and_safety() -> None:
    guard = WriteGuard({"free": None})
    assert guard.refusal("free", "write", "route") is None
    assert guard.refusal("free", "delete", "route") is None
    assert guard.refusal("free", "emit", "anything") is None
    for op in ("write", "delete"):
        no = guard.refusal("free", op, "safety:forbidden:hv")  # type: ignore[arg-type]
        assert no is not None and no.reason == "protected" and "safety:*" in no.detail
        assert guard.refusal("free", op, "goal:deliver:t1").reason == "protected"  # type: ignore[arg-type,union-attr]


def test_a_declared_table_refuses_what_it_leaves_out() -> None:
    writes = Writes(board=("plan", "route:*"), delete=("plan",), events=("task_*",))
    guard = WriteGuard({"me": writes})
    assert guard.refusal("me", "write", "route:a") is None
    assert guard.refusal("me", "delete", "plan") is None
    assert guard.refusal("me", "emit", "task_started") is None
    for op, name in (("write", "other"), ("delete", "route:a"), ("emit", "alarm")):
        no = guard.refusal("me", op, name)  # type: ignore[arg-type]
        assert no is not None and no.reason == "not_declared" and no.cabin == "me"


def test_the_writes_table_is_checked_at_load() -> None:
    with pytest.raises(ValidationError, match="already at board"):
        ContextSpec(name="x", writes={"board": ["a", "a"]})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="white space"):
        ContextSpec(name="x", writes={"events": ["a b"]})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ContextSpec(name="x", writes={"bord": ["a"]})  # type: ignore[arg-type]
    assert ContextSpec(name="x").writes is None
    assert ContextSpec(name="x", writes={}).writes == Writes()  # type: ignore[arg-type]


def test_lint_names_an_undeclared_spec_and_a_broad_pattern() -> None:
    (undeclared,) = lint(None)
    assert "declares no [writes]" in undeclared
    found = lint(Writes(board=("*", "plan"), delete=("s*",)))
    assert any("'*' does not grant goal:*" in line for line in found)
    assert any("'*' does not grant safety:*" in line for line in found)
    assert any("writes.delete 's*' does not grant safety:*" in line for line in found)
    assert lint(Writes(board=("safety:*", "plan:*"))) == []


# -- the loop ------------------------------------------------------------------------------


def test_the_loop_refuses_an_undeclared_delete_of_a_forbidden_zone_with_an_event() -> None:
    vandal = Scripted("vandal", ContextSpec(name="vandal"), [("delete", "safety:forbidden:hv")])
    loop = loop_of(vandal, board=ZONE)
    loop.run(3)
    board = loop.assembler.board
    assert board.read("safety:forbidden:hv") is not None
    (first,) = refused(loop)  # one episode: the same refusal at every tick
    assert first == {
        "cabin": "vandal",
        "op": "delete",
        "key": "safety:forbidden:hv",
        "reason": "protected",
        "detail": first["detail"],
        "tick": 0,
    }
    tags = loop.assembler.log.query(0.0, kinds=("write_refused",), limit=1)[0].tags
    assert {"cabin:vandal", "refused"} <= tags
    row = loop.stats().cabins["vandal"]
    assert (row.writes_refused, row.deletes, row.commands) == (3, 0, 3)
    assert loop.stats().writes_refused == 3


def test_a_cabin_that_names_the_key_deletes_it_and_the_delete_names_the_cabin() -> None:
    spec = ContextSpec(name="keeper", writes={"delete": ["safety:forbidden:*"]})  # type: ignore[arg-type]
    loop = loop_of(Scripted("keeper", spec, [("delete", "safety:forbidden:hv")]), board=ZONE)
    seen: list[tuple[str, str]] = []
    board = loop.assembler.board

    def on_change(reading: Any, key: str) -> None:
        if reading is None:
            assert board.last_delete is not None and board.last_delete.key == key
            seen.append((key, board.last_delete.source))

    board.add_listener(on_change)
    loop.run(2)
    assert "safety:forbidden:hv" not in board
    assert seen == [("safety:forbidden:hv", "keeper")]
    assert refused(loop) == []
    assert loop.stats().cabins["keeper"].deletes == 1  # the second delete found nothing


def test_what_is_declared_goes_through_and_the_rest_is_counted_per_cabin() -> None:
    spec = ContextSpec(
        name="mixed",
        board_keys=("mine:*",),
        writes={"board": ["mine:*"], "events": ["said"]},  # type: ignore[arg-type]
    )
    script = [("write", "mine:a"), ("write", "theirs"), ("emit", "said"), ("emit", "shout")]
    other = Scripted("other", ContextSpec(name="other"), [("write", "theirs")])
    loop = loop_of(Scripted("mixed", spec, script), other)
    loop.run(4)
    board = loop.assembler.board
    assert board.read("mine:a").source == "mixed"  # type: ignore[union-attr]
    assert board.read("theirs").source == "other"  # type: ignore[union-attr]
    kinds = {e.kind for e in loop.assembler.log.query(0.0, limit=None)}
    assert "said" in kinds and "shout" not in kinds
    assert {(e["op"], e.get("key", e.get("kind"))) for e in refused(loop)} == {
        ("write", "theirs"),
        ("emit", "shout"),
    }
    stats = loop.stats().cabins
    assert list(stats) == ["mixed", "other"]
    assert stats["mixed"].as_dict() == {
        "commands": 4,
        "events": 4,
        "reactions": 0,
        "writes": 4,
        "deletes": 0,
        "writes_refused": 8,
        "failures": 0,
    }
    assert stats["other"].writes == 4 and stats["other"].writes_refused == 0


class Phased(Scripted):
    """A cabin whose script at tick t is ``phases[t]`` (the last one after that)."""

    def __init__(self, name: str, spec: ContextSpec, phases: list[list[tuple[str, str]]]):
        super().__init__(name, spec)
        self.phases = phases

    def step(self, view: CabinView, out: Outbox) -> None:
        self.script = self.phases[min(view.tick, len(self.phases) - 1)]
        super().step(view, out)


def test_a_refusal_repeated_every_tick_is_one_event_and_every_one_is_counted() -> None:
    spec = ContextSpec(name="stubborn", writes={"board": ["mine"]})  # type: ignore[arg-type]
    twice = [("write", "theirs"), ("write", "theirs"), ("emit", "shout")]
    loop = loop_of(Scripted("stubborn", spec, twice))
    loop.run(40)  # two seconds at 20 Hz
    events = refused(loop)
    assert [(e["op"], e.get("key", e.get("kind")), e["tick"]) for e in events] == [
        ("write", "theirs", 0),
        ("emit", "shout", 0),
    ]
    assert loop.stats().cabins["stubborn"].writes_refused == 120  # three a tick, all counted
    assert set(loop.refusals.open) == {
        ("stubborn", "write", "theirs"),
        ("stubborn", "emit", "shout"),
    }


def test_an_outbox_without_the_refusal_ends_its_episode_and_the_next_one_is_reported() -> None:
    spec = ContextSpec(name="fitful", writes={"board": ["mine"]})  # type: ignore[arg-type]
    bad, good = [("write", "theirs")], [("write", "mine")]
    fitful = Phased("fitful", spec, [bad, bad, good, bad, bad, bad, good, good, bad])
    other = Scripted("other", ContextSpec(name="other", writes={}), [("write", "theirs")])  # type: ignore[arg-type]
    loop = loop_of(fitful, other)
    loop.run(10)
    ticks = [(e["cabin"], e["tick"]) for e in refused(loop)]
    # fitful: episodes at 0-1, 3-5 and 8-9; other refused at every tick: one episode,
    # which fitful's outboxes without the refusal do not end
    assert ticks == [("fitful", 0), ("other", 0), ("fitful", 3), ("fitful", 8)]
    stats = loop.stats().cabins
    assert (stats["fitful"].writes_refused, stats["other"].writes_refused) == (7, 10)


def test_a_failing_cabin_is_counted_in_its_row() -> None:
    class Failing(Scripted):
        def step(self, view: CabinView, out: Outbox) -> None:
            raise RuntimeError("boom")

    loop = loop_of(Failing("f", ContextSpec(name="f")))
    loop.run(2)
    assert loop.stats().cabins["f"].failures == 2


def test_refusals_tells_a_unit_test_what_the_loop_would_refuse() -> None:
    spec = ContextSpec(name="vandal", board_keys=("safety:*",))
    out = run_step(
        Scripted("vandal", spec, [("delete", "safety:forbidden:hv"), ("write", "x")]),
        make_view(spec, board=ZONE),
    )
    (only,) = refusals(spec, out)
    assert (only.op, only.name, only.reason) == ("delete", "safety:forbidden:hv", "protected")


# -- the invariant -----------------------------------------------------------------------------

KEYS = ("plan", "route", "mine:a", "mine:b", "goal:deliver:t1", "safety:forbidden:hv", "other")
PATTERNS = ("plan", "mine:*", "*", "goal:*", "safety:*", "safety:forbidden:*", "s*", "r*")
KINDS = ("said", "alarm", "task_started")

ops = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(("write", "delete")), st.sampled_from(KEYS)),
        st.tuples(st.just("emit"), st.sampled_from(KINDS)),
    ),
    max_size=6,
)
declarations = st.one_of(
    st.none(),
    st.builds(
        Writes,
        board=st.lists(st.sampled_from(PATTERNS), unique=True).map(tuple),
        delete=st.lists(st.sampled_from(PATTERNS), unique=True).map(tuple),
        events=st.lists(st.sampled_from((*KINDS, "task_*", "*")), unique=True).map(tuple),
    ),
)


def allowed(writes: Writes | None, op: str, name: str) -> bool:
    """The rule, said once more in the test's own words."""
    protected = name.startswith(("goal:", "safety:"))
    if op == "emit":
        return writes is None or any(
            p == name or (p.endswith("*") and name.startswith(p[:-1])) for p in writes.events
        )
    patterns = None if writes is None else (writes.board if op == "write" else writes.delete)
    if patterns is None:
        return not protected
    for p in patterns:
        hit = p == name or (p.endswith("*") and name.startswith(p[:-1]))
        if hit and (not protected or p.startswith(("goal:", "safety:"))):
            return True
    return False


@settings(max_examples=80, deadline=None)
@given(declared=declarations, script=ops)
def test_no_change_outside_the_declared_patterns_ever_reaches_the_board_or_the_log(
    declared: Writes | None, script: list[tuple[str, str]]
) -> None:
    spec = ContextSpec(name="c", board_keys=KEYS, writes=declared)
    loop = loop_of(Scripted("c", spec, script), board=dict.fromkeys(KEYS, 0))
    changes: list[tuple[str, str]] = []
    board = loop.assembler.board
    board.add_listener(lambda r, k: changes.append(("write" if r is not None else "delete", k)))
    logged: list[str] = []
    loop.assembler.log.add_listener(lambda e: logged.append(e.kind))
    loop.run(2)
    assert all(allowed(declared, op, key) for op, key in changes)
    assert all(allowed(declared, "emit", k) for k in logged if k != "write_refused")
    expected = sum(not allowed(declared, op, name) for op, name in script) * 2
    assert loop.stats().writes_refused == expected  # every refusal counted
    episodes = {(op, name) for op, name in script if not allowed(declared, op, name)}
    assert logged.count("write_refused") == len(episodes)  # the same refusals at both ticks
    for family in PROTECTED:
        prefix = family[:-1]
        touched = [k for _, k in changes if k.startswith(prefix)]
        if touched:
            assert declared is not None
            named = (*declared.board, *declared.delete)
            assert any(p.startswith(prefix) for p in named)
