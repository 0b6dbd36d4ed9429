"""``cabins.warehouse.shapes`` makes exactly the geometries shapely's own constructors make."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, Point

from cabins.warehouse.shapes import locate, point, points, polygon, polyline

coordinate = st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0.0, -0.0, 1e-300])
xy = st.tuples(coordinate, coordinate)


@settings(max_examples=200, deadline=None)
@given(xy)
def test_a_point_is_the_one_point_makes(where: tuple[float, float]) -> None:
    made = point(*where)
    assert isinstance(made, Point)
    assert made.wkb == Point(*where).wkb


@settings(max_examples=200, deadline=None)
@given(st.lists(xy, min_size=2, max_size=20))
def test_a_polyline_is_the_one_linestring_makes(coords: list[tuple[float, float]]) -> None:
    made = polyline(coords)
    assert isinstance(made, LineString)
    assert made.wkb == LineString(coords).wkb


@settings(max_examples=100, deadline=None)
@given(st.lists(xy, min_size=1, max_size=20))
def test_points_are_the_ones_shapely_points_makes(coords: list[tuple[float, float]]) -> None:
    array = np.asarray(coords, dtype=float)
    assert [g.wkb for g in points(array)] == [g.wkb for g in shapely.points(array)]


@settings(max_examples=100, deadline=None)
@given(xy, st.floats(0.01, 10.0))
def test_a_polygon_is_the_one_shapely_polygons_makes(
    centre: tuple[float, float], radius: float
) -> None:
    shell = shapely.get_coordinates(Point(0.0, 0.0).buffer(radius)) + centre
    assert polygon(shell).wkb == shapely.polygons(shell).wkb


def _outcome(measure: Callable[[], float]) -> object:
    try:
        value = measure()
    except shapely.errors.GEOSException:  # a degenerate line: GEOS refuses both alike
        return "GEOSException"
    return "NaN" if value != value else value


@settings(max_examples=200, deadline=None)
@given(st.lists(xy, min_size=2, max_size=10), xy)
def test_locate_is_line_locate_point(
    coords: list[tuple[float, float]], where: tuple[float, float]
) -> None:
    line, probe = LineString(coords), Point(*where)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero-length line: shapely's own NaN
        reference = _outcome(lambda: float(shapely.line_locate_point(line, probe)))
    assert _outcome(lambda: locate(line, probe)) == reference
