"""Scalar shapely geometry made quickly: one point, one polyline or one polygon per call.

shapely 2's ``Point(x, y)`` and ``LineString(coords)`` constructors convert their
arguments through numpy and a deprecation wrapper on every call, about 10 µs each; the
cabins and the world make several every tick. ``point``, ``polyline`` and ``polygon``
make the same geometries (equal coordinates, equal WKB:
``tests/cabins/warehouse/test_shapes.py``) by calling the ufuncs under shapely's
vectorised constructors (``shapely.lib.points``, ``linestrings``, ``linearrings``,
``polygons``) on one coordinate array, which is what ``shapely.points`` and the rest do
after checking their arguments, in a third of the time of ``Point()``. Before shapely 2.1
those ufuncs took no NaN policy; there the public constructors are used. Cabins and the
world use these for the geometries they make per tick, and the geometry methods
(``a.distance(b)``, ``a.dwithin(b, d)``) rather than the array functions for one pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import shapely
from shapely import lib
from shapely.geometry import LineString, Point, Polygon

__all__ = ["locate", "point", "points", "polygon", "polyline"]

_ALLOW_NAN = np.intc(0)  # shapely.HandleNaN.allow, the public constructors' default
_NO_HOLES = np.empty((0,), dtype=object)


def _ufuncs_take_nan_policy() -> bool:
    try:
        lib.points((0.0, 0.0), _ALLOW_NAN)
    except TypeError:  # shapely 2.0: the ufuncs take the coordinates alone
        return False
    return True


if _ufuncs_take_nan_policy():

    def _point(x: float, y: float) -> Any:
        return lib.points((x, y), _ALLOW_NAN)

    def _points(coords: Any) -> Any:
        return lib.points(coords, _ALLOW_NAN)

    def _linestring(coords: Any) -> Any:
        return lib.linestrings(coords, _ALLOW_NAN)

    def _polygon(shell: Any) -> Any:
        return lib.polygons(lib.linearrings(shell, _ALLOW_NAN), _NO_HOLES)

else:  # pragma: no cover - shapely 2.0

    def _point(x: float, y: float) -> Any:
        return shapely.points((x, y))

    _points: Callable[[Any], Any] = shapely.points  # type: ignore[no-redef]
    _linestring: Callable[[Any], Any] = shapely.linestrings  # type: ignore[no-redef]
    _polygon: Callable[[Any], Any] = shapely.polygons  # type: ignore[no-redef]


_locate_scalar: Callable[[Any, Any], float] | None = getattr(lib, "line_locate_point_scalar", None)
"""shapely 2.2's scalar form of ``line_locate_point`` (what its geometry methods use for
other measures), without numpy's ufunc machinery; the same GEOS call."""


def locate(line: LineString, where: Point) -> float:
    """How far along ``line`` its point nearest ``where`` is: ``line.project(where)``."""
    if _locate_scalar is not None:
        return float(_locate_scalar(line, where))
    return float(shapely.line_locate_point(line, where))


def point(x: float, y: float) -> Point:
    """The point (x, y), as ``Point(x, y)`` makes it."""
    made: Point = _point(x, y)
    return made


def points(coords: npt.NDArray[np.float64]) -> npt.NDArray[np.object_]:
    """The points of an (n, 2) coordinate array, as ``shapely.points(coords)`` makes them."""
    made: npt.NDArray[np.object_] = _points(coords)
    return made


def polyline(coords: Sequence[tuple[float, float]] | npt.NDArray[np.float64]) -> LineString:
    """The line string through ``coords`` (at least two), as ``LineString(coords)`` makes it."""
    made: LineString = _linestring(np.asarray(coords, dtype=float))
    return made


def polygon(shell: npt.NDArray[np.float64]) -> Polygon:
    """The polygon without holes on the closed ring ``shell`` (an (n, 2) array, first
    vertex repeated last), as ``shapely.polygons(shell)`` makes it."""
    made: Polygon = _polygon(shell)
    return made
