"""A stateful hypothesis test of working memory's invariants, for users to subclass.

``WorkingMemoryMachine`` is a ``RuleBasedStateMachine`` that pushes, upserts, evicts and
removes drawn ``WorkItem``\\ s and checks after every step what DESIGN.md promises:

- **pins survive**: an item under a pinned pattern (``goal:*``, ``safety:*`` by default)
  is never evicted for capacity;
- **capacity holds, or the alarm says why not**: after ``push`` or ``evict_to_fit`` memory
  holds at most its capacity, or pinned items alone exceed it, nothing else is held and
  ``capacity_alarm`` is raised;
- **value order**: each item evicted for capacity ranks no higher than any unpinned item
  that stays (``rank``: importance, then ``last_used``, then key, ``ValueEviction``'s);
- **every eviction is logged**: what a call evicts is returned, appended to
  ``memory.evictions``, counted in ``evicted_total`` and logged (the ``evicted`` debug
  line), nothing more and nothing less.

Subclass it to test your own policy: override ``make_memory`` (your ``EvictionPolicy``,
capacity, pins) and ``rank`` (the order your policy promises; return None to check no
order), then expose ``TestCase``::

    class TestMyPolicy(WorkingMemoryMachine):
        def make_memory(self, capacity: int) -> WorkingMemory:
            return WorkingMemory(capacity, policy=MyPolicy())

    TestMyPolicyCase = TestMyPolicy.TestCase

Semantics the rules rely on: ``push`` upserts and evicts at once; ``upsert`` never evicts
(memory may hold more than its capacity until the next ``evict_to_fit``); ``remove``
records the reason it is given and is not a capacity eviction.

Requires hypothesis (the ``testing`` extra).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from runtime.memory import Eviction, WorkingMemory, WorkItem
from runtime.testing.strategies import keys, work_items

__all__ = ["WorkingMemoryMachine"]


class WorkingMemoryMachine(RuleBasedStateMachine):
    """Working memory's invariants under drawn pushes, upserts, evictions and removals."""

    def __init__(self) -> None:
        super().__init__()
        self.memory = self.make_memory(4)
        self.tick = 0

    def make_memory(self, capacity: int) -> WorkingMemory:
        """The memory under test (override for your policy)."""
        return WorkingMemory(capacity)

    def rank(self, item: WorkItem) -> tuple[Any, ...] | None:
        """The order the policy evicts in, lowest first (None: check no order)."""
        return (item.importance, item.last_used, item.key)

    @initialize(capacity=st.integers(1, 8))
    def start(self, capacity: int) -> None:
        self.memory = self.make_memory(capacity)

    # -- rules ---------------------------------------------------------------------------

    @rule(item=work_items())
    def push(self, item: WorkItem) -> None:
        self._evicting(lambda: self.memory.push(item, tick=self._next()))
        self._check_fit()

    @rule(item=work_items())
    def upsert(self, item: WorkItem) -> None:
        before = len(self.memory.evictions), self.memory.evicted_total
        self.memory.upsert(item)
        assert (len(self.memory.evictions), self.memory.evicted_total) == before, (
            "upsert evicted something"
        )

    @rule()
    def evict_to_fit(self) -> None:
        self._evicting(lambda: self.memory.evict_to_fit(self._next()))
        self._check_fit()

    @rule(key=keys(), reason=st.sampled_from(("retracted", "stale", "expired")))
    def remove(self, key: str, reason: Any) -> None:
        held = key in self.memory
        done = self._logged(lambda: self.memory.remove(key, reason=reason, tick=self._next()))
        removed, logged = done
        assert (removed is not None) == held and key not in self.memory
        if removed is not None:
            assert removed.reason == reason and logged == [(key, reason)]

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def pins_are_never_evicted_for_capacity(self) -> None:
        for eviction in self.memory.evictions:
            if eviction.reason == "capacity":
                assert not self.memory.is_pinned(eviction.key), eviction

    # -- helpers -------------------------------------------------------------------------

    def _next(self) -> int:
        self.tick += 1
        return self.tick

    def _check_fit(self) -> None:
        memory = self.memory
        if len(memory) > memory.capacity:
            assert memory.capacity_alarm, "over capacity without the alarm"
            assert all(memory.is_pinned(k) for k in memory), "an unpinned item stayed over capacity"
        else:
            assert not memory.capacity_alarm

    def _evicting(self, call: Callable[[], tuple[Eviction, ...]]) -> None:
        memory = self.memory
        kept, total = len(memory.evictions), memory.evicted_total
        out, logged = self._logged(call)
        assert memory.evicted_total == total + len(out)
        assert list(memory.evictions)[kept:] == list(out) or len(memory.evictions) == (
            memory.evictions.maxlen
        )
        assert logged == [(e.key, e.reason) for e in out], (logged, out)
        assert all(e.reason == "capacity" for e in out)
        self._check_order(out)

    def _check_order(self, out: tuple[Eviction, ...]) -> None:
        stays = [
            self.rank(item) for item in self.memory.items() if not self.memory.is_pinned(item.key)
        ]
        for eviction in out:
            gone = self.rank(WorkItem(eviction.key, None, eviction.importance, eviction.last_used))
            if gone is None:
                return
            assert all(gone <= r for r in stays if r is not None), (eviction, stays)

    @staticmethod
    def _logged(call: Callable[[], Any]) -> tuple[Any, list[tuple[str, str]]]:
        """``call()`` and the (key, reason) pairs of the ``evicted`` lines it logged."""
        with structlog.testing.capture_logs() as lines:
            result = call()
        pairs = [tuple(k) for line in lines if line["event"] == "evicted" for k in line["keys"]]
        return result, pairs
