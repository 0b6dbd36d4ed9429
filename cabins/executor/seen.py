"""What the executor's view says this tick, read once.

``ViewReader.read(view)`` turns a tick's ``CabinView`` into a ``Seen``: the robot's
pose, velocity and limits, the acceptance numbers, the plan's current step, the route,
the last action outcome, the solids to keep clear of (shelves, forbidden zones and the
world's walls), the failure records in view and why they are missing (what the retry
policy is chosen by), and, as they are, the map window (for the obstacles) and the speed
zone items (parsed by ``SpeedZones``, only while driving). The executor's parts take the
``Seen``, never the view.

A board value is frozen, so the same object is the same value: the reader keeps what it
parsed from each value and parses again only when the value is another object. The
view's keys are gathered once a tick, for every prefix the reader looks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from cabins.executor.plan import PlanReading, read_plan
from cabins.executor.retry import FAILURE_PATTERN
from cabins.warehouse.clearance import Solids, Walls
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
    SPEED_ZONE_PREFIX,
    VELOCITY,
    WORLD_BOUNDS,
    Acceptance,
    ActionOutcome,
    KeysOf,
    LastRead,
    Point2,
    Pose,
    RobotLimits,
    Velocity,
    route_points,
)
from runtime.cabin_map import Feature
from runtime.memory import WorkItem
from runtime.pack import CabinView
from runtime.patterns import literal_prefix, matches

__all__ = ["Seen", "ViewReader"]


@dataclass(slots=True)
class Seen:
    """What one tick's view says (see the module docstring). Built once per tick and only
    read after (not frozen: a frozen one costs three times as much to build)."""

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
    speed_zones: Sequence[tuple[str, WorkItem]]
    """The speed zone items (``constraint:speed:*``), (key, item with its ``seq``), in the
    view's order."""
    failures: int
    """How many failure records (items matching the failure pattern) are in view."""
    failures_missing: str | None
    """Why the failure records are missing (``absent`` included), or None."""

    def obstacles(self) -> list[Feature]:
        """The obstacles (people, forklifts) in the map window."""
        return [f for f in self.nearby_map if f.kind == "obstacle"]


class ViewReader:
    """Reads a view into a ``Seen``, parsing each board value once (see the module
    docstring). ``failure_pattern`` names the failure records (the retry chooser's)."""

    __slots__ = (
        "_accept_read",
        "_failure_count",
        "_failure_keys",
        "_failure_prefix",
        "_keys_of",
        "_limits_read",
        "_outcome_read",
        "_plan",
        "_plan_value",
        "_route_points",
        "_route_value",
        "_solids",
        "_walls",
        "failure_pattern",
    )

    def __init__(self, failure_pattern: str = FAILURE_PATTERN) -> None:
        self.failure_pattern = failure_pattern
        self._failure_prefix = literal_prefix(failure_pattern)
        self._failure_keys: tuple[str, ...] | None = None
        self._failure_count = 0
        self._keys_of = KeysOf()
        self._limits_read: LastRead[RobotLimits] = LastRead()
        self._accept_read: LastRead[Acceptance] = LastRead()
        self._outcome_read: LastRead[ActionOutcome | None] = LastRead()
        self._plan_value: Any = None
        self._plan: PlanReading | None = None
        self._route_value: Any = None
        self._route_points: tuple[Point2, ...] | None = None
        self._walls = Walls()
        self._solids = Solids.of(())

    def read(self, view: CabinView) -> Seen:
        """What ``view`` says."""
        get, items = view.get, view.provenance
        keys = tuple(items)  # once a tick, for every prefix looked for
        limits = self._limits_read.get(
            (get(ROBOT_LIMITS), get(ROBOT_RADIUS)), partial(RobotLimits.in_view, view)
        )
        accept = self._accept_read.get((get(ACCEPTANCE),), partial(Acceptance.in_view, view))
        self._solids = Solids.of(view.nearby_map, self._walls(get(WORLD_BOUNDS)), last=self._solids)
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
            speed_zones=[(k, items[k]) for k in self._keys_of(keys, SPEED_ZONE_PREFIX)],
            failures=self._failures(keys),
            failures_missing=view.missing.get(self.failure_pattern),
        )

    def _failures(self, keys: tuple[str, ...]) -> int:
        """How many of ``keys`` are failure records; counted again only when the keys
        with their prefix change."""
        found = self._keys_of(keys, self._failure_prefix)
        if found is not self._failure_keys:
            pattern = self.failure_pattern
            self._failure_keys = found
            self._failure_count = sum(1 for key in found if matches(key, pattern))
        return self._failure_count

    def _plan_in(self, value: Any) -> PlanReading | None:
        if value is not self._plan_value:  # values are frozen: the same object, the same plan
            self._plan_value, self._plan = value, read_plan(value)
        return self._plan

    def _route_in(self, value: Any) -> tuple[Point2, ...] | None:
        if value is not self._route_value:
            self._route_value, self._route_points = value, route_points(value)
        return self._route_points
