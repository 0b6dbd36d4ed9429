"""Long single-lane corridors: a long, narrow floor whose two corridors run either side of
a central block of racking and meet only at its ends, in an open bay at each end.

The corridors are 2.6-3.0 m wide (never less than the robot's minimum and 0.6 m), so the
robot fits, and so does a forklift, but never both side by side: a forklift in a corridor
is met head on or followed to the end. The racking is cut into shelves by flue gaps
narrower than anyone who walks the floor, and racking along the outer walls faces the
corridors. Forklifts shuttle along a corridor or circulate round the central block; people
walk the end bays and along the corridors; nobody turns back inside a corridor. Docks
stand deep in the corridors and in the end bays, the charger in an end bay or half-way
along a corridor: the issue's long two-corridor floor, where the robot followed a forklift
into the single lane and shuttled behind it, and where its battery ran flat.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from cabins.warehouse.routing import min_aisle_width
from sim.world.hard.draft import Draft, Frame, Redraw, r3

__all__ = ["lay_out_corridors"]


def _racking(
    draft: Draft, frame: Frame, rng: np.random.Generator, u0: float, u1: float, v0: float, v1: float
) -> None:
    """Shelves filling [u0, u1] x [v0, v1], cut by flue gaps of 0.1-0.4 m."""
    u = u0
    while u < u1 - 0.5:
        end = min(u1, u + float(rng.uniform(5.0, 14.0)))
        if u1 - end < 2.0:
            end = u1
        draft.add_shelf(frame.points([(u, v0), (end, v0), (end, v1), (u, v1)]))
        u = r3(end + rng.uniform(0.1, 0.4))


def lay_out_corridors(
    rng: np.random.Generator, radius: float, max_floor: tuple[float, float], movers: int
) -> Draft:
    orientation: Literal["x", "y"] = "x" if rng.random() < 0.5 else "y"
    cap_u, cap_v = max_floor if orientation == "x" else max_floor[::-1]
    least = min_aisle_width(radius)
    lane = [r3(max(least + 0.6, rng.uniform(2.6, 3.0))) for _ in range(2)]
    outer = [r3(rng.uniform(0.8, 1.6)) if rng.random() < 0.7 else 0.0 for _ in range(2)]
    middle = r3(rng.uniform(1.6, 5.0))
    span_v = r3(outer[0] + lane[0] + middle + lane[1] + outer[1])
    span_u = r3(rng.uniform(min(50.0, cap_u), min(120.0, cap_u)))
    if span_v > cap_v or span_u < 30.0:
        raise Redraw("the corridors do not fit the floor")
    end_bays = [r3(rng.uniform(3.5, 6.0)) for _ in range(2)]
    u_lo, u_hi = end_bays[0], r3(span_u - end_bays[1])
    frame = Frame(orientation, span_v, flip=bool(rng.random() < 0.5))
    width, height = (span_u, span_v) if orientation == "x" else (span_v, span_u)
    draft = Draft(layout="corridors", width=width, height=height, radius=radius)

    c0 = (outer[0], r3(outer[0] + lane[0]))  # the first corridor, across v
    c1 = (r3(c0[1] + middle), r3(c0[1] + middle + lane[1]))
    _racking(draft, frame, rng, u_lo, u_hi, c0[1], c1[0])
    if outer[0]:
        _racking(draft, frame, rng, u_lo, u_hi, 0.0, outer[0])
    if outer[1]:
        _racking(draft, frame, rng, u_lo, u_hi, c1[1], span_v)
    draft.notes.append(f"two {u_hi - u_lo:.0f} m corridors {min(lane):.2f}-{max(lane):.2f} m wide")

    mids = [r3((c0[0] + c0[1]) / 2), r3((c1[0] + c1[1]) / 2)]
    length = u_hi - u_lo
    for mid in mids:
        for share in sorted(rng.uniform(0.15, 0.85, size=3).tolist()):
            draft.add_place("aisle", frame.xy(u_lo + share * length, mid))
    ends = [r3(end_bays[0] / 2), r3(span_u - end_bays[1] / 2)]
    for u in ends:
        for share in (0.2, 0.8):
            draft.add_place("lane", frame.xy(u, span_v * share))
    side = int(rng.integers(0, 2))
    draft.charger_spots.append(frame.xy(ends[side], span_v * 0.5))
    # or half-way along a corridor, where a charging robot blocks the lane
    draft.charger_spots.append(frame.xy(r3((u_lo + u_hi) / 2 + 1.0), mids[side]))
    draft.start_spots.extend(frame.xy(ends[k], span_v * 0.5) for k in (1 - side, side))

    _movers(draft, frame, rng, (u_lo, u_hi), ends, mids, span_v, movers)
    return draft


def _movers(
    draft: Draft,
    frame: Frame,
    rng: np.random.Generator,
    racking: tuple[float, float],
    ends: list[float],
    mids: list[float],
    span_v: float,
    movers: int,
) -> None:
    """One to three forklifts, each round the central racking or to and fro along a
    corridor between the end bays; then people across an end bay or along a corridor
    between the end bays.

    Nobody turns back inside a corridor: a mover cannot be passed there, so one that
    turned back at a point inside (a forklift shuttling from an end bay to half-way) shut
    the corridor beyond that point to a robot coming from its end bay for good; the robot
    followed it in and met it head on where it turned, every time (hard:1). Turning in
    the end bays, a mover met head on turns back and leads the robot out into open floor.
    """
    u_lo, u_hi = racking
    length = u_hi - u_lo
    forklifts = max(1, min(movers - 2, 1 + int(rng.integers(0, 3))))
    for k in range(forklifts):
        mid = mids[k % 2]
        if rng.random() < 0.5:  # round the central block, up one corridor and down the other
            a, b = ends
            pts = [
                frame.xy(a, mids[0]),
                frame.xy(b, mids[0]),
                frame.xy(b, mids[1]),
                frame.xy(a, mids[1]),
            ]
        else:  # to and fro along one corridor, from one end bay to the other
            a = ends[int(rng.integers(0, 2))]
            rng.uniform(0.3, 0.9)  # once how far it went in: kept, so the rest draws as before
            b = ends[1] if a == ends[0] else ends[0]
            pts = [frame.xy(a, mid), frame.xy(b, mid)]
        draft.add_mover(rng, "forklift", pts)
    for _ in range(4 * movers):
        if len(draft.movers) >= movers:
            break
        end = ends[int(rng.integers(0, 2))]
        if rng.random() < 0.5:  # across an end bay
            pts = [frame.xy(end, 0.8), frame.xy(end, span_v - 0.8)]
        else:  # through a corridor to the other end bay and back
            mid = mids[int(rng.integers(0, 2))]
            rng.uniform(5.0, 0.6 * length)  # once how far they went in (see the forklifts)
            other = ends[1] if end == ends[0] else ends[0]
            pts = [frame.xy(end, mid), frame.xy(other, mid)]
        draft.add_mover(rng, "person", pts)
