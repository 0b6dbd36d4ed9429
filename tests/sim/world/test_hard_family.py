"""The ``hard:N`` family (``sim.world.hard``): every draw is a valid, reachable scenario that
repeats from its seed, and across draws it holds every trait issue 29 found liveness
failing on (measured on the scenarios by ``sim.world.hard.traits``)."""

from __future__ import annotations

import math
import tomllib
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Polygon

from runtime.errors import SettingError
from sim.world.generate import generate, to_toml
from sim.world.hard import LAYOUTS, HardSettings, generate_hard
from sim.world.hard.traits import TRAITS, bay_width, traits
from sim.world.scenario import YIELD_MARGIN, Scenario

SURVEY = range(15)
"""Fifteen seeds in a row: three draws of each layout."""


@cache
def _draw(seed: int) -> Scenario:
    return generate_hard(seed)


@cache
def _traits(seed: int) -> frozenset[str]:
    return traits(_draw(seed))


@pytest.mark.slow
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_every_draw_loads_round_trips_repeats_and_is_reachable(seed: int) -> None:
    scenario = generate_hard(seed)
    text = to_toml(scenario)
    assert Scenario.model_validate(tomllib.loads(text)) == scenario
    assert to_toml(generate_hard(seed)) == text  # same seed, same file
    assert scenario.unreachable == ()
    assert scenario.name == f"hard:{seed}"
    assert f", {LAYOUTS[seed % 5]}, " in scenario.description
    w, h = scenario.floor.max_x, scenario.floor.max_y
    assert w <= 120 and h <= 80
    assert len(scenario.moving_obstacles) >= 5


@pytest.mark.slow
def test_the_family_is_not_gen() -> None:
    assert to_toml(generate_hard(7)) != to_toml(generate(7))
    assert generate_hard(7) != generate_hard(8)


SIGNATURE = {
    "bays": {"dead_end_dock", "mover_at_dead_end"},
    "corridors": {"single_lane"},
    "fishbone": {"fishbone_rows", "rotated_rows"},
    "rotated": {"rotated_rows"},
    "large": {"many_shelves"},
}
"""The traits each layout always draws."""


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_each_layout_draws_its_own_traits(seed: int) -> None:
    layout = LAYOUTS[seed]
    assert f", {layout}, " in _draw(seed).description
    assert SIGNATURE[layout] | {"many_movers"} <= _traits(seed)


@pytest.mark.slow
def test_every_trait_appears_across_fifteen_seeds() -> None:
    seen: dict[str, list[int]] = {name: [] for name in TRAITS}
    for seed in SURVEY:
        for name in _traits(seed):
            seen[name].append(seed)
    assert all(seen.values()), seen
    # and most of the draws carry a battery that forces a charge in the middle of a task
    assert len(seen["mid_task_charge"]) >= 4, seen


@pytest.mark.slow
def test_dead_end_bays_are_as_narrow_as_the_issues() -> None:
    """Docks at the closed end of bays of 1.85-2.65 m (the issue's were 1.9 m), with a
    picker whose loop ends just in front of one."""
    widths = []
    for seed in SURVEY:
        if "dead_end_dock" in _traits(seed):
            scenario = _draw(seed)
            widths += [bay_width(scenario, d.id) for d in scenario.docks]
    narrow = [w for w in widths if w <= 2.0]
    assert narrow, widths


@pytest.mark.slow
def test_large_floors_reach_the_issues_sizes() -> None:
    large = [_draw(seed) for seed in SURVEY if "large_floor" in _traits(seed)]
    assert any(len(s.shelves) >= 45 for s in large)
    biggest = max(_draw(seed).floor.max_x * _draw(seed).floor.max_y for seed in SURVEY)
    assert biggest >= 80 * 50


@pytest.mark.slow
def test_the_settings_are_obeyed() -> None:
    scenario = generate_hard(3, HardSettings(layout="bays", tasks=2, movers=6, tight_battery=True))
    assert "bays" in scenario.description
    assert len(scenario.tasks) == 2
    assert len(scenario.moving_obstacles) <= 6
    assert "mid_task_charge" in traits(scenario)
    ample = generate_hard(3, HardSettings(layout="corridors", tight_battery=False))
    assert "mid_task_charge" not in traits(ample)
    small = generate_hard(4, HardSettings(max_floor=(50.0, 36.0)))
    assert small.floor.max_x <= 50 and small.floor.max_y <= 36
    assert len(small.shelves) >= 45  # the large layout on the issue's 48 x 32 m floor


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"layout": "maze"}, "layout must be one of"),
        ({"tasks": 0}, "tasks must be a whole number in 1-50"),
        ({"tasks": True}, "tasks must be a whole number"),
        ({"movers": 21}, "movers must be a whole number in 0-20"),
        ({"tight_battery": "yes"}, "tight_battery must be true or false"),
        ({"max_floor": (30.0, 30.0)}, "max_floor must be within 40x30 to 120x80"),
        ({"max_floor": (200.0, 80.0)}, "max_floor must be within"),
        ({"max_floor": (float("nan"), 40.0)}, "max_floor must be within"),
        ({"max_floor": "big"}, "max_floor must be a pair"),
    ],
)
def test_bad_settings_are_one_clear_error(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingError, match=message):
        HardSettings(**fields)


@pytest.mark.parametrize("seed", [-1, True, 1.5, "3"])
def test_a_bad_seed_is_refused(seed: Any) -> None:
    with pytest.raises(SettingError, match="seed must be a whole number"):
        generate_hard(seed)


# --- the traits are measured, so they can be told apart -------------------------------------


def _world(**fields: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "t",
        "duration": 100.0,
        "floor": {"max_x": 30.0, "max_y": 20.0},
        "robot": {
            "radius": 0.35,
            "max_speed": 1.0,
            "max_turn_rate": 2.0,
            "max_accel": 1.0,
            "start": {"x": 2.0, "y": 2.0},
            "battery_wh": 50.0,
            "drain_wh_per_m": 0.1,
            "drain_wh_per_s": 0.01,
            "charge_wh_per_s": 0.5,
        },
    }
    data.update(fields)
    return Scenario.model_validate(data)


def _box(x0: float, y0: float, x1: float, y1: float) -> list[list[float]]:
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def test_a_dock_at_the_closed_end_of_a_bay_is_a_dead_end_and_one_in_the_open_is_not() -> None:
    bay = [
        {"id": "a", "polygon": _box(10.0, 8.0, 12.0, 20.0)},
        {"id": "b", "polygon": _box(13.9, 8.0, 16.0, 20.0)},
    ]
    closed = _world(shelves=bay, docks=[{"id": "end", "x": 12.95, "y": 19.3}])
    assert "dead_end_dock" in traits(closed)
    assert bay_width(closed, "end") == pytest.approx(1.9)
    picker = {
        "id": "p",
        "kind": "person",
        "radius": 0.3,
        "speed": 1.0,
        "waypoints": [[12.95, 5.0], [12.95, 18.4]],
    }
    assert "mover_at_dead_end" in traits(
        _world(shelves=bay, docks=closed.docks, moving_obstacles=[picker])
    )
    open_ = _world(shelves=bay, docks=[{"id": "mouth", "x": 12.95, "y": 5.0}])
    assert "dead_end_dock" not in traits(open_)


def test_turned_rows_are_rotated_and_mirrored_ones_fishbone() -> None:
    def turned(k: int, sign: int) -> dict[str, Any]:
        a, b = (5.0 + 4 * k, 10.0), (8.0 + 4 * k, 10.0 + sign * 3.0)
        shape = Polygon([a, b, (b[0] + 0.8, b[1]), (a[0] + 0.8, a[1])])
        return {"id": f"s{k}{sign}", "polygon": [list(p) for p in shape.exterior.coords[:-1]]}

    one_way = _world(shelves=[turned(k, 1) for k in range(4)])
    assert {"rotated_rows"} <= traits(one_way)
    assert "fishbone_rows" not in traits(one_way)
    both = _world(shelves=[turned(k, s) for k in range(3) for s in (1, -1)])
    assert {"rotated_rows", "fishbone_rows"} <= traits(both)
    assert not {"rotated_rows", "fishbone_rows"} & traits(generate(0))  # rows along the walls


def test_a_mover_in_a_long_narrow_corridor_is_single_lane() -> None:
    walls = [
        {"id": "a", "polygon": _box(4.0, 6.0, 28.0, 9.0)},
        {"id": "b", "polygon": _box(4.0, 11.7, 28.0, 14.0)},
    ]
    forklift = {
        "id": "f",
        "kind": "forklift",
        "radius": 0.6,
        "speed": 1.0,
        "waypoints": [[2.0, 10.35], [29.0, 10.35]],
    }
    assert "single_lane" in traits(_world(shelves=walls, moving_obstacles=[forklift]))
    wide = [walls[0], {"id": "b", "polygon": _box(4.0, 13.0, 28.0, 14.0)}]
    assert "single_lane" not in traits(_world(shelves=wide, moving_obstacles=[forklift]))


# --- every delivery can be done however the movers walk -------------------------------------


def _turn_points(scenario: Scenario) -> list[tuple[tuple[float, float], float]]:
    """Where each mover's way reverses, with the mover's radius."""
    turns = []
    for mover in scenario.moving_obstacles:
        pts = [tuple(p) for p in mover.waypoints]
        for k, here in enumerate(pts):
            back, ahead = pts[k - 1], pts[(k + 1) % len(pts)]
            u = (here[0] - back[0], here[1] - back[1])
            v = (ahead[0] - here[0], ahead[1] - here[1])
            norm = math.hypot(*u) * math.hypot(*v)
            if norm > 0 and (u[0] * v[0] + u[1] * v[1]) / norm < -0.9:
                turns.append(((float(here[0]), float(here[1])), mover.radius))
    return turns


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 5, 6, 10, 11, 15, 16])
def test_docks_the_charger_and_the_start_keep_clear_of_where_movers_turn_back(seed: int) -> None:
    # A mover met head on turns back; met where its way turns back anyway, it stands there:
    # a dock under it was out of reach for good (hard:1, the end of a forklift's shuttle).
    # A picker turning just in front of the dock at the closed end of its bay is drawn on
    # purpose (and leaves the bay each round).
    scenario = _draw(seed)
    radius = scenario.robot.radius
    start = scenario.robot.start
    places = [(d.x, d.y) for d in scenario.docks] + [(c.x, c.y) for c in scenario.chargers]
    places.append((start.x, start.y))
    bay_ends = {
        (float(m.waypoints[1][0]), float(m.waypoints[1][1]))
        for m in scenario.moving_obstacles
        if len(m.waypoints) == 4
    }
    for at, mover_radius in _turn_points(scenario):
        if at in bay_ends:
            continue
        keep = radius + mover_radius + YIELD_MARGIN
        assert all(math.dist(p, at) >= keep for p in places), (at, places)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 6, 11, 16, 21])
def test_nobody_turns_back_inside_a_corridor(seed: int) -> None:
    # A mover cannot be passed in a corridor: one that turned back half-way along shut
    # the corridor beyond that point to a robot coming from its end bay (hard:1).
    scenario = _draw(seed)
    along_x = scenario.floor.max_x > scenario.floor.max_y
    across = [p[0 if along_x else 1] for s in scenario.shelves for p in s.polygon]
    ends = (min(across), max(across))  # the racking's extent along the corridors
    for (x, y), _ in _turn_points(scenario):
        u = x if along_x else y
        assert u <= ends[0] or u >= ends[1], ((x, y), ends)


@pytest.mark.parametrize("seed", [0, 5, 10, 15])
def test_a_picker_leaves_its_bay_for_a_while_each_round(seed: int) -> None:
    # A picker that stepped out of its bay to the middle of the lane and straight back in
    # left a robot no time to get past it: the dock at the closed end was out of reach.
    scenario = _draw(seed)
    pickers = 0
    for mover in scenario.moving_obstacles:
        pts = [tuple(p) for p in mover.waypoints]
        if len(pts) != 4:
            continue
        pickers += 1
        mouth, end, again, out = pts
        assert mouth == again
        assert 8.0 - 1e-6 <= math.dist(mouth, out) <= 16.0 + 1e-6
        # out along the lane, across the bay's way in
        bay = (end[0] - mouth[0], end[1] - mouth[1])
        lane = (out[0] - mouth[0], out[1] - mouth[1])
        assert abs(bay[0] * lane[0] + bay[1] * lane[1]) < 1e-6
    assert pickers >= 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", [6, 16, 21, 26, 31, 94, 119])
def test_every_seed_draws_a_world_at_the_size_the_suite_runs(seed: int) -> None:
    # These seeds found no good draw in 30 at 50 x 36 m with one task (the corridors' docks
    # kept clear of where movers turn back left no delivery long enough for a tight
    # battery; the large layout's 48 x 32 m floors held 28 shelves): the property tests
    # that draw seeds at that size failed on them. The last draws are ample now.
    scenario = generate_hard(seed, HardSettings(max_floor=(50.0, 36.0), tasks=1))
    assert scenario.unreachable == ()
