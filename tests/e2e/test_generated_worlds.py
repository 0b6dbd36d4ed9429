"""Safety is a property of every world: on generated warehouses (hypothesis draws the
generator's settings and seed) the robot never collides, never enters a forbidden zone,
and delivers every reachable task within the scenario's duration, for two seeds each.

The default run (CI) checks 50 worlds x 2 seeds (``slow``; ``TICKWORK_WORLDS=N`` checks N
worlds instead, for a longer soak); a quick look checks 2 (``slow`` too: about 20 s here,
over the edit loop's budget).
Worlds are kept small (12-22 x 10-16 m, one or two tasks) so that a run takes about a
second: the property is about layouts, aisle widths, people and zones, not floor size.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cabins.warehouse.routing import min_aisle_width
from sim.run.harness import Simulation
from sim.world.generate import GeneratorSettings, Orientation, generate, to_toml
from sim.world.scenario import Scenario

pytestmark = pytest.mark.e2e

LEAST = min_aisle_width(0.35)
WORLDS = max(50, int(os.environ.get("TICKWORK_WORLDS", "50")))  # the floor is 50

small_worlds = st.builds(
    GeneratorSettings,
    size=st.tuples(st.floats(12.0, 22.0), st.floats(10.0, 16.0)),
    aisle_width=st.floats(LEAST + 0.05, 3.5),
    orientation=st.sampled_from(["x", "y"]),
    people=st.integers(0, 2),
    forklifts=st.integers(0, 1),
    tasks=st.integers(1, 2),
    docks=st.integers(3, 4),
)


def _check_world(seed: int, world_settings: GeneratorSettings) -> list[float]:
    """Safe on every run, and every reachable delivery done within the duration; the
    share of the duration each run (run seeds 0, 1) took."""
    scenario = generate(seed, world_settings)
    used: list[float] = []
    for run_seed in (0, 1):
        summary = Simulation(scenario, seed=run_seed).run()
        where = f"generate({seed}, {world_settings}) run seed {run_seed}:\n{to_toml(scenario)}"
        assert summary["collisions"] == 0, (summary["collision_details"], where)
        assert summary["safety_violations"] == 0, where
        reachable = summary["tasks_total"] - len(summary["tasks_undeliverable"])
        assert summary["deliveries_done"] == reachable, (summary["deliveries_done"], where)
        used.append(summary["sim_time"] / scenario.duration)
    return used


def _safe_and_delivered(examples: int) -> None:
    """``examples`` drawn worlds, each safe and fully delivered (or the test fails)."""

    @settings(max_examples=examples, **_NO_SHRINK)
    @given(seed=st.integers(0, 10**6), world_settings=small_worlds)
    def check(seed: int, world_settings: GeneratorSettings) -> None:
        _check_world(seed, world_settings)

    check()


_NO_SHRINK: dict[str, Any] = {
    "deadline": None,
    "phases": (Phase.explicit, Phase.generate),  # a failing world is reported as drawn
    "suppress_health_check": [HealthCheck.too_slow],
    "database": None,
}


@pytest.mark.slow
def test_a_few_generated_warehouses_are_safe_and_delivered() -> None:
    _safe_and_delivered(2)


@pytest.mark.slow
def test_fifty_generated_warehouses_are_safe_and_delivered() -> None:
    _safe_and_delivered(WORLDS)


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_every_generated_world_loads_round_trips_and_repeats(seed: int) -> None:
    import tomllib

    scenario = generate(seed)
    text = to_toml(scenario)
    assert Scenario.model_validate(tomllib.loads(text)) == scenario
    assert to_toml(generate(seed)) == text  # same seed, same file
    assert scenario.unreachable == ()
    assert {s.polygon for s in scenario.shelves}  # it has shelves


def test_the_generate_command_writes_the_same_file_for_the_same_seed(tmp_path: Any) -> None:
    from sim.cli.app import main
    from sim.world.scenario import load_scenario

    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["generate", "--seed", "7", "--orientation", "y", "-o", str(first)]) == 0
    assert main(["generate", "--seed", "7", "--orientation", "y", "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    scenario = load_scenario(first)
    assert scenario == generate(7, GeneratorSettings(orientation="y"))
    big = tmp_path / "big.toml"
    assert (
        main(["generate", "--seed", "1", "--size", "60x40", "--people", "3", "-o", str(big)]) == 0
    )
    assert load_scenario(big).floor.bounds == (0.0, 0.0, 60.0, 40.0)


def test_the_generate_command_refuses_an_aisle_below_the_robots_minimum(tmp_path: Any) -> None:
    from sim.cli.app import main

    out = tmp_path / "x.toml"
    assert main(["generate", "--seed", "1", "--aisle-width", "1.3", "-o", str(out)]) == 2
    assert not out.exists()


def _world(
    seed: int,
    size: tuple[float, float],
    aisle: float,
    orientation: Orientation,
    docks: int,
    forklifts: int = 1,
    *,
    people: int = 2,
    tasks: int = 2,
) -> tuple[int, GeneratorSettings]:
    """A world the property test could draw: ``people`` (two), ``forklifts`` (one) and
    ``tasks`` (two)."""
    return (
        seed,
        GeneratorSettings(
            size=size,
            aisle_width=aisle,
            orientation=orientation,
            people=people,
            forklifts=forklifts,
            tasks=tasks,
            docks=docks,
        ),
    )


STUCK_WORLDS = {
    # movers walk the aisle through the dock: the robot turned back for the other end of
    # the shelf at every re-plan (0 of 2 delivered on run seed 0, 24 no_route alarms)
    "9595": _world(9595, (15.097427410343554, 10.251099882287019), 2.175419334173309, "x", 4),
    # the same, 1 of 2 delivered on both run seeds
    "2041": _world(2041, (12.0, 10.0), 3.2449045546808124, "x", 4),
    # a forklift at the dead end of its loop, on the dock, in an aisle too narrow to pass
    # the robot waiting for it: a stand-off (0 of 2 on both run seeds); 281691 and 513480
    # were found after waiting replaced the long way round, 441365 was stuck before too
    "281691": _world(281691, (13.094886272943594, 13.748812504914858), 2.110646669700256, "x", 3),
    "513480": _world(513480, (19.32765808921866, 12.815920846618143), 2.0838541352256787, "y", 3),
    "441365": _world(441365, (19.962030111852236, 11.550524999592975), 2.0427463665294443, "x", 4),
    # a person at the end of its loop, on the dock, the robot waiting beside it: the spot
    # it gave way to lay past the person's side, the monitor stopped it at once, and the
    # stand-off lasted 3 minutes (1 of 2 on run seed 0; 2 of 2 with 5.6 s to spare before)
    "88490": _world(88490, (16.23888649893803, 10.0), 2.5, "x", 4, forklifts=0),
    # drawn by CI on the code before 88490's fix: 1 of 2 delivered on one run seed; the
    # same give-way fix delivers both
    "1": _world(
        1, (21.27293951035218, 15.003995401144063), 1.8535533905932737, "x", 4, forklifts=0
    ),
    # drawn by CI after 88490's fix: no people, a forklift whose lane (the drop dock on
    # it) ends at a dead end, 3.4 m aisles; the robot waited diagonally below the
    # forklift at the dead end, and the spot it gave way to, beside the line from the
    # forklift through the robot, lay on the lane: the forklift never came out (0 of 1
    # on run seed 1, 28 re-plans, a battery alarm and a charge in between); it now gives
    # way off the line the forklift was seen moving along
    "173": _world(173, (15.759609135075497, 10.0), 3.405772553687126, "x", 4, people=0, tasks=1),
    # drawn by the property test outside CI (its draws are random there, fixed in CI):
    # the only charger lies at the south end of the west aisle, which a forklift walks
    # end to end; the robot, at 0.23 after its pick, came into the aisle at its north
    # end, was sent back out by the forklift again and again, and ran flat 1 m from the
    # charger: 0 of 2 on run seed 0, a `battery_flat` verdict. The 21 m way round after
    # the stand-off, in at the aisle's south end, needed 0.11 and was refused for want of
    # the reserve (0.16); on the way to a charger the reserve is now left out
    "116": _world(116, (12.0, 10.0), 1.8535533905932737, "y", 4, people=1),
    # drawn by the property test outside CI: the only charger in the south-west corner,
    # where the west aisle (a forklift walks it end to end) opens into the south cross
    # aisle, the floor's edge straight on past it: taken for the closed end of a bay, the
    # robot waited at the aisle's north entry for the forklift to come out, from its pick
    # at 48 s to the end of the run (1 of 2 on both run seeds, no stalled alarm: a lane
    # wait is excused for 600 s); a dead end is now narrow across its end too
    "1-14x14": _world(1, (14.0, 14.0), 1.8535533905932737, "y", 4, people=0),
}
"""Generated worlds on which a run was safe but left deliveries undone (issue 12's
liveness gap); each must now deliver everything on both run seeds."""


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(STUCK_WORLDS))
def test_a_once_stuck_world_delivers_every_task_on_both_run_seeds(name: str) -> None:
    seed, world = STUCK_WORLDS[name]
    _check_world(seed, world)


NEAR_MISSES = {
    # found by a sweep of the property test's draws after 173's fix: it delivered, but
    # run seed 0 used 91 % of its duration (193 s of 212 s). Two people at the dead end
    # of their 1.85 m aisle, the robot waiting for them in it; a re-plan every second or
    # two as they stepped to and fro restarted the count of ticks without progress, so
    # the robot gave way after 90 s, not 10. Now 57 s and 35 s (run seeds 0, 1).
    "457": _world(457, (12.0, 12.0), 1.8535533905932737, "y", 4, tasks=1),
}
"""Generated worlds that delivered everything, but only just: a stand-off found late.
Each must deliver within half its duration on both run seeds."""


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_near_miss_world_delivers_within_half_its_duration(name: str) -> None:
    seed, world = NEAR_MISSES[name]
    used = _check_world(seed, world)
    assert max(used) <= 0.5, used


KNOWN_STUCK: dict[str, tuple[int, GeneratorSettings]] = {}
"""Generated worlds known to leave deliveries undone, and why: strict, so that a fix
shows (and the world then moves to ``STUCK_WORLDS``)."""


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="a known stuck world: see KNOWN_STUCK")
@pytest.mark.parametrize("name", sorted(KNOWN_STUCK))
def test_a_known_stuck_world_is_still_stuck(name: str) -> None:
    seed, world = KNOWN_STUCK[name]
    _check_world(seed, world)
