"""Asynchronous cabins on a loop: a slow cabin never delays a fast one, late decisions are
dropped (or re-checked) with an event, and every asynchronous run on a simulated clock is
exact. Fake clocks and injected executors only: nothing here sleeps."""

from __future__ import annotations

import concurrent.futures as cf
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    TickResult,
    WallClock,
    WorkingMemory,
    load_spec,
)
from runtime.asynchronous import Asynchronous, SimulatedExecutor, Task, ThreadExecutor
from runtime.cabin import LATE_PREFIX, DropLate, RecheckLate, late_policy, same_view, timing_of
from runtime.errors import TickworkError
from runtime.testing import ManualExecutor, make_view
from runtime.timing import Timing

RATE = 20.0


def spec(name: str, **timing: Any) -> ContextSpec:
    return ContextSpec(
        name=name, board_keys=("x", "late:*"), timing={"mode": "async", **timing} if timing else {}
    )


@dataclass
class Counter:
    """Counts its steps; writes ``<name>:n`` and the tick it decided on."""

    spec: ContextSpec
    seen: list[int] = field(default_factory=list)
    slow_seconds: float = 0.0
    clock: FakeTime | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        if self.clock is not None:
            self.clock.t += self.slow_seconds  # a step that takes this long on the wall clock
        self.seen.append(view.tick)
        out.write(f"{self.name}:n", len(self.seen))
        out.write(f"{self.name}:decided", view.tick)


class FakeTime:
    """A wall clock's time source and sleep, moved by hand."""

    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class Rig:
    cabins: list[Any]
    clock: Any = field(default_factory=SimClock)
    executor: Any = None

    def __post_init__(self) -> None:
        self.board = StateBoard(clock=self.clock)
        self.log = EventLog(clock=self.clock)
        assembler = Assembler(
            self.board, CabinMap(), self.log, WorkingMemory(), [c.spec for c in self.cabins]
        )
        self.loop = TickLoop(assembler, self.cabins, RATE, self.clock, executor=self.executor)
        self.results: list[TickResult] = []

    def run(self, ticks: int) -> list[TickResult]:
        for _ in range(ticks):
            self.results.append(self.loop.step())
        return self.results

    def events(self, kind: str) -> list[Any]:
        return [e.data for e in self.log.query(0.0, 1e9, kinds=[kind], limit=None)]

    def returned(self) -> list[tuple[str, int, int, str]]:
        return [
            (r.cabin, r.decided_tick, r.applied_tick, r.status)
            for res in self.results
            for r in res.returned
        ]


def test_a_slow_cabin_never_delays_a_fast_one_on_the_sim_clock() -> None:
    fast, slow = Counter(spec("fast")), Counter(spec("slow", latency=1.0))
    rig = Rig([fast, slow])
    rig.run(60)
    assert fast.seen == list(range(60))  # every tick, on time
    assert slow.seen == [0, 21, 42]  # decides on the view of the tick it was idle at
    assert rig.returned() == [("slow", 0, 20, "on_time"), ("slow", 21, 41, "on_time")]
    # applied at the apply phase of the tick it came back by: written then, visible next tick
    written = rig.board.read("slow:decided")
    assert written is not None and written.value == 21 and written.stamp == pytest.approx(41 / RATE)
    assert [len(r.views) for r in rig.results[:3]] == [2, 1, 1]  # no view while deciding
    assert rig.loop.stats().overruns == 0


class AtOnce:
    """An executor that decides when started and hands the result back at that apply phase:
    the general path, which a zero-latency cabin on a SimulatedExecutor skips."""

    name = "at-once"

    def start(self, task: Task, *, tick: int, period: float) -> Any:
        return task.run()

    def poll(self, handle: Any, *, tick: int) -> Any:
        return handle

    def close(self) -> None:
        pass


def test_a_zero_latency_decision_is_back_at_once_as_through_an_executor() -> None:
    class Flaky(Counter):
        def step(self, view: CabinView, out: Outbox) -> None:
            super().step(view, out)
            if view.tick % 3 == 2:
                raise RuntimeError("no model this time")

    def run(executor: Any) -> tuple[Rig, list[Any]]:
        cabins = [Counter(spec("fast")), Flaky(spec("flaky", latency=0.0)), Counter(spec("b"))]
        rig = Rig(cabins, executor=executor)
        in_flight = []
        for _ in range(9):
            rig.run(1)
            assert rig.loop.asynchronous is not None
            in_flight.append(rig.loop.asynchronous.in_flight())
        return rig, in_flight

    quick, in_flight = run(None)  # a SimulatedExecutor: decide_now, nothing ever in flight
    assert quick.loop.asynchronous is not None
    assert isinstance(quick.loop.asynchronous.executor, SimulatedExecutor)
    assert quick.loop.asynchronous.at_once("flaky") and in_flight == [{}] * 9
    general, _ = run(AtOnce())
    assert general.loop.asynchronous is not None
    assert not general.loop.asynchronous.at_once("flaky")
    assert quick.returned() == general.returned()
    statuses = [r[3] for r in quick.returned() if r[0] == "flaky"]
    assert statuses == ["on_time", "on_time", "failed"] * 3
    assert quick.events("cabin_failed") == general.events("cabin_failed")
    assert quick.board.read("flaky:n") == general.board.read("flaky:n")
    drawn = Rig([Counter(spec("s", latency=0.0, latency_max=0.5))]).loop.asynchronous
    assert drawn is not None and not drawn.at_once("s")  # a drawn latency may not be zero


def test_on_a_fake_wall_clock_the_loop_never_waits_for_an_asynchronous_decision() -> None:
    time = FakeTime()
    executor = ManualExecutor()
    fast = Counter(spec("fast"), slow_seconds=0.001, clock=time)
    slow = Counter(spec("slow", mode="async"))  # its second passes off the tick thread:
    rig = Rig(
        [fast, slow],
        clock=WallClock(monotonic=time.monotonic, sleep=time.sleep),
        executor=executor,
    )
    rig.run(20)  # one second of ticks while it decides
    assert executor.started == [("slow", 0)] and executor.pending == ("slow",)
    assert time.t == pytest.approx(1.0)
    executor.finish("slow")  # the model answers, a second after it was asked
    rig.run(40)
    assert fast.seen == list(range(60))
    stats = rig.loop.stats()
    assert stats.ticks == 60 and stats.skipped_ticks <= 3  # the 57 of 60, here all 60
    assert rig.returned()[0] == ("slow", 0, 20, "on_time")
    assert executor.started[1] == ("slow", 21)

    # the same cabin deciding inside the tick: the loop holds 3 ticks in 60 slots
    time2 = FakeTime()
    fast2 = Counter(spec("fast"), slow_seconds=0.001, clock=time2)
    blocking = Counter(ContextSpec(name="slow", board_keys=("x",)), slow_seconds=1.0, clock=time2)
    sync = Rig([fast2, blocking], clock=WallClock(monotonic=time2.monotonic, sleep=time2.sleep))
    while sync.loop.tick + sync.loop.stats().skipped_ticks < 60:
        sync.run(1)
    assert len(fast2.seen) == 3  # the report: 3 times in 3 s instead of 60


def test_a_late_decision_is_dropped_with_an_event_and_the_cabin_is_late_on_the_board() -> None:
    executor = ManualExecutor()
    watcher = Counter(spec("watcher"))
    slow = Counter(spec("slow", max_age=10))
    rig = Rig([watcher, slow], executor=executor)
    rig.run(12)  # ticks 0..11: past max_age at tick 11's apply phase
    (overdue,) = rig.events("decision_late")
    assert overdue["phase"] == "overdue" and overdue["limit"] == "max_age"
    assert (overdue["decided_tick"], overdue["tick"], overdue["age_ticks"]) == (0, 11, 11)
    late = rig.board.read(f"{LATE_PREFIX}slow")
    assert late is not None and late.value["since_tick"] == 11 and late.source == "loop"
    rig.run(1)
    assert rig.results[-1].views[0]["late:slow"]["cabin"] == "slow"  # other cabins see it
    executor.finish("slow")
    rig.run(1)  # tick 13: it comes back, too old: dropped, never applied
    assert rig.returned() == [("slow", 0, 13, "dropped")]
    dropped = rig.events("decision_late")[-1]
    assert dropped["phase"] == "dropped" and dropped["policy"] == "drop"
    assert rig.board.read("slow:n") is None and rig.results[-1].outboxes[-1].cabin == "watcher"
    stats = rig.loop.stats()
    assert (stats.late_decisions, stats.dropped_decisions) == (1, 1)
    # the next decision, on time, ends the lateness
    rig.run(1)
    executor.finish("slow")
    rig.run(1)
    assert rig.returned()[-1] == ("slow", 14, 15, "on_time")
    assert rig.board.read(f"{LATE_PREFIX}slow") is None
    assert rig.board.read("slow:decided").value == 14  # type: ignore[union-attr]


def test_a_deadline_in_seconds_makes_a_decision_late_on_the_sim_clock() -> None:
    slow = Counter(spec("slow", latency=2.0, deadline=1.5))
    rig = Rig([slow])
    rig.run(41)
    # 1.5 s is 30 ticks: overdue at tick 31, back at tick 40 (2 s) and dropped
    phases = [(e["phase"], e["tick"], e["limit"]) for e in rig.events("decision_late")]
    assert phases == [("overdue", 31, "deadline"), ("dropped", 40, "deadline")]
    assert rig.returned() == [("slow", 0, 40, "dropped")]
    on_time = Rig([Counter(spec("slow", latency=1.5, deadline=1.5))])
    on_time.run(31)
    assert on_time.returned() == [("slow", 0, 30, "on_time")]  # met to the last float digit


def test_a_late_decision_is_rechecked_when_the_spec_says_so() -> None:
    executor = ManualExecutor()
    slow = Counter(spec("slow", max_age=2, on_late="recheck"))
    rig = Rig([slow], executor=executor)
    rig.run(5)
    executor.finish("slow")
    rig.run(1)  # the view is unchanged: it still holds
    assert rig.returned() == [("slow", 0, 5, "rechecked")]
    assert rig.events("decision_late")[-1]["phase"] == "applied"
    assert rig.board.read("slow:n").value == 1  # type: ignore[union-attr]
    assert rig.board.read(f"{LATE_PREFIX}slow") is None
    rig.run(5)
    rig.board.write("x", 42)  # the world changed under the decision
    rig.run(1)
    executor.finish("slow")
    rig.run(1)
    assert rig.returned()[-1][3] == "dropped"


class Picky:
    """A cabin with its own re-check: a late decision holds while x is below 10."""

    def __init__(self, spec: ContextSpec) -> None:
        self.spec, self.name = spec, spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        out.write("picky:x", view.get("x"))

    def recheck(self, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        return int(current.get("x", 0)) < 10


def test_a_cabin_may_recheck_its_late_decisions_itself() -> None:
    executor = ManualExecutor()
    picky = Picky(spec("picky", max_age=1, on_late="recheck"))
    rig = Rig([picky], executor=executor)
    rig.board.write("x", 5)
    rig.run(2)
    rig.board.write("x", 6)  # changed, but the cabin's own re-check says it still holds
    executor.finish("picky")
    rig.run(1)
    assert rig.returned() == [("picky", 0, 2, "rechecked")]
    rig.board.write("x", 11)
    rig.run(2)
    executor.finish("picky")
    rig.run(1)
    assert rig.returned()[-1] == ("picky", 3, 5, "dropped")
    assert isinstance(late_policy(picky), RecheckLate)
    assert isinstance(late_policy(Counter(spec("c", max_age=1))), DropLate)


def test_an_asynchronous_cabin_that_raises_is_isolated_at_the_tick_it_comes_back() -> None:
    class Broken:
        def __init__(self) -> None:
            self.spec, self.name = spec("broken", latency=0.2), "broken"

        def step(self, view: CabinView, out: Outbox) -> None:
            raise RuntimeError("no model")

    fast = Counter(spec("fast"))
    rig = Rig([fast, Broken()])
    rig.run(6)
    assert rig.returned() == [("broken", 0, 4, "failed")]
    (failed,) = rig.events("cabin_failed")
    assert failed["tick"] == 4 and failed["error_type"] == "RuntimeError"
    assert rig.results[4].failures[0].cabin == "broken" and len(fast.seen) == 6


def test_zero_latency_asynchronous_cabins_decide_exactly_as_synchronous_ones() -> None:
    def writes(timing: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        cabins = [Counter(spec("a", **timing)), Counter(spec("b"))]
        rig = Rig(cabins)
        seen: list[tuple[str, Any, Any]] = []
        rig.board.add_listener(lambda r, key: seen.append((key, r and r.value, r and r.stamp)))
        rig.run(30)
        return seen

    assert writes({"latency": 0.0}) == writes({})


def test_the_asynchronous_wrapper_and_spec_timing() -> None:
    inner = Counter(ContextSpec(name="c"))
    assert not timing_of(inner).is_async
    wrapped = Asynchronous(inner, latency=0.5, max_age=4)
    assert timing_of(wrapped) == Timing(mode="async", latency=0.5, max_age=4)
    rig = Rig([Counter(spec("fast")), wrapped])
    rig.run(12)
    assert rig.returned()[0] == ("c", 0, 10, "dropped")  # 0.5 s = 10 ticks > max_age 4
    with pytest.raises(ValueError, match="latency_max"):
        Asynchronous(inner, latency=2.0, latency_max=1.0)


def test_timing_is_validated_with_the_key_named(tmp_path: Any) -> None:
    from runtime.spec import SpecError

    path = tmp_path / "bad.toml"
    path.write_text('[timing]\nmode = "async"\ndeadlin = 2.0\n')
    with pytest.raises(SpecError, match=r"timing.deadlin: unknown key \(did you mean 'deadline'"):
        load_spec(path)
    for body, problem in [
        ('mode = "later"', "timing.mode"),
        ("deadline = 0.0", "timing.deadline: Input should be greater than 0"),
        ("deadline = 7200.0", "timing.deadline: Input should be less than or equal to 3600"),
        ("max_age = -1", "timing.max_age"),
        ("max_age = 0", "timing.max_age: Input should be greater than or equal to 1"),
        ("max_age = 1000001", "timing.max_age: Input should be less than or equal to 1000000"),
        ("latency = nan", "timing.latency"),
        ("deadline = inf", "timing.deadline"),
        ("latency = 2.0\nlatency_max = 1.0", "latency_max"),
    ]:
        path.write_text(f"[timing]\n{body}\n")
        with pytest.raises(SpecError, match=problem):
            load_spec(path)
    assert Timing(deadline=2.0).unused() == ["deadline"]
    assert Timing(mode="async", deadline=2.0).unused() == []


def _schema_accepts(prop: dict[str, Any], value: float | int | None) -> bool:
    """Whether a property of the generated JSON Schema accepts ``value`` (numbers only)."""
    branches = prop.get("anyOf", [prop])
    for b in branches:
        if b.get("type") == "null" and value is None:
            return True
        if value is None or b.get("type") not in ("number", "integer"):
            continue
        if b["type"] == "integer" and not isinstance(value, int):
            continue  # TOML gives an int only for an integer literal
        if value != value or value in (float("inf"), float("-inf")):
            continue  # JSON has no NaN or infinity
        if "minimum" in b and value < b["minimum"]:
            continue
        if "exclusiveMinimum" in b and value <= b["exclusiveMinimum"]:
            continue
        if "maximum" in b and value > b["maximum"]:
            continue
        return True
    return False


NUMBERS = (
    st.integers(-3, 3)
    | st.integers(999_990, 1_000_010)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, -0.0, 3600.0, 3600.0001, 1e-300])
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    field_name=st.sampled_from(["deadline", "max_age", "latency", "latency_max"]),
    value=NUMBERS,
)
def test_the_json_schema_bounds_timing_as_the_loader_does(field_name: str, value: float) -> None:
    from runtime.spec import json_schema

    prop = json_schema()["$defs"]["Timing"]["properties"][field_name]
    try:
        Timing.model_validate({"mode": "async", field_name: value})
        loaded = True
    except ValueError:
        loaded = False
    assert loaded == _schema_accepts(prop, value)


@settings(max_examples=40, deadline=None)
@given(
    latency=st.floats(0.0, 1.5),
    spread=st.floats(0.0, 1.5),
    max_age=st.none() | st.integers(1, 30),
    deadline=st.none() | st.floats(0.05, 2.0),
    seed=st.integers(0, 2**32 - 1),
    ticks=st.integers(1, 120),
)
def test_asynchronous_decisions_keep_their_invariants(
    latency: float,
    spread: float,
    max_age: int | None,
    deadline: float | None,
    seed: int,
    ticks: int,
) -> None:
    import numpy as np

    timing = {"latency": latency, "latency_max": latency + spread}
    timing |= {} if max_age is None else {"max_age": max_age}
    timing |= {} if deadline is None else {"deadline": deadline}

    def run() -> tuple[Rig, Counter, Counter]:
        fast, slow = Counter(spec("fast")), Counter(spec("slow", **timing))
        clock = SimClock()
        rig = Rig([fast, slow], clock=clock)
        rig.loop = TickLoop(
            rig.loop.assembler, [fast, slow], RATE, clock, rng=np.random.default_rng(seed)
        )
        rig.run(ticks)
        return rig, fast, slow

    rig, fast, slow = run()
    assert fast.seen == list(range(ticks))  # the fast cabin runs on every tick
    back = [r for res in rig.results for r in res.returned]
    # one decision in flight at a time: each starts on the tick after the last came back
    assert slow.seen[0] == 0
    assert slow.seen[1:] == [r.applied_tick + 1 for r in back][: len(slow.seen) - 1]
    for r in back:
        assert r.decided_tick <= r.applied_tick
        age = r.applied_tick - r.decided_tick
        too_old = (max_age is not None and age > max_age) or (
            deadline is not None and r.age_s > deadline + 1e-9
        )
        assert (r.status == "dropped") == too_old
        assert r.age_s == pytest.approx(age / RATE)
    applied = [r.decided_tick for r in back if r.status == "on_time"]
    n = rig.board.read("slow:decided")
    assert (n.value if n is not None else None) == (applied[-1] if applied else None)
    again, _, _ = run()  # same seed, same run
    assert rig.returned() == again.returned()


def test_a_thread_executor_decides_off_the_tick_thread() -> None:
    release = threading.Event()
    threads: list[str] = []

    class Waiting:
        def __init__(self) -> None:
            self.spec, self.name = spec("waiting", mode="async"), "waiting"

        def step(self, view: CabinView, out: Outbox) -> None:
            threads.append(threading.current_thread().name)
            release.wait(10)
            out.write("waited", view.tick)

    fast = Counter(spec("fast"))
    executor = ThreadExecutor(max_workers=1)
    rig = Rig([fast, Waiting()], executor=executor)
    try:
        rig.run(5)
        assert len(fast.seen) == 5 and rig.returned() == []
        release.set()
        job = rig.loop.asynchronous._slots["waiting"].job  # type: ignore[union-attr]
        assert job is not None
        cf.wait([job.handle], timeout=10)
        rig.run(1)
        assert rig.returned() == [("waiting", 0, 5, "on_time")]
        assert threads[0].startswith("tickwork-decide")
        with pytest.raises(TickworkError, match="cannot be checkpointed"):
            rig.loop.asynchronous.get_state()  # type: ignore[union-attr]
    finally:
        release.set()
        rig.loop.close()
        rig.loop.close()  # twice is fine


def test_same_view_compares_values_and_missing_items() -> None:
    s = ContextSpec(name="c", board_keys=("a", "b"), required=("b",))
    import numpy as np

    one = make_view(s, board={"a": np.arange(3)})
    assert same_view(one, make_view(s, board={"a": np.arange(3)}))
    assert not same_view(one, make_view(s, board={"a": np.arange(4)}))
    assert not same_view(one, make_view(s, board={"a": np.arange(3), "b": 1}))
