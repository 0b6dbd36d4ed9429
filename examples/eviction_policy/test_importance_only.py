"""Property-based tests of the policy in ``importance_only.py``: hypothesis pushes, upserts,
evicts and removes drawn items and checks working memory's invariants after every step.

Run them with ``python -m pytest test_importance_only.py`` (needs hypothesis:
``pip install "tickwork[testing]"``).
"""

from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from importance_only import ImportanceOnly

from runtime import WorkingMemory, WorkItem
from runtime.testing.machines import WorkingMemoryMachine


class ImportanceOnlyMachine(WorkingMemoryMachine):
    """Pins survive, capacity holds (or the alarm says why), every eviction is recorded
    and logged, and each capacity eviction ranks no higher than what stays, by ``rank``."""

    def make_memory(self, capacity: int) -> WorkingMemory:
        return WorkingMemory(capacity, policy=ImportanceOnly())

    def rank(self, item: WorkItem) -> tuple[Any, ...] | None:
        return (item.importance, item.key)  # the order the policy promises


TestImportanceOnly = ImportanceOnlyMachine.TestCase  # pytest runs it as a test case
TestImportanceOnly.settings = settings(max_examples=50, stateful_step_count=30, deadline=None)


class KeepsTheLeastImportant(ImportanceOnly):
    """A broken policy: it evicts the *most* important item first."""

    def victim(self) -> str | None:
        return max(self._ranks.values())[1] if self._ranks else None


class BrokenMachine(ImportanceOnlyMachine):
    def make_memory(self, capacity: int) -> WorkingMemory:
        return WorkingMemory(capacity, policy=KeepsTheLeastImportant())


def test_the_machine_catches_a_policy_that_breaks_its_order() -> None:
    with pytest.raises(AssertionError):
        run_state_machine_as_test(BrokenMachine, settings=settings(max_examples=100, deadline=None))
