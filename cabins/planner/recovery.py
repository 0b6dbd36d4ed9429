"""Recovery: what the planner does with a task that stalls, and the tasks it set aside.

Each stalled episode of a task (``watchdog``) is a strike against it, and the planner
recovers in order:

1. the first strike re-routes it: the long way round the movers, however long;
2. the next strikes defer it (``task_deferred`` {"task", "reason", "until"}): it goes to
   the back, the next task is served, and it is taken again once ``defer_s`` seconds
   have passed and it ranks first (``task_resumed`` {"task"}), at most
   ``max_deferrals`` times;
3. the strike after the last deferral abandons it (``task_abandoned`` {"task",
   "reason"}): it is never taken again, and its goal stays undelivered.

So a task is given up after at most ``max_deferrals + 2`` stalled episodes, each of
``watchdog_s`` seconds without progress. A task whose item the robot carries is never
deferred nor abandoned: the robot can carry one item, so it could serve no other task,
and it is re-routed at each strike instead (each with its ``stalled`` alarm). A task in
a stand-off with no spot to give way is deferred at once when another task can be
served (``StandOff.cornered``); that counts as one of its deferrals.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from cabins.planner.settings import PlannerSettings
from runtime.cabin import Outbox

__all__ = ["Recovery", "Remedy"]

Remedy = Literal["reroute", "defer", "abandon"]
"""What a strike against a task does."""


class Recovery:
    """The strikes against each task, the tasks deferred and abandoned (see the module
    docstring)."""

    def __init__(self, settings: PlannerSettings) -> None:
        self._settings = settings
        self._strikes: Counter[str] = Counter()
        self._deferrals: Counter[str] = Counter()
        self._until: dict[str, float] = {}  # deferred task -> when it may be taken again
        self._abandoned: dict[str, str] = {}  # task -> why

    @property
    def abandoned(self) -> dict[str, str]:
        """The tasks given up, and why."""
        return dict(self._abandoned)

    @property
    def deferred(self) -> dict[str, float]:
        """The tasks set aside, and when each may be taken again."""
        return dict(self._until)

    def remedy(self, task: str, *, carried: bool) -> Remedy:
        """Count a strike against ``task`` and say what it does; ``carried``: the robot
        carries its item."""
        self._strikes[task] += 1
        if self._strikes[task] == 1 or carried:
            return "reroute"
        if self._deferrals[task] < self._settings.max_deferrals:
            return "defer"
        return "abandon"

    def can_defer(self, task: str) -> bool:
        """Whether ``task`` has a deferral left."""
        return self._deferrals[task] < self._settings.max_deferrals

    def defer(self, task: str, reason: str, now: float, out: Outbox) -> None:
        """Set ``task`` aside until ``defer_s`` from ``now`` (a ``task_deferred`` event)."""
        until = round(now + self._settings.defer_s, 3)
        self._deferrals[task] += 1
        self._until[task] = until
        out.emit(
            "task_deferred",
            {"task": task, "reason": reason, "until": until},
            tags=("plan",),
        )

    def abandon(self, task: str, reason: str, out: Outbox) -> None:
        """Give ``task`` up for good (a ``task_abandoned`` event)."""
        self._until.pop(task, None)
        self._abandoned[task] = reason
        out.emit("task_abandoned", {"task": task, "reason": reason}, tags=("plan",))

    def waiting(self, task: str, now: float) -> bool:
        """Whether ``task`` may not be taken now: abandoned, or deferred and its time has
        not come."""
        if task in self._abandoned:
            return True
        until = self._until.get(task)
        return until is not None and now < until

    def set_aside(self, task: str) -> bool:
        """Whether ``task`` was deferred or abandoned (it goes after the others)."""
        return task in self._until or task in self._abandoned

    def resume(self, task: str, out: Outbox) -> None:
        """``task`` is taken again: a ``task_resumed`` event when it was deferred."""
        if self._until.pop(task, None) is not None:
            out.emit("task_resumed", {"task": task}, tags=("plan",))

    def forget(self, task: str) -> None:
        """``task`` is over (delivered): nothing is kept about it."""
        self._strikes.pop(task, None)
        self._deferrals.pop(task, None)
        self._until.pop(task, None)
