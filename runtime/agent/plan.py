"""The plan DAG: steps with dependencies and a status, re-planned without losing work.

A ``Plan`` is an immutable, validated directed acyclic graph of ``PlanStep``s: each
step has an id, a suggested action (or tool) and target, the ids it ``depends_on``
and a status (pending, running, done, failed). A step can run when it is pending and
every dependency is done. Progress is recorded with ``with_status``; re-planning
goes through ``adjust_plan``, which may change or drop only pending and failed
steps: done and running steps must come through unchanged, so re-planning never
loses or rewrites work already done (or under way).

The re-plan triggers are small and generic: ``failed_step`` (a step failed),
``overdue_step`` (a step has run longer than a limit, in ticks or iterations) and
``RepeatWatch`` (the same action twice in a row without progress). The robot
planner cabin and LLM-backed cabins share this module; it knows nothing of either.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, cast

from runtime.errors import SettingError, TickworkError
from runtime.freeze import FreezeError, FrozenDict, freeze

__all__ = [
    "STATUSES",
    "Plan",
    "PlanError",
    "PlanStep",
    "RepeatWatch",
    "ReplanTrigger",
    "StepStatus",
    "failed_step",
    "overdue_step",
]

StepStatus = Literal["pending", "running", "done", "failed"]
STATUSES: tuple[StepStatus, ...] = ("pending", "running", "done", "failed")
_EMPTY: FrozenDict[str, Any] = FrozenDict()
# What ``with_status`` may change besides the status; id and depends_on are structure.
_CHANGEABLE = frozenset({"description", "action", "target", "attempts", "started_at", "data"})


class PlanError(TickworkError, ValueError):
    """A plan that is malformed, or a change to a plan that is not allowed."""


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of a plan: what to do, after which steps, and how far it got."""

    id: str
    description: str = ""
    action: str = ""
    target: str | None = None
    depends_on: tuple[str, ...] = ()
    status: StepStatus = "pending"
    attempts: int = 0
    started_at: float | None = None
    data: Mapping[str, Any] = _EMPTY

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise PlanError(f"a step id must be a non-empty string, got {self.id!r}")
        where = f"step {self.id!r}"
        for name in ("description", "action"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise PlanError(f"{where}: {name} must be a string, got {value!r}")
        if self.target is not None and not isinstance(self.target, str):
            raise PlanError(f"{where}: target must be a string or None, got {self.target!r}")
        if isinstance(self.depends_on, str) or not isinstance(self.depends_on, Iterable):
            raise PlanError(
                f"{where}: depends_on must be a sequence of step ids, got {self.depends_on!r}"
            )
        deps = tuple(self.depends_on)
        for dep in deps:
            if not isinstance(dep, str) or not dep:
                raise PlanError(f"{where}: depends_on holds {dep!r}, not a step id")
        if len(set(deps)) != len(deps):
            raise PlanError(f"{where}: depends_on lists a step twice: {deps!r}")
        if self.id in deps:
            raise PlanError(f"{where} depends on itself")
        if self.status not in STATUSES:
            raise PlanError(
                f"{where}: status must be one of {', '.join(STATUSES)}, got {self.status!r}"
            )
        if (
            isinstance(self.attempts, bool)
            or not isinstance(self.attempts, int)
            or self.attempts < 0
        ):
            raise PlanError(f"{where}: attempts must be an int >= 0, got {self.attempts!r}")
        started = self.started_at
        if started is not None and (
            isinstance(started, bool)
            or not isinstance(started, (int, float))
            or not math.isfinite(started)
        ):
            raise PlanError(f"{where}: started_at must be a finite number or None, got {started!r}")
        if not isinstance(self.data, Mapping):
            raise PlanError(f"{where}: data must be a mapping, got {self.data!r}")
        try:
            data = freeze(self.data, key=f"{self.id}.data")
        except FreezeError as exc:
            raise PlanError(f"{where}: {exc}") from exc
        object.__setattr__(self, "depends_on", deps)
        object.__setattr__(self, "data", data)
        if started is not None:
            object.__setattr__(self, "started_at", float(started))

    def to_data(self) -> FrozenDict[str, Any]:
        """The step as a plain frozen mapping (for the board or a prompt)."""
        return FrozenDict({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> PlanStep:
        """The step ``to_data`` gave; unknown or missing keys are a ``PlanError``."""
        if not isinstance(data, Mapping):
            raise PlanError(f"a step must be a mapping, got {data!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise PlanError(
                f"step {data.get('id')!r}: unknown key(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        if "id" not in data:
            raise PlanError(f"a step needs an 'id', got {dict(data)!r}")
        return cls(**data)


@dataclass(frozen=True, slots=True)
class Plan:
    """A validated DAG of steps, in a preferred order, at a revision."""

    steps: tuple[PlanStep, ...] = ()
    revision: int = 0
    _index: Mapping[str, PlanStep] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.steps, (str, bytes, Mapping)) or not isinstance(self.steps, Iterable):
            raise PlanError(f"steps must be a sequence of PlanStep, got {self.steps!r}")
        steps = tuple(self.steps)
        for i, step in enumerate(steps):
            if not isinstance(step, PlanStep):
                raise PlanError(f"steps[{i}] must be a PlanStep, got {step!r}")
        if (
            isinstance(self.revision, bool)
            or not isinstance(self.revision, int)
            or self.revision < 0
        ):
            raise PlanError(f"revision must be an int >= 0, got {self.revision!r}")
        index: dict[str, PlanStep] = {}
        for step in steps:
            if step.id in index:
                raise PlanError(f"duplicate step id {step.id!r}")
            index[step.id] = step
        for step in steps:
            unknown = [d for d in step.depends_on if d not in index]
            if unknown:
                raise PlanError(
                    f"step {step.id!r} depends on unknown step(s) {', '.join(map(repr, unknown))}"
                )
        cycle = _find_cycle(steps)
        if cycle:
            raise PlanError(f"the plan has a cycle: {' -> '.join(cycle)}")
        for step in steps:
            if step.status in ("running", "done"):
                waiting = [d for d in step.depends_on if index[d].status != "done"]
                if waiting:
                    raise PlanError(
                        f"step {step.id!r} is {step.status} but its dependencies "
                        f"{', '.join(f'{d!r} ({index[d].status})' for d in waiting)} "
                        "are not done"
                    )
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "_index", FrozenDict(index))

    # -- reading ------------------------------------------------------------------------

    def __iter__(self) -> Iterator[PlanStep]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __contains__(self, step_id: object) -> bool:
        return step_id in self._index

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.steps)

    def step(self, step_id: str) -> PlanStep:
        """The step with this id; an unknown id is a ``PlanError``."""
        try:
            return self._index[step_id]
        except KeyError:
            raise PlanError(
                f"no step {step_id!r} in the plan (steps: {', '.join(self.ids) or 'none'})"
            ) from None

    def can_run(self, step_id: str) -> bool:
        """True exactly when the step is pending and every dependency is done."""
        step = self.step(step_id)
        return step.status == "pending" and all(
            self._index[d].status == "done" for d in step.depends_on
        )

    def runnable(self) -> tuple[PlanStep, ...]:
        """The steps that can run now, in plan order."""
        return tuple(s for s in self.steps if self.can_run(s.id))

    def next_runnable(self) -> PlanStep | None:
        """The first step (in plan order) that can run now, or None."""
        return next((s for s in self.steps if self.can_run(s.id)), None)

    @property
    def current(self) -> PlanStep | None:
        """The first running step, or None."""
        return next((s for s in self.steps if s.status == "running"), None)

    @property
    def is_done(self) -> bool:
        """True when every step is done (an empty plan is done)."""
        return all(s.status == "done" for s in self.steps)

    # -- changing -----------------------------------------------------------------------

    def with_status(self, step_id: str, status: StepStatus, **changes: Any) -> Plan:
        """This plan with one step's status (and fields such as ``attempts``) changed.

        A done step is final. A step can start running or be done only when all its
        dependencies are done. The revision stays the same: progress is not a re-plan.
        """
        step = self.step(step_id)
        bad = sorted(set(changes) - _CHANGEABLE)
        if bad:
            raise PlanError(
                f"with_status cannot change {', '.join(bad)} of step {step_id!r} "
                f"(changeable: {', '.join(sorted(_CHANGEABLE))})"
            )
        if status not in STATUSES:
            raise PlanError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        updated = replace(step, status=status, **changes)
        if updated == step:
            return self
        if step.status == "done":
            raise PlanError(f"step {step_id!r} is done; a done step cannot change")
        steps = tuple(updated if s.id == step_id else s for s in self.steps)
        return Plan(steps, self.revision)

    def adjust_plan(self, new_steps: Iterable[PlanStep]) -> Plan:
        """A re-plan: ``new_steps`` at the next revision, keeping done and running steps.

        Pending and failed steps may be changed, dropped or replaced and new steps
        added (not as done or running). Every done and running step must appear
        unchanged; anything else is a ``PlanError`` naming the step.
        """
        candidate = Plan(tuple(new_steps), self.revision + 1)
        for old in self.steps:
            if old.status not in ("done", "running"):
                continue
            if old.id not in candidate:
                raise PlanError(f"adjust_plan cannot drop step {old.id!r}: it is {old.status}")
            new = candidate.step(old.id)
            if new != old:
                raise PlanError(
                    f"adjust_plan cannot change step {old.id!r}: it is "
                    f"{old.status} ({_difference(old, new)})"
                )
        for new in candidate.steps:
            if new.status in ("done", "running") and new.id not in self._index:
                raise PlanError(
                    f"adjust_plan cannot add step {new.id!r} as {new.status}: "
                    "new steps start pending"
                )
            if new.status in ("done", "running") and self._index[new.id].status != new.status:
                raise PlanError(
                    f"adjust_plan cannot make step {new.id!r} {new.status} "
                    f"(it was {self._index[new.id].status}); use with_status"
                )
        return candidate

    # -- plain data ---------------------------------------------------------------------

    def to_data(self) -> FrozenDict[str, Any]:
        """The plan as plain frozen mappings: ``{"revision", "steps": (step, ...)}``."""
        return FrozenDict(
            {"revision": self.revision, "steps": tuple(s.to_data() for s in self.steps)}
        )

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Plan:
        """The plan ``to_data`` gave; malformed data is a ``PlanError``."""
        if not isinstance(data, Mapping):
            raise PlanError(f"a plan must be a mapping, got {data!r}")
        unknown = sorted(str(k) for k in data if k not in ("revision", "steps"))
        if unknown:
            raise PlanError(f"plan: unknown key(s) {', '.join(unknown)} (known: revision, steps)")
        raw_steps = data.get("steps", ())
        if isinstance(raw_steps, (str, bytes, Mapping)) or not isinstance(raw_steps, Iterable):
            raise PlanError(f"plan steps must be a sequence of mappings, got {raw_steps!r}")
        return cls(
            tuple(PlanStep.from_data(s) for s in raw_steps), cast(int, data.get("revision", 0))
        )


def _difference(old: PlanStep, new: PlanStep) -> str:
    changed = [
        f"{f.name} {getattr(old, f.name)!r} -> {getattr(new, f.name)!r}"
        for f in fields(old)
        if getattr(old, f.name) != getattr(new, f.name)
    ]
    return "; ".join(changed)


def _find_cycle(steps: tuple[PlanStep, ...]) -> list[str]:
    """One dependency cycle as ids (first id repeated at the end), or [] if there is none."""
    deps = {s.id: s.depends_on for s in steps}
    colour: dict[str, int] = {}  # absent: unseen, 1: on the current path, 2: finished
    for root in deps:
        if root in colour:
            continue
        path: list[str] = [root]
        todo: list[Iterator[str]] = [iter(deps[root])]
        colour[root] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                todo.pop()
                continue
            state = colour.get(nxt)
            if state == 1:
                cycle = path[path.index(nxt) :]
                cycle.reverse()  # show it in execution order: a -> b means b depends on a
                return [*cycle, cycle[0]]
            if state is None:
                colour[nxt] = 1
                path.append(nxt)
                todo.append(iter(deps[nxt]))
    return []


# -- re-plan triggers --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplanTrigger:
    """Why a plan should be re-planned, and which step caused it."""

    reason: str
    step: str | None = None
    detail: str = ""


def failed_step(plan: Plan) -> ReplanTrigger | None:
    """``step_failed`` for the first failed step of ``plan``, or None."""
    step = next((s for s in plan.steps if s.status == "failed"), None)
    return None if step is None else ReplanTrigger("step_failed", step.id)


def overdue_step(
    plan: Plan, now: float, *, limit: float | Callable[[PlanStep], float]
) -> ReplanTrigger | None:
    """``step_timeout`` for the first running step started more than ``limit`` ago.

    ``now``, ``started_at`` and ``limit`` share one unit: ticks, iterations or seconds.
    ``limit`` may depend on the step (e.g. charging takes longer than a pick).
    """
    for step in plan.steps:
        if step.status != "running" or step.started_at is None:
            continue
        bound = limit(step) if callable(limit) else limit
        if now - step.started_at > bound:
            return ReplanTrigger(
                "step_timeout", step.id, f"running for {now - step.started_at:g} > {bound:g}"
            )
    return None


class RepeatWatch:
    """Spots the same action taken ``repeats`` times in a row without progress.

    ``observe(action, progress)`` is called once per action taken; ``action`` is any
    hashable signature (a tool name and its arguments, a step and its failure reason)
    and ``progress`` any measure that grows when work gets done (steps done, say).
    It returns True when the run of equal actions with no growth in progress reaches
    ``repeats``, and then starts counting afresh.
    """

    __slots__ = ("_count", "_last", "_progress", "repeats")

    def __init__(self, *, repeats: int = 2) -> None:
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
            raise SettingError(f"repeats must be an int >= 2, got {repeats!r}")
        self.repeats = repeats
        self._last: Hashable | None = None
        self._progress = -math.inf
        self._count = 0

    def observe(self, action: Hashable, progress: float) -> bool:
        if self._count and action == self._last and progress <= self._progress:
            self._count += 1
        else:
            self._count = 1
        self._last = action
        self._progress = progress
        if self._count >= self.repeats:
            self._count = 0
            return True
        return False

    def reset(self) -> None:
        self._last = None
        self._progress = -math.inf
        self._count = 0
