"""The runtime in one example: a board, a map, a log, two specs and ten ticks."""

from shapely.geometry import Point, box

from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    Feature,
    SimClock,
    StateBoard,
    TickLoop,
    WorkingMemory,
)

clock = SimClock()
board = StateBoard(clock=clock)
cabin_map = CabinMap()
log = EventLog(clock=clock)

board.write("goal:deliver:t1", {"pickup": "A", "drop": "B"})
board.write("constraint:speed:aisle-2", {"max_speed": 0.5})
cabin_map.add(Feature("shelf-1", box(2, -1, 3, 1), "shelf"))
cabin_map.add(Feature("dock-A", Point(8, 0), "dock"))

planner_spec = ContextSpec(
    name="planner",
    board_keys=("goal:*", "constraint:*", "pose"),
    weights={"goal:*": 1.0, "constraint:*": 0.9},
    required=("goal:*", "constraint:*", "pose"),
    map_center="pose",
    map_radius=5.0,
)
executor_spec = ContextSpec(
    name="executor",
    board_keys=("pose",),
    required=("pose", "event:action_failed*"),
    event_window=2.0,
    event_kinds=("action_failed",),
)


class Planner:
    name, spec = "planner", planner_spec

    def step(self, view, out):
        if "pose" in view.missing:  # absence is explicit, with a reason
            out.emit("waiting_for_pose", {"reason": view.missing["pose"]})
            return
        shelves = [f.id for f in view.nearby_map if f.kind == "shelf"]
        out.write("plan", {"goals": sorted(view.matching("goal:*")), "avoid": shelves})


class Executor:
    name, spec = "executor", executor_spec

    def step(self, view, out):
        x, y, heading = view.get("pose", (0.0, 0.0, 0.0))
        failures = view.missing.get("event:action_failed*")  # "absent": none happened
        out.write("pose", (x + 0.1, y, heading), ttl=0.5)  # seen by everyone next tick
        out.command("drive", v=0.5 if failures == "absent" else 0.2)


memory = WorkingMemory(capacity=64)  # goal:* and safety:* are pinned
assembler = Assembler(board, cabin_map, log, memory, [planner_spec, executor_spec])
loop = TickLoop(assembler, [Planner(), Executor()], 20.0, clock)
stats = loop.run(10)

x, y, _ = board.read("pose").value
print(stats.ticks, board.read("plan").value["avoid"], round(x, 3), y)
# 10 ('shelf-1',) 1.0 0.0
