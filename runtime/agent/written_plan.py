"""A plan as a model writes it: JSON text in, a checked ``Plan`` out, or an error the model
can act on.

The agent turn (``runtime.agent.turn``) asks its model for a plan as strict JSON::

    {"steps": [{"id": "s1", "description": "Sum the revenue of every product line",
                "tool": "sum_revenue", "verify": "total_revenue is saved",
                "depends_on": []}, ...]}

``read_plan`` checks such a reply against ``PlanRules``: one JSON object (alone, or alone in
one fenced code block), ``min_steps`` to ``max_steps`` steps, each with an id, a
description, a ``verify`` (how to tell the step is done: each step must be verifiable), an
optional ``tool`` that is one of the tools offered, and ``depends_on`` naming earlier
steps; then ``Plan`` itself refuses duplicate ids, unknown dependencies and cycles. Every
problem found is named in one ``PlanError``, whose text goes back to the model.

``read_revision`` reads a revised plan the same way, each step with its ``status``, and
adopts it with ``Plan.adjust_plan``: every done step must come back exactly as it was,
new steps come pending, no step may stay failed (retry it as pending, replace it or drop
it), between one and ``max_steps`` steps are left to do and one of them can run now.
``plan_json`` is a plan as the model is shown it (with the result of each done step, which
a revision may echo back).

A step's suggested tool is ``PlanStep.action`` and its check ``PlanStep.data["verify"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime.agent.plan import STATUSES, Plan, PlanError, PlanStep
from runtime.errors import SettingError
from runtime.freeze import FrozenDict

__all__ = ["PLAN_SHAPE", "PlanRules", "plan_json", "read_plan", "read_revision", "verify_of"]

PLAN_SHAPE = (
    '{"steps": [{"id": "s1", "description": "what to do", "tool": "a tool name or null", '
    '"verify": "how to tell it is done", "depends_on": []}]}'
)
"""The shape of a plan, as the model is told it."""

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```$", re.DOTALL)
_KEYS = frozenset({"id", "description", "tool", "verify", "depends_on"})
_REVISION_KEYS = _KEYS | {"status", "result"}


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanRules:
    """What a written plan must be: ``min_steps`` to ``max_steps`` steps (a revision: one to
    ``max_steps`` left to do), each tool one of ``tools`` (any name when empty)."""

    min_steps: int = 3
    max_steps: int = 8
    tools: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name in ("min_steps", "max_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingError(f"{name} must be an int >= 1, got {value!r}")
        if self.min_steps > self.max_steps:
            raise SettingError(
                f"min_steps ({self.min_steps}) must be at most max_steps ({self.max_steps})"
            )
        object.__setattr__(self, "tools", frozenset(self.tools))


def verify_of(step: PlanStep) -> str:
    """How to tell ``step`` is done, as its plan says."""
    return str(step.data.get("verify", ""))


def read_plan(text: str | None, rules: PlanRules) -> Plan:
    """The plan ``text`` writes (every step pending), or a ``PlanError`` naming each
    problem."""
    raw = _steps_of(text)
    problems: list[str] = []
    steps = _read_steps(raw, rules, problems, revision=False)
    if not problems and not rules.min_steps <= len(raw) <= rules.max_steps:
        problems.append(
            f"the plan has {len(raw)} steps; write {rules.min_steps} to {rules.max_steps}"
        )
    return _checked(problems, lambda: Plan(tuple(steps)))


def read_revision(plan: Plan, text: str | None, rules: PlanRules) -> Plan:
    """``plan`` revised as ``text`` writes it (through ``Plan.adjust_plan``), or a
    ``PlanError`` naming each problem."""
    raw = _steps_of(text)
    problems: list[str] = []
    steps = _read_steps(raw, rules, problems, revision=True)
    left = [s for s in steps if s.status != "done"]
    for step in steps:
        if step.status == "failed":
            problems.append(
                f"step {step.id!r} is still failed: retry it as pending, replace it or drop it"
            )
    if not problems and not 1 <= len(left) <= rules.max_steps:
        problems.append(
            f"the revision leaves {len(left)} steps to do; leave 1 to {rules.max_steps}"
        )

    def adopt() -> Plan:
        revised = plan.adjust_plan(steps)
        if not revised.runnable():
            raise PlanError("no step of the revision can run: each waits for one not done")
        return revised

    return _checked(problems, adopt)


def plan_json(plan: Plan, results: Mapping[str, Any] | None = None) -> str:
    """``plan`` as the model is shown it: each step's id, description, tool, verify,
    depends_on and status, and the result of each done step in ``results``."""
    shown = []
    for step in plan.steps:
        item: dict[str, Any] = {
            "id": step.id,
            "description": step.description,
            "tool": step.action or None,
            "verify": verify_of(step),
            "depends_on": list(step.depends_on),
            "status": step.status,
        }
        if results is not None and step.id in results:
            item["result"] = results[step.id]
        shown.append(item)
    return json.dumps({"steps": shown}, ensure_ascii=False)


# -- reading --------------------------------------------------------------------------------


def _steps_of(text: str | None) -> list[Any]:
    """The ``steps`` list of the reply's one JSON object."""
    body = (text or "").strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced[1].strip()
    if not body:
        raise PlanError(f"the reply is empty; answer with the plan as JSON only: {PLAN_SHAPE}")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise PlanError(
            f"the reply is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            f"answer with the plan as JSON only, no prose: {PLAN_SHAPE}"
        ) from None
    if not isinstance(data, dict):
        raise PlanError(f"the plan must be a JSON object {PLAN_SHAPE}, got {_kind(data)}")
    unknown = sorted(set(data) - {"steps"})
    if unknown:
        raise PlanError(f"the plan has unknown keys {unknown}; it holds only 'steps'")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise PlanError(f"'steps' must be a non-empty list of steps, got {_kind(steps)}")
    return steps


def _read_steps(
    raw: list[Any], rules: PlanRules, problems: list[str], *, revision: bool
) -> list[PlanStep]:
    steps: list[PlanStep] = []
    known = _REVISION_KEYS if revision else _KEYS
    for i, item in enumerate(raw):
        where = f"step {i + 1}"
        if not isinstance(item, dict):
            problems.append(f"{where} is {_kind(item)}, not an object")
            continue
        if isinstance(item.get("id"), str) and item["id"].strip():
            where = f"step {item['id']!r}"
        before = len(problems)
        unknown = sorted(set(item) - known)
        if unknown:
            problems.append(f"{where} has unknown keys {unknown} (known: {sorted(known)})")
        for name in ("id", "description", "verify"):
            value = item.get(name)
            if not isinstance(value, str) or not value.strip():
                what = " (how to tell the step is done)" if name == "verify" else ""
                problems.append(f"{where} needs a non-empty string {name!r}{what}")
        tool = item.get("tool")
        if tool is not None and not isinstance(tool, str):
            problems.append(f"{where}: 'tool' must be a tool's name or null, got {_kind(tool)}")
        elif tool and rules.tools and tool not in rules.tools:
            problems.append(f"{where}: no tool {tool!r} (tools: {', '.join(sorted(rules.tools))})")
        depends = item.get("depends_on", [])
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            problems.append(f"{where}: 'depends_on' must be a list of step ids")
        status = item.get("status", "pending")
        if status not in (STATUSES if revision else ("pending",)):
            allowed = ", ".join(STATUSES) if revision else "pending (or no status)"
            problems.append(f"{where}: status {status!r} is not one of {allowed}")
        if len(problems) > before:
            continue
        try:
            step = PlanStep(
                id=item["id"].strip(),
                description=item["description"].strip(),
                action=tool or "",
                depends_on=tuple(depends),
                status=status,
                data=FrozenDict({"verify": item["verify"].strip()}),
            )
        except PlanError as exc:  # depends on itself, or lists a step twice
            problems.append(str(exc))
            continue
        steps.append(step)
    return steps


def _checked(problems: list[str], build: Callable[[], Plan]) -> Plan:
    if problems:
        raise PlanError("; ".join(problems))
    return build()


def _kind(value: Any) -> str:
    names = {list: "a list", str: "a string", bool: "a boolean", dict: "an object"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)
