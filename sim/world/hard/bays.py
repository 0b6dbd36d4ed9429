"""Dead-end bays: blocks of racking that run from a main lane to a wall, the bays between
them open at the lane and closed at the wall, with docks at their closed ends.

One bank of bays above a lane along a wall, or two banks on either side of a middle lane.
Bays are drawn from just above the robot's minimum aisle width (1.85 m for the 0.35 m
robot: the issue's 1.9 m bays) to about 0.8 m wider, and a picker walks from the lane into
a bay to just in front of its dock and back: where the issue's stand-off happened (the
robot waiting in the bay, the picker behind it unable to leave, and the one way out behind
the robot). Each round the picker then takes what it picked ``PACK_OUT`` metres along the
lane and comes back. A picker that only stepped out of its bay to the middle of the lane
and straight back in left no time to get past it: a robot cannot pass a person in a bay
under 2.5 m, so the dock at the closed end was out of reach for good, whatever the robot
did (it had to be in the bay before the picker, and the picker was in it but for a
second or two each round). Now the bay is empty for a while each round, and a robot that
waits outside it gets in.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from cabins.warehouse.routing import min_aisle_width
from sim.world.hard.draft import PERSON_RADIUS, Draft, Frame, Redraw, r3
from sim.world.scenario import YIELD_MARGIN

__all__ = ["lay_out_bays"]


def lay_out_bays(
    rng: np.random.Generator, radius: float, max_floor: tuple[float, float], movers: int
) -> Draft:
    orientation: Literal["x", "y"] = "x" if rng.random() < 0.5 else "y"
    cap_u, cap_v = max_floor if orientation == "x" else max_floor[::-1]
    two_banks = rng.random() < 0.5
    span_u = r3(rng.uniform(min(30.0, cap_u), min(90.0, cap_u)))
    depth_range = (24.0, 50.0) if two_banks else (14.0, 30.0)
    span_v = r3(rng.uniform(min(depth_range[0], cap_v), min(depth_range[1], cap_v)))
    least = min_aisle_width(radius)
    lane = r3(max(2.6, least + 0.6, rng.uniform(2.6, 3.6)))
    if two_banks:
        low = r3((span_v - lane) / 2)
        banks = [(low, 0.0, -1), (r3(low + lane), span_v, +1)]  # (lane edge, wall, direction)
        lane_v = (low, r3(low + lane))
    else:
        banks = [(lane, span_v, +1)]
        lane_v = (0.0, lane)
    if any(abs(wall - edge) < 6.0 for edge, wall, _ in banks):
        raise Redraw("bays too shallow")
    frame = Frame(orientation, span_v, flip=bool(rng.random() < 0.5))
    width, height = (span_u, span_v) if orientation == "x" else (span_v, span_u)
    draft = Draft(layout="bays", width=width, height=height, radius=radius)
    mid_lane = (lane_v[0] + lane_v[1]) / 2

    bays, widths = _racking(draft, frame, rng, banks, span_u, least)
    if len(bays) < 3:
        raise Redraw("fewer than three bays")
    draft.notes.append(f"{len(bays)} dead-end bays {min(widths):.2f}-{max(widths):.2f} m")

    # pickers walk into a bay to just short of its dock and back; the rest walk the lane;
    # the docks at the closed ends are in the pickers' bays, and in two bays more
    order = rng.permutation(len(bays)).tolist()
    forklifts = 1 + int(rng.random() < 0.4)
    pickers = max(1, movers - forklifts - int(rng.integers(0, 2)))
    for index in order[: pickers + 2]:
        u_bay, dock_v, _sign = bays[index]
        draft.add_place("dead_end", frame.xy(u_bay, dock_v))
    for k in range(1, 9):
        draft.add_place("lane", frame.xy(span_u * k / 9, mid_lane))
    for k in (1, 3, 5, 7):
        draft.charger_spots.append(frame.xy(span_u * k / 8 + 0.7, mid_lane))
        draft.start_spots.append(frame.xy(span_u * k / 8 - 0.9, mid_lane))

    _movers(draft, frame, rng, [bays[i] for i in order[:pickers]], forklifts, mid_lane, movers)
    return draft


PACK_OUT = (8.0, 16.0)
"""How far along the lane (m) a picker walks from its bay and back, each round."""

Bay = tuple[float, float, int]
"""A bay: its centre along the lane, where its dock stands across it, and which way it
runs from the lane (+1 or -1 across)."""


def _racking(
    draft: Draft,
    frame: Frame,
    rng: np.random.Generator,
    banks: list[tuple[float, float, int]],
    span_u: float,
    least: float,
) -> tuple[list[Bay], list[float]]:
    """Blocks of racking from each bank's lane edge to its wall (or a flue short of it),
    the bays between them; the bays and their widths."""
    bays: list[Bay] = []
    widths: list[float] = []
    for edge, wall, sign in banks:
        u = r3(rng.uniform(0.0, 3.0))
        back = r3(rng.uniform(0.0, 0.4)) if rng.random() < 0.5 else 0.0  # a flue at the wall
        near, far = (edge, wall - sign * back) if sign > 0 else (wall - sign * back, edge)
        v_lo, v_hi = min(near, far), max(near, far)
        while True:
            block = r3(rng.uniform(1.0, 2.8))
            if u + block > span_u - 0.5:
                break
            draft.add_shelf(
                frame.points([(u, v_lo), (u + block, v_lo), (u + block, v_hi), (u, v_hi)])
            )
            u = r3(u + block)
            bay = r3(least + 0.05 + float(rng.uniform(0, 1) ** 2) * 0.8)
            if u + bay + 1.0 > span_u - 0.5:
                break
            dock_v = wall - sign * (draft.radius + 0.35)
            bays.append((r3(u + bay / 2), r3(dock_v), sign))
            widths.append(bay)
            u = r3(u + bay)
    return bays, widths


def _pack_out(
    rng: np.random.Generator, u_bay: float, span_u: float, places: list[float], keep: float
) -> float:
    """Where along the lane a picker takes what it picked, ``PACK_OUT`` metres from its bay
    (on a side with room), ``keep`` metres at least from the ``places`` on the lane (the
    picker turns back there, and a dock or the charger there could be stood on)."""
    spots: list[float] = []
    for _ in range(8):
        far = float(rng.uniform(*PACK_OUT))
        spots = [
            u
            for u in (u_bay - far, u_bay + far)
            if 1.5 <= u <= span_u - 1.5 and all(abs(u - p) >= keep for p in places)
        ]
        if spots:
            break
    if not spots:
        raise Redraw("no room along the lane for a picker to pack out")
    return spots[int(rng.integers(0, len(spots)))]


def _movers(
    draft: Draft,
    frame: Frame,
    rng: np.random.Generator,
    picked: list[Bay],
    forklifts: int,
    mid_lane: float,
    movers: int,
) -> None:
    """A picker into each ``picked`` bay, to just short of its dock and back, then along the
    lane and back (``_pack_out``); then ``forklifts`` forklifts and people along the lane."""
    span_u = draft.width if frame.orientation == "x" else draft.height
    # the pack-out walks are drawn from a stream of their own: the rest of a world is
    # drawn as it was before pickers walked them, so a seed keeps its floor and work
    packing = rng.spawn(1)[0]
    on_lane = [
        u
        for u in (span_u * k / 9 for k in range(1, 9))  # the lane's docks (lay_out_bays)
    ] + [span_u * k / 8 + d for k in (1, 3, 5, 7) for d in (0.7, -0.9)]  # charger, start
    keep = draft.radius + PERSON_RADIUS + YIELD_MARGIN + 0.2
    for u_bay, dock_v, sign in picked:
        short = float(rng.uniform(0.6, 1.2))
        mouth = frame.xy(u_bay, mid_lane)
        way = _pack_out(packing, u_bay, span_u, on_lane, keep)
        draft.add_mover(
            rng,
            "person",
            [mouth, frame.xy(u_bay, dock_v - sign * short), mouth, frame.xy(way, mid_lane)],
        )
    for _ in range(movers - len(draft.movers)):
        kind: Literal["person", "forklift"] = (
            "forklift"
            if sum(m["kind"] == "forklift" for m in draft.movers) < forklifts
            else "person"
        )
        a, b = sorted(rng.uniform(1.5, span_u - 1.5, size=2).tolist())
        if b - a < 8.0:
            a, b = 1.5, span_u - 1.5
        draft.add_mover(rng, kind, [frame.xy(a, mid_lane), frame.xy(b, mid_lane)])
