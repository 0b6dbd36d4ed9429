"""The work on a drafted floor: which places become docks, the charger and the start, the
zones, the deliveries, the battery and the run's duration; the result is a scenario's data.

Docks at the closed ends of bays are taken first (half the docks, when a layout has them),
and most deliveries start or end at one. The battery is one of two kinds. A *tight*
battery holds less than some delivery's whole round from the charger (to its pick-up, to
its drop, back to the charger), yet enough for the round to either dock alone with 30 %
to spare, and never less than 12 Wh (100 m of driving, 20 minutes standing): the robot
can deliver it, but only by charging between the pick-up and the drop (the issue's flat
battery came from a robot that did not); the charger then stands in the middle of the
floor, where such a delivery can be found, and the other deliveries use only docks whose
round the battery covers with 30 % to spare. An *ample* battery
covers the rounds of any two deliveries, and its low level (15-30 %) holds half as much
again as the way to the charger from any dock: a robot that charges when the battery runs
low always gets there. Battery use is reckoned by ``sim.world.hard.routes``.
The duration leaves time for every route twice over at 0.8 m/s, each pick and drop, every
charge the work needs, and waiting on the movers.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from shapely.geometry import Point, Polygon, box

from cabins.warehouse.routing import min_aisle_width
from sim.world.hard.draft import Draft, Redraw, r3
from sim.world.hard.routes import Routes, energy
from sim.world.hard.settings import HardSettings
from sim.world.scenario import YIELD_MARGIN

__all__ = ["draw_work"]

XY = tuple[float, float]

DRAIN_M, DRAIN_S, CHARGE = 0.1, 0.01, 0.5
CHARGE_UNTIL = 0.9  # the planner's default charge_until
FEASIBLE = 1.3  # a full charge covers the round to any one dock this many times over
FORCING = 1.1  # the tight round needs this many times a full charge, at the robot's best
TIGHT_LEAST = 12.0  # Wh: the smallest tight battery, 100 m of driving or 20 min standing
_SPACING = 2.0  # m between any two places
_TURN_SLACK = 0.2  # m a place keeps beyond the clearance from where a mover turns back


def _wh(metres: float) -> float:
    return energy(metres, per_m=DRAIN_M, per_s=DRAIN_S)


def _turns(draft: Draft) -> list[tuple[XY, float]]:
    """Where the movers turn back (a loop's waypoint its way reverses at), each with the
    distance a place keeps from it: the robot's radius, the mover's and its yield margin,
    and a little more."""
    turns: list[tuple[XY, float]] = []
    for mover in draft.movers:
        pts = [(float(p[0]), float(p[1])) for p in mover["waypoints"]]
        keep = draft.radius + float(mover["radius"]) + YIELD_MARGIN + _TURN_SLACK
        for k, here in enumerate(pts):
            back, ahead = pts[k - 1], pts[(k + 1) % len(pts)]
            ux, uy = here[0] - back[0], here[1] - back[1]
            vx, vy = ahead[0] - here[0], ahead[1] - here[1]
            norm = math.hypot(ux, uy) * math.hypot(vx, vy)
            if norm > 0 and (ux * vx + uy * vy) / norm < -0.9:
                turns.append((here, keep))
    return turns


def _clear_of_turns(p: XY, turns: list[tuple[XY, float]]) -> bool:
    """Whether ``p`` keeps its distance from every point where a mover turns back."""
    return all(math.dist(p, at) >= keep for at, keep in turns)


def _pick(
    candidates: list[XY],
    taken: list[XY],
    count: int,
    order: list[int],
    turns: list[tuple[XY, float]] | None = None,
) -> list[XY]:
    picked: list[XY] = []
    for index in order:
        p = candidates[index]
        if turns is not None and not _clear_of_turns(p, turns):
            continue
        if all(math.dist(p, q) >= _SPACING for q in [*taken, *picked]):
            picked.append(p)
            if len(picked) == count:
                break
    return picked


def _places(
    draft: Draft, rng: np.random.Generator, tight: bool
) -> tuple[list[XY], list[XY], XY, XY]:
    """Dead-end docks, the other docks, the charger and the start; the others, the charger
    and the start keep clear of where movers turn back (``_turns``). A mover the robot
    meets head on turns back; met where its way turns back anyway, it stands there, and a
    dock under it is out of reach for as long as the robot waits (hard:1: a dock at the
    end of a forklift's shuttle). A dead-end dock is the exception drawn on purpose: the
    picker of its bay turns just in front of it, and leaves the bay each round."""
    turns = _turns(draft)
    spots = [
        p
        for p in draft.charger_spots
        if draft.clear_of_shelves(p, draft.standing) and _clear_of_turns(p, turns)
    ]
    if not spots:
        raise Redraw("no room for the charger")
    if tight:  # the charger in the middle: the rounds to either end are short
        centre = (draft.width / 2, draft.height / 2)
        charger = min(spots, key=lambda p: math.dist(p, centre))
    else:
        charger = spots[int(rng.integers(0, len(spots)))]
    count = int(rng.integers(5, 10))
    dead = [p for kind, p in draft.places if kind == "dead_end"]
    other = [p for kind, p in draft.places if kind != "dead_end"]
    ends = _pick(dead, [charger], max(2, count // 2), rng.permutation(len(dead)).tolist())
    rest = _pick(
        other, [charger, *ends], count - len(ends), rng.permutation(len(other)).tolist(), turns
    )
    if len(ends) + len(rest) < 4:
        raise Redraw("not enough room for the docks")
    firsts = [Point(m["waypoints"][0]) for m in draft.movers]
    starts = [
        p
        for p in draft.start_spots
        if draft.clear_of_shelves(p, draft.standing)
        and _clear_of_turns(p, turns)
        and all(math.dist(p, q) >= _SPACING for q in [charger, *ends, *rest])
    ]
    if not starts:
        raise Redraw("no room for the start")
    start = max(starts, key=lambda p: min((f.distance(Point(p)) for f in firsts), default=0.0))
    clearance = draft.radius + 0.6 + YIELD_MARGIN + 0.2
    draft.movers = [
        m for m in draft.movers if Point(m["waypoints"][0]).distance(Point(start)) >= clearance
    ]
    return ends, rest, charger, start


def _zones(draft: Draft, rng: np.random.Generator, places: list[XY]) -> None:
    """A forbidden zone against a wall, leaving every passage the robot's width, and a
    speed zone over a stretch of floor where routes run (each in most draws)."""
    if draft.layout == "large":  # the generator's own
        return
    least = min_aisle_width(draft.radius)
    loops = draft.loops()
    reach = draft.standing + 0.2
    if rng.random() < 0.7:
        for _ in range(12):
            extent, deep = float(rng.uniform(1.5, 4.0)), float(rng.uniform(0.3, 0.8))
            wall = int(rng.integers(0, 4))
            along = float(rng.uniform(0.1, 0.9))
            if wall < 2:
                x = along * draft.width
                y0 = 0.0 if wall == 0 else draft.height - deep
                zone = box(
                    max(0.0, x - extent / 2), y0, min(draft.width, x + extent / 2), y0 + deep
                )
            else:
                y = along * draft.height
                x0 = 0.0 if wall == 2 else draft.width - deep
                zone = box(
                    x0, max(0.0, y - extent / 2), x0 + deep, min(draft.height, y + extent / 2)
                )
            if (
                (not draft.shelves or zone.distance(draft.solids) > least + 0.1)
                and all(zone.distance(Point(p)) > reach for p in places)
                and all(zone.distance(loop) > 1.0 for loop in loops)
            ):
                minx, miny, maxx, maxy = (r3(v) for v in zone.bounds)
                draft.forbidden.append(
                    {
                        "id": "hv",
                        "polygon": [[minx, miny], [maxx, miny], [maxx, maxy], [minx, maxy]],
                        "description": "high voltage: keep out",
                    }
                )
                break
    if rng.random() < 0.7:
        cx, cy = places[int(rng.integers(0, len(places)))]
        half_w, half_h = float(rng.uniform(2.0, 5.0)), float(rng.uniform(1.5, 4.0))
        minx, miny = r3(max(0.0, cx - half_w)), r3(max(0.0, cy - half_h))
        maxx, maxy = r3(min(draft.width, cx + half_w)), r3(min(draft.height, cy + half_h))
        draft.speed_zones.append(
            {
                "id": "slow_zone",
                "polygon": [[minx, miny], [maxx, miny], [maxx, maxy], [minx, maxy]],
                "max_speed": r3(rng.uniform(0.4, 0.9)),
            }
        )


def _tasks(
    rng: np.random.Generator,
    count: int,
    dead_ends: int,
    usable: list[int],
    tight_pair: tuple[int, int] | None,
) -> list[tuple[int, int, float]]:
    """(pick-up, drop, release) as dock indices (the first ``dead_ends`` docks are at dead
    ends): most touch a dead-end dock; the tight pair, when there is one, somewhere among
    them; the others between ``usable`` docks; releases 0-25 s apart, some at once."""
    ends = [i for i in usable if i < dead_ends]
    tasks: list[tuple[int, int, float]] = []
    release = 0.0
    tight_at = int(rng.integers(0, count)) if tight_pair is not None else -1
    for k in range(count):
        if k == tight_at and tight_pair is not None:
            a, b = tight_pair
        elif ends and rng.random() < 0.7:
            end = ends[int(rng.integers(0, len(ends)))]
            others = [i for i in usable if i != end]
            other = others[int(rng.integers(0, len(others)))]
            a, b = (end, other) if rng.random() < 0.5 else (other, end)
        else:
            a, b = rng.choice(usable, size=2, replace=False).tolist()
        tasks.append((int(a), int(b), r3(release)))
        release += 0.0 if rng.random() < 0.3 else float(rng.uniform(5.0, 25.0))
    return tasks


@dataclass(frozen=True, slots=True)
class _Tight:
    """A tight battery: the delivery it is tight for, its capacity, and the docks whose
    round from the charger it covers with ``FEASIBLE`` to spare (the other deliveries')."""

    pair: tuple[int, int]
    battery_wh: float
    usable: list[int]


def _tight(routes: Routes, docks: list[XY], charger: XY) -> _Tight | None:
    """The delivery whose round from the charger is longest against the rounds to its two
    docks alone, when a battery can be too small for the one and big enough for the others
    (see the module docstring); None when no delivery is."""
    legs = [_wh(routes.length(charger, d)) for d in docks]
    best: tuple[float, tuple[int, int], float] | None = None
    for a, b in itertools.permutations(range(len(docks)), 2):
        whole = legs[a] + _wh(routes.length(docks[a], docks[b])) + legs[b]
        floor = FEASIBLE * 2 * max(legs[a], legs[b]) / CHARGE_UNTIL
        top = whole / (FORCING * CHARGE_UNTIL)
        floor = max(floor, TIGHT_LEAST)
        if top > floor and (best is None or top / floor > best[0]):
            best = (top / floor, (a, b), (floor + top) / 2)
    if best is None:
        return None
    _, pair, battery_wh = best
    usable = [i for i, leg in enumerate(legs) if FEASIBLE * 2 * leg <= CHARGE_UNTIL * battery_wh]
    return _Tight(pair, battery_wh, usable) if len(usable) >= 3 else None


@dataclass(frozen=True, slots=True)
class _Work:
    """What ``draw_work`` drew, before it is written out as a scenario's data."""

    docks: list[XY]
    charger: XY
    start: XY
    tasks: list[tuple[int, int, float]]
    tight: bool
    low: float
    battery_wh: float
    start_battery: float
    duration: float


def draw_work(
    draft: Draft, rng: np.random.Generator, settings: HardSettings, seed: int, *, tight: bool
) -> dict[str, Any]:
    """The scenario's data for ``draft``, with a tight battery or an ample one (see the
    module docstring)."""
    ends, rest, charger, start = _places(draft, rng, tight)
    want = settings.movers if settings.movers is not None else 5
    if len(draft.movers) < min(want, 5):
        raise Redraw(f"only {len(draft.movers)} movers")
    docks = ends + rest
    _zones(draft, rng, [*docks, charger, start])
    routes = Routes(
        (0.0, 0.0, draft.width, draft.height),
        [Polygon(s) for s in draft.shelves],
        [Polygon([tuple(p) for p in z["polygon"]]) for z in draft.forbidden],
        draft.radius,
    )
    if any(math.isinf(routes.length(start, p)) for p in [*docks, charger]):
        raise Redraw("a place the robot cannot reach")
    squeeze = _tight(routes, docks, charger) if tight else None
    if tight and squeeze is None:
        raise Redraw("no delivery long enough for a tight battery")
    count = settings.tasks if settings.tasks is not None else int(rng.integers(4, 9))
    usable = squeeze.usable if squeeze is not None else list(range(len(docks)))
    tasks = _tasks(rng, count, len(ends), usable, None if squeeze is None else squeeze.pair)
    travel = 0.0
    for (a, b, _), here in zip(tasks, [start, *(docks[b] for _, b, _ in tasks)], strict=False):
        travel += routes.length(here, docks[a]) + routes.length(docks[a], docks[b])
    low = r3(rng.uniform(0.15, 0.3))
    if squeeze is not None:
        battery_wh = r3(squeeze.battery_wh)
    else:
        battery_wh = r3(_ample(rng, routes, docks, charger, start, tasks, low))
    start_battery = r3(rng.uniform(max(0.45, low + 0.15), 0.95))
    charges = 1 + math.ceil(_wh(travel) / (battery_wh * (CHARGE_UNTIL - low)))
    charges += 2 if tight else 0
    detour = 2 * max(routes.length(charger, d) for d in docks) / 0.8
    duration = r3(
        tasks[-1][2]
        + 2 * travel / 0.8
        + count * 45.0
        + charges * (battery_wh * CHARGE_UNTIL / CHARGE + detour)
        + 30.0 * len(draft.movers)
        + 120.0
    )
    work = _Work(docks, charger, start, tasks, tight, low, battery_wh, start_battery, duration)
    return _data(draft, rng, seed, work)


def _ample(
    rng: np.random.Generator,
    routes: Routes,
    docks: list[XY],
    charger: XY,
    start: XY,
    tasks: list[tuple[int, int, float]],
    low: float,
) -> float:
    """An ample battery's capacity (Wh), see the module docstring."""
    rounds = [
        routes.length(charger, docks[a])
        + routes.length(docks[a], docks[b])
        + routes.length(docks[b], charger)
        for a, b, _ in tasks
    ]
    home = max(routes.length(p, charger) for p in [start, *docks])
    return float(rng.uniform(1.0, 1.4)) * max(
        20.0, 2 * _wh(max(rounds)) / CHARGE_UNTIL, 1.5 * _wh(home) / low
    )


def _data(draft: Draft, rng: np.random.Generator, seed: int, work: _Work) -> dict[str, Any]:
    """The scenario's data; the robot's speeds and the failure rates are drawn here."""
    people = sum(m["kind"] == "person" for m in draft.movers)
    description = (
        f"hard: seed {seed}, {draft.layout}, {draft.width:g}x{draft.height:g} m, "
        f"{', '.join(draft.notes)}, {len(draft.movers)} movers ({people} people), "
        f"{len(work.tasks)} tasks, {'tight' if work.tight else 'ample'} "
        f"{work.battery_wh:g} Wh battery"
    )
    sx, sy = work.start
    return {
        "name": f"hard:{seed}",
        "description": description,
        "duration": work.duration,
        "rate_hz": 20.0,
        "floor": {"min_x": 0.0, "min_y": 0.0, "max_x": draft.width, "max_y": draft.height},
        "shelves": [
            {"id": f"S{k}", "polygon": [list(p) for p in s]} for k, s in enumerate(draft.shelves)
        ],
        "docks": [{"id": f"D{k}", "x": p[0], "y": p[1]} for k, p in enumerate(work.docks)],
        "chargers": [{"id": "C0", "x": work.charger[0], "y": work.charger[1]}],
        "forbidden_zones": draft.forbidden,
        "speed_zones": draft.speed_zones,
        "moving_obstacles": draft.movers,
        "robot": {
            "radius": draft.radius,
            "max_speed": r3(rng.uniform(1.0, 1.8)),
            "max_turn_rate": r3(rng.uniform(1.5, 2.5)),
            "max_accel": r3(rng.uniform(0.6, 1.2)),
            "start": {"x": sx, "y": sy, "theta": r3(rng.uniform(-math.pi, math.pi))},
            "battery_wh": work.battery_wh,
            "start_battery": work.start_battery,
            "drain_wh_per_m": DRAIN_M,
            "drain_wh_per_s": DRAIN_S,
            "charge_wh_per_s": CHARGE,
            "low_battery": work.low,
        },
        "tasks": [
            {"id": f"t{k}", "pickup": f"D{a}", "drop": f"D{b}", "release": release}
            for k, (a, b, release) in enumerate(work.tasks)
        ],
        "failures": {
            "pick_fail_p": r3(rng.uniform(0.0, 0.2)),
            "drop_fail_p": r3(rng.uniform(0.0, 0.1)),
            "sensor_dropout_p": r3(rng.uniform(0.0, 0.02)),
        },
    }
