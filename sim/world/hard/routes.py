"""Route lengths on a generated floor, as the planner would drive them, and what they cost
in battery: what the ``hard:N`` family sizes its batteries and durations by, and how its
``mid_task_charge`` trait is measured.

``Routes`` asks the planner's own route planner (``cabins.warehouse.routing`` with its
default clearance and grid, moving obstacles ignored) once per pair of places and keeps
the answer. ``energy`` is the battery a route of some length costs at a steady 0.5 m/s,
the pace ``gen:N`` sizes its batteries by (slower than the robot drives, so it errs on
the side of more).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import (
    DEFAULT_CLEARANCE,
    DEFAULT_RESOLUTION,
    RoutePlanner,
    RoutingProblem,
)

__all__ = ["PACE", "Routes", "energy"]

PACE = 0.5
"""m/s: the steady speed battery use is reckoned at."""

XY = tuple[float, float]


def energy(metres: float, *, per_m: float, per_s: float) -> float:
    """Wh to drive ``metres`` at ``PACE``, draining ``per_m`` Wh/m and ``per_s`` Wh/s."""
    return per_m * metres + per_s * metres / PACE


class Routes:
    """Shortest route lengths (m) between places on one floor; ``inf`` where none."""

    def __init__(
        self,
        bounds: tuple[float, float, float, float],
        solids: Sequence[BaseGeometry],
        forbidden: Sequence[BaseGeometry],
        radius: float,
    ) -> None:
        self._planner = RoutePlanner(
            RoutingProblem(
                bounds=bounds,
                obstacles=tuple(solids),
                forbidden=tuple(forbidden),
                robot_radius=radius,
                clearance=DEFAULT_CLEARANCE,
                resolution=DEFAULT_RESOLUTION,
            )
        )
        self._known: dict[tuple[XY, XY], float] = {}

    def length(self, a: XY, b: XY) -> float:
        key = (a, b) if a <= b else (b, a)
        if key not in self._known:
            route = self._planner.plan(*key)
            self._known[key] = (
                math.inf
                if route is None
                else sum(math.dist(p, q) for p, q in itertools.pairwise(route))
            )
        return self._known[key]
