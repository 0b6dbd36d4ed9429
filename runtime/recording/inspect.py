"""Archaeology on a recording: what each cabin saw at a tick, one key's history, what changed.

Each query takes an open ``Recording`` and returns a plain, JSON-able dict: the
command line prints it as one JSON object (``--json``) or as tables, from the same
dict. ``open_recording`` is how every command opens a file: a damaged file is read
up to its break and the caller is told so once. A query the recording cannot
answer (a tick it does not hold, a cabin it does not know, a key it never saw)
raises ``InspectError``; a file that is not a tickwork recording raises
``RecordingError``.

Values stay in their recorded JSON form (``runtime.jsonable.to_json``):
``runtime.jsonable.from_json`` turns one back into the frozen value a cabin saw.
"""

from __future__ import annotations

import difflib
import json
import math
import shlex
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from runtime import jsondata
from runtime.errors import TickworkError
from runtime.patterns import matches, overlaps
from runtime.recording.format import (
    BOARD,
    DECISIONS,
    EVICTIONS,
    STATS,
    WORKING_SET,
    EvictionRecord,
    ItemRecord,
    ViewRecord,
    WorkingSetRecord,
)
from runtime.recording.reader import Recording, RecordingError, repair
from runtime.scratchpad import memory_key as _held
from runtime.scratchpad import view_key as _shown

Json = dict[str, Any]


class InspectError(TickworkError, ValueError):
    """A question the recording cannot answer; the message says what it does hold."""


# -- opening ---------------------------------------------------------------------------------


def open_recording(path: str | Path, *, warn: Callable[[str], None] | None = None) -> Recording:
    """Open a recording; if it is damaged, read it up to the break and ``warn`` once."""
    recording = Recording.open(path)
    notice = damage_notice(recording)
    if notice is not None and warn is not None:
        warn(notice)
    return recording


def damage_notice(recording: Recording) -> str | None:
    """One sentence on how much of a damaged recording was read; None when it is complete."""
    result = recording.scan
    if result.complete:
        return None
    ticks = recording.ticks()
    where = (
        f"{result.path} is damaged at byte {result.good_bytes} of {result.size} ({result.cause})"
    )
    if "run" not in result.metadata:
        return f"{where}; nothing before it can be read or recovered"
    if not ticks:
        read = "no tick was recorded before it"
    elif result.skipped:
        stretches = len(result.skipped)
        read = (
            f"read {len(ticks)} tick{'s' if len(ticks) != 1 else ''} ({tick_ranges(ticks)}), "
            f"passing over {stretches} damaged stretch{'es' if stretches != 1 else ''} "
            f"({result.dropped_bytes} bytes)"
        )
    else:
        plural = "s" if len(ticks) != 1 else ""
        read = f"read {len(ticks)} tick{plural} ({tick_ranges(ticks)}) up to there"
    return (
        f"{where}; {read} (python -m sim repair {shlex.quote(result.path)} writes a complete copy)"
    )


def tick_ranges(ticks: Sequence[int]) -> str:
    """``[0, 1, 2, 5, 6]`` → ``"0-2, 5-6"``; ``"none"`` for no ticks."""
    spans: list[str] = []
    start = prev = None
    for t in sorted(ticks):
        if prev is not None and t == prev + 1:
            prev = t
            continue
        if start is not None:
            spans.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = t
    if start is not None:
        spans.append(f"{start}-{prev}" if prev != start else str(start))
    return ", ".join(spans) or "none"


# -- repair ----------------------------------------------------------------------------------


def repair_report(path: str | Path, out: str | Path | None = None) -> Json:
    """Repair ``path`` (into ``out``, or in place) and say how much was recovered.

    A complete recording is left unchanged (and nothing is written to ``out``).
    """
    result = repair(path, out)
    recording = Recording(result)
    ticks = recording.ticks()
    last = ticks[-1] if ticks else None
    report: Json = {
        "path": result.path,
        "complete": result.complete,
        "repaired": not result.complete,
        "out": None if result.complete else str(out if out is not None else path),
        "size": result.size,
        "messages": len(result.messages),
        "ticks": len(ticks),
        "tick_range": tick_ranges(ticks),
        "first_tick": ticks[0] if ticks else None,
        "last_tick": last,
        "break_at": None if result.complete else result.good_bytes,
        "bytes_recovered": result.size - result.dropped_bytes,
        "bytes_dropped": result.dropped_bytes,
        "skipped": [{"start": s.start, "end": s.end, "cause": s.cause} for s in result.skipped],
        "cause": result.cause,
        "last_tick_partial": last is not None and recording.one(STATS, last) is None,
        "messages_by_channel": recording.counts(),
    }
    return report


# -- one tick --------------------------------------------------------------------------------


def tick_report(recording: Recording, tick: int, *, cabin: str | None = None) -> Json:
    """What each cabin (or just ``cabin``) saw at ``tick``, what it lacked, and what it decided.

    ``cabins[name]``: ``items`` (key → provenance, the filter that let it in and the
    value), ``lost`` (key → the capacity eviction of what its spec selected and memory
    did not keep at this freeze; None for a recording whose views do not say),
    ``missing`` (pattern → reason, plus the eviction behind an ``evicted``
    reason), ``suppressed`` (patterns hidden by a fault) and ``decision`` (its outbox,
    or its failure; None if the file breaks before it; for an asynchronous cabin, the
    decision it made on this tick's view, recorded at the tick it came back at, with
    ``decided_tick``, ``applied_tick`` and ``status``). ``returned``: the asynchronous
    decisions that came back at this tick, by cabin (an asynchronous cabin that was
    deciding at this tick has no view here). ``evicted``: what working memory let go at
    this tick's freeze. ``unviewed``: working-set items that no cabin's spec selected
    this tick (only without ``cabin``).
    """
    ws = _working_set(recording, tick)
    items = ws["items"]
    views = ws["views"]
    names = _cabins(recording, views, cabin, tick)
    decisions = recording.one(DECISIONS, tick)
    outboxes = decisions["cabins"] if decisions else None
    evictions = recording.one(EVICTIONS, tick)
    capacity = {
        e["key"]: e
        for e in (evictions["evictions"] if evictions else [])
        if e["reason"] == "capacity"
    }
    cabins: Json = {}
    for name in names:
        view = views[name]
        lost = view.get("evicted")
        cabins[name] = {
            "items": {
                key: {"via": via, **_item(items, name, key)} for key, via in view["items"].items()
            },
            "lost": None
            if lost is None
            else {key: dict(capacity.get(_held(name, key)) or {"key": key}) for key in lost},
            "missing": {
                pattern: _missing(recording, tick, name, pattern, reason)
                for pattern, reason in view["missing"].items()
            },
            "suppressed": list(view["suppressed"]),
            "decision": _decided_on(recording, name, tick, outboxes),
        }
    report: Json = {
        "recording": recording.path,
        "damaged": recording.damaged,
        "tick": tick,
        "time": ws["time"],
        "versions": ws["versions"],
        "capacity_alarm": ws.get("capacity_alarm", False),
        "occupancy": ws.get("occupancy"),
        "pressure": {
            name: list(view["evicted"]) for name, view in views.items() if view.get("evicted")
        },
        "working_set_size": len(items),
        "cabins": cabins,
        "evicted": None if evictions is None else evictions["evictions"],
        "decisions_recorded": decisions is not None,
        "returned": {
            n: d
            for n, d in (outboxes or {}).items()
            if "decided_tick" in d and (cabin is None or n == cabin)
        },
    }
    if cabin is None:
        seen = {_held(name, key) for name in views for key in views[name]["items"]}
        report["unviewed"] = {k: v for k, v in items.items() if k not in seen}
    return report


def _missing(recording: Recording, tick: int, cabin: str, pattern: str, reason: str) -> Json:
    entry: Json = {"reason": reason}
    if reason == "evicted":
        entry["eviction"] = _last_eviction(recording, tick, cabin, pattern)
    return entry


def _last_eviction(recording: Recording, tick: int, cabin: str, pattern: str) -> Json | None:
    """The latest eviction, at or before ``tick``, of a key ``pattern`` matches."""
    for t in range(tick, -1, -1):
        message = recording.one(EVICTIONS, t)
        for e in reversed(message["evictions"] if message else []):
            if matches(_shown(cabin, e["key"]), pattern):
                return {"tick": t, **e}
    return None


# -- one key ---------------------------------------------------------------------------------


def key_history(recording: Recording, key: str, *, cabin: str | None = None) -> Json:
    """The history of ``key``: every tick it was in the working set, in a view, missing
    or evicted (``history``; ``lost_by``: the cabins whose view selected it and lost it to
    capacity at that tick), and every board write or delete of it (``board``)."""
    require_ticks(recording)
    names = _check_cabin(recording, cabin)
    evictions: dict[int, list[EvictionRecord]] = {}
    for t, message in recording.records(EVICTIONS):
        for e in message["evictions"]:
            if any(_shown(n, e["key"]) == key for n in names):
                evictions.setdefault(t, []).append(e)
    history: list[Json] = []
    for t, ws in recording.records(WORKING_SET):
        row = _key_row(t, ws, key, cabin, evictions.get(t))
        if row is not None:
            history.append(row)
    board = [
        {"tick": t, **{k: m.get(k) for k in ("seq", "stamp", "deleted", "value", "ttl", "source")}}
        for t, m in recording.records(BOARD)
        if m["key"] == key
    ]
    if not history and not board:
        raise InspectError(_unknown_key(recording, key))
    return {
        "recording": recording.path,
        "damaged": recording.damaged,
        "key": key,
        "cabin": cabin,
        "ticks": tick_ranges(recording.ticks()),
        "in_working_set": tick_ranges([r["tick"] for r in history if r["in_working_set"]]),
        "history": history,
        "board": board,
    }


def _key_row(
    tick: int,
    ws: WorkingSetRecord,
    key: str,
    cabin: str | None,
    evicted: list[EvictionRecord] | None,
) -> Json | None:
    items, views = ws["items"], ws["views"]
    names = [cabin] if cabin is not None else list(views)
    in_view: Json = {}
    missing: Json = {}
    lost: list[str] = []
    held: ItemRecord | None = items.get(key)
    for name in names:
        view = views.get(name)
        if view is None:
            continue
        via = view["items"].get(key)
        if via is not None:
            in_view[name] = via
            held = held or items.get(_held(name, key))
        if key in view.get("evicted", ()):
            lost.append(name)
        gaps = {p: r for p, r in view["missing"].items() if overlaps(key, p)}
        if gaps:
            missing[name] = gaps
    if held is None and not in_view and not missing and not evicted:
        return None
    row: Json = {"tick": tick, "time": ws["time"], "in_working_set": held is not None}
    if held is not None:
        row.update(held)
    row.update({"views": in_view, "missing": missing, "evicted": evicted or [], "lost_by": lost})
    return row


def _unknown_key(recording: Recording, key: str) -> str:
    known: set[str] = set()
    for _, ws in recording.records(WORKING_SET):
        known.update(ws["items"])
        for view in ws["views"].values():
            known.update(view["items"])
            known.update(view["missing"])
    for _, m in recording.records(BOARD):
        known.add(m["key"])
    close = difflib.get_close_matches(key, sorted(known), n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return (
        f"key {key!r} never appears in {recording.path} (in no working set, view, "
        f"missing list, eviction or board write){hint}"
    )


# -- two ticks -------------------------------------------------------------------------------


def diff_report(recording: Recording, first: int, second: int, *, cabin: str | None = None) -> Json:
    """What changed in the working set from tick ``first`` to tick ``second``.

    ``added``/``removed``: items (with provenance) in one working set and not the
    other; ``changed``: items whose value or importance changed (from → to);
    ``evicted_between``: evictions at the ticks after the earlier one, up to the later
    one (all of them: an evicted item is in no view); ``cabins[name]``: items that came
    into (``in``) or left (``out``) its view, a changed filter (``via_changed``), and
    missing items that appeared, went or changed reason. With ``cabin``, only that
    cabin, and added/removed/changed only for the keys its view held at either tick.
    """
    wa, wb = _working_set(recording, first), _working_set(recording, second)
    ia, ib = wa["items"], wb["items"]
    va, vb = wa["views"], wb["views"]
    names = _cabins(recording, {**va, **vb}, cabin, second)
    scope: set[str] | None = None
    if cabin is not None:
        scope = {_held(cabin, k) for v in (va, vb) if cabin in v for k in v[cabin]["items"]}

    def wanted(key: str) -> bool:
        return scope is None or key in scope

    changed: Json = {}
    for key in ia.keys() & ib.keys():
        if not wanted(key):
            continue
        a, b = ia[key], ib[key]
        delta: Json = {}
        if a["value"] != b["value"]:
            delta["value"] = {"from": a["value"], "to": b["value"]}
        if a["importance"] != b["importance"]:
            delta["importance"] = {"from": a["importance"], "to": b["importance"]}
        if delta:
            changed[key] = delta
    low, high = sorted((first, second))
    between = [
        {"tick": t, **e}
        for t in range(low + 1, high + 1)
        for message in recording.at(EVICTIONS, t)
        for e in message["evictions"]
    ]
    cabins: Json = {}
    for name in names:
        ai, am = _view_parts(va.get(name))
        bi, bm = _view_parts(vb.get(name))
        cabins[name] = {
            "in": {k: bi[k] for k in bi if k not in ai},
            "out": {k: ai[k] for k in ai if k not in bi},
            "via_changed": {
                k: {"from": ai[k], "to": bi[k]} for k in ai if k in bi and ai[k] != bi[k]
            },
            "missing_new": {p: bm[p] for p in bm if p not in am},
            "missing_gone": {p: am[p] for p in am if p not in bm},
            "missing_changed": {
                p: {"from": am[p], "to": bm[p]} for p in am if p in bm and am[p] != bm[p]
            },
        }
    return {
        "recording": recording.path,
        "damaged": recording.damaged,
        "from": first,
        "to": second,
        "time": {"from": wa["time"], "to": wb["time"]},
        "versions": {"from": wa["versions"], "to": wb["versions"]},
        "size": {"from": len(ia), "to": len(ib)},
        "added": {k: ib[k] for k in ib if k not in ia and wanted(k)},
        "removed": {k: ia[k] for k in ia if k not in ib and wanted(k)},
        "changed": dict(sorted(changed.items())),
        "evicted_between": between,
        "cabins": cabins,
    }


# -- for people ------------------------------------------------------------------------------


def compress(rows: Iterable[Json], *, same: Callable[[Json], Hashable]) -> list[Json]:
    """Runs of rows of consecutive ticks that ``same`` says are alike, as
    ``{"first": tick, "last": tick, "row": first row of the run}``."""
    runs: list[Json] = []
    previous: Hashable = None
    for row in rows:
        tag = same(row)
        if runs and row["tick"] == runs[-1]["last"] + 1 and tag == previous:
            runs[-1]["last"] = row["tick"]
        else:
            runs.append({"first": row["tick"], "last": row["tick"], "row": row})
        previous = tag
    return runs


def brief(value: Any, width: int = 48, *, digits: int = 4) -> str:
    """A short, readable form of a recorded JSON value: features and events by name,
    floats to ``digits`` significant digits, cut at ``width`` characters."""
    text = _text(value, digits)
    return text if len(text) <= width else text[: width - 1] + "…"


def _text(value: Any, digits: int) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if math.isfinite(value) else repr(value)
    if isinstance(value, (int, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_text(v, digits) for v in value) + "]"
    if isinstance(value, dict):
        if isinstance(value.get("$feature"), dict):
            f = value["$feature"]
            return f"<{f.get('kind')} {f.get('id')}>"
        if isinstance(value.get("$event"), dict):
            e = value["$event"]
            return f"<event {e.get('kind')} #{e.get('seq')} {_text(e.get('data'), digits)}>"
        if "$wkb" in value:
            return "<geometry>"
        if "$ndarray" in value:
            return f"<array {value.get('dtype')}>"
        if "$float" in value:
            return str(value["$float"])
        if "$set" in value:
            return "{" + ", ".join(_text(v, digits) for v in value["$set"]) + "}"
        if "$pairs" in value:
            pairs = (f"{_text(k, digits)}: {_text(v, digits)}" for k, v in value["$pairs"])
            return "{" + ", ".join(pairs) + "}"
        if "$repr" in value:
            return str(value["$repr"])
        return "{" + ", ".join(f"{k}: {_text(v, digits)}" for k, v in value.items()) + "}"
    return repr(value)


# -- helpers ---------------------------------------------------------------------------------


def _working_set(recording: Recording, tick: int) -> WorkingSetRecord:
    ws = recording.one(WORKING_SET, tick)
    if ws is not None:
        return ws
    ticks = require_ticks(recording)
    raise InspectError(
        f"tick {tick} is not in {recording.path}: it holds ticks {tick_ranges(ticks)}"
    )


def require_ticks(recording: Recording) -> list[int]:
    """The recording's ticks; ``InspectError`` for a recording that holds none (there is
    nothing to inspect, diagnose, replay or report)."""
    ticks = recording.ticks()
    if not ticks:
        broke = (
            f": it breaks at byte {recording.scan.good_bytes} of {recording.scan.size}, "
            "before its first tick"
            if recording.damaged
            else ""
        )
        raise InspectError(f"{recording.path} holds no ticks{broke}")
    return ticks


def _view_parts(view: ViewRecord | None) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """A view's items (key → via) and missing items (pattern → reason); none for no view."""
    return ({}, {}) if view is None else (view["items"], view["missing"])


def _known_cabins(recording: Recording, views: Mapping[str, Any]) -> list[str]:
    try:
        listed = jsondata.parse(recording.metadata.get("cabins", "[]"))
    except ValueError:
        listed = []
    names = [str(n) for n in listed] if isinstance(listed, list) else []
    return names + [n for n in views if n not in names]


def _decided_on(
    recording: Recording, cabin: str, tick: int, outboxes: Mapping[str, Any] | None
) -> Any:
    """The decision ``cabin`` made on its view of ``tick``: recorded at ``tick`` for a
    synchronous cabin, at the tick it came back at for an asynchronous one."""
    if outboxes is None:
        return None
    here = outboxes.get(cabin)
    if here is not None and "decided_tick" not in here:
        return here
    for _, message in recording.records(DECISIONS):
        found = message["cabins"].get(cabin)
        if found is not None and found.get("decided_tick") == tick:
            return found
    return None


def _cabins(
    recording: Recording, views: Mapping[str, Any], cabin: str | None, tick: int
) -> list[str]:
    if cabin is None:
        return list(views)
    if cabin not in views:
        known = _known_cabins(recording, views)
        if cabin in known:
            return []  # an asynchronous cabin deciding at this tick took no view
        raise InspectError(
            f"no cabin {cabin!r} at tick {tick} of {recording.path} "
            f"(cabins: {', '.join(known) or 'none'})"
        )
    return [cabin]


def _check_cabin(recording: Recording, cabin: str | None) -> list[str]:
    """``[cabin]`` if the recording knows it, or all the cabins it knows for None."""
    first = recording.ticks()[:1]
    views = _working_set(recording, first[0])["views"] if first else {}
    known = _known_cabins(recording, views)
    if cabin is None:
        return known
    if cabin not in known:
        raise InspectError(
            f"no cabin {cabin!r} in {recording.path} (cabins: {', '.join(known) or 'none'})"
        )
    return [cabin]


def _item(items: Mapping[str, ItemRecord], cabin: str, key: str) -> Json:
    item = items.get(key)
    if item is None:
        item = items.get(_held(cabin, key))
    return dict(item) if item is not None else {}


__all__ = [
    "InspectError",
    "RecordingError",
    "brief",
    "compress",
    "damage_notice",
    "diff_report",
    "key_history",
    "open_recording",
    "repair_report",
    "require_ticks",
    "tick_ranges",
    "tick_report",
]
