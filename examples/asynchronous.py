"""A slow cabin made asynchronous: it decides off the tick, and the loop never waits.

On the simulated clock the decision's latency is simulated (0.5 s at 20 Hz: 10 ticks), so
the run is the same tick for tick, every time.
"""

from runtime import (
    Assembler,
    Asynchronous,
    CabinMap,
    ContextSpec,
    EventLog,
    SimClock,
    StateBoard,
    TickLoop,
    WorkingMemory,
)

planner_spec = ContextSpec(name="planner", board_keys=("pose",), required=("pose",))
counter_spec = ContextSpec(name="counter")


class Planner:  # a plain synchronous cabin: wrapped below
    name, spec = "planner", planner_spec

    def step(self, view, out):
        out.write("plan", {"decided_on_tick": view.tick})


class Counter:  # a fast cabin beside it: it runs on every tick
    name, spec = "counter", counter_spec

    def step(self, view, out):
        out.write("count", view.tick + 1)


clock = SimClock()
board = StateBoard(clock=clock)
board.write("pose", (0.0, 0.0, 0.0))
assembler = Assembler(
    board, CabinMap(), EventLog(clock=clock), WorkingMemory(), [planner_spec, counter_spec]
)
planner = Asynchronous(Planner(), latency=0.5, max_age=20)  # 0.5 simulated s per decision
loop = TickLoop(assembler, [planner, Counter()], 20.0, clock)

for _ in range(25):
    for back in loop.step().returned:
        print(back.cabin, back.decided_tick, back.applied_tick, back.status)
print(board.read("count").value, board.read("plan").value["decided_on_tick"])
loop.close()
# planner 0 10 on_time
# planner 11 21 on_time
# 25 11
