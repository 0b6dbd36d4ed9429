"""Deviation bands: which band (ok, warn, alarm) a cross-track error is in, with hysteresis
so that noise on a band's edge does not flip the band tick after tick."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["RANK", "DeviationBands", "Level"]

Level = Literal["ok", "warn", "alarm"]
RANK: Final[dict[Level, int]] = {"ok": 0, "warn": 1, "alarm": 2}
"""Each band's rank: a climb to a higher rank raises an alarm."""


@dataclass(frozen=True, slots=True)
class DeviationBands:
    """Warn and alarm bands of the cross-track error, in metres.

    An error at or above ``warn`` (``alarm``) is in the warn (alarm) band; it leaves a
    band only once it is ``hysteresis`` below the band's lower edge. The numbers are not
    checked here: ``MonitorSettings`` checks them (``alarm`` above ``warn``, ``hysteresis``
    below ``warn`` and below the gap between the bands), and the monitor builds its bands
    from its settings.
    """

    warn: float = 0.5
    alarm: float = 1.0
    hysteresis: float = 0.05

    def classify(self, error: float, current: Level = "ok") -> Level:
        """The band of ``error`` for a monitor now in band ``current``."""
        if error >= self.alarm or (current == "alarm" and error > self.alarm - self.hysteresis):
            return "alarm"
        if error >= self.warn or (current != "ok" and error > self.warn - self.hysteresis):
            return "warn"
        return "ok"
