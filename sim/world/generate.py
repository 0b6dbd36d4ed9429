"""The scenario generator: valid random warehouses, for checking cabins on layouts nobody
here wrote.

``generate(seed, settings)`` draws one warehouse from a seeded ``numpy.random.Generator``
(same seed and settings, same scenario, so the same TOML): a floor of a drawn size with
rows of shelves along x or along y, cut by cross aisles, in aisles from just above the
robot's minimum (``cabins.warehouse.routing.min_aisle_width``) to wide; shelves that are boxes,
chamfered boxes, trapezoids or notched (L-shaped) outlines; docks and a charger in the
perimeter lane and in the aisles; a forbidden zone against a wall and a speed zone on a
lane where routes run; people walking loops that cross the aisles and forklifts on the
perimeter lane; a battery small enough that the robot must charge; and tasks with
staggered releases, given a duration long enough to deliver them all.

Every draw is validated as a ``Scenario`` (reachability included), so a generated world
always loads; ``to_toml`` writes it so that ``load_scenario`` reads back the same
scenario. ``parse_generated`` reads the ``gen:N`` and ``gen:A-B`` names campaigns take
(``sim.world.families`` names this family and the harder ``hard:N`` beside it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from shapely.geometry import LineString, Point, box

from cabins.warehouse.routing import DEFAULT_CLEARANCE, min_aisle_width
from runtime.errors import SettingError
from sim.world.names import parse_name
from sim.world.scenario import YIELD_MARGIN, Scenario

__all__ = [
    "GENERATED_PREFIX",
    "GeneratorSettings",
    "generate",
    "generated_name",
    "parse_generated",
    "to_toml",
]

GENERATED_PREFIX = "gen:"
"""``gen:7`` names the world ``generate(7)`` makes; ``gen:0-49`` fifty of them."""

Orientation = Literal["x", "y"]

_ROBOT_RADIUS = 0.35
_LANE_MIN = 2.6  # m: the perimeter lane, where docks, the charger and forklifts are
_ATTEMPTS = 20


@dataclass(frozen=True, kw_only=True, slots=True)
class GeneratorSettings:
    """What ``generate`` draws at random unless it is fixed here (None: drawn)."""

    size: tuple[float, float] | None = None
    """Floor width and height (m); drawn in 16-44 x 12-30."""
    aisle_width: float | None = None
    """Width of the aisles between shelf rows (m); drawn from just above the robot's
    minimum to 4 m."""
    orientation: Orientation | None = None
    """Rows along x or along y."""
    people: int | None = None
    """People walking loops across the aisles; drawn in 0-3."""
    forklifts: int | None = None
    """Forklifts on the perimeter lane; drawn in 0-1."""
    tasks: int | None = None
    """Deliveries; drawn in 2-6."""
    docks: int | None = None
    """Pick-up and drop points; drawn in 3-6."""

    def __post_init__(self) -> None:
        if self.size is not None:
            w, h = self.size
            if not (math.isfinite(w) and math.isfinite(h) and w >= 12 and h >= 10):
                raise SettingError(f"size must be at least 12x10 m, got {w:g}x{h:g}")
            if w > 400 or h > 400:
                raise SettingError(f"size must be at most 400x400 m, got {w:g}x{h:g}")
        if self.aisle_width is not None and not (
            math.isfinite(self.aisle_width) and 0 < self.aisle_width <= 10
        ):
            raise SettingError(f"aisle width must be in (0, 10] m, got {self.aisle_width!r}")
        if self.orientation not in (None, "x", "y"):
            raise SettingError(f"orientation must be 'x' or 'y', got {self.orientation!r}")
        for name, low, high in (
            ("people", 0, 20),
            ("forklifts", 0, 5),
            ("tasks", 1, 50),
            ("docks", 2, 12),
        ):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
            ):
                raise SettingError(f"{name} must be a whole number in {low}-{high}, got {value!r}")


def generated_name(seed: int) -> str:
    """The name of the world ``generate(seed)`` makes with the default settings."""
    return f"{GENERATED_PREFIX}{seed}"


def parse_generated(text: str) -> list[int] | None:
    """The seeds ``gen:N`` or ``gen:A-B`` names (None when ``text`` is not such a name);
    ``sim.world.names`` is their grammar, shared with the other families."""
    if not text.startswith(GENERATED_PREFIX):
        return None
    found = parse_name(text, {"gen": "this generator's worlds"})
    return None if found is None else found[1]


def generate(seed: int, settings: GeneratorSettings | None = None) -> Scenario:
    """A valid random warehouse for ``seed`` (see the module docstring)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SettingError(f"seed must be a whole number >= 0, got {seed!r}")
    settings = settings if settings is not None else GeneratorSettings()
    rng = np.random.default_rng(seed)
    problem: Exception | None = None
    for _ in range(_ATTEMPTS):
        try:
            return _draw(seed, settings, rng)
        except (ValueError, _Redraw) as exc:  # a draw that does not fit: the next one
            problem = exc
    raise SettingError(
        f"could not generate a valid warehouse for seed {seed} with these settings "
        f"in {_ATTEMPTS} draws (last problem: {problem})"
    )


def to_toml(scenario: Scenario) -> str:
    """The scenario as a TOML file that ``load_scenario`` reads back equal."""
    import tomli_w

    data = scenario.model_dump(mode="json", exclude_defaults=False)
    head = f"# {scenario.description}\n" if scenario.description else ""
    return head + tomli_w.dumps(_without_none(data))


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class _Redraw(Exception):
    """This draw cannot be made into a good world; draw again."""


def _r(value: float) -> float:
    return round(float(value), 3)


@dataclass(frozen=True, slots=True)
class _Frame:
    """Local (u along the rows, v across them) to world (x, y) coordinates."""

    orientation: Orientation

    def xy(self, u: float, v: float) -> tuple[float, float]:
        return (_r(u), _r(v)) if self.orientation == "x" else (_r(v), _r(u))


def _shelf_outline(
    rng: np.random.Generator, u0: float, v0: float, u1: float, v1: float
) -> list[tuple[float, float]]:
    """A shelf outline inside the box [u0, u1] x [v0, v1] (local coordinates)."""
    kind = rng.choice(["box", "box", "chamfer", "trapezoid", "notch"])
    length, depth = u1 - u0, v1 - v0
    if kind == "chamfer":
        c = float(rng.uniform(0.15, 0.45)) * min(depth, length)
        return [
            (u0 + c, v0),
            (u1 - c, v0),
            (u1, v0 + c),
            (u1, v1 - c),
            (u1 - c, v1),
            (u0 + c, v1),
            (u0, v1 - c),
            (u0, v0 + c),
        ]
    if kind == "trapezoid":
        inset = float(rng.uniform(0.1, 0.3)) * length
        if rng.random() < 0.5:
            return [(u0, v0), (u1, v0), (u1 - inset, v1), (u0 + inset, v1)]
        return [(u0 + inset, v0), (u1 - inset, v0), (u1, v1), (u0, v1)]
    if kind == "notch" and length > 2.0:
        cut_u = u0 + float(rng.uniform(0.3, 0.7)) * length
        cut_v = v0 + float(rng.uniform(0.35, 0.65)) * depth
        return [(u0, v0), (u1, v0), (u1, cut_v), (cut_u, cut_v), (cut_u, v1), (u0, v1)]
    return [(u0, v0), (u1, v0), (u1, v1), (u0, v1)]


def _draw(seed: int, settings: GeneratorSettings, rng: np.random.Generator) -> Scenario:
    orientation: Orientation = settings.orientation or ("x" if rng.random() < 0.5 else "y")
    frame = _Frame(orientation)
    if settings.size is not None:
        width, height = settings.size
    else:
        width, height = float(rng.uniform(16, 44)), float(rng.uniform(12, 30))
    width, height = _r(width), _r(height)
    span_u, span_v = (width, height) if orientation == "x" else (height, width)

    radius = _r(rng.uniform(0.3, 0.4)) if settings.size is None else _ROBOT_RADIUS
    least = min_aisle_width(radius)
    aisle = settings.aisle_width
    if aisle is not None and aisle < least:
        raise SettingError(
            f"aisle width {aisle:g} m is below the {least:.2f} m a robot of radius "
            f"{radius:g} m needs (cabins.warehouse.routing.min_aisle_width)"
        )
    if aisle is None:
        aisle = least + 0.05 + float(rng.uniform(0, 1) ** 1.5) * max(0.0, 4.0 - least - 0.05)
    aisle = _r(aisle)
    lane = _r(max(_LANE_MIN, least + 0.6, float(rng.uniform(_LANE_MIN, 3.6))))
    cross = _r(max(least + 0.1, float(rng.uniform(least + 0.1, 3.2))))
    depth = _r(rng.uniform(0.8, 1.6))
    seg = _r(rng.uniform(4.0, 10.0))

    # rows across v, from one lane to the other
    rows: list[tuple[float, float]] = []
    v = lane
    while v + depth <= span_v - lane:
        rows.append((v, v + depth))
        v += depth + aisle
    if not rows:
        raise _Redraw("no room for a shelf row")
    # segments along u, cut by cross aisles
    segments: list[tuple[float, float]] = []
    u = lane
    while u + 2.0 <= span_u - lane:
        end = min(u + seg, span_u - lane)
        segments.append((u, end))
        u = end + cross
    if not segments:
        raise _Redraw("no room for a shelf segment")

    shelves: list[dict[str, Any]] = []
    for i, (v0, v1) in enumerate(rows):
        for j, (u0, u1) in enumerate(segments):
            outline = _shelf_outline(rng, u0, v0, u1, v1)
            shelves.append(
                {"id": f"R{i}S{j}", "polygon": [list(frame.xy(pu, pv)) for pu, pv in outline]}
            )
    shelf_shapes = [
        box(*_bbox(s["polygon"])) for s in shelves
    ]  # the boxes they lie in: clearances below are measured from them

    # places: on the lanes, and in the aisles between rows (pick faces)
    reach = radius + DEFAULT_CLEARANCE + 0.1
    candidates: list[tuple[float, float]] = []
    for vv in (lane / 2, span_v - lane / 2):
        for k in range(1, 8):
            candidates.append((span_u * k / 8, vv))
    for uu in (lane / 2, span_u - lane / 2):
        for k in range(1, 6):
            candidates.append((uu, span_v * k / 6))
    for (_, a_end), (b_start, _) in itertools.pairwise(rows):
        mid_v = (a_end + b_start) / 2
        for u0, u1 in segments:
            candidates.append((u0 + (u1 - u0) * float(rng.uniform(0.2, 0.8)), mid_v))
    order = rng.permutation(len(candidates))
    dock_count = settings.docks if settings.docks is not None else int(rng.integers(3, 7))
    picked: list[tuple[float, float]] = []
    for index in order.tolist():
        p = candidates[index]
        if all(math.dist(p, q) >= 2.0 for q in picked):
            picked.append(p)
        if len(picked) == dock_count + 2:  # docks, the charger and the start
            break
    if len(picked) < dock_count + 2:
        raise _Redraw("not enough room for the docks")
    docks_uv, charger_uv, start_uv = picked[:dock_count], picked[dock_count], picked[-1]
    docks = [
        {"id": f"D{k}", "x": frame.xy(*p)[0], "y": frame.xy(*p)[1]} for k, p in enumerate(docks_uv)
    ]
    cx, cy = frame.xy(*charger_uv)
    sx, sy = frame.xy(*start_uv)
    places = [Point(d["x"], d["y"]) for d in docks] + [Point(cx, cy), Point(sx, sy)]

    # a forbidden zone against a wall on a lane, leaving the lane passable; a speed zone
    forbidden: list[dict[str, Any]] = []
    if rng.random() < 0.8:
        along = float(rng.uniform(0.15, 0.85)) * span_u
        extent = float(rng.uniform(1.5, 4.0))
        deep = max(0.3, lane - least - 0.2)
        deep = float(rng.uniform(0.3, deep)) if deep > 0.3 else 0.3
        wall_low = rng.random() < 0.5
        v0, v1 = (0.0, deep) if wall_low else (span_v - deep, span_v)
        u0, u1 = max(0.0, along - extent / 2), min(span_u, along + extent / 2)
        zone = box(*_world_box(frame, u0, v0, u1, v1))
        if all(zone.distance(p) > reach + 0.2 for p in places):
            forbidden.append(
                {
                    "id": "hv",
                    "polygon": [list(c) for c in _world_corners(frame, u0, v0, u1, v1)],
                    "description": "high voltage: keep out",
                }
            )
    speed_zones: list[dict[str, Any]] = []
    if rng.random() < 0.7:
        u0 = float(rng.uniform(0, span_u * 0.6))
        u1 = min(span_u, u0 + float(rng.uniform(4.0, 10.0)))
        v0, v1 = (0.0, lane) if rng.random() < 0.5 else (span_v - lane, span_v)
        speed_zones.append(
            {
                "id": "slow_lane",
                "polygon": [list(c) for c in _world_corners(frame, u0, v0, u1, v1)],
                "max_speed": _r(rng.uniform(0.4, 0.9)),
            }
        )

    # people across the aisles, forklifts on the lane
    movers: list[dict[str, Any]] = []
    n_people = settings.people if settings.people is not None else int(rng.integers(0, 4))
    gaps = [(b + cross / 2) for (_, b) in segments[:-1]]  # cross-aisle centre lines, along u
    lanes_v = (lane / 2, span_v - lane / 2)
    start_point = Point(sx, sy)
    for k in range(n_people):
        kind = rng.integers(0, 3) if gaps else 0
        if kind == 0 and len(rows) > 1:  # along an aisle, out to a lane and back
            a = int(rng.integers(0, len(rows) - 1))
            mid = (rows[a][1] + rows[a + 1][0]) / 2
            pts = [(lane / 2, mid), (span_u - lane / 2, mid)]
        elif gaps:  # across the rows through a cross aisle, and back along a lane
            g = gaps[int(rng.integers(0, len(gaps)))]
            g2 = gaps[int(rng.integers(0, len(gaps)))]
            pts = [(g, lanes_v[0]), (g, lanes_v[1])]
            if g2 != g:
                pts += [(g2, lanes_v[1]), (g2, lanes_v[0])]
        else:
            pts = [(lane / 2, lanes_v[0]), (span_u - lane / 2, lanes_v[0])]
        waypoints = [list(frame.xy(*p)) for p in pts]
        movers.append(
            {
                "id": f"person{k}",
                "kind": "person",
                "radius": 0.3,
                "speed": _r(rng.uniform(0.5, 1.0)),
                "waypoints": waypoints,
                "patience": _r(rng.uniform(2.0, 6.0)),
            }
        )
    n_forklifts = settings.forklifts if settings.forklifts is not None else int(rng.integers(0, 2))
    for k in range(n_forklifts):
        vv = lanes_v[int(rng.integers(0, 2))]
        pts = [(lane / 2, vv), (span_u - lane / 2, vv)]
        movers.append(
            {
                "id": f"forklift{k}",
                "kind": "forklift",
                "radius": 0.6,
                "speed": _r(rng.uniform(0.6, 1.2)),
                "waypoints": [list(frame.xy(*p)) for p in pts],
                "patience": _r(rng.uniform(2.0, 5.0)),
            }
        )
    kept = []
    for mover in movers:
        first = Point(mover["waypoints"][0])
        clearance = radius + mover["radius"] + YIELD_MARGIN + 0.2
        loop = LineString([*mover["waypoints"], mover["waypoints"][0]])
        if first.distance(start_point) < clearance:
            continue
        if any(loop.distance(s) <= mover["radius"] + 0.05 for s in shelf_shapes):
            continue
        kept.append(mover)
    movers = kept

    # the work: tasks with staggered releases, a battery that needs a charge on the way
    n_tasks = settings.tasks if settings.tasks is not None else int(rng.integers(2, 7))
    tasks: list[dict[str, Any]] = []
    release = 0.0
    travel = 0.0
    here = (sx, sy)
    for k in range(n_tasks):
        a, b = rng.choice(len(docks), size=2, replace=False).tolist()
        tasks.append(
            {
                "id": f"t{k}",
                "pickup": docks[a]["id"],
                "drop": docks[b]["id"],
                "release": _r(release),
            }
        )
        pick, drop = (docks[a]["x"], docks[a]["y"]), (docks[b]["x"], docks[b]["y"])
        travel += _manhattan(here, pick) + _manhattan(pick, drop)
        here = drop
        release += float(rng.uniform(5.0, 25.0))
    max_speed = _r(rng.uniform(1.0, 1.8))
    leg = 1.3 * (width + height)
    drain_m, drain_s = 0.1, 0.01
    leg_energy = drain_m * leg + drain_s * leg / 0.5
    battery_wh = _r(max(20.0, 8.0 * leg_energy))
    total_energy = drain_m * travel + drain_s * travel / 0.5
    low = 0.25
    start_battery = _r(min(1.0, max(0.35, low + 0.5 * total_energy / battery_wh)))
    charge_rate = 0.5
    charge_time = battery_wh * 0.9 / charge_rate
    per_task = 30.0 + 12.0  # approaches, picks and drops, retries
    duration = _r(release + 2.0 * travel / 0.8 + n_tasks * per_task + charge_time + 60.0)

    rate_pick = _r(rng.uniform(0.0, 0.3))
    data: dict[str, Any] = {
        "name": generated_name(seed),
        "description": (
            f"generated: seed {seed}, {width:g}x{height:g} m, rows along {orientation}, "
            f"{aisle:g} m aisles, {len(movers)} movers, {n_tasks} tasks"
        ),
        "duration": duration,
        "rate_hz": 20.0,
        "floor": {"min_x": 0.0, "min_y": 0.0, "max_x": width, "max_y": height},
        "shelves": shelves,
        "docks": docks,
        "chargers": [{"id": "C0", "x": cx, "y": cy}],
        "forbidden_zones": forbidden,
        "speed_zones": speed_zones,
        "moving_obstacles": movers,
        "robot": {
            "radius": radius,
            "max_speed": max_speed,
            "max_turn_rate": _r(rng.uniform(1.5, 2.5)),
            "max_accel": _r(rng.uniform(0.6, 1.2)),
            "start": {"x": sx, "y": sy, "theta": _r(rng.uniform(-math.pi, math.pi))},
            "battery_wh": battery_wh,
            "start_battery": start_battery,
            "drain_wh_per_m": drain_m,
            "drain_wh_per_s": drain_s,
            "charge_wh_per_s": charge_rate,
            "low_battery": low,
        },
        "tasks": tasks,
        "failures": {
            "pick_fail_p": rate_pick,
            "drop_fail_p": _r(rng.uniform(0.0, 0.1)),
            "sensor_dropout_p": _r(rng.uniform(0.0, 0.03)),
        },
    }
    return Scenario.model_validate(data)


def _manhattan(a: tuple[float, float], b: tuple[float, float]) -> float:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def _bbox(points: Sequence[Sequence[float]]) -> tuple[float, float, float, float]:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return (min(xs), min(ys), max(xs), max(ys))


def _world_corners(
    frame: _Frame, u0: float, v0: float, u1: float, v1: float
) -> list[tuple[float, float]]:
    return [frame.xy(u0, v0), frame.xy(u1, v0), frame.xy(u1, v1), frame.xy(u0, v1)]


def _world_box(frame: _Frame, u0: float, v0: float, u1: float, v1: float) -> tuple[float, ...]:
    return _bbox(_world_corners(frame, u0, v0, u1, v1))
