"""The safety scanner: a channel of its own for the people and vehicles near the robot, so
that a map that loses them (``map-loss``, an obstacle sensor's drop-out) leaves the monitor
able to stop, and a silent scanner stops the robot (fail-safe)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shapely.geometry import Point

from cabins.monitor import Monitor
from cabins.warehouse.values import SCANNER, Scan
from runtime import Feature, load_spec, load_specs
from runtime.testing import Stale, make_view, run_step
from sim.faults.model import DropoutFault, FaultPlan, MapLossFault, MissingFault
from sim.run.campaign import auto_faults, expectations
from sim.run.harness import Simulation
from sim.world.generate import generate
from tests.support.paths import ROOT

SPECS = ROOT / "specs"
MONITOR = load_spec(SPECS / "monitor.toml")
LIMITS = {"radius": 0.35, "max_speed": 1.5, "max_turn_rate": 2.0, "max_accel": 1.0}

finite = st.floats(-1e3, 1e3, allow_nan=False)
radii = st.floats(0.05, 2.0, allow_nan=False)


# -- the value -------------------------------------------------------------------------


@given(st.floats(0.1, 50.0), st.lists(st.tuples(finite, finite, radii), max_size=8))
def test_a_scan_reads_back_what_it_writes(reach: float, hits: list[Any]) -> None:
    scan = Scan(reach, tuple(hits))
    assert Scan.read(scan.as_value()) == scan
    # the JSON form (lists) reads the same
    assert Scan.read({"range": reach, "hits": [list(h) for h in hits]}) == scan


@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.text(max_size=3),
        lambda c: (
            st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["range", "hits", "x"]), c)
        ),
    )
)
def test_reading_any_value_never_raises(value: Any) -> None:
    scan = Scan.read(value)
    assert scan is None or (scan.range > 0 and all(r > 0 for _, _, r in scan.hits))


def test_a_malformed_scan_reads_as_none() -> None:
    for value in (
        None,
        {"hits": ()},
        {"range": 0.0, "hits": ()},
        {"range": 4.0, "hits": "abc"},
        {"range": 4.0, "hits": ((1.0, 2.0),)},
        {"range": 4.0, "hits": ((1.0, 2.0, 0.0),)},
        {"range": 4.0, "hits": ((1.0, math.nan, 0.3),)},
        {"range": True, "hits": ()},
    ):
        assert Scan.read(value) is None, value


# -- the monitor -----------------------------------------------------------------------


def _view(velocity: Any, scan: Any, *, now: float = 1.0, features: Any = ()) -> Any:
    board = {
        "pose": (0.0, 0.0, 0.0),
        "velocity": velocity,
        "route": ((0.0, 0.0), (10.0, 0.0)),
        "robot:limits": LIMITS,
        "world:bounds": (-20.0, -20.0, 40.0, 40.0),
        "safety:forbidden:far": {
            "zone": "far",
            "polygon": ((15.0, 15.0), (16.0, 15.0), (16.0, 16.0), (15.0, 16.0)),
        },
        SCANNER: scan,
    }
    board = {k: v for k, v in board.items() if v is not None}
    return make_view(MONITOR, board=board, features=features, now=now, tick=int(now * 20))


def _stops(out: Any) -> list[str]:
    return [c.args["reason"] for c in out.commands if c.name == "stop"]


def test_a_person_only_the_scanner_sees_ahead_is_a_predicted_contact() -> None:
    # 1.2 m/s brakes in 0.72 m; the person's edge is 0.5 m ahead of the disc, and the map
    # shows nothing at all
    scan = Scan(4.0, ((1.15, 0.0, 0.3),)).as_value()
    out = run_step(Monitor(MONITOR), _view((1.2, 0.0), scan))
    assert _stops(out) == ["protective"]
    [reaction] = out.reactions
    assert (reaction.pattern, reaction.reaction) == ("contact_predicted", "stop:protective")
    assert reaction.detail["with"] == "scanner:0"


def test_a_person_the_scanner_sees_behind_or_far_ahead_stops_nothing() -> None:
    for hit in ((-1.0, 0.0, 0.3), (3.5, 0.0, 0.3)):
        out = run_step(Monitor(MONITOR), _view((1.2, 0.0), Scan(4.0, (hit,)).as_value()))
        assert _stops(out) == [] and out.reactions == [], hit


def test_the_map_and_the_scanner_seeing_the_same_person_name_the_map_feature() -> None:
    person = Feature("obstacle:p1", Point(1.15, 0.0).buffer(0.3), "obstacle")
    scan = Scan(4.0, ((1.15, 0.0, 0.3),)).as_value()
    out = run_step(Monitor(MONITOR), _view((1.2, 0.0), scan, features=[person]))
    assert [r.detail["with"] for r in out.reactions] == ["obstacle:p1"]


def test_a_robot_creeping_at_a_person_only_the_scanner_sees_is_stopped() -> None:
    # gen:14, run seed 0, map-loss: each protective stop left the robot at rest, where no
    # contact is predicted, and the next tick's drive crept it on, 2 mm at a time, into a
    # person standing aside for it. The obstacle guard holds a robot at rest facing a
    # person close by, and now sees what only the scanner sees.
    scan = Scan(4.0, ((0.69, 0.0, 0.3),)).as_value()  # 4 cm off the disc
    monitor = Monitor(MONITOR)
    for now, velocity in ((1.0, (0.05, 0.0)), (1.05, (0.0, 0.0)), (1.1, (0.0, 0.0))):
        out = run_step(monitor, _view(velocity, scan, now=now))
        assert "obstacle" in _stops(out), now
    stops = [e.data for e in run_step(Monitor(MONITOR), _view((0.0, 0.0), scan)).events]
    assert [(e["reason"], e["obstacle"]) for e in stops] == [("obstacle", "scanner:0")]


def test_a_person_on_the_map_is_guarded_once_not_again_as_the_scanner_sees_it() -> None:
    person = Feature("obstacle:p1", Point(0.7, 0.0).buffer(0.3), "obstacle")
    scan = Scan(4.0, ((0.7, 0.0, 0.3),)).as_value()
    out = run_step(Monitor(MONITOR), _view((0.05, 0.0), scan, features=[person]))
    stops = [e.data["obstacle"] for e in out.events if e.kind == "emergency_stop"]
    assert stops == ["obstacle:p1"]


def test_an_unreadable_scan_is_a_bad_reading_and_a_fail_safe_stop() -> None:
    out = run_step(Monitor(MONITOR), _view((0.0, 0.0), {"range": 4.0, "hits": "nobody"}))
    assert "fail_safe" in _stops(out)
    assert [e.data["key"] for e in out.events if e.kind == "alarm"] == [SCANNER]


def test_a_silent_scanner_stops_the_robot_every_tick_and_says_so_once() -> None:
    monitor = Monitor(MONITOR)
    first = run_step(monitor, _view((0.5, 0.0), Stale(Scan(4.0, ()).as_value())))
    assert _stops(first) == ["fail_safe"]
    assert [(r.pattern, r.reaction, r.detail["reason"]) for r in first.reactions] == [
        (SCANNER, "stop:fail_safe", "stale")
    ]
    stops = [e.data for e in first.events if e.kind == "emergency_stop"]
    assert stops == [{"reason": "fail_safe", "missing": "stale", "pattern": SCANNER}]
    again = run_step(monitor, _view((0.5, 0.0), Stale(Scan(4.0, ()).as_value()), now=1.05))
    assert _stops(again) == ["fail_safe"] and again.reactions == []


def test_no_scanner_at_all_is_absent_and_stops_nothing() -> None:
    out = run_step(Monitor(MONITOR), _view((0.5, 0.0), None))
    assert out.reactions == [] and _stops(out) == []


# -- the world -------------------------------------------------------------------------


def test_the_scanner_sees_the_people_the_map_lost() -> None:
    fault = MapLossFault(feature="obstacle:*", start=0)
    sim = Simulation(generate(23), seed=0, faults=[fault])
    reach = sim.world.scenario.sensors.scanner_range
    radius = {o.id: o.radius for o in sim.world.scenario.moving_obstacles}
    seen = 0
    for _ in range(260):
        # what the world holds when it senses, before the tick moves anything
        robot, obstacles = sim.world.state.robot, sim.world.state.obstacles
        gaps = [(math.hypot(o.x - robot.x, o.y - robot.y) - radius[o.id], o) for o in obstacles]
        within = sorted(
            ((gap, (o.x, o.y, radius[o.id])) for gap, o in gaps if gap <= reach),
            key=lambda item: item[0],
        )
        sim.loop.step()
        assert not [f for f in sim.cabin_map.features() if f.kind == "obstacle"]
        scan = Scan.read(sim.board.read(SCANNER).value)
        assert scan is not None and scan.range == reach
        assert scan.hits == tuple(disc for _, disc in within)
        seen += bool(scan.hits)
    assert seen > 0  # person0 crosses the robot's aisle in these ticks


@pytest.mark.slow
@pytest.mark.parametrize(
    ("world", "ticks"),
    [
        # blind to people from tick 200, the robot drove at 1.09 m/s into a person
        # standing still at tick 224
        (23, 700),
        # it crept at 0.05 m/s into a person standing aside for it, at tick 340
        (14, 420),
    ],
)
def test_the_worlds_the_campaign_found_no_longer_collide_under_map_loss(
    world: int, ticks: int
) -> None:
    fault = MapLossFault(feature="obstacle:*", start=200, end=600)
    sim = Simulation(generate(world), seed=0, faults=[fault])
    for _ in range(ticks):
        sim.loop.step()
    assert sim.world.state.stats.collisions == 0


# -- the campaign's expectations -----------------------------------------------------------


def _readings(board: dict[str, float | None]) -> Any:
    from runtime.patterns import matches

    return lambda pattern: [(k, ttl) for k, ttl in board.items() if matches(k, pattern)]


def test_a_silent_scanner_is_expected_to_stop_the_robot_and_only_hides_what_it_names() -> None:
    specs = load_specs(SPECS)
    with_zones = {"pose": 0.25, "velocity": 0.25, SCANNER: 0.25, "safety:forbidden:hv": None}
    without = {k: v for k, v in with_zones.items() if k != "safety:forbidden:hv"}
    fault = DropoutFault(sensor="scanner", start=0)
    seen = {(e.cabin, e.reaction) for e in expectations(fault, specs, _readings(with_zones))}
    # the zones keep the planner's safety:* in view: only the monitor's scanner goes missing
    assert seen == {("monitor", "stop:fail_safe")}
    seen = {(e.cabin, e.reaction) for e in expectations(fault, specs, _readings(without))}
    assert seen == {("monitor", "stop:fail_safe"), ("planner", "hold:no_plan")}


def test_auto_faults_hide_the_scanner_from_the_monitor() -> None:
    faults = auto_faults(load_specs(SPECS))
    assert MissingFault(cabin="monitor", pattern=SCANNER, start=200, end=600) in faults


def test_only_a_scanner_or_total_drop_out_silences_the_scanner() -> None:
    for sensor, silenced in (("scanner", True), ("all", True), ("obstacles", False)):
        keys = FaultPlan([DropoutFault(sensor=sensor, start=0)]).frozen_keys(1)
        assert (SCANNER in keys) is silenced, sensor


def test_a_hidden_key_is_expected_to_take_a_pattern_away_only_with_every_key_it_names() -> None:
    """``missing:planner:safety:scanner`` leaves the zones in the planner's ``safety:*``:
    no reaction is due, and none is seen; hiding ``safety:*`` itself is reacted to."""
    from sim.faults.model import parse_fault
    from sim.run.campaign import RunRequest, run_one

    specs = load_specs(SPECS)
    partial = run_one(
        RunRequest(
            "warehouse", 0, parse_fault("missing:planner:safety:scanner@20-60"), 70, specs=specs
        )
    )
    assert partial["expected"] == [] and partial["passed"]
    whole = run_one(
        RunRequest("warehouse", 0, parse_fault("missing:planner:safety:*@20-60"), 70, specs=specs)
    )
    assert [(c["cabin"], c["ok"]) for c in whole["expected"]] == [("planner", True)]
