"""Fault campaigns: scenarios by seeds by faults, each run checked against the specs' contracts.

Every run injects one fault (or none: the control run) and checks two things: the
reactions the specs declare for what the fault takes away were observed within ``within``
ticks of the fault's start, and the run's verdict (``sim.run.verdict``: no collision, no
safety violation, every reachable task delivered by the scenario's end, no stalled
episode, no abandoned task, no flat battery) does not fail. A run stopped by ``ticks``
before the scenario's end is judged as ``sim run --ticks`` judges it: cut short, not failed
for the tasks it had no time to do. Runs are independent and
deterministic, so they go to any ``concurrent.futures.Executor``: a local
process pool by default (a worker that dies loses only its own run, which is
retried once, alone, and then reported) or Ray (``sim.run.ray_backend``) for clusters.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from runtime import ContextSpec, Event
from runtime.patterns import matches, overlaps
from sim.faults.model import (
    SENSOR_KEYS,
    CrashFault,
    DropoutFault,
    EventLossFault,
    Fault,
    MapLossFault,
    MissingFault,
    StaleFault,
)
from sim.run.ray_backend import quiet_worker
from sim.run.summary import JUDGED
from sim.run.verdict import judge

if TYPE_CHECKING:
    from sim.run.harness import CabinRef, ExtraCabin
    from sim.world.scenario import Scenario

DEFAULT_WITHIN = 40
"""Ticks after a fault's start within which a declared reaction must be seen (2 s at 20 Hz)."""


@dataclass(frozen=True, slots=True)
class Expectation:
    """A reaction a cabin's spec declares for what a fault takes away."""

    cabin: str
    reaction: str
    because: str


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One run of a campaign."""

    scenario: str
    seed: int
    fault: Fault | None = None
    ticks: int | None = None
    within: int = DEFAULT_WITHIN
    memory: str | None = None
    """A long-term memory file the run's planner shares with the campaign's other runs."""
    specs: Mapping[str, ContextSpec] | None = None
    """The built-in cabins' specs (default: the shipped ones, read by the worker)."""
    world: Scenario | None = None
    """``scenario`` already loaded, so that a worker on another machine needs no file."""
    extra: tuple[ExtraCabin, ...] = ()
    """Cabins to run beside the built-in ones as objects (an LLM cabin, say); their
    factories must pickle to reach a worker process."""
    cabins: tuple[CabinRef, ...] = ()
    """User cabins to run beside the built-in ones, by reference (the worker imports them)."""

    @property
    def label(self) -> str:
        return self.fault.label if self.fault is not None else "(none)"


def auto_faults(
    specs: Mapping[str, ContextSpec], *, start: int = 200, end: int = 600
) -> list[Fault]:
    """One missing-item fault per required pattern of every spec, and one of each other kind."""
    faults: list[Fault] = []
    for name, spec in specs.items():
        for pattern in spec.required:
            faults.append(MissingFault(cabin=name, pattern=pattern, start=start, end=end))
    faults.append(StaleFault(key="pose", start=start, end=end))
    faults.append(DropoutFault(sensor="all", start=start, end=end))
    faults.append(MapLossFault(feature="obstacle:*", start=start, end=end))
    faults.append(EventLossFault(event="action_*", start=start, end=end))
    first = next(iter(specs), "planner")
    faults.append(CrashFault(cabin=first, start=start, end=start + 1))
    return faults


def expectations(
    fault: Fault,
    specs: Mapping[str, ContextSpec],
    readings_of: Callable[[str], Iterable[tuple[str, float | None]]],
) -> list[Expectation]:
    """What the specs say should happen when ``fault`` starts.

    ``readings_of(pattern)`` gives the (key, time-to-live) of the board readings a
    pattern names at that moment. A key that stops updating only goes missing (stale) if
    its reading expires, and a required pattern only goes missing when every key it
    names does: ``safety:*`` is still seen while the forbidden zones are, when the
    scanner's reading has gone stale or is hidden. A required pattern that names no board
    reading (map items, events) is expected to be missed wherever the two patterns can
    name a common key.
    """
    out: list[Expectation] = []
    if isinstance(fault, MissingFault):
        for name, spec in specs.items():
            if fault.cabin not in ("*", name):
                continue
            for pattern in spec.required:
                hidden = [key for key, _ttl in readings_of(pattern)]
                if (
                    all(matches(key, fault.pattern) for key in hidden)
                    if hidden
                    else overlaps(pattern, fault.pattern)
                ):
                    reaction = spec.reaction_for(pattern)
                    if reaction is not None:
                        out.append(Expectation(name, reaction, f"{pattern} hidden"))
    elif isinstance(fault, (StaleFault, DropoutFault)):
        if isinstance(fault, StaleFault):
            keys = [fault.key]
        else:
            sensors = (
                SENSOR_KEYS if fault.sensor == "all" else {fault.sensor: SENSOR_KEYS[fault.sensor]}
            )
            keys = [k for ks in sensors.values() for k in ks]
        for name, spec in specs.items():
            for pattern in spec.required:
                named = list(readings_of(pattern))
                if named and all(
                    ttl is not None and any(matches(key, k) for k in keys) for key, ttl in named
                ):
                    reaction = spec.reaction_for(pattern)
                    if reaction is not None:
                        out.append(Expectation(name, reaction, f"{pattern} stale"))
    elif isinstance(fault, CrashFault) and "monitor" in specs and fault.cabin != "monitor":
        out.append(Expectation("monitor", "alarm:cabin_failed", f"{fault.cabin} crashed"))
    return out


class _Observer:
    """Collects the reactions cabins showed, with the tick each was first seen at."""

    def __init__(self, rate_hz: float) -> None:
        self.rate_hz = rate_hz
        self.seen: dict[tuple[str, str], list[int]] = defaultdict(list)

    def __call__(self, event: Event) -> None:
        data = event.data if isinstance(event.data, Mapping) else {}
        cabin = next((t[6:] for t in event.tags if t.startswith("cabin:")), "")
        if event.kind == "reaction":
            reaction = str(data.get("reaction"))
            cabin = str(data.get("cabin", cabin))
        elif event.kind == "alarm":
            reaction = f"alarm:{data.get('kind')}"
        elif event.kind == "emergency_stop":
            reaction = f"stop:{data.get('reason')}"
        else:
            return
        self.seen[(cabin, reaction)].append(round(event.stamp * self.rate_hz))

    def first_at_or_after(self, cabin: str, reaction: str, tick: int) -> int | None:
        later = [t for t in self.seen.get((cabin, reaction), ()) if t >= tick]
        return min(later) if later else None


def run_one(request: RunRequest) -> dict[str, Any]:
    """Run one campaign run and judge it (picklable: runs in worker processes)."""
    return observed_run(request).judged(request)


@dataclass(frozen=True)
class ObservedRun:
    """One run's summary and what was seen of the reactions its fault should cause."""

    summary: dict[str, Any]
    seen: list[dict[str, Any]]
    fault_started: bool

    def judged(self, request: RunRequest) -> dict[str, Any]:
        """The campaign's result for this run of ``request`` (``judged``)."""
        return judged(
            request,
            # (and why each task was left, which a journal's older lines lack: not judged on)
            measured={k: self.summary[k] for k in (*JUDGED, "tasks_left") if k in self.summary},
            seen=self.seen,
            fault_started=self.fault_started,
            board_digest=self.summary["board_digest"],
        )


def observed_run(request: RunRequest) -> ObservedRun:
    """Run ``request`` to its end (or, under a fault, at least ``within`` ticks past the
    fault's start), noting the tick each expected reaction was first seen at."""
    from sim.run.harness import Simulation
    from sim.world.families import load_world

    faults = [request.fault] if request.fault is not None else []
    sim = Simulation(
        request.world if request.world is not None else load_world(request.scenario),
        seed=request.seed,
        faults=faults,
        specs=request.specs,
        extra=[*request.extra, *(cabin.load() for cabin in request.cabins)],
        long_term=request.memory,
    )
    observer = _Observer(sim.rate_hz)
    sim.log.add_listener(observer)
    expected: list[Expectation] = []
    fault = request.fault

    def readings_of(pattern: str) -> list[tuple[str, float | None]]:
        return [(r.key, r.ttl) for r in sim.board.readings(pattern)]

    total = sim.max_ticks if request.ticks is None else request.ticks
    must_run_to = 0 if fault is None else min(total, fault.start + request.within + 1)
    started = fault is None
    for tick in range(total):
        if fault is not None and tick == fault.start:
            expected = expectations(fault, sim.specs, readings_of)
            started = True
        sim.loop.step()
        if sim.done and tick + 1 >= must_run_to:
            break
    summary = sim.summary()
    sim.close()
    seen = [
        {
            "cabin": e.cabin,
            "reaction": e.reaction,
            "because": e.because,
            "seen_at": None
            if fault is None
            else observer.first_at_or_after(e.cabin, e.reaction, fault.start),
        }
        for e in expected
    ]
    return ObservedRun(summary=summary, seen=seen, fault_started=started)


def judged(
    request: RunRequest,
    *,
    measured: Mapping[str, Any],
    seen: Sequence[Mapping[str, Any]],
    fault_started: bool,
    board_digest: str | None,
) -> dict[str, Any]:
    """A run's result judged from what it measured: ``measured``, the summary's fields its
    verdict is judged from (``sim.run.summary.JUDGED``), ``seen``, each reaction expected of
    the fault with the tick it was first seen at or after the fault's start (``seen_at``,
    None if never), and whether the fault started. A live run (``run_one``) and a run taken
    from a journal are judged by this one function, so an entry's verdict, its ``safe``,
    ``ok``, ``reactions_ok`` and ``passed`` are never read from the file, only judged again.
    """
    fault = request.fault
    checks = []
    for e in seen:
        at = e["seen_at"]
        ok = (
            fault is not None
            and at is not None
            and fault.start <= at <= fault.start + request.within
        )
        checks.append(
            {**{k: e[k] for k in ("cabin", "reaction", "because")}, "seen_at": at, "ok": ok}
        )
    verdict = judge(measured)
    collisions = _count(measured.get("collisions"))
    violations = _count(measured.get("safety_violations"))
    safe = violations == 0 and collisions == 0
    # a fault the run never reached tested nothing: it must not pass as "all seen"
    started = fault_started or fault is None
    reactions_ok = started and all(c["ok"] for c in checks)
    return {
        "scenario": request.scenario,
        "cabins": [c.label for c in request.cabins],
        "collision_details": list(measured.get("collision_details") or []),
        "tasks_undeliverable": len(measured.get("tasks_undeliverable") or []),
        "seed": request.seed,
        "fault": request.label,
        "fault_kind": fault.kind if fault is not None else None,
        "expected": checks,
        "fault_started": started,
        "reactions_ok": reactions_ok,
        "safe": safe,
        "passed": safe and reactions_ok and not verdict.failed,
        "verdict": verdict.as_json(),
        "measured": dict(measured),
        "deliveries_done": _count(measured.get("deliveries_done")),
        "tasks_total": _count(measured.get("tasks_total")),
        "tasks_undelivered": list(measured.get("tasks_undelivered") or []),
        "safety_violations": violations,
        "collisions": collisions,
        "ticks": _count(measured.get("ticks")),
        "board_digest": board_digest,
        "error": None,
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


RESULT_FIELDS = frozenset(
    {
        "scenario",
        "cabins",
        "collision_details",
        "tasks_undeliverable",
        "seed",
        "fault",
        "fault_kind",
        "expected",
        "fault_started",
        "reactions_ok",
        "safe",
        "passed",
        "verdict",
        "measured",
        "deliveries_done",
        "tasks_total",
        "tasks_undelivered",
        "safety_violations",
        "collisions",
        "ticks",
        "board_digest",
        "error",
    }
)
"""The fields of every run's result (``run_one``'s and ``crashed_result``'s). ``verdict`` is
the run's verdict as ``--json`` prints it (None for a lost run), ``tasks_undelivered`` the
reachable tasks it left undone, and ``measured`` the summary's fields the verdict is judged
from (``judged``); a journal line without them is not taken, and its run is run again."""


def crashed_result(request: RunRequest, error: str) -> dict[str, Any]:
    return {
        "scenario": request.scenario,
        "cabins": [c.label for c in request.cabins],
        "collision_details": [],
        "tasks_undeliverable": 0,
        "seed": request.seed,
        "fault": request.label,
        "fault_kind": request.fault.kind if request.fault is not None else None,
        "expected": [],
        "fault_started": request.fault is None,
        "reactions_ok": False,
        "safe": False,
        "passed": False,
        "verdict": None,
        "measured": {},
        "deliveries_done": 0,
        "tasks_total": 0,
        "tasks_undelivered": [],
        "safety_violations": 0,
        "collisions": 0,
        "ticks": 0,
        "board_digest": None,
        "error": error,
    }


class RunStore(Protocol):
    """Where a campaign keeps finished runs and finds them again (``sim.run.journal``)."""

    def get(self, request: RunRequest) -> dict[str, Any] | None:
        """The kept result of ``request``, or None when it must run."""

    def append(self, request: RunRequest, result: Mapping[str, Any]) -> None:
        """Keep ``result``, durably, before returning."""


@dataclass
class Campaign:
    """Runs requests on an executor and keeps their results in request order.

    With a ``journal``, runs it holds are not run again, and each run that finishes is
    appended to it at once.
    """

    requests: Sequence[RunRequest]
    executor_factory: Callable[[int], cf.Executor]
    workers: int = 2
    lost_errors: tuple[type[BaseException], ...] = (BrokenProcessPool,)
    runner: Callable[[RunRequest], dict[str, Any]] = run_one
    progress: Callable[[dict[str, Any]], None] | None = None
    results: list[dict[str, Any] | None] = field(default_factory=list)
    journal: RunStore | None = field(default=None, kw_only=True)

    def run(self) -> list[dict[str, Any]]:
        self.results = [None] * len(self.requests)
        pending = []
        for index, request in enumerate(self.requests):
            kept = self.journal.get(request) if self.journal is not None else None
            if kept is None:
                pending.append(index)
            else:
                self.results[index] = kept
                if self.progress is not None:
                    self.progress(kept)
        lost = self._round(pending, self.workers)
        for index in lost:  # retried once, alone, so that a crash is its own
            if self._round([index], 1):
                self._finish(
                    index,
                    crashed_result(self.requests[index], "its worker died, and again on the retry"),
                )
        return [r for r in self.results if r is not None]

    def _round(self, indexes: list[int], workers: int) -> list[int]:
        """Run ``indexes``; return those whose worker died (their run is lost, not failed)."""
        lost: list[int] = []
        executor = self.executor_factory(workers)
        try:
            futures = {executor.submit(self.runner, self.requests[i]): i for i in indexes}
            for future in cf.as_completed(futures):
                index = futures[future]
                try:
                    result = future.result()
                except self.lost_errors:
                    lost.append(index)
                    continue
                except Exception as exc:  # the run itself raised: report it, go on
                    result = crashed_result(self.requests[index], f"{type(exc).__name__}: {exc}")
                self._finish(index, result)
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
        return sorted(lost)

    def _finish(self, index: int, result: dict[str, Any]) -> None:
        self.results[index] = result
        if self.journal is not None:
            self.journal.append(self.requests[index], result)
        if self.progress is not None:
            self.progress(result)


def local_executor(workers: int) -> cf.Executor:
    import multiprocessing

    return cf.ProcessPoolExecutor(
        max_workers=workers,
        initializer=quiet_worker,
        mp_context=multiprocessing.get_context("spawn"),
    )


def table(results: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per fault: reactions seen in x of n runs, deliveries done of the tasks, safety,
    and its runs' verdicts (``verdicts``: how many runs ended with each status)."""
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        row = rows.setdefault(
            r["fault"],
            {
                "fault": r["fault"],
                "runs": 0,
                "reactions_seen": 0,
                "expected": set(),
                "delivered": 0,
                "tasks": 0,
                "safety_violations": 0,
                "collisions": 0,
                "errors": 0,
                "not_started": 0,
                "passed": 0,
                "verdicts": {},
            },
        )
        row["runs"] += 1
        row["reactions_seen"] += int(r["reactions_ok"] and r["error"] is None)
        row["expected"].update(f"{c['cabin']} {c['reaction']}" for c in r["expected"])
        row["delivered"] += r["deliveries_done"]
        row["tasks"] += r["tasks_total"]
        row["safety_violations"] += r["safety_violations"]
        row["collisions"] += r["collisions"]
        row["errors"] += int(r["error"] is not None)
        row["not_started"] += int(r["error"] is None and not r.get("fault_started", True))
        row["passed"] += int(r["passed"])
        status = verdict_status(r)
        row["verdicts"][status] = row["verdicts"].get(status, 0) + 1
    out = []
    for row in rows.values():
        row["expected"] = sorted(row["expected"])
        row["deliveries_pct"] = 100.0 * row["delivered"] / row["tasks"] if row["tasks"] else 0.0
        out.append(row)
    return out


def passed(results: Iterable[Mapping[str, Any]]) -> bool:
    """Whether every run passed: its declared reactions seen and its verdict not failed."""
    return all(r["passed"] for r in results)


def verdict_status(result: Mapping[str, Any]) -> str:
    """A run result's verdict status (``passed``, ``cut_short``, ``failed``), ``lost`` for a
    run that ended in an error, ``unknown`` for a result from before verdicts."""
    if result.get("error") is not None:
        return "lost"
    verdict = result.get("verdict")
    if isinstance(verdict, Mapping) and isinstance(verdict.get("status"), str):
        return str(verdict["status"])
    return "unknown"
