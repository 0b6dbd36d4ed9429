"""Tests for scenarios: the shipped ones load, and bad files get errors naming file and key."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from shapely.geometry import LineString, Point

from sim.world.scenario import (
    SCENARIOS_DIR,
    Robot,
    Scenario,
    ScenarioError,
    list_scenarios,
    load_scenario,
    scenario_path,
)

BASE = (SCENARIOS_DIR / "warehouse.toml").read_text(encoding="utf-8")


def _write(tmp_path: Path, text: str, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _edited(old: str, new: str) -> str:
    assert old in BASE, f"the warehouse scenario no longer contains {old!r}"
    return BASE.replace(old, new, 1)


def _problems(tmp_path: Path, text: str) -> ScenarioError:
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    err = info.value
    assert err.path == str(path)
    for line in str(err).splitlines():
        assert line.startswith(f"{path}: "), line
    return err


# --- the shipped scenarios ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["warehouse", "narrow_aisles"])
def test_shipped_scenarios_load_by_name_and_by_path(name: str) -> None:
    by_name = load_scenario(name)
    by_path = load_scenario(SCENARIOS_DIR / f"{name}.toml")
    assert by_name == by_path
    assert by_name.name == name
    assert by_name.description


def test_list_scenarios_names_every_shipped_file_with_its_description() -> None:
    listed = list_scenarios()
    assert [name for name, _ in listed] == sorted(p.stem for p in SCENARIOS_DIR.glob("*.toml"))
    assert {"warehouse", "narrow_aisles"} <= {name for name, _ in listed}
    for name, description in listed:
        assert description == load_scenario(name).description


def test_default_warehouse_is_a_meaningful_closed_loop_scenario() -> None:
    sc = load_scenario("warehouse")
    minx, miny, maxx, maxy = sc.floor.bounds
    assert (maxx - minx, maxy - miny) == (30.0, 20.0)
    assert 3 <= len(sc.docks) <= 4 and len(sc.chargers) == 1
    assert len(sc.forbidden_zones) == 1 and len(sc.speed_zones) == 1
    assert 1 <= len(sc.moving_obstacles) <= 2
    assert 4 <= len(sc.tasks) <= 6
    assert len({t.release for t in sc.tasks}) == len(sc.tasks)
    assert 0 < sc.failures.pick_fail_p <= 0.2
    # The planner must go around the forbidden zone on some delivery.
    zone = sc.forbidden_zones[0].shape
    crossing = [
        t.id
        for t in sc.tasks
        if LineString(
            [(sc.dock(t.pickup).x, sc.dock(t.pickup).y), (sc.dock(t.drop).x, sc.dock(t.drop).y)]
        ).intersects(zone)
    ]
    assert crossing
    # Aisles between shelves are at least 2 m wide.
    shapes = [s.shape for s in sc.shelves]
    gaps = [a.distance(b) for i, a in enumerate(shapes) for b in shapes[i + 1 :]]
    assert min(gaps) >= 2.0


def test_narrow_aisles_is_harder_than_the_warehouse() -> None:
    easy, hard = load_scenario("warehouse"), load_scenario("narrow_aisles")
    assert len(hard.tasks) > len(easy.tasks)
    assert any(o.kind == "forklift" for o in hard.moving_obstacles)
    assert hard.robot.start_battery < easy.robot.start_battery


def test_scenario_is_frozen() -> None:
    sc = load_scenario("warehouse")
    with pytest.raises(ValidationError):
        sc.duration = 1.0  # type: ignore[misc]


def test_bare_names_resolve_to_shipped_files_and_paths_stay_paths(tmp_path: Path) -> None:
    assert scenario_path("warehouse") == SCENARIOS_DIR / "warehouse.toml"
    assert scenario_path("mine.toml") == Path("mine.toml")
    assert scenario_path("dir/mine") == Path("dir/mine")
    copy = _write(tmp_path, BASE, "copy.toml")
    assert load_scenario(str(copy)) == load_scenario("warehouse")


# --- errors -------------------------------------------------------------------------------


def test_a_bad_value_names_file_key_problem_and_value(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("max_speed = 1.5", "max_speed = -1"))
    assert err.problems == ("robot.max_speed: Input should be greater than 0 (got -1)",)


def test_an_unknown_key_suggests_the_known_one(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("max_speed = 1.5", "max_sped = 1.5"))
    assert "robot.max_sped: unknown key (did you mean 'max_speed'?)" in err.problems
    assert "robot.max_speed: missing required key" in err.problems


def test_an_unknown_key_in_a_list_item_suggests_the_known_one(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited('pickup = "inbound"', 'pickpu = "inbound"'))
    assert "tasks[0].pickpu: unknown key (did you mean 'pickup'?)" in err.problems


def test_a_task_naming_a_missing_dock_is_refused(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited('pickup = "returns"', 'pickup = "retruns"'))
    (problem,) = err.problems
    assert problem.startswith("tasks[4].pickup: task 't5': no dock 'retruns'")
    assert "did you mean 'returns'?" in problem


def test_a_shelf_outside_the_floor_is_refused(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("[23.0, 14.0], [23.0, 15.5]", "[33.0, 14.0], [23.0, 15.5]"))
    (problem,) = err.problems
    assert problem.startswith("shelves[5].polygon: 'C2' is not inside the floor")
    assert "(33, 14) is outside" in problem


def test_a_toml_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    text = _edited("duration = 300.0", "duration = = 300.0")
    line = text.splitlines().index("duration = = 300.0") + 1
    err = _problems(tmp_path, text)
    (problem,) = err.problems
    assert problem.startswith(f"line {line}, column ")
    assert "invalid TOML" in problem


def test_duplicate_ids_are_refused_and_zones_share_one_namespace(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited('id = "A2"', 'id = "A1"'))
    assert err.problems == ("shelves[1].id: duplicate shelf id 'A1' (also at shelves[0])",)
    err = _problems(tmp_path, _edited('id = "loading_bay"', 'id = "switchgear"'))
    assert err.problems == (
        "speed_zones[0].id: duplicate zone id 'switchgear' (also at forbidden_zones[0])",
    )


def test_a_dock_inside_a_shelf_and_a_start_in_a_forbidden_zone_are_refused(
    tmp_path: Path,
) -> None:
    text = _edited("x = 28.0\ny = 7.25", "x = 8.0\ny = 4.2")
    text = text.replace("start = { x = 4.5, y = 2.0", "start = { x = 1.0, y = 10.0")
    err = _problems(tmp_path, text)
    assert "docks[3]: 'returns': (8, 4.2) is inside shelf 'A1'" in err.problems
    assert "robot.start: (1, 10) is inside forbidden zone 'switchgear'" in err.problems


def test_a_charger_the_robot_cannot_stand_at_is_refused(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("x = 28.0\ny = 12.25", "x = 22.0\ny = 10.7"))
    (problem,) = err.problems
    assert problem.startswith("chargers[0]: 'charger1': the robot (radius 0.35 m)")
    assert "would overlap shelf 'B2'" in problem


def test_an_invalid_polygon_is_refused(tmp_path: Path) -> None:
    err = _problems(
        tmp_path,
        _edited(
            "[[7.0, 4.0], [14.0, 4.0], [14.0, 5.5], [7.0, 5.5]]",
            "[[7.0, 4.0], [14.0, 5.5], [14.0, 4.0], [7.0, 5.5]]",
        ),
    )
    (problem,) = err.problems
    assert problem.startswith("shelves[0].polygon: polygon is not valid: Self-intersection")


def test_an_obstacle_loop_through_a_shelf_is_refused(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("[[9.0, 7.25], [21.0, 7.25]]", "[[9.0, 7.25], [9.0, 12.25]]"))
    assert err.problems == (
        "moving_obstacles[0].waypoints: the loop of 'worker1' (radius 0.3 m) runs into shelf 'B1'",
    )


def test_a_bad_literal_and_a_short_point_are_explained(tmp_path: Path) -> None:
    text = _edited('kind = "person"', 'kind = "robot"')
    text = text.replace("[[9.0, 7.25], [21.0, 7.25]]", "[[9.0], [21.0, 7.25]]")
    err = _problems(tmp_path, text)
    assert "moving_obstacles[0].kind: Input should be 'person' or 'forklift' (got 'robot')" in (
        err.problems
    )
    assert "moving_obstacles[0].waypoints[0][1]: too few values (a point is [x, y])" in (
        err.problems
    )
    assert not any(p.startswith("moving_obstacles[0].waypoints:") for p in err.problems)


def test_strings_are_not_numbers_and_nan_is_refused(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("duration = 300.0", 'duration = "300"'))
    assert err.problems == ("duration: Input should be a valid number (got '300')",)
    err = _problems(tmp_path, _edited("duration = 300.0", "duration = nan"))
    assert err.problems == ("duration: Input should be a finite number (got nan)",)


def test_a_task_released_after_the_run_ends_is_refused(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("release = 80.0", "release = 400.0"))
    assert err.problems == (
        "tasks[4].release: task 't5' is released after the run ends (duration 300 s)",
    )


def test_an_empty_floor_is_refused(tmp_path: Path) -> None:
    err = _problems(tmp_path, _edited("max_x = 30.0", "max_x = -3.0"))
    assert err.problems[0] == "floor.max_x: must be greater than min_x (0)"


def test_an_unknown_scenario_name_lists_the_shipped_ones() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("wearhouse")
    (problem,) = info.value.problems
    assert "did you mean 'warehouse'?" in problem
    assert "narrow_aisles" in problem
    assert str(info.value).startswith("wearhouse: ")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(missing)
    assert str(info.value) == f"{missing}: file not found"


def test_scenario_error_is_a_value_error_and_pickles() -> None:
    err = ScenarioError("f.toml", ["a: bad", "b: worse"])
    assert isinstance(err, ValueError)
    assert str(err) == "f.toml: a: bad\nf.toml: b: worse"
    again = pickle.loads(pickle.dumps(err))
    assert (again.path, again.problems) == (err.path, err.problems)


@given(st.from_regex(r"[a-z][a-z_]{0,14}", fullmatch=True))
def test_any_unknown_robot_key_is_named_with_its_path(key: str) -> None:
    if key in Robot.model_fields:
        return
    text = _edited("[robot]\n", f"[robot]\n{key} = 1\n")
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), text)
        with pytest.raises(ScenarioError) as info:
            load_scenario(path)
    (problem,) = info.value.problems
    assert problem.startswith(f"robot.{key}: unknown key")


@pytest.mark.slow
@given(st.floats(min_value=-5, max_value=35), st.floats(min_value=-5, max_value=25))
def test_a_dock_loads_exactly_where_the_robot_fits(x: float, y: float) -> None:
    base = load_scenario("warehouse")
    data = base.model_dump()
    data["docks"][0].update(x=x, y=y)
    r = base.robot.radius
    here = Point(x, y)
    fits = (
        r <= x <= 30 - r
        and r <= y <= 20 - r
        and all(s.shape.distance(here) > r for s in base.shelves)
        and all(z.shape.distance(here) > r for z in base.forbidden_zones)
    )
    try:
        Scenario.model_validate(data)
    except ValidationError as exc:
        assert any(e["loc"] == ("docks", 0) for e in exc.errors())
        # where the robot fits, a dock is refused only when no route can end there
        assert not fits or all("cannot be reached" in e["msg"] for e in exc.errors())
    else:
        assert fits


def _with_deep_dock(aisle: float) -> dict[str, Any]:
    """A store room with shelf columns ``aisle`` apart and a dock in the middle of one."""
    shelves = [
        {"id": f"S{i}", "polygon": [[x, 4.0], [x + 1.0, 4.0], [x + 1.0, 12.0], [x, 12.0]]}
        for i, x in enumerate((4.0, 5.0 + aisle, 6.0 + 2 * aisle))
    ]
    return {
        "name": "tight",
        "duration": 100.0,
        "floor": {"max_x": 20.0, "max_y": 16.0},
        "shelves": shelves,
        "docks": [
            {"id": "w", "x": 1.5, "y": 8.0},
            {"id": "deep", "x": 5.0 + aisle / 2, "y": 8.0},
        ],
        "robot": {
            "radius": 0.35,
            "max_speed": 1.5,
            "max_turn_rate": 2.0,
            "max_accel": 1.0,
            "start": {"x": 2.0, "y": 2.0},
            "battery_wh": 100.0,
            "drain_wh_per_m": 0.1,
            "drain_wh_per_s": 0.01,
            "charge_wh_per_s": 0.5,
        },
        "tasks": [
            {"id": "t1", "pickup": "deep", "drop": "w"},
            {"id": "t2", "pickup": "w", "drop": "deep"},
        ],
    }


def test_a_dock_in_a_too_narrow_aisle_is_refused_naming_it_and_the_gap(tmp_path: Path) -> None:
    import tomli_w

    path = _write(tmp_path, tomli_w.dumps(_with_deep_dock(1.3)))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    [line] = str(info.value).splitlines()
    assert line.startswith(f"{path}: docks[1]: dock 'deep' at (5.65, 8) cannot be reached")
    assert "the narrowest gap on the way is 1.30 m wide" in line
    assert "a passage needs at least 1.80 m" in line
    assert "allow_unreachable = true" in line


def test_allow_unreachable_loads_and_its_tasks_count_as_undeliverable() -> None:
    from sim.run.harness import Simulation

    data = _with_deep_dock(1.3)
    scenario = Scenario.model_validate({**data, "allow_unreachable": True})
    assert scenario.unreachable == ("dock:deep",)
    assert scenario.undeliverable == ("t1", "t2")
    summary = Simulation(scenario, seed=0).run(40)
    assert summary["tasks_undeliverable"] == ["t1", "t2"]
    assert summary["deliveries_assigned"] == 0  # never posted: the robot does not wait for ever


def test_a_wide_enough_aisle_is_reachable_whatever_the_grid_alignment() -> None:
    from cabins.warehouse.routing import min_aisle_width

    least = min_aisle_width(0.35)
    assert 1.80 < least < 1.81
    for shift in (0.0, 0.07, 0.13, 0.19):
        data = _with_deep_dock(least + 0.01)
        for shelf in data["shelves"]:
            shelf["polygon"] = [[x + shift, y] for x, y in shelf["polygon"]]
        data["docks"][1]["x"] += shift
        assert Scenario.model_validate(data).unreachable == ()


def test_the_cli_refuses_an_unreachable_dock_with_exit_2(tmp_path: Path) -> None:
    import tomli_w

    from sim.cli.app import main

    path = _write(tmp_path, tomli_w.dumps(_with_deep_dock(1.3)))
    assert main(["run", "--scenario", str(path), "--ticks", "5"]) == 2
