"""What the executor's view says this tick, read once.

``ViewReader.read(view)`` turns a tick's ``CabinView`` into a ``Seen``: the robot's
pose, velocity and limits, the acceptance numbers, the plan's current step, the route,
the last action outcome, the solids to keep clear of (shelves, forbidden zones and the
world's walls) and, as they are, the map window and the items (for the speed zones and
obstacles, looked at only while driving). The executor's parts take it, never
the view.

A board value is frozen, so the same object is the same value: the reader keeps what it
parsed from each value and parses again only when the value is another object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from shapely.geometry.base import BaseGeometry

from cabins.executor.plan import PlanReading, read_plan
from cabins.warehouse.clearance import Solids, walls_of
from cabins.warehouse.values import (
    ACCEPTANCE,
    ACTION_LAST,
    BATTERY,
    CARGO,
    PLAN,
    POSE,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    ROUTE,
    VELOCITY,
    WORLD_BOUNDS,
    Acceptance,
    ActionOutcome,
    LastRead,
    Point2,
    Pose,
    RobotLimits,
    Velocity,
    read_bounds,
    route_points,
)
from runtime.cabin_map import Feature
from runtime.memory import WorkItem
from runtime.pack import CabinView

__all__ = ["Seen", "ViewReader"]


@dataclass(frozen=True, slots=True)
class Seen:
    """What one tick's view says (see the module docstring)."""

    tick: int
    time: float
    missing: Mapping[str, str]
    """Required pattern -> why it is missing (``absent`` included)."""
    limits: RobotLimits
    accept: Acceptance
    solids: Solids
    plan: PlanReading | None
    route: tuple[Point2, ...] | None
    outcome: ActionOutcome | None
    """The last action outcome (``action:last``), any id."""
    pose: Pose | None
    velocity: Velocity | None
    cargo: Any
    """The ``cargo`` value, unread."""
    battery: Any
    """The ``battery`` value, unread."""
    nearby_map: tuple[Feature, ...]
    items: Mapping[str, WorkItem]
    """Key -> the view's item (with its ``seq``)."""

    def obstacles(self) -> list[Feature]:
        """The obstacles (people, forklifts) in the map window."""
        return [f for f in self.nearby_map if f.kind == "obstacle"]


class ViewReader:
    """Reads a view into a ``Seen``, parsing each board value once (see the module
    docstring)."""

    __slots__ = (
        "_accept_read",
        "_bounds_value",
        "_limits_read",
        "_outcome_read",
        "_plan",
        "_plan_value",
        "_route_points",
        "_route_value",
        "_solids",
        "_walls",
    )

    def __init__(self) -> None:
        self._limits_read: LastRead[RobotLimits] = LastRead()
        self._accept_read: LastRead[Acceptance] = LastRead()
        self._outcome_read: LastRead[ActionOutcome | None] = LastRead()
        self._plan_value: Any = None
        self._plan: PlanReading | None = None
        self._route_value: Any = None
        self._route_points: tuple[Point2, ...] | None = None
        self._bounds_value: Any = None
        self._walls: tuple[tuple[str, BaseGeometry], ...] = ()
        self._solids = Solids.of(())

    def read(self, view: CabinView) -> Seen:
        """What ``view`` says."""
        get = view.get
        limits = self._limits_read.get(
            (get(ROBOT_LIMITS), get(ROBOT_RADIUS)), partial(RobotLimits.in_view, view)
        )
        accept = self._accept_read.get((get(ACCEPTANCE),), partial(Acceptance.in_view, view))
        self._solids = Solids.of(
            view.nearby_map, self._walls_in(get(WORLD_BOUNDS)), last=self._solids
        )
        last = get(ACTION_LAST)
        return Seen(
            tick=view.tick,
            time=view.time,
            missing=view.missing,
            limits=limits,
            accept=accept,
            solids=self._solids,
            plan=self._plan_in(get(PLAN)),
            route=self._route_in(get(ROUTE)),
            outcome=self._outcome_read.get((last,), partial(ActionOutcome.read, last)),
            pose=Pose.read(get(POSE)),
            velocity=Velocity.read(get(VELOCITY)),
            cargo=get(CARGO),
            battery=get(BATTERY),
            nearby_map=view.nearby_map,
            items=view.provenance,
        )

    def _walls_in(self, value: Any) -> tuple[tuple[str, BaseGeometry], ...]:
        if value is not self._bounds_value:
            self._bounds_value, self._walls = value, walls_of(read_bounds(value))
        return self._walls

    def _plan_in(self, value: Any) -> PlanReading | None:
        if value is not self._plan_value:  # values are frozen: the same object, the same plan
            self._plan_value, self._plan = value, read_plan(value)
        return self._plan

    def _route_in(self, value: Any) -> tuple[Point2, ...] | None:
        if value is not self._route_value:
            self._route_value, self._route_points = value, route_points(value)
        return self._route_points
