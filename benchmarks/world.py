"""Synthetic worlds: sized, deterministic, and fed alike to the runtime and the seed reference.

A world of a given ``WorldSize`` has a board of that many keys (about 30 of them
read by the shipped specs, the rest other namespaces), a map of that many features
at constant density (one per ``AREA_PER_FEATURE`` square metres, so the floor
grows with the count and a window holds about the same number of features), and a
log of that many events at ``EVENT_RATE`` events per second of history. Everything
comes from one seeded ``numpy.random.Generator``.

A ``Driver`` then moves the world one tick at a time, as the simulator's sensors
would before each freeze: the robot drives along its route, two people walk near
it, a few events are logged, goals come and go. Every write goes to the runtime's
sources and, while a seed reference is attached, the very same readings, events
and features go to the reference's naive structures.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import shapely

from benchmarks.reference_model import ReferenceModel
from benchmarks.seed_reference import SeedBoard, SeedLog, SeedMap, SeedWorkingMemory
from cabins.shipped import shipped_specs_dir
from runtime import (
    Assembler,
    CabinMap,
    CabinView,
    ContextSpec,
    Event,
    EventLog,
    Feature,
    FrozenDict,
    SimClock,
    StateBoard,
    WorkingMemory,
    WorkingSet,
    load_specs,
)

SPECS_DIR = shipped_specs_dir()
RATE_HZ = 20.0
PERIOD = 1.0 / RATE_HZ
EVENT_RATE = 20.0
"""Events per second, in the history and while ticking."""
AREA_PER_FEATURE = 150.0
"""Square metres of floor per map feature: the planner's 40 m window holds about 33."""
CAPACITY = 64
ROBOT_SPEED = 1.5
ROUTE_MIN, ROUTE_MAX = 20.0, 60.0
"""Metres from the robot to the target of each new route (routes do not grow with the floor)."""
GOALS = 3

EVENT_KINDS: tuple[tuple[str, float], ...] = (
    ("telemetry", 0.40),
    ("board_note", 0.30),
    ("action_done", 0.10),
    ("replan", 0.05),
    ("reaction", 0.05),
    ("alarm", 0.04),
    ("action_failed", 0.03),
    ("cabin_failed", 0.01),
    ("tick_overrun", 0.01),
    ("capacity_alarm", 0.01),
)
TAG_SETS: tuple[frozenset[str], ...] = (
    frozenset(),
    frozenset({"cabin:planner"}),
    frozenset({"cabin:executor"}),
    frozenset({"cabin:monitor"}),
    frozenset({"alarm"}),
    frozenset({"cabin:executor", "failure"}),
)
FEATURE_KINDS: tuple[tuple[str, float], ...] = (
    ("shelf", 0.45),
    ("obstacle", 0.20),
    ("dock", 0.10),
    ("marker", 0.10),
    ("charger", 0.05),
    ("forbidden", 0.05),
    ("speed_zone", 0.05),
)
FILLER_NAMESPACES = ("fleet", "sensor", "inventory", "telemetry", "zone_stats")
"""The namespaces of the board keys no shipped spec reads (a test holds them to that: the
planner's ``task:*`` made a filler namespace ``task`` up to 2,000 more candidates and
1,300 capacity evictions a tick at the largest world)."""
CONSTRAINTS = 8
SAFETY_ZONES = 6
CORE_KEYS = 14
MIN_BOARD = CORE_KEYS + GOALS + CONSTRAINTS + SAFETY_ZONES
"""The board keys every world has: those the shipped specs read."""


@dataclass(frozen=True, slots=True)
class WorldSize:
    """How big a world is: board keys, map features, logged events."""

    board: int
    features: int
    events: int

    def __post_init__(self) -> None:
        if self.board < MIN_BOARD:
            raise ValueError(f"a world needs at least {MIN_BOARD} board keys, got {self.board}")
        if self.features < 1:
            raise ValueError(f"a world needs at least one map feature, got {self.features}")
        if self.events < 1:
            raise ValueError(f"a world needs at least one logged event, got {self.events}")

    @property
    def label(self) -> str:
        return f"board {self.board:,} · map {self.features:,} · log {self.events:,}"

    @property
    def key(self) -> str:
        return f"b{self.board}-m{self.features}-l{self.events}"


@dataclass(frozen=True, slots=True)
class WorldData:
    """A generated world before it is loaded into any store."""

    size: WorldSize
    side: float
    features: tuple[Feature, ...]
    board: tuple[tuple[str, Any, float | None], ...]
    stamps: npt.NDArray[np.float64]
    kinds: npt.NDArray[np.int64]
    tags: npt.NDArray[np.int64]
    payloads: tuple[FrozenDict[str, Any], ...]
    start: float


def _core_board(side: float, rng: np.random.Generator) -> list[tuple[str, Any, float | None]]:
    c = side / 2.0
    stations = tuple((float(x), float(y)) for x, y in rng.uniform(0.0, side, size=(12, 2)))
    writes: list[tuple[str, Any, float | None]] = [
        ("pose", (c, c, 0.0), 0.25),
        ("velocity", (0.0, 0.0), 0.25),
        ("battery", 0.9, 1.0),
        ("battery:low", 0.25, None),
        ("cargo", None, None),
        ("route", ((c, c), (c + 1.0, c)), None),
        ("plan", {"goal": "t0", "steps": ("goto", "pick", "goto", "drop")}, None),
        ("action:last", {"action": "drop", "ok": True}, None),
        ("acceptance", {"dock_tolerance": 0.3, "max_speed": 0.05}, None),
        ("robot:limits", {"max_speed": ROBOT_SPEED, "max_turn_rate": 2.0}, None),
        ("robot:radius", 0.35, None),
        ("world:bounds", (0.0, 0.0, side, side), None),
        ("docks", {f"d{i}": xy for i, xy in enumerate(stations[:8])}, None),
        ("chargers", {f"c{i}": xy for i, xy in enumerate(stations[8:])}, None),
    ]
    for i in range(GOALS):
        writes.append((f"goal:deliver:t{i}", {"pickup": f"d{i}", "drop": f"d{i + 1}"}, None))
    for i in range(CONSTRAINTS):
        writes.append((f"constraint:speed:z{i}", {"max_speed": 0.5, "zone": f"zone:s{i}"}, None))
    for i in range(SAFETY_ZONES):
        writes.append((f"safety:forbidden:f{i}", {"zone": f"zone:f{i}", "keep_out": True}, None))
    return writes


def _features(count: int, side: float, rng: np.random.Generator) -> tuple[Feature, ...]:
    names = [k for k, _ in FEATURE_KINDS]
    kinds = rng.choice(len(names), size=count, p=[p for _, p in FEATURE_KINDS])
    xy = rng.uniform(0.0, side, size=(count, 2))
    turn = rng.integers(0, 2, size=count).astype(bool)
    size = {"shelf": (6.0, 1.5), "forbidden": (4.0, 4.0), "speed_zone": (6.0, 6.0)}
    geoms: npt.NDArray[np.object_] = shapely.points(xy)
    for kind, (w, h) in size.items():
        sel = kinds == names.index(kind)
        dx = np.where(turn[sel], h, w) / 2.0
        dy = np.where(turn[sel], w, h) / 2.0
        x, y = xy[sel, 0], xy[sel, 1]
        geoms[sel] = shapely.box(x - dx, y - dy, x + dx, y + dy)
    out: list[Feature] = []
    for i in range(count):
        kind = names[kinds[i]]
        if kind == "forbidden":
            fid = f"zone:f{i:06d}"
        elif kind == "speed_zone":
            fid = f"zone:s{i:06d}"
        else:
            fid = f"{kind}:{i:06d}"
        tags = frozenset({"static"}) if kind != "marker" else frozenset({"fiducial"})
        out.append(Feature(fid, geoms[i], kind, tags))
    return tuple(out)


def generate(size: WorldSize, rng: np.random.Generator) -> WorldData:
    """A world of ``size``, drawn from ``rng``."""
    side = math.sqrt(size.features * AREA_PER_FEATURE)
    board = _core_board(side, rng)
    for i in range(size.board - len(board)):
        ns = FILLER_NAMESPACES[i % len(FILLER_NAMESPACES)]
        value: Any = (round(float(rng.uniform(0, side)), 3), i)
        board.append((f"{ns}:{i:06d}", value, 1.0 if i % 3 == 0 else None))
    features = _features(size.features, side, rng)
    gaps = rng.exponential(1.0 / EVENT_RATE, size=size.events)
    stamps = np.cumsum(gaps)
    kinds = rng.choice(len(EVENT_KINDS), size=size.events, p=[p for _, p in EVENT_KINDS])
    tags = rng.integers(0, len(TAG_SETS), size=size.events)
    tasks = tuple(f"t{i}" for i in range(16))
    payloads = tuple(FrozenDict({"n": i, "task": tasks[i % 16]}) for i in range(size.events))
    start = math.ceil(float(stamps[-1]) + 1.0)
    return WorldData(
        size,
        side,
        features,
        tuple(board),
        stamps,
        kinds.astype(np.int64),
        tags.astype(np.int64),
        payloads,
        float(start),
    )


def load_shipped_specs() -> dict[str, ContextSpec]:
    """The shipped planner, executor and monitor specs, in that order."""
    specs = load_specs(SPECS_DIR)
    return {name: specs[name] for name in ("planner", "executor", "monitor")}


class RuntimeWorld:
    """The runtime's sources, memory and assembler, loaded with a world."""

    def __init__(
        self,
        data: WorldData,
        specs: Mapping[str, ContextSpec],
        *,
        capacity: int = CAPACITY,
        memory: WorkingMemory | None = None,
    ) -> None:
        self.clock = SimClock(data.start)
        lock = threading.RLock()
        self.board = StateBoard(clock=self.clock, lock=lock)
        self.cabin_map = CabinMap(lock=lock)
        self.log = EventLog(clock=self.clock, lock=lock)
        self.memory = WorkingMemory(capacity=capacity) if memory is None else memory
        self.specs = dict(specs)
        self.names = tuple(self.specs)
        for feature in data.features:
            self.cabin_map.add(feature)
        kinds = [k for k, _ in EVENT_KINDS]
        append = self.log.append
        for stamp, kind, tags, payload in zip(
            data.stamps.tolist(),
            data.kinds.tolist(),
            data.tags.tolist(),
            data.payloads,
            strict=True,
        ):
            append(kinds[kind], payload, stamp=stamp, tags=TAG_SETS[tags])
        for key, value, ttl in data.board:
            self.board.write(key, value, ttl=ttl, source="world")
        self.assembler = Assembler(
            self.board, self.cabin_map, self.log, self.memory, self.specs.values()
        )

    def tick(self, tick: int, now: float) -> tuple[WorkingSet, tuple[CabinView, ...]]:
        """Freeze plus three views: the unit every figure measures."""
        ws = self.assembler.assemble(tick, now)
        return ws, tuple(ws.view(name) for name in self.names)


class SeedWorld:
    """The seed reference's naive stores and memory, holding the same data."""

    def __init__(self, data: WorldData, runtime: RuntimeWorld) -> None:
        kinds = [k for k, _ in EVENT_KINDS]
        events = [
            Event(i + 1, stamp, kinds[kind], TAG_SETS[tags], payload)
            for i, (stamp, kind, tags, payload) in enumerate(
                zip(
                    data.stamps.tolist(),
                    data.kinds.tolist(),
                    data.tags.tolist(),
                    data.payloads,
                    strict=True,
                )
            )
        ]
        self.board = SeedBoard(runtime.board.readings("*"))
        self.cabin_map = SeedMap(data.features)
        self.log = SeedLog(events)
        self.memory = SeedWorkingMemory(
            self.board, self.cabin_map, self.log, capacity=runtime.memory.capacity
        )
        self.specs = dict(runtime.specs)

    def model(self, data: WorldData, runtime: RuntimeWorld) -> ReferenceModel:
        """The independent reference model of the same world (sharing these event objects)."""
        return ReferenceModel(
            runtime.specs,
            readings=runtime.board.readings("*"),
            features=data.features,
            events=self.log._events,
            capacity=runtime.memory.capacity,
        )


class Driver:
    """Moves a world one tick at a time, writing to the runtime and a mirror seed world."""

    def __init__(
        self,
        data: WorldData,
        runtime: RuntimeWorld,
        rng: np.random.Generator,
        seed: SeedWorld | None = None,
        model: ReferenceModel | None = None,
        peer: Any = None,
    ) -> None:
        self.data = data
        self.runtime = runtime
        self.seed = seed
        self.model = model
        self.peer = peer
        """A mirror with the reference model's methods (``put``, ``delete``, ``put_feature``,
        ``append``): the equal-work peer of ``benchmarks.peer_work``."""
        self.rng = rng
        self.tick = 0
        c = data.side / 2.0
        self.x, self.y, self.theta = c, c, 0.0
        self.route: list[tuple[float, float]] = []
        self.next_goal = GOALS
        self.goals = [f"goal:deliver:t{i}" for i in range(GOALS)]
        self._new_route()

    def detach_seed(self) -> None:
        """Stop mirroring writes to the seed world (it is no longer measured)."""
        self.seed = None

    def detach_model(self) -> None:
        """Stop mirroring writes to the reference model (parity is checked)."""
        self.model = None

    def _write(self, key: str, value: Any, ttl: float | None = None) -> None:
        reading = self.runtime.board.write(key, value, ttl=ttl, source="world")
        if self.seed is not None:
            self.seed.board.put(reading)
        if self.model is not None:
            self.model.put(reading)
        if self.peer is not None:
            self.peer.put(reading)

    def _delete(self, key: str) -> None:
        self.runtime.board.delete(key)
        if self.seed is not None:
            self.seed.board.delete(key)
        if self.model is not None:
            self.model.delete(key)
        if self.peer is not None:
            self.peer.delete(key)

    def _feature(self, feature: Feature) -> None:
        self.runtime.cabin_map.add(feature, replace=True)
        if self.seed is not None:
            self.seed.cabin_map.put(feature)
        if self.model is not None:
            self.model.put_feature(feature)
        if self.peer is not None:
            self.peer.put_feature(feature)

    def _event(self, kind: str, payload: Any, stamp: float, tags: frozenset[str]) -> None:
        event = self.runtime.log.append(kind, payload, stamp=stamp, tags=tags)
        if self.seed is not None:
            self.seed.log.append(event)
        if self.model is not None:
            self.model.append(event)
        if self.peer is not None:
            self.peer.append(event)

    def _new_route(self) -> None:
        """A route of two legs to a target 20 to 60 m away, whatever the floor's size."""
        margin = min(20.0, self.data.side / 4.0)
        reach = float(self.rng.uniform(ROUTE_MIN, ROUTE_MAX))
        angle = float(self.rng.uniform(0.0, 2.0 * math.pi))
        low, high = margin, self.data.side - margin
        tx = min(max(self.x + reach * math.cos(angle), low), high)
        ty = min(max(self.y + reach * math.sin(angle), low), high)
        self.route = [(self.x, self.y), (tx, self.y), (tx, ty)]

    def advance(self, now: float | None = None) -> tuple[int, float]:
        """Move the world to the next tick; the tick number and its time: one period after
        the last, or ``now`` (a wall-clock loop's time, so that the readings' stamps and
        time-to-live agree with the loop's; the robot still moves one period's worth)."""
        rt = self.runtime
        if now is not None:
            rt.clock.sleep_until(now)  # exactly ``now`` (never back)
        elif self.tick > 0:
            rt.clock.advance(PERIOD)
        now = rt.clock.now()
        step = ROBOT_SPEED * PERIOD
        while len(self.route) > 1 and math.dist((self.x, self.y), self.route[1]) <= step:
            self.route.pop(0)
        if len(self.route) <= 1:
            self._new_route()
            self._write("route", tuple(self.route))
            self._write(
                "plan",
                {
                    "goal": self.goals[0],
                    "target": self.route[-1],
                    "steps": ("goto", "pick", "goto", "drop"),
                },
            )
        nx, ny = self.route[1]
        self.theta = math.atan2(ny - self.y, nx - self.x)
        self.x += step * math.cos(self.theta)
        self.y += step * math.sin(self.theta)
        self.route[0] = (self.x, self.y)
        self._write("pose", (self.x, self.y, self.theta), ttl=0.25)
        self._write("velocity", (ROBOT_SPEED, 0.0), ttl=0.25)
        if self.tick % 20 == 0:
            self._write("battery", round(0.9 - self.tick * 1e-6, 6), ttl=1.0)
        if self.tick % 10 == 0:
            self._write("route", tuple(self.route))
        for n, offset in enumerate((1.5, 2.5)):
            phase = self.tick * PERIOD * 0.5 + n
            px = self.x + offset * math.cos(phase)
            py = self.y + offset * math.sin(phase)
            self._feature(
                Feature(
                    f"obstacle:worker{n + 1}",
                    shapely.Point(px, py).buffer(0.3, 4),
                    "obstacle",
                    frozenset({"person"}),
                )
            )
        if self.tick > 0 and self.tick % 400 == 0:
            self._delete(self.goals.pop(0))
            key = f"goal:deliver:t{self.next_goal}"
            self.next_goal += 1
            self.goals.append(key)
            self._write(key, {"pickup": "d0", "drop": "d1"})
        names = [k for k, _ in EVENT_KINDS]
        weights = [p for _, p in EVENT_KINDS]
        for _ in range(int(self.rng.poisson(EVENT_RATE * PERIOD))):
            kind = names[int(self.rng.choice(len(names), p=weights))]
            tags = TAG_SETS[int(self.rng.integers(0, len(TAG_SETS)))]
            self._event(kind, {"tick": self.tick}, now, tags)
        tick = self.tick
        self.tick += 1
        return tick, now
