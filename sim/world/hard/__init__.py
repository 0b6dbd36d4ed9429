"""The ``hard:N`` family: generated warehouses of the kinds that broke liveness in issue 29.

``gen:N`` (``sim.world.generate``) draws small, regular floors, and keeps drawing them the
same way so that old figures stay comparable. ``generate_hard(seed, settings)`` draws from
a second, harder distribution, one layout per seed (``LAYOUTS[seed % 5]``):

- ``bays``: dead-end bays 1.85-2.65 m wide closed by a wall, docks at their closed ends,
  pickers whose loops end just in front of those docks (``sim.world.hard.bays``);
- ``corridors``: a floor 50-120 m long whose two 2.6-3.0 m corridors meet only at their
  ends, forklifts in them (``sim.world.hard.corridors``);
- ``fishbone``: rows turned 30-60 degrees off a spine, mirrored (``sim.world.hard.fishbone``);
- ``rotated``: a block of rows turned 8-40 degrees in the floor (``sim.world.hard.rotated``);
- ``large``: ``gen:N``'s kind of floor at 48 x 32 to 120 x 80 m, 45 shelves and more
  (``sim.world.hard.large``).

Every draw has five movers or more (people and forklifts), four to eight deliveries and,
in half of them, a battery too small for some delivery's round from the charger, so that
the robot must charge between its pick-up and its drop (``sim.world.hard.work``; a small
floor that no draw can make tight that way gets an ample battery in its last draws). Like
``generate``, every draw is validated as a ``Scenario`` (reachability included) and drawn
again when it does not make a good world, and the same seed and settings give the same
scenario. ``sim.world.hard.traits`` measures on a scenario which of these traits it has.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pydantic import ValidationError

from runtime.errors import SettingError
from sim.world.hard.bays import lay_out_bays
from sim.world.hard.corridors import lay_out_corridors
from sim.world.hard.draft import Draft, Redraw
from sim.world.hard.fishbone import lay_out_fishbone
from sim.world.hard.large import lay_out_large
from sim.world.hard.rotated import lay_out_rotated
from sim.world.hard.settings import LAYOUTS, HardSettings, Layout
from sim.world.hard.work import draw_work
from sim.world.scenario import Scenario

__all__ = ["LAYOUTS", "HardSettings", "Layout", "generate_hard", "hard_name"]

_ATTEMPTS = 30
_AMPLE_ATTEMPTS = 10  # the last draws of a seed drawn tight are ample (generate_hard)
_FAMILY_KEY = 29  # the issue that asked for the family: mixed into every seed

_LAY_OUT: dict[str, Callable[[np.random.Generator, float, tuple[float, float], int], Draft]] = {
    "bays": lay_out_bays,
    "corridors": lay_out_corridors,
    "fishbone": lay_out_fishbone,
    "rotated": lay_out_rotated,
    "large": lay_out_large,
}


def hard_name(seed: int) -> str:
    """The name of the world ``generate_hard(seed)`` makes with the default settings."""
    return f"hard:{seed}"


def generate_hard(seed: int, settings: HardSettings | None = None) -> Scenario:
    """A valid warehouse of the ``hard:N`` family for ``seed`` (see the module docstring)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SettingError(f"seed must be a whole number >= 0, got {seed!r}")
    settings = settings if settings is not None else HardSettings()
    layout: Layout = settings.layout or LAYOUTS[seed % len(LAYOUTS)]
    rng = np.random.default_rng([_FAMILY_KEY, seed])
    tight = settings.tight_battery
    if tight is None:  # drawn once: a layout that takes redraws to be tight stays tight
        tight = bool(rng.random() < 0.5)
    problem: Exception | None = None
    # a battery drawn tight that no draw of a small floor can make tight (its docks kept
    # clear of where movers turn back) is made ample for the last draws, not refused
    chances = [tight] * _ATTEMPTS
    if settings.tight_battery is None and tight:
        chances[-_AMPLE_ATTEMPTS:] = [False] * _AMPLE_ATTEMPTS
    for chance in chances:
        try:
            radius = 0.35 if rng.random() < 0.5 else round(float(rng.uniform(0.3, 0.4)), 3)
            movers = settings.movers if settings.movers is not None else int(rng.integers(5, 9))
            draft = _LAY_OUT[layout](rng, radius, settings.max_floor, movers)
            return Scenario.model_validate(draw_work(draft, rng, settings, seed, tight=chance))
        except (Redraw, ValidationError, SettingError) as exc:  # the next draw
            problem = exc
    raise SettingError(
        f"could not generate a valid hard:{seed} warehouse ({layout}) with these settings in "
        f"{_ATTEMPTS} draws (last problem: {problem})"
    )
