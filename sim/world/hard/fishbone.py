"""Fishbone rows: shelf rows turned 30-60 degrees off a central spine aisle, mirrored on
its two sides (a herringbone), inside a perimeter lane.

The rows are straight strips cut to the ground between the spine and the lane (so their
ends are slanted, and the rows near the floor's ends are cut to triangles and trapezoids);
the aisles between them run at the same angle and open onto the spine and the lane. With a
cross aisle parallel to the spine in some draws. Docks stand in the angled aisles, on the
spine and on the lane; people walk the spine and into the angled aisles, forklifts the
perimeter lane. Nothing here is aligned with the planner's grid.
"""

from __future__ import annotations

import math

import numpy as np
from shapely.geometry import box

from cabins.warehouse.routing import min_aisle_width
from sim.world.hard.draft import Draft, Redraw, r3, strip

__all__ = ["lay_out_fishbone"]


def lay_out_fishbone(
    rng: np.random.Generator, radius: float, max_floor: tuple[float, float], movers: int
) -> Draft:
    width = r3(rng.uniform(min(40.0, max_floor[0]), min(100.0, max_floor[0])))
    height = r3(rng.uniform(min(30.0, max_floor[1]), min(70.0, max_floor[1])))
    least = min_aisle_width(radius)
    lane = r3(max(2.6, least + 0.6, rng.uniform(2.6, 3.4)))
    spine = r3(rng.uniform(max(2.8, least + 0.8), 4.0))
    mid = r3(height / 2)
    angle = float(rng.uniform(30.0, 60.0))
    theta = math.radians(angle)
    depth = r3(rng.uniform(0.8, 1.4))
    aisle = r3(least + 0.1 + float(rng.uniform(0, 1) ** 1.5) * 1.4)
    pitch_u = (depth + aisle) / math.sin(theta)
    if mid - spine / 2 - lane < 6.0:
        raise Redraw("no room for rows beside the spine")
    draft = Draft(layout="fishbone", width=width, height=height, radius=radius)
    draft.notes.append(f"fishbone rows at {angle:.0f} deg, {aisle:.2f} m aisles")

    halves = [
        (box(lane, r3(mid + spine / 2), r3(width - lane), r3(height - lane)), +1),
        (box(lane, lane, r3(width - lane), r3(mid - spine / 2)), -1),
    ]
    cross = r3(rng.uniform(least + 0.1, 3.2)) if rng.random() < 0.5 else 0.0
    reach = 2 * height / math.sin(theta)
    offset = float(rng.uniform(0.0, pitch_u))
    count = int((width + 2 * height / math.tan(theta)) / pitch_u) + 2
    starts = [offset - height / math.tan(theta) + k * pitch_u for k in range(count)]
    for region, sign in halves:
        lo, hi = region.bounds[1], region.bounds[3]
        if cross:
            c = r3((lo + hi) / 2)
            parts = [
                box(lane, lo, width - lane, c - cross / 2),
                box(lane, c + cross / 2, width - lane, hi),
            ]
        else:
            parts = [region]
        dx, dy = math.cos(theta), sign * math.sin(theta)
        for u in starts:
            row = strip(
                (u - dx * reach, mid - dy * reach), (u + dx * reach, mid + dy * reach), depth
            )
            for part in parts:
                draft.add_clipped(row, part, min_area=2.0 * depth)
            # the aisle beside this row: a pick face part-way along it, and a picker's loop
            au = u + pitch_u / 2
            along = float(rng.uniform(0.25, 0.75)) * abs(hi - lo)
            v = (lo if sign > 0 else hi) + sign * along
            p = (au + (v - mid) / math.tan(theta) * sign, v)
            if lane + 1.0 < p[0] < width - lane - 1.0:
                draft.add_place("aisle", (r3(p[0]), r3(p[1])))
    if len(draft.shelves) < 8:
        raise Redraw("too few rows")

    for k in range(1, 8):
        draft.add_place("lane", (r3(width * k / 8), mid))
        draft.add_place("lane", (r3(width * k / 8), r3(lane / 2)))
        draft.add_place("lane", (r3(width * k / 8), r3(height - lane / 2)))
    draft.charger_spots.extend([(r3(width / 2 + 1.0), mid), (r3(width / 2), r3(lane / 2))])
    draft.start_spots.extend(
        [
            (r3(lane / 2 + 0.5), mid),
            (r3(width - lane / 2 - 0.5), mid),
            (r3(width / 2), r3(height - lane / 2)),
        ]
    )

    _movers(draft, rng, lane, mid, theta, movers)
    return draft


def _movers(
    draft: Draft, rng: np.random.Generator, lane: float, mid: float, theta: float, movers: int
) -> None:
    """A forklift round the perimeter lane or along one side; then forklifts on the lane,
    people along the spine and people from the spine into an angled aisle."""
    width, height, half = draft.width, draft.height, lane / 2
    draft.add_mover(
        rng,
        "forklift",
        [(half, half), (width - half, half), (width - half, height - half), (half, height - half)]
        if rng.random() < 0.5
        else [(half, half), (width - half, half)],
    )
    aisles = [p for kind, p in draft.places if kind == "aisle"]
    for _ in range(6 * movers):
        if len(draft.movers) >= movers:
            break
        roll = rng.random()
        if roll < 0.25:
            side = half if rng.random() < 0.5 else height - half
            draft.add_mover(rng, "forklift", [(half, side), (width - half, side)])
        elif roll < 0.5 or not aisles:
            a, b = sorted(rng.uniform(1.0, width - 1.0, size=2).tolist())
            draft.add_mover(rng, "person", [(a, mid), (max(b, a + 6.0), mid)])
        else:  # from the spine into an angled aisle, to its pick face and back
            px, py = aisles[int(rng.integers(0, len(aisles)))]
            sign = 1 if py > mid else -1
            gx = px - (py - mid) / math.tan(theta) * sign
            draft.add_mover(rng, "person", [(gx, mid), (px, py)])
