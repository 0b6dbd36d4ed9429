"""Large floors: ``gen:N``'s kind of warehouse (rows along x or y cut by cross aisles,
shelves of four outlines, docks on the lane and in the aisles, a forbidden and a speed
zone), drawn from 48 x 32 m (the issue's starvation floor: about 45 shelves and more) up
to 120 x 80 m (hundreds of shelves), about two thirds as deep as wide, with narrow aisles
more often than not and five movers or more.

The layout is made by ``sim.world.generate.generate`` itself, at a size and with counts
drawn here, so it keeps every guarantee of that generator; its docks, charger, start,
zones and movers become the places and loops of the draft, and the work is drawn again.
"""

from __future__ import annotations

import numpy as np

from cabins.warehouse.routing import min_aisle_width
from sim.world.generate import GeneratorSettings, generate
from sim.world.hard.draft import Draft, Redraw, r3

__all__ = ["lay_out_large"]

_RADIUS = 0.35  # generate() gives the robot this radius when the size is fixed


def lay_out_large(
    rng: np.random.Generator, radius: float, max_floor: tuple[float, float], movers: int
) -> Draft:
    del radius  # fixed by the generator for a fixed size
    width = r3(rng.uniform(min(48.0, max_floor[0]), min(120.0, max_floor[0])))
    height = r3(min(max(32.0, width * float(rng.uniform(0.55, 0.75))), max_floor[1]))
    least = min_aisle_width(_RADIUS)
    aisle = r3(least + 0.02 + float(rng.uniform(0, 1) ** 2) * 1.6)
    forklifts = 1 + int(rng.integers(0, 3))
    settings = GeneratorSettings(
        size=(width, height),
        aisle_width=aisle,
        people=movers - forklifts + 2,  # a few fall to the generator's own checks
        forklifts=forklifts,
        docks=int(rng.integers(6, 10)),
        tasks=1,
    )
    world = generate(int(rng.integers(0, 2**31)), settings)
    if len(world.shelves) < 45:
        raise Redraw(f"only {len(world.shelves)} shelves")
    draft = Draft(layout="large", width=width, height=height, radius=_RADIUS)
    draft.notes.append(f"{len(world.shelves)} shelves, {aisle:.2f} m aisles")
    for shelf in world.shelves:
        draft.add_shelf(shelf.polygon)
    for dock in world.docks:
        draft.add_place("aisle", (dock.x, dock.y))
    draft.charger_spots.extend((c.x, c.y) for c in world.chargers)
    draft.start_spots.append((world.robot.start.x, world.robot.start.y))
    draft.forbidden.extend(z.model_dump() for z in world.forbidden_zones)
    draft.speed_zones.extend(z.model_dump() for z in world.speed_zones)
    people = [m for m in world.moving_obstacles if m.kind == "person"]
    kept = [m for m in world.moving_obstacles if m.kind == "forklift"] + people
    for mover in kept[:movers]:
        draft.add_mover(rng, mover.kind, [(p[0], p[1]) for p in mover.waypoints])
    return draft
