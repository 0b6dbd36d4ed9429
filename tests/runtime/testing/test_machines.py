"""The shipped working-memory machine passes on the runtime's policy and catches a policy
that breaks the value order, and the shipped strategies draw valid values."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from runtime import Assembler, FifoEviction, WorkingMemory, WorkItem
from runtime.errors import SettingError
from runtime.patterns import matches
from runtime.testing.machines import WorkingMemoryMachine
from runtime.testing.strategies import SmallWorld, events, readings, small_worlds, specs

TestValueEviction = WorkingMemoryMachine.TestCase
TestValueEviction.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)


class _Fifo(WorkingMemoryMachine):
    """FIFO checked against the value order: the design's pitfall, which the machine finds."""

    def make_memory(self, capacity: int) -> WorkingMemory:
        return WorkingMemory(capacity, policy=FifoEviction())


class _FifoInItsOwnOrder(_Fifo):
    """FIFO checked against no order: every other invariant holds for it too."""

    def rank(self, item: WorkItem) -> tuple[Any, ...] | None:
        return None


def test_the_machine_catches_a_policy_that_forgets_by_time_alone() -> None:
    with pytest.raises(AssertionError):
        run_state_machine_as_test(
            _Fifo, settings=settings(max_examples=200, stateful_step_count=30, deadline=None)
        )


def test_a_users_policy_is_checked_for_the_rest() -> None:
    run_state_machine_as_test(
        _FifoInItsOwnOrder,
        settings=settings(max_examples=40, stateful_step_count=30, deadline=None),
    )


def test_a_nan_last_used_and_an_unknown_reason_are_refused() -> None:
    with pytest.raises(SettingError, match="last_used of 'k' must be a number"):
        WorkItem("k", 1, 0.5, float("nan"))
    memory = WorkingMemory(2)
    memory.push(WorkItem("k", 1, 0.5, 1.0))
    with pytest.raises(SettingError, match="unknown removal reason 'gone'"):
        memory.remove("k", reason="gone")  # type: ignore[arg-type]
    assert "k" in memory


@settings(max_examples=40, deadline=None)
@given(world=small_worlds(), spec=specs(name="a"), extra=st.lists(readings(), max_size=4))
def test_drawn_worlds_and_specs_assemble(
    world: SmallWorld, spec: Any, extra: list[tuple[str, Any, float | None]]
) -> None:
    clock, board, cabin_map, log = world.sources()
    for key, value, ttl in extra:
        board.write(key, value, ttl=ttl)
    ws = Assembler(board, cabin_map, log, WorkingMemory(8), [spec]).assemble(0, clock.now())
    view = ws.view("a")
    on_board = {k for k in board.keys("*") if any(matches(k, p) for p in spec.board_keys)}
    assert on_board <= set(view) | set(view.evicted)


@given(st.lists(events(), max_size=5))
def test_drawn_events_are_loggable(drawn: list[tuple[str, dict[str, Any]]]) -> None:
    from runtime import EventLog, SimClock

    log = EventLog(clock=SimClock())
    for kind, data in drawn:
        log.append(kind, data)
    assert len(log) == len(drawn)
