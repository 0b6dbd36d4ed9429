"""Reports: a recorded run, or a campaign's results, as one self-contained HTML page.

A run report (``write_run_report``) draws the recorded scenario's warehouse as
SVG, with the robot's trajectory coloured by time, the planned routes and markers
where faults started and bad outcomes happened; timelines of the working set
against capacity, evictions, capacity alarms, missing items per cabin, deliveries
and tick compute time; a tick selector that shows a tick's working set as
``python -m sim inspect`` does (the ticks worth a look first); and the run's
summary and settings. A campaign report (``write_campaign_report``) is the fault
matrix, pass and fail in colour, each cell linking to its run's summary.

A page opens from disk and loads nothing: its CSS and JavaScript are inline (from
``sim/templates/``), its data is embedded as JSON, and its Content-Security-Policy
forbids every fetch. It stays small on long runs: a timeline has at most
``max_points`` points (ticks are bucketed), and working sets are embedded for at
most ``max_ticks`` ticks. Everything inserted into a page is escaped.
"""

from __future__ import annotations

import bisect
import html
import json
import math
import os
import re
import shlex
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from runtime.errors import TickworkError
from runtime.recording.inspect import brief, damage_notice, tick_ranges, tick_report
from runtime.recording.reader import Recording, Scan
from sim.world.scenario import ForbiddenZone, Scenario, SpeedZone

__all__ = [
    "MAX_POINTS",
    "MAX_TICKS",
    "ReportError",
    "ReportInfo",
    "campaign_page",
    "check_output",
    "run_page",
    "temporary_recording",
    "write_campaign_report",
    "write_run_report",
]

TEMPLATES = Path(__file__).with_name("templates")

MAX_POINTS = 1000
"""Points per timeline at most: longer runs are reduced to this many buckets of ticks."""
MAX_TICKS = 200
"""Ticks whose working set is embedded at most: the ones worth a look, then an even sample."""
MAX_MARKERS = 400
"""Map markers at most (the most serious kinds are kept first)."""
MAX_ROUTES = 60
"""Distinct planned routes drawn at most (evenly chosen over the run)."""
ROUTE_POINTS = 80
"""Vertices per drawn route at most."""
MAX_EVENT_ROWS = 300
"""Rows of the events table at most (the most serious kinds are kept first)."""
BANDS = 12
"""Colour bands of the trajectory."""
VALUE_WIDTH = 90
"""Characters of a value shown in the tick view (``inspect --json`` has them in full)."""

MARKER_KINDS = (
    "fault",
    "collision",
    "safety_violation",
    "emergency_stop",
    "alarm",
    "action_failed",
)
"""What the map marks: fault starts and these bad outcomes, at the robot's pose then."""

_PRIORITY = {
    "collision": 0,
    "safety_violation": 0,
    "emergency_stop": 1,
    "fault": 2,
    "alarm": 3,
    "cabin_failed": 3,
    "action_failed": 4,
    "replan": 5,
    "capacity_alarm": 5,
    "reaction": 6,
    "fault_end": 7,
    "delivery": 7,
}
"""How much a notable tick is worth a look (lower first)."""

_PALETTE = (
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

_MISSING_REASONS = ("absent", "stale", "evicted", "fault")
_EVICTION_REASONS = ("capacity", "retracted", "stale", "expired")

Json = dict[str, Any]


class ReportError(TickworkError, ValueError):
    """A report that cannot be made: the message says what is wrong with what input."""


@dataclass(frozen=True, slots=True)
class ReportInfo:
    """What a written report holds."""

    path: str
    bytes: int
    ticks: int = 0
    embedded_ticks: int = 0
    worth_a_look: int = 0
    markers: int = 0
    routes: int = 0
    trajectory_points: int = 0
    runs: int = 0
    damaged: bool = False

    def as_json(self) -> Json:
        return {name: getattr(self, name) for name in self.__slots__}


# -- output ----------------------------------------------------------------------------------


def check_output(path: str | os.PathLike[str]) -> Path:
    """``path`` as a report target; ``ReportError`` if it cannot be written there.

    Called before a long run, so that a bad ``--report`` fails before the work.
    """
    target = Path(path)
    if target.is_dir():
        raise ReportError(f"{os.fspath(path)!r} is a folder; give a file name such as report.html")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ReportError(f"{os.fspath(path)!r}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ReportError(f"{os.fspath(path)!r}: the folder {str(folder)!r} is not writable")
    return target


def temporary_recording(folder: str | os.PathLike[str] | None = None) -> Path:
    """A fresh path for a recording a report is made from (``run --report`` without
    ``--record``); the caller deletes it."""
    fd, name = tempfile.mkstemp(prefix="tickwork-report-", suffix=".mcap", dir=folder)
    os.close(fd)
    return Path(name)


def _write(path: str | os.PathLike[str], text: str) -> int:
    """Write ``text`` to ``path`` atomically; the bytes written."""
    target = check_output(path)
    data = text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(
        prefix=target.name + ".", suffix=".tmp", dir=target.parent if str(target.parent) else "."
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a report is for sharing
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)


# -- escaping and templates ------------------------------------------------------------------


def _e(value: Any) -> str:
    """``value`` as text, escaped for HTML element content and quoted attributes."""
    return html.escape(str(value), quote=True)


def _json_script(element_id: str, data: Any) -> str:
    """``data`` as a ``<script type="application/json">`` that no value can break out of."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    text = (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
    return f'<script type="application/json" id="{_e(element_id)}">{text}</script>'


_SLOT = re.compile(r"\{\{(\w+)\}\}")


def _fill(template: str, parts: Mapping[str, str]) -> str:
    """Put ``parts`` into the ``{{name}}`` slots of a template, in one pass."""

    def put(found: re.Match[str]) -> str:
        name = found[1]
        if name not in parts:
            raise KeyError(f"the report template has a slot {name!r} that nothing fills")
        return parts[name]

    return _SLOT.sub(put, template)


def _template(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def _page(name: str, parts: Mapping[str, str], *, scripts: bool) -> str:
    """The template ``name`` filled with ``parts`` under the shared head (``head.html``):
    ``title`` and ``subtitle`` go there, with the stylesheet and a Content-Security-Policy
    that lets in inline scripts only when the page has some."""
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; "
        + ("script-src 'unsafe-inline'; " if scripts else "")
        + "img-src data:"
    )
    head = _fill(
        _template("head.html"),
        {
            "csp": csp,
            "generator": _e(_generator()),
            "title": parts["title"],
            "subtitle": parts["subtitle"],
            "css": _template("report.css"),
        },
    )
    body = {k: v for k, v in parts.items() if k not in ("title", "subtitle")}
    return _fill(_template(name), {**body, "head": head})


def _generator() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"tickwork {version('tickwork')}"
    except PackageNotFoundError:
        return "tickwork"


def _num(value: float, digits: int = 1) -> str:
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _kv_table(rows: Iterable[tuple[str, str]], *, raw: bool = False) -> str:
    """A two-column table; values are escaped unless ``raw`` (already HTML)."""
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v if raw else _e(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _counts(counts: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "none"


# -- what a recording holds ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Notable:
    """Something at a tick worth a look: a fault, a bad outcome, a delivery."""

    tick: int
    kind: str
    label: str
    cabin: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class _Span:
    label: str
    start: int
    end: int | None


@dataclass
class _Run:
    """The per-tick series and the notable moments of one recording."""

    recording: Recording
    rate_hz: float
    capacity: int | None
    cabins: list[str]
    ticks: list[int]
    first: int
    last: int
    items: np.ndarray
    compute_ms: np.ndarray
    alarm: np.ndarray
    overruns: list[int]
    evictions: dict[str, np.ndarray]
    missing: dict[str, dict[str, np.ndarray]]
    poses: list[tuple[int, float, float]]
    routes: list[tuple[int, tuple[tuple[float, float], ...]]]
    deliveries: list[tuple[int, str]]
    notable: list[_Notable]
    faults: list[_Span]
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    pose_ticks: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.pose_ticks = [p[0] for p in self.poses]

    def pose_at(self, tick: int) -> tuple[float, float] | None:
        """The last pose written at or before ``tick`` (the first one before any)."""
        if not self.poses:
            return None
        index = bisect.bisect_right(self.pose_ticks, tick) - 1
        _, x, y = self.poses[max(index, 0)]
        return x, y


def _metadata_json(recording: Recording, key: str, default: Any) -> Any:
    text = recording.metadata.get(key)
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError:
        raise ReportError(f"{recording.path}: the run metadata's {key!r} is not JSON") from None


def _scenario(recording: Recording) -> Scenario | None:
    text = recording.metadata.get("scenario_toml")
    if text is None:
        return None
    try:
        return Scenario.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReportError(
            f"{recording.path}: the recorded scenario is not valid ({where}: {first['msg']})"
        ) from None


def _xy(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list) and len(value) >= 2:
        x, y = _finite(value[0]), _finite(value[1])
        if x is not None and y is not None:
            return x, y
    return None


def _cabin_tag(tags: Any) -> str:
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag.startswith("cabin:"):
            return tag[6:]
    return ""


def _event_label(kind: str, data: Mapping[str, Any], cabin: str) -> str | None:
    """A short label for an event the report shows; None for events it leaves out."""
    if kind == "collision":
        return "collision"
    if kind == "safety_violation":
        return "safety violation"
    if kind == "emergency_stop":
        return f"emergency stop ({data.get('reason', '?')})"
    if kind == "alarm":
        return f"alarm {data.get('kind', '?')}"
    if kind == "action_failed":
        return f"{data.get('action', 'action')} failed ({data.get('reason', '?')})"
    if kind == "cabin_failed":
        return f"{data.get('cabin', cabin) or '?'} failed: {data.get('error_type', '?')}"
    if kind == "replan":
        return f"re-plan ({data.get('reason', '?')})"
    if kind == "reaction":
        return f"{data.get('cabin', cabin) or '?'} reaction {data.get('reaction', '?')}"
    return None


def _collect(recording: Recording) -> _Run:
    """Read the series a report draws from ``recording``, each topic once."""
    ticks = recording.ticks()
    if not ticks:
        broke = (
            f" (it breaks at byte {recording.scan.good_bytes} of {recording.scan.size}, "
            "before its first tick)"
            if recording.damaged
            else ""
        )
        raise ReportError(f"{recording.path} holds no ticks{broke}: nothing to report")
    first, last = ticks[0], ticks[-1]
    n = last - first + 1
    try:
        rate_hz = float(recording.metadata.get("rate_hz", "20"))
        capacity = int(recording.metadata["capacity"]) if "capacity" in recording.metadata else None
    except ValueError as exc:
        raise ReportError(f"{recording.path}: bad run metadata ({exc})") from None
    if not rate_hz > 0 or not math.isfinite(rate_hz):
        raise ReportError(f"{recording.path}: the run metadata's rate_hz is {rate_hz!r}")
    listed = _metadata_json(recording, "cabins", [])
    cabins = [str(c) for c in listed] if isinstance(listed, list) else []

    items = np.full(n, np.nan)
    compute = np.full(n, np.nan)
    overruns: list[int] = []
    for tick, stats in recording.records("/stats"):
        if first <= tick <= last:
            items[tick - first] = _finite(stats.get("items")) or 0.0
            seconds = _finite(stats.get("compute_s"))
            compute[tick - first] = np.nan if seconds is None else seconds * 1e3
            if stats.get("overrun") is True:
                overruns.append(tick)

    alarm = np.zeros(n, dtype=bool)
    missing: dict[str, dict[str, np.ndarray]] = {}
    counts: dict[str, Counter[str]] = {"missing": Counter()}
    for tick, ws in recording.records("/working_set"):
        if not first <= tick <= last:
            continue
        i = tick - first
        alarm[i] = ws.get("capacity_alarm") is True
        if np.isnan(items[i]) and isinstance(ws.get("items"), dict):
            items[i] = len(ws["items"])
        views = ws.get("views")
        for cabin, view in views.items() if isinstance(views, dict) else ():
            if cabin not in cabins:
                cabins.append(cabin)
            gaps = view.get("missing") if isinstance(view, dict) else None
            per = missing.setdefault(cabin, {})
            for reason in gaps.values() if isinstance(gaps, dict) else ():
                series = per.get(str(reason))
                if series is None:
                    series = per[str(reason)] = np.zeros(n)
                series[i] += 1
                counts["missing"][f"{cabin}\0{reason}"] += 1
    for cabin in cabins:
        missing.setdefault(cabin, {})

    evictions: dict[str, np.ndarray] = {}
    for tick, message in recording.records("/evictions"):
        if not first <= tick <= last:
            continue
        for e in message.get("evictions", []):
            reason = str(e.get("reason", "?")) if isinstance(e, dict) else "?"
            series = evictions.get(reason)
            if series is None:
                series = evictions[reason] = np.zeros(n)
            series[tick - first] += 1

    poses: list[tuple[int, float, float]] = []
    routes: list[tuple[int, tuple[tuple[float, float], ...]]] = []
    delivered: dict[str, int] = {}
    for tick, m in recording.records("/board"):
        key = str(m.get("key"))
        if key == "pose" and not m.get("deleted"):
            xy = _xy(m.get("value"))
            if xy is not None:
                poses.append((tick, *xy))
        elif key == "route" and not m.get("deleted"):
            value = m.get("value")
            points = (
                [p for p in (_xy(v) for v in value) if p is not None]
                if isinstance(value, list)
                else []
            )
            if len(points) >= 2:
                routes.append((tick, tuple(points)))
        elif key.startswith("goal:deliver:") and m.get("deleted"):
            task = key[len("goal:deliver:") :]
            delivered[task] = min(tick, delivered.get(task, tick))
        elif key == "action:last" and isinstance(m.get("value"), dict):
            done = m["value"]
            if done.get("action") == "drop" and done.get("ok") is True:
                # the world writes an outcome at the tick after the action
                task = str(done.get("task"))
                delivered[task] = min(tick - 1, delivered.get(task, tick - 1))

    notable: list[_Notable] = []
    kinds: Counter[str] = Counter()
    for tick, event in recording.records("/events"):
        kind = str(event.get("kind"))
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        cabin = _cabin_tag(event.get("tags"))
        if kind == "action_done" and data.get("action") == "drop":
            task = str(data.get("task"))
            delivered[task] = min(tick, delivered.get(task, tick))
        label = _event_label(kind, data, cabin)
        if label is None:
            continue
        kinds[kind] += 1
        if kind == "alarm":
            kinds[f"alarm\0{data.get('kind', '?')}"] += 1
        elif kind == "emergency_stop":
            kinds[f"emergency_stop\0{data.get('reason', '?')}"] += 1
        notable.append(_Notable(tick, kind, label, cabin, brief(event.get("data"), 160)))
    counts["events"] = kinds

    starts: dict[str, int] = {}
    spans: list[_Span] = []
    for tick, m in recording.records("/faults"):
        label = str(m.get("fault"))
        at = int(m["tick"]) if isinstance(m.get("tick"), int) else tick
        if m.get("phase") == "start":
            starts[label] = at
            notable.append(_Notable(at, "fault", f"fault starts: {label}"))
        elif m.get("phase") == "end":
            spans.append(_Span(label, starts.pop(label, first), at))
            notable.append(_Notable(at, "fault_end", f"fault ends: {label}"))
    spans.extend(_Span(label, start, None) for label, start in starts.items())
    spans.sort(key=lambda s: (s.start, s.label))

    was = False
    for i, now in enumerate(alarm.tolist()):
        if now and not was:
            notable.append(_Notable(first + i, "capacity_alarm", "capacity alarm"))
        was = now
    deliveries = sorted((t, task) for task, t in delivered.items())
    for t, task in deliveries:
        notable.append(_Notable(t, "delivery", f"delivery {task} done"))
    notable.sort(key=lambda n: (n.tick, _PRIORITY.get(n.kind, 9)))
    return _Run(
        recording=recording,
        rate_hz=rate_hz,
        capacity=capacity,
        cabins=cabins,
        ticks=ticks,
        first=first,
        last=last,
        items=items,
        compute_ms=compute,
        alarm=alarm,
        overruns=overruns,
        evictions=evictions,
        missing=missing,
        poses=poses,
        routes=routes,
        deliveries=deliveries,
        notable=notable,
        faults=spans,
        counts=counts,
    )


# -- the map ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Frame:
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
    ) -> _Frame:
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


def _colour(fraction: float) -> str:
    """The palette colour at ``fraction`` in [0, 1] (linear between stops)."""
    f = min(max(fraction, 0.0), 1.0) * (len(_PALETTE) - 1)
    i = min(int(f), len(_PALETTE) - 2)
    a, b = _PALETTE[i], _PALETTE[i + 1]
    mix = [
        round(int(a[k : k + 2], 16) * (1 - (f - i)) + int(b[k : k + 2], 16) * (f - i))
        for k in (1, 3, 5)
    ]
    return "#" + "".join(f"{c:02x}" for c in mix)


def _stride(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` of ``items``, evenly spaced, keeping the first and the last."""
    if len(items) <= limit:
        return list(items)
    if limit < 2:
        return list(items[:limit])
    picks = np.linspace(0, len(items) - 1, limit).round().astype(int)
    return [items[i] for i in sorted(set(picks.tolist()))]


_MARKER_PATHS = {
    "fault": "M0,-7 L7,0 L0,7 L-7,0 Z",
    "alarm": "M0,-7 L6.5,5 L-6.5,5 Z",
    "emergency_stop": "M-3,-7 L3,-7 L7,-3 L7,3 L3,7 L-3,7 L-7,3 L-7,-3 Z",
    "collision": "M-7,-4 L-4,-7 L0,-3 L4,-7 L7,-4 L3,0 L7,4 L4,7 L0,3 L-4,7 L-7,4 L-3,0 Z",
    "safety_violation": "M0,-7 A7,7 0 1,1 -0.01,-7 Z M0,-3 A3,3 0 1,0 0.01,-3 Z",
    "action_failed": "M-5,-6 L0,-1 L5,-6 L6,-5 L1,0 L6,5 L5,6 L0,1 L-5,6 L-6,5 L-1,0 L-6,-5 Z",
}


@dataclass
class _Map:
    svg: str
    path: list[list[float]]
    markers: int
    routes: int
    points: int


def _map(run: _Run, scenario: Scenario | None, *, max_points: int) -> _Map:
    """The warehouse, the trajectory, the routes and the markers, as one SVG."""
    if scenario is not None:
        bounds = scenario.floor.bounds
    else:
        xs = [p[1] for p in run.poses] or [0.0, 1.0]
        ys = [p[2] for p in run.poses] or [0.0, 1.0]
        bounds = (min(xs) - 1, min(ys) - 1, max(xs) + 1, max(ys) + 1)
    frame = _Frame.fit(bounds)
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
    return _Map("".join(out), path, marker_count, route_count, points)


def _scenario_layers(scenario: Scenario, frame: _Frame) -> str:
    out: list[str] = ['<g class="zones">']
    for zone in scenario.speed_zones:
        out.append(
            f'<polygon class="speed-zone" data-id="{_e(zone.id)}" '
            f'points="{frame.points(zone.polygon)}"><title>speed zone {_e(zone.id)}: '
            f"at most {_num(zone.max_speed, 2)} m/s</title></polygon>"
        )
    for forbidden in scenario.forbidden_zones:
        why = f": {forbidden.description}" if forbidden.description else ""
        out.append(
            f'<polygon class="forbidden-zone" data-id="{_e(forbidden.id)}" '
            f'points="{frame.points(forbidden.polygon)}"><title>forbidden zone '
            f"{_e(forbidden.id)}{_e(why)}</title></polygon>"
        )
    areas: list[SpeedZone | ForbiddenZone] = [*scenario.speed_zones, *scenario.forbidden_zones]
    for area in areas:
        c = area.shape.centroid
        x, y = frame.px(c.x, c.y)
        out.append(
            f'<text class="label" x="{x:g}" y="{y + 4:g}" text-anchor="middle">{_e(area.id)}</text>'
        )
    out.append('</g><g class="obstacle-loops">')
    for ob in scenario.moving_obstacles:
        loop = (*ob.waypoints, ob.waypoints[0])
        out.append(
            f'<polyline class="obstacle-loop" points="{frame.points(loop)}"><title>'
            f"{_e(ob.kind)} {_e(ob.id)}: walks this loop at {_num(ob.speed, 2)} m/s"
            f"</title></polyline>"
        )
    out.append('</g><g class="shelves">')
    for shelf in scenario.shelves:
        out.append(
            f'<polygon class="shelf" data-id="{_e(shelf.id)}" '
            f'points="{frame.points(shelf.polygon)}"><title>shelf {_e(shelf.id)}'
            f"</title></polygon>"
        )
    for shelf in scenario.shelves:
        c = shelf.shape.centroid
        x, y = frame.px(c.x, c.y)
        out.append(
            f'<text class="label on-shelf" x="{x:g}" y="{y + 4:g}" '
            f'text-anchor="middle">{_e(shelf.id)}</text>'
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
                f'<g data-id="{_e(place.id)}">{shape}<title>{what} {_e(place.id)} '
                f"({_num(place.x, 2)}, {_num(place.y, 2)})</title></g>"
            )
            out.append(f'<text class="label" x="{x + 10:g}" y="{y + 4:g}">{_e(place.id)}</text>')
    out.append("</g>")
    return "".join(out)


def _routes(run: _Run, frame: _Frame, out: list[str]) -> int:
    """Distinct planned routes, each with the tick spans it was the current route."""
    spans: dict[tuple[tuple[float, float], ...], list[tuple[int, int]]] = {}
    for i, (tick, points) in enumerate(run.routes):
        until = run.routes[i + 1][0] - 1 if i + 1 < len(run.routes) else run.last
        shape = tuple((round(x, 2), round(y, 2)) for x, y in points)
        spans.setdefault(shape, []).append((tick, max(tick, until)))
    chosen = _stride(list(spans.items()), MAX_ROUTES)
    out.append('<g class="routes">')
    for shape, used in chosen:
        text = " ".join(f"{a}-{b}" for a, b in used[:50])
        first = used[0][0]
        out.append(
            f'<polyline class="route" data-spans="{text}" '
            f'points="{frame.points(_stride(shape, ROUTE_POINTS))}"><title>route planned '
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
    return _stride(kept, limit)


def _trajectory(run: _Run, frame: _Frame, out: list[str], max_points: int) -> int:
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
            colour = _colour((middle - run.first) / span)
            out.append(
                f'<polyline class="traj-band" stroke="{colour}" '
                f'points="{frame.points([(x, y) for _, x, y in part])}"><title>ticks '
                f"{part[0][0]}-{part[-1][0]}</title></polyline>"
            )
    if poses:
        for (t, x, y), what, fill in (
            (poses[0], "start", "#ffffff"),
            (poses[-1], "end", _colour(1.0)),
        ):
            px, py = frame.px(x, y)
            out.append(
                f'<circle class="endpoint" cx="{px:g}" cy="{py:g}" r="5" fill="{fill}">'
                f"<title>{what}: tick {t}</title></circle>"
            )
    out.append("</g>")
    return len(poses)


def _markers(run: _Run, frame: _Frame, out: list[str]) -> int:
    marks = [n for n in run.notable if n.kind in MARKER_KINDS]
    marks.sort(key=lambda n: (_PRIORITY.get(n.kind, 9), n.tick))
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
            f"<title>tick {n.tick}: {_e(n.label)}{_e(who)}</title></g>"
        )
    out.append("</g>")
    return len(marks)


def _map_legend(run: _Run) -> str:
    span = f"tick {run.first} → {run.last}"
    stops = ", ".join(_PALETTE)
    rows = [
        f'<li><span class="gradient" style="background:linear-gradient(90deg,{stops})"></span>'
        f"trajectory, {_e(span)}</li>",
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


# -- timelines -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Axis:
    """Ticks to pixels along a timeline, and the buckets long runs are reduced to."""

    first: int
    last: int
    bucket: int
    width: float = 1180.0
    x0: float = 52.0
    x1: float = 1166.0

    def x(self, tick: float) -> float:
        return round(
            self.x0 + (tick - self.first) / max(1, self.last - self.first) * (self.x1 - self.x0), 1
        )

    @property
    def n(self) -> int:
        return self.last - self.first + 1

    def centres(self) -> list[float]:
        count = math.ceil(self.n / self.bucket)
        return [
            min(self.first + i * self.bucket + (self.bucket - 1) / 2, self.last)
            for i in range(count)
        ]

    def reduce(self, values: np.ndarray, how: str) -> np.ndarray:
        """``values`` (one per tick, NaN for none) reduced to one per bucket."""
        count = math.ceil(self.n / self.bucket)
        padded = np.full(count * self.bucket, np.nan)
        padded[: len(values)] = values
        grid = padded.reshape(count, self.bucket)
        if how == "max":
            return np.asarray(np.fmax.reduce(grid, axis=1))
        total = np.nansum(grid, axis=1)
        if how == "sum":
            return np.asarray(total)
        seen = np.sum(~np.isnan(grid), axis=1)
        return np.where(seen > 0, total / np.maximum(seen, 1), np.nan)


_CHART_H = 124.0
_TOP, _BOTTOM = 24.0, 104.0


def _nice(value: float) -> float:
    """The smallest of 1, 2, 2.5 or 5 times a power of ten at or above ``value``."""
    if value <= 0:
        return 1.0
    power = float(10.0 ** math.floor(math.log10(value)))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * power + 1e-12:
            return step * power
    return 10.0 * power


def _count_top(value: float) -> float:
    """An axis top for counts: a whole, even number, so that its middle is whole too."""
    top = max(2, math.ceil(value))
    return float(top + top % 2) if top <= 10 else _nice(value)


def _y(value: float, top: float) -> float:
    return round(_BOTTOM - value / top * (_BOTTOM - _TOP), 1)


def _line_path(axis: _Axis, values: np.ndarray, top: float, *, step: bool = False) -> str:
    """An SVG path through the bucket values, broken where a value is NaN; the inside
    points of a flat run are left out."""
    segments: list[list[tuple[float, float]]] = [[]]
    for centre, value in zip(axis.centres(), values.tolist(), strict=True):
        if value is None or math.isnan(value):
            if segments[-1]:
                segments.append([])
            continue
        segments[-1].append((axis.x(centre), _y(value, top)))
    parts: list[str] = []
    for seg in segments:
        if not seg:
            continue
        parts.append(f"M{seg[0][0]:g},{seg[0][1]:g}")
        if step:
            level = seg[0][1]
            for x, y in seg[1:]:
                if y != level:
                    parts.append(f"H{x:g}V{y:g}")
                    level = y
            if len(seg) > 1:
                parts.append(f"H{seg[-1][0]:g}")
            continue
        for i in range(1, len(seg)):
            x, y = seg[i]
            if i < len(seg) - 1 and seg[i - 1][1] == y == seg[i + 1][1]:
                continue
            parts.append(f"L{x:g},{y:g}")
    return "".join(parts)


def _chart(
    chart_id: str,
    title: str,
    axis: _Axis,
    top: float,
    body: Sequence[str],
    legend: Sequence[tuple[str, str]],
    spans: Sequence[_Span],
    *,
    unit: str = "",
) -> str:
    """One timeline: title, legend, fault spans, axes, the body and a cursor."""
    out = [
        f'<svg class="chart" id="{_e(chart_id)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {axis.width:g} {_CHART_H:g}" data-first="{axis.first}" '
        f'data-last="{axis.last}" data-x0="{axis.x0:g}" data-x1="{axis.x1:g}" '
        f'role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>'
    ]
    out.append(f'<text class="title" x="{axis.x0:g}" y="14">{_e(title)}</text>')
    x = axis.x0 + 7.2 * len(title) + 24
    for cls, label in legend:
        swatch = (
            f'<rect class="{_e(cls)}" x="{x + 3:g}" y="5" width="10" height="10"/>'
            if cls.startswith("b-")
            else f'<line class="series {_e(cls)}" x1="{x:g}" x2="{x + 16:g}" y1="10" '
            f'y2="10" stroke-width="3"/>'
        )
        out.append(f'{swatch}<text class="legend-text" x="{x + 20:g}" y="14">{_e(label)}</text>')
        x += 30 + 5.6 * len(label)
    for span in spans:
        a, b = axis.x(span.start), axis.x(span.end if span.end is not None else axis.last)
        out.append(
            f'<rect class="fault-span" x="{a:g}" y="{_TOP:g}" width="{max(b - a, 1):g}" '
            f'height="{_BOTTOM - _TOP:g}"><title>fault {_e(span.label)}</title></rect>'
        )
    out.append(
        f'<line class="grid" x1="{axis.x0:g}" x2="{axis.x1:g}" y1="{_y(top / 2, top):g}" '
        f'y2="{_y(top / 2, top):g}"/>'
    )
    for value in (0.0, top / 2, top):
        out.append(
            f'<text class="tick-label" x="{axis.x0 - 6:g}" y="{_y(value, top) + 3:g}" '
            f'text-anchor="end">{_e(_num(value, 2))}{_e(unit) if value else ""}</text>'
        )
    out.append(
        f'<line class="axis" x1="{axis.x0:g}" x2="{axis.x1:g}" y1="{_BOTTOM:g}" '
        f'y2="{_BOTTOM:g}"/><line class="axis" x1="{axis.x0:g}" x2="{axis.x0:g}" '
        f'y1="{_TOP:g}" y2="{_BOTTOM:g}"/>'
    )
    step = _nice((axis.last - axis.first) / 8) if axis.last > axis.first else 1
    tick = math.ceil(axis.first / step) * step
    while tick <= axis.last:
        tx = axis.x(tick)
        out.append(
            f'<line class="axis" x1="{tx:g}" x2="{tx:g}" y1="{_BOTTOM:g}" '
            f'y2="{_BOTTOM + 4:g}"/><text class="tick-label" x="{tx:g}" '
            f'y="{_BOTTOM + 14:g}" text-anchor="middle">{_num(tick, 1)}</text>'
        )
        tick += step
    out.append(
        f'<text class="tick-label" x="{axis.x1:g}" y="{_CHART_H - 2:g}" '
        f'text-anchor="end">tick</text>'
    )
    out.extend(body)
    out.append(
        f'<line class="cursor" x1="0" x2="0" y1="{_TOP - 4:g}" y2="{_BOTTOM:g}" '
        f'visibility="hidden"/></svg>'
    )
    return "".join(out)


def _marks(axis: _Axis, ticks: Iterable[tuple[int, str]], cls: str) -> list[str]:
    """Short vertical marks at ``ticks``, each with a tooltip; at most one per pixel."""
    out: list[str] = []
    last_x = -1.0
    for tick, title in ticks:
        x = axis.x(tick)
        if x - last_x < 1.0:
            continue
        last_x = x
        out.append(
            f'<line class="mark {cls}" x1="{x:g}" x2="{x:g}" y1="{_BOTTOM:g}" '
            f'y2="{_BOTTOM - 8:g}"><title>{_e(title)}</title></line>'
        )
    return out


def _charts(run: _Run, axis: _Axis, *, done_by_run: int | None = None) -> list[str]:
    charts: list[str] = []
    per = "" if axis.bucket == 1 else f" (max per {axis.bucket} ticks)"

    # working set against capacity, with capacity alarms
    size = axis.reduce(run.items, "max")
    capacity = float(run.capacity) if run.capacity is not None else 0.0
    top = _nice(max(float(np.nanmax(size)) if np.any(~np.isnan(size)) else 0.0, capacity) * 1.05)
    body = [f'<path class="series s-size" d="{_line_path(axis, size, top)}"/>']
    legend = [("s-size", "items")]
    if run.capacity is not None:
        cy = _y(capacity, top)
        body.append(
            f'<line class="series s-capacity" x1="{axis.x0:g}" x2="{axis.x1:g}" '
            f'y1="{cy:g}" y2="{cy:g}"><title>capacity {run.capacity}</title></line>'
        )
        legend.append(("s-capacity", f"capacity {run.capacity}"))
    alarms = axis.reduce(run.alarm.astype(float), "max")
    width = max((axis.x1 - axis.x0) / len(alarms), 1.0)
    for centre, on in zip(axis.centres(), alarms.tolist(), strict=True):
        if on and on > 0:
            body.append(
                f'<rect class="alarm-span" x="{axis.x(centre) - width / 2:g}" '
                f'y="{_TOP - 6:g}" width="{width:g}" height="5"><title>capacity alarm '
                f"near tick {round(centre)}</title></rect>"
            )
    alarm_ticks = int(run.alarm.sum())
    legend.append(("s-evicted", f"capacity alarm ({alarm_ticks} ticks)"))
    charts.append(
        _chart("chart-working-set", f"Working set{per}", axis, top, body, legend, run.faults)
    )

    # evictions by reason, stacked
    reasons = [r for r in _EVICTION_REASONS if r in run.evictions]
    reasons += sorted(r for r in run.evictions if r not in _EVICTION_REASONS)
    sums = {r: axis.reduce(run.evictions[r], "sum") for r in reasons}
    total = sum(sums.values(), np.zeros(len(axis.centres())))
    top = _count_top(float(total.max()) if len(reasons) else 1.0)
    base = np.zeros(len(axis.centres()))
    body = []
    bar = max((axis.x1 - axis.x0) / len(base), 1.0)
    for reason in reasons:
        cls = f"b-{reason}" if reason in _EVICTION_REASONS else "b-other"
        parts = []
        for centre, low, value in zip(
            axis.centres(), base.tolist(), sums[reason].tolist(), strict=True
        ):
            if value > 0:
                x = axis.x(centre) - bar / 2
                parts.append(
                    f"M{x:g},{_y(low, top):g}V{_y(low + value, top):g}h{bar:g}V{_y(low, top):g}Z"
                )
        base = base + sums[reason]
        body.append(
            f'<path class="{cls}" d="{"".join(parts)}"><title>{_e(reason)}: '
            f"{int(run.evictions[reason].sum())} evictions</title></path>"
        )
    legend = [
        (f"b-{r}" if r in _EVICTION_REASONS else "b-other", f"{r} {int(run.evictions[r].sum())}")
        for r in reasons
    ] or [("s-absent", "none")]
    per_sum = "" if axis.bucket == 1 else f" (per {axis.bucket} ticks)"
    charts.append(
        _chart(
            "chart-evictions", f"Evictions by reason{per_sum}", axis, top, body, legend, run.faults
        )
    )

    # missing items by reason, per cabin
    for cabin in run.cabins:
        series = run.missing.get(cabin, {})
        names = [r for r in _MISSING_REASONS if r in series]
        names += sorted(r for r in series if r not in _MISSING_REASONS)
        reduced = {r: axis.reduce(series[r], "max") for r in names}
        top = _count_top(max((float(v.max()) for v in reduced.values()), default=1.0))
        body = [
            f'<path class="series s-{r if r in _MISSING_REASONS else "other"}" '
            f'd="{_line_path(axis, reduced[r], top, step=True)}"><title>{_e(r)}</title>'
            f"</path>"
            for r in names
        ]
        legend = [
            (
                f"s-{r if r in _MISSING_REASONS else 'other'}",
                f"{r} ({int(np.count_nonzero(series[r]))} ticks)",
            )
            for r in names
        ]
        charts.append(
            _chart(
                f"chart-missing-{cabin}",
                f"Missing items · {cabin}{per}",
                axis,
                top,
                body,
                legend or [("s-absent", "nothing missing")],
                run.faults,
            )
        )

    # deliveries, cumulative
    done = np.zeros(axis.n)
    for tick, _ in run.deliveries:
        if tick <= run.last:
            done[max(tick, run.first) - run.first :] += 1
    cumulative = axis.reduce(done, "max")
    top = _count_top(float(cumulative.max()))
    body = [
        f'<path class="series s-deliveries" d="{_line_path(axis, cumulative, top, step=True)}"/>'
    ]
    body += _marks(
        axis, [(t, f"{task} delivered at tick {t}") for t, task in run.deliveries], "k-delivery"
    )
    label = f"{len(run.deliveries)} recorded"
    if done_by_run is not None and done_by_run != len(run.deliveries):
        label += f" ({done_by_run} done by the run, the last at its final tick)"
    charts.append(
        _chart(
            "chart-deliveries",
            "Deliveries done",
            axis,
            top,
            body,
            [("s-deliveries", label)],
            run.faults,
        )
    )

    # tick compute time
    peak = axis.reduce(run.compute_ms, "max")
    mean = axis.reduce(run.compute_ms, "mean")
    top = _nice(float(np.nanmax(peak)) if np.any(~np.isnan(peak)) else 1.0)
    body = [f'<path class="series s-max" d="{_line_path(axis, peak, top)}"/>']
    legend = [("s-max", "max")]
    if axis.bucket > 1:
        body.append(f'<path class="series s-mean" d="{_line_path(axis, mean, top)}"/>')
        legend.append(("s-mean", "mean"))
    body += _marks(axis, [(t, f"overrun at tick {t}") for t in run.overruns], "k-overrun")
    legend.append(("k-overrun", f"overruns {len(run.overruns)}"))
    charts.append(
        _chart(
            "chart-compute",
            f"Tick compute time, ms{per}",
            axis,
            top,
            body,
            legend,
            run.faults,
            unit=" ms",
        )
    )
    return charts


# -- the working set at chosen ticks ---------------------------------------------------------


def _choose(run: _Run, budget: int) -> tuple[list[tuple[int, list[str]]], list[int]]:
    """The ticks worth a look (with why) and an even sample, ``budget`` ticks in all."""
    recorded = run.ticks
    if budget <= 0:
        return [], []
    why: dict[int, list[str]] = defaultdict(list)
    rank: dict[int, int] = {}
    for n in run.notable:
        index = bisect.bisect_right(recorded, n.tick) - 1
        tick = recorded[max(index, 0)]
        label = n.label if not n.cabin or n.cabin in n.label else f"{n.label} ({n.cabin})"
        if label not in why[tick]:
            why[tick].append(label)
        rank[tick] = min(rank.get(tick, 99), _PRIORITY.get(n.kind, 9))
    if len(recorded) <= budget:
        worth = sorted(why)
        return [(t, why[t]) for t in worth], [t for t in recorded if t not in why]
    reserve = max(budget // 4, budget - len(why))
    worth = sorted(sorted(why, key=lambda t: (rank[t], t))[: budget - reserve])
    taken = set(worth)
    rest = [t for t in recorded if t not in taken]
    sample = _stride(rest, budget - len(worth))
    return [(t, why[t]) for t in worth], sample


def _decision(outbox: Any) -> Json | None:
    if not isinstance(outbox, dict):
        return None
    failed = outbox.get("failed")
    writes = []
    for w in outbox.get("writes", []):
        key = str(w.get("key"))
        writes.append(
            f"delete {key}" if w.get("delete") else f"{key} = {brief(w.get('value'), VALUE_WIDTH)}"
        )
    return {
        "failed": (
            f"{failed.get('error_type')}: {failed.get('message')}"
            if isinstance(failed, dict)
            else None
        ),
        "writes": writes,
        "events": [
            f"{e.get('kind')} {brief(e.get('data'), VALUE_WIDTH)}" for e in outbox.get("events", [])
        ],
        "commands": [
            f"{c.get('name')} {brief(c.get('args'), VALUE_WIDTH)}"
            for c in outbox.get("commands", [])
        ],
        "reactions": [
            f"{r.get('pattern')} → {r.get('reaction')}" for r in outbox.get("reactions", [])
        ],
    }


class _Strings:
    """A table of strings stored once for the whole page; rows refer to them by index."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.table)
            self.table.append(text)
        return found


def _snapshot(recording: Recording, tick: int, strings: _Strings) -> Json:
    """The working set of ``tick`` as ``tick_report`` gives it, compact: rows as lists;
    keys, filters, sources and shortened values stored once in ``strings``."""
    report = tick_report(recording, tick)

    def value(v: Any) -> int:
        return strings(brief(v, VALUE_WIDTH))

    def number(v: Any) -> float | None:
        f = _finite(v)
        return None if f is None else round(f, 4)

    cabins: Json = {}
    for name, view in report["cabins"].items():
        rows = [
            [
                strings(key),
                strings(str(item.get("via", ""))),
                strings(str(item.get("source", ""))),
                number(item.get("importance")),
                value(item.get("value")),
                number(item.get("stamp")),
                number(item.get("first_seen")),
                number(item.get("last_used")),
            ]
            for key, item in sorted(view["items"].items())
        ]
        missing = []
        for pattern, entry in sorted(view["missing"].items()):
            note = ""
            evicted = entry.get("eviction")
            if isinstance(evicted, dict):
                note = (
                    f"evicted {evicted.get('key')} at tick {evicted.get('tick')} "
                    f"({evicted.get('reason')}, importance {evicted.get('importance')})"
                )
            missing.append([pattern, str(entry.get("reason")), note])
        cabins[name] = {
            "items": rows,
            "missing": missing,
            "suppressed": [str(p) for p in view.get("suppressed", [])],
            "decision": _decision(view.get("decision")),
        }
    evicted = [
        [str(e.get("key")), str(e.get("reason")), number(e.get("importance"))]
        for e in report.get("evicted") or []
        if isinstance(e, dict)
    ]
    unviewed = [
        [
            strings(key),
            strings(str(item.get("source", ""))),
            number(item.get("importance")),
            value(item.get("value")),
        ]
        for key, item in sorted((report.get("unviewed") or {}).items())
    ]
    return {
        "tick": tick,
        "time": number(report["time"]),
        "size": report["working_set_size"],
        "alarm": report["capacity_alarm"],
        "versions": report["versions"],
        "cabins": cabins,
        "evicted": evicted,
        "unviewed": unviewed,
        "decisions_recorded": report["decisions_recorded"],
    }


# -- summary and settings --------------------------------------------------------------------


def _summary_html(run: _Run, scenario: Scenario | None, summary: Mapping[str, Any] | None) -> str:
    events = run.counts.get("events", Counter())

    def by(prefix: str) -> dict[str, int]:
        return {
            k.split("\0", 1)[1]: v for k, v in sorted(events.items()) if k.startswith(prefix + "\0")
        }

    evictions = {r: int(v.sum()) for r, v in sorted(run.evictions.items())}
    compute = run.compute_ms[~np.isnan(run.compute_ms)]
    rows: list[tuple[str, str]] = [
        ("ticks recorded", f"{len(run.ticks)} ({tick_ranges(run.ticks)})"),
        (
            "simulated time",
            f"{_num((run.last + 1) / run.rate_hz, 2)} s at {_num(run.rate_hz, 2)} Hz",
        ),
        (
            "deliveries recorded",
            f"{len(run.deliveries)}"
            + (f" of {len(scenario.tasks)} tasks" if scenario else "")
            + (
                " (" + ", ".join(f"{task} at tick {t}" for t, task in run.deliveries) + ")"
                if run.deliveries
                else ""
            ),
        ),
        ("collisions", str(events["collision"])),
        ("safety violations", str(events["safety_violation"])),
        ("emergency stops", _counts(by("emergency_stop"))),
        ("alarms", _counts(by("alarm"))),
        ("failed actions", str(events["action_failed"])),
        ("re-plans", str(events["replan"])),
        ("cabin failures", str(events["cabin_failed"])),
        ("evictions", f"{sum(evictions.values())} ({_counts(evictions)})"),
        ("capacity alarms", f"{int(run.alarm.sum())} ticks"),
    ]
    missing = run.counts.get("missing", Counter())
    for cabin in run.cabins:
        mine = {
            k.split("\0", 1)[1]: v
            for k, v in sorted(missing.items())
            if k.split("\0", 1)[0] == cabin
        }
        rows.append(
            (f"missing items · {cabin}", f"{_counts(mine)} (pattern-ticks)" if mine else "none")
        )
    if len(compute):
        rows.append(
            (
                "tick compute",
                f"p50 {np.percentile(compute, 50):.2f} ms · p99 "
                f"{np.percentile(compute, 99):.2f} ms · max "
                f"{compute.max():.2f} ms",
            )
        )
    rows.append(("overruns", str(len(run.overruns))))
    out = ["<h3>From the recording</h3>", _kv_table(rows)]
    if summary:
        live = [(str(k), _summary_value(v)) for k, v in summary.items()]
        out += [
            "<h3>From the run</h3>",
            '<p class="note">The summary the run printed (deliveries completed at the '
            "last tick may be missing from the recording, which ends with the tick "
            "that completed them).</p>",
            _kv_table(live),
        ]
    return "".join(out)


def _whole(summary: Mapping[str, Any] | None, key: str) -> int | None:
    value = None if summary is None else summary.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _summary_value(value: Any) -> str:
    if isinstance(value, float):
        return _num(value, 4)
    if isinstance(value, dict):
        return _counts({str(k): _summary_value(v) for k, v in value.items()})
    if isinstance(value, list):
        return ", ".join(_summary_value(v) for v in value) or "none"
    return "-" if value is None else str(value)


def _settings_html(run: _Run, scenario: Scenario | None) -> str:
    meta = run.recording.metadata
    faults = _metadata_json(run.recording, "faults", [])
    spans = {s.label: s for s in run.faults}
    fault_rows = []
    for label in faults if isinstance(faults, list) else []:
        span = spans.get(str(label))
        when = (
            "not started in the recorded ticks"
            if span is None
            else f"ticks {span.start}-{'' if span.end is None else span.end}"
        )
        fault_rows.append(f"<li><code>{_e(label)}</code> <span class='note'>{_e(when)}</span></li>")
    rows = [
        (
            "scenario",
            _e(meta.get("scenario", "?"))
            + (f" <span class='note'>{_e(scenario.description)}</span>" if scenario else ""),
        ),
        ("seed", _e(meta.get("seed", "?"))),
        ("rate", _e(f"{_num(run.rate_hz, 2)} Hz")),
        ("working-memory capacity", _e(meta.get("capacity", "?"))),
        ("cabins (in loop order)", _e(", ".join(run.cabins) or "none")),
        ("faults", f"<ul>{''.join(fault_rows)}</ul>" if fault_rows else "none"),
        ("recording", f"<code>{_e(run.recording.path)}</code>"),
        ("recorded by", _e(f"tickwork {meta.get('tickwork_version', '?')}")),
    ]
    out = [_kv_table(rows, raw=True)]
    specs = run.recording.spec_json()
    if specs:
        out.append("<h3>Context specs</h3>")
    for name, spec in specs.items():
        short = []
        if isinstance(spec, dict):
            for key in (
                "board_keys",
                "required",
                "weights",
                "map_radius",
                "corridor_width",
                "event_window",
                "on_missing",
            ):
                if key in spec:
                    short.append(f"{key} {brief(spec[key], 140)}")
        text = json.dumps(spec, indent=2, sort_keys=True)
        out.append(
            f'<details class="spec"><summary><strong>{_e(name)}</strong> '
            f'<span class="note">{_e(" · ".join(short))}</span></summary>'
            f"<pre>{_e(text)}</pre></details>"
        )
    if scenario is not None:
        text = json.dumps(scenario.model_dump(mode="json"), indent=2)
        out.append(
            f'<details class="spec"><summary><strong>scenario '
            f'{_e(scenario.name)}</strong> <span class="note">{len(scenario.shelves)} '
            f"shelves, {len(scenario.docks)} docks, {len(scenario.tasks)} tasks"
            f"</span></summary><pre>{_e(text)}</pre></details>"
        )
    return "".join(out)


def _events_html(run: _Run) -> str:
    shown = [n for n in run.notable if n.kind != "fault_end"]
    if not shown:
        return '<p class="note">No faults, alarms, stops, incidents or deliveries recorded.</p>'
    if len(shown) > MAX_EVENT_ROWS:
        shown = sorted(
            sorted(shown, key=lambda n: (_PRIORITY.get(n.kind, 9), n.tick))[:MAX_EVENT_ROWS],
            key=lambda n: n.tick,
        )
    rows = "".join(
        f'<tr class="event-row k-{_e(n.kind)}" data-tick="{n.tick}"><td class="num">{n.tick}'
        f'</td><td class="num">{_num(n.tick / run.rate_hz, 2)}</td><td>{_e(n.label)}</td>'
        f"<td>{_e(n.cabin)}</td><td class='value'>{_e(n.detail)}</td></tr>"
        for n in shown
    )
    more = (
        f'<p class="note">The {MAX_EVENT_ROWS} most serious of {len(run.notable)} are listed.</p>'
        if len(run.notable) > MAX_EVENT_ROWS
        else ""
    )
    return (
        f'{more}<p class="note">Click a row to look at the working set of its tick.</p>'
        f'<div class="scroll"><table><thead><tr><th class="num">tick</th>'
        f'<th class="num">s</th><th>what</th><th>cabin</th><th>data</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


# -- the run page ----------------------------------------------------------------------------


def _open(
    source: str | os.PathLike[str] | Scan | Recording, warn: Callable[[str], None] | None
) -> Recording:
    if isinstance(source, Recording):
        recording = source
    elif isinstance(source, Scan):
        recording = Recording(source)
    else:
        recording = Recording.open(os.fspath(source))
    notice = damage_notice(recording)
    if notice is not None and warn is not None:
        warn(notice)
    return recording


def recorded_summary(recording: Recording) -> dict[str, Any] | None:
    """The summary the run wrote when it finished, if it finished (a killed run has none)."""
    text = recording.scan.metadata.get("summary", {}).get("json")
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def run_page(
    source: str | os.PathLike[str] | Scan | Recording,
    *,
    summary: Mapping[str, Any] | None = None,
    max_points: int = MAX_POINTS,
    max_ticks: int = MAX_TICKS,
    warn: Callable[[str], None] | None = None,
) -> tuple[str, ReportInfo]:
    """The HTML page of a recorded run, and what it holds (``ReportInfo.path`` is empty).

    ``source`` is a recording's path, a ``Scan`` or an open ``Recording``; a damaged one
    is reported up to its break (``warn`` is told once). ``summary``: the summary the run
    itself returned, shown beside what the recording holds.
    """
    if max_points < 10:
        raise ReportError(f"max_points must be at least 10, got {max_points}")
    if max_ticks < 0:
        raise ReportError(f"max_ticks must be 0 or more, got {max_ticks}")
    recording = _open(source, warn)
    if summary is None:
        summary = recorded_summary(recording)
    scenario = _scenario(recording)
    run = _collect(recording)
    axis = _Axis(run.first, run.last, max(1, math.ceil((run.last - run.first + 1) / max_points)))
    drawn = _map(run, scenario, max_points=max_points)
    worth, sample = _choose(run, max_ticks)
    strings = _Strings()
    snapshots = {
        str(t): _snapshot(recording, t, strings) for t in sorted({*(t for t, _ in worth), *sample})
    }
    data = {
        "first": run.first,
        "last": run.last,
        "rate_hz": run.rate_hz,
        "cabins": run.cabins,
        "path": drawn.path,
        "worth": [{"tick": t, "why": why} for t, why in worth],
        "sample": sample,
        "snapshots": snapshots,
        "values": strings.table,
        "recording": recording.path,
    }
    meta = recording.metadata
    name = meta.get("scenario", scenario.name if scenario else "?")
    failed = run.counts["events"]["collision"] + run.counts["events"]["safety_violation"]
    if summary is not None:
        failed = int(summary.get("collisions", 0) or 0) + int(
            summary.get("safety_violations", 0) or 0
        )
    verdict = (
        '<span class="badge bad">a safety violation or a collision happened</span>'
        if failed
        else '<span class="badge ok">no safety violation, no collision</span>'
    )
    notices = []
    notice = damage_notice(recording)
    if notice is not None:
        notices.append(f'<p class="notice">{_e(notice)}</p>')
    if scenario is None:
        notices.append(
            '<p class="notice">The recording does not hold its scenario: the map '
            "shows only the trajectory and the markers.</p>"
        )
    length = f"{len(run.ticks)} ticks, {_num((run.last + 1) / run.rate_hz, 1)} s simulated"
    bucket = (
        "one point per tick"
        if axis.bucket == 1
        else f"{axis.bucket} ticks per point ({len(axis.centres())} points)"
    )
    tick_note = (
        f"The working set is embedded for {len(snapshots)} of the {len(run.ticks)} "
        f"ticks: {len(worth)} worth a look (faults, alarms, bad outcomes, deliveries) "
        "and an even sample of the rest. For any other tick: "
        f"python -m sim inspect {shlex.quote(recording.path)} --tick N"
    )
    parts = {
        "title": _e(f"tickwork run · {name} · seed {meta.get('seed', '?')}"),
        "subtitle": f"{_e(length)} · {verdict}",
        "js": _template("report.js"),
        "notices": "".join(notices),
        "map": f'<div class="mapwrap">{drawn.svg}{_map_legend(run)}</div>',
        "timeline_note": _e(f"Ticks {run.first}-{run.last}, {bucket}; shaded: faults active."),
        "charts": "\n".join(_charts(run, axis, done_by_run=_whole(summary, "deliveries_done"))),
        "tick_note": _e(tick_note),
        "events": _events_html(run),
        "summary": _summary_html(run, scenario, summary),
        "settings": _settings_html(run, scenario),
        "data": _json_script("report-data", data),
    }
    page = _page("run.html", parts, scripts=True)
    info = ReportInfo(
        path="",
        bytes=len(page.encode("utf-8")),
        ticks=len(run.ticks),
        embedded_ticks=len(snapshots),
        worth_a_look=len(worth),
        markers=drawn.markers,
        routes=drawn.routes,
        trajectory_points=drawn.points,
        damaged=recording.damaged,
    )
    return page, info


def write_run_report(
    source: str | os.PathLike[str] | Scan | Recording,
    out: str | os.PathLike[str],
    *,
    summary: Mapping[str, Any] | None = None,
    max_points: int = MAX_POINTS,
    max_ticks: int = MAX_TICKS,
    warn: Callable[[str], None] | None = None,
) -> ReportInfo:
    """Write the HTML report of a recorded run to ``out`` (atomically); what it holds.

    Raises ``ReportError`` for a recording with nothing to report or a bad target,
    ``runtime.recording.reader.RecordingError`` for a file that is not a tickwork recording.
    """
    check_output(out)
    page, info = run_page(
        source, summary=summary, max_points=max_points, max_ticks=max_ticks, warn=warn
    )
    written = _write(out, page)
    return ReportInfo(**{**info.as_json(), "path": os.fspath(out), "bytes": written})


# -- campaigns -------------------------------------------------------------------------------


def _badness(run: Mapping[str, Any]) -> tuple[int, int, int, float, int]:
    """Sort key: the worst run first (lost, unsafe, reactions missed, least delivered)."""
    tasks = run.get("tasks_total") or 0
    share = (run.get("deliveries_done") or 0) / tasks if tasks else 1.0
    unsafe = int(run.get("safety_violations") or 0) + int(run.get("collisions") or 0)
    return (
        0 if run.get("error") else 1,
        -unsafe,
        1 if run.get("reactions_ok") else 0,
        share,
        int(run.get("ticks") or 0),
    )


_WORDS = {"pass": "pass", "fail": "FAIL", "lost": "lost"}


def _state(run: Mapping[str, Any]) -> str:
    if run.get("error"):
        return "lost"
    return "pass" if run.get("passed") else "fail"


def _reproduce(run: Mapping[str, Any]) -> str:
    command = [
        "python",
        "-m",
        "sim",
        "run",
        "--scenario",
        str(run.get("scenario")),
        "--seed",
        str(run.get("seed")),
    ]
    if run.get("fault") not in (None, "(none)"):
        command += ["--fault", str(run["fault"])]
    if isinstance(run.get("ticks"), int) and run["ticks"] > 0:
        command += ["--ticks", str(run["ticks"])]
    return " ".join(shlex.quote(part) for part in command) + " --report run.html"


def campaign_page(report: Mapping[str, Any]) -> tuple[str, ReportInfo]:
    """The HTML page of a campaign's report (the dict ``python -m sim campaign --out``
    writes), and what it holds."""
    runs = report.get("runs")
    rows = report.get("table")
    if not isinstance(runs, list) or not isinstance(rows, list):
        raise ReportError(
            "a campaign report needs its 'runs' and 'table' lists (as "
            "python -m sim campaign --out writes them)"
        )
    columns: list[tuple[str, int]] = []
    by_fault: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(runs):
        if not isinstance(r, dict):
            raise ReportError(f"campaign run {i} is not an object")
        column = (str(r.get("scenario")), int(r.get("seed") or 0))
        if column not in columns:
            columns.append(column)
        by_fault[str(r.get("fault"))].append(i)
    head = "".join(f'<th class="num">{_e(s)}<br>seed {seed}</th>' for s, seed in columns)
    body = []
    for k, row in enumerate(rows):
        fault = str(row.get("fault"))
        mine = by_fault.get(fault, [])
        worst = min(mine, key=lambda i: (_badness(runs[i]), i)) if mine else None
        cells = []
        for column in columns:
            here = [
                i
                for i in mine
                if (str(runs[i].get("scenario")), int(runs[i].get("seed") or 0)) == column
            ]
            if not here:
                cells.append('<td class="cell none">-</td>')
                continue
            i = min(here, key=lambda j: (_badness(runs[j]), j))
            state = _state(runs[i])
            cells.append(
                f'<td class="cell {state}"><a href="#run-{i}" title="'
                f'{_e(_cell_title(runs[i]))}">{_WORDS[state]}</a></td>'
            )
        ok = row.get("passed") == row.get("runs") and not row.get("errors")
        state = "pass" if ok else "fail"
        unsafe = int(row.get("safety_violations") or 0) + int(row.get("collisions") or 0)
        safety = (
            "ok"
            if not unsafe
            else (f"{row.get('safety_violations')} violations, {row.get('collisions')} collisions")
        )
        if row.get("errors"):
            lost = int(row.get("errors") or 0)
            safety += f" ({lost} run{'s' if lost != 1 else ''} lost)"
        seen = f"{row.get('reactions_seen')} of {row.get('runs')}"
        seen_ok = row.get("reactions_seen") == row.get("runs")
        pct = _finite(row.get("deliveries_pct"))
        summary_cells = [
            ("expected", _e(", ".join(str(x) for x in row.get("expected", [])) or "-"), None),
            ("seen", _e(seen), seen_ok),
            ("deliveries", _e(f"{pct:.0f}%" if pct is not None else "-"), True),
            ("safety", _e(safety), not unsafe and not row.get("errors")),
        ]
        rendered = "".join(
            f'<td class="summary {name} {_verdict(good)}">{_link(text, worst)}</td>'
            for name, text, good in summary_cells
        )
        body.append(
            f'<tr class="fault-row {state}" id="fault-{k}" data-fault="{_e(fault)}">'
            f'<td class="key">{_link(_e(fault), worst)}</td>{"".join(cells)}'
            f"{rendered}</tr>"
        )
    matrix = (
        f'<table class="matrix"><thead><tr><th>fault</th>{head}<th>declared '
        f"reactions</th><th>seen in</th><th>deliveries</th><th>safety</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    sections = [_campaign_run(i, r) for i, r in enumerate(runs)]
    passed = bool(report.get("passed"))
    verdict = (
        '<span class="badge ok">every declared reaction seen, no safety violation</span>'
        if passed
        else '<span class="badge bad">a declared reaction was missed or a run was unsafe</span>'
    )
    settings = _kv_table(
        [
            ("scenarios", _e(", ".join(str(s) for s in report.get("scenarios", [])))),
            ("seeds", _e(", ".join(str(s) for s in report.get("seeds", [])))),
            ("within", _e(f"{report.get('within')} ticks of a fault's start")),
            ("backend", _e(report.get("backend", "?"))),
            *(
                [("long-term memory", f"<code>{_e(report['memory'])}</code>")]
                if report.get("memory")
                else []
            ),
            ("runs", _e(len(runs))),
        ],
        raw=True,
    )
    parts = {
        "title": _e(f"tickwork fault campaign · {len(rows)} faults · {len(runs)} runs"),
        "subtitle": verdict,
        "matrix": matrix,
        "runs": "".join(sections),
        "settings": settings,
    }
    page = _page("campaign.html", parts, scripts=False)
    return page, ReportInfo(path="", bytes=len(page.encode("utf-8")), runs=len(runs))


def _verdict(good: bool | None) -> str:
    return "" if good is None else "pass" if good else "fail"


def _link(text: str, run: int | None) -> str:
    """``text`` (HTML) linking to the summary of run number ``run``."""
    return text if run is None else f'<a href="#run-{run}">{text}</a>'


def _cell_title(run: Mapping[str, Any]) -> str:
    return (
        f"{run.get('fault')} · {run.get('scenario')} seed {run.get('seed')}: "
        f"{_state(run)}, {run.get('deliveries_done')}/{run.get('tasks_total')} delivered"
    )


def _campaign_run(index: int, run: Mapping[str, Any]) -> str:
    state = _state(run)
    checks = run.get("expected") or []
    rows = "".join(
        f'<tr class="{"pass" if c.get("ok") else "fail"}"><td>{_e(c.get("cabin"))}</td>'
        f"<td><code>{_e(c.get('reaction'))}</code></td><td>{_e(c.get('because'))}</td>"
        f'<td class="num">{_e("-" if c.get("seen_at") is None else c.get("seen_at"))}</td>'
        f'<td class="{"pass" if c.get("ok") else "fail"}">{"seen" if c.get("ok") else "MISSED"}'
        f"</td></tr>"
        for c in checks
        if isinstance(c, dict)
    )
    expected = (
        f"<table><thead><tr><th>cabin</th><th>declared reaction</th><th>because</th>"
        f'<th class="num">seen at tick</th><th></th></tr></thead><tbody>{rows}</tbody>'
        "</table>"
        if rows
        else '<p class="note">No reaction expected.</p>'
    )
    facts = _kv_table(
        [
            ("deliveries", f"{run.get('deliveries_done')} of {run.get('tasks_total')}"),
            ("safety violations", str(run.get("safety_violations"))),
            ("collisions", str(run.get("collisions"))),
            ("ticks", str(run.get("ticks"))),
            ("error", str(run.get("error") or "none")),
            ("board digest", str(run.get("board_digest") or "-")),
            ("reproduce", _reproduce(run)),
        ]
    )
    return (
        f'<section class="run {state}" id="run-{index}"><h3><span class="verdict">'
        f"{_WORDS[state]}"
        f'</span><code>{_e(run.get("fault"))}</code> <span class="note">'
        f"{_e(run.get('scenario'))} · seed {_e(run.get('seed'))}</span></h3>"
        f"{expected}{facts}</section>"
    )


def write_campaign_report(report: Mapping[str, Any], out: str | os.PathLike[str]) -> ReportInfo:
    """Write the HTML page of a campaign's report to ``out`` (atomically)."""
    check_output(out)
    page, info = campaign_page(report)
    written = _write(out, page)
    return ReportInfo(**{**info.as_json(), "path": os.fspath(out), "bytes": written})
