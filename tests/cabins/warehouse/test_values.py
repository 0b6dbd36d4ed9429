"""cabins.warehouse.values: every parser reads what the world writes, refuses what is malformed, and
never raises, on the board's form of a value and on its JSON form alike."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shapely.geometry import box

from cabins.warehouse.values import (
    ACCEPTANCE,
    DEFAULT_ACCEPTANCE,
    DEFAULT_LIMITS,
    FORBIDDEN_PREFIX,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    SPEED_ZONE_PREFIX,
    Acceptance,
    ActionOutcome,
    DeliverGoal,
    Pose,
    RobotLimits,
    Velocity,
    Zone,
    deliver_goal_key,
    forbidden_key,
    positive,
    radius_in,
    read_battery,
    read_bounds,
    read_low_battery,
    read_places,
    read_zone_polygon,
    route_points,
    speed_zone_key,
)
from runtime.freeze import FreezeError, freeze

# -- strategies ----------------------------------------------------------------------------

# Integers stay within 2**70: see test_a_huge_integer_is_no_number for the ones beyond.
_ints = st.integers(min_value=-(2**70), max_value=2**70)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    _ints,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.builds(np.float64, st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(np.int64, st.integers(-(2**63), 2**63 - 1)),
    st.builds(np.bool_, st.booleans()),
    st.from_type(complex),
    st.from_type(Fraction),
    st.from_type(Decimal),
)
_keys = st.one_of(
    st.sampled_from(["x", "y", "zone", "polygon", "max_speed", "radius", "task", "id", "ok"]),
    st.text(max_size=6),
)
anything = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(_keys, inner, max_size=5),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4).map(np.array),
    ),
    max_leaves=20,
)
"""JSON-ish values and worse: nan, inf, bools, numpy scalars and arrays, nested lists and
dicts, bytes, complex numbers, fractions, decimals."""

coordinate = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
size = st.floats(0.01, 1e3, allow_nan=False, allow_infinity=False)
above_zero = st.floats(1e-6, 1e6, allow_nan=False, allow_infinity=False)
finite = st.floats(allow_nan=False, allow_infinity=False)
name = st.text(min_size=1, max_size=10)
point = st.tuples(coordinate, coordinate)


@st.composite
def rectangles(draw: st.DrawFn) -> tuple[tuple[float, float], ...]:
    x, y, w, h = draw(coordinate), draw(coordinate), draw(size), draw(size)
    coords = box(x, y, x + w, y + h).exterior.coords[:-1]
    return tuple((float(a), float(b)) for a, b in coords)


zones = st.builds(
    Zone.of,
    name,
    rectangles(),
    max_speed=st.none() | above_zero,
    description=st.text(max_size=10),
)
poses = st.builds(Pose, coordinate, coordinate, st.floats(-math.pi, math.pi))
velocities = st.builds(Velocity, finite, finite)
limits = st.builds(RobotLimits, above_zero, above_zero, above_zero, above_zero)
acceptances = st.builds(Acceptance, above_zero, st.floats(0.0, 1e3))
outcomes = st.builds(
    ActionOutcome,
    id=_ints,
    action=st.sampled_from(["pick", "drop", "charge"]) | name,
    task=st.none() | name,
    ok=st.booleans(),
    reason=st.text(max_size=12),
    stamp=finite,
    charger=st.none() | name,
)
goals = st.builds(DeliverGoal, name, name, name, point, point, finite)


def as_json(value: Any) -> Any:
    """The value as a report or recording reads it back: tuples are lists, mappings dicts."""
    return json.loads(json.dumps(value))


def board_form(value: Any) -> Any:
    """``value`` frozen as a board would hold it, or itself if it has no frozen form."""
    try:
        return freeze(value)
    except FreezeError:
        return value


def forms(value: Any) -> list[Any]:
    """A written value as the world writes it, as a board holds it, and as JSON."""
    return [value, freeze(value), as_json(value)]


# -- never raises --------------------------------------------------------------------------

PARSERS: dict[str, Callable[[Any], object]] = {
    "Pose.read": Pose.read,
    "Velocity.read": Velocity.read,
    "RobotLimits.read": RobotLimits.read,
    "Acceptance.read": Acceptance.read,
    "ActionOutcome.read": ActionOutcome.read,
    "DeliverGoal.read": DeliverGoal.read,
    "forbidden Zone.read": lambda v: Zone.read(forbidden_key("z"), v),
    "speed Zone.read": lambda v: Zone.read(speed_zone_key("z"), v),
    "read_zone_polygon": read_zone_polygon,
    "read_bounds": read_bounds,
    "read_places": read_places,
    "route_points": route_points,
    "read_battery": read_battery,
    "read_low_battery": read_low_battery,
    "positive": positive,
}


@pytest.mark.parametrize("parser", PARSERS.values(), ids=PARSERS.keys())
@given(value=anything)
def test_a_parser_never_raises(parser: Callable[[Any], object], value: Any) -> None:
    parser(value)
    parser(board_form(value))


@given(
    value=st.fixed_dictionaries(
        {},
        optional={
            "zone": anything,
            "polygon": st.lists(st.lists(anything | coordinate, max_size=3), max_size=6),
            "max_speed": anything,
            "description": anything,
        },
    )
)
def test_a_zone_like_value_never_raises(value: dict[str, Any]) -> None:
    for key in (forbidden_key("z"), speed_zone_key("z"), "constraint:other", "elsewhere"):
        Zone.read(key, value)
    read_zone_polygon(value)


@given(
    value=anything,
    docks=anything,
    view=st.dictionaries(st.sampled_from([ROBOT_LIMITS, ROBOT_RADIUS, ACCEPTANCE]), anything),
)
def test_the_readers_of_a_view_never_raise(value: Any, docks: Any, view: dict[str, Any]) -> None:
    DeliverGoal.read(value, docks if isinstance(docks, dict) else None)
    assert isinstance(RobotLimits.in_view(view), RobotLimits)
    assert isinstance(Acceptance.in_view(view), Acceptance)
    radius = radius_in(view)
    assert radius is None or (math.isfinite(radius) and radius > 0)


def test_a_huge_integer_is_no_number() -> None:
    assert Pose.read((10**400, 0.0, 0.0)) is None


# -- round trips ---------------------------------------------------------------------------


@given(pose=poses)
def test_a_pose_reads_back_in_every_form(pose: Pose) -> None:
    assert pose.as_value() == (pose.x, pose.y, pose.theta)
    assert all(Pose.read(v) == pose for v in forms(pose.as_value()))
    assert Pose.read(np.array(pose.as_value())) == pose


@given(velocity=velocities)
def test_a_velocity_reads_back_in_every_form(velocity: Velocity) -> None:
    assert all(Velocity.read(v) == velocity for v in forms(velocity.as_value()))


@given(given_limits=limits)
def test_robot_limits_read_back_in_every_form(given_limits: RobotLimits) -> None:
    value = given_limits.as_value()
    assert all(RobotLimits.read(v) == given_limits for v in forms(value))
    assert RobotLimits.in_view({ROBOT_LIMITS: freeze(value)}) == given_limits
    assert radius_in({ROBOT_LIMITS: as_json(value), ROBOT_RADIUS: 9.0}) == given_limits.radius


@given(acceptance=acceptances)
def test_acceptance_reads_back_in_every_form(acceptance: Acceptance) -> None:
    assert all(Acceptance.read(v) == acceptance for v in forms(acceptance.as_value()))


@given(outcome=outcomes)
def test_an_action_outcome_reads_back_in_every_form(outcome: ActionOutcome) -> None:
    value = outcome.as_value()
    assert ("charger" in value) == (outcome.charger is not None)
    assert all(ActionOutcome.read(v) == outcome for v in forms(value))


@given(zone=zones)
def test_a_zone_reads_back_in_every_form(zone: Zone) -> None:
    prefix = FORBIDDEN_PREFIX if zone.max_speed is None else SPEED_ZONE_PREFIX
    assert zone.key == prefix + zone.id and zone.forbidden == (zone.max_speed is None)
    for value in forms(zone.as_value()):
        back = Zone.read(zone.key, value)
        assert back == zone
        assert back is not None and back.shape.equals(zone.shape)
        shape = read_zone_polygon(value)
        assert shape is not None and shape.equals(zone.shape)


@given(goal=goals)
def test_a_delivery_goal_reads_back_in_every_form(goal: DeliverGoal) -> None:
    assert goal.key == deliver_goal_key(goal.task)
    assert all(DeliverGoal.read(v) == goal for v in forms(goal.as_value()))


@given(places=st.dictionaries(name, point, max_size=5))
def test_places_read_back_in_every_form(places: dict[str, tuple[float, float]]) -> None:
    assert all(read_places(v) == places for v in forms(places))


@given(x=coordinate, y=coordinate, w=size, h=size)
def test_bounds_read_back_in_every_form(x: float, y: float, w: float, h: float) -> None:
    bounds = (x, y, x + w, y + h)
    assert all(read_bounds(v) == bounds for v in forms(bounds))


@given(route=st.lists(point, max_size=6).map(tuple))
def test_a_route_reads_back_in_every_form(route: tuple[tuple[float, float], ...]) -> None:
    assert all(route_points(v) == route for v in forms(route))


# -- refusals ------------------------------------------------------------------------------

BAD_TRIPLES = [
    (True, 0.0, 0.0),
    (0.0, np.bool_(False), 0.0),
    (math.nan, 0.0, 0.0),
    (0.0, math.inf, 0.0),
    (0.0, 0.0),
    (0.0, 0.0, "north"),
    "0 0 0",
    b"\x00\x00\x00",
    None,
    {"x": 0.0, "y": 0.0, "theta": 0.0},
    np.zeros((3, 1)),
]


@pytest.mark.parametrize("value", BAD_TRIPLES, ids=repr)
def test_a_pose_is_refused_unless_it_is_three_finite_numbers(value: Any) -> None:
    assert Pose.read(value) is None


def test_a_pose_takes_the_shared_rules_for_numpy_and_longer_sequences() -> None:
    assert Pose.read(np.array([1.0, 2.0, 0.5])) == Pose(1.0, 2.0, 0.5)
    assert Pose.read((np.int64(1), 2, np.float32(0.5))) == Pose(1.0, 2.0, 0.5)
    assert Pose.read([1.0, 2.0, 0.5, 99.0]) == Pose(1.0, 2.0, 0.5)
    assert Pose(1.0, 2.0, 0.5).xy == (1.0, 2.0)


@pytest.mark.parametrize("value", [(True, 0.0), (math.nan, 0.0), (1.0,), "ab", None])
def test_a_velocity_is_refused_unless_it_is_two_finite_numbers(value: Any) -> None:
    assert Velocity.read(value) is None


GOOD_LIMITS = {"radius": 0.35, "max_speed": 1.2, "max_turn_rate": 1.5, "max_accel": 0.5}


@pytest.mark.parametrize("bad", [True, 0, -1.0, math.nan, math.inf, "0.35", None])
@pytest.mark.parametrize("field", list(GOOD_LIMITS))
def test_robot_limits_refuse_a_field_that_is_not_a_positive_number(field: str, bad: Any) -> None:
    assert RobotLimits.read({**GOOD_LIMITS, field: bad}) is None
    fallback = RobotLimits.in_view({ROBOT_LIMITS: {**GOOD_LIMITS, field: bad}})
    assert getattr(fallback, field) == getattr(DEFAULT_LIMITS, field)
    others = [f for f in GOOD_LIMITS if f != field]
    assert all(getattr(fallback, f) == GOOD_LIMITS[f] for f in others)


def test_the_radius_comes_from_the_limits_then_robot_radius_then_nowhere() -> None:
    assert radius_in({ROBOT_LIMITS: GOOD_LIMITS, ROBOT_RADIUS: 0.5}) == 0.35
    assert radius_in({ROBOT_LIMITS: {**GOOD_LIMITS, "radius": 0}, ROBOT_RADIUS: 0.5}) == 0.5
    assert radius_in({ROBOT_RADIUS: True}) is None
    assert radius_in({}) is None
    assert RobotLimits.in_view({ROBOT_RADIUS: 0.5}) == RobotLimits(0.5, 1.2, 1.5, 0.5)
    assert RobotLimits.in_view({}) == DEFAULT_LIMITS


def test_acceptance_refuses_bad_numbers_and_falls_back_per_field() -> None:
    assert Acceptance.read({"dock_tolerance": 0.0, "max_speed": 0.05}) is None
    assert Acceptance.read({"dock_tolerance": 0.3, "max_speed": -0.1}) is None
    assert Acceptance.read({"dock_tolerance": 0.3, "max_speed": True}) is None
    assert Acceptance.read({"dock_tolerance": 0.3, "max_speed": 0.0}) == Acceptance(0.3, 0.0)
    view = {ACCEPTANCE: {"dock_tolerance": 0.5, "max_speed": 0.0}}
    assert Acceptance.in_view(view) == Acceptance(0.5, DEFAULT_ACCEPTANCE.max_speed)
    assert Acceptance.in_view({ACCEPTANCE: "tight"}) == DEFAULT_ACCEPTANCE


SQUARE = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))


@pytest.mark.parametrize(
    "polygon",
    [
        ((0.0, 0.0), (1.0, 0.0)),
        ((0.0, 0.0), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0)),  # a bow tie: not a valid polygon
        ((0.0, 0.0), (1.0, 0.0), (2.0, 0.0)),  # no area
        ((0.0, 0.0), (True, 0.0), (1.0, 1.0)),
        ((0.0, 0.0), (math.nan, 0.0), (1.0, 1.0)),
        "somewhere",
        None,
        (),
    ],
    ids=repr,
)
def test_a_zone_without_a_valid_polygon_is_refused(polygon: Any) -> None:
    value = {"zone": "z", "polygon": polygon, "max_speed": 0.5}
    assert read_zone_polygon(value) is None
    assert Zone.read(forbidden_key("z"), value) is None
    assert Zone.read(speed_zone_key("z"), value) is None
    with pytest.raises(ValueError, match="not a valid polygon"):
        Zone.of("z", polygon if isinstance(polygon, tuple) else ())


@pytest.mark.parametrize("limit", [0.0, -1.0, math.nan, math.inf, True, "slow", None])
def test_a_speed_zone_needs_a_positive_limit(limit: Any) -> None:
    value = {"zone": "z", "polygon": SQUARE, "max_speed": limit}
    assert Zone.read(speed_zone_key("z"), value) is None
    assert Zone.read(forbidden_key("z"), value) is not None  # a forbidden zone has no limit


def test_a_zone_is_named_by_its_value_else_by_its_key_and_needs_a_known_key() -> None:
    value = {"polygon": SQUARE, "max_speed": 0.5}
    assert Zone.read("safety:forbidden:hv", {**value, "zone": "other"}) == Zone.of("other", SQUARE)
    named = Zone.read("constraint:speed:slow", {**value, "zone": 7})
    assert named is not None and named.id == "slow" and named.max_speed == 0.5
    assert Zone.read("constraint:other:slow", value) is None
    assert Zone.read("safety:forbidden:hv", [SQUARE]) is None


def test_a_delivery_goal_needs_names_and_a_place_for_each_dock() -> None:
    goal = {"task": "t1", "pickup": "a", "drop": "b", "pickup_xy": (1.0, 2.0), "released": 3.0}
    assert DeliverGoal.read(goal) is None  # no drop position
    docks = read_places({"a": (9.0, 9.0), "b": [4.0, 5.0]})
    assert DeliverGoal.read(goal, docks) == DeliverGoal("t1", "a", "b", (1.0, 2.0), (4.0, 5.0), 3.0)
    assert DeliverGoal.read({**goal, "task": 1}, docks) is None
    assert DeliverGoal.read({**goal, "drop_xy": (True, 0.0)}, {}) is None
    loose = DeliverGoal.read({**goal, "released": math.nan}, docks)
    assert loose is not None and loose.released == 0.0
    assert DeliverGoal.read("t1", docks) is None


@pytest.mark.parametrize(
    "change",
    [
        {"id": True},
        {"id": 1.0},
        {"ok": "yes"},
        {"ok": None},
        {"stamp": math.nan},
        {"stamp": None},
        {"reason": None},
        {"action": 3},
        {"task": 3},
        {"charger": 3},
    ],
    ids=repr,
)
def test_an_action_outcome_with_a_wrong_field_is_refused(change: dict[str, Any]) -> None:
    value = ActionOutcome(1, "pick", "t1", True, "ok", 2.0).as_value()
    assert ActionOutcome.read(value) is not None
    assert ActionOutcome.read({**value, **change}) is None


def test_places_leave_out_what_they_cannot_place() -> None:
    value = {"a": (1.0, 2.0), "b": (True, 0.0), "c": "here", "d": {"x": 3, "y": 4}}
    assert read_places(value) == {"a": (1.0, 2.0), "d": (3.0, 4.0)}
    assert read_places([("a", (1.0, 2.0))]) == {}


@pytest.mark.parametrize(
    "value",
    [(0.0, 0.0, 10.0), (0.0, 0.0, 10.0, 5.0, 1.0), (0.0, 0.0, 0.0, 5.0), (0.0, True, 10.0, 5.0)],
)
def test_bounds_are_refused_unless_four_numbers_around_an_area(value: Any) -> None:
    assert read_bounds(value) is None


def test_an_empty_route_is_no_route_and_a_broken_one_is_malformed() -> None:
    assert route_points(()) == () and route_points([]) == ()
    assert route_points(((0.0, 0.0), (1.0, True))) is None
    assert route_points("route") is None and route_points(None) is None


def test_battery_numbers() -> None:
    assert read_battery(0.5) == 0.5 and read_battery(True) is None
    assert read_battery(math.inf) is None
    assert read_low_battery(0.25) == 0.25 and read_low_battery(1.0) == 1.0
    assert read_low_battery(1.5) is None and read_low_battery(-0.1) is None
    assert positive(2) == 2.0 and positive(0) is None and positive(False) is None


def test_last_read_reads_again_only_when_a_source_is_another_object() -> None:
    from cabins.warehouse.values import LastRead

    calls: list[int] = []

    def read() -> int:
        calls.append(1)
        return len(calls)

    memo: LastRead[int] = LastRead()
    limits, radius = {"radius": 0.3}, 0.3
    assert memo.get((limits, radius), read) == 1
    assert memo.get((limits, radius), read) == 1  # the same objects: not read again
    assert memo.get((dict(limits), radius), read) == 2  # an equal value, another object
    assert memo.get((dict(limits),), read) == 3  # fewer sources
    assert len(calls) == 3


def test_keys_of_finds_prefixed_keys_in_order_and_follows_key_changes() -> None:
    from cabins.warehouse.values import KeysOf

    keys_of = KeysOf()
    view = {"zone:b": 1, "pose": 2, "zone:a": 3, "speed:x": 4}
    assert keys_of(view, "zone:") == ("zone:b", "zone:a")
    assert keys_of(view, ("zone:", "speed:")) == ("zone:b", "zone:a", "speed:x")
    view["zone:c"] = 5  # a new key: looked for again
    assert keys_of(view, "zone:") == ("zone:b", "zone:a", "zone:c")
    del view["zone:b"]
    assert keys_of(view, "zone:") == ("zone:a", "zone:c")
    assert keys_of({}, "zone:") == ()


def test_keys_of_takes_the_ticks_key_tuple_and_compares_it_once() -> None:
    from cabins.warehouse.values import KeysOf

    keys_of = KeysOf()
    view = {"zone:b": 1, "pose": 2, "zone:a": 3}
    keys = tuple(view)
    found = keys_of(keys, "zone:")
    assert found == keys_of(view, "zone:") == ("zone:b", "zone:a")
    again = tuple(view)  # the same keys, another tuple: what was found is kept
    assert keys_of(again, "zone:") is found and keys_of(again, "pose") == ("pose",)
    assert keys_of((*again, "zone:c"), "zone:") == ("zone:b", "zone:a", "zone:c")


@pytest.mark.parametrize(
    "view",
    [
        {},
        {"robot:radius": 0.4},
        {"robot:limits": {"radius": 0.5, "max_speed": 2.0, "max_accel": -1.0}},
        {"robot:limits": {"radius": "big", "max_turn_rate": 1.0}, "robot:radius": 0.3},
        {"robot:limits": "nonsense", "robot:radius": -1.0},
    ],
)
def test_limits_given_a_radius_read_already_are_the_limits_in_view(view: dict[str, Any]) -> None:
    from cabins.warehouse.values import RobotLimits, radius_in

    limits = RobotLimits.given(view.get("robot:limits"), radius_in(view))
    assert limits == RobotLimits.in_view(view)
