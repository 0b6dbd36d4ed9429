"""The monitor's settings: its bands, margins, hold and reaction timings, in one frozen
object checked when it is built (``runtime.settings.Settings``).

``Monitor(spec, MonitorSettings(stop_margin=0.2))``; a bad value raises one
``SettingError`` naming the setting.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from cabins.monitor.bands import check_bands
from runtime.settings import Count, NonNegative, Positive, Settings

__all__ = ["MonitorSettings"]

Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
"""A number in [0, 1]."""


class MonitorSettings(Settings):
    """How the monitor judges deviation, stops, holds and reacts (see each setting).

    Across settings: ``alarm_deviation`` is above ``warn_deviation``, and ``hysteresis`` is
    below ``warn_deviation`` and below the gap between the two bands.
    """

    warn_deviation: Positive = 0.5
    """Cross-track error at which the warn band starts, in metres (> 0; default 0.5)."""
    alarm_deviation: Positive = 1.0
    """Cross-track error at which the alarm band starts, in metres (> 0, above
    ``warn_deviation``; default 1.0)."""
    hysteresis: NonNegative = 0.05
    """How far below a band's edge the error must fall to leave the band, in metres
    (>= 0, below ``warn_deviation`` and the gap between the bands; default 0.05)."""
    history: Count = 200
    """How many recent (time, cross-track error) samples are kept, in samples (>= 1;
    default 200)."""
    stop_margin: NonNegative = 0.1
    """Gap between the robot's disc and a forbidden zone within which a robot closing in
    is stopped, in metres (>= 0; default 0.1)."""
    obstacle_margin: NonNegative = 0.1
    """Gap between the robot's disc and an obstacle within which a robot closing in is
    stopped, in metres (>= 0; default 0.1)."""
    closing_speed: NonNegative = 1e-3
    """Speed towards a shape above which the robot counts as closing in, and at or below
    which (turning slowly too) it counts as at rest, in m/s (>= 0; default 0.001)."""
    hold_fraction: Share = 0.5
    """Share of the margin within which a robot at rest facing a shape is held, a
    fraction ([0, 1]; default 0.5)."""
    hold_release: Positive = 1.0
    """Time a held robot waits for its first free tick, in seconds (> 0; doubled for each
    free tick it used to push on, up to 8 times; default 1.0)."""
    episode_gap: NonNegative = 1.0
    """Time within which a recurring alarm or stop condition is still the same episode,
    in seconds (>= 0; default 1.0)."""
    status_step: Positive = 0.05
    """Change of the cross-track error that rewrites ``monitor:status``, in metres (> 0;
    default 0.05)."""
    slow_speed: Positive = 0.5
    """Speed cap of a slow-down reaction, in m/s (> 0; default 0.5)."""
    growth: Positive = 0.05
    """Growth of the cross-track error within ``growth_window`` that makes the deviation
    a growing one, in metres (> 0; default 0.05)."""
    growth_window: Positive = 0.5
    """Time over which the deviation's growth is measured, in seconds (> 0; default
    0.5)."""
    contact_margin: NonNegative = 0.05
    """Gap that the braking path must keep between the robot's disc and anything solid,
    in metres (>= 0; default 0.05)."""
    clear_after: NonNegative = 0.5
    """Time a condition must stay clear before its reaction is lifted, in seconds (>= 0;
    default 0.5)."""

    @model_validator(mode="after")
    def _bands_in_order(self) -> MonitorSettings:
        check_bands(
            self.warn_deviation,
            self.alarm_deviation,
            self.hysteresis,
            names=("warn_deviation", "alarm_deviation", "hysteresis"),
        )
        return self
