"""The plan as the executor reads it: the plan's revision and task, and its current step.

The planner writes ``plan`` (its steps, each with an id, an action, a target and a status,
and which one is current). The executor needs only the step to carry out now and what
identifies it across plan revisions (``Step.key``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cabins.warehouse.values import Point2
from runtime.position import read_xy

__all__ = ["ACTIONS", "PlanReading", "Step", "StepKey", "read_plan"]

StepKey = tuple[str, str, str]
"""(task, step id, action): the identity of a step across plan revisions."""

ACTIONS: Final = frozenset({"go_to", "pick", "drop", "charge"})
"""The actions the executor carries out."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the planner's plan, as the executor reads it."""

    id: str
    action: str
    target: str | None
    target_xy: Point2 | None
    task: str | None
    status: str
    until: float | None = None  # the level a charge step charges to (None: the setting's)

    @property
    def key(self) -> StepKey:
        return (self.task or "", self.id, self.action)

    @classmethod
    def parse(cls, value: Any) -> Step | None:
        """A step from a plan entry, or None when it is not a well-formed step."""
        if not isinstance(value, Mapping):
            return None
        step_id, action = value.get("id"), value.get("action")
        if not isinstance(step_id, str) or action not in ACTIONS:
            return None
        target = value.get("target")
        task = value.get("task")
        status = value.get("status", "pending")
        return cls(
            id=step_id,
            action=str(action),
            target=target if isinstance(target, str) else None,
            target_xy=read_xy(value.get("target_xy")),
            task=task if isinstance(task, str) else None,
            status=status if isinstance(status, str) else "pending",
            until=float(until) if isinstance(until := value.get("until"), int | float) else None,
        )


@dataclass(frozen=True, slots=True)
class PlanReading:
    """The plan's revision, its task and its current step (None when it has none)."""

    revision: int
    task: str | None
    step: Step | None


def read_plan(value: Any) -> PlanReading | None:
    """The plan's revision, task and current step (None when the plan is malformed)."""
    if not isinstance(value, Mapping):
        return None
    revision = value.get("revision", 0)
    steps = value.get("steps", ())
    if (
        isinstance(revision, bool)
        or not isinstance(revision, int)
        or not isinstance(steps, Sequence)
    ):
        return None
    task = value.get("task")
    task = task if isinstance(task, str) else None
    parsed = [s for s in (Step.parse(v) for v in steps) if s is not None]
    current = value.get("current")
    step: Step | None = None
    if isinstance(current, str):
        step = next((s for s in parsed if s.id == current), None)
    elif current is None and "current" not in value:
        step = next((s for s in parsed if s.status == "running"), None) or next(
            (s for s in parsed if s.status == "pending"), None
        )
    return PlanReading(revision, task, step)
