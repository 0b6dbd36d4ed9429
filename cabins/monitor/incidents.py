"""Incidents: the monitor's episodes of trouble, each reported once.

A bad reading, an emergency stop, speeding, a low battery, a late cabin or a capacity
alarm is reported when its episode opens; an episode lasts while its condition recurs
within ``episode_gap`` seconds (a stopped robot that creeps on is still the same episode).
All of them share one ``Episodes(QuietSeconds(episode_gap))`` whose keys say what the
trouble is (``("stop", reason, what)``, ``("bad", key)``, ``("speed", zone)``, ...): the
open stop episodes are the monitor's emergency stop.

The step expires the episodes that are over at its start, so that the emergency stop ends
on time. A hit may be stamped earlier than the step (an event's stamp: two capacity alarms
stamped more than ``episode_gap`` apart, seen in one step, are two episodes, and so are a
capacity alarm event and the view's capacity alarm after it), so each hit also ends its
own episode first when that is over at the hit's time.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from cabins.monitor.names import ALARM_TAGS
from cabins.monitor.settings import MonitorSettings
from runtime.cabin import Outbox
from runtime.episodes import Episodes, QuietSeconds

__all__ = ["Incidents"]


class Incidents:
    """The open episodes of trouble, by key (see the module docstring)."""

    __slots__ = ("_episodes",)

    def __init__(self, settings: MonitorSettings) -> None:
        self._episodes: Episodes[Hashable] = Episodes(QuietSeconds(settings.episode_gap))

    def expire(self, *, tick: int, time: float) -> None:
        """End the episodes quiet for more than ``episode_gap``: the first thing in a step."""
        self._episodes.expire(tick=tick, time=time)

    def opens(self, key: Hashable, *, tick: int, time: float) -> bool:
        """``key``'s trouble holds at ``time``; True when this opens its episode."""
        return self._episodes.hit(key, tick=tick, time=time, end_if_over=True)

    def bad(self, out: Outbox, key: str, problem: str, *, tick: int, time: float) -> None:
        """An ``alarm`` {"kind": "bad_reading"} for ``key``, once per episode."""
        if self.opens(("bad", key), tick=tick, time=time):
            out.emit(
                "alarm",
                {"kind": "bad_reading", "level": "alarm", "key": key, "error": problem},
                tags=ALARM_TAGS,
            )

    def bad_readings(
        self, out: Outbox, bad: Iterable[tuple[str, str]], *, tick: int, time: float
    ) -> None:
        """``bad`` for each (key, problem) of ``bad``, in order."""
        for key, problem in bad:
            self.bad(out, key, problem, tick=tick, time=time)

    @property
    def estop(self) -> bool:
        """True while an emergency-stop episode is open."""
        return any(isinstance(k, tuple) and k[0] == "stop" for k in self._episodes.open)
