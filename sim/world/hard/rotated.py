"""Rotated rows: the whole floor inside a perimeter lane filled with shelf rows turned 8-40
degrees off the walls, cut by cross aisles square to them.

The rows are strips cut to the ground inside the lane, so along the lane they end in
triangles and slanted trapezoids, and the aisles between them open onto the lane at a
slant. Docks stand in the turned aisles and on the lane; people walk the turned aisles and
cross aisles from lane to lane, forklifts the perimeter lane. Nothing is aligned with the
planner's grid.
"""

from __future__ import annotations

import math

import numpy as np
from shapely.geometry import LineString, box

from cabins.warehouse.routing import min_aisle_width
from sim.world.hard.draft import Draft, Redraw, r3, strip

__all__ = ["lay_out_rotated"]


def lay_out_rotated(
    rng: np.random.Generator, radius: float, max_floor: tuple[float, float], movers: int
) -> Draft:
    width = r3(rng.uniform(min(40.0, max_floor[0]), min(100.0, max_floor[0])))
    height = r3(rng.uniform(min(30.0, max_floor[1]), min(70.0, max_floor[1])))
    least = min_aisle_width(radius)
    angle = float(rng.uniform(8.0, 40.0)) * (1 if rng.random() < 0.5 else -1)
    lane = r3(max(2.6, least + 0.6, rng.uniform(2.6, 3.4)))
    aisle = r3(least + 0.05 + float(rng.uniform(0, 1) ** 1.5) * 1.6)
    cross = r3(rng.uniform(least + 0.1, 3.2))
    depth = r3(rng.uniform(0.8, 1.6))
    seg = r3(rng.uniform(5.0, 12.0))
    draft = Draft(layout="rotated", width=width, height=height, radius=radius)
    draft.notes.append(f"rows turned {angle:.0f} deg, {aisle:.2f} m aisles")

    t = math.radians(angle)
    eu, ev = (math.cos(t), math.sin(t)), (-math.sin(t), math.cos(t))
    cx, cy = width / 2, height / 2
    span = math.hypot(width, height)

    def at(u: float, v: float) -> tuple[float, float]:
        return (cx + u * eu[0] + v * ev[0], cy + u * eu[1] + v * ev[1])

    region = box(lane, lane, width - lane, height - lane)
    pitch_v, pitch_u = depth + aisle, seg + cross
    shift_v, shift_u = float(rng.uniform(0, pitch_v)), float(rng.uniform(0, pitch_u))
    count_v, count_u = int(span / pitch_v) + 2, int(span / pitch_u) + 2
    rows = [shift_v + (k - count_v // 2) * pitch_v for k in range(count_v)]
    crosses = [shift_u + (k - count_u // 2) * pitch_u for k in range(count_u)]
    cut = region
    for u in crosses:
        cut = cut.difference(strip(at(u, -span), at(u, span), cross))
    for v in rows:
        draft.add_clipped(strip(at(-span, v), at(span, v), depth), cut, min_area=1.5 * depth)
    if len(draft.shelves) < 10:
        raise Redraw("too few shelves")

    inner = region.buffer(-1.0)
    aisle_lines: list[tuple[tuple[float, float], tuple[float, float]]] = []
    for v in rows:
        line = LineString([at(-span, v + pitch_v / 2), at(span, v + pitch_v / 2)]).intersection(
            inner
        )
        if isinstance(line, LineString) and line.length > 6.0:
            a, b = line.coords[0], line.coords[-1]
            aisle_lines.append((a, b))
            for share in rng.uniform(0.15, 0.85, size=2).tolist():
                draft.add_place(
                    "aisle", (r3(a[0] + (b[0] - a[0]) * share), r3(a[1] + (b[1] - a[1]) * share))
                )
    half = lane / 2
    for k in range(1, 8):
        for p in ((width * k / 8, half), (width * k / 8, height - half)):
            draft.add_place("lane", (r3(p[0]), r3(p[1])))
        draft.add_place("lane", (r3(half), r3(height * k / 8)))
    aisle_places = [p for kind, p in draft.places if kind == "aisle"]
    middle = min(aisle_places, key=lambda p: math.dist(p, (cx, cy)), default=(cx, half))
    draft.charger_spots.extend([(r3(width / 2), r3(half)), (r3(middle[0] + 1.2), r3(middle[1]))])
    draft.start_spots.extend(
        [(r3(half + 0.5), r3(half + 0.5)), (r3(width - half - 0.5), r3(height - half - 0.5))]
    )

    _movers(draft, rng, half, aisle_lines, movers)
    return draft


def _movers(
    draft: Draft,
    rng: np.random.Generator,
    half: float,
    aisle_lines: list[tuple[tuple[float, float], tuple[float, float]]],
    movers: int,
) -> None:
    """One or two forklifts along sides of the perimeter lane, people along turned aisles
    from the lane, all the way across or part of it."""
    width, height = draft.width, draft.height
    corners = [
        (half, half),
        (width - half, half),
        (width - half, height - half),
        (half, height - half),
    ]
    first = int(rng.integers(0, 4))
    draft.add_mover(rng, "forklift", [corners[first], corners[(first + 1) % 4]])
    forklifts = 1 + int(rng.random() < 0.4)
    for _ in range(6 * movers):
        if len(draft.movers) >= movers:
            break
        if sum(m["kind"] == "forklift" for m in draft.movers) < forklifts:
            k = int(rng.integers(0, 4))
            draft.add_mover(rng, "forklift", [corners[k], corners[(k + 1) % 4]])
        elif aisle_lines:
            a, b = aisle_lines[int(rng.integers(0, len(aisle_lines)))]
            end = float(rng.uniform(0.5, 1.0))
            draft.add_mover(
                rng, "person", [a, (a[0] + (b[0] - a[0]) * end, a[1] + (b[1] - a[1]) * end)]
            )
