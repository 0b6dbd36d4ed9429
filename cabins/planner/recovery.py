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

Other cabins set tasks aside too, through the task protocol (``cabins.warehouse.tasks``):
``observe`` takes their refusals and deferrals in view each tick. A refused task is not
taken while the refusal stays on the board (``task_refused`` {"task", "cabin", "reason"},
once per request), a deferred one not before its ``until`` (``task_deferred`` with the
``cabin``); either is taken again, with ``task_resumed``, once the request is withdrawn or
its time has come. These are not strikes: they never lead to an abandonment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from typing import Literal

from cabins.planner.settings import PlannerSettings
from cabins.warehouse.tasks import TaskRequest
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
        self._asked: dict[str, TaskRequest] = {}  # task -> another cabin's request in view
        self._said: dict[str, TaskRequest] = {}  # task -> the request last reported

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

    def observe(
        self, requests: Iterable[TaskRequest], pending: Collection[str], out: Outbox
    ) -> None:
        """Take other cabins' requests in view (a refusal over a deferral of one task), and
        report each new one about a ``pending`` task once."""
        asked: dict[str, TaskRequest] = {}
        for request in requests:
            known = asked.get(request.task)
            if known is None or (request.kind == "refused" and known.kind != "refused"):
                asked[request.task] = request
        self._asked = asked
        for task, request in asked.items():
            if task not in pending or self._said.get(task) == request:
                continue
            self._said[task] = request
            if request.kind == "refused":
                refused = {"task": task, "cabin": request.cabin, "reason": request.reason}
                out.emit("task_refused", refused, tags=("plan",))
            else:
                deferred = {"task": task, "reason": request.reason, "until": request.until}
                out.emit("task_deferred", {**deferred, "cabin": request.cabin}, tags=("plan",))

    def held(self, task: str, now: float) -> TaskRequest | None:
        """Another cabin's request that keeps ``task`` from being worked on at ``now``."""
        request = self._asked.get(task)
        return request if request is not None and request.holds(now) else None

    def given_up(self, task: str) -> bool:
        """Whether ``task`` will not be served: abandoned, or refused by another cabin."""
        request = self._asked.get(task)
        return task in self._abandoned or (request is not None and request.kind == "refused")

    def waiting(self, task: str, now: float) -> bool:
        """Whether ``task`` may not be taken now: abandoned, deferred and its time has not
        come, or held by another cabin's request."""
        if task in self._abandoned:
            return True
        until = self._until.get(task)
        if until is not None and now < until:
            return True
        return bool(self._asked) and self.held(task, now) is not None

    def set_aside(self, task: str) -> bool:
        """Whether ``task`` was deferred, abandoned or asked about (it goes after the
        others)."""
        return task in self._until or task in self._abandoned or task in self._asked

    def resume(self, task: str, out: Outbox) -> None:
        """``task`` is taken again: a ``task_resumed`` event when it was deferred, by the
        planner or by another cabin, or refused."""
        deferred = self._until.pop(task, None) is not None
        if self._said.pop(task, None) is not None or deferred:
            out.emit("task_resumed", {"task": task}, tags=("plan",))

    def forget(self, task: str) -> None:
        """``task`` is over (delivered): nothing is kept about it."""
        self._strikes.pop(task, None)
        self._deferrals.pop(task, None)
        self._until.pop(task, None)
        self._said.pop(task, None)
