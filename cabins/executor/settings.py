"""The executor's settings: how it steers, approaches docks, keeps off obstacles and waits.

One frozen, keyword-only object, checked when it is built (``runtime.settings``): a bad
value raises one ``SettingError`` naming the setting. Each value's default, unit and
bound is in the docstring under it, which is also its description in the JSON Schema.
"""

from __future__ import annotations

from runtime.settings import Count, Fraction, NonNegative, Positive, Settings

__all__ = ["ExecutorSettings"]


class ExecutorSettings(Settings):
    """The executor's tuning values (see the module docstring)."""

    lookahead: Positive = 0.8
    """How far ahead along the route pure pursuit steers for at speed, in metres (default
    0.8, > 0); at a crawl it looks less far ahead."""

    arrive_fraction: Fraction = 0.5
    """The share of the dock tolerance (``acceptance``) within which a ``go_to`` has arrived
    (default 0.5, in (0, 1])."""

    approach_distance: Positive = 2.0
    """How far before the end of the route the retry policy's slower approach begins, in
    metres (default 2.0, > 0)."""

    approach_speed: Positive = 0.3
    """The speed of the direct approach to a dock before a pick, drop or charge, in m/s
    (default 0.3, > 0); the retry policy's ``approach_speed_factor`` scales it."""

    max_approach_gap: Positive = 1.5
    """The farthest a dock may be for a direct approach, in metres (default 1.5, > 0);
    further off, the executor holds for the planner to route it there."""

    obstacle_margin: NonNegative = 0.25
    """The clearance from an obstacle within which the route is passed slowly, in metres
    (default 0.25, >= 0)."""

    accept_margin: NonNegative = 0.05
    """How far inside the dock tolerance the robot acts, in metres (default 0.05, >= 0);
    never less than half the tolerance."""

    blind_max_speed: Positive = 0.5
    """The speed cap everywhere while the speed limits are hidden, in m/s (default 0.5,
    > 0); lower when a zone limit seen before is lower."""

    charge_until: Fraction = 0.9
    """The battery level at which charging is done, a share of full (default 0.9, in
    (0, 1])."""

    outcome_timeout_ticks: Count = 40
    """Ticks to wait for the outcome of a pick or drop before it counts as failed with
    ``no_outcome`` (default 40, >= 1)."""
