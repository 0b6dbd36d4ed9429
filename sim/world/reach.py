"""Reachability: which docks and chargers the robot can get to from its start.

A scenario is only worth running if the planner can route the robot (its radius plus the
planner's clearance, on the planner's grid) from its start to every place its tasks and
its battery need. ``unreachable`` asks the same route planner the planner cabin uses
(``cabins.warehouse.routing`` with its default clearance and resolution), with one flood fill of the
grid, so the check costs about one route search however many places there are.

For a place it cannot reach, ``narrowest_gap`` says why in metres: it routes a thin robot
to the place and measures the passage along the way (the distance to the nearest wall,
shelf or forbidden zone, plus the free distance straight across from it), so an error can
name the gap the robot does not fit through.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import shapely
from shapely.geometry import LineString, Point, box
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import (
    DEFAULT_CLEARANCE,
    DEFAULT_RESOLUTION,
    RoutePlanner,
    RoutingProblem,
    min_aisle_width,
)

__all__ = ["Gap", "Place", "describe_unreachable", "narrowest_gap", "unreachable"]

_THIN_RADIUS = 0.02
_THIN_RESOLUTION = 0.1
_ACROSS = 100.0  # m: how far the measure looks across a passage


@dataclass(frozen=True, slots=True)
class Place:
    """A point the robot must reach: a dock or a charger."""

    kind: str  # "dock" or "charger"
    id: str
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Gap:
    """The narrowest passage on the way to a place: its width (m) and where it is."""

    width: float
    x: float
    y: float


def _problem(
    bounds: tuple[float, float, float, float],
    solids: Sequence[BaseGeometry],
    forbidden: Sequence[BaseGeometry],
    radius: float,
    *,
    clearance: float,
    resolution: float,
) -> RoutingProblem:
    return RoutingProblem(
        bounds=bounds,
        obstacles=tuple(solids),
        forbidden=tuple(forbidden),
        robot_radius=radius,
        clearance=clearance,
        resolution=resolution,
    )


def unreachable(
    bounds: tuple[float, float, float, float],
    solids: Sequence[BaseGeometry],
    forbidden: Sequence[BaseGeometry],
    radius: float,
    start: tuple[float, float],
    places: Sequence[Place],
) -> list[Place]:
    """The places of ``places`` that the planner cannot route a robot of ``radius`` to
    from ``start`` (in their order)."""
    if not places:
        return []
    router = RoutePlanner(
        _problem(
            bounds,
            solids,
            forbidden,
            radius,
            clearance=DEFAULT_CLEARANCE,
            resolution=DEFAULT_RESOLUTION,
        )
    )
    found = router.reachable(start, [(p.x, p.y) for p in places])
    return [p for p, ok in zip(places, found, strict=True) if not ok]


def narrowest_gap(
    bounds: tuple[float, float, float, float],
    solids: Sequence[BaseGeometry],
    forbidden: Sequence[BaseGeometry],
    start: tuple[float, float],
    goal: tuple[float, float],
) -> Gap | None:
    """The narrowest passage a thin robot meets going from ``start`` to ``goal``, or None
    when even a thin robot finds no way (the place is walled in)."""
    router = RoutePlanner(
        _problem(
            bounds, solids, forbidden, _THIN_RADIUS, clearance=0.0, resolution=_THIN_RESOLUTION
        )
    )
    route = router.plan(start, goal)
    if route is None:
        return None
    minx, miny, maxx, maxy = bounds
    walls = box(minx - 1, miny - 1, maxx + 1, maxy + 1).difference(box(minx, miny, maxx, maxy))
    blocks = shapely.union_all([walls, *solids, *forbidden])
    line = LineString(route)
    steps = max(1, math.ceil(line.length / (_THIN_RESOLUTION / 2)))
    best: Gap | None = None
    for k in range(steps + 1):
        here = line.interpolate(line.length * k / steps)
        width = _width_at(here, blocks)
        if width is not None and (best is None or width < best.width):
            best = Gap(width, float(here.x), float(here.y))
    return best


def _width_at(here: Point, blocks: BaseGeometry) -> float | None:
    """The free width across the passage at ``here``: to the nearest block, and on from
    ``here`` straight away from it to the next."""
    near = float(blocks.distance(here))
    if near <= 0:
        return None
    nearest = shapely.shortest_line(here, blocks).coords[-1]
    dx, dy = here.x - nearest[0], here.y - nearest[1]
    norm = math.hypot(dx, dy)
    ray = LineString(
        [(here.x, here.y), (here.x + dx / norm * _ACROSS, here.y + dy / norm * _ACROSS)]
    )
    hit = ray.intersection(blocks)
    across = float(hit.distance(here)) if not hit.is_empty else _ACROSS
    return near + across


def describe_unreachable(
    place: Place, gap: Gap | None, radius: float, *, standing: tuple[str, float] | None = None
) -> str:
    """One line on why ``place`` cannot be reached, for a scenario error; ``standing`` is
    the nearest thing to the place and its distance, when that is within the planner's
    reach (the robot may stand there, but no route may end there)."""
    need = min_aisle_width(radius)
    reach = radius + DEFAULT_CLEARANCE
    head = (
        f"{place.kind} {place.id!r} at ({place.x:g}, {place.y:g}) cannot be reached from the "
        f"robot's start (radius {radius:g} m, planner clearance {DEFAULT_CLEARANCE:g} m)"
    )
    if standing is not None and standing[1] <= reach:
        why = (
            f"it is {standing[1]:.2f} m from {standing[0]}, and a route must keep {reach:.2f} m "
            f"from it (a passage needs at least {need:.2f} m)"
        )
    elif gap is None:
        why = "it is walled in"
    else:
        why = (
            f"the narrowest gap on the way is {gap.width:.2f} m wide, near "
            f"({gap.x:.1f}, {gap.y:.1f}); a passage needs at least {need:.2f} m"
        )
    return f"{head}: {why} (or set allow_unreachable = true to run it anyway)"
