"""Reading positions out of board values: the one (x, y) and polyline reader.

A spec's ``map_center`` names a board key holding a position and its ``route_key`` one
holding a polyline, so the runtime must read both from whatever a board holds. These
are the readers every layer uses (the assembler, the cabins' value models, reports),
so that "a position" means the same everywhere: a sequence ``(x, y, ...)``, a mapping
with ``x`` and ``y``, or an object with ``x`` and ``y`` attributes (a shapely point),
with finite real coordinates. A value that is none of these is no position (None),
never an error: a board may hold anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

Point2 = tuple[float, float]


def finite(value: Any) -> float | None:
    """``value`` as a float if it is a finite real number (not a bool), else None."""
    if type(value) is float:  # the common case, without the ABC check below
        return value if math.isfinite(value) else None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError):  # an int or fraction beyond the range of a float
        return None
    return number if math.isfinite(number) else None


def numbers(value: Any, count: int) -> tuple[float, ...] | None:
    """The first ``count`` entries of a sequence (or 1-D array) of finite numbers, or None."""
    kind = type(value)
    if kind is tuple or kind is list:  # the common case, without the ABC check below
        pass
    elif isinstance(value, np.ndarray):
        if value.ndim != 1:
            return None
    elif not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        return None
    if len(value) < count:
        return None
    out: list[float] = []
    for item in value[:count]:
        number = finite(item)
        if number is None:
            return None
        out.append(number)
    return tuple(out)


def read_xy(value: Any) -> Point2 | None:
    """An (x, y) position from a pose-like value, or None."""
    if isinstance(value, Mapping):
        x, y = finite(value.get("x")), finite(value.get("y"))
        return None if x is None or y is None else (x, y)
    if hasattr(value, "x") and hasattr(value, "y") and not isinstance(value, np.ndarray):
        x, y = finite(value.x), finite(value.y)
        return None if x is None or y is None else (x, y)
    xy = numbers(value, 2)
    return None if xy is None else (xy[0], xy[1])


def read_route(value: Any) -> tuple[Point2, ...] | None:
    """A polyline from a route-like value (a sequence of positions, or a mapping with one
    under ``points`` or ``waypoints``); None if it has no points or any point is not one."""
    if isinstance(value, Mapping):
        value = value.get("points", value.get("waypoints"))
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or not value:
        return None
    points: list[Point2] = []
    for item in value:
        xy = read_xy(item)
        if xy is None:
            return None
        points.append(xy)
    return tuple(points)


__all__ = ["Point2", "finite", "numbers", "read_route", "read_xy"]
