"""The shipped specs fit any floor: on generated worlds of every size the generators draw,
no item the planner, executor or monitor selects is lost to capacity.

Each example draws a world from ``gen:N`` or ``hard:N`` at full size (the hard family
reaches 120 x 80 m and 45+ shelves) and freezes the shipped specs' working set at points
drawn over the whole floor, in the worst case a run can reach: every task released (every
goal key on the board), the movers where the world puts them, and each spec's event window
filled to its limit with the kinds it reads. Nothing may be lost (``pressure`` empty,
every view's ``evicted`` empty), at the default capacity. A spec's map window and corridor
may be capped (``map_share``, ``corridor_limit``): a cap is not a loss, the planner
remembers the static geometry it has seen.

This fails on the specs before issue 29: the planner's 40 m window of shelves weighing 0.9
crowded out its action events and battery on the 48 x 32 m starvation floor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cabins.warehouse.values import Pose
from runtime import Assembler, CabinMap, EventLog, SimClock, StateBoard, WorkingMemory
from runtime.spec import load_specs
from sim.run.harness import BUILTIN_CABINS, SPECS_DIR
from sim.world.generate import generate
from sim.world.hard import generate_hard
from sim.world.scenario import Scenario
from sim.world.world import World

pytestmark = pytest.mark.e2e

CAPACITY = 64
"""``sim run``'s default capacity."""

_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "phases": (Phase.explicit, Phase.generate),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "database": None,
}


def _specs() -> list[Any]:
    specs = load_specs(SPECS_DIR)
    return [specs[name] for name in BUILTIN_CABINS]


def _world_at_its_fullest(scenario: Scenario) -> tuple[SimClock, StateBoard, CabinMap, EventLog]:
    """The board, map and log of ``scenario``'s world once every task is released, with
    every event kind the shipped specs read logged more often than any window keeps."""
    clock = SimClock()
    board = StateBoard(clock=clock)
    cabin_map = CabinMap()
    log = EventLog(clock=clock)
    world = World(scenario, rng=np.random.default_rng(0))
    world.install(board, cabin_map)
    world.sense(board, cabin_map, 0.0)
    clock.sleep_until(scenario.duration)
    world.sense(board, cabin_map, scenario.duration)
    kinds = sorted({k for spec in _specs() for k in spec.event_kinds})
    for n in range(40):
        for kind in kinds:
            log.append(kind, {"n": n}, stamp=scenario.duration)
    return clock, board, cabin_map, log


def _lost_anywhere(scenario: Scenario, points: list[tuple[float, float]]) -> list[str]:
    """What the shipped specs lose at each of ``points`` (fractions of the floor)."""
    clock, board, cabin_map, log = _world_at_its_fullest(scenario)
    memory = WorkingMemory(capacity=CAPACITY)
    assembler = Assembler(board, cabin_map, log, memory, _specs())
    x0, y0, x1, y1 = scenario.floor.bounds
    lost: list[str] = []
    for tick, (fx, fy) in enumerate(points):
        at = Pose(x0 + fx * (x1 - x0), y0 + fy * (y1 - y0), 0.0)
        board.write("pose", at.as_value(), source="test")
        ws = assembler.assemble(tick, clock.now())
        for name, keys in ws.pressure.items():
            lost.append(f"{scenario.name} at ({at.x:.1f}, {at.y:.1f}): {name} lost {keys}")
        for name in ws.cabins:
            view = ws.view(name)
            if view.evicted:
                lost.append(f"{scenario.name}: {name}'s view says evicted {dict(view.evicted)}")
    return lost


_POINTS = st.lists(
    st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=4, max_size=12
).map(lambda pts: [(0.5, 0.5), (0.0, 0.0), (1.0, 1.0), *pts])


@pytest.mark.slow
@settings(max_examples=6, **_SETTINGS)
@given(seed=st.integers(0, 10**6), points=_POINTS)
def test_nothing_a_shipped_cabin_selects_is_lost_on_a_hard_floor(
    seed: int, points: list[tuple[float, float]]
) -> None:
    assert _lost_anywhere(generate_hard(seed), points) == []


@settings(max_examples=6, **_SETTINGS)
@given(seed=st.integers(0, 10**6), points=_POINTS)
def test_nothing_a_shipped_cabin_selects_is_lost_on_a_generated_floor(
    seed: int, points: list[tuple[float, float]]
) -> None:
    assert _lost_anywhere(generate(seed), points) == []


@pytest.mark.slow
@settings(max_examples=40, **_SETTINGS)
@given(
    seed=st.integers(0, 10**6),
    family=st.sampled_from(["gen", "hard"]),
    points=_POINTS,
)
def test_nothing_is_lost_on_many_floors(
    seed: int, family: str, points: list[tuple[float, float]]
) -> None:
    scenario = generate_hard(seed) if family == "hard" else generate(seed)
    assert _lost_anywhere(scenario, points) == []


def test_the_starvation_floor_of_issue_29_loses_nothing() -> None:
    """The issue's floor: 48 x 32 m, 1.82 m aisles, 45 shelves, 8 movers."""
    from sim.world.generate import GeneratorSettings

    scenario = generate(
        3,
        GeneratorSettings(size=(48.0, 32.0), aisle_width=1.82, people=6, forklifts=2, tasks=8),
    )
    grid = [(x / 6, y / 4) for x in range(7) for y in range(5)]
    assert _lost_anywhere(scenario, grid) == []


@pytest.mark.slow
@settings(max_examples=5, **_SETTINGS)
@given(seed=st.integers(0, 10**6), family=st.sampled_from(["gen", "hard"]))
def test_the_shipped_specs_worst_case_demand_fits_the_default_capacity(
    seed: int, family: str
) -> None:
    """``check-spec --scenario``'s bound (every board key the world can write, the fullest
    map windows anywhere on the floor, the corridors of every task leg, every event window
    at its limit) stays within the default capacity: a run cannot lose an item to it."""
    from sim.analysis.demand import demand

    scenario = generate_hard(seed) if family == "hard" else generate(seed)
    need = demand(_specs(), scenario, CAPACITY)
    assert not need.over, need.as_json()
