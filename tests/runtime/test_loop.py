"""The tick loop: fixed rate, isolation of failing cabins, effects from the next tick."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from runtime import (
    Assembler,
    CabinMap,
    CabinView,
    CatchUp,
    ContextSpec,
    EventLog,
    Outbox,
    SimClock,
    SkipMissed,
    StateBoard,
    TickLoop,
    WallClock,
    WorkingMemory,
)


@dataclass
class Recorder:
    """A cabin that records what it saw and writes its tick number."""

    name: str
    spec: ContextSpec
    seen: list[dict[str, object]] = field(default_factory=list)
    fail_at: set[int] = field(default_factory=set)

    def step(self, view: CabinView, out: Outbox) -> None:
        self.seen.append(dict(view))
        if view.tick in self.fail_at:
            raise RuntimeError(f"boom at {view.tick}")
        out.write(f"count:{self.name}", view.tick)
        out.emit("stepped", {"tick": view.tick})
        out.command("drive", v=1.0)


def make_loop(clock: object, *cabins: Recorder, capacity: int = 64, **kwargs: object) -> TickLoop:
    board = StateBoard(clock=clock)  # type: ignore[arg-type]
    log = EventLog(clock=clock)  # type: ignore[arg-type]
    assembler = Assembler(
        board, CabinMap(), log, WorkingMemory(capacity=capacity), [c.spec for c in cabins]
    )
    return TickLoop(assembler, list(cabins), 20.0, clock, **kwargs)  # type: ignore[arg-type]


def spec(name: str) -> ContextSpec:
    return ContextSpec(name=name, board_keys=("count:*",))


def test_sim_clock_runs_exactly_n_ticks_at_exact_times() -> None:
    clock = SimClock()
    cabin = Recorder("a", spec("a"))
    loop = make_loop(clock, cabin)
    times = []
    for _ in range(7):
        times.append(loop.step().time)
    assert loop.tick == 7 and len(cabin.seen) == 7
    assert times == [i * 0.05 for i in range(7)]
    stats = loop.run(13)
    assert stats.ticks == 20 and stats.overruns == 0 and stats.skipped_ticks == 0
    assert clock.now() == pytest.approx(20 * 0.05)


def test_writes_are_invisible_until_the_next_tick() -> None:
    a, b = Recorder("a", spec("a")), Recorder("b", spec("b"))
    loop = make_loop(SimClock(), a, b)
    loop.run(3)
    assert a.seen[0] == {} and b.seen[0] == {}  # b ran after a, but saw nothing of a's write
    assert b.seen[1] == {"count:a": 0, "count:b": 0}
    assert a.seen[2] == b.seen[2] == {"count:a": 1, "count:b": 1}


def test_outboxes_are_applied_in_cabin_order() -> None:
    a, b = Recorder("a", spec("a")), Recorder("b", spec("b"))
    loop = make_loop(SimClock(), a, b)
    result = loop.step()
    assert [c.cabin for c in result.commands] == ["a", "b"]
    events = loop.assembler.log.query(0.0, kinds=["stepped"])
    assert [sorted(e.tags) for e in events] == [["cabin:a"], ["cabin:b"]]
    assert loop.assembler.board.read("count:a").source == "a"


def test_a_raising_cabin_is_isolated() -> None:
    bad = Recorder("bad", spec("bad"), fail_at={1})
    good = Recorder("good", spec("good"))
    loop = make_loop(SimClock(), bad, good)
    stats = loop.run(4)
    assert stats.ticks == 4 and stats.cabin_failures == 1
    assert len(good.seen) == 4 and len(bad.seen) == 4
    failed = loop.assembler.log.query(0.0, kinds=["cabin_failed"])
    assert len(failed) == 1
    assert failed[0].data["cabin"] == "bad"
    assert failed[0].data["error_type"] == "RuntimeError"
    assert failed[0].data["message"] == "boom at 1"
    assert loop.assembler.board.read("count:bad").value == 3  # its outbox of tick 1 was dropped
    assert loop.assembler.board.read("count:bad").stamp == pytest.approx(0.15)


class FakeTime:
    """A monotonic clock whose sleeps and tick costs are scripted: no real sleeping."""

    def __init__(self) -> None:
        self.t = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


class Slow:
    def __init__(self, name: str, fake: FakeTime, costs: dict[int, float]) -> None:
        self.name = name
        self.spec = spec(name)
        self.fake = fake
        self.costs = costs

    def step(self, view: CabinView, out: Outbox) -> None:
        self.fake.t += self.costs.get(view.tick, 0.01)


@pytest.mark.parametrize(
    ("policy", "skipped", "times"),
    [
        (SkipMissed(), 2, [0.0, 0.05, 0.20, 0.25]),
        (CatchUp(), 0, [0.0, 0.05, 0.17, 0.18]),
    ],
)
def test_wall_clock_overruns_are_counted(policy: object, skipped: int, times: list[float]) -> None:
    fake = FakeTime()
    clock = WallClock(monotonic=fake.monotonic, sleep=fake.sleep)
    cabin = Slow("slow", fake, {1: 0.12})  # tick 1 ends at 0.17 s, past the 0.10 s deadline
    loop = make_loop(clock, cabin, overrun=policy)  # type: ignore[arg-type]
    seen = [loop.step().time for _ in range(4)]
    stats = loop.stats()
    assert stats.skipped_ticks == skipped
    assert stats.overruns >= 1
    assert seen == pytest.approx(times)
    assert all(s > 0 for s in fake.slept)
    overruns = loop.assembler.log.query(0.0, kinds=["tick_overrun"])
    assert overruns and overruns[0].data["tick"] == 1


def test_wall_clock_on_time_never_overruns() -> None:
    fake = FakeTime()
    loop = make_loop(WallClock(monotonic=fake.monotonic, sleep=fake.sleep), Slow("s", fake, {}))
    stats = loop.run(10)
    assert stats.overruns == 0
    assert fake.slept == pytest.approx([0.04] * 10)


def test_reactions_and_capacity_alarms_are_recorded() -> None:
    class Reacting(Recorder):
        def step(self, view: CabinView, out: Outbox) -> None:
            out.react("constraint:*", "alarm:constraint_check", reason="absent")

    goals = ContextSpec(name="r", board_keys=("goal:*",))
    cabin = Reacting("r", goals)
    loop = make_loop(SimClock(), cabin, capacity=1)
    for i in range(3):
        loop.assembler.board.write(f"goal:{i}", i)
    stats = loop.run(2)
    log = loop.assembler.log
    reactions = log.query(0.0, kinds=["reaction"])
    assert [r.data["reaction"] for r in reactions] == ["alarm:constraint_check"] * 2
    assert reactions[0].data["cabin"] == "r"
    assert stats.capacity_alarms == 2  # ticks spent in the alarm
    alarms = log.query(0.0, kinds=["capacity_alarm"])
    assert [a.data["phase"] for a in alarms] == ["start"]  # logged when it starts, not per tick
    for i in range(3):
        loop.assembler.board.delete(f"goal:{i}")
    loop.run(1)
    assert [a.data["phase"] for a in log.query(0.0, kinds=["capacity_alarm"])] == ["start", "end"]


def test_a_cabin_whose_outbox_the_board_would_refuse_is_isolated() -> None:
    class Sloppy(Recorder):
        def step(self, view: CabinView, out: Outbox) -> None:
            out.write("count:sloppy", view.tick)
            out.write("bad key", 1)  # refused at once, inside the cabin's step

    good = Recorder("good", spec("good"))
    sloppy = Sloppy("sloppy", spec("sloppy"))
    loop = make_loop(SimClock(), good, sloppy)
    stats = loop.run(3)
    assert stats.ticks == 3 and stats.cabin_failures == 3
    failed = loop.assembler.log.query(0.0, kinds=["cabin_failed"], limit=None)
    assert {e.data["error_type"] for e in failed} == {"SettingError"}
    assert "bad key" in failed[0].data["message"]
    assert loop.assembler.board.read("count:sloppy") is None  # nothing of its outbox landed
    assert loop.assembler.board.read("count:good").value == 2


def test_outbox_refuses_what_the_sources_would_refuse() -> None:
    out = Outbox("c")
    for bad in (
        lambda: out.write("goal:*", 1),
        lambda: out.write("k", 1, ttl=0),
        lambda: out.delete(""),
        lambda: out.emit(""),
        lambda: out.emit("e", tags=("",)),
        lambda: out.emit("e", tags="abc"),
    ):
        with pytest.raises(ValueError):
            bad()
    assert not out
    out.emit("e", tags=(t for t in ["a", "b"]))  # any iterable of tags, generators too
    assert out.events[0].tags == frozenset({"a", "b"})


def test_suppression_reaches_views() -> None:
    cabin = Recorder("a", ContextSpec(name="a", board_keys=("count:*",), required=("count:*",)))
    missing: list[object] = []

    class Spy(Recorder):
        def step(self, view: CabinView, out: Outbox) -> None:
            missing.append(dict(view.missing))
            super().step(view, out)

    spy = Spy("a", cabin.spec)
    loop = make_loop(SimClock(), spy, suppress=lambda tick, name: ["count:*"] if tick == 2 else [])
    loop.run(4)
    assert missing == [{"count:*": "absent"}, {}, {"count:*": "fault"}, {}]


def test_bad_settings_refused() -> None:
    loop = make_loop(SimClock(), Recorder("a", spec("a")))
    with pytest.raises(ValueError, match="rate_hz"):
        TickLoop(loop.assembler, [], 0, SimClock())
    with pytest.raises(ValueError, match="no spec"):
        TickLoop(loop.assembler, [Recorder("zz", spec("zz"))], 10, SimClock())
    with pytest.raises(ValueError, match="ticks"):
        loop.run(-1)


def test_debug_events_stay_quiet_until_logging_is_configured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io

    from runtime import configure_logging

    def churn() -> None:
        loop = make_loop(SimClock(), Recorder("a", spec("a")), capacity=1)
        for i in range(3):
            loop.assembler.board.write(f"count:x{i}", i)
        loop.run(2)

    churn()
    assert "evicted" not in capsys.readouterr().out
    stream = io.StringIO()
    configure_logging(level="debug", stream=stream)
    churn()
    assert "evicted" in stream.getvalue()


def test_facts_a_cabin_asks_to_remember_are_kept_by_the_loop_and_logged() -> None:
    from runtime.agent.memory import LongTermMemory

    class Learning(Recorder):
        def step(self, view: CabinView, out: Outbox) -> None:
            out.remember(
                "the west aisle is blocked",
                scope={"site": "a"},
                metadata={"x": 1.0},
                stamp=view.time,
            )

    with LongTermMemory(":memory:") as memory:
        loop = make_loop(SimClock(), Learning("l", spec("l")), long_term=memory)
        loop.run(2)
        [record] = memory.records(scope={"site": "a"})  # the same fact twice: kept once
        assert record.content == "the west aisle is blocked" and record.metadata["x"] == 1.0
        seen = loop.assembler.log.query(0.0, kinds=["remembered"])
        assert [(e.data["stored"], e.data["why"]) for e in seen] == [
            (True, "stored"),
            (False, "duplicate"),
        ]
        assert {"cabin:l", "memory"} <= seen[0].tags and seen[0].data["x"] == 1.0
    forgetful = make_loop(SimClock(), Learning("l", spec("l")))  # no long-term memory given
    forgetful.run(1)
    [event] = forgetful.assembler.log.query(0.0, kinds=["remembered"])
    assert (event.data["stored"], event.data["why"]) == (False, "no_long_term_memory")


def test_a_memory_without_content_or_with_a_bad_scope_is_refused_in_the_step() -> None:
    out = Outbox("l")
    with pytest.raises(ValueError, match="needs content"):
        out.remember("  ", scope={})
    with pytest.raises(ValueError, match="scope must map strings to strings"):
        out.remember("a fact", scope={"site": 1})  # type: ignore[dict-item]
    assert not out


def test_a_fact_the_memory_cannot_store_fails_alone_not_the_outbox() -> None:
    from runtime.agent.memory import LongTermMemory

    class Odd(Recorder):
        def step(self, view: CabinView, out: Outbox) -> None:
            super().step(view, out)
            out.remember("a fact", scope={"site": "a"}, metadata={"shape": {"a", "b"}})

    with LongTermMemory(":memory:") as memory:
        cabin = Odd("o", spec("o"))
        loop = make_loop(SimClock(), cabin, long_term=memory)
        result = loop.step()
        assert result.failures == () and [c.name for c in result.commands] == ["drive"]
        [event] = loop.assembler.log.query(0.0, kinds=["remembered"])
        assert (event.data["stored"], event.data["why"]) == (False, "error")
        assert memory.count() == 0
