"""Working memory: forgetting by value, pinning, the FIFO pitfall."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from runtime import FifoEviction, ValueEviction, WorkingMemory, WorkItem

KEYS = st.sampled_from(
    [
        "goal:a",
        "goal:b",
        "goal:c",
        "safety:x",
        "safety:y",
        "pose",
        "battery",
        "constraint:speed:z",
        "noise:1",
        "noise:2",
        "noise:3",
        "noise:4",
        "map:s1",
        "map:s2",
        "event:e:1",
        "event:e:2",
    ]
)
IMPORTANCE = st.sampled_from([0.0, 0.1, 0.5, 0.5, 0.9, 1.0])


def is_pinned(key: str) -> bool:
    return key.startswith(("goal:", "safety:"))


class ValueEvictionMachine(RuleBasedStateMachine):
    """ValueEviction against a reference model that evicts with a plain ``min`` scan."""

    def __init__(self) -> None:
        super().__init__()
        self.capacity = 4
        self.memory = WorkingMemory(capacity=self.capacity)
        self.model: dict[str, tuple[float, float, float]] = {}
        self.now = 0.0
        self.tick = 0
        self.pinned_seen: set[str] = set()

    def _model_evict(self) -> list[str]:
        evicted = []
        while len(self.model) > self.capacity:
            free = [(imp, used, k) for k, (imp, used, _) in self.model.items() if not is_pinned(k)]
            if not free:
                break
            victim = min(free)[2]
            del self.model[victim]
            evicted.append(victim)
        return evicted

    def _upsert_model(self, key: str, importance: float) -> None:
        first = self.model[key][2] if key in self.model else self.now
        self.model[key] = (importance, self.now, first)

    @rule(key=KEYS, importance=IMPORTANCE, dt=st.sampled_from([0.0, 0.05, 1.0]))
    def push(self, key: str, importance: float, dt: float) -> None:
        self.now += dt
        self.tick += 1
        evictions = self.memory.push(WorkItem(key, key, importance, self.now), tick=self.tick)
        self._upsert_model(key, importance)
        assert [e.key for e in evictions] == self._model_evict()
        assert all(e.reason == "capacity" and e.tick == self.tick for e in evictions)
        pinned = sum(1 for k in self.model if is_pinned(k))
        assert self.memory.capacity_alarm == (pinned > self.capacity)
        if is_pinned(key):
            self.pinned_seen.add(key)

    @rule(batch=st.lists(st.tuples(KEYS, IMPORTANCE), min_size=1, max_size=8))
    def upsert_batch_then_evict(self, batch: list[tuple[str, float]]) -> None:
        self.now += 0.05
        self.tick += 1
        for key, importance in batch:
            self.memory.upsert(WorkItem(key, key, importance, self.now))
            self._upsert_model(key, importance)
            if is_pinned(key):
                self.pinned_seen.add(key)
        evictions = self.memory.evict_to_fit(self.tick)
        assert [e.key for e in evictions] == self._model_evict()

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def retract(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.model)))
        eviction = self.memory.remove(key, reason="retracted", tick=self.tick)
        assert eviction is not None and eviction.reason == "retracted"
        del self.model[key]
        self.pinned_seen.discard(key)

    @invariant()
    def same_contents_as_model(self) -> None:
        assert set(self.memory.keys()) == set(self.model)
        for key, (importance, used, first) in self.model.items():
            item = self.memory.get(key)
            assert item is not None
            assert (item.importance, item.last_used, item.first_seen) == (importance, used, first)

    @invariant()
    def size_within_capacity_unless_pins_alone_exceed(self) -> None:
        pinned = sum(1 for k in self.memory if is_pinned(k))
        if pinned <= self.capacity:
            assert len(self.memory) <= self.capacity
        else:
            assert len(self.memory) == pinned

    @invariant()
    def pinned_always_survive(self) -> None:
        assert self.pinned_seen <= set(self.memory.keys())


TestValueEviction = ValueEvictionMachine.TestCase
TestValueEviction.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


@given(st.lists(st.tuples(KEYS, IMPORTANCE, st.sampled_from([0.0, 0.5, 1.0])), max_size=40))
def test_same_operations_same_result(ops: list[tuple[str, float, float]]) -> None:
    def run() -> tuple[tuple[str, ...], list[tuple[int, str, str]]]:
        memory = WorkingMemory(capacity=5)
        now = 0.0
        for i, (key, importance, dt) in enumerate(ops):
            now += dt
            memory.push(WorkItem(key, i, importance, now), tick=i)
        return memory.keys(), [(e.tick, e.key, e.reason) for e in memory.evictions]

    assert run() == run()


def test_eviction_preserves_goals() -> None:
    """The seed's self-test: after flooding memory, goals and safety items survive."""
    memory = WorkingMemory()
    memory.push(WorkItem("goal:deliver", "loading bay", importance=1.0))
    memory.push(WorkItem("safety:forbidden_zone", "high voltage", importance=1.0))
    for i in range(memory.capacity + 4):
        memory.push(WorkItem(f"noise:{i}", i, importance=0.1))
    assert "goal:deliver" in memory
    assert "safety:forbidden_zone" in memory
    assert len(memory) == memory.capacity


def test_pinned_alone_over_capacity_raises_alarm_and_keeps_them() -> None:
    memory = WorkingMemory(capacity=3)
    for i in range(5):
        memory.push(WorkItem(f"goal:{i}", i, importance=1.0))
    memory.push(WorkItem("pose", (0, 0), importance=0.9))
    assert set(memory.keys()) == {f"goal:{i}" for i in range(5)}
    assert memory.capacity_alarm
    assert memory.capacity_alarms >= 3
    assert [e.key for e in memory.evictions] == ["pose"]


def test_evicts_stalest_of_equal_importance() -> None:
    """The seed's key ``-last_used`` evicted the freshest; the intent is the stalest."""
    memory = WorkingMemory(capacity=2)
    memory.push(WorkItem("old", 1, 0.5, last_used=1.0))
    memory.push(WorkItem("new", 2, 0.5, last_used=2.0))
    memory.push(WorkItem("newest", 3, 0.5, last_used=3.0))
    assert set(memory.keys()) == {"new", "newest"}
    assert memory.evictions[-1].key == "old"


def _flood(memory: WorkingMemory) -> None:
    """A constraint written at t=1, then a flood of refreshed low-value readings at t=2."""
    memory.push(WorkItem("constraint:speed:aisle", 0.5, importance=0.9, last_used=1.0), tick=1)
    for i in range(memory.capacity * 2):
        memory.push(WorkItem(f"reading:{i}", i, importance=0.1, last_used=2.0), tick=2)


def test_fifo_pitfall_pushes_out_fresh_constraint() -> None:
    fifo = WorkingMemory(capacity=8, policy=FifoEviction())
    _flood(fifo)
    assert "constraint:speed:aisle" not in fifo
    assert any(e.key == "constraint:speed:aisle" for e in fifo.evictions)


def test_value_eviction_keeps_fresh_constraint() -> None:
    value = WorkingMemory(capacity=8, policy=ValueEviction())
    _flood(value)
    assert "constraint:speed:aisle" in value
    assert len(value) == 8


def test_importance_outside_unit_interval_refused() -> None:
    with pytest.raises(ValueError, match="importance of 'x'"):
        WorkItem("x", 1, importance=1.5)
