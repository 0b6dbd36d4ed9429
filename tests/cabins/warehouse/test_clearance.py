"""``Solids.gaps`` prunes by bounding boxes and must still give every pair's minimum."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from hypothesis import example, given, settings
from hypothesis import strategies as st
from shapely.geometry import Polygon, box

from cabins.warehouse.clearance import Solids

coordinate = st.floats(-20, 20, allow_nan=False)
size = st.floats(0.01, 5, allow_nan=False)


@st.composite
def shapes(draw: st.DrawFn) -> shapely.Geometry:
    x, y, w, h = draw(coordinate), draw(coordinate), draw(size), draw(size)
    if draw(st.booleans()):
        return box(x, y, x + w, y + h)
    lean = draw(st.floats(-1, 1))
    return Polygon([(x, y), (x + w, y + lean), (x + w / 2, y + h)])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(shapes(), min_size=1, max_size=8),
    st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=30),
)
def test_gaps_equal_the_minimum_over_every_solid_exactly(
    solids: list[shapely.Geometry], points: list[tuple[float, float]]
) -> None:
    found = Solids(np.array(solids, dtype=object), tuple(str(i) for i in range(len(solids))))
    grid = shapely.points(np.asarray(points, dtype=float))
    every_pair = shapely.distance(grid[:, None], found.shapes[None, :]).min(axis=1)
    assert np.array_equal(found.gaps(points), every_pair)


def test_gaps_without_solids_are_infinite() -> None:
    none = Solids.of(())
    assert np.all(np.isinf(none.gaps([(0.0, 0.0), (1.0, 2.0)])))


probes = st.one_of(
    st.tuples(coordinate, coordinate).map(lambda p: shapely.points(p)),
    st.lists(st.tuples(coordinate, coordinate), min_size=2, max_size=5).map(shapely.linestrings),
)


# GEOS's distance to a segment some 1e-300 long (drawn coordinates can be that close) raises
# floating-point flags that numpy reports; the values are still the array call's, exactly.
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:divide by zero encountered in distance:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered in distance:RuntimeWarning")
@settings(max_examples=300, deadline=None)
@given(st.lists(shapes(), min_size=1, max_size=8), probes)
@example([box(2, 2, 3, 3)], shapely.linestrings([(0.0, 0.0), (1e-300, 0.0)]))
def test_gap_and_nearest_equal_the_array_call_exactly(
    solids: list[shapely.Geometry], probe: shapely.Geometry
) -> None:
    found = Solids(np.array(solids, dtype=object), tuple(str(i) for i in range(len(solids))))
    distances = shapely.distance(found.shapes, probe)
    assert found.gap(probe) == float(distances.min())
    i = int(np.argmin(distances))
    assert found.nearest(probe) == (str(i), float(distances[i]))


def test_an_empty_solid_makes_the_gap_nan_as_the_array_minimum_does() -> None:
    found = Solids(np.array([box(0, 0, 1, 1), Polygon()], dtype=object), ("a", "b"))
    probe = shapely.points((3.0, 0.5))
    assert np.isnan(found.gap(probe))
    nearest = found.nearest(probe)
    assert nearest is not None and nearest[0] == "b" and np.isnan(nearest[1])  # argmin's NaN


def test_solids_are_given_back_while_the_same_geometries_are_in_view() -> None:
    shelf = box(0, 0, 1, 1)
    first = Solids.of((), [("shelf", shelf)])
    assert Solids.of((), [("shelf", shelf)], last=first) is first
    assert Solids.of((), [("shelf", box(0, 0, 1, 1))], last=first) is not first
    assert Solids.of((), [("other", shelf)], last=first) is not first


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(shapes(), min_size=1, max_size=8),
    st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=30),
    st.floats(0.0, 10.0),
)
def test_gaps_within_are_exact_below_the_limit_and_at_least_it_above(
    solids: list[shapely.Geometry], points: list[tuple[float, float]], limit: float
) -> None:
    found = Solids(np.array(solids, dtype=object), tuple(str(i) for i in range(len(solids))))
    exact = found.gaps(points)
    within = found.gaps_within(points, limit)
    near = exact < limit
    assert np.array_equal(within[near], exact[near])
    assert np.all(within[~near] >= limit)
