"""The steps of a delivery: go to the pick-up dock, pick, go to the drop dock, drop.

A plan for a ``goal:deliver:*`` goal is a chain of steps, each depending on the one
before it. The pick-up steps are left out while the robot carries the goal's item;
go-to-charger and charge steps come first while the battery is below its low level, or
when the planner's energy estimate (``energy``) says the charge does not cover the rest.
A step's id is the task and the step's name (``t1:go_pickup``); an id the task used
before (``burned``, or kept in the plan) gets a number (``t1:go_pickup.1``), so a step
that failed is never mistaken for the one that replaces it.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import structlog

from cabins.planner.seen import Seen
from cabins.warehouse.routing import Point2
from cabins.warehouse.values import DeliverGoal
from runtime.agent.plan import Plan, PlanStep

__all__ = ["chain", "charge_steps", "charging_planned", "needed_steps", "needs_charge"]

_log = structlog.get_logger(__name__)


def needs_charge(seen: Seen) -> bool:
    """Whether the battery is below its low level."""
    return seen.battery is not None and seen.battery < seen.low_battery


def charging_planned(plan: Plan) -> bool:
    """Whether ``plan`` has a charge step still to do."""
    return any(s.action == "charge" and s.status in ("pending", "running") for s in plan)


def needed_steps(
    goal: DeliverGoal,
    seen: Seen,
    kept: tuple[PlanStep, ...],
    *,
    burned: set[str],
    charge_until: float,
    charge: bool | None = None,
) -> list[PlanStep]:
    """The steps still to do for ``goal``, given the cargo, the battery and the ``kept``
    steps; ``burned`` are the ids the task used, ``charge_until`` the level to charge to;
    ``charge`` says whether to charge first (None: while the battery is below its low
    level)."""
    if seen.cargo_known:
        carrying = seen.cargo == goal.task
    else:
        picked = any(s.action == "pick" and s.status == "done" for s in kept)
        carrying = picked and not any(s.action == "drop" and s.status == "done" for s in kept)
    taken = {s.id for s in kept} | burned
    steps: list[PlanStep] = []
    if needs_charge(seen) if charge is None else charge:
        steps.extend(charge_steps(goal.task, seen, taken, charge_until=charge_until))
    new = partial(_new_step, taken, goal.task)
    if not carrying:
        pickup, at = goal.pickup, goal.pickup_xy
        steps.append(new("go_pickup", "go_to", pickup, at, f"go to the pick-up dock {pickup}"))
        steps.append(new("pick", "pick", pickup, at, f"pick {goal.task} at {pickup}"))
    drop, at = goal.drop, goal.drop_xy
    steps.append(new("go_drop", "go_to", drop, at, f"go to the drop dock {drop}"))
    steps.append(new("drop", "drop", drop, at, f"drop {goal.task} at {drop}"))
    return steps


def charge_steps(task: str, seen: Seen, taken: set[str], *, charge_until: float) -> list[PlanStep]:
    """Go to the nearest charger and charge there to ``charge_until``; none without a
    charger in view. The ids used are added to ``taken``."""
    places = seen.charger_places()
    if not places:
        _log.warning("planner.no_charger", battery=seen.battery)
        return []
    here = seen.pose or (0.0, 0.0)
    charger = min(places, key=lambda c: (math.dist(here, places[c]), c))
    xy = places[charger]
    return [
        _new_step(taken, task, "go_charger", "go_to", charger, xy, f"go to the charger {charger}"),
        _new_step(
            taken,
            task,
            "charge",
            "charge",
            charger,
            xy,
            f"charge at {charger} to {charge_until:g}",
            until=charge_until,
        ),
    ]


def _new_step(
    taken: set[str],
    task: str,
    base: str,
    action: str,
    target: str,
    xy: Point2,
    description: str,
    **extra: Any,
) -> PlanStep:
    step_id = f"{task}:{base}"
    n = 0
    while step_id in taken:
        n += 1
        step_id = f"{task}:{base}.{n}"
    taken.add(step_id)
    return PlanStep(
        step_id, description, action, target, data={"task": task, "target_xy": xy, **extra}
    )


def chain(kept: tuple[PlanStep, ...], tail: list[PlanStep]) -> tuple[PlanStep, ...]:
    """``kept`` then ``tail``, each tail step depending on the step before it."""
    chained: list[PlanStep] = []
    previous = kept[-1].id if kept else None
    for step in tail:
        deps = (previous,) if previous is not None else ()
        chained.append(
            step
            if step.depends_on == deps
            else PlanStep(
                step.id,
                step.description,
                step.action,
                step.target,
                deps,
                step.status,
                step.attempts,
                step.started_at,
                step.data,
            )
        )
        previous = step.id
    return (*kept, *chained)
