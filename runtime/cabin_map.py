"""The cabin map (航图): spatial features and the windows a tick reads of them.

A ``Feature`` is an immutable, validated shapely geometry with an id, a kind, tags
and frozen properties. ``CabinMap`` holds the live features and answers two
questions exactly (by shapely distance, never by bounding boxes): which features
lie within a radius of a point (``window``, nearest first) and which lie within a
width of a route (``corridor``, in order along the route).

Indexing is an ``STRtree`` over a *base* set plus a small *overflow* of features
added or replaced since the tree was built, which queries scan directly, and a
mask of base entries that were removed or replaced. The tree is rebuilt lazily,
at the next query, only once overflow plus mask outgrow ``max(overflow_limit,
isqrt(n))``; features that move every tick keep replacing their own overflow
entry, so they never force a rebuild. A map's state (for a checkpoint:
``get_state``) is its features and revisions; the index is built again by ``set_state``.

Each feature carries a *revision*: the map version its last add or replace made
(``revision``, ``revisions``). ``changed_since(version)`` lists the features put since a
version, newest first, in time proportional to their number: a reader that caught up
with the map at one version learns what to read again.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import shapely
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from runtime.errors import SettingError
from runtime.freeze import FreezeError, FrozenDict, freeze

__all__ = ["CabinMap", "Feature"]

CenterLike: TypeAlias = Point | Sequence[float] | npt.NDArray[np.floating[Any]]
RouteLike: TypeAlias = (
    LineString | Point | Sequence[Sequence[float]] | npt.NDArray[np.floating[Any]]
)

_EMPTY_PROPS: FrozenDict[str, Any] = FrozenDict()


@dataclass(frozen=True, slots=True)
class Feature:
    """One spatial feature: an id, a valid non-empty geometry, a kind, tags and props."""

    id: str
    geometry: BaseGeometry
    kind: str
    tags: frozenset[str] = frozenset()
    props: Mapping[str, Any] = _EMPTY_PROPS

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise TypeError(f"feature id must be a str, got {type(self.id).__name__} {self.id!r}")
        if not self.id:
            raise SettingError("feature id must be a non-empty string, got ''")
        if not isinstance(self.kind, str):
            raise TypeError(
                f"feature {self.id!r}: kind must be a str, got {type(self.kind).__name__} "
                f"{self.kind!r}"
            )
        if not self.kind:
            raise SettingError(f"feature {self.id!r}: kind must be a non-empty string, got ''")
        _check_geometry(self.id, self.geometry)
        object.__setattr__(self, "tags", _str_set(self.tags, what=f"feature {self.id!r} tags"))
        if not isinstance(self.props, Mapping):
            raise TypeError(
                f"feature {self.id!r}: props must be a mapping, got {type(self.props).__name__}"
            )
        try:
            props = freeze(self.props, key=f"{self.id}.props")
        except FreezeError as exc:
            raise FreezeError(f"feature {self.id!r}: {exc}") from exc
        object.__setattr__(self, "props", props)

    @property
    def key(self) -> str:
        """The feature's key in working memory and views: ``map:<id>``."""
        return f"map:{self.id}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Feature):
            return NotImplemented
        return (
            self.id == other.id
            and self.kind == other.kind
            and self.tags == other.tags
            and self.geometry == other.geometry
            and _same(self.props, other.props)
        )

    def __hash__(self) -> int:
        # props may hold read-only numpy arrays, which are not hashable.
        return hash((self.id, self.kind, self.geometry, self.tags))

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy or a pickle (a campaign's worker) makes the feature again through
        # __post_init__, which freezes its props (FrozenDicts are thawed first).
        args = (self.id, self.geometry, self.kind, self.tags, _thaw(self.props))
        return (Feature, args)


def _same(a: Any, b: Any) -> bool:
    """Equality of frozen values that also holds for numpy arrays inside them."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b)
        )
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except ValueError:  # e.g. a frozen dataclass holding arrays
        return False


def _thaw(value: Any) -> Any:
    if isinstance(value, FrozenDict):
        return {k: _thaw(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(_thaw(v) for v in value)
    return value


def _check_geometry(feature_id: str, geometry: object) -> None:
    if not isinstance(geometry, BaseGeometry):
        raise TypeError(
            f"feature {feature_id!r}: geometry must be a shapely geometry, "
            f"got {type(geometry).__name__} {geometry!r}"
        )
    if geometry.is_empty:
        raise SettingError(f"feature {feature_id!r}: geometry is empty ({geometry.wkt})")
    if not geometry.is_valid:
        raise SettingError(
            f"feature {feature_id!r}: geometry is invalid: {shapely.is_valid_reason(geometry)}"
        )


def _str_set(values: Iterable[str] | str, *, what: str) -> frozenset[str]:
    """A frozenset of strings; a bare string counts as one element, not as its characters."""
    if isinstance(values, str):
        return frozenset((values,))
    try:
        items = frozenset(values)
    except TypeError as exc:
        raise TypeError(f"{what} must be an iterable of str, got {values!r}") from exc
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{what} must all be str, got {bad[0]!r} ({type(bad[0]).__name__})")
    return items


def _finite_xy(value: Any, *, what: str) -> tuple[float, float]:
    try:
        x, y = float(value[0]), float(value[1])
    except (TypeError, IndexError, ValueError, KeyError) as exc:
        raise TypeError(f"{what} must be an (x, y) sequence of numbers, got {value!r}") from exc
    if not (math.isfinite(x) and math.isfinite(y)):
        raise SettingError(f"{what} must have finite coordinates, got ({x}, {y})")
    return x, y


def _center_xy(center: CenterLike) -> tuple[float, float]:
    if type(center) is tuple and len(center) >= 2:  # the usual pose: finite floats
        x, y = center[0], center[1]
        if type(x) is float and type(y) is float and math.isfinite(x) and math.isfinite(y):
            return x, y
    if isinstance(center, Point):
        if center.is_empty:
            raise SettingError("center is an empty Point")
        return _finite_xy((center.x, center.y), what="center")
    if isinstance(center, BaseGeometry):
        raise TypeError(f"center must be a Point or an (x, y) sequence, got a {center.geom_type}")
    return _finite_xy(center, what="center")


def _as_point(center: CenterLike) -> Point:
    return Point(_center_xy(center))


_POINTS = getattr(getattr(shapely, "lib", None), "points", None)
_ALLOW_NAN = np.intc(0)


def _point_at(x: float, y: float) -> Point:
    """A shapely point, made by shapely's point ufunc (``Point()`` and ``shapely.points``
    wrap it in argument checks and deprecation shims that cost more than the point)."""
    if _POINTS is None:  # pragma: no cover - a shapely without the compiled ufunc
        point: Point = shapely.points(np.array((x, y)))
        return point
    made: Point = _POINTS(np.array((x, y)), _ALLOW_NAN)
    return made


_LIB = getattr(shapely, "lib", None)
# shapely's ufuncs themselves: its functions of the same names wrap each call in argument
# handling that costs more than measuring a handful of geometries
_distances = getattr(_LIB, "distance", None) or shapely.distance
_shortest_line = getattr(_LIB, "shortest_line", None) or shapely.shortest_line
_get_point = getattr(_LIB, "get_point", None) or shapely.get_point
_line_locate_point = getattr(_LIB, "line_locate_point", None) or shapely.line_locate_point
_SECOND = np.intc(1)


def _as_route(route: RouteLike) -> LineString | Point:
    """The route as a LineString, or a Point when it has a single distinct vertex."""
    if isinstance(route, Point):
        return _as_point(route)
    if isinstance(route, LineString):
        raw: Iterable[Any] = route.coords
    elif isinstance(route, BaseGeometry):
        raise TypeError(
            f"route must be a LineString or a sequence of points, got a {route.geom_type}"
        )
    else:
        raw = route
    coords: list[tuple[float, float]] = []
    for i, vertex in enumerate(raw):
        xy = _finite_xy(vertex, what=f"route point {i}")
        if not coords or coords[-1] != xy:
            coords.append(xy)
    if not coords:
        raise SettingError("route has no points")
    if len(coords) == 1:
        return Point(coords[0])
    return LineString(coords)


def _check_distance(value: float, *, what: str) -> float:
    if type(value) is float and value >= 0.0:  # NaN fails the comparison
        return value
    try:
        distance = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be a number, got {value!r}") from exc
    if math.isnan(distance) or distance < 0:
        raise SettingError(f"{what} must be a non-negative number, got {value!r}")
    return distance


_CORRIDOR_CACHE = 16
"""Corridors (route, width, filter) and windows (radius, filter) whose tree part a map
keeps until its next rebuild."""
_WINDOW_MARGIN = 0.1
"""How much wider than asked a window's tree query is, as a share of the radius: the
centre may move this far before the tree is asked again."""


def _along(features: Sequence[Feature], line: LineString) -> list[float]:
    """Where each feature sits along ``line``: ``line.project`` of the line's point nearest
    to it."""
    if not features:
        return []
    geoms = np.array([f.geometry for f in features], dtype=object)
    on_route = _get_point(_shortest_line(geoms, line), _SECOND)
    along: list[float] = _line_locate_point(line, on_route).tolist()
    return along


def _slack(geometry: BaseGeometry, distance: float) -> float:
    """Float headroom so the index never drops a feature the exact distance keeps."""
    extent = float(np.max(np.abs(shapely.bounds(geometry))))
    return 1e-9 * (1.0 + distance + extent)


def _objects(values: Sequence[Any]) -> npt.NDArray[np.object_]:
    """``values`` in a one-dimensional object array (never split into their own items)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _id_ranks(features: Sequence[Feature]) -> npt.NDArray[np.intp]:
    """Each feature's place among ``features`` sorted by id, as Python orders strings (a
    numpy string array would not: it drops trailing NUL characters)."""
    ids = [f.id for f in features]
    ranks = np.empty(len(ids), dtype=np.intp)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return ranks


def _picked(
    features: Sequence[Feature],
    geoms: npt.NDArray[np.object_],
    point: Point,
    radius: float,
) -> list[tuple[float, str, int]]:
    """``(distance, id, index)`` of each of ``features`` within ``radius`` of ``point``
    (``geoms`` are their geometries), nearest first and ties by id."""
    if not features:
        return []
    gaps: list[float] = _distances(geoms, point).tolist()
    return sorted((d, features[i].id, i) for i, d in enumerate(gaps) if d <= radius)


def _reach_boxes(line: LineString, reach: float) -> npt.NDArray[np.object_]:
    """Boxes covering everything within ``reach`` of ``line``, cut short so each stays small.

    A long diagonal route's own bounding box would cover the whole map.
    """
    length = max(2.0 * reach, line.length / 1024.0)
    coords = shapely.get_coordinates(shapely.segmentize(line, length) if length > 0 else line)
    lo = np.minimum(coords[:-1], coords[1:]) - reach
    hi = np.maximum(coords[:-1], coords[1:]) + reach
    boxes: npt.NDArray[np.object_] = shapely.box(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1])
    return boxes


class _Filter:
    """The kind and tag filters of one query."""

    __slots__ = ("kinds", "tags")

    def __init__(self, kinds: Iterable[str] | str | None, tags: Iterable[str] | str | None) -> None:
        self.kinds = None if kinds is None else _str_set(kinds, what="kinds")
        self.tags = None if tags is None else _str_set(tags, what="tags")

    def keeps(self, feature: Feature) -> bool:
        if self.kinds is not None and feature.kind not in self.kinds:
            return False
        return self.tags is None or not self.tags.isdisjoint(feature.tags)


class _Window:
    """A moving window's candidates: the tree's features within the wider disc around
    (``x``, ``y``) that pass the filter (``positions`` in the tree; those still alive as of
    ``masks``), and apart from them the overflow's features that pass it (``features``, as
    of ``overflow_version``); their keys and geometries beside them. The two parts are
    measured apart, so that a feature moving every tick costs only its own distance while
    the centre stays put; an unchanged centre on an unchanged map gets the last answer."""

    __slots__ = (
        "answer",
        "answer_at",
        "base_at",
        "base_features",
        "base_geoms",
        "base_keys",
        "base_objects",
        "base_order",
        "base_ranks",
        "features",
        "geoms",
        "keys",
        "masks",
        "overflow_version",
        "positions",
        "x",
        "y",
    )

    def __init__(self, x: float, y: float, positions: npt.NDArray[np.intp]) -> None:
        self.x, self.y = x, y
        self.positions = positions
        self.base_features: list[Feature] = []
        self.base_keys: list[str] = []
        self.base_geoms: npt.NDArray[np.object_] = np.zeros(0, dtype=object)
        self.features: list[Feature] = []
        self.keys: list[str] = []
        self.geoms = self.base_geoms
        self.masks = -1
        self.overflow_version = -1
        # the base part measured from a centre (x, y, masks), and the last answer
        # (x, y, masks, overflow_version)
        self.base_at: tuple[float, float, int] | None = None
        self.base_objects: tuple[npt.NDArray[np.object_], npt.NDArray[np.object_]] = (
            _objects([]),
            _objects([]),
        )
        """``base_features`` and ``base_keys`` as object arrays, to be indexed at once."""
        self.base_ranks: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        # the base part within the radius, nearest first and ties by id: positions in
        # base_features and their distances
        self.base_order: tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]] = (
            self.base_ranks,
            np.zeros(0),
        )
        self.answer_at: tuple[float, float, int, int] | None = None
        self.answer: tuple[tuple[Feature, ...], tuple[float, ...], list[str]] = ((), (), [])


class _Corridor:
    """A corridor's tree part, sorted along the route (``rows``: along, id, tree position,
    feature), those rows still alive as of ``masks``, and the answer as of the overflow's
    ``overflow_version``."""

    __slots__ = ("alive", "found", "masks", "overflow_version", "rows")

    def __init__(self, rows: list[tuple[float, str, int, Feature]]) -> None:
        self.rows = rows
        self.alive: list[tuple[float, str, Feature]] = []
        self.found: tuple[Feature, ...] = ()
        self.masks = -1
        self.overflow_version = -1


class CabinMap:
    """The live spatial features, indexed for exact window and corridor queries.

    Every public method takes ``lock`` (a re-entrant lock, shared with the rest of
    the runtime when one is given). ``overflow_limit`` is the smallest number of
    pending changes that triggers an index rebuild; the limit grows as ``isqrt(n)``.
    """

    def __init__(self, *, lock: threading.RLock | None = None, overflow_limit: int = 64) -> None:
        if overflow_limit < 1:
            raise SettingError(f"overflow_limit must be at least 1, got {overflow_limit!r}")
        self.lock: threading.RLock = lock if lock is not None else threading.RLock()
        self._overflow_limit = overflow_limit
        self._features: dict[str, Feature] = {}
        self._version = 0
        # feature id -> the version its last put made, oldest first (a put moves it last)
        self._revisions: dict[str, int] = {}
        # The index: a tree over base features, plus overflow and mask (see module doc).
        self._tree: shapely.STRtree | None = None
        self._base: list[Feature] = []
        self._base_pos: dict[str, int] = {}
        self._base_alive: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._base_geoms: npt.NDArray[np.object_] = np.zeros(0, dtype=object)
        self._masked: set[str] = set()
        self._overflow: dict[str, Feature] = {}
        self._overflow_arrays: tuple[list[Feature], npt.NDArray[np.object_]] | None = None
        self._corridors: dict[tuple[Any, ...], _Corridor] = {}
        self._windows: dict[tuple[Any, ...], _Window] = {}
        self._filters: dict[tuple[Any, Any], _Filter] = {}
        self._overflow_version = 0  # changes whenever the overflow does
        self._masks = 0  # changes whenever a tree entry is masked
        self._lines: dict[Any, LineString | Point] = {}
        self._rebuilds = 0

    def get_state(self) -> dict[str, Any]:
        """The map's state as plain data (for a checkpoint): the features, the version,
        each feature's revision and the settings; not the index, which is built again."""
        with self.lock:
            return {
                "features": list(self._features.values()),
                "version": self._version,
                "revisions": [[k, v] for k, v in self._revisions.items()],
                "overflow_limit": self._overflow_limit,
                "rebuilds": self._rebuilds,
            }

    def set_state(self, data: Any) -> None:
        """Take back what ``get_state`` gave, checked (features made again through
        ``Feature``, finite geometries, revisions of the features held); a freshly built
        index (queries answer the same)."""
        from runtime.snapshot import StateError, keys_of, list_of, record_of, whole

        names = ("features", "version", "revisions", "overflow_limit", "rebuilds")
        data = keys_of(data, names, "map")
        version = whole(data["version"], "map.version")
        features: dict[str, Feature] = {}
        for i, item in enumerate(list_of(data["features"], "map.features")):
            where = f"map.features[{i}]"
            got = record_of(item, Feature, where)
            if not isinstance(got.geometry, BaseGeometry):
                raise StateError(f"{where}.geometry: not a geometry")
            if not np.isfinite(shapely.get_coordinates(got.geometry)).all():
                raise StateError(f"{where}.geometry: coordinates that are not finite")
            feature = Feature(got.id, got.geometry, got.kind, got.tags, _thaw(got.props))
            if feature.id in features:
                raise StateError(f"{where}: a second feature {feature.id!r}")
            features[feature.id] = feature
        revisions: dict[str, int] = {}
        for i, pair in enumerate(list_of(data["revisions"], "map.revisions")):
            if not (type(pair) is list and len(pair) == 2 and pair[0] in features):
                raise StateError(f"map.revisions[{i}]: not [feature id, revision]")
            revisions[pair[0]] = whole(pair[1], f"map.revisions[{i}]", low=1, high=version)
        if revisions.keys() != features.keys():
            raise StateError("map.revisions: not one revision per feature")
        with self.lock:
            self._overflow_limit = whole(data["overflow_limit"], "map.overflow_limit", low=1)
            self._features = features
            self._version = version
            self._revisions = revisions
            self._rebuilds = whole(data["rebuilds"], "map.rebuilds")
            self._tree = None
            self._base, self._base_pos = [], {}
            self._masked, self._overflow = set(), {}
            self._overflow_arrays = None
            self._corridors, self._windows, self._filters, self._lines = {}, {}, {}, {}
            self._overflow_version = 0
            self._masks = 0
            self._build_index()

    # -- changes ---------------------------------------------------------------

    def add(self, feature: Feature, *, replace: bool = False) -> None:
        """Add ``feature``; an existing id is an error unless ``replace`` is true."""
        if not isinstance(feature, Feature):
            raise TypeError(f"expected a Feature, got {type(feature).__name__} {feature!r}")
        with self.lock:
            if feature.id in self._features and not replace:
                raise SettingError(
                    f"feature id {feature.id!r} is already on the map "
                    "(pass replace=True to replace it)"
                )
            self._mask(feature.id)
            self._features[feature.id] = feature
            self._overflow[feature.id] = feature
            self._overflow_arrays = None
            self._overflow_version += 1
            self._version += 1
            revisions = self._revisions
            revisions.pop(feature.id, None)
            revisions[feature.id] = self._version

    def remove(self, feature_id: str) -> Feature:
        """Remove and return the feature ``feature_id``; KeyError if it is not on the map."""
        with self.lock:
            removed = self.discard(feature_id)
            if removed is None:
                raise KeyError(f"no feature with id {feature_id!r} on the map")
            return removed

    def discard(self, feature_id: str) -> Feature | None:
        """Remove and return the feature ``feature_id``, or None if it is not on the map."""
        with self.lock:
            removed = self._features.pop(feature_id, None)
            if removed is None:
                return None
            self._mask(feature_id)
            if self._overflow.pop(feature_id, None) is not None:
                self._overflow_arrays = None
                self._overflow_version += 1
            self._version += 1
            del self._revisions[feature_id]
            return removed

    def _mask(self, feature_id: str) -> None:
        pos = self._base_pos.get(feature_id)
        if pos is not None and self._base_alive[pos]:
            self._base_alive[pos] = False
            self._masked.add(feature_id)
            self._masks += 1

    # -- reading ---------------------------------------------------------------

    @property
    def version(self) -> int:
        """A counter that increments with every add, replace and remove."""
        with self.lock:
            return self._version

    def get(self, feature_id: str) -> Feature | None:
        with self.lock:
            return self._features.get(feature_id)

    def revision(self, feature_id: str) -> int | None:
        """The map version at which ``feature_id`` was last added or replaced (None when it
        is not on the map): it changes only when that feature does."""
        with self.lock:
            return self._revisions.get(feature_id)

    def revisions(self) -> Mapping[str, int]:
        """Every feature's ``revision``, by id: a live, read-only view (read it under
        ``lock`` while the map may change)."""
        return MappingProxyType(self._revisions)

    def changed_since(self, version: int) -> list[str]:
        """The ids of the features added or replaced after map version ``version`` and still
        on the map, newest first; the time it takes grows with their number only."""
        with self.lock:
            out: list[str] = []
            if version >= self._version:
                return out
            for feature_id, revision in reversed(self._revisions.items()):
                if revision <= version:
                    break
                out.append(feature_id)
            return out

    def __len__(self) -> int:
        with self.lock:
            return len(self._features)

    def __contains__(self, feature_id: object) -> bool:
        with self.lock:
            return feature_id in self._features

    def features(self) -> tuple[Feature, ...]:
        """All features, sorted by id."""
        with self.lock:
            return tuple(self._features[k] for k in sorted(self._features))

    def window(
        self,
        center: CenterLike,
        radius: float,
        *,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
    ) -> tuple[Feature, ...]:
        """Features within ``radius`` of ``center`` (exact distance), nearest first, then id.

        ``center`` is a Point or an (x, y, ...) sequence; elements after y are ignored.
        ``kinds`` keeps only those kinds; ``tags`` keeps features with any of those tags.
        """
        return self.nearest(center, radius, kinds=kinds, tags=tags)[0]

    def nearby(
        self,
        center: CenterLike,
        radius: float,
        *,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
    ) -> tuple[tuple[Feature, float], ...]:
        """``window``'s features paired with their exact distances, in the same order.

        One query at the largest radius, filtered by distance, answers every smaller
        window around the same centre in the same order.
        """
        features, distances = self.nearest(center, radius, kinds=kinds, tags=tags)
        return tuple(zip(features, distances, strict=True))

    def nearest(
        self,
        center: CenterLike,
        radius: float,
        *,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
    ) -> tuple[tuple[Feature, ...], tuple[float, ...]]:
        """``window``'s features and, beside them, their exact distances: nearest first.

        The distances are sorted, so a smaller radius around the same centre is a prefix
        (``bisect_right(distances, r)`` features long).
        """
        features, distances, _ = self.nearest_keyed(center, radius, kinds=kinds, tags=tags)
        return features, distances

    def nearest_keyed(
        self,
        center: CenterLike,
        radius: float,
        *,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
    ) -> tuple[tuple[Feature, ...], tuple[float, ...], list[str]]:
        """``nearest``, and each feature's ``key`` beside it (a fresh list)."""
        x, y = _center_xy(center)
        radius = _check_distance(radius, what="radius")
        wanted = self._filter(kinds, tags)
        with self.lock:
            if math.isfinite(radius) and self._tree is not None:
                self._refresh_index()
                return self._moving_window(x, y, radius, wanted)
            found, distances = self._within(_point_at(x, y), radius, wanted)
        pairs = sorted(zip(distances, [f.id for f in found], found, strict=True))
        return (
            tuple(f for _, _, f in pairs),
            tuple(d for d, _, _ in pairs),
            ["map:" + f.id for _, _, f in pairs],
        )

    def _filter(
        self, kinds: Iterable[str] | str | None, tags: Iterable[str] | str | None
    ) -> _Filter:
        """The ``_Filter`` of ``kinds`` and ``tags``, made once for hashable ones."""
        try:
            known = self._filters.get((kinds, tags))
        except TypeError:  # a list: not kept
            return _Filter(kinds, tags)
        if known is None:
            known = _Filter(kinds, tags)
            if len(self._filters) >= _CORRIDOR_CACHE:
                self._filters.clear()
            self._filters[(kinds, tags)] = known
        return known

    def _moving_window(
        self, x: float, y: float, radius: float, wanted: _Filter
    ) -> tuple[tuple[Feature, ...], tuple[float, ...], list[str]]:
        """``_within`` for a window that moves a little from one call to the next (a
        robot's pose): the tree is asked once for a wider disc, and while the centre stays
        within the margin, every feature within ``radius`` of it is among those and the
        overflow's. One distance call per part measures them."""
        query = (radius, wanted.kinds, wanted.tags)
        margin = _WINDOW_MARGIN * radius
        known = self._windows.get(query)
        if known is None or math.hypot(x - known.x, y - known.y) > 0.999 * margin:
            wider, _, _ = self._base_within(_point_at(x, y), radius + margin, wanted)
            if len(self._windows) >= _CORRIDOR_CACHE:
                self._windows.clear()
            known = self._windows[query] = _Window(x, y, np.asarray(wider, dtype=np.intp))
        if known.masks != self._masks:  # base features removed or replaced since
            alive = self._base_alive
            base = self._base
            positions = [n for n in known.positions.tolist() if alive[n]]
            known.base_features = [base[n] for n in positions]
            known.base_keys = ["map:" + f.id for f in known.base_features]
            known.base_geoms = self._base_geoms[positions]
            known.base_objects = (_objects(known.base_features), _objects(known.base_keys))
            known.base_ranks = _id_ranks(known.base_features)
            known.masks = self._masks
            known.overflow_version = -1
        if known.overflow_version != self._overflow_version:
            extra = [f for f in self._overflow.values() if wanted.keeps(f)]
            known.features = extra
            known.keys = ["map:" + f.id for f in extra]
            known.geoms = np.array([f.geometry for f in extra], dtype=object)
            known.overflow_version = self._overflow_version
        at = (x, y, known.masks, known.overflow_version)
        if known.answer_at != at:  # else the same centre, and nothing on the map changed
            self._measure_window(known, x, y, radius, at)
        features, distances, chosen = known.answer
        return features, distances, list(chosen)

    def _measure_window(
        self, known: _Window, x: float, y: float, radius: float, at: tuple[float, float, int, int]
    ) -> None:
        """``known.answer`` around (``x``, ``y``) as of ``at``."""
        point = _point_at(x, y)
        # each part measured only when the centre moved or the part changed; the base
        # part ordered by numpy, nearest first and ties by id
        if known.base_at != at[:3]:
            gaps = _distances(known.base_geoms, point)
            order = np.lexsort((known.base_ranks, gaps))
            gaps = gaps[order]
            inside = int(np.searchsorted(gaps, radius, side="right"))
            known.base_order = (order[:inside], gaps[:inside])
            known.base_at = at[:3]
        order, gaps = known.base_order
        objects, names = known.base_objects
        found: list[Feature] = objects[order].tolist()
        distances: list[float] = gaps.tolist()
        chosen: list[str] = names[order].tolist()
        # the overflow's few (people walking), merged in by (distance, id)
        for d, fid, i in _picked(known.features, known.geoms, point, radius):
            n = bisect.bisect_left(distances, d)
            while n < len(distances) and distances[n] == d and found[n].id < fid:
                n += 1
            found.insert(n, known.features[i])
            distances.insert(n, d)
            chosen.insert(n, known.keys[i])
        known.answer = (tuple(found), tuple(distances), chosen)
        known.answer_at = at

    def corridor(
        self,
        route: RouteLike,
        width: float,
        *,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
    ) -> tuple[Feature, ...]:
        """Features within ``width`` of the ``route`` polyline, in order along the route.

        A feature's place on the route is ``route.project`` of the route point nearest
        to it; ties go by id. A route with one distinct point is a ``window``.
        """
        line, shape = self._route_line(route)
        width = _check_distance(width, what="width")
        if isinstance(line, Point):
            return self.window(line, width, kinds=kinds, tags=tags)
        wanted = self._filter(kinds, tags)
        with self.lock:
            self._refresh_index()
            # The tree's part of a corridor lasts as long as the tree: a route that did not
            # change costs only its overflow part and a look at which base features left.
            query = (shape, width, wanted.kinds, wanted.tags)
            known = self._corridors.get(query)
            if known is None:
                positions, features, _ = self._base_within(line, width, wanted)
                rows = sorted(
                    zip(
                        _along(features, line),
                        [f.id for f in features],
                        positions,
                        features,
                        strict=True,
                    )
                )
                if len(self._corridors) >= _CORRIDOR_CACHE:
                    self._corridors.clear()
                known = self._corridors[query] = _Corridor(rows)
            if known.masks != self._masks:
                alive = self._base_alive
                known.alive = [(a, i, f) for a, i, n, f in known.rows if alive[n]]
                known.masks = self._masks
                known.overflow_version = -1
            if known.overflow_version != self._overflow_version:
                extra, _ = self._overflow_within(line, width, wanted)
                if extra:
                    found = list(known.alive)
                    for row in zip(_along(extra, line), [f.id for f in extra], extra, strict=True):
                        bisect.insort(found, row, key=lambda r: (r[0], r[1]))
                    known.found = tuple(f for _, _, f in found)
                else:
                    known.found = tuple(f for _, _, f in known.alive)
                known.overflow_version = self._overflow_version
            return known.found

    def _route_line(self, route: RouteLike) -> tuple[LineString | Point, Any]:
        """The route as geometry, and a hashable key of its shape. A route given as a tuple
        of points (as a board holds one) is parsed once while it is asked about."""
        try:
            known = self._lines.get(route)
        except TypeError:  # unhashable: a list, or a tuple of lists
            known = None
            hashable = False
        else:
            hashable = isinstance(route, tuple)
        if known is not None:
            return known, route
        line = _as_route(route)
        if not hashable:
            return line, shapely.to_wkb(line)
        if len(self._lines) >= _CORRIDOR_CACHE:
            self._lines.clear()
        self._lines[route] = line
        return line, route

    # -- index -----------------------------------------------------------------

    def _within(
        self, geometry: BaseGeometry, distance: float, wanted: _Filter
    ) -> tuple[list[Feature], list[float]]:
        """Features passing ``wanted`` within ``distance`` of ``geometry``, with distances."""
        self._refresh_index()
        positions, found, distances = self._base_within(geometry, distance, wanted)
        alive = self._base_alive
        keep = [j for j, n in enumerate(positions) if alive[n]]
        found = [found[j] for j in keep]
        distances = [distances[j] for j in keep]
        extra, extra_distances = self._overflow_within(geometry, distance, wanted)
        return found + extra, distances + extra_distances

    def _base_within(
        self, geometry: BaseGeometry, distance: float, wanted: _Filter
    ) -> tuple[list[int], list[Feature], list[float]]:
        """The tree's features (removed ones too) passing ``wanted`` within ``distance``:
        their positions in the tree, the features and their distances."""
        if self._tree is None:
            return [], [], []
        reach = distance + _slack(geometry, distance)
        if isinstance(geometry, LineString) and math.isfinite(distance):
            hits = np.unique(self._tree.query(_reach_boxes(geometry, reach))[1])
        else:
            hits = self._tree.query(geometry, predicate="dwithin", distance=reach)
        gaps = shapely.distance(self._base_geoms[hits], geometry)
        positions: list[int] = []
        found: list[Feature] = []
        distances: list[float] = []
        hit_list = hits.tolist()
        for j in np.flatnonzero(gaps <= distance).tolist():
            feature = self._base[hit_list[j]]
            if wanted.keeps(feature):
                positions.append(hit_list[j])
                found.append(feature)
                distances.append(float(gaps[j]))
        return positions, found, distances

    def _overflow_within(
        self, geometry: BaseGeometry, distance: float, wanted: _Filter
    ) -> tuple[list[Feature], list[float]]:
        """The overflow's features passing ``wanted`` within ``distance``, with distances."""
        if not self._overflow:
            return [], []
        if self._overflow_arrays is None:
            features = list(self._overflow.values())
            geoms = np.array([f.geometry for f in features], dtype=object)
            self._overflow_arrays = (features, geoms)
        features, geoms = self._overflow_arrays
        gaps = _distances(geoms, geometry)
        found: list[Feature] = []
        distances: list[float] = []
        for j in np.flatnonzero(gaps <= distance).tolist():
            if wanted.keeps(features[j]):
                found.append(features[j])
                distances.append(float(gaps[j]))
        return found, distances

    def _refresh_index(self) -> None:
        pending = len(self._overflow) + len(self._masked)
        # A map that was never indexed is indexed at its first query, however small: a
        # warehouse of a few dozen features never outgrows the limit, and unindexed every
        # query measured all of them (and a corridor placed them along the route) again,
        # because a person walking changes the overflow every tick. Indexed, what stays
        # put is measured through the tree's kept windows and corridors, and only what
        # moves is scanned. The answers are the same either way.
        never = self._tree is None and bool(self._features)
        if not never and pending <= max(self._overflow_limit, math.isqrt(len(self._features))):
            return
        self._build_index()
        self._rebuilds += 1

    def _build_index(self) -> None:
        """A tree over every live feature, with empty overflow and mask."""
        self._base = list(self._features.values())
        self._base_pos = {f.id: i for i, f in enumerate(self._base)}
        self._base_alive = np.ones(len(self._base), dtype=bool)
        self._base_geoms = np.array([f.geometry for f in self._base], dtype=object)
        self._tree = shapely.STRtree(self._base_geoms) if self._base else None
        self._masked = set()
        self._overflow = {}
        self._overflow_arrays = None
        self._overflow_version += 1
        self._corridors = {}
        self._windows = {}
        self._lines = {}
