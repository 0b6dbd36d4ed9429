"""The layout the planner remembers, and the route planner built from it.

Static geometry seen once stays known: shelves, forbidden zones and speed zones (from
the map near the robot and from the board's zone items), the floor's bounds and the
robot's radius. An item evicted from working memory is still avoided. The route planner
(``cabins.warehouse.routing``) is built from what is known, and built again only when
that changed: shelves and forbidden zones are walls; speed zones are known, to be
routed round only while the constraints are missing.
"""

from __future__ import annotations

from typing import Any

import shapely
import structlog
from shapely.geometry.base import BaseGeometry

from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.warehouse.routing import RoutePlanner, RoutingProblem
from cabins.warehouse.values import (
    DEFAULT_LIMITS,
    FORBIDDEN_PREFIX,
    WORLD_BOUNDS,
    Bounds,
    read_bounds,
    read_zone_polygon,
)

__all__ = ["Layout"]

_log = structlog.get_logger(__name__)


class Layout:
    """What the planner knows of the floor (see the module docstring); ``clearance`` and
    ``resolution`` (m) are the route planner's."""

    _derived = ("_router",)
    """Built again from the layout when first asked for (a checkpoint holds no planner)."""

    def __init__(self, settings: PlannerSettings) -> None:
        self._settings = settings
        self._shelves: dict[str, BaseGeometry] = {}
        self._forbidden: dict[str, BaseGeometry] = {}
        self._constraints: dict[str, BaseGeometry] = {}
        self._sources: dict[str, Any] = {}  # item key -> the value its geometry came from
        self._version = 0
        self._told = 0  # the version ``take_learned`` last reported
        self._bounds: Bounds | None = None
        self._radius = DEFAULT_LIMITS.radius
        self._router: RoutePlanner | None = None
        self._router_key: tuple[Any, ...] | None = None

    @property
    def radius(self) -> float:
        """The robot's radius (m), as last seen."""
        return self._radius

    @property
    def clearance(self) -> float:
        """How far (m) a route keeps the robot's disc from shelves, zones and obstacles."""
        return self._settings.clearance

    @property
    def reach(self) -> float:
        """How near the robot's centre a route may pass a thing: its radius plus clearance."""
        return self._radius + self._settings.clearance

    @property
    def constraints(self) -> dict[str, BaseGeometry]:
        """The speed zones known, by item key."""
        return self._constraints

    @property
    def bounds(self) -> Bounds | None:
        """The floor's bounds, as last seen (None before they were)."""
        return self._bounds

    @property
    def router_key(self) -> tuple[Any, ...] | None:
        """What the route planner was last built for: another key, another planner."""
        return self._router_key

    def take_learned(self) -> bool:
        """Whether what is known of the floor changed since the last call (shelves,
        forbidden zones, the bounds or the radius: what the route planner is built of)."""
        learned, self._told = self._told != self._version, self._version
        return learned

    def learn(self, seen: Seen) -> None:
        """Remember the shelves, zones, bounds and radius this tick shows."""
        changed = False
        for feature in seen.nearby:
            if feature.kind == "shelf":
                changed |= self._remember(
                    self._shelves, f"map:{feature.id}", feature, feature.geometry
                )
            elif feature.kind == "forbidden":
                changed |= self._remember(
                    self._forbidden, f"map:{feature.id}", feature, feature.geometry
                )
            elif feature.kind == "speed_zone":
                self._remember(self._constraints, f"map:{feature.id}", feature, feature.geometry)
        for key, value in seen.zones:
            if self._sources.get(key) is value:
                continue
            shape = read_zone_polygon(value)
            if shape is None:
                continue
            if key.startswith(FORBIDDEN_PREFIX):
                changed |= self._remember(self._forbidden, key, value, shape)
            else:
                self._remember(self._constraints, key, value, shape)
        bounds = seen.bounds
        if bounds is not None and bounds is not self._sources.get(WORLD_BOUNDS):
            parsed = read_bounds(bounds)
            if parsed is not None:
                self._sources[WORLD_BOUNDS] = bounds
                if parsed != self._bounds:
                    self._bounds = parsed
                    changed = True
        radius = seen.radius
        if radius is not None and radius != self._radius:
            self._radius = radius
            changed = True
        if changed:
            self._version += 1

    def _remember(
        self, store: dict[str, BaseGeometry], key: str, source: Any, shape: BaseGeometry
    ) -> bool:
        """Keep ``shape`` under ``key``; True when that changed what is known."""
        if self._sources.get(key) is source:
            return False
        self._sources[key] = source
        known = store.get(key)
        if known is not None and shapely.equals_exact(known, shape, tolerance=0.0):
            return False
        store[key] = shape
        return True

    def router(self) -> RoutePlanner | None:
        """The route planner of the known layout; built again only when the layout changed."""
        if self._bounds is None:
            return None
        key = (self._bounds, self._radius, self._version)
        if key != self._router_key or self._router is None:
            try:
                problem = RoutingProblem(
                    bounds=self._bounds,
                    obstacles=tuple(self._shelves.values()),
                    forbidden=tuple(self._forbidden.values()),
                    robot_radius=self._radius,
                    clearance=self._settings.clearance,
                    resolution=self._settings.resolution,
                )
            except (TypeError, ValueError):
                _log.exception("planner.bad_layout", bounds=self._bounds, radius=self._radius)
                return None
            self._router = RoutePlanner(problem)
            self._router_key = key
        return self._router
