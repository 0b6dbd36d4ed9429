"""Tests for the warehouse world: kinematics, geometry checks, actions, sensors, dispatcher."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError
from shapely.geometry import Point

from cabins.warehouse import values
from cabins.warehouse.energy import BatteryFigures
from runtime.board import StateBoard
from runtime.cabin import Command
from runtime.cabin_map import CabinMap
from runtime.clock import SimClock
from runtime.freeze import FrozenDict
from sim.world.scenario import YIELD_MARGIN, Scenario, load_scenario
from sim.world.world import CommandLike, World

RATE = 20.0
DT = 1.0 / RATE

BASE: dict[str, Any] = {
    "name": "test",
    "duration": 100.0,
    "rate_hz": RATE,
    "floor": {"max_x": 20.0, "max_y": 10.0},
    "shelves": [{"id": "S", "polygon": [[10.0, 0.0], [11.0, 0.0], [11.0, 4.0], [10.0, 4.0]]}],
    "docks": [{"id": "a", "x": 2.0, "y": 2.0}, {"id": "b", "x": 2.0, "y": 8.0}],
    "chargers": [{"id": "c", "x": 5.0, "y": 8.0}],
    "forbidden_zones": [
        {
            "id": "hv",
            "polygon": [[14.0, 6.0], [16.0, 6.0], [16.0, 8.0], [14.0, 8.0]],
            "description": "high voltage",
        },
    ],
    "speed_zones": [
        {
            "id": "slow",
            "polygon": [[0.0, 4.5], [8.0, 4.5], [8.0, 6.0], [0.0, 6.0]],
            "max_speed": 0.3,
        },
    ],
    "moving_obstacles": [
        {
            "id": "p",
            "kind": "person",
            "radius": 0.3,
            "speed": 1.0,
            "waypoints": [[14.0, 2.0], [18.0, 2.0]],
        },
    ],
    "robot": {
        "radius": 0.35,
        "max_speed": 1.5,
        "max_turn_rate": 2.0,
        "max_accel": 100.0,
        "start": {"x": 2.0, "y": 2.0, "theta": 0.0},
        "battery_wh": 100.0,
        "drain_wh_per_m": 0.1,
        "drain_wh_per_s": 0.01,
        "charge_wh_per_s": 1.0,
    },
    "tasks": [{"id": "t", "pickup": "a", "drop": "b", "release": 1.0}],
    "sensors": {"pose_noise": 0.0, "heading_noise": 0.0, "obstacle_range": 3.0},
}


def make_scenario(**changes: Any) -> Scenario:
    """BASE with ``section__field=value`` (or ``section=value``) changes applied."""
    data = copy.deepcopy(BASE)
    for name, value in changes.items():
        target = data
        *parents, last = name.split("__")
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return Scenario.model_validate(data)


class Rig:
    """A world wired to a real board and map, stepped with a sim clock."""

    def __init__(self, scenario: Scenario | None = None, *, seed: int = 0) -> None:
        self.scenario = scenario if scenario is not None else make_scenario()
        self.clock = SimClock()
        self.board = StateBoard(clock=self.clock)
        self.map = CabinMap()
        self.world = World(self.scenario, rng=np.random.default_rng(seed))
        self.world.install(self.board, self.map)
        self.tick = 0

    @property
    def now(self) -> float:
        return self.tick * DT

    def step(self, commands: Iterable[CommandLike] = (), n: int = 1) -> None:
        listed = list(commands)
        for _ in range(n):
            self.clock.sleep_until(self.now)
            self.world.sense(self.board, self.map, self.now)
            self.world.apply(listed, self.now, DT)
            self.tick += 1

    def sense(self) -> None:
        self.clock.sleep_until(self.now)
        self.world.sense(self.board, self.map, self.now)

    def place(self, x: float, y: float, theta: float = 0.0) -> None:
        robot = self.world.state.robot
        robot.x, robot.y, robot.theta = x, y, theta

    def value(self, key: str) -> Any:
        reading = self.board.read(key)
        assert reading is not None, f"{key} is not on the board"
        return reading.value


def drive(v: float, w: float = 0.0) -> tuple[str, str, dict[str, float]]:
    return ("executor", "drive", {"v": v, "w": w})


def act(name: str, **args: Any) -> tuple[str, str, dict[str, Any]]:
    return ("executor", name, args)


# --- install ------------------------------------------------------------------------------


def test_install_puts_static_features_and_constraints_in_place() -> None:
    rig = Rig()
    shelf = rig.map.get("shelf:S")
    assert shelf is not None and shelf.kind == "shelf" and shelf.tags == {"static"}
    dock = rig.map.get("dock:a")
    assert dock is not None and dock.kind == "dock" and (dock.geometry.x, dock.geometry.y) == (2, 2)
    charger = rig.map.get("charger:c")
    assert charger is not None and charger.kind == "charger"
    zone = rig.map.get("zone:hv")
    assert zone is not None and zone.kind == "forbidden" and zone.tags == {"safety"}
    slow = rig.map.get("zone:slow")
    assert slow is not None and slow.kind == "speed_zone" and slow.props["max_speed"] == 0.3

    assert rig.value("world:bounds") == (0.0, 0.0, 20.0, 10.0)
    assert rig.value("robot:radius") == 0.35
    forbidden = rig.board.read("safety:forbidden:hv")
    assert forbidden is not None and forbidden.ttl is None and forbidden.source == "dispatcher"
    assert forbidden.value["zone"] == "hv"
    assert forbidden.value["description"] == "high voltage"
    assert forbidden.value["polygon"][0] == (14.0, 6.0)
    speed = rig.board.read("constraint:speed:slow")
    assert speed is not None and speed.ttl is None and speed.value["max_speed"] == 0.3
    assert rig.value("docks") == FrozenDict({"a": (2.0, 2.0), "b": (2.0, 8.0)})
    assert rig.value("chargers") == FrozenDict({"c": (5.0, 8.0)})


# --- kinematics ---------------------------------------------------------------------------


def test_driving_straight_for_one_second_moves_v_metres() -> None:
    rig = Rig()
    rig.step([drive(0.8)], n=int(RATE))
    robot = rig.world.state.robot
    assert robot.x == pytest.approx(2.8, abs=1e-9)
    assert robot.y == pytest.approx(2.0, abs=1e-9)
    assert rig.world.summary()["distance"] == pytest.approx(0.8)


def test_acceleration_is_limited() -> None:
    rig = Rig(make_scenario(robot__max_accel=1.0))
    rig.step([drive(1.0)])
    assert rig.world.state.robot.v == pytest.approx(1.0 * DT)
    rig.step([drive(1.0)], n=int(RATE))
    assert rig.world.state.robot.v == pytest.approx(1.0)
    # Without a drive command the robot brakes at the same rate.
    rig.step()
    assert rig.world.state.robot.v == pytest.approx(1.0 - DT)


def test_speed_and_turn_rate_are_clamped() -> None:
    rig = Rig()
    rig.step([drive(10.0, -9.0)])
    robot = rig.world.state.robot
    assert (robot.v, robot.w) == (1.5, -2.0)
    rig.step([drive(-10.0, 9.0)])
    assert (robot.v, robot.w) == (-1.5, 2.0)


def test_turning_on_the_spot_keeps_the_position() -> None:
    rig = Rig()
    rig.step([drive(0.0, 1.0)], n=10)
    robot = rig.world.state.robot
    assert (robot.x, robot.y) == (2.0, 2.0)
    assert robot.theta == pytest.approx(0.5)


def test_a_constant_arc_is_integrated_exactly() -> None:
    rig = Rig(make_scenario(robot__start={"x": 6.0, "y": 3.0, "theta": 0.0}))
    # v = 1, w = 1: a circle of radius 1; after pi seconds, half of it.
    ticks = 63
    dt = math.pi / ticks
    for i in range(ticks):
        rig.world.apply([drive(1.0, 1.0)], i * dt, dt)
    robot = rig.world.state.robot
    assert robot.x == pytest.approx(6.0, abs=1e-9)
    assert robot.y == pytest.approx(5.0, abs=1e-9)
    assert abs(robot.theta) == pytest.approx(math.pi, abs=1e-9)


def test_stop_overrides_drive_at_once() -> None:
    rig = Rig(make_scenario(robot__max_accel=1.0))
    rig.step([drive(1.0)], n=40)
    assert rig.world.state.robot.v > 0.9
    rig.step([drive(1.0), ("monitor", "stop", {"reason": "zone"})])
    assert (rig.world.state.robot.v, rig.world.state.robot.w) == (0.0, 0.0)


commands_strategy = st.lists(
    st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.booleans()),
    min_size=1,
    max_size=60,
)


@given(commands_strategy, st.integers(0, 2**32 - 1))
def test_no_teleporting_and_state_stays_in_range(
    script: Sequence[tuple[float, float, bool]], seed: int
) -> None:
    scenario = make_scenario(robot__max_accel=2.0, robot__start={"x": 6.0, "y": 6.0})
    rig = Rig(scenario, seed=seed)
    robot = rig.world.state.robot
    limit = scenario.robot.max_speed * DT
    for v, w, stop in script:
        before = (robot.x, robot.y)
        commands: list[CommandLike] = [drive(v, w)]
        if stop:
            commands.append(("monitor", "stop", {"reason": "test"}))
        rig.step(commands)
        assert math.dist(before, (robot.x, robot.y)) <= limit + 1e-12
        assert abs(robot.v) <= scenario.robot.max_speed
        assert abs(robot.w) <= scenario.robot.max_turn_rate
        assert -math.pi <= robot.theta < math.pi
        assert 0.0 <= robot.battery_wh <= scenario.robot.battery_wh


def test_apply_refuses_a_non_positive_dt() -> None:
    rig = Rig()
    with pytest.raises(ValueError, match="dt must be a positive number"):
        rig.world.apply([], 0.0, 0.0)


def test_bad_commands_are_rejected_and_counted_not_raised() -> None:
    rig = Rig()
    rig.step(
        [
            ("executor", "fly", {}),
            ("executor", "drive", {"v": "fast", "w": 0.0}),
            ("executor", "drive", {"v": 1.0}),
            ("executor", "drive", {"v": True, "w": 0.0}),
            ("executor", "drive", {"v": math.nan, "w": 0.0}),
            ("executor", "drive"),  # type: ignore[list-item]
            ("executor", "drive", [1.0, 0.0]),  # type: ignore[list-item]
        ]
    )
    assert rig.world.summary()["commands_rejected"] == 7
    assert rig.world.state.robot.v == 0.0
    kinds = {i.kind for i in rig.world.incidents}
    assert kinds == {"command_rejected"}
    assert any("unknown command 'fly'" in i.detail for i in rig.world.incidents)


def test_runtime_commands_are_accepted() -> None:
    rig = Rig()
    rig.step([Command("executor", "drive", FrozenDict({"v": 1.0, "w": 0.0}))], n=int(RATE))
    assert rig.world.state.robot.x == pytest.approx(3.0)


# --- collisions, forbidden zones, speed zones ---------------------------------------------


def test_driving_into_a_shelf_is_a_collision_counted_once_per_contact() -> None:
    rig = Rig(make_scenario(robot__start={"x": 9.0, "y": 2.0, "theta": 0.0}))
    rig.step([drive(1.0)], n=10)  # 0.5 m: the disc now reaches x = 9.85 < 10
    assert rig.world.summary()["collisions"] == 0
    rig.step([drive(1.0)], n=4)
    summary = rig.world.summary()
    assert summary["collisions"] == 1
    assert summary["collision_ticks"] >= 1
    rig.step([drive(-1.0)], n=20)
    rig.step([drive(1.0)], n=20)
    assert rig.world.summary()["collisions"] == 2
    assert [i.kind for i in rig.world.incidents] == ["collision", "collision"]
    assert "shelf:S" in rig.world.incidents[0].detail


def test_driving_into_a_moving_obstacle_is_a_collision() -> None:
    rig = Rig(make_scenario(robot__start={"x": 12.5, "y": 2.0, "theta": 0.0}))
    rig.step([drive(1.5)], n=60)  # it walks away at 1 m/s; the robot catches up
    assert rig.world.summary()["collisions"] >= 1
    assert any("obstacle:p" in i.detail for i in rig.world.incidents)


def test_leaving_the_floor_is_a_collision_with_the_wall() -> None:
    rig = Rig(make_scenario(robot__start={"x": 2.0, "y": 2.0, "theta": -math.pi / 2}))
    rig.step([drive(1.0)], n=40)
    assert rig.world.summary()["collisions"] == 1
    assert rig.world.state.contacts == ["wall"]


def test_forbidden_zone_entries_and_ticks_inside_are_counted() -> None:
    rig = Rig(make_scenario(robot__start={"x": 12.0, "y": 7.0, "theta": 0.0}))
    rig.step([drive(1.0)], n=32)  # x = 13.6: the disc is 0.05 m short of the zone
    assert rig.world.summary()["safety_violations"] == 0
    rig.step([drive(1.0)], n=8)
    summary = rig.world.summary()
    assert summary["safety_violations"] == 1
    assert summary["safety_violation_ticks"] == 8
    rig.step([drive(-1.0)], n=40)
    rig.step([drive(1.0)], n=40)
    assert rig.world.summary()["safety_violations"] == 2
    assert rig.world.summary()["collisions"] == 0


def test_near_a_forbidden_zone_is_not_a_violation() -> None:
    rig = Rig(make_scenario(robot__start={"x": 13.0, "y": 7.0, "theta": 0.0}))
    rig.step([drive(0.5)], n=10)  # disc edge at 13.6 < 14
    assert rig.world.summary()["safety_violations"] == 0


def test_speeding_in_a_speed_zone_is_counted_but_not_prevented() -> None:
    rig = Rig(make_scenario(robot__start={"x": 1.0, "y": 5.2, "theta": 0.0}))
    rig.step([drive(0.25)], n=20)
    assert rig.world.summary()["speed_violations"] == 0
    rig.step([drive(1.0)], n=10)
    assert rig.world.state.robot.v == 1.0
    summary = rig.world.summary()
    assert summary["speed_violations"] == 1
    assert summary["speed_violation_ticks"] == 10


def test_fast_outside_a_speed_zone_is_fine() -> None:
    rig = Rig(make_scenario(robot__start={"x": 1.0, "y": 3.0, "theta": 0.0}))
    rig.step([drive(1.5)], n=40)
    assert rig.world.summary()["speed_violations"] == 0


# --- moving obstacles ---------------------------------------------------------------------


def test_an_obstacle_walks_its_loop_at_its_speed() -> None:
    rig = Rig()
    ob = rig.world.state.obstacles[0]
    rig.step(n=int(2.5 * RATE))  # 2.5 m along a 4 m leg
    assert (ob.x, ob.y) == pytest.approx((16.5, 2.0))
    rig.step(n=int(3.0 * RATE))  # 1.5 m to the end, 1.5 m back
    assert (ob.x, ob.y) == pytest.approx((16.5, 2.0))
    assert ob.vx == pytest.approx(-1.0)


def test_an_obstacle_yields_to_a_stopped_robot_in_its_path() -> None:
    rig = Rig(make_scenario(robot__start={"x": 16.0, "y": 2.0, "theta": 0.0}))
    spec = rig.scenario.moving_obstacles[0]
    ob = rig.world.state.obstacles[0]
    stop = ("monitor", "stop", {"reason": "test"})
    for _ in range(int(20 * RATE)):
        rig.step([stop])
        gap = math.hypot(ob.x - 16.0, ob.y - 2.0)
        assert gap >= rig.scenario.robot.radius + spec.radius + YIELD_MARGIN - 1e-9
    assert ob.yielding
    assert rig.world.summary()["collisions"] == 0


@pytest.mark.slow
@given(
    st.floats(12.5, 19.0),
    st.floats(0.5, 3.5),
    st.floats(0.3, 3.0),
    st.integers(0, 1000),
)
def test_a_stopped_robot_is_never_hit(x: float, y: float, speed: float, seed: int) -> None:
    try:
        scenario = make_scenario(
            robot__start={"x": x, "y": y},
            moving_obstacles=[
                {
                    "id": "f",
                    "kind": "forklift",
                    "radius": 0.8,
                    "speed": speed,
                    "waypoints": [[13.0, 1.0], [19.0, 1.0], [19.0, 3.0], [13.0, 3.0]],
                }
            ],
        )
    except ValidationError:
        assume(False)  # the robot cannot start there (too close to the forklift's start)
    rig = Rig(scenario, seed=seed)
    rig.step([("monitor", "stop", {"reason": "test"})], n=int(15 * RATE))
    assert rig.world.summary()["collisions"] == 0


def test_an_obstacle_that_starts_too_close_only_moves_away() -> None:
    rig = Rig()
    ob = rig.world.state.obstacles[0]
    rig.place(13.3, 2.0)  # behind it, 0.7 m away: closer than it would come
    rig.step([("monitor", "stop", {"reason": "test"})], n=40)
    assert ob.x == pytest.approx(16.0)
    assert rig.world.summary()["collisions"] == 0
    rig.place(ob.x + 0.7, 2.0)  # in front of it: it waits
    rig.step([("monitor", "stop", {"reason": "test"})], n=40)
    assert ob.x == pytest.approx(16.0) and ob.yielding


# --- pick, drop, charge -------------------------------------------------------------------


def test_actions_are_refused_with_a_reason_and_reported_next_sense() -> None:
    rig = Rig()
    rig.step([act("pick", task="t")])
    rig.sense()
    last = rig.value("action:last")
    assert (last["action"], last["task"], last["ok"], last["reason"]) == (
        "pick",
        "t",
        False,
        "not_released",
    )
    rig.step(n=int(RATE))
    rig.place(2.5, 2.0)
    rig.step([act("pick", task="t")])
    rig.sense()
    assert rig.value("action:last")["reason"] == "not_at_dock"
    rig.place(2.0, 2.0)
    rig.world.state.robot.v = 0.5
    rig.world.apply([act("pick", task="t")], rig.now, DT)
    rig.tick += 1
    rig.sense()
    assert rig.value("action:last")["reason"] == "moving"
    rig.step([act("drop", task="t")])
    rig.sense()
    assert rig.value("action:last")["reason"] == "no_cargo"
    rig.step([act("pick", task="nope"), act("pick", task=3), act("charge", charger="c")])
    rig.sense()
    readings = [r for r in rig.board.readings("action:last")]
    assert readings[0].value["reason"] == "not_at_charger"
    assert rig.world.summary()["actions_refused"] == 7
    assert rig.world.state.robot.cargo is None


def test_action_ids_grow_and_several_outcomes_are_all_written() -> None:
    rig = Rig()
    seen: list[Any] = []
    rig.board.add_listener(
        lambda reading, key: (
            seen.append(reading.value) if key == "action:last" and reading is not None else None
        )
    )
    rig.step([act("pick", task="nope"), act("drop", task="t")])
    rig.sense()
    assert [(v["id"], v["reason"]) for v in seen] == [(1, "unknown_task"), (2, "no_cargo")]
    assert seen[-1]["stamp"] == 0.0


def test_a_delivery_picks_drops_records_its_time_and_removes_the_goal() -> None:
    rig = Rig()
    rig.step(n=int(RATE))  # t = 1: released
    rig.step([act("pick", task="t")])
    rig.sense()
    assert rig.value("action:last")["ok"] is True
    assert rig.value("cargo") == "t"
    rig.step([act("pick", task="t")])
    rig.sense()
    assert rig.value("action:last")["reason"] == "already_carrying"
    rig.place(2.1, 7.9)
    rig.step([act("drop", task="t")])
    drop_time = rig.now - DT
    rig.sense()
    assert rig.value("action:last")["ok"] is True
    assert rig.value("cargo") is None
    assert "goal:deliver:t" not in rig.board
    summary = rig.world.summary()
    assert summary["deliveries_done"] == summary["deliveries_assigned"] == 1
    assert summary["delivery_times"] == {"t": pytest.approx(drop_time - 1.0)}
    assert summary["mean_delivery_time"] == pytest.approx(drop_time - 1.0)
    assert rig.world.all_delivered
    rig.step([act("pick", task="t")])
    rig.sense()
    assert rig.value("action:last")["reason"] == "already_delivered"


def test_a_drop_at_the_wrong_dock_is_refused() -> None:
    rig = Rig()
    rig.step(n=int(RATE))
    rig.step([act("pick", task="t")])
    rig.step([act("drop", task="t")])  # still at the pick-up dock
    rig.sense()
    assert rig.value("action:last")["reason"] == "not_at_dock"
    assert rig.value("cargo") == "t"


def test_a_pick_fails_with_probability_one() -> None:
    rig = Rig(make_scenario(failures={"pick_fail_p": 1.0}))
    rig.step(n=int(RATE))
    rig.step([act("pick", task="t")], n=5)
    rig.sense()
    last = rig.value("action:last")
    assert (last["ok"], last["reason"]) == (False, "failed")
    assert rig.world.summary()["picks_failed"] == 5
    assert rig.world.summary()["actions_refused"] == 0
    assert rig.world.state.robot.cargo is None


def test_pick_failures_follow_the_probability_with_a_seeded_rng() -> None:
    rig = Rig(make_scenario(failures={"pick_fail_p": 0.3}), seed=7)
    rig.step(n=int(RATE))
    failed = 0
    tries = 400
    for _ in range(tries):
        rig.world.state.robot.cargo = None
        rig.step([act("pick", task="t")])
        failed += rig.world.state.robot.cargo is None
    assert failed == rig.world.summary()["picks_failed"]
    assert 0.22 * tries <= failed <= 0.38 * tries


def test_drop_failures_are_counted() -> None:
    rig = Rig(make_scenario(failures={"drop_fail_p": 1.0}))
    rig.step(n=int(RATE))
    rig.step([act("pick", task="t")])
    rig.place(2.0, 8.0)
    rig.step([act("drop", task="t")], n=3)
    assert rig.world.summary()["drops_failed"] == 3
    assert rig.world.state.robot.cargo == "t"
    assert not rig.world.all_delivered


def test_charging_at_a_charger_raises_the_battery() -> None:
    rig = Rig(make_scenario(robot__start={"x": 5.0, "y": 8.0}, robot__start_battery=0.5))
    rig.step([act("charge", charger="c")], n=int(RATE))
    # +1 Wh/s charge, -0.01 Wh/s idle drain, for one second.
    assert rig.world.state.robot.battery_wh == pytest.approx(50.0 + 1.0 - 0.01)
    rig.sense()
    last = rig.value("action:last")
    assert (last["action"], last["charger"], last["ok"]) == ("charge", "c", True)
    assert rig.value("battery") == pytest.approx(0.5099)
    rig.step([act("charge", charger="x")])
    rig.sense()
    assert rig.value("action:last")["reason"] == "unknown_charger"


def test_the_battery_drains_and_an_empty_robot_cannot_move() -> None:
    rig = Rig(
        make_scenario(
            robot__battery_wh=1.0, robot__drain_wh_per_m=1.0, robot__start={"x": 3.0, "y": 6.5}
        )
    )
    rig.step([drive(1.0)], n=int(2 * RATE))
    robot = rig.world.state.robot
    assert robot.battery_wh == 0.0
    assert robot.x < 4.0 + 1e-9
    x = robot.x
    rig.step([drive(1.0)], n=10)
    assert robot.x == x
    summary = rig.world.summary()
    assert summary["battery_depleted"] is True
    assert summary["depleted_ticks"] >= 10
    assert summary["battery_end"] == 0.0
    assert summary["battery_min"] == 0.0
    empty = next(i.time for i in rig.world.incidents if i.kind == "battery_depleted")
    assert summary["battery_empty_at"] == summary["battery_min_at"] == empty


def test_the_world_keeps_the_lowest_battery_and_leaves_it_out_of_its_digest() -> None:
    rig = Rig(make_scenario(robot__start={"x": 5.0, "y": 8.0}, robot__start_battery=0.5))
    twin = Rig(make_scenario(robot__start={"x": 5.0, "y": 8.0}, robot__start_battery=0.5))
    rig.step([], n=int(RATE))  # idle: it drains 0.01 Wh/s
    low = rig.world.state.robot.battery_wh / rig.scenario.robot.battery_wh
    rig.step([act("charge", charger="c")], n=int(RATE))  # and charges back above it
    summary = rig.world.summary()
    assert summary["battery_min"] == pytest.approx(low) and summary["battery_min"] < 0.5
    assert summary["battery_min_at"] == pytest.approx(1.0)
    assert summary["battery_end"] > summary["battery_min"]
    assert summary["battery_empty_at"] is None
    twin.step([], n=int(RATE))
    twin.step([act("charge", charger="c")], n=int(RATE))
    twin.world.battery_low.level = 0.25  # what it records is not the world's state
    assert twin.world.state_digest() == rig.world.state_digest()
    clone = _restored(rig.world)
    assert clone.battery_low == rig.world.battery_low


def test_the_summary_names_the_reachable_tasks_not_delivered() -> None:
    wall = {"id": "W", "polygon": [[10.0, 4.0], [11.0, 4.0], [11.0, 10.0], [10.0, 10.0]]}
    scenario = make_scenario(
        shelves=[*BASE["shelves"], wall],  # the floor cut in two: x > 11 cannot be reached
        docks=[*BASE["docks"], {"id": "far", "x": 15.0, "y": 5.0}],
        tasks=[
            {"id": "t1", "pickup": "a", "drop": "b"},
            {"id": "t2", "pickup": "a", "drop": "far"},
            {"id": "t3", "pickup": "b", "drop": "a"},
        ],
        allow_unreachable=True,
    )
    rig = Rig(scenario)
    rig.step([], n=2)
    summary = rig.world.summary()
    assert summary["tasks_undeliverable"] == ["t2"]
    assert summary["tasks_undelivered"] == ["t1", "t3"]


# --- sensors and dispatcher ---------------------------------------------------------------


def test_sensors_write_pose_velocity_battery_and_cargo_with_ttls() -> None:
    rig = Rig(
        make_scenario(
            sensors={
                "pose_noise": 0.0,
                "heading_noise": 0.0,
                "pose_ttl": 0.2,
                "velocity_ttl": 0.3,
                "battery_ttl": 2.0,
            }
        )
    )
    rig.step([drive(1.0)])
    rig.sense()
    pose = rig.board.read("pose")
    assert pose is not None and pose.ttl == 0.2 and pose.source == "world"
    assert pose.value == (pytest.approx(2.05), 2.0, 0.0)
    velocity = rig.board.read("velocity")
    assert velocity is not None and velocity.value == (1.0, 0.0) and velocity.ttl == 0.3
    battery = rig.board.read("battery")
    assert battery is not None and 0.99 < battery.value < 1.0 and battery.ttl == 2.0
    assert rig.value("cargo") is None


def test_pose_noise_has_the_configured_spread() -> None:
    rig = Rig(make_scenario(sensors={"pose_noise": 0.1, "heading_noise": 0.0}), seed=3)
    xs = []
    for _ in range(500):
        rig.sense()
        xs.append(rig.value("pose")[0])
    assert abs(float(np.mean(xs)) - 2.0) < 0.02
    assert 0.08 < float(np.std(xs)) < 0.12


def test_pose_drop_outs_skip_the_pose_write() -> None:
    rig = Rig(make_scenario(failures={"sensor_dropout_p": 0.5}), seed=1)
    written = 0
    for _ in range(400):
        before = rig.board.read("pose")
        rig.sense()
        written += rig.board.read("pose") is not before
    dropouts = rig.world.summary()["pose_dropouts"]
    assert written + dropouts == 400
    assert 150 < dropouts < 250


def test_obstacles_in_range_are_map_features_and_leave_when_out_of_range() -> None:
    rig = Rig(make_scenario(robot__start={"x": 12.0, "y": 6.0}))
    rig.sense()
    assert rig.map.get("obstacle:p") is None  # 2.0 -> (14, 2): 4.5 m > 3 m
    rig.place(14.0, 4.5)
    rig.step(n=1)
    rig.sense()
    feature = rig.map.get("obstacle:p")
    assert feature is not None
    assert feature.kind == "obstacle" and feature.tags == {"moving", "person"}
    assert feature.props["vx"] == pytest.approx(1.0)
    assert feature.props["radius"] == 0.3
    assert feature.geometry.centroid.distance(Point(14.05, 2.0)) < 1e-6  # one tick walked
    assert math.isclose(feature.geometry.area, math.pi * 0.09, rel_tol=0.02)
    rig.place(6.0, 8.0)
    rig.sense()
    assert rig.map.get("obstacle:p") is None


def test_the_dispatcher_posts_goals_at_their_release_time() -> None:
    rig = Rig(
        make_scenario(
            tasks=[
                {"id": "t", "pickup": "a", "drop": "b", "release": 1.0},
                {"id": "u", "pickup": "b", "drop": "a", "release": 0.0},
            ]
        )
    )
    rig.sense()
    assert rig.board.keys("goal:*") == ("goal:deliver:u",)
    rig.step(n=int(RATE) - 1)
    rig.sense()
    assert rig.board.keys("goal:*") == ("goal:deliver:u",)
    rig.step()
    rig.sense()
    assert rig.board.keys("goal:*") == ("goal:deliver:t", "goal:deliver:u")
    goal = rig.board.read("goal:deliver:t")
    assert goal is not None and goal.source == "dispatcher" and goal.ttl is None
    assert dict(goal.value) == {
        "task": "t",
        "pickup": "a",
        "drop": "b",
        "pickup_xy": (2.0, 2.0),
        "drop_xy": (2.0, 8.0),
        "released": 1.0,
    }
    assert rig.world.summary()["deliveries_assigned"] == 2


def test_every_value_the_world_writes_reads_back_through_cabins_values() -> None:
    rig = Rig(make_scenario(tasks=[{"id": "t", "pickup": "a", "drop": "b", "release": 0.0}]))
    rig.step([act("pick", task="t")])
    rig.sense()
    models: dict[str, Callable[[Any], Any]] = {
        values.POSE: values.Pose.read,
        values.VELOCITY: values.Velocity.read,
        values.ACCEPTANCE: values.Acceptance.read,
        values.ACTION_LAST: values.ActionOutcome.read,
        values.forbidden_key("hv"): partial(values.Zone.read, values.forbidden_key("hv")),
        values.speed_zone_key("slow"): partial(values.Zone.read, values.speed_zone_key("slow")),
        values.deliver_goal_key("t"): values.DeliverGoal.read,
    }
    for key, read in models.items():
        value = rig.value(key)
        parsed = read(value)
        assert parsed is not None, key
        assert parsed.as_value() == value, key
    # robot:limits holds the limits and the battery's figures, each read by its own model
    limits = rig.value(values.ROBOT_LIMITS)
    robot, figures = values.RobotLimits.read(limits), BatteryFigures.read(limits)
    assert robot is not None and figures is not None
    assert {**robot.as_value(), **figures.as_value()} == limits
    assert figures.share_per_m == rig.scenario.robot.drain_wh_per_m / rig.scenario.robot.battery_wh
    assert values.read_bounds(rig.value(values.WORLD_BOUNDS)) == (0.0, 0.0, 20.0, 10.0)
    assert values.radius_in({values.ROBOT_RADIUS: rig.value(values.ROBOT_RADIUS)}) == 0.35
    assert values.read_places(rig.value(values.DOCKS)) == {"a": (2.0, 2.0), "b": (2.0, 8.0)}
    assert values.read_places(rig.value(values.CHARGERS)) == {"c": (5.0, 8.0)}
    assert values.read_battery(rig.value(values.BATTERY)) == rig.value(values.BATTERY)
    assert values.read_low_battery(rig.value(values.BATTERY_LOW)) == rig.scenario.robot.low_battery
    assert rig.value(values.CARGO) == "t"


# --- determinism and checkpoints ----------------------------------------------------------


def _scripted(seed: int, ticks: int = 300) -> World:
    rig = Rig(load_scenario("warehouse"), seed=seed)
    for i in range(ticks):
        rig.step([drive(1.0, 0.4 if (i // 50) % 2 else -0.4), act("pick", task="t1")])
    return rig.world


def test_the_same_seed_gives_the_same_digest() -> None:
    assert _scripted(5).state_digest() == _scripted(5).state_digest()
    assert _scripted(5).summary() == _scripted(5).summary()


def test_a_different_seed_gives_a_different_digest() -> None:
    digests = {_scripted(seed, ticks=60).state_digest() for seed in range(4)}
    assert len(digests) == 4


def _restored(world: World) -> World:
    """A new world of the same scenario given ``world``'s state, as a checkpoint does."""
    from runtime.testing import round_trip_state
    from sim.run.runstate import records

    fresh = World(world.scenario, rng=np.random.default_rng(12345))
    return round_trip_state(world, fresh, records=records())  # type: ignore[no-any-return]


def test_a_restored_world_continues_identically() -> None:
    rig = Rig(load_scenario("warehouse"), seed=11)
    rig.step([drive(1.0, 0.2)], n=100)
    clone = _restored(rig.world)
    assert clone.state_digest() == rig.world.state_digest()
    twin = Rig(load_scenario("warehouse"))
    twin.world, twin.tick = clone, rig.tick
    rig.step([drive(1.0, -0.3)], n=100)
    twin.step([drive(1.0, -0.3)], n=100)
    assert twin.world.state_digest() == rig.world.state_digest()


def test_the_summary_is_plain_json() -> None:
    import json

    world = _scripted(2, ticks=40)
    summary = world.summary()
    assert json.loads(json.dumps(summary)) == summary
    for key in (
        "deliveries_done",
        "deliveries_assigned",
        "delivery_times",
        "mean_delivery_time",
        "collisions",
        "safety_violations",
        "speed_violations",
        "battery_end",
        "battery_min",
        "battery_min_at",
        "battery_empty_at",
        "tasks_undelivered",
        "distance",
        "picks_failed",
        "drops_failed",
        "battery_depleted",
    ):
        assert key in summary


def test_an_obstacle_blocked_past_its_patience_turns_back() -> None:
    rig = Rig(make_scenario(robot__start={"x": 16.0, "y": 2.0, "theta": 0.0}))
    spec = rig.scenario.moving_obstacles[0]
    ob = rig.world.state.obstacles[0]
    stop = ("monitor", "stop", {"reason": "test"})
    blocked_at = None
    for i in range(int(30 * RATE)):
        rig.step([stop])
        if ob.yielding and blocked_at is None:
            blocked_at = i
        if ob.direction == -1:
            break
    assert blocked_at is not None, "the obstacle never met the robot"
    assert ob.direction == -1
    assert (i - blocked_at) / RATE == pytest.approx(spec.patience, abs=2 / RATE)
    before = math.hypot(ob.x - 16.0, ob.y - 2.0)
    rig.step([stop], n=int(0.5 * RATE))
    assert math.hypot(ob.x - 16.0, ob.y - 2.0) > before + 0.4  # walking away: no stand-off
    assert rig.world.summary()["collisions"] == 0
