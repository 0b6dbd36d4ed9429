"""What the planner sees: its view, read once per tick.

``ViewReader.read`` turns the tick's ``CabinView`` into a ``Seen``: the robot's pose,
speed, limits, battery (and its figures, when ``robot:limits`` publishes them) and
cargo, the obstacles near it and along its route, what is missing, the executor's
reports, and the raw layout, goal and place values the parts of the planner learn from.
Nothing after it reads the view: each part takes the ``Seen``. Values that seldom change
(the robot's limits, the docks, which keys hold zones and goals) are parsed again only
when their board value is another object; the view's keys are gathered once a tick, for
every prefix the reader looks for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import structlog
from shapely.geometry import Point

from cabins.planner.settings import PlannerSettings
from cabins.warehouse.energy import BatteryFigures
from cabins.warehouse.routing import Point2
from cabins.warehouse.tasks import TASK_PREFIX, TaskRequest
from cabins.warehouse.values import (
    BATTERY,
    BATTERY_LOW,
    CARGO,
    CHARGERS,
    CONSTRAINT_PREFIX,
    DEFAULT_LOW_BATTERY,
    DISPATCH_ORDER,
    DOCKS,
    FORBIDDEN_PREFIX,
    GOAL_PREFIX,
    POSE,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    VELOCITY,
    WORLD_BOUNDS,
    KeysOf,
    LastRead,
    Pose,
    RobotLimits,
    Velocity,
    radius_in,
    read_battery,
    read_low_battery,
    read_order,
    read_places,
)
from runtime.cabin_map import Feature
from runtime.log import Event
from runtime.pack import CabinView

_log = structlog.get_logger(__name__)

__all__ = ["BESIDE", "Seen", "ViewReader"]

_NO_PLACES: Final[Mapping[str, Point2]] = {}

BESIDE: Final = 1.0
"""Metres beyond the reach of a route (the robot's radius plus clearance) within which an
obstacle is beside the robot: what a stall may be a stand-off with, and what blocked it."""


@dataclass(slots=True)
class Seen:
    """What one tick's view says, read once."""

    tick: int
    time: float
    pose: Point2 | None
    heading: float  # rad; 0 without a pose
    speed: float | None  # forward speed (m/s), when velocity is in view
    limits: RobotLimits
    radius: float | None  # the robot radius the view says, if it says one
    battery: float | None
    low_battery: float
    cargo_known: bool
    cargo: str | None
    obstacles: tuple[Feature, ...]  # near the robot, then along the route
    corridor_obstacles: tuple[Feature, ...]  # along the route
    missing: dict[str, str]  # required pattern -> reason, only reasons other than "absent"
    events: tuple[Event, ...]
    nearby: tuple[Feature, ...]  # the map near the robot: shelves and zones are learned
    zones: tuple[tuple[str, Any], ...]  # forbidden and constraint items: (key, value)
    bounds: Any  # the world:bounds value
    goals: tuple[tuple[str, Any], ...]  # goal items, (key, value); () while goals are missing
    docks: Mapping[str, Point2]  # read only while the goals are in view
    chargers: Any  # the chargers value, read where a step needs it
    order: Any  # the dispatch:order value, read when a task is chosen
    battery_figures: BatteryFigures | None = None  # published in robot:limits, if they are
    requests: tuple[TaskRequest, ...] = ()  # other cabins' refusals and deferrals of tasks

    _beside: tuple[float, Feature | None] | None = field(
        init=False, default=None, repr=False, compare=False
    )

    def obstacle_beside(self, reach: float) -> Feature | None:
        """The obstacle nearest the robot within ``reach`` plus ``BESIDE`` metres (the
        first by id of equally near ones), or None; measured once a tick (a re-plan for
        no progress asks for it twice: the stand-off and long-term memory)."""
        known = self._beside
        if known is not None and known[0] == reach:
            return known[1]
        found = None
        if self.pose is not None:
            pose = Point(self.pose)
            gaps = [(float(f.geometry.distance(pose)), f.id, f) for f in self.obstacles]
            near = min((g for g in gaps if g[0] <= reach + BESIDE), default=None)
            found = None if near is None else near[2]
        self._beside = (reach, found)
        return found

    def charger_places(self) -> dict[str, Point2]:
        """The chargers in view: id -> (x, y)."""
        return read_places(self.chargers)

    def dispatch_order(self) -> tuple[str, ...]:
        """The task ids in the dispatcher's order, if it gave one."""
        return read_order(self.order)


class ViewReader:
    """Reads each tick's view into a ``Seen``, keeping what it parsed from values that did
    not change. The setting ``low_battery`` overrides the board's ``battery:low`` when set."""

    def __init__(self, settings: PlannerSettings) -> None:
        self._settings = settings
        self._limits_read: LastRead[RobotLimits] = LastRead()
        self._docks_read: LastRead[dict[str, Point2]] = LastRead()
        self._figures_read: LastRead[BatteryFigures | None] = LastRead()
        self._keys_of = KeysOf()
        self._ignored: dict[str, Any] = {}  # task-protocol key -> the malformed value warned of

    def read(self, view: CabinView) -> Seen:
        pose = Pose.read(view.get(POSE)) if POSE not in view.missing else None
        obstacles = tuple([f for f in view.nearby_map if f.kind == "obstacle"])
        corridor = tuple([f for f in view.corridor_map if f.kind == "obstacle"])
        extra = tuple([f for f in corridor if f not in obstacles]) if corridor else ()
        missing = {p: str(r) for p, r in view.missing.items() if r != "absent"}
        cargo = view.get(CARGO)
        velocity = Velocity.read(view.get(VELOCITY))
        goals_visible = "goal:*" not in missing
        keys = tuple(view.provenance)  # once a tick, for every prefix looked for
        return Seen(
            tick=view.tick,
            time=view.time,
            pose=None if pose is None else pose.xy,
            heading=0.0 if pose is None else pose.theta,
            speed=None if velocity is None else velocity.v,
            limits=self._limits_read.get(
                (view.get(ROBOT_LIMITS), view.get(ROBOT_RADIUS)),
                partial(RobotLimits.in_view, view),
            ),
            radius=radius_in(view),
            battery=read_battery(view.get(BATTERY)),
            low_battery=self._low_battery(view),
            cargo_known=CARGO in view,
            cargo=cargo if isinstance(cargo, str) else None,
            obstacles=obstacles + extra,
            corridor_obstacles=corridor,
            missing=missing,
            events=view.recent_events,
            nearby=view.nearby_map,
            zones=self._items(view, keys, (FORBIDDEN_PREFIX, CONSTRAINT_PREFIX)),
            bounds=view.get(WORLD_BOUNDS),
            goals=self._items(view, keys, GOAL_PREFIX) if goals_visible else (),
            docks=self._docks(view) if goals_visible else _NO_PLACES,
            chargers=view.get(CHARGERS),
            order=view.get(DISPATCH_ORDER),
            battery_figures=self._figures_read.get(
                (view.get(ROBOT_LIMITS),), partial(BatteryFigures.read, view.get(ROBOT_LIMITS))
            ),
            requests=self._requests(view, keys),
        )

    def _requests(self, view: CabinView, keys: tuple[str, ...]) -> tuple[TaskRequest, ...]:
        """The task protocol's requests in view (``cabins.warehouse.tasks``); a malformed
        one is ignored, with a warning once per value."""
        found = []
        for key in self._keys_of(keys, TASK_PREFIX):
            value = view[key]
            request = TaskRequest.read(key, value)
            if request is not None:
                found.append(request)
            elif key not in self._ignored or self._ignored[key] is not value:
                self._ignored[key] = value
                _log.warning("planner.task_request_ignored", key=key, value=value)
        return tuple(found)

    def _low_battery(self, view: CabinView) -> float:
        low = self._settings.low_battery
        if low is None:
            low = read_low_battery(view.get(BATTERY_LOW))
            # a threshold of 1 would have the robot charge for ever
            low = DEFAULT_LOW_BATTERY if low is None or low >= 1 else low
        return low

    def _items(
        self, view: CabinView, keys: tuple[str, ...], prefix: str | tuple[str, ...]
    ) -> tuple[tuple[str, Any], ...]:
        return tuple([(key, view[key]) for key in self._keys_of(keys, prefix)])

    def _docks(self, view: CabinView) -> dict[str, Point2]:
        value = view.get(DOCKS)
        return self._docks_read.get((value,), partial(read_places, value))
