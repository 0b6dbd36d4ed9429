"""A step budget per task: how many model requests an agent may spend on one task across
ticks before the task is given up.

A cap on the rounds of one decision does not stop a model that never finishes: the next
tick starts a new decision with a fresh cap. ``StepBudget`` counts the requests spent on
each task (a goal key, or None for an agent with one task) across decisions, until the
model answers (``answered``: the count starts again). A task whose count reaches
``limit``, or that met an error asking again cannot fix, is given up (``give_up``, with
the reason): the agent does not ask about it again while it lasts. ``keep_only`` forgets
the tasks that are gone, so what it holds stays bounded by the tasks in sight.
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime.errors import SettingError

__all__ = ["StepBudget"]


class StepBudget:
    """Requests spent per task, and the tasks given up with why (see the module docstring)."""

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise SettingError(f"a step budget must be an int >= 1, got {limit!r}")
        self.limit = limit
        self.spent: dict[str | None, int] = {}
        self.given_up: dict[str | None, str] = {}

    def left(self, task: str | None) -> int:
        """Requests ``task`` may still make (0 once given up)."""
        if task in self.given_up:
            return 0
        return max(0, self.limit - self.spent.get(task, 0))

    def spend(self, task: str | None, requests: int = 1) -> None:
        self.spent[task] = self.spent.get(task, 0) + requests

    def answered(self, task: str | None) -> None:
        """The model finished ``task`` for now: its count starts again."""
        self.spent.pop(task, None)

    def give_up(self, task: str | None, reason: str) -> None:
        self.given_up[task] = reason

    def reason(self, task: str | None) -> str | None:
        """Why ``task`` was given up, or None while it is not."""
        return self.given_up.get(task)

    def keep_only(self, tasks: Iterable[str | None]) -> None:
        """Forget the tasks not in ``tasks`` (gone from sight: a new task of the same name
        starts with a whole budget)."""
        live = set(tasks)
        for held in (self.spent, self.given_up):
            for task in [t for t in held if t not in live]:
                del held[task]
