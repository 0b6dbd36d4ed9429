"""Scalar shapely geometry made quickly: one point, or one polyline, per call.

shapely 2's ``Point(x, y)`` and ``LineString(coords)`` constructors convert their
arguments through numpy and a deprecation wrapper on every call, about 10 µs each; the
cabins and the world make several every tick. ``point`` and ``polyline`` make the same
geometries (equal coordinates, equal WKB) through shapely's vectorised constructors on
one coordinate array, in a third of the time. Cabins and the world use these for the
geometries they make per tick, and the geometry methods (``a.distance(b)``,
``a.dwithin(b, d)``) rather than the array functions for one pair.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import shapely
from shapely.geometry import LineString, Point

__all__ = ["point", "polyline"]


def point(x: float, y: float) -> Point:
    """The point (x, y), as ``Point(x, y)`` makes it."""
    made: Point = shapely.points((x, y))
    return made


def polyline(coords: Sequence[tuple[float, float]]) -> LineString:
    """The line string through ``coords`` (at least two), as ``LineString(coords)`` makes it."""
    made: LineString = shapely.linestrings(np.asarray(coords, dtype=float))
    return made
