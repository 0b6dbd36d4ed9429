"""Deviation bands: which band (ok, warn, alarm) a cross-track error is in, with hysteresis
so that noise on a band's edge does not flip the band tick after tick."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from runtime.errors import SettingError
from runtime.position import finite

__all__ = ["RANK", "DeviationBands", "Level", "check_bands"]

Level = Literal["ok", "warn", "alarm"]
RANK: Final[dict[Level, int]] = {"ok": 0, "warn": 1, "alarm": 2}
"""Each band's rank: a climb to a higher rank raises an alarm."""


def check_bands(
    warn: Any,
    alarm: Any,
    hysteresis: Any,
    *,
    names: tuple[str, str, str] = ("warn", "alarm", "hysteresis"),
) -> None:
    """Raise ``ValueError`` unless the bands are finite numbers that do not overlap:
    ``warn`` above 0, ``alarm`` above ``warn``, and ``hysteresis`` at least 0 and below
    ``warn`` and the gap between the bands. ``names`` are the numbers' names in the
    message (the settings' names for ``MonitorSettings``)."""
    warn_name, alarm_name, hysteresis_name = names
    for name, value in zip(names, (warn, alarm, hysteresis), strict=True):
        if finite(value) is None:
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if warn <= 0:
        raise ValueError(f"{warn_name} must be > 0, got {warn!r}")
    if hysteresis < 0:
        raise ValueError(f"{hysteresis_name} must be >= 0, got {hysteresis!r}")
    if alarm <= warn:
        raise ValueError(f"{alarm_name} ({alarm!r}) must be greater than {warn_name} ({warn!r})")
    if hysteresis >= min(warn, alarm - warn):
        raise ValueError(
            f"{hysteresis_name} ({hysteresis!r}) must be smaller than {warn_name} ({warn!r}) "
            f"and than the gap between the bands ({alarm - warn!r})"
        )


@dataclass(frozen=True, slots=True)
class DeviationBands:
    """Warn and alarm bands of the cross-track error, in metres.

    An error at or above ``warn`` (``alarm``) is in the warn (alarm) band; it leaves a
    band only once it is ``hysteresis`` below the band's lower edge. The numbers are
    checked by the rule ``MonitorSettings`` checks its bands by (``check_bands``): a bad
    one raises ``SettingError``.
    """

    warn: float = 0.5
    alarm: float = 1.0
    hysteresis: float = 0.05

    def __post_init__(self) -> None:
        try:
            check_bands(self.warn, self.alarm, self.hysteresis)
        except ValueError as exc:
            raise SettingError(f"DeviationBands: {exc}") from None

    def classify(self, error: float, current: Level = "ok") -> Level:
        """The band of ``error`` for a monitor now in band ``current``."""
        if error >= self.alarm or (current == "alarm" and error > self.alarm - self.hysteresis):
            return "alarm"
        if error >= self.warn or (current != "ok" and error > self.warn - self.hysteresis):
            return "warn"
        return "ok"
