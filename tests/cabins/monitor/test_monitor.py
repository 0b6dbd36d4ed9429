"""The monitor cabin on hand-built views: deviation bands, stale readings, stops, alarms."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Point

from cabins.monitor import DeviationBands, Level, Monitor, MonitorSettings
from runtime import ContextSpec, Feature, load_spec
from runtime.cabin import Outbox
from runtime.testing import Stale, make_view, run_step
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "monitor.toml")
ZONE = {
    "zone": "hv",
    "polygon": ((2.0, -1.0), (3.0, -1.0), (3.0, 1.0), (2.0, 1.0)),
    "description": "high voltage",
}
ROUTE = ((0.0, 0.0), (10.0, 0.0))


def board(**extra: Any) -> dict[str, Any]:
    """A calm robot at the origin heading +x, on a route along the x axis, one zone.

    Keyword ``a__b`` sets key ``a:b``; a value of None leaves the key out.
    """
    values: dict[str, Any] = {
        "pose": (0.0, 0.0, 0.0),
        "velocity": (0.0, 0.0),
        "route": ROUTE,
        "robot:radius": 0.35,
        "safety:forbidden:hv": ZONE,
        "battery": 0.9,
    }
    for key, value in extra.items():
        values[key.replace("__", ":")] = value
    return {k: v for k, v in values.items() if v is not None}


def step(monitor: Monitor, *, now: float = 10.0, tick: int = 0, **kwargs: Any) -> Outbox:
    kwargs.setdefault("board", board())
    return run_step(monitor, make_view(monitor.spec, now=now, tick=tick, **kwargs))


def alarms(out: Outbox, kind: str | None = None) -> list[dict[str, Any]]:
    return [
        dict(e.data)
        for e in out.events
        if e.kind == "alarm" and (kind is None or e.data["kind"] == kind)
    ]


def estops(out: Outbox) -> list[dict[str, Any]]:
    return [dict(e.data) for e in out.events if e.kind == "emergency_stop"]


def stop_reasons(out: Outbox) -> list[str]:
    return [c.args["reason"] for c in out.commands if c.name == "stop"]


def obstacle(x: float, y: float, radius: float = 0.3) -> Feature:
    return Feature(
        "obstacle:p1",
        Point(x, y).buffer(radius),
        "obstacle",
        frozenset({"moving", "person"}),
        {"id": "p1", "kind": "person", "radius": radius, "vx": 0.0, "vy": 0.0},
    )


# -- the spec ---------------------------------------------------------------------


def test_spec_declares_a_reaction_for_every_required_pattern() -> None:
    assert SPEC.name == "monitor"
    assert set(SPEC.required) == {"pose", "safety:*", "safety:scanner", "route"}
    assert set(SPEC.on_missing) == set(SPEC.required)
    assert SPEC.on_missing["safety:*"] == SPEC.on_missing["safety:scanner"] == "stop:fail_safe"
    assert SPEC.map_center == "pose" and set(SPEC.map_kinds) == {"obstacle", "forbidden", "shelf"}
    assert {"cabin_failed", "tick_overrun", "capacity_alarm"} <= set(SPEC.event_kinds)
    assert SPEC.weight_for("safety:forbidden:hv") == 1.0


@pytest.mark.parametrize("pattern", SPEC.required)
def test_each_missing_required_item_gets_its_declared_reaction_once(pattern: str) -> None:
    monitor = Monitor(SPEC)
    first = step(monitor, suppress=[pattern])
    assert [(r.pattern, r.reaction, r.detail["reason"]) for r in first.reactions] == [
        (pattern, SPEC.on_missing[pattern], "fault")
    ]
    again = step(monitor, now=10.05, tick=1, suppress=[pattern])
    assert again.reactions == []


def test_nothing_is_missing_and_nothing_happens_in_a_calm_state() -> None:
    out = step(Monitor(SPEC))
    assert out.commands == [] and out.reactions == [] and out.events == []
    assert [w.key for w in out.writes] == ["monitor:status"]
    assert dict(out.writes[0].value) == {
        "deviation": 0.0,
        "level": "ok",
        "estop": False,
        "reacting": (),
    }


# -- deviation ---------------------------------------------------------------------


def test_deviation_bands_alarm_on_entering_a_band_only() -> None:
    monitor = Monitor(
        SPEC, MonitorSettings(warn_deviation=0.5, alarm_deviation=1.0, hysteresis=0.05)
    )
    seen: list[tuple[Level, list[str]]] = []
    for tick, y in enumerate([0.1, 0.6, 0.7, 1.2, 1.3, 0.97, 0.5, 0.2, 0.6]):
        out = step(
            monitor,
            now=10 + tick * 0.05,
            tick=tick,
            board=board(pose=(3.0, y, 0.0), safety__forbidden__hv=None),
        )
        seen.append((monitor.level, [a["level"] for a in alarms(out, "deviation")]))
    assert seen == [
        ("ok", []),
        ("warn", ["warn"]),
        ("warn", []),
        ("alarm", ["alarm"]),
        ("alarm", []),
        ("alarm", []),
        ("warn", []),
        ("ok", []),
        ("warn", ["warn"]),
    ]
    assert [round(e, 6) for _, e in monitor.history] == [
        0.1,
        0.6,
        0.7,
        1.2,
        1.3,
        0.97,
        0.5,
        0.2,
        0.6,
    ]


def test_deviation_alarm_carries_the_error_and_the_band_limit() -> None:
    out = step(Monitor(SPEC), board=board(pose=(5.0, -1.5, 0.0)))
    assert alarms(out) == [{"kind": "deviation", "level": "alarm", "error": 1.5, "limit": 1.0}]


def test_history_is_bounded() -> None:
    monitor = Monitor(SPEC, MonitorSettings(history=3))
    for tick in range(5):
        step(monitor, now=10 + tick, tick=tick, board=board(pose=(1.0, 0.1 * tick, 0.0)))
    assert [t for t, _ in monitor.history] == [12.0, 13.0, 14.0]


@pytest.mark.parametrize("route", [None, ()])
def test_without_a_route_there_is_nothing_to_deviate_from(route: Any) -> None:
    monitor = Monitor(SPEC)
    step(monitor, board=board(pose=(3.0, 2.0, 0.0)))
    before: Level = monitor.level
    assert before == "alarm"
    values = board(pose=(3.0, 2.0, 0.0))
    if route is None:
        del values["route"]
    else:
        values["route"] = route
    out = step(monitor, now=10.05, tick=1, board=values)
    assert monitor.level == "ok" and monitor.deviation is None
    assert out.reactions == [] and alarms(out) == []
    assert dict(out.writes[0].value) == {
        "deviation": None,
        "level": "ok",
        "estop": False,
        "reacting": (),
    }


def test_a_one_point_route_measures_distance_to_the_point() -> None:
    monitor = Monitor(SPEC)
    step(monitor, board=board(pose=(0.0, 0.0, 0.0), route=((0.3, 0.4),)))
    assert monitor.deviation == pytest.approx(0.5)


def test_status_is_written_only_when_it_changes() -> None:
    monitor = Monitor(SPEC, MonitorSettings(status_step=0.05))
    writes = []
    for tick, y in enumerate([0.0, 0.01, 0.02, 0.2, 0.21, 0.6]):
        out = step(monitor, now=10 + tick * 0.05, tick=tick, board=board(pose=(1.0, y, 0.0)))
        writes.append([dict(w.value) for w in out.writes if w.key == "monitor:status"])
    assert writes == [
        [{"deviation": 0.0, "level": "ok", "estop": False, "reacting": ()}],
        [],
        [],
        [{"deviation": 0.2, "level": "ok", "estop": False, "reacting": ()}],
        [],
        # into the warn band and still growing: the monitor slows the robot down
        [{"deviation": 0.6, "level": "warn", "estop": False, "reacting": ("deviation_growing",)}],
    ]


@settings(max_examples=200, deadline=None)
@given(error=st.floats(0, 5), current=st.sampled_from(["ok", "warn", "alarm"]))
def test_bands_hysteresis_never_drops_below_the_plain_band(error: float, current: Level) -> None:
    bands = DeviationBands(0.5, 1.0, 0.05)
    rank = {"ok": 0, "warn": 1, "alarm": 2}
    plain = bands.classify(error, "ok")
    held = bands.classify(error, current)
    assert plain == ("alarm" if error >= 1.0 else "warn" if error >= 0.5 else "ok")
    assert rank[plain] <= rank[held] <= max(rank[plain], rank[current])
    assert held == plain or abs(error - (0.5 if held == "warn" else 1.0)) < 0.05


# -- readings ----------------------------------------------------------------------


def test_a_stale_pose_raises_one_alarm_each_time_it_goes_stale() -> None:
    monitor = Monitor(SPEC)
    stale = board(pose=Stale((0.0, 0.0, 0.0)))
    first = step(monitor, board=stale)
    assert alarms(first) == [
        {"kind": "stale_reading", "level": "warn", "key": "pose", "reason": "stale"}
    ]
    assert [(r.pattern, r.reaction) for r in first.reactions] == [("pose", "alarm:missing_reading")]
    assert step(monitor, now=10.05, tick=1, board=stale).events == []
    step(monitor, now=10.1, tick=2)  # fresh again
    later = step(monitor, now=10.15, tick=3, board=stale)  # a new drop-out, at once
    assert [a["kind"] for a in alarms(later)] == ["stale_reading"]
    assert len(later.reactions) == 1
    hidden = step(monitor, now=10.2, tick=4, board=stale, suppress=["pose"])
    assert [(a["kind"], a["reason"]) for a in alarms(hidden)] == [("missing_reading", "fault")]


def test_a_suppressed_route_is_a_missing_reading_not_a_stale_one() -> None:
    out = step(Monitor(SPEC), suppress=["route"])
    assert alarms(out) == [
        {"kind": "missing_reading", "level": "warn", "key": "route", "reason": "fault"}
    ]


def test_bad_values_raise_a_bad_reading_alarm_instead_of_failing() -> None:
    monitor = Monitor(SPEC)
    out = step(monitor, board=board(pose=("north", 0.0), route=((0.0, "x"),)))
    kinds = {(a["kind"], a["key"]) for a in alarms(out)}
    assert kinds == {("bad_reading", "pose"), ("bad_reading", "route")}
    assert all("got" in a["error"] for a in alarms(out))


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="alarm_deviation"):
        Monitor(SPEC, MonitorSettings(warn_deviation=1.0, alarm_deviation=0.5))
    with pytest.raises(ValueError, match="stop_margin"):
        Monitor(SPEC, MonitorSettings(stop_margin=-0.1))
    with pytest.raises(ValueError, match="history"):
        Monitor(SPEC, MonitorSettings(history=0))
    with pytest.raises(TypeError, match="ContextSpec"):
        Monitor({"name": "monitor"})  # type: ignore[arg-type]


# -- forbidden zones ---------------------------------------------------------------


def test_stops_near_a_forbidden_zone_when_moving_towards_it() -> None:
    monitor = Monitor(SPEC, MonitorSettings(stop_margin=0.1))
    near = board(pose=(1.6, 0.0, 0.0), velocity=(0.5, 0.0))  # disc 0.05 m from the zone
    out = step(monitor, board=near)
    assert stop_reasons(out) == ["forbidden_zone"]
    assert estops(out) == [
        {"reason": "forbidden_zone", "zone": "hv", "distance": pytest.approx(0.05)}
    ]
    assert dict(out.writes[-1].value)["estop"] is True
    again = step(monitor, now=10.05, tick=1, board=near)
    assert stop_reasons(again) == ["forbidden_zone"] and estops(again) == []


def test_does_not_stop_when_moving_away_alongside_or_when_far() -> None:
    for pose, velocity in [
        ((1.6, 0.0, math.pi), (0.5, 0.0)),  # heading away
        ((1.6, 0.0, 0.0), (-0.5, 0.0)),  # reversing away
        ((1.6, 0.0, math.pi / 2), (0.5, 0.0)),  # alongside
        ((1.5, 0.0, 0.0), (0.5, 0.0)),
    ]:  # 0.15 m off: outside margin
        out = step(Monitor(SPEC), board=board(pose=pose, velocity=velocity))
        assert stop_reasons(out) == [] and estops(out) == [], (pose, velocity)


def test_holds_a_robot_at_rest_that_faces_the_zone_at_close_range() -> None:
    facing = step(Monitor(SPEC), board=board(pose=(1.62, 0.0, 0.0), velocity=(0.0, 0.0)))
    assert stop_reasons(facing) == ["forbidden_zone"]
    outer = step(Monitor(SPEC), board=board(pose=(1.58, 0.0, 0.0), velocity=(0.0, 0.0)))
    assert stop_reasons(outer) == []  # 0.07 m: beyond the hold, it may move (or turn)
    turned = step(Monitor(SPEC), board=board(pose=(1.62, 0.0, math.pi), velocity=(0.0, 0.0)))
    assert stop_reasons(turned) == []


def test_a_hold_outlasts_pose_noise_but_not_a_real_move() -> None:
    monitor = Monitor(SPEC, MonitorSettings(hold_release=1.0))
    at_rest = (0.0, 0.0)
    assert stop_reasons(step(monitor, board=board(pose=(1.62, 0.0, 0.0), velocity=at_rest)))
    # the robot has not moved: a pose 0.12 m off the zone is noise, the hold goes on
    jitter = step(monitor, now=10.05, tick=1, board=board(pose=(1.53, 0.0, 0.0), velocity=at_rest))
    assert stop_reasons(jitter) == ["forbidden_zone"]
    far = step(monitor, now=10.1, tick=2, board=board(pose=(1.4, 0.0, 0.0), velocity=at_rest))
    assert stop_reasons(far) == []


def test_unknown_velocity_near_a_zone_stops() -> None:
    values = board(pose=(1.6, 0.0, math.pi))
    del values["velocity"]
    assert stop_reasons(step(Monitor(SPEC), board=values)) == ["forbidden_zone"]


def test_a_robot_inside_a_zone_is_stopped() -> None:
    out = step(Monitor(SPEC), board=board(pose=(2.5, 0.0, math.pi), velocity=(0.5, 0.0)))
    assert stop_reasons(out) == ["forbidden_zone"]
    assert estops(out)[0]["distance"] == pytest.approx(-0.35)


def test_uses_the_robot_radius_from_robot_limits() -> None:
    values = board(pose=(1.3, 0.0, 0.0), velocity=(0.5, 0.0))
    values["robot:limits"] = {
        "radius": 0.65,
        "max_speed": 1.2,
        "max_turn_rate": 1.5,
        "max_accel": 1.0,
    }
    assert stop_reasons(step(Monitor(SPEC), board=values)) == ["forbidden_zone"]
    del values["robot:limits"]
    assert stop_reasons(step(Monitor(SPEC), board=values)) == []


@pytest.mark.parametrize("bad", [0.0, -0.65, math.nan, True, "0.65"])
def test_a_radius_that_is_not_a_positive_number_is_a_bad_reading(bad: Any) -> None:
    values = board(pose=(1.3, 0.0, 0.0), velocity=(0.5, 0.0))
    values["robot:limits"] = {"radius": bad, "max_speed": 1.2}
    out = step(Monitor(SPEC), board=values)
    assert [a["key"] for a in alarms(out, "bad_reading")] == ["robot:limits"]
    assert stop_reasons(out) == []  # robot:radius (0.35) is used: the disc is clear
    values["robot:radius"] = bad
    out = step(Monitor(SPEC), board=values)
    assert [a["key"] for a in alarms(out, "bad_reading")] == ["robot:limits", "robot:radius"]


def test_a_numpy_pose_is_read_by_the_shared_rules() -> None:
    out = step(Monitor(SPEC), board=board(pose=np.array([0.0, 0.0, 0.0]), velocity=(0, 0)))
    assert alarms(out) == []
    out = step(Monitor(SPEC), board=board(pose=(0.0, 0.0, True)))
    assert [a["key"] for a in alarms(out, "bad_reading")] == ["pose"]


def test_a_forbidden_zone_on_the_map_guards_when_its_safety_item_is_hidden() -> None:
    values = board(pose=(1.6, 0.0, 0.0), velocity=(0.5, 0.0))
    values["safety:forbidden:other"] = {
        "zone": "other",
        "description": "",
        "polygon": ((20, 20), (21, 20), (21, 21)),
    }
    shape = Feature(
        "zone:hv",
        Point(2.5, 0.0).buffer(0.5, cap_style="square"),
        "forbidden",
        frozenset({"safety"}),
        {"id": "hv"},
    )
    out = step(Monitor(SPEC), board=values, features=[shape], suppress=["safety:forbidden:hv"])
    assert "safety:*" not in make_view(SPEC, board=values, suppress=["safety:forbidden:hv"]).missing
    assert stop_reasons(out) == ["forbidden_zone"]


def drive_at_zone(
    monitor: Monitor, pose: tuple[float, float, float], ticks: int, wants: Any
) -> list[tuple[float, float, float, bool]]:
    """Close the loop with a unicycle (speed ramps at 1 m/s², turns at once) whose driver
    asks ``wants(x, y, theta) -> (v, w)``; every tick's (x, y, theta, stopped)."""
    x, y, theta = pose
    v = w = 0.0
    dt, accel = 0.05, 1.0
    trace = []
    for tick in range(ticks):
        out = step(
            monitor, now=10 + tick * dt, tick=tick, board=board(pose=(x, y, theta), velocity=(v, w))
        )
        stopped = bool(stop_reasons(out))
        want_v, want_w = wants(x, y, theta)
        v = 0.0 if stopped else v + max(-accel * dt, min(accel * dt, want_v - v))
        w = 0.0 if stopped else want_w
        theta += w * dt
        x, y = x + v * dt * math.cos(theta), y + v * dt * math.sin(theta)
        trace.append((x, y, theta, stopped))
    return trace


@pytest.mark.slow
def test_a_driver_pushing_at_the_zone_is_held_short_of_it() -> None:
    trace = drive_at_zone(
        Monitor(SPEC, MonitorSettings(hold_release=1.0)),
        (0.0, 0.0, 0.0),
        1200,
        lambda x, y, theta: (1.0, 0.0),
    )
    gaps = [2.0 - x - 0.35 for x, _, _, _ in trace]
    assert gaps[399] < 0.05  # held inside the hold band after 20 s ...
    # ... where each free tick it uses to push on doubles its wait for the next one
    assert gaps[399] - gaps[-1] < 0.015
    assert min(gaps) > 0.02


def test_a_held_driver_that_turns_away_gets_free() -> None:
    """At rest, close and facing the zone, a driver that turns on the spot to face away
    and then drives off gets away within a free tick or two."""

    def turn_then_leave(x: float, y: float, theta: float) -> tuple[float, float]:
        return (0.5, 0.0) if math.cos(theta) < -0.9 else (0.0, 2.0)

    trace = drive_at_zone(
        Monitor(SPEC, MonitorSettings(hold_release=1.0)), (1.62, 0.0, 0.0), 100, turn_then_leave
    )
    held = [tick for tick, (_, _, _, stopped) in enumerate(trace) if stopped]
    assert held == list(range(20))  # held at first, for hold_release ...
    assert trace[-1][0] < 1.0  # ... then it turned and left
    assert min(2.0 - x - 0.35 for x, _, _, _ in trace) > 0.0


@settings(max_examples=60, deadline=None)
@given(
    x=st.floats(1.0, 1.9),
    y=st.floats(-0.5, 0.5),
    theta=st.floats(-math.pi, math.pi),
    speed=st.floats(-1.0, 1.0),
)
def test_stops_only_close_to_the_zone_and_always_when_closing_in(
    x: float, y: float, theta: float, speed: float
) -> None:
    out = step(Monitor(SPEC), board=board(pose=(x, y, theta), velocity=(speed, 0.0)))
    gap = 2.0 - x - 0.35
    closing = speed * math.cos(theta)  # the zone's nearest edge is straight along +x
    if gap >= 0.1:
        assert stop_reasons(out) == []
    elif closing > 1e-3:
        assert stop_reasons(out) == ["forbidden_zone"]
    elif closing < -1e-3:
        assert stop_reasons(out) == []


# -- fail-safe -----------------------------------------------------------------------


def test_fail_safe_stops_every_tick_while_safety_is_hidden() -> None:
    monitor = Monitor(SPEC)
    first = step(monitor, suppress=["safety:*"])
    assert stop_reasons(first) == ["fail_safe"]
    assert estops(first) == [{"reason": "fail_safe", "missing": "fault", "pattern": "safety:*"}]
    assert [(r.pattern, r.reaction, dict(r.detail)) for r in first.reactions] == [
        ("safety:*", "stop:fail_safe", {"reason": "fault"})
    ]
    for tick in range(1, 4):
        out = step(monitor, now=10 + tick * 0.05, tick=tick, suppress=["safety:*"])
        assert stop_reasons(out) == ["fail_safe"]
        assert estops(out) == [] and out.reactions == []
    assert monitor.estop
    back = step(monitor, now=10.2, tick=4)
    assert stop_reasons(back) == [] and monitor.estop  # the stop episode lingers a moment
    again = step(monitor, now=10.25, tick=5, suppress=["safety:*"])
    assert [r.reaction for r in again.reactions] == ["stop:fail_safe"]
    calm = step(monitor, now=12.0, tick=40)
    assert stop_reasons(calm) == [] and not monitor.estop


def test_fail_safe_outranks_a_zone_stop() -> None:
    out = step(
        Monitor(SPEC),
        board=board(pose=(1.6, 0.0, 0.0), velocity=(0.5, 0.0)),
        features=[
            Feature(
                "zone:hv",
                Point(2.5, 0.0).buffer(0.5, cap_style="square"),
                "forbidden",
                frozenset({"safety"}),
                {"id": "hv"},
            )
        ],
        suppress=["safety:*"],
    )
    assert stop_reasons(out) == ["fail_safe"]
    assert {e["reason"] for e in estops(out)} == {"fail_safe", "forbidden_zone"}


def test_no_stop_when_the_scenario_simply_has_no_forbidden_zones() -> None:
    values = board()
    del values["safety:forbidden:hv"]
    view = make_view(SPEC, board=values)
    assert view.missing["safety:*"] == "absent"
    out = run_step(Monitor(SPEC), view)
    assert out.commands == [] and out.reactions == [] and estops(out) == []


def test_an_unreadable_safety_item_stops_the_robot() -> None:
    values = board()
    values["safety:forbidden:hv"] = {"zone": "hv", "polygon": "somewhere"}
    out = step(Monitor(SPEC), board=values)
    assert stop_reasons(out) == ["fail_safe"]
    assert estops(out)[0]["missing"] == "unreadable"
    assert [a["key"] for a in alarms(out, "bad_reading")] == ["safety:forbidden:hv"]


def test_a_forbidden_zone_whose_polygon_is_not_valid_is_unreadable() -> None:
    values = board()
    bow_tie = ((2.0, -1.0), (3.0, 1.0), (3.0, -1.0), (2.0, 1.0))
    values["safety:forbidden:hv"] = {"zone": "hv", "polygon": bow_tie}
    out = step(Monitor(SPEC), board=values)
    assert stop_reasons(out) == ["fail_safe"]
    assert [a["key"] for a in alarms(out, "bad_reading")] == ["safety:forbidden:hv"]


def test_an_unreadable_speed_zone_is_a_bad_reading_and_nothing_more() -> None:
    values = board(pose=(5.0, 0.0, 0.0), velocity=(0.8, 0.0))
    square = ((4, -1), (6, -1), (6, 1), (4, 1))
    for bad in ({"zone": "slow", "polygon": square, "max_speed": 0}, {"zone": "slow"}):
        values["constraint:speed:slow"] = bad
        out = step(Monitor(SPEC), board=values)
        assert [a["key"] for a in alarms(out)] == ["constraint:speed:slow"]
        assert out.commands == []


# -- obstacles -----------------------------------------------------------------------


def test_obstacle_guard_stops_only_when_moving_towards_a_close_obstacle() -> None:
    person = [obstacle(2.0, 0.0)]  # the disc at x=1.3 is 0.05 m from the person
    near = board(pose=(1.3, 0.0, 0.0), velocity=(0.5, 0.0), safety__forbidden__hv=None)
    monitor = Monitor(SPEC)
    out = step(monitor, board=near, features=person)
    assert stop_reasons(out) == ["obstacle"]
    assert estops(out) == [
        {"reason": "obstacle", "obstacle": "obstacle:p1", "distance": pytest.approx(0.05, abs=1e-3)}
    ]
    again = step(monitor, now=10.05, tick=1, board=near, features=person)
    assert stop_reasons(again) == ["obstacle"] and estops(again) == []

    away = board(pose=(1.3, 0.0, math.pi), velocity=(0.5, 0.0), safety__forbidden__hv=None)
    assert stop_reasons(step(Monitor(SPEC), board=away, features=person)) == []
    far = board(pose=(1.0, 0.0, 0.0), velocity=(0.5, 0.0), safety__forbidden__hv=None)
    assert stop_reasons(step(Monitor(SPEC), board=far, features=person)) == []


# -- events and other alarms -----------------------------------------------------------


def test_cabin_failures_and_overruns_alarm_once_per_event() -> None:
    monitor = Monitor(SPEC)
    failed = (
        "cabin_failed",
        {"cabin": "planner", "tick": 3, "error_type": "KeyError", "message": "x"},
        9.5,
    )
    overrun = ("tick_overrun", {"tick": 4, "compute_s": 0.07, "skipped": 1}, 9.6)
    first = step(monitor, events=[failed, overrun])
    assert [(a["kind"], a["level"]) for a in alarms(first)] == [
        ("cabin_failed", "alarm"),
        ("tick_overrun", "warn"),
    ]
    assert alarms(first)[0]["cabin"] == "planner"
    assert alarms(first)[0]["error_type"] == "KeyError"
    assert alarms(first)[1]["compute_s"] == 0.07
    # the same events, still in the window, are not alarmed again ...
    assert alarms(step(monitor, now=10.05, tick=1, events=[failed, overrun])) == []
    # ... a second failure is
    second = (
        "cabin_failed",
        {"cabin": "executor", "tick": 5, "error_type": "ValueError", "message": "y"},
        9.9,
    )
    out = step(monitor, now=10.1, tick=2, events=[failed, overrun, second])
    assert [a["cabin"] for a in alarms(out, "cabin_failed")] == ["executor"]


def test_capacity_alarms_raise_one_alarm_per_episode() -> None:
    monitor = Monitor(SPEC, MonitorSettings(episode_gap=1.0))
    events = [
        ("capacity_alarm", {"tick": t, "held": 70, "pinned": 66, "capacity": 64}, 9.0 + 0.05 * t)
        for t in range(10)
    ]
    first = step(monitor, events=events)
    assert [a["kind"] for a in alarms(first)] == ["capacity"]
    assert alarms(step(monitor, now=10.05, tick=1, events=events)) == []


def test_speeding_in_a_speed_zone_and_a_low_battery_alarm_once() -> None:
    monitor = Monitor(SPEC)
    values = board(pose=(5.0, 0.0, 0.0), velocity=(0.8, 0.0), battery=0.1)
    values["constraint:speed:slow"] = {
        "zone": "slow",
        "max_speed": 0.5,
        "polygon": ((4, -1), (6, -1), (6, 1), (4, 1)),
    }
    first = step(monitor, board=values)
    assert sorted(a["kind"] for a in alarms(first)) == ["battery", "speed"]
    assert alarms(first, "speed")[0]["zone"] == "slow"
    assert alarms(first, "battery")[0]["threshold"] == 0.25
    assert alarms(step(monitor, now=10.05, tick=1, board=values)) == []
    values["velocity"] = (0.4, 0.0)
    values["battery"] = 0.5
    assert alarms(step(Monitor(SPEC), board=values)) == []


def test_the_monitor_is_a_cabin_with_the_spec_name() -> None:
    custom = ContextSpec(name="guard", board_keys=("pose",), required=("pose",))
    monitor = Monitor(custom)
    assert monitor.name == "guard" and monitor.spec is custom
    out = step(monitor, board={"pose": (0.0, 0.0, 0.0)})
    assert out.commands == []


def test_capacity_alarm_seen_in_the_view_raises_one_alarm_per_episode() -> None:
    spec = load_spec(ROOT / "specs" / "monitor.toml")
    monitor = Monitor(spec)
    board: dict[str, Any] = {
        f"safety:forbidden:z{i}": {
            "zone": f"z{i}",
            "polygon": ((50 + i, 50), (51 + i, 50), (51 + i, 51)),
        }
        for i in range(4)
    }
    board["pose"] = (0.0, 0.0, 0.0)
    alarms = []
    for tick in range(3):
        view = make_view(spec, board=board, capacity=2, now=10.0 + tick * 0.05, tick=tick)
        assert view.capacity_alarm  # pinned safety items alone overflow memory
        assert (view.occupancy.pinned, view.occupancy.capacity) == (4, 2)
        out = run_step(monitor, view)
        alarms += [e for e in out.events if e.kind == "alarm" and e.data["kind"] == "capacity"]
    assert len(alarms) == 1
    assert {k: alarms[0].data[k] for k in ("held", "pinned", "capacity")} == {
        "held": 4,
        "pinned": 4,
        "capacity": 2,
    }  # what an operator needs to act on it
