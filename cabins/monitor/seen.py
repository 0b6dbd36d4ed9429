"""What the monitor saw: its view, read once per tick.

``ViewReader.read(view)`` takes from the view everything the monitor's parts look at and
returns it as one ``Seen``; the parts take it, never the view. The robot's radius, pose
and velocity are parsed here (each unreadable one is a bad reading, for the step to
report); the other values are passed on as the view holds them, to be parsed by the part
that knows them, in the order the monitor reports on them. The view's keys are gathered
once a tick, for every prefix the reader looks for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from shapely.geometry import Point

from cabins.warehouse.shapes import point
from cabins.warehouse.values import (
    BATTERY,
    BATTERY_LOW,
    DEFAULT_LIMITS,
    FORBIDDEN_PREFIX,
    POSE,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    SCANNER,
    SPEED_ZONE_PREFIX,
    VELOCITY,
    WORLD_BOUNDS,
    KeysOf,
    Pose,
    Velocity,
    positive,
)
from runtime.cabin import LATE_PREFIX
from runtime.cabin_map import Feature
from runtime.log import Event
from runtime.pack import CabinView, Occupancy

__all__ = ["Robot", "Seen", "ViewReader"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Robot:
    """The robot as the stop guards see it this tick: centre, heading, speed, radius."""

    here: Point
    cos: float
    sin: float
    speed: float | None  # signed forward speed; None when velocity is not in view
    turn: float  # turn rate (0 when velocity is not in view)
    radius: float


@dataclass(slots=True)
class Seen:
    """One tick's view, as the monitor reads it. Built once per tick and only read after
    (not frozen: it is built every tick, and a frozen one costs more to build)."""

    tick: int
    time: float
    missing: Mapping[str, str]
    """Required pattern -> why it is missing (every reason, "absent" too)."""
    bad: Sequence[tuple[str, str]]
    """The readings found unreadable on the way, (key, what is wrong), in order: the
    radius, the pose, the velocity."""
    radius: float
    pose: Pose | None
    velocity: Velocity | None
    here: Point | None
    """The pose's position (one point per tick, for every part)."""
    robot: Robot | None
    """The robot, when its pose is known."""
    route_shown: bool
    route: Any
    """The route's value, when ``route_shown``."""
    scan_shown: bool
    scan: Any
    """The ``safety:scanner`` value, when ``scan_shown``."""
    forbidden: Sequence[tuple[str, Any]]
    """The ``safety:forbidden:*`` items (key, value), in key order."""
    speed_zones: Sequence[tuple[str, Any]]
    """The speed zones (key, value), in key order; read only while the robot's speed is
    known (the speeding alarm is all that looks at them), else none."""
    late: Sequence[tuple[str, Any]]
    """The ``late:*`` items (key, value), in the view's order."""
    nearby_map: tuple[Feature, ...]
    limits_value: Any
    """``robot:limits`` as the view holds it (None when not in view)."""
    radius_value: Any
    """``robot:radius`` as the view holds it (None when not in view)."""
    bounds: Any
    battery: Any
    battery_low: Any
    events: tuple[Event, ...]
    overflow: Occupancy | None
    """The memory's load while its pinned items alone overflow it, else None."""


class ViewReader:
    """Reads a monitor's view into a ``Seen`` (see the module docstring); ``route_key`` is
    the spec's."""

    __slots__ = ("_keys_of", "_route_key")

    def __init__(self, route_key: str) -> None:
        self._route_key = route_key
        self._keys_of = KeysOf()

    def read(self, view: CabinView) -> Seen:
        bad: list[tuple[str, str]] = []
        limits, radius_value = view.get(ROBOT_LIMITS), view.get(ROBOT_RADIUS)
        radius = _radius(bad, limits, ROBOT_RADIUS in view, radius_value)
        pose = _parse(bad, view, POSE, 3, Pose.read)
        velocity = _parse(bad, view, VELOCITY, 2, Velocity.read)
        here = None if pose is None else point(pose.x, pose.y)
        robot = None
        if pose is not None and here is not None:
            robot = Robot(
                here,
                math.cos(pose.theta),
                math.sin(pose.theta),
                None if velocity is None else velocity.v,
                0.0 if velocity is None else velocity.w,
                radius,
            )
        route_key, keys_of = self._route_key, self._keys_of
        keys = tuple(view.provenance)  # once a tick, for every prefix looked for
        route_shown, scan_shown = route_key in view, SCANNER in view
        speeding_known = robot is not None and robot.speed is not None
        return Seen(
            tick=view.tick,
            time=view.time,
            missing=view.missing,
            bad=bad,
            radius=radius,
            pose=pose,
            velocity=velocity,
            here=here,
            robot=robot,
            route_shown=route_shown,
            route=view[route_key] if route_shown else None,
            scan_shown=scan_shown,
            scan=view[SCANNER] if scan_shown else None,
            forbidden=[(k, view[k]) for k in sorted(keys_of(keys, FORBIDDEN_PREFIX))],
            speed_zones=(
                [(k, view[k]) for k in sorted(keys_of(keys, SPEED_ZONE_PREFIX))]
                if speeding_known
                else ()
            ),
            late=[(k, view[k]) for k in keys_of(keys, LATE_PREFIX)],
            nearby_map=view.nearby_map,
            limits_value=limits,
            radius_value=radius_value,
            bounds=view.get(WORLD_BOUNDS),
            battery=view.get(BATTERY),
            battery_low=view.get(BATTERY_LOW),
            events=view.recent_events,
            overflow=view.occupancy if view.capacity_alarm else None,
        )


def _parse(
    bad: list[tuple[str, str]],
    view: CabinView,
    key: str,
    count: int,
    read: Callable[[Any], _T | None],
) -> _T | None:
    if key not in view:
        return None
    value = view[key]
    reading = read(value)
    if reading is None:
        bad.append((key, f"{key} must hold {count} finite numbers, got {value!r}"))
    return reading


def _radius(
    bad: list[tuple[str, str]], limits: Any, radius_shown: bool, radius_value: Any
) -> float:
    """The robot radius (``cabins.warehouse.values.radius_in``), with a bad reading for
    each unreadable radius on the way to it."""
    if isinstance(limits, Mapping) and "radius" in limits:
        radius = positive(limits["radius"])
        if radius is not None:
            return radius
        bad.append((ROBOT_LIMITS, f"radius must be > 0, got {limits['radius']!r}"))
    if radius_shown:
        radius = positive(radius_value)
        if radius is not None:
            return radius
        bad.append((ROBOT_RADIUS, f"must be > 0, got {radius_value!r}"))
    return DEFAULT_LIMITS.radius
