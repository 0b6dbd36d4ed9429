"""Tests for runtime.cabin_map: features, exact windows and corridors, and the lazy index."""

from __future__ import annotations

import math
import pickle
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, Point, Polygon, box
from shapely.ops import nearest_points

from runtime.cabin_map import CabinMap, Feature
from runtime.freeze import FreezeError, FrozenDict


def pt(fid: str, x: float, y: float, kind: str = "thing", tags: Iterable[str] = ()) -> Feature:
    return Feature(fid, Point(x, y), kind, frozenset(tags))


def ids(features: Iterable[Feature]) -> list[str]:
    return [f.id for f in features]


# -- Feature -------------------------------------------------------------------


def test_feature_normalises_tags_and_freezes_props() -> None:
    tags = ["a", "b", "a"]
    f = Feature("s1", box(0, 0, 1, 1), "shelf", tags, {"items": [1, 2], "m": {"k": 1}})  # type: ignore[arg-type]
    assert f.tags == frozenset({"a", "b"})
    assert isinstance(f.props, FrozenDict)
    assert f.props["items"] == (1, 2)
    assert isinstance(f.props["m"], FrozenDict)
    with pytest.raises(TypeError):
        f.props["items"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        f.kind = "other"  # type: ignore[misc]


def test_feature_bare_string_tag_is_one_tag() -> None:
    assert Feature("s1", Point(0, 0), "shelf", "fragile").tags == frozenset({"fragile"})  # type: ignore[arg-type]


def test_feature_is_hashable_and_picklable() -> None:
    f = Feature("s1", box(0, 0, 1, 1), "shelf", frozenset({"a"}), {"n": 1, "arr": np.arange(3)})
    g = Feature("s1", box(0, 0, 1, 1), "shelf", frozenset({"a"}), {"n": 1, "arr": np.arange(3)})
    assert hash(f) == hash(g)
    assert f == g
    assert f != Feature(
        "s1", box(0, 0, 1, 1), "shelf", frozenset({"a"}), {"n": 1, "arr": np.arange(4)}
    )
    assert len({f, g, pt("other", 0, 0)}) == 2
    back = pickle.loads(pickle.dumps(f))
    assert back.id == "s1" and back.kind == "shelf" and back.tags == frozenset({"a"})
    assert back.geometry.equals(f.geometry)
    assert back == f
    assert not back.props["arr"].flags.writeable


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"id": ""}, ValueError, "id must be a non-empty"),
        ({"id": 7}, TypeError, "id must be a str"),
        ({"kind": ""}, ValueError, "'f1': kind must be a non-empty"),
        ({"geometry": (0, 0)}, TypeError, "'f1': geometry must be a shapely geometry"),
        ({"geometry": Polygon()}, ValueError, "'f1': geometry is empty"),
        (
            {"geometry": Polygon([(0, 0), (1, 1), (1, 0), (0, 1)])},
            ValueError,
            "'f1': geometry is invalid: Self-intersection",
        ),
        ({"geometry": LineString([(0, 0), (0, 0)])}, ValueError, "'f1': geometry is invalid"),
        ({"geometry": Point(math.nan, 1.0)}, ValueError, "'f1': geometry is invalid"),
        ({"tags": ["ok", 3]}, TypeError, "feature 'f1' tags must all be str"),
        ({"props": [1, 2]}, TypeError, "'f1': props must be a mapping"),
        ({"props": {"bad": object()}}, FreezeError, "feature 'f1'"),
    ],
)
def test_feature_refuses_bad_input(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    args: dict[str, Any] = {"id": "f1", "geometry": Point(0, 0), "kind": "shelf"}
    args.update(kwargs)
    with pytest.raises(error, match=message.replace("(", r"\(")):
        Feature(**args)


# -- changes and version -------------------------------------------------------


def test_version_changes_on_every_change_and_only_then() -> None:
    m = CabinMap()
    seen = [m.version]
    m.add(pt("a", 0, 0))
    seen.append(m.version)
    m.add(pt("a", 1, 1), replace=True)
    seen.append(m.version)
    m.add(pt("b", 2, 2))
    seen.append(m.version)
    m.remove("a")
    seen.append(m.version)
    assert m.discard("b") is not None
    seen.append(m.version)
    assert seen == sorted(set(seen)), "each change must move the version forward"
    before = m.version
    with pytest.raises(KeyError):
        m.remove("a")
    assert m.discard("nope") is None
    m.window((0, 0), 10)
    assert m.version == before


_change = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 6)),
    st.tuples(st.just("drop"), st.integers(0, 6)),
    st.tuples(st.just("mark")),
    st.tuples(st.just("pickle")),
)


@given(st.lists(_change, max_size=40))
def test_revisions_and_the_change_feed_follow_every_put(steps: list[tuple[Any, ...]]) -> None:
    """A feature's revision is the map version its last add or replace made; the change
    feed since a version lists, newest first, exactly the features put after it that are
    still on the map; both survive pickling."""
    m = CabinMap()
    revision: dict[str, int] = {}  # the model: what each put made
    marks = [m.version]
    for step in steps:
        if step[0] == "put":
            fid = f"f{step[1]}"
            m.add(pt(fid, float(step[1]), 0.0), replace=True)
            revision[fid] = m.version
        elif step[0] == "drop":
            fid = f"f{step[1]}"
            if m.discard(fid) is not None:
                del revision[fid]
        elif step[0] == "mark":
            marks.append(m.version)
        else:
            from runtime.testing import round_trip_state

            m = round_trip_state(m, CabinMap(overflow_limit=m._overflow_limit))
        assert dict(m.revisions()) == revision
        for fid in revision:
            assert m.revision(fid) == revision[fid]
        assert m.revision("nope") is None
        for mark in marks:
            newer = sorted((r, f) for f, r in revision.items() if r > mark)
            assert m.changed_since(mark) == [f for _, f in reversed(newer)]
    with pytest.raises(TypeError):
        m.revisions()["f0"] = 1  # type: ignore[index]


def test_duplicate_add_is_refused_and_changes_nothing() -> None:
    m = CabinMap()
    m.add(pt("a", 0, 0))
    version = m.version
    with pytest.raises(ValueError, match=r"'a' is already on the map.*replace=True"):
        m.add(pt("a", 5, 5))
    assert m.version == version
    assert m.get("a") == pt("a", 0, 0)


def test_remove_unknown_raises_key_error_naming_the_id() -> None:
    m = CabinMap()
    with pytest.raises(KeyError, match="no feature with id 'ghost'"):
        m.remove("ghost")


def test_add_refuses_non_features() -> None:
    with pytest.raises(TypeError, match="expected a Feature"):
        CabinMap().add(Point(0, 0))


def test_container_protocol_and_features_sorted_by_id() -> None:
    m = CabinMap()
    for fid in ["c", "a", "b"]:
        m.add(pt(fid, 0, 0))
    assert len(m) == 3 and "a" in m and "z" not in m
    assert ids(m.features()) == ["a", "b", "c"]
    assert m.remove("b").id == "b"
    assert m.get("b") is None
    assert ids(m.features()) == ["a", "c"]


def test_replace_moves_a_feature_out_of_the_built_index() -> None:
    m = CabinMap(overflow_limit=1)
    for i in range(10):
        m.add(pt(f"p{i}", 100 + i, 0))
    m.add(pt("mover", 0, 0))
    assert ids(m.window((0, 0), 1)) == ["mover"]  # builds the tree with mover in it
    m.add(pt("mover", 50, 50, kind="robot"), replace=True)
    assert m.window((0, 0), 1) == ()
    assert m.window((50, 50), 1) == (pt("mover", 50, 50, kind="robot"),)
    m.remove("mover")
    assert m.window((50, 50), 1) == ()
    m.add(pt("mover", 0, 0))
    assert ids(m.window((0, 0), 1)) == ["mover"]


def test_lock_is_the_given_rlock_or_a_new_one() -> None:
    lock = threading.RLock()
    assert CabinMap(lock=lock).lock is lock
    own = CabinMap().lock
    with own:  # re-entrant: a held lock does not block the map's own methods
        assert isinstance(own, type(threading.RLock()))


# -- window --------------------------------------------------------------------


def test_window_uses_exact_distance_not_bounding_boxes() -> None:
    m = CabinMap()
    # The diagonal's bounding box contains the centre, but the line is 5*sqrt(2) away.
    m.add(Feature("diag", LineString([(0, 10), (10, 0)]), "wall"))
    assert m.window((0, 0), 7.0) == ()
    assert ids(m.window((0, 0), 7.1)) == ["diag"]


def test_window_orders_nearest_first_then_by_id() -> None:
    m = CabinMap()
    m.add(pt("b", 1, 0))
    m.add(pt("a", 0, 1))
    m.add(pt("z", 0.5, 0))
    m.add(pt("far", 3, 0))
    m.add(Feature("inside", box(-1, -1, 1, 1), "zone"))
    assert ids(m.window((0, 0), 2)) == ["inside", "z", "a", "b"]
    assert ids(m.window((0, 0), 3)) == ["inside", "z", "a", "b", "far"]
    assert ids(m.window((0, 0), 0)) == ["inside"]


def test_window_accepts_points_and_poses_with_heading() -> None:
    m = CabinMap()
    m.add(pt("a", 1, 0))
    assert ids(m.window(Point(0, 0), 1)) == ["a"]
    assert ids(m.window((0, 0, math.pi / 2), 1)) == ["a"]
    assert ids(m.window(np.array([0.0, 0.0]), 1)) == ["a"]


@pytest.mark.parametrize(
    ("center", "radius", "error", "message"),
    [
        ((0, 0), -1, ValueError, "radius must be a non-negative number, got -1"),
        ((0, 0), math.nan, ValueError, "radius must be a non-negative"),
        ((0, 0), "far", TypeError, "radius must be a number, got 'far'"),
        ((0,), 1, TypeError, "center must be an"),
        (("x", 0), 1, TypeError, "center must be an"),
        ((math.inf, 0), 1, ValueError, "center must have finite coordinates"),
        (box(0, 0, 1, 1), 1, TypeError, "got a Polygon"),
        (Point(), 1, ValueError, "empty Point"),
    ],
)
def test_window_refuses_bad_arguments(
    center: Any, radius: float, error: type[Exception], message: str
) -> None:
    m = CabinMap()
    m.add(pt("a", 0, 0))
    with pytest.raises(error, match=message):
        m.window(center, radius)


def test_window_filters_by_kind_and_any_tag() -> None:
    m = CabinMap()
    m.add(pt("s1", 1, 0, kind="shelf", tags={"fragile"}))
    m.add(pt("s2", 2, 0, kind="shelf", tags={"heavy", "tall"}))
    m.add(pt("r1", 3, 0, kind="robot", tags={"heavy"}))
    m.add(pt("d1", 4, 0, kind="dock"))
    assert ids(m.window((0, 0), 10, kinds=["shelf", "dock"])) == ["s1", "s2", "d1"]
    assert ids(m.window((0, 0), 10, kinds="robot")) == ["r1"]
    assert ids(m.window((0, 0), 10, tags={"heavy", "fragile"})) == ["s1", "s2", "r1"]
    assert ids(m.window((0, 0), 10, kinds={"shelf"}, tags={"heavy"})) == ["s2"]
    assert m.window((0, 0), 10, kinds=[]) == ()
    assert m.window((0, 0), 10, tags=[]) == ()


def test_window_infinite_radius_returns_everything() -> None:
    m = CabinMap(overflow_limit=1)
    for i in range(5):
        m.add(pt(f"p{i}", 10.0**i, 0))
    assert ids(m.window((0, 0), math.inf)) == [f"p{i}" for i in range(5)]


# -- corridor ------------------------------------------------------------------


def test_corridor_orders_along_the_route() -> None:
    m = CabinMap()
    route = [(0, 0), (10, 0), (10, 10)]
    m.add(pt("leg2", 11, 5))
    m.add(pt("leg1-late", 8, 0.5))
    m.add(pt("leg1-early", 2, -0.5))
    m.add(pt("tie-b", 5, 1))
    m.add(pt("tie-a", 5, -1))
    m.add(pt("off", 5, 3))
    m.add(Feature("crossing", LineString([(3, -2), (3, 2)]), "wall"))
    expected = ["leg1-early", "crossing", "tie-a", "tie-b", "leg1-late", "leg2"]
    assert ids(m.corridor(route, 1)) == expected
    assert ids(m.corridor(LineString(route), 1)) == expected
    assert "off" in ids(m.corridor(route, 3))
    assert ids(m.corridor(route, 1, kinds={"wall"})) == ["crossing"]


def test_corridor_with_one_distinct_point_is_a_window() -> None:
    m = CabinMap()
    m.add(pt("b", 1, 0))
    m.add(pt("a", 0, 0.5))
    assert m.corridor([(0, 0)], 2) == m.window((0, 0), 2)
    assert m.corridor([(0, 0, 1.0), (0, 0, 2.0)], 2) == m.window((0, 0), 2)
    assert ids(m.corridor(Point(0, 0), 2)) == ["a", "b"]


def test_corridor_refuses_bad_arguments() -> None:
    m = CabinMap()
    with pytest.raises(ValueError, match="route has no points"):
        m.corridor([], 1)
    with pytest.raises(ValueError, match=r"width must be a non-negative number, got -0\.5"):
        m.corridor([(0, 0), (1, 0)], -0.5)
    with pytest.raises(TypeError, match="route point 1"):
        m.corridor([(0, 0), "x"], 1)
    with pytest.raises(TypeError, match="got a Polygon"):
        m.corridor(box(0, 0, 1, 1), 1)


# -- the lazy index ------------------------------------------------------------


def test_index_rebuilds_only_past_the_threshold_and_never_per_query() -> None:
    m = CabinMap(overflow_limit=4)
    for i in range(100):
        m.add(pt(f"p{i:03d}", i % 10, i // 10))
    m.window((0, 0), 1)
    assert m._rebuilds == 1
    for _ in range(5):
        m.window((5, 5), 2)
    assert m._rebuilds == 1, "queries without changes must not rebuild"
    # Obstacles moving every tick keep replacing their own overflow entry.
    for tick in range(50):
        for k in range(3):
            m.add(pt(f"obstacle{k}", tick * 0.1, 20 + k), replace=True)
        m.add(pt("p000", tick * 0.1, 9), replace=True)
        assert ids(m.window((tick * 0.1, 20), 0.01)) == ["obstacle0"]
    assert m._rebuilds == 1
    for i in range(1, 12):  # 5 + 11 pending changes: past max(4, isqrt(92)) = 9
        m.remove(f"p{i:03d}")
    assert ids(m.window((1, 0), 0.5)) == []
    assert m._rebuilds == 2
    assert not m._overflow and not m._masked


# -- properties: the index agrees with a brute-force exact scan ----------------

_IDS = [f"f{i:02d}" for i in range(16)]
_KINDS = ["shelf", "robot", "dock"]
_TAGS = ["a", "b", "c"]

_coord = st.integers(-24, 24).map(lambda v: v / 2)
_size = st.integers(1, 8).map(lambda v: v / 2)
_delta = st.tuples(st.integers(-6, 6), st.integers(-6, 6)).filter(lambda d: d != (0, 0))

_geometry = st.one_of(
    st.builds(Point, _coord, _coord),
    st.builds(lambda x, y, w, h: box(x, y, x + w, y + h), _coord, _coord, _size, _size),
    st.builds(
        lambda x, y, d: LineString([(x, y), (x + d[0] / 2, y + d[1] / 2)]), _coord, _coord, _delta
    ),
)
_feature = st.builds(
    Feature,
    st.sampled_from(_IDS),
    _geometry,
    st.sampled_from(_KINDS),
    st.frozensets(st.sampled_from(_TAGS)),
)
_kinds_filter = st.none() | st.frozensets(st.sampled_from(_KINDS), min_size=1)
_tags_filter = st.none() | st.frozensets(st.sampled_from(_TAGS), min_size=1)
_distance = st.integers(0, 30).map(lambda v: v / 2)
_center = st.tuples(_coord, _coord)
_route = st.lists(st.tuples(_coord, _coord), min_size=1, max_size=5)

_Op = tuple[Any, ...]


def _ops(query: st.SearchStrategy[_Op]) -> st.SearchStrategy[list[_Op]]:
    change = st.one_of(
        st.tuples(st.just("put"), _feature),
        st.tuples(st.just("remove"), st.sampled_from(_IDS)),
    )
    return st.lists(st.one_of(change, query), min_size=10, max_size=80)


def _keeps(f: Feature, kinds: frozenset[str] | None, tags: frozenset[str] | None) -> bool:
    return (kinds is None or f.kind in kinds) and (tags is None or bool(f.tags & tags))


def _brute_window(
    model: dict[str, Feature], center: Sequence[float], radius: float, kinds: Any, tags: Any
) -> list[str]:
    c = Point(center)
    rows = [(f.geometry.distance(c), f.id) for f in model.values() if _keeps(f, kinds, tags)]
    return [fid for d, fid in sorted(rows) if d <= radius]


def _brute_corridor(
    model: dict[str, Feature],
    points: list[tuple[float, float]],
    width: float,
    kinds: Any,
    tags: Any,
) -> list[str]:
    distinct = [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]
    if len(distinct) == 1:
        return _brute_window(model, distinct[0], width, kinds, tags)
    line = LineString(distinct)
    rows = [
        (line.project(nearest_points(f.geometry, line)[1]), f.id)
        for f in model.values()
        if _keeps(f, kinds, tags) and f.geometry.distance(line) <= width
    ]
    return [fid for _, fid in sorted(rows)]


def _run(
    ops: list[_Op], limit: int, check: Callable[[CabinMap, dict[str, Feature], _Op], None]
) -> None:
    m = CabinMap(overflow_limit=limit)
    model: dict[str, Feature] = {}
    for op in ops:
        if op[0] == "put":
            feature: Feature = op[1]
            m.add(feature, replace=feature.id in model)
            model[feature.id] = feature
        elif op[0] == "remove":
            assert m.discard(op[1]) == model.pop(op[1], None)
        else:
            check(m, model, op)
    assert ids(m.features()) == sorted(model)
    assert len(m) == len(model)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    ops=_ops(st.tuples(st.just("query"), _center, _distance, _kinds_filter, _tags_filter)),
    limit=st.integers(1, 8),
)
def test_window_matches_brute_force_after_any_changes(ops: list[_Op], limit: int) -> None:
    def check(m: CabinMap, model: dict[str, Feature], op: _Op) -> None:
        _, center, radius, kinds, tags = op
        assert ids(m.window(center, radius, kinds=kinds, tags=tags)) == _brute_window(
            model, center, radius, kinds, tags
        )

    _run(ops, limit, check)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(
    ops=_ops(
        st.tuples(st.just("query"), _center, _distance, _distance, _kinds_filter, _tags_filter)
    ),
    limit=st.integers(1, 8),
)
def test_a_wide_query_filtered_by_distance_is_every_smaller_window(
    ops: list[_Op], limit: int
) -> None:
    """What lets the assembler make one map query per centre for all its specs."""

    def check(m: CabinMap, model: dict[str, Feature], op: _Op) -> None:
        _, center, a, b, kinds, tags = op
        small, large = sorted((a, b))
        pairs = m.nearby(center, large, kinds=kinds, tags=tags)
        assert [d for _, d in pairs] == sorted(d for _, d in pairs)
        assert tuple(f for f, d in pairs if d <= small) == m.window(
            center, small, kinds=kinds, tags=tags
        )

    _run(ops, limit, check)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    ops=_ops(st.tuples(st.just("query"), _route, _distance, _kinds_filter, _tags_filter)),
    limit=st.integers(1, 8),
)
def test_corridor_matches_brute_force_after_any_changes(ops: list[_Op], limit: int) -> None:
    def check(m: CabinMap, model: dict[str, Feature], op: _Op) -> None:
        _, route, width, kinds, tags = op
        assert ids(m.corridor(route, width, kinds=kinds, tags=tags)) == _brute_corridor(
            model, route, width, kinds, tags
        )

    _run(ops, limit, check)


def test_vectorised_projection_matches_scalar_definition() -> None:
    # The corridor's order is defined by LineString.project of the nearest route point.
    line = LineString([(0, 0), (4, 0), (4, 4)])
    geoms = [Point(1, 1), box(5, 1, 6, 2), LineString([(2, -1), (2, 1)])]
    vectorised = shapely.line_locate_point(
        line, shapely.get_point(shapely.shortest_line(np.array(geoms, dtype=object), line), 1)
    )
    scalar = [line.project(nearest_points(g, line)[1]) for g in geoms]
    assert vectorised.tolist() == scalar


_near = st.integers(-8, 8).map(lambda v: v / 2)  # a small floor: most features near the route


@settings(max_examples=100, deadline=None)
@given(
    changes=st.lists(
        st.tuples(st.sampled_from(["put", "drop"]), st.integers(0, 11), _near, _near), max_size=40
    ),
    route=st.lists(st.tuples(_near, _near), min_size=2, max_size=4).filter(
        lambda r: len(set(r)) > 1
    ),
    limit=st.integers(1, 8),
)
def test_a_repeated_corridor_follows_every_change_on_the_map(
    changes: list[tuple[str, int, float, float]], route: list[tuple[float, float]], limit: int
) -> None:
    """The same route asked again after each change (the tree's part of it is kept until
    the next rebuild) answers as a brute-force scan does."""
    m = CabinMap(overflow_limit=limit)
    model: dict[str, Feature] = {}
    for op, n, x, y in changes:
        if op == "put":
            model[f"f{n}"] = pt(f"f{n}", x, y, kind="shelf" if n % 2 else "dock")
            m.add(model[f"f{n}"], replace=True)
        else:
            model.pop(f"f{n}", None)
            m.discard(f"f{n}")
        for kinds in (None, ["shelf"]):
            for asked in (route, tuple(route)):  # a list, and a tuple as a board holds it
                assert ids(m.corridor(asked, 1.5, kinds=kinds)) == _brute_corridor(
                    model, route, 1.5, kinds, None
                )


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("move"), st.floats(-0.6, 0.6), st.floats(-0.6, 0.6)),
            st.tuples(st.just("move"), st.just(0.0), st.just(0.0)),  # a robot standing still
            st.tuples(st.sampled_from(["put", "drop"]), st.integers(0, 15), _near, _near),
        ),
        max_size=50,
    ),
    radius=st.sampled_from([1.0, 2.0, 3.5]),
    limit=st.integers(1, 8),
    names=st.one_of(
        st.just([f"f{n}" for n in range(16)]),
        # any ids: NUL characters, other scripts, prefixes of each other, which the order
        # of equal distances must break as Python compares strings
        st.lists(st.text(min_size=1, max_size=3), min_size=16, max_size=16, unique=True),
        st.lists(
            st.text(alphabet="ab\x00é", min_size=1, max_size=3),
            min_size=16,
            max_size=16,
            unique=True,
        ),
    ),
)
def test_a_window_moving_in_small_steps_answers_as_a_scan_does(
    steps: list[tuple[Any, ...]], radius: float, limit: int, names: list[str]
) -> None:
    """A window that follows a robot is answered from a wider tree query made where the
    centre was (until it moves too far): never a feature short, never one too many, in the
    order of (distance, id). A centre that did not move gets the last answer only while the
    map did not change; the distances are the exact ones, and the keys a list of the
    caller's own."""
    m = CabinMap(overflow_limit=limit)
    model: dict[str, Feature] = {}
    for n in range(16):  # a built tree to start from, so that the moving window is used
        kind = "shelf" if n % 2 else "dock"
        model[names[n]] = pt(names[n], (n % 4) - 1.5, (n // 4) - 1.5, kind=kind)
        m.add(model[names[n]])
    m.window((0, 0), 1.0)
    x = y = 0.0
    for step in steps:
        if step[0] == "move":
            x, y = x + step[1], y + step[2]
        elif step[0] == "put":
            model[names[step[1]]] = pt(names[step[1]], step[2], step[3], kind="dock")
            m.add(model[names[step[1]]], replace=True)
        else:
            model.pop(names[step[1]], None)
            m.discard(names[step[1]])
        for kinds in (None, ("dock",)):
            features, distances, keys = m.nearest_keyed((x, y), radius, kinds=kinds)
            assert ids(features) == _brute_window(model, (x, y), radius, kinds, None)
            assert list(distances) == [f.geometry.distance(Point(x, y)) for f in features]
            assert keys == [f.key for f in features]
            keys.append("map:mine")  # the caller's list: the next answer does not see it
            assert m.nearest_keyed((x, y), radius, kinds=kinds)[2] == [f.key for f in features]
