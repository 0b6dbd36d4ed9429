"""The goal stack: the ``goal:deliver:*`` goals on the board, and the one worked on.

The planner works on one task at a time. While it has none, it takes the goal the
dispatcher's ``dispatch:order`` ranks first, else the oldest released (ties by task
id); a task the planner deferred goes after the others, and one it abandoned, or
deferred until a time still to come, is not taken (``recovery``), nor one another cabin
refused or deferred (the task protocol). A task is over when its goal leaves the board: it
was delivered. Once the last task is over (or only abandoned or refused ones are left) a
``plan_done`` event says how many were done. Goals are parsed once per
write: a goal item that is the same object as last tick is not read again; one that is
not a readable delivery goal is ignored, with a warning.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import structlog

from cabins.planner.recovery import Recovery
from cabins.planner.seen import Seen
from cabins.warehouse.values import GOAL_DELIVER_PREFIX, DeliverGoal
from runtime.cabin import Outbox

__all__ = ["Choice", "Goals"]

_log = structlog.get_logger(__name__)


class Choice(NamedTuple):
    """What ``Goals.choose`` decided: whether the active task is over, and the goal of
    the task it started (None: none started)."""

    finished: bool
    started: DeliverGoal | None


_KEPT_ON = Choice(False, None)
_FINISHED = Choice(True, None)


class Goals:
    """The delivery goals known and the active task (see the module docstring)."""

    def __init__(self) -> None:
        self._goals: dict[str, DeliverGoal] = {}  # task -> its goal
        self._items: dict[str, tuple[Any, DeliverGoal | None]] = {}  # key -> (value, parsed)
        self._task: str | None = None
        self._tasks_done = 0
        self._busy = False  # worked on a task since the last plan_done

    @property
    def task(self) -> str | None:
        """The active task, or None."""
        return self._task

    @property
    def active(self) -> DeliverGoal | None:
        """The goal of the active task, while it is on the board."""
        return self._goals.get(self._task) if self._task is not None else None

    @property
    def pending(self) -> frozenset[str]:
        """The tasks whose goals are on the board."""
        return frozenset(self._goals)

    @property
    def tasks_done(self) -> int:
        """How many tasks were over (their goals left the board)."""
        return self._tasks_done

    def update(self, seen: Seen) -> None:
        """Read the goals in view (call it only while they are in view)."""
        parsed: dict[str, tuple[Any, DeliverGoal | None]] = {}
        for key, value in seen.goals:
            known = self._items.get(key)
            if known is not None and known[0] is value:
                parsed[key] = known
                continue
            goal = (
                DeliverGoal.read(value, seen.docks) if key.startswith(GOAL_DELIVER_PREFIX) else None
            )
            if goal is None:
                _log.warning("planner.goal_ignored", key=key, value=value)
            parsed[key] = (value, goal)
        if parsed.keys() != self._items.keys() or any(
            parsed[k] is not self._items[k] for k in parsed
        ):
            self._goals = {g.task: g for _, g in parsed.values() if g is not None}
        self._items = parsed

    def choose(self, seen: Seen, out: Outbox, aside: Recovery | None = None) -> Choice:
        """End the active task if its goal left the board; with no active task, start
        the first goal in order, or say ``plan_done`` once after the last task. With
        ``aside``, a task it deferred goes after the others, and one it abandoned, or
        deferred until a time still to come, is not taken."""
        finished = False
        if self._task is not None and self._task not in self._goals:
            self._tasks_done += 1
            self._task = None
            finished = True
        if self._task is None and self._goals:
            order = seen.dispatch_order()
            rank = {task: i for i, task in enumerate(order)}
            ready = [
                g
                for g in self._goals.values()
                if aside is None or not aside.waiting(g.task, seen.time)
            ]
            if ready:
                goal = min(
                    ready,
                    key=lambda g: (
                        aside is not None and aside.set_aside(g.task),
                        rank.get(g.task, len(order)),
                        g.released,
                        g.task,
                    ),
                )
                self._task = goal.task
                self._busy = True
                if aside is not None:
                    aside.resume(goal.task, out)
                return Choice(finished, goal)
        if self._task is None and self._busy and self._all_given_up(aside):
            self._busy = False
            out.emit("plan_done", {"tasks_done": self._tasks_done}, tags=("plan",))
        return _FINISHED if finished else _KEPT_ON

    def others_ready(self, aside: Recovery, now: float) -> bool:
        """Whether a task other than the active one could be taken now."""
        return any(t != self._task and not aside.waiting(t, now) for t in self._goals)

    def put_aside(self) -> None:
        """Stop working on the active task, though its goal stays (deferred, abandoned)."""
        self._task = None

    def _all_given_up(self, aside: Recovery | None) -> bool:
        """Whether every goal left was abandoned or refused (none, without ``aside``)."""
        if aside is None:
            return not self._goals
        return all(aside.given_up(task) for task in self._goals)
