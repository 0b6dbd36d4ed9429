"""The timelines of a run report, as SVG charts: working-set size against capacity,
evictions by reason, missing items by reason per cabin, deliveries and tick compute time,
with the ticks where a fault was active shaded. Long runs are reduced to at most
``max_points`` buckets of ticks."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sim.report.collect import RunData, Span
from sim.report.html import escape, num

_MISSING_REASONS = ("absent", "stale", "evicted", "fault")
_EVICTION_REASONS = ("capacity", "retracted", "stale", "expired")

# -- timelines -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Axis:
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


def _line_path(axis: Axis, values: np.ndarray, top: float, *, step: bool = False) -> str:
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
    axis: Axis,
    top: float,
    body: Sequence[str],
    legend: Sequence[tuple[str, str]],
    spans: Sequence[Span],
    *,
    unit: str = "",
) -> str:
    """One timeline: title, legend, fault spans, axes, the body and a cursor."""
    out = [
        f'<svg class="chart" id="{escape(chart_id)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {axis.width:g} {_CHART_H:g}" data-first="{axis.first}" '
        f'data-last="{axis.last}" data-x0="{axis.x0:g}" data-x1="{axis.x1:g}" '
        f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    out.append(f'<text class="title" x="{axis.x0:g}" y="14">{escape(title)}</text>')
    x = axis.x0 + 7.2 * len(title) + 24
    for cls, label in legend:
        swatch = (
            f'<rect class="{escape(cls)}" x="{x + 3:g}" y="5" width="10" height="10"/>'
            if cls.startswith("b-")
            else f'<line class="series {escape(cls)}" x1="{x:g}" x2="{x + 16:g}" y1="10" '
            f'y2="10" stroke-width="3"/>'
        )
        out.append(
            f'{swatch}<text class="legend-text" x="{x + 20:g}" y="14">{escape(label)}</text>'
        )
        x += 30 + 5.6 * len(label)
    for span in spans:
        a, b = axis.x(span.start), axis.x(span.end if span.end is not None else axis.last)
        out.append(
            f'<rect class="fault-span" x="{a:g}" y="{_TOP:g}" width="{max(b - a, 1):g}" '
            f'height="{_BOTTOM - _TOP:g}"><title>fault {escape(span.label)}</title></rect>'
        )
    out.append(
        f'<line class="grid" x1="{axis.x0:g}" x2="{axis.x1:g}" y1="{_y(top / 2, top):g}" '
        f'y2="{_y(top / 2, top):g}"/>'
    )
    for value in (0.0, top / 2, top):
        out.append(
            f'<text class="tick-label" x="{axis.x0 - 6:g}" y="{_y(value, top) + 3:g}" '
            f'text-anchor="end">{escape(num(value, 2))}{escape(unit) if value else ""}</text>'
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
            f'y="{_BOTTOM + 14:g}" text-anchor="middle">{num(tick, 1)}</text>'
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


def _marks(axis: Axis, ticks: Iterable[tuple[int, str]], cls: str) -> list[str]:
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
            f'y2="{_BOTTOM - 8:g}"><title>{escape(title)}</title></line>'
        )
    return out


def draw_charts(run: RunData, axis: Axis, *, done_by_run: int | None = None) -> list[str]:
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
            f'<path class="{cls}" d="{"".join(parts)}"><title>{escape(reason)}: '
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
            f'd="{_line_path(axis, reduced[r], top, step=True)}"><title>{escape(r)}</title>'
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
