"""Named families of generated worlds: what ``gen:7`` or ``hard:0-29`` stands for.

A family is a generator with its default settings: ``gen`` (``sim.world.generate``:
small regular floors, the distribution old figures were measured on) and ``hard``
(``sim.world.hard``: the layouts, batteries and crowds that broke liveness in issue 29).
``FAMILY:N`` names the world its generator makes for seed N, ``FAMILY:A-B`` the worlds
of seeds A to B (at most 10,000). Campaigns take such names for ``--scenario`` and so does
``sim run`` (one world); the worlds are drawn, never read from files.

The grammar of the names is ``sim.world.names``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from runtime.errors import SettingError
from sim.world.generate import generate
from sim.world.hard import generate_hard
from sim.world.names import parse_name
from sim.world.scenario import Scenario, load_scenario

__all__ = ["FAMILIES", "Family", "family_worlds", "load_world", "parse_family"]


@dataclass(frozen=True, slots=True)
class Family:
    """A named family of generated worlds: its generator at its default settings."""

    name: str
    draw: Callable[[int], Scenario]
    about: str

    def world_name(self, seed: int) -> str:
        return f"{self.name}:{seed}"


FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        "gen": Family("gen", generate, "small regular warehouses (16-44 x 12-30 m)"),
        "hard": Family(
            "hard",
            generate_hard,
            "dead-end bays, single-lane corridors, turned and fishbone rows, floors up to "
            "120 x 80 m, tight batteries, 5+ movers",
        ),
    }
)


def parse_family(text: str) -> tuple[Family, list[int]] | None:
    """The family and seeds ``text`` names (``hard:7``, ``gen:0-49``); None when ``text``
    is not a family name (a shipped scenario's name, or a path). A name that is one but is
    malformed raises ``SettingError`` saying what a good one looks like
    (``sim.world.names``)."""
    found = parse_name(text, {name: f.about for name, f in FAMILIES.items()})
    if found is None:
        return None
    return FAMILIES[found[0]], found[1]


def family_worlds(text: str) -> dict[str, Scenario] | None:
    """The worlds ``text`` names, by name (``hard:3``), drawn in seed order; None when
    ``text`` is not a family name."""
    found = parse_family(text)
    if found is None:
        return None
    family, seeds = found
    return {family.world_name(seed): family.draw(seed) for seed in seeds}


def load_world(name_or_path: str | os.PathLike[str]) -> Scenario:
    """One scenario: a family name of one seed (``hard:7``), else ``load_scenario``'s
    shipped name or path."""
    if isinstance(name_or_path, str):
        found = parse_family(name_or_path)
        if found is not None:
            family, seeds = found
            if len(seeds) != 1:
                raise SettingError(
                    f"{name_or_path!r} names {len(seeds)} worlds; give one, "
                    f"{family.world_name(seeds[0])} say"
                )
            return family.draw(seeds[0])
    return load_scenario(name_or_path)
