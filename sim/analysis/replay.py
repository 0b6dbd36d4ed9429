"""Replay: feed a recording's working sets back to its cabins and look for decision drift.

A run is deterministic (sim clock + scenario + seed), and a cabin decides only
from its frozen view, so fresh cabins fed the recorded views tick by tick must
decide exactly what the recorded ones did. ``replay`` rebuilds each tick's
``WorkingSet`` from ``/working_set`` and ``/evictions`` (values decoded exactly
with ``from_json``), takes each cabin's view of it with the recorded
suppressions, runs the cabins in the recorded loop order from the first recorded
tick (cabins keep private state between ticks), and compares each outbox with
``/decisions`` in JSON form: writes, events, commands, reactions, or the failure
of a cabin that raised. Any difference is decision drift: a cabin that reads
something other than its view (a clock, global random, a shared counter), or
code that changed since the recording.

An asynchronous cabin (``runtime.asynchronous``) is replayed on the views it was given,
at the ticks it took them, and each replayed outbox is compared with the recorded
decision tagged with that tick as its ``decided_tick`` (recorded at the tick it came back
at, applied or dropped as late). A decision still in flight when the recording ends has
nothing to be compared with, and is noted.

Faults recorded in the run's metadata are applied again where they act on the
cabins themselves (crashes, and events lost from outboxes); the others
(missing items, stale keys, drop-outs, map loss) are already in the recorded
views. Notes a cabin writes to its scratchpad are not in ``/decisions``, so they
are not compared; the notes it reads are in its view like any other item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime import jsondata
from runtime.agent.memory import LongTermMemory
from runtime.cabin import Cabin, Outbox, timing_of
from runtime.errors import TickworkError
from runtime.freeze import FrozenDict
from runtime.jsonable import from_json
from runtime.memory import Eviction, WorkItem
from runtime.pack import CabinView, Occupancy, Selection, Versions, WorkingSet
from runtime.recording.format import (
    DECISIONS,
    EVICTIONS,
    WORKING_SET,
    DecisionRecord,
    EvictionsRecord,
    ViewRecord,
    WorkingSetRecord,
)
from runtime.recording.inspect import require_ticks
from runtime.recording.reader import Recording
from runtime.recording.writer import decision_json, failed_decision
from runtime.scratchpad import memory_key
from runtime.spec import ContextSpec

FIELDS = ("writes", "events", "commands", "reactions", "memories", "failed")
"""The parts of a decision that are compared, in report order."""

_NOTE_VIA = "note:scratchpad"


class ReplayError(TickworkError):
    """A recording that cannot be replayed as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class Difference:
    """One part of a decision that differs: the first differing entry of a list, or the
    failure (``index`` None)."""

    field: str
    index: int | None
    recorded: Any
    replayed: Any

    def as_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "index": self.index,
            "recorded": self.recorded,
            "replayed": self.replayed,
        }


@dataclass(frozen=True, slots=True)
class Drift:
    """A tick at which a cabin decided otherwise than in the recording."""

    tick: int
    cabin: str
    differences: tuple[Difference, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(d.field for d in self.differences)

    def describe(self) -> str:
        parts = []
        for d in self.differences:
            where = "" if d.index is None else f"[{d.index}]"
            parts.append(
                f"{d.field}{where}: recorded {_short(d.recorded)}, replayed {_short(d.replayed)}"
            )
        return "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {
            "tick": self.tick,
            "cabin": self.cabin,
            "fields": list(self.fields),
            "differences": [d.as_json() for d in self.differences],
        }


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay found."""

    path: str
    cabins: tuple[str, ...]
    ticks: int
    first_tick: int | None
    last_tick: int | None
    faults: tuple[str, ...] = ()
    damaged: bool = False
    drifts: tuple[Drift, ...] = ()
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def drifted(self) -> bool:
        return bool(self.drifts)

    @property
    def drift_ticks(self) -> list[int]:
        """The ticks with drift, ascending, each once."""
        return sorted({d.tick for d in self.drifts})

    def by_cabin(self) -> dict[str, int]:
        """Cabin → number of ticks it drifted at."""
        counts: dict[str, int] = {}
        for d in self.drifts:
            counts[d.cabin] = counts.get(d.cabin, 0) + 1
        return counts

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "cabins": list(self.cabins),
            "ticks": self.ticks,
            "first_tick": self.first_tick,
            "last_tick": self.last_tick,
            "faults": list(self.faults),
            "damaged": self.damaged,
            "drift": self.drifted,
            "drift_ticks": self.drift_ticks,
            "drifts_by_cabin": self.by_cabin(),
            "drifts": [d.as_json() for d in self.drifts],
            "skipped": list(self.skipped),
            "notes": list(self.notes),
        }


# -- rebuilding views ------------------------------------------------------------------------


class ViewBuilder:
    """Rebuilds the views of recorded ticks exactly as the cabins saw them.

    ``specs`` give each cabin's required patterns (for views with suppressions).
    Decoded values are reused from one tick to the next while their JSON form is
    unchanged, as working memory keeps one frozen value while it is unchanged.
    """

    def __init__(self, specs: Mapping[str, ContextSpec] | None = None) -> None:
        self.specs: Mapping[str, ContextSpec] = specs or {}
        self._values: dict[str, tuple[str, Any]] = {}

    def value(self, key: str, data: Any) -> Any:
        text = json.dumps(data, separators=(",", ":"))
        hit = self._values.get(key)
        if hit is not None and hit[0] == text:
            return hit[1]
        value = from_json(data)
        self._values[key] = (text, value)
        return value

    def working_set(
        self, message: WorkingSetRecord, evictions: EvictionsRecord | None = None
    ) -> WorkingSet:
        """The ``WorkingSet`` of one ``/working_set`` message (and its ``/evictions``)."""
        tick = message["tick"]
        try:
            v = message["versions"]
            versions = Versions(v["board_seq"], v["map_version"], v["log_seq"])
            held: dict[str, WorkItem] = {}
            for key, it in message["items"].items():
                held[key] = WorkItem(
                    key,
                    self.value(key, it["value"]),
                    it["importance"],
                    it["last_used"],
                    it["first_seen"],
                    it["source"],
                    it["stamp"],
                    it["seq"],
                )
            gone = tuple(
                Eviction(tick, e["key"], e["importance"], e["last_used"], e["reason"])
                for e in (evictions["evictions"] if evictions is not None else ())
            )
            capacity = {e.key: e for e in gone if e.reason == "capacity"}
            selections = {
                cabin: self._selection(tick, cabin, view, held, capacity)
                for cabin, view in message["views"].items()
            }
            load = message.get("occupancy") or {"held": 0, "pinned": 0, "capacity": 0}
            occupancy = Occupancy(load["held"], load["pinned"], load["capacity"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReplayError(
                f"tick {tick}: the recorded working set cannot be rebuilt "
                f"({type(exc).__name__}: {exc})"
            ) from None
        return WorkingSet(
            tick=tick,
            time=message["time"],
            versions=versions,
            items=FrozenDict(held),
            evictions=gone,
            capacity_alarm=message.get("capacity_alarm", False),
            selections=FrozenDict(selections),
            occupancy=occupancy,
        )

    def views(
        self, message: WorkingSetRecord, evictions: EvictionsRecord | None = None
    ) -> dict[str, CabinView]:
        """Cabin → its view at the tick of ``message``, checked against the recording."""
        ws = self.working_set(message, evictions)
        out: dict[str, CabinView] = {}
        for cabin, recorded in message["views"].items():
            view = ws.view(cabin, suppress=tuple(recorded["suppressed"]))
            _check_view(view, recorded)
            out[cabin] = view
        return out

    def _selection(
        self,
        tick: int,
        cabin: str,
        recorded: ViewRecord,
        held: Mapping[str, WorkItem],
        capacity: Mapping[str, Eviction],
    ) -> Selection:
        items: dict[str, WorkItem] = {}
        for key, via in recorded["items"].items():
            base = held.get(memory_key(cabin, key) if via == _NOTE_VIA else key)
            if base is None:
                raise ReplayError(
                    f"tick {tick}: cabin {cabin!r} saw {key!r}, but the "
                    "recorded working set does not hold it"
                )
            items[key] = WorkItem(
                key,
                base.value,
                base.importance,
                base.last_used,
                base.first_seen,
                base.source,
                base.stamp,
                base.seq,
                via,
            )
        missing = dict(recorded["missing"])
        spec = self.specs.get(cabin)
        required = tuple(spec.required) if spec is not None else tuple(missing)
        events = {
            item.seq: item.value
            for item in items.values()
            if item.source == "log" and item.key.startswith("event:")
        }
        return Selection(
            required=required,
            items=FrozenDict(items),
            missing=FrozenDict(missing),
            nearby_map=tuple(_feature(tick, cabin, items, i) for i in recorded["nearby_map"]),
            corridor_map=tuple(_feature(tick, cabin, items, i) for i in recorded["corridor_map"]),
            recent_events=tuple(_event(tick, cabin, events, s) for s in recorded["recent_events"]),
            evicted=FrozenDict(
                {key: _lost(tick, cabin, key, capacity) for key in recorded.get("evicted", ())}
            ),
        )


def _lost(tick: int, cabin: str, key: str, capacity: Mapping[str, Eviction]) -> Eviction:
    """The capacity eviction of the item ``cabin``'s view lost as ``key``, under that key."""
    found = capacity.get(memory_key(cabin, key))
    if found is None:
        raise ReplayError(
            f"tick {tick}: cabin {cabin!r} lost {key!r} to capacity, but the recorded "
            "evictions of that tick do not hold it"
        )
    return Eviction(tick, key, found.importance, found.last_used, found.reason)


def _feature(tick: int, cabin: str, items: Mapping[str, WorkItem], feature_id: str) -> Any:
    item = items.get(f"map:{feature_id}")
    if item is None:
        raise ReplayError(
            f"tick {tick}: cabin {cabin!r} had map feature {feature_id!r} "
            "nearby, but its view does not hold it"
        )
    return item.value


def _event(tick: int, cabin: str, events: Mapping[int, Any], seq: int) -> Any:
    if seq not in events:
        raise ReplayError(
            f"tick {tick}: cabin {cabin!r} had event {seq} in its window, but "
            "its view does not hold it"
        )
    return events[seq]


def _check_view(view: CabinView, recorded: ViewRecord) -> None:
    """Raise ``ReplayError`` unless ``view`` is what the recording says the cabin saw."""
    checks: dict[str, tuple[Any, Any]] = {
        "items": (list(view), list(recorded["items"])),
        "missing": (dict(view.missing), recorded["missing"]),
        "nearby_map": ([f.id for f in view.nearby_map], recorded["nearby_map"]),
        "corridor_map": ([f.id for f in view.corridor_map], recorded["corridor_map"]),
        "recent_events": ([e.seq for e in view.recent_events], recorded["recent_events"]),
    }
    if "evicted" in recorded:
        checks["evicted"] = (list(view.evicted), recorded["evicted"])
    for name, (rebuilt, wanted) in checks.items():
        if rebuilt != wanted:
            raise ReplayError(
                f"tick {view.tick}: the rebuilt view of {view.cabin!r} differs "
                f"from the recorded one in {name}: {rebuilt!r} != {wanted!r}"
            )


# -- decisions -------------------------------------------------------------------------------


def compare(recorded: Mapping[str, Any], replayed: Mapping[str, Any]) -> tuple[Difference, ...]:
    """The parts of two decisions (JSON forms) that differ; floats must match exactly."""
    found: list[Difference] = []
    for name in FIELDS:
        missing: list[Any] | None = None if name == "failed" else []  # not yet recorded then
        a, b = recorded.get(name, missing), replayed.get(name, missing)
        if name == "failed" or not isinstance(a, list) or not isinstance(b, list):
            if _text(a) != _text(b):
                found.append(Difference(name, None, a, b))
            continue
        if _text(a) == _text(b):
            continue
        index = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if _text(x) != _text(y)),
            min(len(a), len(b)),
        )
        found.append(
            Difference(
                name,
                index,
                a[index] if index < len(a) else None,
                b[index] if index < len(b) else None,
            )
        )
    return tuple(found)


def _text(value: Any) -> str:
    # JSON text tells 1 from 1.0 and -0.0 from 0.0, and keeps float digits exact
    return json.dumps(value, separators=(",", ":"))


def _short(value: Any, limit: int = 120) -> str:
    text = "nothing" if value is None else _text(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- replay ----------------------------------------------------------------------------------


def recorded_specs(recording: Recording) -> dict[str, ContextSpec]:
    """The cabin specs a recording was made with."""
    from pydantic import ValidationError

    try:
        return {
            name: ContextSpec.model_validate(data) for name, data in recording.spec_json().items()
        }
    except (ValueError, ValidationError) as exc:
        raise ReplayError(f"{recording.path}: the recorded specs cannot be read: {exc}") from None


def recorded_faults(recording: Recording) -> list[Any]:
    """The faults a recording was made with (``sim.faults.model`` models)."""
    from sim.faults.model import FaultError, parse_fault

    try:
        labels = jsondata.parse(recording.metadata.get("faults", "[]"))
        return [parse_fault(str(label)) for label in labels]
    except (ValueError, TypeError, FaultError) as exc:
        raise ReplayError(f"{recording.path}: the recorded faults cannot be read: {exc}") from None


def _cabin_order(recording: Recording, first_tick: int | None) -> list[str]:
    if first_tick is not None:
        message = recording.one(WORKING_SET, first_tick)
        if message is not None:
            return list(message["views"])
    try:
        listed = jsondata.parse(recording.metadata.get("cabins", "[]"))
    except ValueError as exc:
        raise ReplayError(f"{recording.path}: the run metadata's cabins: {exc}") from None
    if not isinstance(listed, list):
        raise ReplayError(f"{recording.path}: the run metadata's cabins are not a list")
    return [str(name) for name in listed]


def _long_term_at_start(recording: Recording) -> LongTermMemory | None:
    """An in-memory long-term memory holding what the recorded run's planner knew when it
    started (None for a run without one), so the replayed planner plans and learns alike."""
    text = recording.metadata.get("long_term")
    if text is None:
        return None
    try:
        data = jsondata.parse(text)
        scope = {str(k): str(v) for k, v in data["scope"].items()}
        records = [
            (str(r["content"]), from_json(r["metadata"]), r["stamp"]) for r in data["records"]
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReplayError(
            f"{recording.path}: the run metadata's long-term memory cannot be "
            f"read ({type(exc).__name__}: {exc})"
        ) from None
    memory = LongTermMemory(":memory:")
    try:
        for content, metadata, stamp in records:
            memory.remember(content, scope=scope, metadata=metadata, stamp=stamp)
    except (ValueError, TypeError) as exc:
        memory.close()
        raise ReplayError(
            f"{recording.path}: a fact in the run metadata's long-term memory "
            f"cannot be kept ({type(exc).__name__}: {exc})"
        ) from None
    return memory


def build_cabins(
    recording: Recording,
    order: Sequence[str],
    specs: Mapping[str, ContextSpec],
    given: Sequence[Cabin],
) -> tuple[list[Cabin], list[str], list[str]]:
    """The cabins to replay in ``order``: ``given`` ones by name, built-in ones built fresh
    on the recorded specs. Also the recorded cabins left out, and notes."""
    from sim.run.harness import BUILTIN_CABINS, builtin_cabins

    by_name: dict[str, Cabin] = {}
    for cabin in given:
        if cabin.name in by_name:
            raise ReplayError(f"two cabins to replay are named {cabin.name!r}")
        by_name[cabin.name] = cabin
    unknown = [n for n in by_name if n not in order]
    if unknown:
        raise ReplayError(
            f"cabin(s) {', '.join(map(repr, unknown))} did not run in "
            f"{recording.path} (its cabins: {', '.join(order) or 'none'})"
        )
    notes: list[str] = []
    for name, cabin in by_name.items():
        if name in specs and cabin.spec != specs[name]:
            notes.append(f"cabin {name!r} is replayed on a spec that differs from the recorded one")
    wanted = [n for n in order if n in BUILTIN_CABINS and n not in by_name]
    if wanted:
        known = _long_term_at_start(recording)
        try:
            built = {
                c.name: c
                for c in builtin_cabins(
                    specs,
                    long_term=known,
                    memory_scope=None
                    if known is None
                    else dict(jsondata.parse(recording.metadata["long_term"])["scope"]),
                )
            }
        except ValueError as exc:
            raise ReplayError(f"{recording.path}: {exc}") from None
        for name in wanted:
            by_name[name] = built[name]
    cabins = [by_name[n] for n in order if n in by_name]
    skipped = [n for n in order if n not in by_name]
    return cabins, skipped, notes


def replay(
    recording: Recording | str | Path, *, cabins: Sequence[Cabin] | None = None
) -> ReplayReport:
    """Replay ``recording`` and report every tick at which a cabin's decision differs.

    ``cabins`` replace or add to the cabins built from the recorded specs (the
    built-in planner, executor and monitor), by name; a recorded cabin that is
    neither built in nor given is left out (``ReplayReport.skipped``).
    """
    from sim.faults.injection import FaultyCabin
    from sim.faults.model import FaultPlan

    rec = recording if isinstance(recording, Recording) else Recording.open(recording)
    ticks = require_ticks(rec)  # with no tick there is nothing to replay, so nothing matched
    specs = recorded_specs(rec)
    faults = recorded_faults(rec)
    order = _cabin_order(rec, ticks[0])
    run, skipped, notes = build_cabins(rec, order, specs, list(cabins or ()))
    if faults:
        plan = FaultPlan(faults)
        run = [FaultyCabin(c, plan) for c in run]
    if ticks and ticks[0] != 0:
        notes.append(
            f"the recording starts at tick {ticks[0]}: cabins start from their initial state there"
        )
    builder = ViewBuilder(specs=specs)
    drifts: list[Drift] = []
    done: list[int] = []
    came_back = _async_decisions(rec)
    asynchronous = {c.name for c in run if timing_of(c).is_async} | {n for n, _ in came_back}
    for tick in ticks:
        message = rec.one(WORKING_SET, tick)
        decisions = rec.one(DECISIONS, tick)
        if message is None or decisions is None:
            notes.append(f"tick {tick} has no recorded decisions: the replay stops there")
            break
        views = builder.views(message, rec.one(EVICTIONS, tick))
        recorded_cabins = decisions["cabins"]
        for cabin in run:
            view = views.get(cabin.name)
            is_async = cabin.name in asynchronous
            if view is None:
                if not is_async:  # an asynchronous cabin gets views only when it is idle
                    notes.append(f"tick {tick}: no view of {cabin.name!r} was recorded")
                continue
            if is_async:
                recorded = came_back.get((cabin.name, tick))
                replayed = _decide(cabin, view, recorded)
                if recorded is None and tick >= _last_decided(came_back, cabin.name):
                    notes.append(
                        f"the decision {cabin.name!r} took at tick {tick} had not come back "
                        "when the recording ended: not compared"
                    )
                    continue
            else:
                recorded = recorded_cabins.get(cabin.name)
                replayed = _decide(cabin, view, recorded)
            if recorded is None:
                drifts.append(
                    Drift(
                        tick,
                        cabin.name,
                        (Difference("failed", None, "no decision recorded", replayed),),
                    )
                )
                continue
            differences = compare(recorded, replayed)
            if differences:
                drifts.append(Drift(tick, cabin.name, differences))
        done.append(tick)
    return ReplayReport(
        path=rec.path,
        cabins=tuple(c.name for c in run),
        ticks=len(done),
        first_tick=done[0] if done else None,
        last_tick=done[-1] if done else None,
        faults=tuple(f.label for f in faults),
        damaged=rec.damaged,
        drifts=tuple(drifts),
        skipped=tuple(skipped),
        notes=tuple(notes),
    )


def _async_decisions(recording: Recording) -> dict[tuple[str, int], DecisionRecord]:
    """(cabin, decided tick) → the recorded asynchronous decision taken at that tick."""
    found: dict[tuple[str, int], DecisionRecord] = {}
    for _, message in recording.records(DECISIONS):
        for cabin, decision in message["cabins"].items():
            decided = decision.get("decided_tick")
            if decided is not None:
                found[(cabin, decided)] = decision
    return found


def _last_decided(came_back: Mapping[tuple[str, int], DecisionRecord], cabin: str) -> int:
    """The last tick a recorded decision of ``cabin`` was decided on (-1: none)."""
    return max((t for n, t in came_back if n == cabin), default=-1)


def _decide(cabin: Cabin, view: CabinView, recorded: DecisionRecord | None) -> DecisionRecord:
    out = Outbox(cabin.name)
    try:
        cabin.step(view, out)
    except Exception as exc:  # the loop isolates a raising cabin; so does the replay
        return failed_decision({"error_type": type(exc).__name__, "message": str(exc)})
    failed = recorded["failed"] if recorded is not None else None
    if failed is not None and failed["error_type"] == "NoScratchpad" and out.notes:
        return failed_decision(failed)  # the loop dropped this outbox: no scratchpad
    return decision_json(out)
