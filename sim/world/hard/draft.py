"""A draft: one warehouse of the ``hard:N`` family while it is being drawn.

A layout (``bays``, ``corridors``, ``fishbone``, ``rotated``, ``large``) fills a draft with
the floor, the shelves, the places a dock, the charger or the start may stand (each with
what kind of place it is) and the movers' loops; ``sim.world.hard.work`` then picks the
places, draws the work and the battery, and makes it a ``Scenario``. The helpers here are
the geometry the layouts share: rounded points, local frames, rotated strips, and the
checks that keep a place or a loop clear of the shelves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon, box
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.routing import DEFAULT_CLEARANCE

__all__ = [
    "FORKLIFT_RADIUS",
    "PERSON_RADIUS",
    "Draft",
    "Frame",
    "PlaceKind",
    "Redraw",
    "r3",
    "strip",
]

PERSON_RADIUS = 0.3
FORKLIFT_RADIUS = 0.6

PlaceKind = Literal["dead_end", "aisle", "lane"]
"""Where a place stands: at the closed end of a bay, in an aisle or corridor, on a lane."""

XY = tuple[float, float]


class Redraw(Exception):
    """This draw cannot be made into a good world; draw again."""


def r3(value: float) -> float:
    """Rounded to the millimetre, as every number of a generated file is."""
    return round(float(value), 3)


@dataclass(frozen=True, slots=True)
class Frame:
    """Local (u along the main direction, v across it) to world (x, y) coordinates; with
    ``flip`` the v axis runs from the far wall (``span_v``) back."""

    orientation: Literal["x", "y"]
    span_v: float = 0.0
    flip: bool = False

    def xy(self, u: float, v: float) -> XY:
        if self.flip:
            v = self.span_v - v
        return (r3(u), r3(v)) if self.orientation == "x" else (r3(v), r3(u))

    def points(self, pts: Sequence[tuple[float, float]]) -> list[XY]:
        return [self.xy(u, v) for u, v in pts]


@dataclass(slots=True)
class Draft:
    """The world so far (see the module docstring); layouts append to its lists."""

    layout: str
    width: float
    height: float
    radius: float
    shelves: list[list[XY]] = field(default_factory=list)
    places: list[tuple[PlaceKind, XY]] = field(default_factory=list)
    """Where a dock may stand, with its kind."""
    charger_spots: list[XY] = field(default_factory=list)
    start_spots: list[XY] = field(default_factory=list)
    movers: list[dict[str, Any]] = field(default_factory=list)
    forbidden: list[dict[str, Any]] = field(default_factory=list)
    speed_zones: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Words for the description: what this draw has (``1.9 m bays``, ``45 deg rows``)."""
    _solids: BaseGeometry | None = None

    # -- shelves ---------------------------------------------------------------------------

    def add_shelf(self, outline: Sequence[tuple[float, float]]) -> bool:
        """Add a shelf (world coordinates, rounded here); False when, rounded, it is no
        longer a proper polygon inside the floor (a sliver left by clipping)."""
        pts = [(r3(x), r3(y)) for x, y in outline]
        pts = [p for i, p in enumerate(pts) if p != pts[i - 1]]
        if len(pts) < 3:
            return False
        shape = Polygon(pts)
        if not shape.is_valid or shape.area < 0.5:
            return False
        if not box(0, 0, self.width, self.height).covers(shape):
            return False
        self.shelves.append(pts)
        self._solids = None
        return True

    def add_clipped(self, shape: BaseGeometry, region: BaseGeometry, *, min_area: float) -> int:
        """Add ``shape`` cut to ``region`` (each polygon piece of at least ``min_area``
        m²); the number of shelves added."""
        cut = shape.intersection(region)
        pieces = getattr(cut, "geoms", [cut])
        added = 0
        for piece in pieces:
            if isinstance(piece, Polygon) and piece.area >= min_area:
                simple = piece.simplify(0.01)
                if isinstance(simple, Polygon) and self.add_shelf(
                    list(simple.exterior.coords)[:-1]
                ):
                    added += 1
        return added

    @property
    def solids(self) -> BaseGeometry:
        """The shelves as one geometry (cached until a shelf is added)."""
        if self._solids is None:
            self._solids = shapely.union_all([Polygon(s) for s in self.shelves])
        return self._solids

    # -- places and loops ------------------------------------------------------------------

    def clear_of_shelves(self, p: XY, margin: float) -> bool:
        """Whether the disc of ``margin`` at ``p`` stays on the floor and off every shelf."""
        x, y = p
        if not (margin <= x <= self.width - margin and margin <= y <= self.height - margin):
            return False
        return bool(self.solids.distance(Point(p)) > margin)

    @property
    def standing(self) -> float:
        """How far a place keeps from shelves: the planner's reach, and a little more."""
        return self.radius + DEFAULT_CLEARANCE + 0.1

    def add_place(self, kind: PlaceKind, p: XY) -> None:
        if self.clear_of_shelves(p, self.standing):
            self.places.append((kind, p))

    def add_mover(
        self,
        rng: np.random.Generator,
        kind: Literal["person", "forklift"],
        waypoints: Sequence[XY],
    ) -> bool:
        """Add a mover walking ``waypoints`` as a loop, when the loop keeps off the shelves
        and the walls; False otherwise."""
        radius = PERSON_RADIUS if kind == "person" else FORKLIFT_RADIUS
        pts = [(r3(x), r3(y)) for x, y in waypoints]
        if len(pts) < 2 or any(a == b for a, b in zip(pts, [*pts[1:], pts[0]], strict=True)):
            return False
        if not all(self.clear_of_shelves(p, radius + 0.05) for p in pts):
            return False
        loop = LineString([*pts, pts[0]])
        if self.shelves and loop.distance(self.solids) <= radius + 0.05:
            return False
        count = sum(1 for m in self.movers if m["kind"] == kind)
        speed = rng.uniform(0.5, 1.0) if kind == "person" else rng.uniform(0.6, 1.2)
        patience = rng.uniform(2.0, 6.0) if kind == "person" else rng.uniform(2.0, 5.0)
        self.movers.append(
            {
                "id": f"{kind}{count}",
                "kind": kind,
                "radius": radius,
                "speed": r3(speed),
                "waypoints": [list(p) for p in pts],
                "patience": r3(patience),
            }
        )
        return True

    def loops(self) -> list[LineString]:
        return [LineString([*m["waypoints"], m["waypoints"][0]]) for m in self.movers]


def strip(a: XY, b: XY, depth: float) -> Polygon:
    """The rectangle of width ``depth`` centred on the segment ``a``-``b`` (flat ends)."""
    ax, ay = a
    bx, by = b
    length = math.hypot(bx - ax, by - ay)
    nx, ny = -(by - ay) / length * depth / 2, (bx - ax) / length * depth / 2
    return Polygon([(ax + nx, ay + ny), (bx + nx, by + ny), (bx - nx, by - ny), (ax - nx, ay - ny)])
