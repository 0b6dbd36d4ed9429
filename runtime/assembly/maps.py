"""Map windows and corridors: the features each spec sees around a centre and along a route.

A spec's window holds the features within ``map_radius`` of its centre key's position,
nearest first; its corridor the features within ``corridor_width`` of the route its
``route_key`` holds, in order along it; both filtered by the spec's kinds and tags and,
when every active goal has an entry in its relevance table, by what those goals need.
A stale or unreadable centre or route gives nothing. All specs centred on one key share
one query, at the largest radius, which answers each smaller radius as a prefix. Last,
the caps: a window keeps at most ``window_cap`` features (``map_limit``, or ``map_share``
of working memory's capacity: the smaller), its nearest; a corridor at most
``corridor_limit``, the first along the route. So a wide window on a crowded floor cannot
take the whole of working memory from a cabin's events and state.

``MapWindows`` answers the from-scratch path; ``MapOffers`` the delta path, which also
keeps the keys beside the features and parses a route only when its reading changes.
``FirstOffered``, which both paths share, holds when a window first offered each map
item at its current revision: the item's ``stamp``.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import compress
from math import floor, isfinite
from typing import TYPE_CHECKING, Any, ClassVar

from runtime.assembly.specs import relevant
from runtime.position import read_route, read_xy

if TYPE_CHECKING:
    from collections.abc import Mapping

    from runtime.assembly.sources import Sources
    from runtime.assembly.specs import CompiledSpecs, MapFilters
    from runtime.board import Reading
    from runtime.cabin_map import Feature
    from runtime.spec import ContextSpec

Found = tuple[tuple["Feature", ...], tuple["Feature", ...]]
"""A spec's window and corridor."""
Offered = tuple[list[str], tuple["Feature", ...]]
"""A spec's window (or corridor) as the delta path offers it: keys and features, in order."""
Route = tuple[tuple[float, float], ...]
FirstTimes = dict[str, tuple[int, float]]
"""Per map candidate: its feature's revision and the freeze time a window first offered
that revision (its ``seq`` and ``stamp``)."""


def window_cap(spec: ContextSpec, capacity: int) -> int | None:
    """The most features ``spec``'s map window keeps with working memory of ``capacity``:
    the smaller of its ``map_limit`` and its ``map_share`` of the capacity (rounded down,
    at least 1); None when it sets neither."""
    cap = spec.map_limit
    if spec.map_share is not None:
        share = max(1, floor(spec.map_share * capacity + 1e-9))
        cap = share if cap is None else min(cap, share)
    return cap


class FirstOffered:
    """When a window first offered each map candidate of the last freeze, at its revision.

    A map item's ``seq`` is its feature's revision and its ``stamp`` the freeze time at
    which a window first offered that revision: kept while the revision is unchanged,
    else the time of the freeze that offers it (``at``). The times of a freeze replace
    the last freeze's (``keep``), so a feature that left every window is fresh when it
    comes back and the table holds only features the map still has. Both paths are
    handed the one ``FirstOffered`` of their assembler, so either takes over from the
    other with the times the other kept, and a checkpoint resumes with them.
    """

    __slots__ = ("_times",)
    _state_types: ClassVar[dict[str, Any]] = {"_times": dict[str, tuple[int, float]]}

    def __init__(self) -> None:
        self._times: FirstTimes = {}

    def times(self) -> Mapping[str, tuple[int, float]]:
        """Each map candidate of the last freeze: its revision and first-offered time."""
        return self._times

    def at(self, key: str, revision: int, now: float) -> tuple[int, float]:
        """The revision and first-offered time of map item ``key`` offered at ``revision``
        by the freeze at ``now``: the last freeze's while the revision is unchanged, else
        ``now``."""
        known = self._times.get(key)
        return known if known is not None and known[0] == revision else (revision, now)

    def keep(self, times: FirstTimes) -> None:
        """The times of the map candidates a freeze offered, in place of the last's."""
        self._times = times

    def renew(self, key: str, revision: int, now: float) -> tuple[int, float]:
        """The times of ``key`` offered at ``revision`` by the freeze at ``now``, kept in
        place while the other candidates stay as they were (the delta path refreshes one
        feature put again)."""
        known = self._times[key] = self.at(key, revision, now)
        return known


class MapWindows:
    """Each spec's window and corridor, queried afresh (the from-scratch path)."""

    _state_types: ClassVar[dict[str, Any]] = {}  # its parts check theirs; nothing plain

    def __init__(self, sources: Sources, compiled: CompiledSpecs) -> None:
        self.sources = sources
        self.compiled = compiled

    def of(
        self,
        spec: ContextSpec,
        now: float,
        goal_kinds: frozenset[str],
        cache: dict[tuple[Any, ...], Any],
        capacity: int,
    ) -> Found:
        """``spec``'s window and corridor at ``now``, capped for working memory of
        ``capacity``; ``cache`` holds this freeze's queries."""
        kinds, tags = self.compiled.map_filters[spec.name]
        nearby = self._window(spec, now, kinds, tags, cache)
        corridor: tuple[Feature, ...] = ()
        if spec.corridor_width > 0:
            reading = self.sources.board.read(spec.route_key)
            route = None if reading is None or reading.is_stale(now) else read_route(reading.value)
            if route is not None:
                query = ("c", route, spec.corridor_width, kinds, tags)
                found = cache.get(query)
                if found is None:
                    found = self.sources.cabin_map.corridor(
                        route, spec.corridor_width, kinds=kinds, tags=tags
                    )
                    cache[query] = found
                corridor = found
        keep = relevant(spec, goal_kinds)
        if keep is not None:
            nearby = tuple(f for f in nearby if f.kind in keep or not keep.isdisjoint(f.tags))
            corridor = tuple(f for f in corridor if f.kind in keep or not keep.isdisjoint(f.tags))
        cap = window_cap(spec, capacity)
        if cap is not None:
            nearby = nearby[:cap]
        if spec.corridor_limit is not None:
            corridor = corridor[: spec.corridor_limit]
        return nearby, corridor

    def _window(
        self,
        spec: ContextSpec,
        now: float,
        kinds: frozenset[str] | None,
        tags: frozenset[str] | None,
        cache: dict[tuple[Any, ...], Any],
    ) -> tuple[Feature, ...]:
        if spec.map_center is None or not spec.map_radius > 0:
            return ()
        reading = self.sources.board.read(spec.map_center)
        center = None if reading is None or reading.is_stale(now) else read_xy(reading.value)
        if center is None:
            return ()
        shared = self.compiled.centers[spec.map_center]
        query: tuple[Any, ...] = ("w", spec.map_center, center)
        pairs = cache.get(query)
        if pairs is None:
            pairs = self.sources.cabin_map.nearby(
                center, shared.radius, kinds=shared.kinds, tags=shared.tags
            )
            cache[query] = pairs
        radius = spec.map_radius
        if kinds is None and tags is None:
            return tuple(f for f, d in pairs if d <= radius)
        return tuple(
            f
            for f, d in pairs
            if d <= radius
            and (kinds is None or f.kind in kinds)
            and (tags is None or not tags.isdisjoint(f.tags))
        )


class MapOffers:
    """Each spec's window and corridor as keys and features (the delta path), with what it
    carries between freezes: each spec's filters beyond its centre's shared query, its
    relevance to the active goals, and its last route parsed."""

    def __init__(self, sources: Sources, compiled: CompiledSpecs) -> None:
        self.sources = sources
        self.compiled = compiled
        self.relevant: dict[str, frozenset[str] | None] = {}
        self.filters: dict[str, MapFilters] = {}
        self._routes: dict[str, tuple[Reading, Route | None]] = {}

    def expand(self, goal_kinds: frozenset[str]) -> None:
        """Take the board's key set again: the active goals' relevance, and each spec's
        kind and tag filters left to apply after its centre's shared query."""
        specs = self.compiled.by_name
        self.relevant = {name: relevant(spec, goal_kinds) for name, spec in specs.items()}
        for name, spec in specs.items():
            kinds, tags = self.compiled.map_filters[name]
            shared = self.compiled.centers.get(spec.map_center or "")
            if shared is not None:
                kinds = None if kinds == shared.kinds else kinds
                tags = None if tags == shared.tags else tags
            self.filters[name] = (kinds, tags)

    def route(self, name: str, reading: Reading | None, now: float) -> Route | None:
        """The route ``reading`` holds (None if absent, stale or not a route), parsed once."""
        if reading is None or reading.is_stale(now):
            return None
        known = self._routes.get(name)
        if known is not None and known[0] is reading:
            return known[1]
        route = read_route(reading.value)
        self._routes[name] = (reading, route)
        return route

    def offers(self, now: float, capacity: int) -> tuple[dict[str, Offered], dict[str, Offered]]:
        """Each spec's map window and corridor this tick, capped for working memory of
        ``capacity``: keys and features, in order."""
        near: dict[str, Offered] = {}
        along: dict[str, Offered] = {}
        shared_now: dict[str, tuple[tuple[Feature, ...], tuple[float, ...], list[str]]] = {}
        corridors: dict[tuple[Any, ...], Offered] = {}
        for name, spec in self.compiled.by_name.items():
            near_here = self._window(name, spec, now, shared_now)
            along_here: Offered = ([], ())
            if spec.corridor_width > 0:
                route = self.route(name, self.sources.board.read(spec.route_key), now)
                if route is not None:
                    query = (route, spec.corridor_width, spec.map_kinds, spec.map_tags)
                    along_here = corridors.get(query, along_here)
                    if query not in corridors:
                        kinds, tags = self.compiled.map_filters[name]
                        path = self.sources.cabin_map.corridor(
                            route, spec.corridor_width, kinds=kinds, tags=tags
                        )
                        along_here = corridors[query] = (["map:" + f.id for f in path], path)
            keep = self.relevant[name]
            if keep is not None:
                near_here = _keep_relevant(near_here, keep)
                along_here = _keep_relevant(along_here, keep)
            cap = window_cap(spec, capacity)
            if cap is not None:
                near_here = _first(near_here, cap)
            if spec.corridor_limit is not None:
                along_here = _first(along_here, spec.corridor_limit)
            near[name] = near_here
            along[name] = along_here
        return near, along

    def _window(
        self,
        name: str,
        spec: ContextSpec,
        now: float,
        shared_now: dict[str, tuple[tuple[Feature, ...], tuple[float, ...], list[str]]],
    ) -> Offered:
        """``spec``'s window: a prefix of its centre's shared query (made once per centre
        key and freeze, in ``shared_now``), filtered by what the shared query did not."""
        center_key = spec.map_center
        if center_key is None or not spec.map_radius > 0:
            return [], ()
        answer = shared_now.get(center_key)
        if answer is None:
            reading = self.sources.board.read(center_key)
            center = None if reading is None or reading.is_stale(now) else _xy(reading.value)
            if center is None:
                answer = ((), (), [])
            else:
                shared = self.compiled.centers[center_key]
                answer = self.sources.cabin_map.nearest_keyed(
                    center, shared.radius, kinds=shared.kinds, tags=shared.tags
                )
            shared_now[center_key] = answer
        found, gaps, found_keys = answer
        cut = bisect_right(gaps, spec.map_radius)
        features, keys = found[:cut], found_keys[:cut]
        kinds, tags = self.filters[name]
        if kinds is not None or tags is not None:
            pairs = [
                (f, k)
                for f, k in zip(features, keys, strict=True)
                if (kinds is None or f.kind in kinds)
                and (tags is None or not tags.isdisjoint(f.tags))
            ]
            features, keys = tuple(f for f, _ in pairs), [k for _, k in pairs]
        return keys, features


def _xy(value: Any) -> tuple[float, float] | None:
    """``read_xy``, with a shortcut for the usual pose: a tuple of finite floats."""
    if type(value) is tuple and len(value) >= 2:
        x, y = value[0], value[1]
        if type(x) is float and type(y) is float and isfinite(x) and isfinite(y):
            return (x, y)
    return read_xy(value)


def _keep_relevant(offered: Offered, keep: frozenset[str]) -> Offered:
    keys, features = offered
    if not features:
        return offered
    mask = [f.kind in keep or not keep.isdisjoint(f.tags) for f in features]
    return list(compress(keys, mask)), tuple(compress(features, mask))


def _first(offered: Offered, cap: int) -> Offered:
    """The first ``cap`` features of ``offered`` (the same lists when it holds no more)."""
    keys, features = offered
    if len(keys) <= cap:
        return offered
    return keys[:cap], features[:cap]
