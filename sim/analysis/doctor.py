"""The doctor: what each bad outcome of a recorded run lacked, and which spec changes would
have helped. The seed's "fill the assembly list back in from the failure history".

A bad outcome is an ``action_failed``, ``replan``, ``alarm``, ``emergency_stop``,
``collision`` or ``safety_violation`` event. It belongs to the cabin its
``cabin:<name>`` tag names; an event without one (an incident the world reports)
belongs to every cabin. For each, the doctor lists what that cabin lacked in the
``window`` ticks up to and including the outcome's tick: its missing items (the
required patterns in ``view.missing``, with their reasons) and the items working
memory evicted (for capacity, or because they went stale) that its spec weights
or requires and could select. A capacity eviction counts for a cabin only if the
freeze that evicted the item had just offered it with an importance no lower than
the cabin's weight for it (else the cabin was not asking for it then). Then it
ranks spec changes by how many bad outcomes each would have covered:

raise a weight
    items the cabin's spec weights (or requires) were evicted for capacity before
    the outcome; the suggested weight is the next step of 0.05 above the highest
    importance memory evicted at those ticks (below it, the item loses again).
widen the event window
    the outcome repeats an earlier event of the same kind (and action) that the
    cabin reads, but the earlier one was older than its ``event_window`` when the
    repeat happened; the suggested window reaches the earlier one. Repeats more
    than three windows apart are taken as unrelated.
add a required pattern
    a simple contrast: an item kind (the board pattern that let it in, or
    ``map:<prefix>:*``) that was in the cabin's view the tick before at least 80%
    of its successes (``action_done``, ``task_started``, ``plan_done``; at least
    three of them) but not the tick before at least half of its bad outcomes (at
    least two). Requiring it makes its absence explicit in ``view.missing``, where
    the cabin can react to it. Events are left out: they come and go with the
    window, so their presence before successes that follow one another (one
    action done, then the next) says nothing about what the failures lacked.

Missing items whose reason is ``fault`` (and stale ones whose keys a fault froze)
were injected by the run's faults: they are reported as injected, not as spec
problems.

Capacity pressure is reported per cabin whether or not a bad outcome followed it: the
ticks at which its view lost items it selected (``view.evicted``, recorded with each
view), how many, the keys it lost most often, its ``capacity_pressure`` episodes, and
what to tighten first (the part of a spec that held the most of working memory at the
tick it lost most: a ``map_limit`` for a map window), growing the capacity last. In a
recording whose views say what they lost, a capacity eviction counts for a cabin exactly
when its view lost the item; in an older one, by the rule above.

A run can also go wrong with nothing lacking at all: a robot that waits for a mover, re-plans
without getting further and delivers nothing for the whole run saw everything it needed. So
the doctor also reads the run's liveness from the recording (``Liveness``): its waits for
movers, give-ways, no-progress re-plans, stalled episodes, deferred and abandoned tasks, and,
from the summary the run wrote when it finished, its verdict and the reachable tasks it left
undelivered.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cabins.warehouse.registry import CHARGE_REPLANS
from runtime.errors import SettingError
from runtime.patterns import is_glob, matches, overlaps, specificity
from runtime.pressure import advice, crowding
from runtime.recording.format import DECISIONS, EVENTS, EVICTIONS, WORKING_SET, EvictionRecord
from runtime.recording.inspect import require_ticks
from runtime.recording.reader import Recording
from runtime.scratchpad import memory_key as _memory_key
from runtime.spec import ContextSpec
from sim.analysis.replay import recorded_faults, recorded_specs
from sim.faults.model import SENSOR_KEYS, DropoutFault, MissingFault, StaleFault
from sim.run.summary import recorded_summary
from sim.run.verdict import judge

BAD_KINDS = ("action_failed", "replan", "alarm", "emergency_stop", "collision", "safety_violation")
SUCCESS_KINDS = ("action_done", "task_started", "plan_done")
DEFAULT_WINDOW = 40
WEIGHT_STEP = 0.05
REPEAT_SPAN = 3.0
"""A repeat more than this many event windows after the earlier event is unrelated."""

Action = Literal["tighten", "raise_weight", "widen_window", "add_required"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One event of the run, read as an outcome: a bad one (``BAD_KINDS``) or a success."""

    tick: int
    seq: int
    kind: str
    cabin: str | None
    stamp: float
    data: Any
    tags: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        d = self.data if isinstance(self.data, Mapping) else {}
        if self.kind == "action_failed":
            task = f" {d['task']}" if d.get("task") else ""
            return f"{d.get('action', '?')}{task} failed ({d.get('reason', '?')})"
        if self.kind == "alarm":
            return f"alarm {d.get('kind', '?')}"
        if self.kind == "emergency_stop":
            return f"emergency stop ({d.get('reason', '?')})"
        if self.kind == "replan":
            return f"replan ({d.get('reason', '?')})"
        return self.kind.replace("_", " ")

    def as_json(self) -> dict[str, Any]:
        return {
            "tick": self.tick,
            "seq": self.seq,
            "kind": self.kind,
            "cabin": self.cabin,
            "stamp": self.stamp,
            "summary": self.summary,
            "tags": list(self.tags),
            "data": self.data,
        }


@dataclass(frozen=True, slots=True)
class Lack:
    """Something a cabin lacked in the ticks before an outcome."""

    cabin: str
    what: Literal["missing", "evicted"]
    item: str
    """The required pattern (missing) or the item's key (evicted)."""
    reason: str
    """The missing reason (absent, stale, evicted, fault) or the eviction's (capacity, stale)."""
    ticks: int
    first: int
    last: int
    pattern: str | None = None
    """For an eviction: the spec pattern that weights (or requires) the item."""
    fault: str | None = None
    """The fault that caused it, when one did."""

    @property
    def injected(self) -> bool:
        return self.fault is not None

    def describe(self) -> str:
        span = (
            f"tick {self.first}"
            if self.ticks == 1
            else f"{self.ticks} ticks, {self.first}-{self.last}"
        )
        text = f"{self.item} {self.what} ({self.reason}, {span})"
        return f"{text} [injected: {self.fault}]" if self.fault else text

    def as_json(self) -> dict[str, Any]:
        return {
            "cabin": self.cabin,
            "what": self.what,
            "item": self.item,
            "reason": self.reason,
            "ticks": self.ticks,
            "first": self.first,
            "last": self.last,
            "pattern": self.pattern,
            "fault": self.fault,
            "injected": self.injected,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """A bad outcome and what its cabin (or every cabin) lacked before it."""

    outcome: Outcome
    lacks: tuple[Lack, ...]
    decisions: tuple[dict[str, Any], ...] = ()
    """For a collision: the cabin decisions before it that bear on it (``decisions_before``)."""

    def as_json(self) -> dict[str, Any]:
        out = {**self.outcome.as_json(), "lacks": [lack.as_json() for lack in self.lacks]}
        if self.outcome.kind == "collision":
            out["decisions"] = list(self.decisions)
        return out


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A spec change, and the bad outcomes it would have covered."""

    cabin: str
    action: Action
    change: str
    """The TOML line to write in the cabin's spec."""
    why: str
    outcomes: int
    ticks: tuple[int, ...]
    """The ticks of the covered outcomes."""
    order: int = 1
    """Tie-break among suggestions that cover as many outcomes: lower first."""

    @property
    def examples(self) -> tuple[int, ...]:
        return self.ticks[:5]

    def as_json(self) -> dict[str, Any]:
        return {
            "cabin": self.cabin,
            "action": self.action,
            "change": self.change,
            "why": self.why,
            "outcomes": self.outcomes,
            "example_ticks": list(self.examples),
            "ticks": list(self.ticks),
        }


@dataclass(frozen=True, slots=True)
class Injected:
    """Items a fault took from a cabin before bad outcomes (not a spec problem)."""

    cabin: str
    pattern: str
    reason: str
    faults: tuple[str, ...]
    outcomes: int
    ticks: tuple[int, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "cabin": self.cabin,
            "pattern": self.pattern,
            "reason": self.reason,
            "faults": list(self.faults),
            "outcomes": self.outcomes,
            "example_ticks": list(self.ticks[:5]),
            "ticks": list(self.ticks),
            "note": "injected (not a spec problem)",
        }


@dataclass(frozen=True, slots=True)
class Pressure:
    """One cabin's capacity pressure over a recording: what its view selected and lost."""

    cabin: str
    ticks: int
    """Ticks at which its view lost something."""
    lost: int
    """Items lost, summed over those ticks."""
    first: int
    last: int
    keys: tuple[tuple[str, int], ...]
    """The keys it lost at the most ticks, with how many (at most five)."""
    episodes: int
    """Its ``capacity_pressure`` events."""
    advice: str
    worst: int = 0
    """The (first) tick at which it lost the most."""

    def as_json(self) -> dict[str, Any]:
        return {
            "cabin": self.cabin,
            "ticks": self.ticks,
            "lost": self.lost,
            "first": self.first,
            "last": self.last,
            "keys": [{"key": k, "ticks": n} for k, n in self.keys],
            "episodes": self.episodes,
            "advice": self.advice,
            "worst_tick": self.worst,
        }

    def describe(self) -> str:
        shown = ", ".join(f"{k} ({n})" for k, n in self.keys)
        span = f"tick {self.first}" if self.ticks == 1 else f"ticks {self.first}-{self.last}"
        return (
            f"{self.cabin} lost {self.lost} selected item(s) to capacity at {self.ticks} "
            f"tick(s) ({span}; {self.episodes} episode(s)); most often {shown}"
        )


@dataclass(frozen=True, slots=True)
class Liveness:
    """Whether the recorded run kept making progress: counts of its events, and its verdict
    and undelivered tasks from the summary it wrote when it finished (None when it holds none:
    the run was killed)."""

    waits: int = 0
    give_ways: int = 0
    no_progress_replans: int = 0
    charge_replans: tuple[tuple[str, int], ...] = ()
    """(reason, count) of the re-plans that sent the robot to charge first
    (``CHARGE_REPLANS``), as the summary's ``charge_replans``."""
    reserves_waived: int = 0
    """How many times, fresh from a full charge, the robot went on without the energy
    reserve it would have charged first for (``reserve_waived`` events)."""
    stalled: int = 0
    deferred: int = 0
    abandoned: tuple[tuple[str, str], ...] = ()
    """(task, reason) of each task given up."""
    verdict: str | None = None
    """The verdict line (``sim.run.verdict``)."""
    status: str | None = None
    """The verdict's status: passed, cut_short or failed."""
    undelivered: tuple[str, ...] | None = None
    """The reachable tasks left undelivered (ids; empty names for a summary without them)."""
    delivered: int | None = None
    reachable: int | None = None
    stuck: bool = False
    """Whether the run failed to make progress: a stalled episode, an abandoned task, or
    reachable tasks left undelivered at the scenario's end (not a run cut short)."""

    def counts_text(self) -> str:
        """``3 waits for movers, 0 give-ways, ...``."""
        text = (
            f"{self.waits} waits for movers, {self.give_ways} give-ways, "
            f"{self.no_progress_replans} no-progress re-plans, {self._charges_text()}, "
            f"{self.reserves_waived} reserves waived, {self.stalled} stalled "
            f"episodes, {self.deferred} deferrals, {len(self.abandoned)} abandoned tasks"
        )
        if self.abandoned:
            text += " (" + ", ".join(f"{t}: {r}" for t, r in self.abandoned) + ")"
        return text

    def _charges_text(self) -> str:
        """``3 re-plans to charge first (give_way_drained 1, low_battery 2)``."""
        text = f"{sum(n for _, n in self.charge_replans)} re-plans to charge first"
        if self.charge_replans:
            text += " (" + ", ".join(f"{r} {n}" for r, n in self.charge_replans) + ")"
        return text

    def outcome_text(self) -> str:
        """What the run delivered and its verdict, or that the recording does not say."""
        if self.verdict is None:
            return "verdict unknown: the recording holds no summary (the run did not finish)"
        return f"verdict: {self.verdict}"

    def as_json(self) -> dict[str, Any]:
        return {
            "waits": self.waits,
            "give_ways": self.give_ways,
            "no_progress_replans": self.no_progress_replans,
            "charge_replans": dict(self.charge_replans),
            "reserves_waived": self.reserves_waived,
            "stalled_episodes": self.stalled,
            "deferrals": self.deferred,
            "tasks_abandoned": dict(self.abandoned),
            "verdict": self.verdict,
            "status": self.status,
            "tasks_undelivered": None if self.undelivered is None else list(self.undelivered),
            "deliveries_done": self.delivered,
            "reachable": self.reachable,
            "stuck": self.stuck,
        }


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """What the doctor found in one recording."""

    path: str
    ticks: int
    window: int
    findings: tuple[Finding, ...]
    suggestions: tuple[Suggestion, ...]
    injected: tuple[Injected, ...]
    damaged: bool = False
    notes: tuple[str, ...] = ()
    pressure: tuple[Pressure, ...] = ()
    """Per cabin whose view lost selected items to capacity, most lost first."""
    liveness: Liveness = field(default_factory=Liveness)

    @property
    def nothing_lacked(self) -> bool:
        """Whether no bad outcome had anything missing or evicted before it."""
        return not any(f.lacks for f in self.findings)

    @property
    def outcome_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.outcome.kind] = counts.get(f.outcome.kind, 0) + 1
        return counts

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ticks": self.ticks,
            "window": self.window,
            "damaged": self.damaged,
            "bad_outcomes": len(self.findings),
            "outcome_counts": self.outcome_counts,
            "outcomes": [f.as_json() for f in self.findings],
            "suggestions": [s.as_json() for s in self.suggestions],
            "injected": [i.as_json() for i in self.injected],
            "pressure": [p.as_json() for p in self.pressure],
            "notes": list(self.notes),
            "liveness": self.liveness.as_json(),
        }


# -- reading the recording -------------------------------------------------------------------


@dataclass(slots=True)
class _Tick:
    time: float = 0.0
    missing: dict[str, dict[str, str]] = field(default_factory=dict)
    kinds: dict[str, frozenset[str]] = field(default_factory=dict)
    evictions: list[EvictionRecord] = field(default_factory=list)
    lost: dict[str, frozenset[str] | None] = field(default_factory=dict)
    """Per cabin: the keys its view lost to capacity (None: the recording does not say)."""


@dataclass(slots=True)
class _Timeline:
    ticks: dict[int, _Tick]
    outcomes: list[Outcome]
    successes: dict[str, list[Outcome]]
    events: list[Outcome]
    cabins: list[str]


def item_kind(key: str, via: str) -> str:
    """The kind of a view item, as a spec pattern: the board pattern that let it in,
    ``map:<prefix>:*``, ``event:<kind>*``, or the key itself."""
    if via.startswith("board:"):
        return via[len("board:") :]
    if key.startswith("event:"):
        return f"event:{_event_kind(key)}*"
    if key.startswith("map:"):
        parts = key.split(":")
        return f"map:{parts[1]}:*" if len(parts) >= 3 else "map:*"
    return key


def _event_kind(key: str) -> str:
    """``event:<kind>:<seq>`` → ``<kind>``."""
    return key[len("event:") :].rpartition(":")[0]


def _cabin_of(tags: Iterable[str]) -> str | None:
    for tag in tags:
        if tag.startswith("cabin:"):
            return tag[len("cabin:") :]
    return None


def _read(rec: Recording) -> _Timeline:
    ticks: dict[int, _Tick] = {}
    outcomes: list[Outcome] = []
    events: list[Outcome] = []
    successes: dict[str, list[Outcome]] = defaultdict(list)
    cabins: list[str] = []
    for tick in rec.ticks():
        message = rec.one(WORKING_SET, tick)
        if message is None:
            continue
        entry = _Tick(time=message["time"])
        for cabin, view in message["views"].items():
            if cabin not in cabins:
                cabins.append(cabin)
            entry.missing[cabin] = dict(view["missing"])
            entry.kinds[cabin] = frozenset(item_kind(k, via) for k, via in view["items"].items())
            lost = view.get("evicted")
            entry.lost[cabin] = None if lost is None else frozenset(lost)
        evicted = rec.one(EVICTIONS, tick)
        if evicted is not None:
            entry.evictions = list(evicted["evictions"])
        ticks[tick] = entry
        for e in rec.at(EVENTS, tick):
            kind = e["kind"]
            tags = tuple(e["tags"])
            event = Outcome(tick, e["seq"], kind, _cabin_of(tags), e["stamp"], e["data"], tags)
            events.append(event)
            if kind in BAD_KINDS:
                outcomes.append(event)
            elif kind in SUCCESS_KINDS and event.cabin is not None:
                successes[event.cabin].append(event)
    outcomes.sort(key=lambda o: (o.tick, o.seq))
    return _Timeline(ticks, outcomes, dict(successes), events, cabins)


# -- spec helpers ----------------------------------------------------------------------------


def weight_pattern(spec: ContextSpec, key: str) -> str | None:
    """The ``weights`` entry that gives ``key`` its weight (exact, else the most specific
    matching glob, first declared on a tie), or None when the default weight applies."""
    if key in spec.weights:
        return key
    globs = [(i, p) for i, p in enumerate(spec.weights) if is_glob(p) and matches(key, p)]
    if not globs:
        return None
    return max(globs, key=lambda ip: (specificity(ip[1]), -ip[0]))[1]


def required_pattern(spec: ContextSpec, key: str) -> str | None:
    found = [p for p in spec.required if matches(key, p)]
    return max(found, key=specificity) if found else None


def _view_key(cabin: str, key: str) -> str | None:
    """The key ``cabin`` would see for a memory key (None: another cabin's note)."""
    if key.startswith("note:") and "/" in key:
        owner, _, note = key[len("note:") :].partition("/")
        return f"note:{note}" if owner == cabin else None
    return key


def _could_select(spec: ContextSpec, key: str) -> bool:
    if key.startswith("event:"):
        kind = _event_kind(key)
        return spec.event_window > 0 and (not spec.event_kinds or kind in spec.event_kinds)
    if key.startswith("map:"):
        return spec.map_radius > 0 or spec.corridor_width > 0
    if key.startswith("note:"):
        return True
    return any(matches(key, p) for p in spec.board_keys)


def _offered(eviction: EvictionRecord, now: float, spec: ContextSpec, key: str) -> bool:
    """Whether a cabin whose spec weights an item may have asked for it at the freeze that
    evicted it, with an importance (the highest weight any spec gave it) no lower than its
    own weight. A board item or a map feature was offered if the freeze refreshed it
    (``last_used`` is now); an event keeps its stamp as ``last_used``, so it was offered
    if it was still within the cabin's event window."""
    if eviction["importance"] < spec.weight_for(key):
        return False
    if key.startswith("event:"):
        return now - eviction["last_used"] <= spec.event_window
    return eviction["last_used"] == now


def _toml_key(pattern: str) -> str:
    return json.dumps(pattern)


def _next_step(value: float) -> float:
    return min(1.0, round(math.floor(value / WEIGHT_STEP + 1e-9) * WEIGHT_STEP + WEIGHT_STEP, 2))


# -- the diagnosis ---------------------------------------------------------------------------


def diagnose(recording: Recording | str | Path, *, window: int = DEFAULT_WINDOW) -> DoctorReport:
    """Find every bad outcome of ``recording``, what was lacking before it, and rank the spec
    changes that would have covered the most outcomes."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise SettingError(f"window must be a whole number of ticks >= 0, got {window!r}")
    rec = recording if isinstance(recording, Recording) else Recording.open(recording)
    ticks = require_ticks(rec)  # a recording without ticks has no outcome to diagnose
    specs = recorded_specs(rec)
    faults = recorded_faults(rec)
    line = _read(rec)
    # a window longer than the recording looks at what the recording holds, no further
    bounded = min(window, ticks[-1] - ticks[0] + 1)
    doctor = _Doctor(line, specs, faults, bounded)
    findings = tuple(
        dataclasses.replace(f, decisions=decisions_before(rec, f.outcome, bounded))
        if f.outcome.kind == "collision"
        else f
        for f in (doctor.finding(o) for o in line.outcomes)
    )
    pressed = pressure(rec, line, specs)
    suggestions = doctor.suggestions(findings, _tighten(rec, findings, pressed, specs))
    crowded = sum(
        any(e.get("reason") == "capacity" for e in t.evictions) for t in line.ticks.values()
    )
    if line.ticks and crowded >= len(line.ticks) / 2:
        doctor.notes.append(
            f"memory evicted items for capacity at {crowded} of {len(line.ticks)} ticks: a "
            "raised weight only moves the evictions to other items; a map_limit, narrower "
            "map radii and event windows are usually cheaper than more capacity"
        )
    liveness = liveness_of(line.events, recorded_summary(rec))
    if liveness.stuck and not any(f.lacks for f in findings):
        doctor.notes.append(
            "nothing was missing or evicted before "
            + (f"its {len(findings)} bad outcome(s)" if findings else "this run's trouble")
            + ": what the cabins lacked does not explain why the run did not get its work "
            "done (the liveness lines say what happened instead); no spec change covers it"
        )
    return DoctorReport(
        path=rec.path,
        ticks=len(line.ticks),
        window=window,
        findings=findings,
        suggestions=suggestions,
        injected=doctor.injected(findings),
        damaged=rec.damaged,
        notes=tuple(doctor.notes),
        pressure=pressed,
        liveness=liveness,
    )


def liveness_of(events: Iterable[Outcome], summary: Mapping[str, Any] | None) -> Liveness:
    """The run's ``Liveness``: its events counted, and its verdict judged from ``summary``
    (the one the run wrote; None when it wrote none)."""
    waits = give_ways = no_progress = waived = stalled = deferred = 0
    charges: Counter[str] = Counter()
    abandoned: dict[str, str] = {}
    for event in events:
        data = event.data if isinstance(event.data, Mapping) else {}
        if event.kind == "wait_for_obstacles":
            waits += 1
        elif event.kind == "give_way":
            give_ways += 1
        elif event.kind == "replan" and data.get("reason") == "no_progress":
            no_progress += 1
        elif event.kind == "replan" and data.get("reason") in CHARGE_REPLANS:
            charges[str(data.get("reason"))] += 1
        elif event.kind == "reserve_waived":
            waived += 1
        elif event.kind == "alarm" and data.get("kind") == "stalled":
            stalled += 1
        elif event.kind == "task_deferred":
            deferred += 1
        elif event.kind == "task_abandoned":
            abandoned[str(data.get("task", "?"))] = str(data.get("reason", "?"))
    counts = Liveness(
        waits=waits,
        give_ways=give_ways,
        no_progress_replans=no_progress,
        charge_replans=tuple(sorted(charges.items())),
        reserves_waived=waived,
        stalled=stalled,
        deferred=deferred,
        abandoned=tuple(sorted(abandoned.items())),
        stuck=bool(stalled or abandoned),
    )
    if summary is None:
        return counts
    verdict = judge(summary)
    named = summary.get("tasks_undelivered")
    undelivered: tuple[str, ...] = (
        tuple(str(t) for t in named)
        if isinstance(named, list)
        else ("",) * max(0, verdict.reachable - verdict.delivered)
    )
    return dataclasses.replace(
        counts,
        verdict=verdict.line,
        status=verdict.status,
        undelivered=undelivered,
        delivered=verdict.delivered,
        reachable=verdict.reachable,
        stuck=counts.stuck or any(r.fails and r.kind in _NO_PROGRESS for r in verdict.reasons),
    )


_NO_PROGRESS = frozenset({"undelivered", "stalled", "abandoned"})
"""The verdict's reasons that say a run did not make progress."""


def _tighten(
    rec: Recording,
    findings: Sequence[Finding],
    pressed: Sequence[Pressure],
    specs: Mapping[str, ContextSpec],
) -> list[Suggestion]:
    """A cap on the part of a spec that held the most of working memory when the most was
    lost (``runtime.pressure.crowding``), covering every bad outcome some cabin lacked an
    item evicted for capacity before: ranked before a raised weight, which only moves the
    evictions to other items."""
    if not pressed:
        return []
    lost_at = max(pressed, key=lambda p: (p.lost, p.cabin)).worst
    message = rec.one(WORKING_SET, lost_at)
    if message is None:
        return []
    views = message["views"]
    owner, part, held = crowding({name: view["items"] for name, view in views.items()})
    spec = specs.get(owner)
    room = len({_memory_key(n, k) for n, v in views.items() for k in v.get("evicted") or []})
    knob = {"map_window": "map_limit", "corridor": "corridor_limit", "events": "event_limit"}
    if spec is None or part not in knob:
        return []
    covered = [
        f.outcome.tick
        for f in findings
        if any(lack.what == "evicted" and lack.reason == "capacity" for lack in f.lacks)
    ]
    if not covered:
        return []
    change = f"{knob[part]} = {max(1, held - room)}"
    why = (
        f"items were evicted for capacity before {len(covered)} bad outcome(s); at tick "
        f"{lost_at} the specs lost {room} selected item(s) while {owner}'s "
        f"{part.replace('_', ' ')} held {held}: capping it leaves them room (cheaper than "
        "more capacity)"
    )
    return [Suggestion(owner, "tighten", change, why, len(covered), tuple(covered), order=-1)]


def pressure(
    rec: Recording, line: _Timeline, specs: Mapping[str, ContextSpec]
) -> tuple[Pressure, ...]:
    """Each cabin's capacity pressure over the recording (``Pressure``), most lost first;
    the advice is taken at the tick the cabin lost most, from every view of that tick."""
    lost_at: dict[str, dict[int, int]] = defaultdict(dict)
    keys: dict[str, Counter[str]] = defaultdict(Counter)
    for tick, entry in line.ticks.items():
        for cabin, lost in entry.lost.items():
            if lost:
                lost_at[cabin][tick] = len(lost)
                keys[cabin].update(lost)
    episodes = Counter(
        str(e.data.get("spec"))
        for e in line.events
        if e.kind == "capacity_pressure" and isinstance(e.data, Mapping)
    )
    found: list[Pressure] = []
    for cabin, ticks in lost_at.items():
        worst = max(ticks, key=lambda t: (ticks[t], -t))
        found.append(
            Pressure(
                cabin,
                len(ticks),
                sum(ticks.values()),
                min(ticks),
                max(ticks),
                tuple(keys[cabin].most_common(5)),
                episodes.get(cabin, 0),
                _advice_at(rec, worst, cabin, specs),
                worst,
            )
        )
    found.sort(key=lambda p: (-p.lost, p.cabin))
    return tuple(found)


def _advice_at(rec: Recording, tick: int, cabin: str, specs: Mapping[str, ContextSpec]) -> str:
    """What to tighten, from the working set of ``tick`` (``runtime.pressure.advice``)."""
    message = rec.one(WORKING_SET, tick)
    if message is None:
        return "tighten the specs' map windows, corridors and event windows; grow capacity last"
    views = {name: view["items"] for name, view in message["views"].items()}
    lost = message["views"][cabin].get("evicted") or []
    room = len(
        {_memory_key(n, k) for n, v in message["views"].items() for k in v.get("evicted") or []}
    )
    load = message.get("occupancy")
    return advice(cabin, len(lost), views, specs, load["capacity"] if load else 0, room)


_MOVES = ("drive", "stop", "slow")


def decisions_before(rec: Recording, outcome: Outcome, window: int) -> tuple[dict[str, Any], ...]:
    """The cabin decisions in the ``window`` ticks up to a collision that bear on it, oldest
    first: every re-plan (the planner), every route written, the executor's last drive
    command and each step it reported failed, and every stop, slow-down and reaction the
    monitor (or any cabin) decided. Each is ``{tick, cabin, decision, detail}``."""
    found: list[dict[str, Any]] = []
    last_drive: dict[str, Any] | None = None
    for tick in range(max(0, outcome.tick - window), outcome.tick + 1):
        message = rec.one(DECISIONS, tick)
        if message is None:
            continue
        for cabin, record in message["cabins"].items():
            for event in record["events"]:
                if event["kind"] in ("replan", "action_failed", "emergency_stop", "alarm"):
                    found.append(
                        {
                            "tick": tick,
                            "cabin": cabin,
                            "decision": event["kind"],
                            "detail": event["data"],
                        }
                    )
            for write in record["writes"]:
                if write["key"] == "route":
                    route = write.get("value")
                    points = len(route) if isinstance(route, list) else 0
                    found.append(
                        {
                            "tick": tick,
                            "cabin": cabin,
                            "decision": "route",
                            "detail": {"points": points},
                        }
                    )
            for command in record["commands"]:
                name = command["name"]
                if name == "drive":
                    last_drive = {
                        "tick": tick,
                        "cabin": cabin,
                        "decision": "drive",
                        "detail": command["args"],
                    }
                elif name in _MOVES:
                    found.append(
                        {"tick": tick, "cabin": cabin, "decision": name, "detail": command["args"]}
                    )
            for reaction in record["reactions"]:
                found.append(
                    {
                        "tick": tick,
                        "cabin": cabin,
                        "decision": "reaction",
                        "detail": {
                            "pattern": reaction["pattern"],
                            "reaction": reaction["reaction"],
                        },
                    }
                )
    if last_drive is not None:
        found.append(last_drive)
    found.sort(key=lambda d: d["tick"])
    return tuple(found)


class _Doctor:
    def __init__(
        self, line: _Timeline, specs: Mapping[str, ContextSpec], faults: Sequence[Any], window: int
    ) -> None:
        self.line = line
        self.specs = specs
        self.faults = faults
        self.window = window
        self.notes: list[str] = []

    def cabins_for(self, outcome: Outcome) -> list[str]:
        if outcome.cabin is None:
            return [c for c in self.line.cabins if c in self.specs]
        return [outcome.cabin] if outcome.cabin in self.specs else []

    def window_ticks(self, tick: int) -> list[int]:
        return [t for t in range(tick - self.window, tick + 1) if t in self.line.ticks]

    # -- per outcome --

    def finding(self, outcome: Outcome) -> Finding:
        lacks: list[Lack] = []
        span = self.window_ticks(outcome.tick)
        for cabin in self.cabins_for(outcome):
            lacks.extend(self._missing(cabin, span))
            lacks.extend(self._evicted(cabin, span))
        return Finding(outcome, tuple(lacks))

    def _missing(self, cabin: str, span: Sequence[int]) -> list[Lack]:
        seen: dict[tuple[str, str], list[int]] = {}
        for t in span:
            for pattern, reason in self.line.ticks[t].missing.get(cabin, {}).items():
                seen.setdefault((pattern, reason), []).append(t)
        out = []
        for (pattern, reason), ticks in seen.items():
            fault = self._fault_for(cabin, pattern, reason, ticks)
            out.append(
                Lack(
                    cabin, "missing", pattern, reason, len(ticks), ticks[0], ticks[-1], fault=fault
                )
            )
        return out

    def _evicted(self, cabin: str, span: Sequence[int]) -> list[Lack]:
        spec = self.specs[cabin]
        seen: dict[tuple[str, str], tuple[list[int], str]] = {}
        for t in span:
            at = self.line.ticks[t]
            for e in at.evictions:
                reason = e["reason"]
                if reason == "retracted":
                    continue  # the source no longer holds it: nothing was lost
                key = _view_key(cabin, e["key"])
                pattern = self._relevant(spec, key)
                if key is None or pattern is None:
                    continue
                if reason == "capacity":
                    lost = at.lost.get(cabin)
                    if lost is not None and key not in lost:
                        continue  # its view says it did not select the item then
                    if lost is None and not _offered(e, at.time, spec, key):
                        continue
                entry = seen.setdefault((key, reason), ([], pattern))
                entry[0].append(t)
        return [
            Lack(
                cabin,
                "evicted",
                key,
                reason,
                len(ticks),
                ticks[0],
                ticks[-1],
                pattern=pattern,
                fault=self._fault_for(cabin, key, reason, ticks),
            )
            for (key, reason), (ticks, pattern) in seen.items()
        ]

    def _relevant(self, spec: ContextSpec, key: str | None) -> str | None:
        if key is None or not _could_select(spec, key):
            return None
        return weight_pattern(spec, key) or required_pattern(spec, key)

    def _fault_for(self, cabin: str, pattern: str, reason: str, ticks: Sequence[int]) -> str | None:
        for fault in self.faults:
            if not any(fault.active(t) for t in ticks):
                continue
            if (
                reason == "fault"
                and isinstance(fault, MissingFault)
                and fault.cabin in ("*", cabin)
                and overlaps(pattern, fault.pattern)
            ):
                return str(fault.label)
            if reason == "stale":
                if isinstance(fault, StaleFault) and overlaps(pattern, fault.key):
                    return str(fault.label)
                if isinstance(fault, DropoutFault):
                    keys = [
                        k for s, ks in SENSOR_KEYS.items() if fault.sensor in ("all", s) for k in ks
                    ]
                    if any(overlaps(pattern, k) for k in keys):
                        return str(fault.label)
        if reason == "fault":
            return "a missing-item fault"
        return None

    # -- suggestions --

    def suggestions(
        self, findings: Sequence[Finding], tighten: Sequence[Suggestion] = ()
    ) -> tuple[Suggestion, ...]:
        found = [
            *tighten,
            *self._raise_weights(findings),
            *self._widen_windows(),
            *self._add_required(findings),
        ]
        found.sort(key=lambda s: (-s.outcomes, s.order, s.cabin, s.change))
        return tuple(found)

    def _raise_weights(self, findings: Sequence[Finding]) -> list[Suggestion]:
        covered: dict[tuple[str, str], list[int]] = defaultdict(list)
        keys: dict[tuple[str, str], set[str]] = defaultdict(set)
        evicted_at: dict[tuple[str, str], set[int]] = defaultdict(set)
        for f in findings:
            hit: set[tuple[str, str]] = set()
            for lack in f.lacks:
                if lack.what != "evicted" or lack.reason != "capacity" or lack.pattern is None:
                    continue
                group = (lack.cabin, lack.pattern)
                hit.add(group)
                keys[group].add(lack.item)
                evicted_at[group].update(self._eviction_ticks(lack))
            for group in hit:
                covered[group].append(f.outcome.tick)
        out: list[Suggestion] = []
        for (cabin, pattern), ticks in covered.items():
            spec = self.specs[cabin]
            current = max(spec.weight_for(k) for k in keys[(cabin, pattern)])
            ceiling = max(
                float(e.get("importance", 0.0))
                for t in evicted_at[(cabin, pattern)]
                for e in self.line.ticks[t].evictions
                if e.get("reason") == "capacity"
            )
            new = _next_step(max(ceiling, current))
            shown = ", ".join(sorted(keys[(cabin, pattern)])[:3])
            if len(keys[(cabin, pattern)]) > 3:
                shown += ", ..."
            required = required_pattern(spec, next(iter(keys[(cabin, pattern)])))
            if current >= 1.0:
                self.notes.append(
                    f"{cabin}: items it weights 1.0 ({shown}) were evicted for capacity before "
                    f"{len(ticks)} bad outcome(s); no weight can keep them: raise the capacity "
                    "or narrow the specs' windows"
                )
                continue
            why = (
                f"{'required ' if required else ''}items it weights {current:g} ({shown}) "
                f"were evicted for capacity before {len(ticks)} bad outcome(s); memory "
                f"evicted items of importance up to {ceiling:g} then"
            )
            out.append(
                Suggestion(
                    cabin,
                    "raise_weight",
                    f"weights.{_toml_key(pattern)} = {new:g}",
                    why,
                    len(ticks),
                    tuple(ticks),
                    order=0 if required else 1,
                )
            )
        return out

    def _eviction_ticks(self, lack: Lack) -> list[int]:
        return [
            t
            for t in range(lack.first, lack.last + 1)
            if t in self.line.ticks
            and any(
                _view_key(lack.cabin, str(e.get("key"))) == lack.item
                for e in self.line.ticks[t].evictions
            )
        ]

    def _widen_windows(self) -> list[Suggestion]:
        gaps: dict[str, list[tuple[float, Outcome, Outcome]]] = defaultdict(list)
        previous: dict[tuple[str, str, Any], Outcome] = {}
        for event in self.line.events:
            if event.kind not in BAD_KINDS or event.cabin is None:
                continue
            data = event.data if isinstance(event.data, Mapping) else {}
            subject = (event.cabin, event.kind, data.get("action"))
            before = previous.get(subject)
            previous[subject] = event
            spec = self.specs.get(event.cabin)
            if before is None or spec is None or not _reads(spec, before):
                continue
            gap = event.stamp - before.stamp
            if spec.event_window < gap <= REPEAT_SPAN * spec.event_window:
                gaps[event.cabin].append((gap, before, event))
        out = []
        for cabin, found in gaps.items():
            spec = self.specs[cabin]
            wanted = float(math.ceil(max(g for g, _, _ in found)))
            kinds = sorted({o.kind for _, _, o in found})
            first = found[0]
            why = (
                f"{len(found)} bad outcome(s) ({', '.join(kinds)}) repeated an earlier one "
                f"the cabin reads but no longer saw: e.g. at tick {first[2].tick} the "
                f"previous {first[1].kind} (tick {first[1].tick}) was {first[0]:.1f} s old, "
                f"its event_window is {spec.event_window:g} s"
            )
            out.append(
                Suggestion(
                    cabin,
                    "widen_window",
                    f"event_window = {wanted:.1f}",
                    why,
                    len(found),
                    tuple(o.tick for _, _, o in found),
                )
            )
        return out

    def _add_required(self, findings: Sequence[Finding]) -> list[Suggestion]:
        out: list[Suggestion] = []
        for cabin, spec in self.specs.items():
            wins = self.line.successes.get(cabin, [])
            losses = sorted(
                {f.outcome.tick for f in findings if cabin in self.cabins_for(f.outcome)}
            )
            if len(wins) < 3 or len(losses) < 2:
                continue
            before_wins = [self._kinds_before(cabin, o.tick) for o in wins]
            candidates: set[str] = set().union(*before_wins)
            for kind in sorted(candidates):
                if kind.startswith("event:") or any(overlaps(kind, r) for r in spec.required):
                    continue
                share = sum(kind in k for k in before_wins) / len(before_wins)
                lacked = [t for t in losses if kind not in self._kinds_before(cabin, t)]
                if share < 0.8 or len(lacked) < 2 or len(lacked) < 0.5 * len(losses):
                    continue
                change = f"required = {json.dumps([*spec.required, kind])}"
                why = (
                    f"{kind} was in view before {share:.0%} of its {len(wins)} successes "
                    f"but not before {len(lacked)} of its {len(losses)} bad outcomes; "
                    "required, its absence shows in view.missing"
                )
                out.append(
                    Suggestion(
                        cabin, "add_required", change, why, len(lacked), tuple(lacked), order=2
                    )
                )
        return out

    def _kinds_before(self, cabin: str, tick: int) -> frozenset[str]:
        at = tick - 1 if tick - 1 in self.line.ticks else tick
        entry = self.line.ticks.get(at)
        return entry.kinds.get(cabin, frozenset()) if entry is not None else frozenset()

    # -- injected --

    def injected(self, findings: Sequence[Finding]) -> tuple[Injected, ...]:
        groups: dict[tuple[str, str, str], tuple[set[str], list[int]]] = {}
        for f in findings:
            hit: set[tuple[str, str, str]] = set()
            for lack in f.lacks:
                if lack.fault is None:
                    continue
                key = (lack.cabin, lack.item, lack.reason)
                entry = groups.setdefault(key, (set(), []))
                entry[0].add(lack.fault)
                hit.add(key)
            for key in hit:
                groups[key][1].append(f.outcome.tick)
        out = [
            Injected(c, p, r, tuple(sorted(labels)), len(ticks), tuple(ticks))
            for (c, p, r), (labels, ticks) in groups.items()
        ]
        out.sort(key=lambda i: (-i.outcomes, i.cabin, i.pattern))
        return tuple(out)


def _reads(spec: ContextSpec, event: Outcome) -> bool:
    """Whether ``spec``'s event window takes events like ``event`` (window aside)."""
    if spec.event_window <= 0:
        return False
    if spec.event_kinds and event.kind not in spec.event_kinds:
        return False
    return not spec.event_tags or not set(spec.event_tags).isdisjoint(event.tags)
