"""The planner's tuning values, as one frozen, checked settings object.

``PlannerSettings`` holds every number the planner can be tuned by: how long a step or a
charge may run, the battery levels and a task's energy budget, the route planner's grid
and clearance, how often it routes again around obstacles, when the robot is stalled,
how it passes or waits for movers and gives way to them, how it remembers blocked
spots, and when the watchdog finds a task stalled and how long it defers it. Each value
is checked when the object is built (``runtime.settings``); a bad one raises
``SettingError`` naming it. A later issue loads the same object from a spec's
``[params]`` table.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from cabins.warehouse.routing import DEFAULT_CLEARANCE, DEFAULT_RESOLUTION
from runtime.settings import Count, Fraction, NonNegative, Positive, Settings

__all__ = ["PlannerSettings"]

Ratio = Annotated[float, Field(ge=1, allow_inf_nan=False)]
"""A finite number of at least 1 (a length as a multiple of another)."""
Threshold = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]
"""A battery level in [0, 1)."""


class PlannerSettings(Settings):
    """How the planner is tuned; each field says its default, unit and bound."""

    replan_after_ticks: Count = 1200
    """Ticks a step other than a charge may run before it is re-planned as overdue
    (default 1200; a whole number >= 1)."""

    charge_timeout_ticks: Count = 6000
    """Ticks a charge step may run before it is re-planned as overdue (default 6000; a
    whole number >= 1)."""

    low_battery: Threshold | None = None
    """The battery level (a share of full) below which the robot charges before it goes
    on; None (the default) reads it from the board's ``battery:low``, else 0.25. In
    [0, 1), and below ``charge_until``."""

    charge_until: Fraction = 0.9
    """The battery level (a share of full) a charge step charges to (default 0.9; in
    (0, 1], and above ``low_battery``)."""

    resolution: Positive = DEFAULT_RESOLUTION
    """Metres per cell of the route planner's grid (default 0.25; > 0)."""

    clearance: NonNegative = DEFAULT_CLEARANCE
    """Metres the route keeps between the robot's disc and shelves, zones and obstacles
    (default 0.25; >= 0)."""

    obstacle_replan_interval: Positive = 1.0
    """Seconds at least between two re-plans for an obstacle that came into the route
    ahead (default 1.0; > 0)."""

    obstacle_moved: Positive = 0.5
    """Metres an obstacle the route was planned around must move to count again as one
    in the way; also how far beyond twice its size a mover the robot gives way to must
    go for the giving way to end (default 0.5; > 0)."""

    route_retry_interval: Positive = 1.0
    """Seconds between two tries to route a step no route was found for (default 1.0;
    > 0)."""

    goal_clear_ticks: Count = 40
    """Ticks a finished plan's goal may stay on the board before the task is planned
    again (default 40; a whole number >= 1)."""

    stall_ticks: Count = 200
    """Ticks a go-to step may go without ``progress_step`` of progress along its route
    before it is re-planned as stalled, a stand-off (default 200; a whole number >= 1)."""

    progress_step: Positive = 0.25
    """Metres along the route that count as progress for ``stall_ticks`` (default 0.25;
    > 0)."""

    memory_cell: Positive = 1.0
    """Metres: the side of the square a blocked spot is remembered by, its subject in
    long-term memory (default 1.0; > 0)."""

    memory_radius: Positive = 1.0
    """Metres around a remembered blocked spot that a route keeps clear of when it can
    (default 1.0; > 0)."""

    memory_detour: Ratio = 1.5
    """The longest route clear of remembered blocked spots that is taken, as a multiple
    of the shortest route (default 1.5; >= 1)."""

    pass_detour: Ratio = 1.5
    """The longest way round moving obstacles that is taken, as a multiple of the way
    through them (plus ``pass_slack``); a longer one waits for them instead (default
    1.5; >= 1)."""

    pass_slack: NonNegative = 2.0
    """Metres added to ``pass_detour`` times the way (default 2.0; >= 0)."""

    give_way_s: Positive = 15.0
    """Seconds the robot gives way to a mover in a stand-off at most (default 15.0;
    > 0)."""

    lane_detour: Ratio = 4.0
    """The longest other way round a single lane a mover contests that is taken, as a
    multiple of the way through it (plus ``pass_slack``); with none as short, the robot
    waits at the lane's entry (default 4.0; >= 1)."""

    lane_wait_s: Positive = 30.0
    """Seconds the robot waits at a single lane's entry at most, before it goes in behind
    the mover as before; never into a dead end, where it waits until the lane is clear
    (default 30.0; > 0). The watchdog does not count the first 600 s of waiting for one
    target of a task (``lanes``)."""

    lane_lookahead_s: Positive = 3.0
    """Seconds along its course within which a mover that will be in a single lane
    heads into it (default 3.0; > 0)."""

    energy_reserve: Threshold = 0.05
    """The share of a full battery the robot must still hold on reaching a charger after
    the rest of its task, by the planner's estimate (``energy``); below what that needs it
    charges first (default 0.05; in [0, 1))."""

    energy_factor: Ratio = 1.3
    """How many times the shortest routes' energy the rest of a task is budgeted at, for
    waits, detours and re-plans (default 1.3; >= 1)."""

    energy_speed: Fraction = 0.5
    """The share of the robot's top speed a route is assumed driven at on average, for
    what its seconds drain (default 0.5; in (0, 1])."""

    watchdog_s: Positive = 90.0
    """Seconds the active task may go without progress (a step done that the task had
    not done yet, the way left to a go-to step's target ``progress_step`` shorter than
    ever, the battery rising on a charge) before a ``stalled`` alarm and a recovery:
    re-route, then defer, then abandon (default 90.0; > 0). A wait for a single lane is
    not counted (it has its own bound, ``lane_wait_s``)."""

    defer_s: Positive = 60.0
    """Seconds a deferred task waits at least before it is taken again (default 60.0;
    > 0)."""

    max_deferrals: Count = 2
    """Times a task may be deferred; stalled once more after that, it is abandoned
    (default 2; a whole number >= 1)."""

    @model_validator(mode="after")
    def _charges_above_low_battery(self) -> PlannerSettings:
        if self.low_battery is not None and self.charge_until <= self.low_battery:
            raise ValueError(
                f"charge_until ({self.charge_until!r}) must be above low_battery "
                f"({self.low_battery!r})"
            )
        return self
