"""A simulation: one scenario's world driving one tickwork runtime, headless.

``Simulation`` wires a ``World`` to a state board, a cabin map, an event log,
working memory and a ``TickLoop`` running the cabins: the world's sensors write
before each freeze, and the world moves on the cabins' commands after each
apply. It counts what a person wants to know after a run (deliveries, safety
violations, collisions, re-plans, alarms, evictions, capacity pressure per cabin,
missing items, and whether it kept making progress: waits, give-ways, stalled episodes,
deferred and abandoned tasks, the lowest battery), judges it (``sim.run.verdict``) and
keeps a digest of every board write, so two runs can be compared tick for tick; its
summary also carries digests of the final world, working memory and event log.

With ``long_term`` (a SQLite file or a ``LongTermMemory``), the planner remembers where
its way was blocked, scoped to the scenario's name, and recalls it in later runs. The
loop writes what it asks to keep through a ``MemoryWriter``: queued in the tick's apply
phase, applied between ticks (after the world moved), each outcome a ``memory_written``
event, and the last of them applied when the simulation closes.

A simulation runs on a ``SimClock`` by default, as fast as it can, exactly. With
``realtime=True`` it runs on a ``WallClock``, paced to its rate (overruns counted and
handled by ``overrun``, an ``OverrunPolicy``), and asynchronous cabins decide on worker
threads and meet real latency. On the simulated clock their latency is simulated, drawn
from a generator seeded by the run's seed (apart from the world's), so a run with
asynchronous cabins stays the same run tick for tick.

A ``Simulation`` is checkpointed as data (``sim.run.checkpoint``): rebuilt from its
inputs, its components are given their state back (``_derived`` names what is not
state); ``attach_recorder`` gives a resumed one a recorder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from cabins.shipped import shipped_specs_dir
from cabins.warehouse.registry import CHARGE_REPLANS
from cabins.warehouse.tasks import refused_key
from cabins.warehouse.values import PLAN, ROUTE
from runtime import (
    Assembler,
    Cabin,
    CabinMap,
    ContextSpec,
    Event,
    EventLog,
    Reading,
    Scratchpad,
    SimClock,
    StateBoard,
    TickLoop,
    TickResult,
    WallClock,
    WorkingMemory,
    load_specs,
)
from runtime.agent.memory import LongTermMemory, Remembered
from runtime.agent.writer import MemoryWriter
from runtime.cabin import MemoryWrite, timing_of
from runtime.clock import Clock
from runtime.errors import SettingError, TickworkError
from runtime.files import InputFileError, read_input
from runtime.jsonable import to_json
from runtime.loop import OverrunPolicy
from runtime.recording.timebase import EPOCH, TimeBase
from runtime.recording.writer import MessageSink, Recorder
from runtime.settings import settings_from_spec
from runtime.snapshot import JsonValue, StateError
from sim.faults.injection import FaultInjector
from sim.faults.model import Fault, FaultPlan
from sim.run.left import TaskTrail, left
from sim.run.sweep import ScanReading
from sim.run.verdict import judge
from sim.run.view import FoxgloveView
from sim.world.scenario import Scenario, load_scenario
from sim.world.world import World

MAX_TIME = 1e9
"""The latest simulated time (s) a checkpoint may hold (a recording stamps nanoseconds)."""

if TYPE_CHECKING:
    from sim.run.ros2_bag import Ros2Recorder

SPECS_DIR = shipped_specs_dir()
"""The shipped cabin specs: ``specs/planner.toml``, ``executor.toml``, ``monitor.toml``."""

BUILTIN_CABINS = ("planner", "executor", "monitor")

CabinFactory = Callable[[ContextSpec], Cabin]


def builtin_cabins(
    specs: Mapping[str, ContextSpec],
    *,
    long_term: LongTermMemory | None = None,
    memory_scope: Mapping[str, str] | None = None,
) -> list[Cabin]:
    """The planner, executor and monitor, built on their specs (in that order); the
    planner remembers in ``long_term``, within ``memory_scope``, when one is given."""
    from cabins.executor import Executor
    from cabins.monitor import Monitor
    from cabins.planner import Planner

    planner: Any = Planner
    if long_term is not None:
        planner = partial(Planner, long_term=long_term, memory_scope=memory_scope)
    factories: dict[str, tuple[Any, type]] = {
        "planner": (planner, Planner),
        "executor": (Executor, Executor),
        "monitor": (Monitor, Monitor),
    }
    missing = [name for name in BUILTIN_CABINS if name not in specs]
    if missing:
        raise SettingError(f"no spec for the built-in cabin(s) {', '.join(missing)}")
    built: list[Cabin] = []
    for name in BUILTIN_CABINS:
        factory, cls = factories[name]
        settings = settings_from_spec(cls, specs[name])  # its spec's [params]
        built.append(factory(specs[name], settings))
    return built


def canonical(value: Any) -> Any:
    """A JSON-able, order-stable form of a frozen board value (for digests and output)."""
    kind = type(value)  # the common exact types first, without the ABC checks below
    if kind is float:
        return value if math.isfinite(value) else repr(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is tuple or kind is list:
        return [canonical(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (tuple, list)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=repr)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "model_dump"):
        return canonical(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # e.g. Feature, Event
        return {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "geom_type") and hasattr(value, "wkb_hex"):  # a shapely geometry, exactly
        return value.wkb_hex
    return repr(value)


_COMPACT = json.JSONEncoder(separators=(",", ":"))
"""``json.dumps(record, separators=(",", ":"))``, without building an encoder per call."""

_make_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # None without _json
_C_ENCODER = (
    None
    if _make_c_encoder is None
    else _make_c_encoder(
        None,  # no circular check: canonical values are trees
        _COMPACT.default,
        json.encoder.encode_basestring_ascii,  # ensure_ascii, as _COMPACT
        None,  # no indent
        ":",
        ",",
        False,  # sort_keys
        False,  # skipkeys
        True,  # allow_nan
    )
)
"""The C encoder ``_COMPACT.encode`` makes on every call (with the same settings: the
same text), made once. It keeps no state between calls."""


def _json_bytes(record: Any) -> bytes:
    if _C_ENCODER is None:
        return _COMPACT.encode(record).encode()
    return "".join(_C_ENCODER(record, 0)).encode()


def _finite_floats(values: tuple[Any, ...]) -> bool:
    """Whether every entry is a finite float (a pose, a velocity: most board writes)."""
    return all(type(v) is float and math.isfinite(v) for v in values)


def _run_id(value: Any, where: str) -> None:
    if not (isinstance(value, str) and len(value) == 32 and all(c in _HEX for c in value)):
        raise StateError(f"{where}: not a run id")


def _sha256(value: Any, where: str) -> None:
    if not (isinstance(value, bytes) and len(value) == 32):
        raise StateError(f"{where}: not 32 bytes of a sha256")


_HEX = frozenset("0123456789abcdef")


class _Digest:
    """A sha256 chain over every board write and delete: ``h = sha256(h + record)``.

    The chain value is plain bytes, so a checkpoint holds it and a resumed run goes
    on with the same chain; equal digests mean equal sequences of writes.
    """

    _state_types: ClassVar[dict[str, Any]] = {"value": _sha256, "writes": int}

    def __init__(self) -> None:
        self.value = bytes(32)
        self.writes = 0

    def __call__(self, reading: Reading | None, key: str) -> None:
        self.writes += 1
        if reading is None:
            record: Any = ["delete", key]
        else:
            value = reading.value
            if not (type(value) is tuple and _finite_floats(value)):
                value = canonical(value)  # a tuple of finite floats is its own JSON text
            record = [reading.seq, key, value, reading.stamp, reading.ttl, reading.source]
        self.value = hashlib.sha256(self.value + _json_bytes(record)).digest()

    def hexdigest(self) -> str:
        return self.value.hex()


def memory_digest(memory: WorkingMemory) -> str:
    """sha256 of working memory: its items in order, with their scores and provenance,
    and its eviction counters."""
    items = [
        [i.key, i.value, i.importance, i.last_used, i.first_seen, i.source, i.stamp, i.seq, i.via]
        for i in memory.items()
    ]
    payload = [items, memory.evicted_total, memory.capacity_alarms, memory.capacity_alarm]
    return hashlib.sha256(_json_bytes(canonical(payload))).hexdigest()


def log_digest(log: EventLog) -> str:
    """sha256 of the event log: every held event in order, and how many were dropped."""
    h = hashlib.sha256(_json_bytes([log.seq, log.dropped]))
    for event in log.query(-math.inf, limit=None):
        h.update(
            _json_bytes(
                canonical([event.seq, event.stamp, event.kind, sorted(event.tags), event.data])
            )
        )
    return h.hexdigest()


class _EventTally:
    """Counts the events of a run that its summary reports: re-plans (the last one kept for a
    collision's detail), alarms, stops and reactions by kind, and what shows whether the run
    kept making progress (waits, give-ways, no-progress re-plans, re-plans to charge first
    by reason, reserves waived, stalled episodes, deferred and abandoned tasks,
    capacity-pressure episodes by spec); and the tasks a cabin refused
    (``task_refused``, until a ``task_resumed``)."""

    _state_types: ClassVar[dict[str, Any]] = {
        "kinds": Mapping[str, int],
        "alarms": Mapping[str, int],
        "stops": Mapping[str, int],
        "reactions": Mapping[str, int],
        "replan_reasons": Mapping[str, int],
        "pressure": Mapping[str, int],
        "last_replan": dict[str, JsonValue] | None,
        "stalls": list[dict[str, JsonValue]],
        "deferred": Mapping[str, Mapping[str, int]],
        "abandoned": dict[str, str],
        "refused": dict[str, dict[str, str]],
    }

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.alarms: Counter[str] = Counter()
        self.stops: Counter[str] = Counter()
        self.reactions: Counter[str] = Counter()
        self.last_replan: dict[str, Any] | None = None
        self.replan_reasons: Counter[str] = Counter()
        self.stalls: list[dict[str, Any]] = []
        self.deferred: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.abandoned: dict[str, str] = {}
        self.refused: dict[str, dict[str, str]] = {}  # task -> the cabin and its reason
        self.pressure: Counter[str] = Counter()
        self.trail = TaskTrail()  # why each task undelivered at the end was left

    def __call__(self, event: Event) -> None:
        self.kinds[event.kind] += 1
        self.trail(event)
        data = event.data if isinstance(event.data, Mapping) else {}
        if event.kind == "replan":
            self.last_replan = {"time": event.stamp, **canonical(data)}
            self.replan_reasons[str(data.get("reason", "unknown"))] += 1
        elif event.kind == "alarm":
            self.alarms[str(data.get("kind", "unknown"))] += 1
            if data.get("kind") == "stalled":
                self.stalls.append(_stall(event.stamp, data))
        elif event.kind == "emergency_stop":
            self.stops[str(data.get("reason", "unknown"))] += 1
        elif event.kind == "reaction":
            self.reactions[f"{data.get('cabin')}:{data.get('reaction')}"] += 1
        elif event.kind == "task_deferred":
            self.deferred[str(data.get("task", "?"))][str(data.get("reason", "unknown"))] += 1
        elif event.kind == "task_abandoned":
            self.abandoned[str(data.get("task", "?"))] = str(data.get("reason", "unknown"))
        elif event.kind == "task_refused":
            self.refused[str(data.get("task", "?"))] = {
                "cabin": str(data.get("cabin", "?")),
                "reason": str(data.get("reason", "unknown")),
            }
        elif event.kind == "task_resumed":
            self.refused.pop(str(data.get("task", "?")), None)
        elif event.kind == "capacity_pressure":
            self.pressure[str(data.get("spec", "unknown"))] += 1

    def liveness(self) -> dict[str, Any]:
        """The summary's liveness rows."""
        return {
            "waits": self.kinds["wait_for_obstacles"],
            "give_ways": self.kinds["give_way"],
            "no_progress_replans": self.replan_reasons["no_progress"],
            "charge_replans": {
                reason: self.replan_reasons[reason]
                for reason in sorted(CHARGE_REPLANS)
                if self.replan_reasons[reason]
            },
            "reserves_waived": self.kinds["reserve_waived"],
            "stalled_episodes": len(self.stalls),
            "stalls": [dict(s) for s in self.stalls],
            "tasks_deferred": {
                task: dict(sorted(reasons.items()))
                for task, reasons in sorted(self.deferred.items())
            },
            "tasks_abandoned": dict(sorted(self.abandoned.items())),
            "capacity_pressure": dict(sorted(self.pressure.items())),
        }


def _stall(stamp: float, data: Mapping[str, Any]) -> dict[str, Any]:
    """A stalled episode as the summary lists it: when, the task and step, why, how long."""
    return {
        "time": stamp,
        **{k: canonical(data.get(k)) for k in ("task", "step", "cause", "seconds")},
    }


@dataclass(frozen=True, slots=True)
class ExtraCabin:
    """A user cabin to run beside the built-in ones."""

    spec: ContextSpec
    factory: CabinFactory


class CabinBuildError(SettingError):
    """A user's cabin could not be built on its spec, or is not the cabin its spec names."""


def build_extra(cabin: ExtraCabin, *, long_term: LongTermMemory | None = None) -> Cabin:
    """``cabin.factory(cabin.spec)``, checked: whatever the user's constructor raises
    becomes one ``CabinBuildError`` naming the class and the spec, and the cabin built must
    be a cabin (``name``, ``spec``, ``step``) that answers to its spec's name. A cabin whose
    constructor takes a ``long_term`` keyword (an agent cabin recalls from it) is given the
    run's long-term memory, when it has one."""
    what = getattr(cabin.factory, "__qualname__", repr(cabin.factory))
    name = cabin.spec.name
    target = cabin.factory.func if isinstance(cabin.factory, partial) else cabin.factory
    settings = settings_from_spec(target, cabin.spec)  # its spec's [params], if it has any
    factory: Any = cabin.factory
    if long_term is not None and _takes_keyword(target, "long_term"):
        factory = partial(factory, long_term=long_term)
    try:
        given = {} if settings is None else {"settings": settings}  # its spec's [params]
        built: Cabin = factory(cabin.spec, **given)
    except TickworkError:
        raise
    except Exception as exc:
        raise CabinBuildError(
            f"cabin {what} could not be built on the spec of {name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    missing = [a for a in ("name", "spec", "step") if not hasattr(built, a)]
    if missing:
        raise CabinBuildError(
            f"{what}(spec) on the spec of {name!r} gave a {type(built).__name__}, which is "
            f"not a cabin (it has no {', '.join(missing)})"
        )
    if built.name != name or getattr(built.spec, "name", None) != name:
        raise CabinBuildError(
            f"{what} built on the spec of {name!r} calls itself {built.name!r} with the spec "
            f"of {getattr(built.spec, 'name', None)!r}: a cabin must keep the spec it is given"
        )
    if not callable(built.step):
        raise CabinBuildError(f"{what} on the spec of {name!r}: its step is not callable")
    return built


def _takes_keyword(factory: Any, name: str) -> bool:
    """Whether ``factory`` (a class or a function) takes a keyword argument ``name``."""
    import inspect

    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a callable without a signature
        return False


MAX_MODULE_BYTES = 16 << 20
"""The largest user cabin module (or package ``__init__``) imported."""


@dataclass(frozen=True, slots=True)
class CabinRef:
    """A user cabin by reference: ``module:cls``, its spec as the driver loaded it, and the
    folder ``module`` is imported from. It pickles as plain data, so a campaign's worker
    processes (local or Ray) build the cabin themselves."""

    module: str
    cls: str
    spec: ContextSpec
    folder: str

    @property
    def label(self) -> str:
        return f"{self.module}:{self.cls}"

    def load(self) -> ExtraCabin:
        """Import the class (from ``folder`` when it is not importable already) and pair it
        with the spec; a ``SettingError`` saying why when it cannot be."""
        import importlib
        import sys

        if self.folder and self.folder not in sys.path:
            sys.path.insert(0, self.folder)
        self._check_sources()
        try:
            module = importlib.import_module(self.module)
        except ImportError as exc:
            raise SettingError(
                f"cabin {self.label}: cannot import module {self.module!r} "
                f"(from {self.folder}): {exc}"
            ) from None
        except Exception as exc:  # the module raised as it ran (a SyntaxError too)
            raise SettingError(
                f"cabin {self.label}: importing module {self.module!r} raised "
                f"{type(exc).__name__}: {exc}"
            ) from None
        factory = getattr(module, self.cls, None)
        if factory is None or not callable(factory):
            raise SettingError(
                f"cabin {self.label}: module {self.module!r} has no class {self.cls!r}"
            )
        return ExtraCabin(spec=self.spec, factory=factory)

    def _check_sources(self) -> None:
        """Refuse a module (or a package on its way) whose source is not a regular file of at
        most ``MAX_MODULE_BYTES``, before Python reads it (``greeter.py`` linked to
        ``/dev/zero`` would be read without end). Each level is found only once the levels
        above it were checked, as finding it imports them."""
        import importlib.util
        import sys

        parts = self.module.split(".")
        for level in range(1, len(parts) + 1):
            name = ".".join(parts[:level])
            if name in sys.modules:
                continue
            try:
                found = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                return  # the import says why
            except Exception as exc:  # a package above raised as it ran
                raise SettingError(
                    f"cabin {self.label}: importing {name!r} raised {type(exc).__name__}: {exc}"
                ) from None
            if found is None or not found.has_location or found.origin is None:
                return
            try:
                read_input(found.origin, limit=MAX_MODULE_BYTES, what="a Python module")
            except InputFileError as exc:
                raise SettingError(f"cabin {self.label}: {exc}") from None


def _check_names(
    specs: Mapping[str, ContextSpec], extra: Sequence[ExtraCabin], faults: Sequence[Fault]
) -> None:
    """Refuse a user cabin named as a built-in one or as another spec, two cabins of one
    name, and faults aimed at a cabin the run does not have."""
    names = [*BUILTIN_CABINS, *(c.spec.name for c in extra)]  # the loop's order
    FaultPlan(faults).check_cabins(names)
    for cabin in extra:
        if cabin.spec.name in specs and cabin.spec.name not in BUILTIN_CABINS:
            raise SettingError(f"two cabins are named {cabin.spec.name!r}")
        if cabin.spec.name in BUILTIN_CABINS:
            raise SettingError(f"cabin name {cabin.spec.name!r} is taken by a built-in cabin")
    if len(set(names)) != len(names):
        raise SettingError(f"two cabins have one name: {', '.join(names)}")


def _long_term_start(memory: LongTermMemory | None, scope: dict[str, str]) -> dict[str, Any] | None:
    """What long-term memory held for ``scope`` when the run started (None without one)."""
    if memory is None:
        return None
    return {
        "scope": scope,
        "records": [
            {"content": r.content, "metadata": to_json(r.metadata), "stamp": r.stamp}
            for r in memory.records(scope=scope)
        ],
    }


class Simulation:
    """One headless run of a scenario."""

    ros2: Ros2Recorder | None = None
    """The run's ROS 2 bag, if it records one (none after a checkpoint is loaded)."""

    def __init__(
        self,
        scenario: Scenario | str | Path = "warehouse",
        *,
        seed: int = 0,
        rate_hz: float | None = None,
        capacity: int = 64,
        specs: Mapping[str, ContextSpec] | None = None,
        extra: Sequence[ExtraCabin] = (),
        faults: Sequence[Fault] = (),
        record: str | Path | None = None,
        long_term: str | Path | LongTermMemory | None = None,
        realtime: bool = False,
        overrun: OverrunPolicy | None = None,
        sinks: Sequence[MessageSink] = (),
        ros2: str | Path | None = None,
        time_base: TimeBase = EPOCH,
    ) -> None:
        """``record``: the tickwork recording (MCAP); ``ros2``: a ROS 2 bag of the run
        (``sim.run.ros2_bag``). ``time_base``: the run's wall-clock start, taken by the caller
        when the run starts; its recording and live view log every message at start + run
        time (``runtime.recording.timebase``; the default, none, logs at run time)."""
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self.seed = seed
        # names this run in its recording and its checkpoints (not part of its state)
        self.run_id = uuid.uuid4().hex
        self.time_base = time_base
        self.rate_hz = float(rate_hz if rate_hz is not None else self.scenario.rate_hz)
        self.dt = 1.0 / self.rate_hz
        specs = dict(specs if specs is not None else load_specs(SPECS_DIR))
        _check_names(specs, extra, faults)  # before anything is opened or written
        memory = self._open_long_term(long_term)
        try:
            users = [build_extra(cabin, long_term=memory) for cabin in extra]
        except BaseException:
            if self._own_memory is not None:
                self._own_memory.close()
            raise
        scope = {"scenario": self.scenario.name}
        cabins = builtin_cabins(specs, long_term=memory, memory_scope=scope)
        # what the planner knew when the run started, so that a replay knows it too
        self.long_term_start = _long_term_start(memory, scope)
        for cabin, built in zip(extra, users, strict=True):
            specs[cabin.spec.name] = cabin.spec
            cabins.append(built)
        self.specs = specs
        self.cabin_names = [c.name for c in cabins]  # the loop's order
        self.timings = {c.name: timing_of(c) for c in cabins if timing_of(c).is_async}
        self.realtime = bool(realtime)
        self._make_sources(capacity)
        if ros2 is not None:
            from sim.run.ros2_bag import Ros2Recorder

            self.ros2 = Ros2Recorder(
                ros2,
                self.scenario,
                rate_hz=self.rate_hz,
                run_id=self.run_id,
                start_ns=time_base.start_ns or None,  # one time axis with the recording
            )
        if record is not None or sinks:
            try:
                recorder = Recorder(
                    record,
                    metadata=self.metadata(capacity, faults),
                    sinks=sinks,
                    time_base=time_base,
                )
            except BaseException:
                if self.ros2 is not None:
                    self.ros2.discard()
                raise
            self.attach_recorder(recorder)
        self.world.install(self.board, self.cabin_map)
        self.faults = FaultPlan(faults)
        self.injector = FaultInjector(
            self.faults, board=self.board, cabin_map=self.cabin_map, log=self.log
        )
        self.writer = (
            None if memory is None else MemoryWriter(memory, on_written=self.memory_written)
        )
        self._make_loop(cabins, extra, overrun)
        self.missing: dict[str, Counter[str]] = defaultdict(Counter)
        self.collision_details: list[dict[str, Any]] = []
        self.wall_seconds = 0.0
        self.stopped_by: str | None = None  # why the last run() ended early, if it did
        self._stop_request: str | None = None
        self._results_listeners: list[Callable[[TickResult], None]] = []

    def _open_long_term(
        self, long_term: str | Path | LongTermMemory | None
    ) -> LongTermMemory | None:
        """The long-term memory the planner recalls from: one opened from a path is this
        simulation's to close (``_own_memory``); one passed in is not."""
        self._own_memory = (
            LongTermMemory(str(long_term)) if isinstance(long_term, (str, Path)) else None
        )
        memory = self._own_memory if self._own_memory is not None else long_term
        if memory is not None and not isinstance(memory, LongTermMemory):
            raise TypeError(
                f"long_term must be a SQLite file path or a LongTermMemory, got "
                f"{type(long_term).__name__}"
            )
        return memory

    def _make_sources(self, capacity: int) -> None:
        """The clock, the board, map and log under one lock, working memory, the world and
        its generator, the decisions' generator, and the listeners of the board and log."""
        self.clock: Clock = WallClock() if self.realtime else SimClock()
        lock = self._lock = threading.RLock()
        self.board = StateBoard(clock=self.clock, lock=lock)
        self.cabin_map = CabinMap(lock=lock)
        self.log = EventLog(clock=self.clock, lock=lock)
        self.memory = WorkingMemory(capacity=capacity)
        self.rng = np.random.default_rng(self.seed)
        self.world = World(self.scenario, rng=self.rng)
        # simulated decision latencies: seeded by the run's seed, apart from the world's draws
        self.decision_rng = np.random.default_rng(np.random.SeedSequence(self.seed).spawn(1)[0])
        self.digest = _Digest()
        self.tally = _EventTally()
        self.board.add_listener(self.digest)
        self.log.add_listener(self.tally)
        self.recorder: Recorder | None = None
        self.view: FoxgloveView | None = None
        self.log.add_listener(self._view_event)

    def _make_loop(
        self, cabins: list[Cabin], extra: Sequence[ExtraCabin], overrun: OverrunPolicy | None
    ) -> None:
        """The assembler of the cabins' specs and the loop that runs them (under the fault
        plan), the simulation its hook."""
        used = [self.specs[c.name] for c in cabins]
        # every cabin a user brings gets a scratchpad of its own (an LLM cabin keeps notes)
        pads = {c.spec.name: Scratchpad(lock=self._lock) for c in extra}
        self.assembler = Assembler(
            self.board, self.cabin_map, self.log, self.memory, used, scratchpads=pads
        )
        self.loop = TickLoop(
            self.assembler,
            self.injector.wrap(cabins),
            self.rate_hz,
            self.clock,
            hooks=(self,),
            suppress=self.injector.suppress if self.faults else None,
            long_term=self.writer,
            overrun=overrun,
            rng=self.decision_rng,
        )

    _derived = (
        "scenario", "seed", "rate_hz", "dt", "specs", "cabin_names", "timings", "realtime",
        "recorder", "ros2", "_own_memory", "faults", "_results_listeners", "stopped_by",
        "_stop_request",
    )  # fmt: skip
    """What a checkpoint does not hold: the run's inputs (it is rebuilt from them), its
    recorder and listeners, and what a resumed run starts afresh."""
    _state_types: ClassVar[dict[str, Any]] = {
        "run_id": _run_id,
        "long_term_start": dict[str, JsonValue] | None,
        "missing": Mapping[str, Mapping[str, int]],
        "collision_details": list[dict[str, JsonValue]],
        "wall_seconds": float,
        "time_base": TimeBase,
    }
    """What the plain attributes a checkpoint gives back must hold."""

    def prepare_restore(self, state: Any) -> None:
        """Before a checkpoint's state is given back: a run that recorded had a Foxglove
        view, whose state goes on (its sink is the recorder ``attach_recorder`` gives)."""
        body = state.get("$o") if isinstance(state, dict) else None
        attributes = body[1] if isinstance(body, list) and len(body) == 2 else None
        view = attributes.get("view") if isinstance(attributes, dict) else None
        if view is not None and self.view is None:
            self.view = FoxgloveView(None, self.scenario)  # type: ignore[arg-type]

    def check_state(self) -> None:
        """After a checkpoint gave the run its state: its times are the clock's or earlier,
        and the clock within what a recording can stamp."""
        now = self.clock.now()
        if not 0.0 <= now <= MAX_TIME:
            raise StateError(f"clock: {now} s is outside [0, {MAX_TIME:g}]")
        start = self.loop._start
        if start is not None and not 0.0 <= start <= now:
            raise StateError(f"loop._start: {start} is not a time before the clock's {now}")
        if any(r.stamp > now for r in self.board.readings()):
            raise StateError("board: a reading stamped after the clock's time")
        last = self.log.query(-math.inf, limit=1)
        if last and last[-1].stamp > now:
            raise StateError("log: an event stamped after the clock's time")
        if not 0 <= self.loop.tick <= MAX_TIME * self.rate_hz:
            raise StateError(f"loop.tick: {self.loop.tick} is out of range")

    def finish_restore(self) -> None:
        """After a checkpoint's state was given back: nothing is carried over from the run
        that wrote it but its state."""
        self.stopped_by = self._stop_request = None

    def memory_written(self, write: MemoryWrite, outcome: Remembered) -> None:
        """Log a long-term write's outcome (the writer's ``on_written``)."""
        data: dict[str, Any] = {
            "content": write.content,
            "stored": outcome.stored,
            "why": outcome.reason,
            "evicted": len(outcome.evicted),
        }
        subject = (write.metadata.get("memory") or {}).get("subject")
        if subject is not None:
            data["subject"] = subject
        if outcome.similar_to is not None:
            data["similar_to"] = outcome.similar_to
        if outcome.replaced is not None:
            data["replaced"] = outcome.replaced
        self.log.append("memory_written", data, tags=("memory",))

    def attach_recorder(self, recorder: Recorder) -> None:
        """Record the run from now on (a simulation rebuilt from a checkpoint has none)."""
        if self.recorder is not None:
            raise SettingError("this simulation already has a recorder")
        self.recorder = recorder
        recorder.attach(self.board, self.log)
        if self.view is None:
            self.view = FoxgloveView(recorder, self.scenario, time_base=recorder.time_base)
        else:  # resumed from a checkpoint: the scene goes on as thinned so far
            self.view.sink = recorder
            self.view.time_base = recorder.time_base

    def _view_event(self, event: Event) -> None:
        if self.view is not None:
            self.view.on_event(event)

    def metadata(self, capacity: int, faults: Sequence[Fault]) -> dict[str, Any]:
        """What a recording says about the run that made it."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            tickwork = version("tickwork")
        except PackageNotFoundError:
            tickwork = "unknown"
        return {
            "run_id": self.run_id,
            "scenario": self.scenario.name,
            "scenario_toml": self.scenario.model_dump_json(),
            "seed": str(self.seed),
            "rate_hz": repr(self.rate_hz),
            "capacity": str(capacity),
            "specs": json.dumps({n: s.model_dump(mode="json") for n, s in self.specs.items()}),
            "cabins": json.dumps(self.cabin_names),
            "faults": json.dumps([f.label for f in faults]),
            "timing": json.dumps({n: t.model_dump(mode="json") for n, t in self.timings.items()}),
            "clock": "wall" if self.realtime else "sim",
            "tickwork_version": tickwork,
            **(
                {}
                if self.long_term_start is None
                else {"long_term": json.dumps(self.long_term_start)}
            ),
        }

    def close(self) -> None:
        """Finish the recording, if there is one, and close a long-term memory opened from
        a path, and stop the threads of asynchronous decisions. Safe to call twice."""
        self.loop.close()
        if self.writer is not None and self.writer.memory is not None:
            self.writer.flush()  # nothing asked for is lost at shutdown
        if self.recorder is not None:
            if not self.recorder.closed:  # the last tick's outcome is only in the summary
                self.recorder.add_metadata("summary", {"json": json.dumps(self.summary())})
            self.recorder.close()
        if self.ros2 is not None:
            self.ros2.close()
        if self._own_memory is not None:
            self._own_memory.close()

    @property
    def max_ticks(self) -> int:
        """Ticks in the scenario's duration."""
        return round(self.scenario.duration * self.rate_hz)

    def add_tick_listener(self, listener: Callable[[TickResult], None]) -> None:
        self._results_listeners.append(listener)

    def before_freeze(self, tick: int, now: float) -> None:
        if self.recorder is not None:
            self.recorder.before_freeze(tick, now)
        if self.faults:
            self.injector.before_sense(tick)
        self.world.sense(self.injector.board, self.injector.cabin_map, now)
        if self.ros2 is not None:  # the tick as the robot sensed it
            self.ros2.record(tick, now, self.board, self.world)

    def after_apply(self, result: TickResult) -> None:
        stats = self.world.state.stats
        before = (stats.collisions, stats.safety_violations)
        self.world.apply(result.commands, result.time, self.dt)
        if self.writer is not None and self.writer.memory is not None:
            self.writer.flush()  # between ticks: the writes the apply phase queued
        if stats.collisions > before[0]:
            for contact in self.world.collisions[before[0] :]:
                detail = self.collision_detail(contact, result.tick)
                self.collision_details.append(detail)
                self.log.append(
                    "collision",
                    {"total": stats.collisions, **detail},
                    tags=("incident",),
                )
        if stats.safety_violations > before[1]:
            self.log.append(
                "safety_violation",
                {"tick": result.tick, "total": stats.safety_violations},
                tags=("incident",),
            )
        if self.recorder is not None:
            self.recorder.record_tick(result)
        if self.view is not None:
            # the scanner as the tick sensed it (only the world's sensing writes the two
            # keys), read as the ROS 2 recorder reads it
            scan = ScanReading.read(self.board)
            self.view.after_tick(result, self.world, self.board.value(ROUTE), scan)
        if self.recorder is not None:
            self.recorder.end_tick(result.tick, result.time)
        for view in result.views:
            counts = self.missing[view.cabin]
            for reason in view.missing.values():
                counts[reason] += 1
        for listener in self._results_listeners:
            listener(result)

    def collision_detail(self, contact: Any, tick: int) -> dict[str, Any]:
        """What a collision event says: what was hit, where, at what speed and heading, and
        the last re-plan before it (None if there was none)."""
        last = self.tally.last_replan
        return {
            "tick": tick,
            "hit": contact.hit,
            "x": round(contact.x, 3),
            "y": round(contact.y, 3),
            "speed": round(contact.speed, 3),
            "heading": round(contact.heading, 3),
            "turn_rate": round(contact.turn_rate, 3),
            "last_replan": None
            if last is None
            else {**last, "ago": round(contact.time - float(last["time"]), 3)},
        }

    def refused_tasks(self, undelivered: Sequence[str]) -> dict[str, dict[str, str]]:
        """The tasks of ``undelivered`` a cabin refused (the planner said so and has not taken
        them up again): task -> the cabin and its reason. The cabin is the writer of the
        refusal on the board, while it is there (the value's word otherwise)."""
        out: dict[str, dict[str, str]] = {}
        for task, said in sorted(self.tally.refused.items()):
            if task in undelivered:
                reading = self.board.read(refused_key(task))
                cabin = reading.source if reading is not None and reading.source else said["cabin"]
                out[task] = {"cabin": cabin, "reason": said["reason"]}
        return out

    def left_tasks(self, undelivered: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Why each task of ``undelivered`` was left (``sim.run.left``): from the planner's
        events, the world's record of the tasks and the ``plan`` value on the board."""
        if not undelivered:
            return {}
        reading = self.board.read(PLAN)
        plan = reading.value if reading is not None and isinstance(reading.value, Mapping) else {}
        in_hand, step = plan.get("task"), plan.get("current")
        tasks = self.world.state.tasks
        found = left(
            self.tally.trail,
            undelivered,
            in_hand=in_hand if isinstance(in_hand, str) else None,
            step=step if isinstance(step, str) else None,
            released={ts.id: ts.goal_posted for ts in tasks},
            picked={ts.id: ts.picked_at for ts in tasks},
        )
        return {task: why.as_json() for task, why in found.items()}

    def cabin_rows(self, activity: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """One row per cabin, in the loop's order (the built-in ones, then the user's): what
        it did (``runtime.activity``) and its missing items by reason (pattern-ticks)."""
        rows: dict[str, dict[str, Any]] = {}
        for name in self.cabin_names:
            counts = activity.get(name)
            rows[name] = {
                **(counts.as_dict() if counts is not None else {}),
                "missing": dict(sorted(self.missing.get(name, {}).items())),
            }
        return rows

    @property
    def done(self) -> bool:
        return self.world.all_delivered

    def request_stop(self, reason: str) -> None:
        """Ask ``run`` to stop once the tick in progress is over: a signal handler calls
        this, so that no tick and no recorded message is cut in half. The run that stops
        for it reports ``reason`` as ``stopped_by``; one that had no tick left does not."""
        self._stop_request = reason

    def run(
        self,
        ticks: int | None = None,
        *,
        until_done: bool = True,
        progress: Callable[[int], None] | None = None,
        after_tick: Callable[[Simulation], None] | None = None,
    ) -> dict[str, Any]:
        """Run ``ticks`` more ticks (default: the scenario's duration), stopping early once
        every delivery is done when ``until_done``; return the summary.

        ``after_tick(self)`` is called after every tick, except the one at which the run
        stops because the deliveries are done (e.g. to write a checkpoint).
        """
        import time

        total = self.max_ticks if ticks is None else ticks
        started = time.perf_counter()
        try:
            self.stopped_by = None
            for _ in range(total):
                if self._stop_request is not None:
                    self.stopped_by, self._stop_request = self._stop_request, None
                    break
                self.loop.step()
                if progress is not None:
                    progress(self.loop.tick)
                if until_done and self.done:
                    break
                if after_tick is not None:
                    after_tick(self)
        finally:
            self.wall_seconds += time.perf_counter() - started
            self._stop_request = None  # one asked for in the last tick is not carried over
        return self.summary()

    def summary(self) -> dict[str, Any]:
        """What happened so far (see ``sim.cli.run``'s table and the docs' simulator guide),
        with its ``verdict`` (``sim.run.verdict``)."""
        world = self.world.summary()
        stats = self.loop.stats()
        sim_time = self.loop.tick * self.dt
        left = world["tasks_undelivered"]
        refused = self.refused_tasks(left)
        undelivered = [t for t in left if t not in refused]
        summary = {
            "scenario": self.scenario.name,
            "seed": self.seed,
            "ticks": self.loop.tick,
            "scenario_ticks": self.max_ticks,
            "sim_time": sim_time,
            "rate_hz": self.rate_hz,
            "deliveries_done": world["deliveries_done"],
            "deliveries_assigned": world["deliveries_assigned"],
            "tasks_total": world["tasks_total"],
            "tasks_undeliverable": world["tasks_undeliverable"],
            "tasks_undelivered": undelivered,
            "tasks_left": self.left_tasks(undelivered),
            "tasks_refused": refused,
            "mean_delivery_time": world["mean_delivery_time"],
            "delivery_times": world["delivery_times"],
            "safety_violations": world["safety_violations"],
            "collisions": world["collisions"],
            "collision_details": list(self.collision_details),
            "speed_violations": world.get("speed_violations", 0),
            "replans": self.tally.kinds["replan"],
            **self.tally.liveness(),
            "alarms": dict(sorted(self.tally.alarms.items())),
            "emergency_stops": dict(sorted(self.tally.stops.items())),
            "reactions": dict(sorted(self.tally.reactions.items())),
            "actions_failed": self.tally.kinds["action_failed"],
            "cabin_failures": stats.cabin_failures,
            "late_decisions": stats.late_decisions,
            "dropped_decisions": stats.dropped_decisions,
            "overruns": stats.overruns,
            "skipped_ticks": stats.skipped_ticks,
            "realtime": self.realtime,
            "faults": [f.label for f in self.faults.faults],
            "stopped_by": self.stopped_by,
            "evictions": stats.evictions,
            "capacity_alarms": stats.capacity_alarms,
            "pressure": {cabin: count.as_dict() for cabin, count in sorted(stats.pressure.items())},
            "missing": {
                cabin: dict(sorted(counts.items()))
                for cabin, counts in sorted(self.missing.items())
            },
            "writes_refused": stats.writes_refused,
            "cabins": self.cabin_rows(stats.cabins),
            "tick_compute_p50_ms": stats.compute_p50 * 1e3,
            "tick_compute_p99_ms": stats.compute_p99 * 1e3,
            "wall_seconds": self.wall_seconds,
            "real_time_factor": sim_time / self.wall_seconds if self.wall_seconds > 0 else None,
            "battery_end": world["battery_end"],
            "battery_min": world["battery_min"],
            "battery_min_at": world["battery_min_at"],
            "battery_empty_at": world["battery_empty_at"],
            "distance": world["distance"],
            "board_writes": self.digest.writes,
            "board_digest": self.digest.hexdigest(),
            "world_digest": self.world.state_digest(),
            "memory_digest": memory_digest(self.memory),
            "log_digest": log_digest(self.log),
        }
        summary["verdict"] = judge(summary).as_json()
        return summary


def failed(summary: Mapping[str, Any]) -> bool:
    """Whether a run failed: its verdict fails (``sim.run.verdict``: a collision, a safety
    violation, a reachable task undelivered at the scenario's end, a stalled episode, an
    abandoned task or a flat battery)."""
    return judge(summary).failed


def deterministic_fields(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary without the measured (wall-clock) figures."""
    measured = {"tick_compute_p50_ms", "tick_compute_p99_ms", "wall_seconds", "real_time_factor"}
    return {k: v for k, v in summary.items() if k not in measured}
