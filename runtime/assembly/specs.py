"""The specs of one assembler, compiled once for the freezes to come.

Per spec: the provenance string (``via``) of each of its filters, its required patterns
as matchers (an exact key, or a glob's compiled match and the literal prefix every key
it matches starts with), its weigher, its map kind and tag filters as sets. Per map
centre key: the one query (the largest radius, the union of the kind and tag filters)
that answers every spec's window around it. And, given the kinds of the active goals,
the map kinds and tags a spec's relevance table keeps. Both paths read these; nothing
here changes after the assembler is built.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.errors import SettingError
from runtime.patterns import is_glob, literal_prefix

if TYPE_CHECKING:
    from runtime.spec import ContextSpec

Required = tuple[str, Callable[[str], Any] | None, str]
"""A required pattern, its glob's match (None for an exact key) and its literal prefix."""
MapFilters = tuple[frozenset[str] | None, frozenset[str] | None]
"""A spec's map kinds and tags (None: any)."""


@dataclass(frozen=True, slots=True)
class Vias:
    """The provenance strings of one spec's filters, made once rather than per item."""

    board: tuple[tuple[str, str], ...]
    window: str
    corridor: str
    log: str

    @classmethod
    def of(cls, spec: ContextSpec) -> Vias:
        return cls(
            tuple((p, f"board:{p}") for p in spec.board_keys),
            f"map:window({spec.map_center},{spec.map_radius:g})",
            f"map:corridor({spec.route_key},{spec.corridor_width:g})",
            f"log:window({spec.event_window:g}s)",
        )


@dataclass(frozen=True, slots=True)
class SharedWindow:
    """One map query around a centre key that answers every spec's window around it."""

    radius: float
    kinds: frozenset[str] | None
    tags: frozenset[str] | None


class CompiledSpecs:
    """The assembler's specs by name, and what each freeze reads of them."""

    def __init__(self, specs: Iterable[ContextSpec] | Mapping[str, ContextSpec]) -> None:
        spec_list = list(specs.values()) if isinstance(specs, Mapping) else list(specs)
        names = [s.name for s in spec_list]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SettingError(f"two specs share the cabin name(s) {', '.join(duplicates)}")
        self.by_name: dict[str, ContextSpec] = {s.name: s for s in spec_list}
        self.required: dict[str, list[Required]] = {
            name: [
                (
                    p,
                    re.compile(fnmatch.translate(p)).match if is_glob(p) else None,
                    literal_prefix(p),
                )
                for p in spec.required
            ]
            for name, spec in self.by_name.items()
        }
        self.centers = shared_windows(self.by_name.values())
        self.vias = {name: Vias.of(spec) for name, spec in self.by_name.items()}
        self._derive()

    def _derive(self) -> None:
        """The per-spec tables made again after unpickling (the weighers are bound
        methods of the specs)."""
        self.names = tuple(self.by_name)
        self.weighers = {name: spec.weigher for name, spec in self.by_name.items()}
        self.map_vias = {name: (v.window, v.corridor) for name, v in self.vias.items()}
        self.requires = {name: tuple(spec.required) for name, spec in self.by_name.items()}
        self.map_filters: dict[str, MapFilters] = {
            name: (
                frozenset(spec.map_kinds) if spec.map_kinds else None,
                frozenset(spec.map_tags) if spec.map_tags else None,
            )
            for name, spec in self.by_name.items()
        }

    _derived = ("*",)
    """All of it is compiled from the specs: a checkpoint holds none of it."""


def shared_windows(specs: Iterable[ContextSpec]) -> dict[str, SharedWindow]:
    """Per centre key: the largest radius and the union of the kind and tag filters."""
    by_center: dict[str, list[ContextSpec]] = {}
    for spec in specs:
        if spec.map_center is not None and spec.map_radius > 0:
            by_center.setdefault(spec.map_center, []).append(spec)
    out: dict[str, SharedWindow] = {}
    for center, group in by_center.items():
        kinds = (
            None
            if any(not s.map_kinds for s in group)
            else frozenset(k for s in group for k in s.map_kinds)
        )
        tags = (
            None
            if any(not s.map_tags for s in group)
            else frozenset(t for s in group for t in s.map_tags)
        )
        out[center] = SharedWindow(max(s.map_radius for s in group), kinds, tags)
    return out


def goal_kinds(goal_keys: Iterable[str]) -> frozenset[str]:
    """The kinds of the active goals (``goal:<kind>:...``), from the board's goal keys."""
    return frozenset(k.split(":", 2)[1] for k in goal_keys if k.count(":") >= 1)


def relevant(spec: ContextSpec, goal_kinds: frozenset[str]) -> frozenset[str] | None:
    """The map kinds/tags the active goals keep, or None when nothing is filtered.

    Filtering applies only when every active goal kind has a relevance entry:
    a goal the spec says nothing about might need anything.
    """
    if not spec.relevance or not goal_kinds or not goal_kinds <= spec.relevance.keys():
        return None
    keep: set[str] = set()
    for kind in goal_kinds:
        keep.update(spec.relevance[kind])
    return frozenset(keep)
