"""Shrinking a thing to keep clear of so that a route can still start and end.

A moving obstacle right beside the robot (or at its target), or a remembered blocked
spot the robot stands in, must not make every route impossible: the route is planned
around what is left of it, and leads away from it.
"""

from __future__ import annotations

import math

from shapely.geometry import Point
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import Point2

__all__ = ["shrunk"]


def shrunk(shape: BaseGeometry, keep_free: tuple[Point2, ...], reach: float) -> BaseGeometry | None:
    """``shape`` shrunk about its centre so that no point of ``keep_free`` is within
    ``reach``; None when too little of it is left to matter."""
    size = math.sqrt(shape.area / math.pi) if shape.area > 0 else 0.0
    centre = shape.centroid
    limit = size
    for p in keep_free:
        limit = min(limit, centre.distance(Point(p)) - reach - 0.05)
    if limit >= size:
        return shape
    if limit <= 0.01:
        return None
    return centre.buffer(limit)
