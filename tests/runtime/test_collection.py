"""Garbage collection out of ticks: a fake collector on a fake wall clock says when
collections run, and the real one is left on whatever a tick does."""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import CabinView, CatchUp, Outbox, SimClock, SkipMissed, WallClock
from runtime.collection import CollectAnywhere, CollectInSlack
from runtime.errors import SettingError
from tests.runtime.test_loop import FakeTime, make_loop, spec


@dataclass
class FakeCollector:
    """``gc``'s counts and switches, with every call noted at the fake time it was made."""

    time: FakeTime
    threshold: tuple[int, int, int] = (700, 10, 10)
    count: list[int] = field(default_factory=lambda: [0, 0, 0])
    enabled: bool = True
    frozen: int = 0
    calls: list[tuple[float, str, int]] = field(default_factory=list)

    def allocate(self, n: int) -> None:
        self.count[0] += n

    def collect(self, generation: int = 2) -> int:
        self.calls.append((self.time.t, "collect", generation))
        for g in range(generation + 1):
            self.count[g] = 0
        if generation < 2:
            self.count[generation + 1] += 1
        return 0

    def get_count(self) -> tuple[int, int, int]:
        return (self.count[0], self.count[1], self.count[2])

    def get_threshold(self) -> tuple[int, int, int]:
        return self.threshold

    def isenabled(self) -> bool:
        return self.enabled

    def enable(self) -> None:
        self.enabled = True

    def disable(self) -> None:
        self.enabled = False

    def freeze(self) -> None:
        self.frozen += 1


class Busy:
    """A cabin that costs ``cost`` seconds of the fake clock and allocates ``objects``,
    noting whether the collector was on while it ran."""

    def __init__(self, fake: FakeTime, gc_: FakeCollector, cost: float, objects: int) -> None:
        self.name = "busy"
        self.spec = spec("busy")
        self.fake, self.gc, self.cost, self.objects = fake, gc_, cost, objects
        self.ticks: list[tuple[float, float]] = []
        self.collector_on: list[bool] = []

    def step(self, view: CabinView, out: Outbox) -> None:
        start = self.fake.t
        self.collector_on.append(self.gc.enabled)
        self.gc.allocate(self.objects)
        self.fake.t += self.cost
        self.ticks.append((start, self.fake.t))


def _run(
    cost: float, objects: int, ticks: int, *, catch_up: bool = False, **kw: float
) -> tuple[Busy, FakeCollector]:
    fake = FakeTime()
    collector = FakeCollector(fake)
    cabin = Busy(fake, collector, cost, objects)
    policy = CollectInSlack(collector=collector, **kw)  # type: ignore[arg-type]
    clock = WallClock(monotonic=fake.monotonic, sleep=fake.sleep)
    overrun = CatchUp() if catch_up else SkipMissed()
    loop = make_loop(clock, cabin, collection=policy, overrun=overrun)  # type: ignore[arg-type]
    loop.run(ticks)
    return cabin, collector


def test_start_up_is_collected_and_frozen_once_and_no_collection_falls_inside_a_tick() -> None:
    cabin, collector = _run(cost=0.01, objects=2000, ticks=200)
    assert collector.frozen == 1
    assert collector.calls[0][1:] == ("collect", 2)  # the start-up, before the first tick
    assert collector.calls[0][0] <= cabin.ticks[0][0]
    later = collector.calls[1:]
    generations = {g for _, _, g in later}
    assert generations == {0, 1, 2}  # the interpreter's schedule, every generation
    for at, _, _ in later:
        assert not any(start < at < end for start, end in cabin.ticks)
    assert not any(cabin.collector_on)  # off for every tick
    assert collector.enabled  # and on again between ticks and after the run


def test_a_full_collection_waits_for_a_tick_that_leaves_enough_slack() -> None:
    # 45 ms of a 50 ms period: 5 ms of slack, too little for a full collection (10 ms)
    _cabin, collector = _run(cost=0.045, objects=2000, ticks=300)
    later = [g for _, _, g in collector.calls[1:]]
    assert 2 not in later and 1 in later
    _, roomy = _run(cost=0.035, objects=2000, ticks=300)  # 15 ms of slack
    assert 2 in [g for _, _, g in roomy.calls[1:]]


def test_a_loop_that_overruns_every_tick_still_collects_its_young_objects() -> None:
    # catching up, every deadline has passed when a tick ends: no slack at all
    _cabin, collector = _run(cost=0.08, objects=1000, ticks=100, catch_up=True, backlog=5)
    young = [g for _, _, g in collector.calls[1:]]
    assert young and set(young) == {0}  # forced: never the slack for more
    assert collector.count[0] < 5 * 700 + 1000  # bounded by the backlog


def test_defaults_collect_in_slack_on_a_wall_clock_and_anywhere_on_a_sim_clock() -> None:
    fake = FakeTime()
    wall = make_loop(WallClock(monotonic=fake.monotonic, sleep=fake.sleep), spec_cabin())
    sim = make_loop(SimClock(), spec_cabin())
    assert isinstance(wall.collection, CollectInSlack)
    assert isinstance(sim.collection, CollectAnywhere)


def spec_cabin() -> Busy:
    fake = FakeTime()
    return Busy(fake, FakeCollector(fake), 0.0, 0)


@pytest.mark.parametrize(
    "kw", [{"min_slack": -1.0}, {"min_slack": 0.02, "full_slack": 0.01}, {"backlog": 0}]
)
def test_bad_settings_are_refused(kw: dict[str, float]) -> None:
    with pytest.raises(SettingError):
        CollectInSlack(**kw)  # type: ignore[arg-type]


class Failing:
    name = "failing"
    spec = spec("failing")

    def __init__(self) -> None:
        self.collector_on: list[bool] = []

    def step(self, view: CabinView, out: Outbox) -> None:
        self.collector_on.append(gc.isenabled())
        if view.tick % 2:
            raise RuntimeError("boom")


class BadHook:
    def before_freeze(self, tick: int, now: float) -> None:
        if tick == 3:
            raise RuntimeError("a hook that raises")

    def after_apply(self, result: object) -> None:
        pass


@settings(max_examples=20, deadline=None)
@given(ticks=st.integers(1, 6), two_loops=st.booleans())
def test_the_real_collector_is_off_inside_ticks_and_on_after_anything(
    ticks: int, two_loops: bool
) -> None:
    """Failing cabins, a hook that raises out of ``step``, a loop never closed and two
    loops ticking in turn: the real collector is on after each of them."""
    assert gc.isenabled()
    loops = []
    for _ in range(2 if two_loops else 1):
        fake = FakeTime()
        cabin = Failing()
        loop = make_loop(
            WallClock(monotonic=fake.monotonic, sleep=fake.sleep),
            cabin,  # type: ignore[arg-type]
            hooks=(BadHook(),),
        )
        loops.append((loop, cabin))
    for _ in range(ticks):
        for loop, _cabin in loops:
            with contextlib.suppress(RuntimeError):
                loop.step()
            assert gc.isenabled()
    for _loop, cabin in loops:
        assert cabin.collector_on and not any(cabin.collector_on)


def test_the_start_up_collection_comes_before_the_grid_and_costs_no_tick() -> None:
    """A full collection over a large heap takes a while: it must not make the first tick
    overrun (the wall-clock LLM test skipped ticks when it did)."""
    fake = FakeTime()

    class SlowStart(FakeCollector):
        def freeze(self) -> None:
            super().freeze()
            fake.t += 0.3  # six periods of the 20 Hz grid

    collector = SlowStart(fake)
    cabin = Busy(fake, collector, 0.01, 10)
    clock = WallClock(monotonic=fake.monotonic, sleep=fake.sleep)
    loop = make_loop(clock, cabin, collection=CollectInSlack(collector=collector))  # type: ignore[arg-type]
    stats = loop.run(10)
    assert stats.overruns == 0 and stats.skipped_ticks == 0
