"""The run report: a recorded run as one self-contained HTML page.

``write_run_report`` draws the recorded scenario's warehouse (``sim.report.svg``), the
timelines (``sim.report.charts``), a tick selector that shows a tick's working set as
``python -m sim inspect`` does (the ticks worth a look first), the events worth a look,
and the run's summary and settings. It stays small on long runs: a timeline has at most
``max_points`` points, and working sets are embedded for at most ``max_ticks`` ticks.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from runtime.position import finite
from runtime.recording.inspect import brief, damage_notice, tick_ranges, tick_report
from runtime.recording.reader import Recording, Scan
from sim.report.charts import Axis, draw_charts
from sim.report.collect import (
    PRIORITY,
    RunData,
    collect,
    metadata_json,
    scenario_of,
    stride,
)
from sim.report.html import (
    ReportError,
    ReportInfo,
    check_output,
    counts_text,
    escape,
    json_script,
    kv_table,
    num,
    render_page,
    template,
    write_page,
)
from sim.report.svg import draw_map, map_legend
from sim.run.missing_text import cabin_text
from sim.run.summary import recorded_summary
from sim.run.verdict import judge
from sim.world.scenario import Scenario

MAX_POINTS = 1000
"""Points per timeline at most: longer runs are reduced to this many buckets of ticks."""
MAX_TICKS = 200
"""Ticks whose working set is embedded at most: the ones worth a look, then an even sample."""

MAX_EVENT_ROWS = 300
"""Rows of the events table at most (the most serious kinds are kept first)."""

VALUE_WIDTH = 90
"""Characters of a value shown in the tick view (``inspect --json`` has them in full)."""

Json = dict[str, Any]


# -- the working set at chosen ticks ---------------------------------------------------------


def choose(run: RunData, budget: int) -> tuple[list[tuple[int, list[str]]], list[int]]:
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
        rank[tick] = min(rank.get(tick, 99), PRIORITY.get(n.kind, 9))
    if len(recorded) <= budget:
        worth = sorted(why)
        return [(t, why[t]) for t in worth], [t for t in recorded if t not in why]
    reserve = max(budget // 4, budget - len(why))
    worth = sorted(sorted(why, key=lambda t: (rank[t], t))[: budget - reserve])
    taken = set(worth)
    rest = [t for t in recorded if t not in taken]
    sample = stride(rest, budget - len(worth))
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
        f = finite(v)
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


def _summary_html(
    run: RunData, scenario: Scenario | None, summary: Mapping[str, Any] | None
) -> str:
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
            f"{num((run.last + 1) / run.rate_hz, 2)} s at {num(run.rate_hz, 2)} Hz",
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
        ("emergency stops", counts_text(by("emergency_stop"))),
        ("alarms", counts_text(by("alarm"))),
        ("failed actions", str(events["action_failed"])),
        ("re-plans", str(events["replan"])),
        ("cabin failures", str(events["cabin_failed"])),
        ("evictions", f"{sum(evictions.values())} ({counts_text(evictions)})"),
        ("capacity alarms", f"{int(run.alarm.sum())} ticks"),
    ]
    missing = run.counts.get("missing", Counter())
    for cabin in dict.fromkeys([*run.cabins, *run.activity]):
        mine = {
            k.split("\0", 1)[1]: v
            for k, v in sorted(missing.items())
            if k.split("\0", 1)[0] == cabin
        }
        rows.append(
            (f"cabin · {cabin}", cabin_text({**run.activity.get(cabin, {}), "missing": mine}))
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
    out = ["<h3>From the recording</h3>", kv_table(rows)]
    if summary:
        live: list[tuple[str, str]] = []
        for k, v in summary.items():
            if k == "cabins" and isinstance(v, dict):
                live += [(f"cabin · {c}", cabin_text(row)) for c, row in v.items()]
            else:
                live.append((str(k), judge(summary).line if k == "verdict" else _summary_value(v)))
        out += [
            "<h3>From the run</h3>",
            '<p class="note">The summary the run printed (deliveries completed at the '
            "last tick may be missing from the recording, which ends with the tick "
            "that completed them).</p>",
            kv_table(live),
        ]
    return "".join(out)


def _verdict_badge(run: RunData, summary: Mapping[str, Any] | None) -> str:
    """The run's verdict (``sim.run.verdict``) as a badge, judged from the summary the run
    wrote; a run that did not finish has none, and its badge says what the recording shows
    of its safety."""
    if summary is None:
        failed = run.counts["events"]["collision"] + run.counts["events"]["safety_violation"]
        return (
            '<span class="badge bad">a safety violation or a collision happened</span>'
            if failed
            else '<span class="badge ok">no safety violation, no collision</span>'
        ) + ' <span class="note">(the run did not finish: no verdict)</span>'
    verdict = judge(summary)
    style = {"passed": "ok", "cut_short": "cut", "failed": "bad"}[verdict.status]
    return f'<span class="badge {style}">{escape(verdict.line)}</span>'


def _whole(summary: Mapping[str, Any] | None, key: str) -> int | None:
    value = None if summary is None else summary.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _summary_value(value: Any) -> str:
    if isinstance(value, float):
        return num(value, 4)
    if isinstance(value, dict):
        return counts_text({str(k): _summary_value(v) for k, v in value.items()})
    if isinstance(value, list):
        return ", ".join(_summary_value(v) for v in value) or "none"
    return "-" if value is None else str(value)


def _settings_html(run: RunData, scenario: Scenario | None) -> str:
    meta = run.recording.metadata
    faults = metadata_json(run.recording, "faults", [])
    spans = {s.label: s for s in run.faults}
    fault_rows = []
    for label in faults if isinstance(faults, list) else []:
        span = spans.get(str(label))
        when = (
            "not started in the recorded ticks"
            if span is None
            else f"ticks {span.start}-{'' if span.end is None else span.end}"
        )
        fault_rows.append(
            f"<li><code>{escape(label)}</code> <span class='note'>{escape(when)}</span></li>"
        )
    rows = [
        (
            "scenario",
            escape(meta.get("scenario", "?"))
            + (f" <span class='note'>{escape(scenario.description)}</span>" if scenario else ""),
        ),
        ("seed", escape(meta.get("seed", "?"))),
        ("rate", escape(f"{num(run.rate_hz, 2)} Hz")),
        ("working-memory capacity", escape(meta.get("capacity", "?"))),
        ("cabins (in loop order)", escape(", ".join(run.cabins) or "none")),
        ("faults", f"<ul>{''.join(fault_rows)}</ul>" if fault_rows else "none"),
        ("recording", f"<code>{escape(run.recording.path)}</code>"),
        ("recorded by", escape(f"tickwork {meta.get('tickwork_version', '?')}")),
    ]
    out = [kv_table(rows, raw=True)]
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
            f'<details class="spec"><summary><strong>{escape(name)}</strong> '
            f'<span class="note">{escape(" · ".join(short))}</span></summary>'
            f"<pre>{escape(text)}</pre></details>"
        )
    if scenario is not None:
        text = json.dumps(scenario.model_dump(mode="json"), indent=2)
        out.append(
            f'<details class="spec"><summary><strong>scenario '
            f'{escape(scenario.name)}</strong> <span class="note">{len(scenario.shelves)} '
            f"shelves, {len(scenario.docks)} docks, {len(scenario.tasks)} tasks"
            f"</span></summary><pre>{escape(text)}</pre></details>"
        )
    return "".join(out)


def _events_html(run: RunData) -> str:
    shown = [n for n in run.notable if n.kind != "fault_end"]
    if not shown:
        return '<p class="note">No faults, alarms, stops, incidents or deliveries recorded.</p>'
    if len(shown) > MAX_EVENT_ROWS:
        shown = sorted(
            sorted(shown, key=lambda n: (PRIORITY.get(n.kind, 9), n.tick))[:MAX_EVENT_ROWS],
            key=lambda n: n.tick,
        )
    rows = "".join(
        f'<tr class="event-row k-{escape(n.kind)}" data-tick="{n.tick}"><td class="num">{n.tick}'
        f'</td><td class="num">{num(n.tick / run.rate_hz, 2)}</td><td>{escape(n.label)}</td>'
        f"<td>{escape(n.cabin)}</td><td class='value'>{escape(n.detail)}</td></tr>"
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
    scenario = scenario_of(recording)
    run = collect(recording)
    axis = Axis(run.first, run.last, max(1, math.ceil((run.last - run.first + 1) / max_points)))
    drawn = draw_map(run, scenario, max_points=max_points)
    worth, sample = choose(run, max_ticks)
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
    verdict = _verdict_badge(run, summary)
    notices = []
    notice = damage_notice(recording)
    if notice is not None:
        notices.append(f'<p class="notice">{escape(notice)}</p>')
    if scenario is None:
        notices.append(
            '<p class="notice">The recording does not hold its scenario: the map '
            "shows only the trajectory and the markers.</p>"
        )
    length = f"{len(run.ticks)} ticks, {num((run.last + 1) / run.rate_hz, 1)} s simulated"
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
        "title": escape(f"tickwork run · {name} · seed {meta.get('seed', '?')}"),
        "subtitle": f"{escape(length)} · {verdict}",
        "js": template("report.js"),
        "notices": "".join(notices),
        "map": f'<div class="mapwrap">{drawn.svg}{map_legend(run)}</div>',
        "timeline_note": escape(f"Ticks {run.first}-{run.last}, {bucket}; shaded: faults active."),
        "charts": "\n".join(draw_charts(run, axis, done_by_run=_whole(summary, "deliveries_done"))),
        "tick_note": escape(tick_note),
        "events": _events_html(run),
        "summary": _summary_html(run, scenario, summary),
        "settings": _settings_html(run, scenario),
        "data": json_script("report-data", data),
    }
    page = render_page("run.html", parts, scripts=True)
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
    written = write_page(out, page)
    return ReportInfo(**{**info.as_json(), "path": os.fspath(out), "bytes": written})
