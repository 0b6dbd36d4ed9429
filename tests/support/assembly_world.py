"""A board, a map and a log on one clock and one lock, and two cabins' specs: what the
assembler's tests (tests/runtime/test_assembler.py, tests/runtime/assembly/) freeze."""

from __future__ import annotations

import threading

from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    SimClock,
    StateBoard,
    WorkingMemory,
)


class World:
    """A board, a map and a log on one clock and one lock."""

    def __init__(self, capacity: int = 64) -> None:
        self.clock = SimClock()
        self.lock = threading.RLock()
        self.board = StateBoard(clock=self.clock, lock=self.lock)
        self.map = CabinMap(lock=self.lock)
        self.log = EventLog(clock=self.clock, lock=self.lock)
        self.memory = WorkingMemory(capacity=capacity)

    def assembler(self, *specs: ContextSpec) -> Assembler:
        return Assembler(self.board, self.map, self.log, self.memory, specs)


PLANNER = ContextSpec(
    name="planner",
    board_keys=("goal:*", "pose", "route", "constraint:*"),
    weights={"goal:*": 1.0, "constraint:*": 0.9, "map:*": 0.4},
    default_weight=0.3,
    required=("goal:*", "pose", "constraint:*"),
    map_center="pose",
    map_radius=5.0,
    corridor_width=1.0,
    event_window=10.0,
    event_kinds=("action_failed",),
)
EXECUTOR = ContextSpec(
    name="executor",
    board_keys=("pose", "route", "velocity"),
    weights={"event:*": 0.8},
    required=("pose", "event:action_failed*"),
    map_center="pose",
    map_radius=5.0,
    event_window=10.0,
    event_kinds=("action_failed",),
)
