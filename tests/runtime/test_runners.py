"""The loop's runners: one per kind of cabin, and what a tick's decisions hand to the apply
phase."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from runtime import (
    Assembler,
    CabinFailure,
    CabinMap,
    CabinView,
    ContextSpec,
    EventLog,
    Outbox,
    SimClock,
    StateBoard,
    WorkingMemory,
)
from runtime.asynchronous import AsyncDecisions, Notices, Returned, SimulatedExecutor
from runtime.runners import (
    AsyncRunner,
    AtOnceRunner,
    LoopContext,
    SyncRunner,
    TickDecisions,
    runner_for,
)
from runtime.testing import ManualExecutor
from runtime.timing import Timing


class Writer:
    """Writes its tick; raises at the ticks in ``fail_at``."""

    def __init__(self, name: str, fail_at: tuple[int, ...] = ()) -> None:
        self.name = name
        self.spec = ContextSpec(name=name, board_keys=("n",))
        self.fail_at = fail_at

    def step(self, view: CabinView, out: Outbox) -> None:
        if view.tick in self.fail_at:
            raise RuntimeError(f"boom at {view.tick}")
        out.write(f"seen:{self.name}", view.tick)


def _decisions(tick: int, cabins: list[Writer], *, notices: bool) -> TickDecisions:
    clock = SimClock()
    assembler = Assembler(
        StateBoard(clock=clock),
        CabinMap(),
        EventLog(clock=clock),
        WorkingMemory(),
        [c.spec for c in cabins],
    )
    ws = assembler.assemble(tick, 0.0)
    loop = LoopContext(lambda t, c: (), {}, 0.05, clock, structlog.get_logger("test"))
    return TickDecisions(tick, 0.0, ws, loop, Notices() if notices else None)


def _pending(*names: str, latency: float = 0.0, executor: Any = None) -> AsyncDecisions:
    timing = Timing(mode="async", latency=latency)
    return AsyncDecisions(
        dict.fromkeys(names, timing), executor if executor is not None else SimulatedExecutor()
    )


def test_each_cabin_gets_the_runner_of_its_kind() -> None:
    sync, slow, quick = Writer("sync"), Writer("slow"), Writer("quick")
    pending = AsyncDecisions(
        {"slow": Timing(mode="async", latency=0.2), "quick": Timing(mode="async")},
        SimulatedExecutor(),
    )
    assert isinstance(runner_for(sync, pending), SyncRunner)
    assert isinstance(runner_for(sync, None), SyncRunner)
    assert isinstance(runner_for(slow, pending), AsyncRunner)
    assert isinstance(runner_for(quick, pending), AtOnceRunner)
    # without a simulated executor nothing is back at once
    threads = _pending("quick", executor=ManualExecutor())
    assert isinstance(runner_for(quick, threads), AsyncRunner)


def test_the_collect_pass_takes_what_the_cabins_decided_in_cabin_order() -> None:
    cabins = [Writer("a"), Writer("b", fail_at=(3,)), Writer("c")]
    decided = _decisions(3, cabins, notices=False)
    runners = [SyncRunner(c) for c in cabins]
    for runner in runners:
        runner.decide(decided)
    assert [v.cabin for v in decided.views] == ["a", "b", "c"]
    assert decided.outboxes == [] and decided.failures == []  # nothing handed over yet
    for runner in runners:
        runner.collect(decided)
    assert [o.cabin for o in decided.outboxes] == ["a", "c"]
    assert [(f.cabin, f.error_type) for f in decided.failures] == [("b", "RuntimeError")]
    for runner in runners:  # a decision is handed over once
        runner.collect(decided)
    assert len(decided.outboxes) == 2 and len(decided.failures) == 1


def test_an_asynchronous_cabin_is_shown_a_view_only_when_idle() -> None:
    cabin = Writer("slow")
    executor = ManualExecutor()
    runner = AsyncRunner(cabin, _pending("slow", executor=executor))
    first = _decisions(0, [cabin], notices=True)
    runner.decide(first)
    runner.collect(first)
    assert len(first.views) == 1 and first.outboxes == [] and first.returned == []
    second = _decisions(1, [cabin], notices=True)
    runner.decide(second)  # still deciding: no view
    assert second.views == []
    executor.finish("slow")
    runner.collect(second)
    assert [(r.decided_tick, r.applied_tick) for r in second.returned] == [(0, 1)]
    assert [o.cabin for o in second.outboxes] == ["slow"]


def test_a_decision_at_once_is_back_at_its_tick() -> None:
    cabin = Writer("quick", fail_at=(1,))
    runner = AtOnceRunner(cabin, _pending("quick"))
    for tick, status in ((0, "on_time"), (1, "failed")):
        decided = _decisions(tick, [cabin], notices=True)
        runner.decide(decided)
        runner.collect(decided)
        assert [(r.status, r.decided_tick, r.applied_tick) for r in decided.returned] == [
            (status, tick, tick)
        ]
        assert len(decided.outboxes) + len(decided.failures) == 1


@pytest.mark.parametrize(
    ("status", "taken"),
    [("on_time", "outbox"), ("rechecked", "outbox"), ("dropped", None), ("failed", "failure")],
)
def test_a_returned_decision_is_recorded_and_taken_unless_dropped(
    status: Any, taken: str | None
) -> None:
    decided = _decisions(2, [Writer("x")], notices=True)
    out = Outbox("x")
    failure = CabinFailure("x", "RuntimeError", "boom") if status == "failed" else None
    back = Returned("x", 0, 2, 0.1, status, None if failure else out, failure)
    decided.back(None)
    assert decided.returned == []
    decided.back(back)
    assert decided.returned == [back]
    assert decided.outboxes == ([out] if taken == "outbox" else [])
    assert decided.failures == ([failure] if taken == "failure" else [])
