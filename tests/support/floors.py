"""Route planners of small hand-drawn floors, for the planner's unit tests."""

from __future__ import annotations

from collections.abc import Sequence

from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import RoutePlanner, RoutingProblem


def floor_router(
    bounds: tuple[float, float, float, float],
    walls: Sequence[BaseGeometry],
    *,
    radius: float,
    clearance: float,
) -> RoutePlanner:
    """The route planner of a floor within ``bounds`` whose ``walls`` (shelves) are all
    the robot keeps clear of, for a robot of ``radius`` and ``clearance``, on the default
    0.25 m grid."""
    return RoutePlanner(
        RoutingProblem(
            bounds=bounds,
            obstacles=tuple(walls),
            forbidden=(),
            robot_radius=radius,
            clearance=clearance,
            resolution=0.25,
        )
    )
