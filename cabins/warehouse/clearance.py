"""Clearance: how far the robot's disc is, or would be, from everything solid in view.

The executor and the monitor both need to know, each tick, how close a piece of motion
comes to what the robot must not touch: shelves and forbidden zones on their map, the
floor's walls (``world:bounds``) and, for the monitor, people and forklifts. A
``Solids`` is that set for one tick, built from a view; ``gap(geometry)`` is the distance
from a geometry (a point, a chord, a swept path) to the nearest solid, and ``gaps(points)``
the same for many points at once (one vectorised shapely call).

``braking_path`` predicts where the robot goes if it brakes now at ``max_accel`` while
keeping its turn rate: the unicycle integrated tick by tick, as the world moves it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import shapely
from shapely.geometry import box
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.shapes import point, polyline
from cabins.warehouse.shapes import points as points_of
from cabins.warehouse.values import Bounds, read_bounds
from runtime.cabin_map import Feature

__all__ = ["SOLID_KINDS", "Solids", "Walls", "braking_path", "path_geometry", "walls_of"]

SOLID_KINDS = frozenset({"shelf", "forbidden"})
"""Map kinds a robot must keep its disc off (moving obstacles are added by who asks)."""

_WALL = 1.0  # m: the thickness of the wall strips drawn around the floor
_BOX_SLACK = 1e-9  # m: rounding in a box distance must never rule out the nearest solid


@dataclass(frozen=True, slots=True)
class Solids:
    """What the robot must not touch this tick, as an array of geometries, with names."""

    shapes: npt.NDArray[np.object_]
    names: tuple[str, ...]
    _boxes: npt.NDArray[np.float64] | None = field(
        init=False, default=None, repr=False, compare=False
    )
    _geometries: tuple[BaseGeometry, ...] = field(init=False, default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_geometries", tuple(self.shapes.tolist()))

    @property
    def boxes(self) -> npt.NDArray[np.float64]:
        """The solids' bounding boxes, (minx, miny, maxx, maxy) a row, made on first use."""
        boxes = self._boxes
        if boxes is None:
            boxes = shapely.bounds(self.shapes).reshape(-1, 4)
            object.__setattr__(self, "_boxes", boxes)
        return boxes

    @classmethod
    def of(
        cls,
        features: Iterable[Feature],
        walls: Sequence[tuple[str, BaseGeometry]] = (),
        *,
        kinds: frozenset[str] = SOLID_KINDS,
        last: Solids | None = None,
    ) -> Solids:
        """The features of ``kinds`` among ``features``, and ``walls`` (``walls_of``).

        ``last`` is given back when it holds the same geometry objects under the same names
        (the shelves and zones in view are the same objects tick after tick), so that its
        array and boxes are not made again."""
        shapes: list[BaseGeometry] = []
        names: list[str] = []
        for feature in features:
            if feature.kind in kinds:
                shapes.append(feature.geometry)
                names.append(feature.id)
        for name, strip in walls:
            shapes.append(strip)
            names.append(name)
        if (
            last is not None
            and last.names == tuple(names)
            and all(map(operator.is_, last._geometries, shapes))
        ):
            return last
        return cls(np.array(shapes, dtype=object), tuple(names))

    def __bool__(self) -> bool:
        return bool(self.names)

    # ``gap`` and ``nearest`` measure solid by solid through the geometry method, which
    # shapely runs without numpy's machinery: for the handful of solids in view that is
    # cheaper than one array call, and each distance is the same GEOS call on the same
    # pair in the same order. A NaN (an empty geometry) goes to the array call, so that
    # it propagates as numpy's minimum does.

    def gap(self, geometry: BaseGeometry) -> float:
        """The distance from ``geometry`` to the nearest solid (inf when there is none)."""
        best = math.inf
        for shape in self._geometries:
            d = shape.distance(geometry)
            if not d >= best:  # nearer, or NaN
                if d != d:
                    return float(shapely.distance(self.shapes, geometry).min())
                best = d
        return float(best)

    def nearest(self, geometry: BaseGeometry) -> tuple[str, float] | None:
        """The nearest solid's name and distance (the first of equals), or None when
        there is none."""
        best, index = math.inf, -1
        for i, shape in enumerate(self._geometries):
            d = shape.distance(geometry)
            if not d >= best:
                if d != d:
                    index = -1
                    break
                best, index = d, i
        if index < 0:
            if not self.names:
                return None
            distances = shapely.distance(self.shapes, geometry)
            index = int(np.argmin(distances))
            best = distances[index]
        return self.names[index], float(best)

    def _box_distances(self, xy: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The distance from each point to each solid's bounding box, (points, solids): a
        lower bound of its distance to the solid."""
        boxes = self.boxes
        x, y = xy[:, 0:1], xy[:, 1:2]
        dx = np.maximum(np.maximum(boxes[:, 0] - x, x - boxes[:, 2]), 0.0)
        dy = np.maximum(np.maximum(boxes[:, 1] - y, y - boxes[:, 3]), 0.0)
        return np.asarray(np.hypot(dx, dy), dtype=float)

    def gaps(self, points: Sequence[tuple[float, float]]) -> npt.NDArray[np.float64]:
        """For each point, the distance to the nearest solid.

        The distance from a point to a solid's bounding box is a lower bound of its
        distance to the solid, so shapely measures, for each point, the solid whose box
        is nearest and then only the solids whose box is no farther than that: the
        minimum, exactly as measuring every pair would give it, in a fraction of the
        pairs (most solids are far from most points)."""
        if not self.names or not points:
            return np.full(len(points), math.inf)
        xy = np.asarray(points, dtype=float)
        lower = self._box_distances(xy)
        first = lower.argmin(axis=1)
        grid = points_of(xy)
        best = np.asarray(shapely.distance(grid, self.shapes[first]), dtype=float)
        maybe = lower <= best[:, None] + _BOX_SLACK
        maybe[np.arange(len(xy)), first] = False
        rows, cols = np.nonzero(maybe)
        if rows.size:
            np.minimum.at(best, rows, shapely.distance(grid[rows], self.shapes[cols]))
        return best

    def gaps_within(
        self, points: Sequence[tuple[float, float]], limit: float
    ) -> npt.NDArray[np.float64]:
        """For each point, the distance to the nearest solid where it is less than
        ``limit``, exactly as ``gaps`` gives it; elsewhere a distance of at least ``limit``
        (infinity when no solid's box comes within ``limit``).

        For a caller that only tells the near from the far: shapely measures only the
        pairs whose boxes are nearer than ``limit``, and no pass finds each point's
        nearest box first."""
        if not self.names or not points:
            return np.full(len(points), math.inf)
        xy = np.asarray(points, dtype=float)
        rows, cols = np.nonzero(self._box_distances(xy) < limit + _BOX_SLACK)
        best = np.full(len(xy), math.inf)
        if rows.size:
            np.minimum.at(best, rows, shapely.distance(points_of(xy[rows]), self.shapes[cols]))
        return best


def walls_of(bounds: Bounds | None) -> tuple[tuple[str, BaseGeometry], ...]:
    """The floor's four walls as named strips outside ``bounds`` (none without bounds);
    made once per bounds by the cabin that asks (``Walls``), not every tick."""
    if bounds is None:
        return ()
    minx, miny, maxx, maxy = bounds
    return (
        ("wall:south", box(minx - _WALL, miny - _WALL, maxx + _WALL, miny)),
        ("wall:north", box(minx - _WALL, maxy, maxx + _WALL, maxy + _WALL)),
        ("wall:west", box(minx - _WALL, miny, minx, maxy)),
        ("wall:east", box(maxx, miny, maxx + _WALL, maxy)),
    )


class Walls:
    """The walls of a ``world:bounds`` value (``walls_of``), made again only when the
    value is another object: a cabin that needs them every tick makes them once per
    write. Holds plain data, so a checkpoint holds it."""

    __slots__ = ("_value", "_walls")

    def __init__(self) -> None:
        self._value: Any = None
        self._walls: tuple[tuple[str, BaseGeometry], ...] = ()

    def __call__(self, value: Any) -> tuple[tuple[str, BaseGeometry], ...]:
        """The walls of the ``world:bounds`` value ``value`` (none if it is unreadable)."""
        if value is not self._value:
            self._value, self._walls = value, walls_of(read_bounds(value))
        return self._walls


def braking_path(
    x: float,
    y: float,
    theta: float,
    v: float,
    w: float,
    *,
    accel: float,
    dt: float,
    extra_ticks: int = 1,
    max_ticks: int = 200,
) -> list[tuple[float, float]]:
    """Where the robot's centre goes if it holds its speed for ``extra_ticks`` (the delay
    before a command acts) and then brakes at ``accel`` keeping turn rate ``w``, until it
    stops; the first point is (x, y)."""
    points = [(x, y)]
    speed = abs(v)
    sign = 1.0 if v >= 0 else -1.0
    for tick in range(max_ticks):
        if tick >= extra_ticks:
            speed = max(0.0, speed - accel * dt)
        if speed <= 0.0:
            break
        step = sign * speed * dt
        if abs(w) < 1e-9:
            x += step * math.cos(theta)
            y += step * math.sin(theta)
        else:
            x += sign * speed / w * (math.sin(theta + w * dt) - math.sin(theta))
            y -= sign * speed / w * (math.cos(theta + w * dt) - math.cos(theta))
            theta += w * dt
        points.append((x, y))
    return points


def path_geometry(points: Sequence[tuple[float, float]]) -> BaseGeometry:
    """A polyline through ``points`` (a point when there is only one place)."""
    if len(points) == 1 or all(p == points[0] for p in points):
        return point(*points[0])
    return polyline(points)
