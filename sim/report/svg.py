"""The warehouse map of a run report, as one SVG: the recorded scenario's floor, shelves,
docks, chargers and zones, the loops people and forklifts walk, the robot's trajectory
coloured by time, the distinct planned routes and markers where faults started and bad
outcomes happened."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sim.report.collect import PRIORITY, RunData, stride
from sim.report.html import escape, num
from sim.world.scenario import ForbiddenZone, Scenario, SpeedZone

MAX_MARKERS = 400
"""Map markers at most (the most serious kinds are kept first)."""
MAX_ROUTES = 60
"""Distinct planned routes drawn at most (evenly chosen over the run)."""
ROUTE_POINTS = 80
"""Vertices per drawn route at most."""

BANDS = 12
"""Colour bands of the trajectory."""

MARKER_KINDS = (
    "fault",
    "collision",
    "safety_violation",
    "emergency_stop",
    "alarm",
    "action_failed",
)
"""What the map marks: fault starts and these bad outcomes, at the robot's pose then."""


PALETTE = (
    "#440154",
    "#482878",
    "#3e4989",
    "#31688e",
    "#26828e",
    "#1f9e89",
    "#35b779",
    "#6ece58",
    "#b5de2b",
    "#fde725",
)
"""Viridis stops: early ticks dark purple, late ticks yellow."""


# -- the map ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """Metres on the floor to pixels of the map (y up on the floor, down on the screen)."""

    min_x: float
    min_y: float
    max_x: float
    max_y: float
    scale: float
    pad: float = 24.0

    @classmethod
    def fit(
        cls,
        bounds: tuple[float, float, float, float],
        *,
        width: float = 820.0,
        height: float = 600.0,
    ) -> Frame:
        min_x, min_y, max_x, max_y = bounds
        w, h = max(max_x - min_x, 1e-6), max(max_y - min_y, 1e-6)
        return cls(min_x, min_y, max_x, max_y, min(width / w, height / h))

    @property
    def size(self) -> tuple[float, float]:
        return (
            (self.max_x - self.min_x) * self.scale + 2 * self.pad,
            (self.max_y - self.min_y) * self.scale + 2 * self.pad,
        )

    def px(self, x: float, y: float) -> tuple[float, float]:
        return (
            round((x - self.min_x) * self.scale + self.pad, 1),
            round((self.max_y - y) * self.scale + self.pad, 1),
        )

    def points(self, xys: Iterable[Sequence[float]]) -> str:
        return " ".join("{:g},{:g}".format(*self.px(p[0], p[1])) for p in xys)


def colour_at(fraction: float) -> str:
    """The palette colour at ``fraction`` in [0, 1] (linear between stops)."""
    f = min(max(fraction, 0.0), 1.0) * (len(PALETTE) - 1)
    i = min(int(f), len(PALETTE) - 2)
    a, b = PALETTE[i], PALETTE[i + 1]
    mix = [
        round(int(a[k : k + 2], 16) * (1 - (f - i)) + int(b[k : k + 2], 16) * (f - i))
        for k in (1, 3, 5)
    ]
    return "#" + "".join(f"{c:02x}" for c in mix)


_MARKER_PATHS = {
    "fault": "M0,-7 L7,0 L0,7 L-7,0 Z",
    "alarm": "M0,-7 L6.5,5 L-6.5,5 Z",
    "emergency_stop": "M-3,-7 L3,-7 L7,-3 L7,3 L3,7 L-3,7 L-7,3 L-7,-3 Z",
    "collision": "M-7,-4 L-4,-7 L0,-3 L4,-7 L7,-4 L3,0 L7,4 L4,7 L0,3 L-4,7 L-7,4 L-3,0 Z",
    "safety_violation": "M0,-7 A7,7 0 1,1 -0.01,-7 Z M0,-3 A3,3 0 1,0 0.01,-3 Z",
    "action_failed": "M-5,-6 L0,-1 L5,-6 L6,-5 L1,0 L6,5 L5,6 L0,1 L-5,6 L-6,5 L-1,0 L-6,-5 Z",
}


@dataclass
class MapDrawing:
    svg: str
    path: list[list[float]]
    markers: int
    routes: int
    points: int


def draw_map(run: RunData, scenario: Scenario | None, *, max_points: int) -> MapDrawing:
    """The warehouse, the trajectory, the routes and the markers, as one SVG."""
    if scenario is not None:
        bounds = scenario.floor.bounds
    else:
        xs = [p[1] for p in run.poses] or [0.0, 1.0]
        ys = [p[2] for p in run.poses] or [0.0, 1.0]
        bounds = (min(xs) - 1, min(ys) - 1, max(xs) + 1, max(ys) + 1)
    frame = Frame.fit(bounds)
    width, height = frame.size
    out: list[str] = [
        f'<svg id="map" class="map" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f'role="img" aria-label="warehouse map with the robot\'s trajectory">'
    ]
    x0, y0 = frame.px(bounds[0], bounds[3])
    x1, y1 = frame.px(bounds[2], bounds[1])
    out.append(
        f'<rect class="floor" x="{x0:g}" y="{y0:g}" width="{x1 - x0:g}" '
        f'height="{y1 - y0:g}"><title>floor</title></rect>'
    )
    if scenario is not None:
        out.append(_scenario_layers(scenario, frame))
    route_count = _routes(run, frame, out)
    points = _trajectory(run, frame, out, max_points)
    marker_count = _markers(run, frame, out)
    out.append(
        '<g id="robot-now" class="robot-now" visibility="hidden"><circle r="9"/>'
        "<title>the robot at the selected tick</title></g>"
    )
    out.append("</svg>")
    path = [[t, *frame.px(x, y)] for t, x, y in _moves(run.poses, max_points)]
    return MapDrawing("".join(out), path, marker_count, route_count, points)


def _scenario_layers(scenario: Scenario, frame: Frame) -> str:
    out: list[str] = ['<g class="zones">']
    for zone in scenario.speed_zones:
        out.append(
            f'<polygon class="speed-zone" data-id="{escape(zone.id)}" '
            f'points="{frame.points(zone.polygon)}"><title>speed zone {escape(zone.id)}: '
            f"at most {num(zone.max_speed, 2)} m/s</title></polygon>"
        )
    for forbidden in scenario.forbidden_zones:
        why = f": {forbidden.description}" if forbidden.description else ""
        out.append(
            f'<polygon class="forbidden-zone" data-id="{escape(forbidden.id)}" '
            f'points="{frame.points(forbidden.polygon)}"><title>forbidden zone '
            f"{escape(forbidden.id)}{escape(why)}</title></polygon>"
        )
    areas: list[SpeedZone | ForbiddenZone] = [*scenario.speed_zones, *scenario.forbidden_zones]
    for area in areas:
        c = area.shape.centroid
        x, y = frame.px(c.x, c.y)
        out.append(
            f'<text class="label" x="{x:g}" y="{y + 4:g}" text-anchor="middle">'
            f"{escape(area.id)}</text>"
        )
    out.append('</g><g class="obstacle-loops">')
    for ob in scenario.moving_obstacles:
        loop = (*ob.waypoints, ob.waypoints[0])
        out.append(
            f'<polyline class="obstacle-loop" points="{frame.points(loop)}"><title>'
            f"{escape(ob.kind)} {escape(ob.id)}: walks this loop at {num(ob.speed, 2)} m/s"
            f"</title></polyline>"
        )
    out.append('</g><g class="shelves">')
    for shelf in scenario.shelves:
        out.append(
            f'<polygon class="shelf" data-id="{escape(shelf.id)}" '
            f'points="{frame.points(shelf.polygon)}"><title>shelf {escape(shelf.id)}'
            f"</title></polygon>"
        )
    for shelf in scenario.shelves:
        c = shelf.shape.centroid
        x, y = frame.px(c.x, c.y)
        out.append(
            f'<text class="label on-shelf" x="{x:g}" y="{y + 4:g}" '
            f'text-anchor="middle">{escape(shelf.id)}</text>'
        )
    out.append('</g><g class="stations">')
    for what, places in (("dock", scenario.docks), ("charger", scenario.chargers)):
        for place in places:
            x, y = frame.px(place.x, place.y)
            shape = (
                f'<rect class="{what}" x="{x - 6:g}" y="{y - 6:g}" width="12" height="12"/>'
                if what == "dock"
                else f'<circle class="{what}" cx="{x:g}" cy="{y:g}" r="7"/>'
            )
            out.append(
                f'<g data-id="{escape(place.id)}">{shape}<title>{what} {escape(place.id)} '
                f"({num(place.x, 2)}, {num(place.y, 2)})</title></g>"
            )
            out.append(
                f'<text class="label" x="{x + 10:g}" y="{y + 4:g}">{escape(place.id)}</text>'
            )
    out.append("</g>")
    return "".join(out)


def _routes(run: RunData, frame: Frame, out: list[str]) -> int:
    """Distinct planned routes, each with the tick spans it was the current route."""
    spans: dict[tuple[tuple[float, float], ...], list[tuple[int, int]]] = {}
    for i, (tick, points) in enumerate(run.routes):
        until = run.routes[i + 1][0] - 1 if i + 1 < len(run.routes) else run.last
        shape = tuple((round(x, 2), round(y, 2)) for x, y in points)
        spans.setdefault(shape, []).append((tick, max(tick, until)))
    chosen = stride(list(spans.items()), MAX_ROUTES)
    out.append('<g class="routes">')
    for shape, used in chosen:
        text = " ".join(f"{a}-{b}" for a, b in used[:50])
        first = used[0][0]
        out.append(
            f'<polyline class="route" data-spans="{text}" '
            f'points="{frame.points(stride(shape, ROUTE_POINTS))}"><title>route planned '
            f"at tick {first} ({len(used)} times)</title></polyline>"
        )
    out.append("</g>")
    return len(chosen)


def _moves(
    poses: Sequence[tuple[int, float, float]], limit: int, *, still: float = 0.05
) -> list[tuple[int, float, float]]:
    """At most ``limit`` poses: those that moved ``still`` metres or more from the last kept
    one (so a robot waiting spends none of the budget), then evenly spaced."""
    kept: list[tuple[int, float, float]] = []
    for i, pose in enumerate(poses):
        if (
            kept
            and i != len(poses) - 1
            and math.hypot(pose[1] - kept[-1][1], pose[2] - kept[-1][2]) < still
        ):
            continue
        kept.append(pose)
    return stride(kept, limit)


def _trajectory(run: RunData, frame: Frame, out: list[str], max_points: int) -> int:
    """The robot's path as ``BANDS`` polylines coloured by time, in one group."""
    poses = _moves(run.poses, max_points)
    out.append(f'<g class="trajectory" data-points="{len(poses)}">')
    if len(poses) >= 2:
        span = max(1, run.last - run.first)
        bands = min(BANDS, len(poses) - 1)
        edges = np.linspace(0, len(poses) - 1, bands + 1).round().astype(int).tolist()
        for b in range(bands):
            part = poses[edges[b] : edges[b + 1] + 1]
            if len(part) < 2:
                continue
            middle = (part[0][0] + part[-1][0]) / 2
            colour = colour_at((middle - run.first) / span)
            out.append(
                f'<polyline class="traj-band" stroke="{colour}" '
                f'points="{frame.points([(x, y) for _, x, y in part])}"><title>ticks '
                f"{part[0][0]}-{part[-1][0]}</title></polyline>"
            )
    if poses:
        for (t, x, y), what, fill in (
            (poses[0], "start", "#ffffff"),
            (poses[-1], "end", colour_at(1.0)),
        ):
            px, py = frame.px(x, y)
            out.append(
                f'<circle class="endpoint" cx="{px:g}" cy="{py:g}" r="5" fill="{fill}">'
                f"<title>{what}: tick {t}</title></circle>"
            )
    out.append("</g>")
    return len(poses)


def _markers(run: RunData, frame: Frame, out: list[str]) -> int:
    marks = [n for n in run.notable if n.kind in MARKER_KINDS]
    marks.sort(key=lambda n: (PRIORITY.get(n.kind, 9), n.tick))
    marks = sorted(marks[:MAX_MARKERS], key=lambda n: n.tick)
    out.append('<g class="markers">')
    for n in marks:
        at = run.pose_at(n.tick)
        if at is None:
            continue
        x, y = frame.px(*at)
        who = f" ({n.cabin})" if n.cabin else ""
        out.append(
            f'<g class="marker m-{n.kind}" data-tick="{n.tick}" '
            f'transform="translate({x:g},{y:g})"><path d="{_MARKER_PATHS[n.kind]}"/>'
            f"<title>tick {n.tick}: {escape(n.label)}{escape(who)}</title></g>"
        )
    out.append("</g>")
    return len(marks)


def map_legend(run: RunData) -> str:
    span = f"tick {run.first} → {run.last}"
    stops = ", ".join(PALETTE)
    rows = [
        f'<li><span class="gradient" style="background:linear-gradient(90deg,{stops})"></span>'
        f"trajectory, {escape(span)}</li>",
        '<li><span class="sw sw-route"></span>planned routes (the one in use at the selected '
        "tick in blue)</li>",
        '<li><span class="sw sw-shelf"></span>shelf</li>',
        '<li><span class="sw sw-dock"></span>dock</li>',
        '<li><span class="sw sw-charger"></span>charger</li>',
        '<li><span class="sw sw-forbidden"></span>forbidden zone</li>',
        '<li><span class="sw sw-speed"></span>speed zone</li>',
        '<li><span class="sw sw-obstacle"></span>person / forklift loop</li>',
    ]
    names = {
        "fault": "fault started",
        "collision": "collision",
        "safety_violation": "safety violation",
        "emergency_stop": "emergency stop",
        "alarm": "alarm",
        "action_failed": "failed action",
    }
    seen = Counter(n.kind for n in run.notable)
    for kind in MARKER_KINDS:
        rows.append(f'<li><span class="sw sw-m sw-{kind}"></span>{names[kind]} ({seen[kind]})</li>')
    return f'<ul class="legend">{"".join(rows)}</ul>'
