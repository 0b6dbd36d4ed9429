"""The monitor's status on the board: ``monitor:status`` = {"deviation", "level", "estop",
"reacting"}, written when it changes (the deviation by ``status_step`` or more, or to or
from unknown)."""

from __future__ import annotations

from cabins.monitor.bands import Level
from cabins.monitor.names import STATUS_KEY
from cabins.monitor.settings import MonitorSettings
from runtime.cabin import Outbox

__all__ = ["StatusWriter"]


class StatusWriter:
    """Writes ``monitor:status`` when it changes (see the module docstring)."""

    def __init__(self, settings: MonitorSettings) -> None:
        self._settings = settings
        self._status: tuple[float | None, Level, bool] | None = None
        self._status_reacting: tuple[str, ...] = ()

    def write(
        self,
        out: Outbox,
        error: float | None,
        level: Level,
        estop: bool,
        reacting: tuple[str, ...],
    ) -> None:
        """Write the status if it differs from the last one written."""
        deviation = None if error is None else round(error, 3)
        last = self._status
        if last is not None:
            last_dev, last_level, last_estop = last
            same_dev = (deviation is None) == (last_dev is None) and (
                deviation is None
                or last_dev is None
                or abs(deviation - last_dev) < self._settings.status_step
            )
            if (
                same_dev
                and last_level == level
                and last_estop == estop
                and reacting == self._status_reacting
            ):
                return
        self._status = (deviation, level, estop)
        self._status_reacting = reacting
        out.write(
            STATUS_KEY,
            {"deviation": deviation, "level": level, "estop": estop, "reacting": reacting},
        )
