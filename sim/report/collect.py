"""What a report draws, read from a recording once: the per-tick series (working-set size,
compute time, evictions, missing items), what each cabin did (``sim.report.activity``) and
the moments worth a look (faults, bad outcomes, deliveries), each from one source.

Deliveries come from the world's own outcome reports (``action:last`` with a successful
drop): the one record of a delivery that neither a cabin's belief nor the dispatcher's
bookkeeping stands in for.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from cabins.warehouse.values import (
    ACTION_LAST,
    POSE,
    ROUTE,
    ActionOutcome,
    Point2,
    Pose,
    route_points,
)
from runtime.jsondata import JSONDataError, parse
from runtime.recording.format import BOARD, EVENTS, EVICTIONS, FAULTS, STATS, WORKING_SET
from runtime.recording.inspect import brief
from runtime.recording.reader import Recording
from sim.report.activity import activity
from sim.report.html import ReportError
from sim.world.scenario import Scenario

PRIORITY = {
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


Json = dict[str, Any]
Delivery = tuple[int, str]
"""A delivery: the tick it was done at and the task."""


# -- what a recording holds ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Notable:
    """Something at a tick worth a look: a fault, a bad outcome, a delivery."""

    tick: int
    kind: str
    label: str
    cabin: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Span:
    label: str
    start: int
    end: int | None


@dataclass
class RunData:
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
    deliveries: list[Delivery]
    notable: list[Notable]
    faults: list[Span]
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    activity: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per cabin, the counts of its summary row over the recorded ticks
    (``sim.report.activity``)."""
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


def metadata_json(recording: Recording, key: str, default: Any) -> Any:
    text = recording.metadata.get(key)
    if text is None:
        return default
    try:
        return parse(text)
    except JSONDataError as exc:
        raise ReportError(f"{recording.path}: the run metadata's {key!r}: {exc}") from None


def scenario_of(recording: Recording) -> Scenario | None:
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


def cabin_tag(tags: Iterable[str]) -> str:
    """The cabin a ``cabin:<name>`` tag names ("" for none)."""
    for tag in tags:
        if tag.startswith("cabin:"):
            return tag[len("cabin:") :]
    return ""


def event_label(kind: str, data: Mapping[str, Any], cabin: str) -> str | None:
    """A short label for an event the report shows; None for events it leaves out."""
    if kind == "collision":
        return collision_label(data)
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


def collision_label(data: Mapping[str, Any]) -> str:
    """A collision as the report marks it: what was hit, at what speed and heading, and
    the last re-plan before it (a recording from before these details: just "collision")."""
    hit = data.get("hit")
    if not isinstance(hit, str):
        return "collision"
    text = f"collision with {hit}"
    speed, heading = data.get("speed"), data.get("heading")
    if isinstance(speed, (int, float)) and isinstance(heading, (int, float)):
        text += f" at {speed:.2f} m/s, heading {heading:.2f} rad"
    replan = data.get("last_replan")
    if isinstance(replan, Mapping):
        ago = replan.get("ago")
        when = f" {ago:.1f} s before" if isinstance(ago, (int, float)) else ""
        text += f"; last re-plan ({replan.get('reason', '?')}){when}"
    return text


def collect(recording: Recording) -> RunData:
    """Read the series a report draws from ``recording``, each channel once."""
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
    try:
        rate_hz = float(recording.metadata.get("rate_hz", "20"))
        capacity = int(recording.metadata["capacity"]) if "capacity" in recording.metadata else None
    except ValueError as exc:
        raise ReportError(f"{recording.path}: bad run metadata ({exc})") from None
    if not rate_hz > 0 or not math.isfinite(rate_hz):
        raise ReportError(f"{recording.path}: the run metadata's rate_hz is {rate_hz!r}")
    listed = metadata_json(recording, "cabins", [])
    cabins = [str(c) for c in listed] if isinstance(listed, list) else []
    span = _Ticks(first, last)

    items, compute, overruns = _stats(recording, span)
    alarm, missing, missing_counts = _working_sets(recording, span, items, cabins)
    evictions = _evictions(recording, span)
    poses, routes, deliveries = _board(recording)
    notable, kinds = _events(recording)
    faults = _faults(recording, span, notable)
    was = False
    for i, now in enumerate(alarm.tolist()):
        if now and not was:
            notable.append(Notable(first + i, "capacity_alarm", "capacity alarm"))
        was = now
    for t, task in deliveries:
        notable.append(Notable(t, "delivery", f"delivery {task} done"))
    notable.sort(key=lambda n: (n.tick, PRIORITY.get(n.kind, 9)))
    return RunData(
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
        faults=faults,
        counts={"missing": missing_counts, "events": kinds},
        activity=activity(recording, cabins),
    )


@dataclass(frozen=True, slots=True)
class _Ticks:
    """The recorded ticks a series spans, first to last."""

    first: int
    last: int

    @property
    def n(self) -> int:
        return self.last - self.first + 1

    def __contains__(self, tick: object) -> bool:
        return isinstance(tick, int) and self.first <= tick <= self.last


def _stats(recording: Recording, span: _Ticks) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Working-set size and compute time (ms) per tick, and the ticks that overran."""
    items = np.full(span.n, np.nan)
    compute = np.full(span.n, np.nan)
    overruns: list[int] = []
    for tick, stats in recording.records(STATS):
        if tick in span:
            items[tick - span.first] = stats["items"]
            compute[tick - span.first] = stats["compute_s"] * 1e3
            if stats["overrun"]:
                overruns.append(tick)
    return items, compute, overruns


def _working_sets(
    recording: Recording, span: _Ticks, items: np.ndarray, cabins: list[str]
) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]], Counter[str]]:
    """Capacity alarms per tick and missing items per cabin and reason (adding the cabins
    the views name to ``cabins``; a tick without stats takes its size from here)."""
    alarm = np.zeros(span.n, dtype=bool)
    missing: dict[str, dict[str, np.ndarray]] = {}
    counts: Counter[str] = Counter()
    for tick, ws in recording.records(WORKING_SET):
        if tick not in span:
            continue
        i = tick - span.first
        alarm[i] = ws.get("capacity_alarm", False)
        if np.isnan(items[i]):
            items[i] = len(ws["items"])
        for cabin, view in ws["views"].items():
            if cabin not in cabins:
                cabins.append(cabin)
            per = missing.setdefault(cabin, {})
            for reason in view["missing"].values():
                series = per.get(reason)
                if series is None:
                    series = per[reason] = np.zeros(span.n)
                series[i] += 1
                counts[f"{cabin}\0{reason}"] += 1
    for cabin in cabins:
        missing.setdefault(cabin, {})
    return alarm, missing, counts


def _evictions(recording: Recording, span: _Ticks) -> dict[str, np.ndarray]:
    """Evictions per tick, by reason."""
    evictions: dict[str, np.ndarray] = {}
    for tick, message in recording.records(EVICTIONS):
        if tick not in span:
            continue
        for e in message["evictions"]:
            series = evictions.get(e["reason"])
            if series is None:
                series = evictions[e["reason"]] = np.zeros(span.n)
            series[tick - span.first] += 1
    return evictions


def _board(
    recording: Recording,
) -> tuple[list[tuple[int, float, float]], list[tuple[int, tuple[Point2, ...]]], list[Delivery]]:
    """The robot's sensed poses, the planned routes, and the deliveries the world reported,
    each with the tick it happened at."""
    poses: list[tuple[int, float, float]] = []
    routes: list[tuple[int, tuple[Point2, ...]]] = []
    delivered: dict[str, int] = {}
    for tick, m in recording.records(BOARD):
        if m["deleted"]:
            continue
        key, value = m["key"], m.get("value")
        if key == POSE:
            pose = Pose.read(value)
            if pose is not None:
                poses.append((tick, pose.x, pose.y))
        elif key == ROUTE:
            points = route_points(value)
            if points is not None and len(points) >= 2:
                routes.append((tick, points))
        elif key == ACTION_LAST:
            outcome = ActionOutcome.read(value)
            if outcome is not None and outcome.action == "drop" and outcome.ok and outcome.task:
                # the world reports an outcome when it next senses: the tick after the drop
                delivered.setdefault(outcome.task, tick - 1)
    deliveries = sorted((t, task) for task, t in delivered.items())
    return poses, routes, deliveries


def _events(recording: Recording) -> tuple[list[Notable], Counter[str]]:
    """The events a report shows, and how many of each kind (alarms and stops by kind)."""
    notable: list[Notable] = []
    kinds: Counter[str] = Counter()
    for tick, event in recording.records(EVENTS):
        kind = event["kind"]
        raw = event["data"]
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        cabin = cabin_tag(event["tags"])
        label = event_label(kind, data, cabin)
        if label is None:
            continue
        kinds[kind] += 1
        if kind == "alarm":
            kinds[f"alarm\0{data.get('kind', '?')}"] += 1
        elif kind == "emergency_stop":
            kinds[f"emergency_stop\0{data.get('reason', '?')}"] += 1
        notable.append(Notable(tick, kind, label, cabin, brief(raw, 160)))
    return notable, kinds


def _faults(recording: Recording, span: _Ticks, notable: list[Notable]) -> list[Span]:
    """The tick spans faults were active in (adding their starts and ends to ``notable``)."""
    starts: dict[str, int] = {}
    spans: list[Span] = []
    for _, m in recording.records(FAULTS):
        label, at = m["fault"], m["tick"]
        if m["phase"] == "start":
            starts[label] = at
            notable.append(Notable(at, "fault", f"fault starts: {label}"))
        elif m["phase"] == "end":
            spans.append(Span(label, starts.pop(label, span.first), at))
            notable.append(Notable(at, "fault_end", f"fault ends: {label}"))
    spans.extend(Span(label, start, None) for label, start in starts.items())
    spans.sort(key=lambda s: (s.start, s.label))
    return spans


def stride(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` of ``items``, evenly spaced, keeping the first and the last."""
    if len(items) <= limit:
        return list(items)
    if limit < 2:
        return list(items[:limit])
    picks = np.linspace(0, len(items) - 1, limit).round().astype(int)
    return [items[i] for i in sorted(set(picks.tolist()))]
