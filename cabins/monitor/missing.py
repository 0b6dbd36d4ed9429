"""MissingItems: the required readings the monitor cannot see, and the fail-safe stop.

A required reading missing for a reason other than "absent" (stale, fault, evicted) is
reported on the tick it goes missing, and again when its reason changes: an ``alarm``
(kind ``stale_reading`` when it is stale, else ``missing_reading``) and the reaction
``alarm:missing_reading``. The safety items (``safety:*``, ``safety:scanner``) are the
exception: while one is missing the robot is stopped every tick (the fail-safe), and the
``emergency_stop`` and the reaction ``stop:fail_safe`` are reported when that starts or
its pattern or reason changes. "absent" is no trouble: the scenario has no forbidden
zones, the robot no scanner, nothing is planned yet.
"""

from __future__ import annotations

from typing import Final

from cabins.monitor.incidents import Incidents
from cabins.monitor.names import ALARM_TAGS, FAIL_SAFE, FAIL_SAFE_ON, READING_REACTION, STOP_TAGS
from cabins.monitor.seen import Seen
from runtime.cabin import Outbox
from runtime.episodes import Episodes, UntilSeen
from runtime.spec import ContextSpec

__all__ = ["MissingItems"]

_SAFETY_KEY: Final = "safety"  # the fail-safe's one episode: its reason names the pattern


class MissingItems:
    """Missing required readings and the fail-safe stop (see the module docstring)."""

    def __init__(self, spec: ContextSpec, incidents: Incidents) -> None:
        self._watched = tuple(p for p in spec.required if p not in FAIL_SAFE_ON)
        self._missing: Episodes[str] = Episodes(UntilSeen(new_reason=True))
        self._safety: Episodes[str] = Episodes(UntilSeen(new_reason=True))
        self._incidents = incidents

    def report_missing(self, seen: Seen, out: Outbox) -> None:
        """Alarm (and react) on the tick a required reading goes missing, or changes reason."""
        opened = self._missing.follow(seen.missing, self._watched, tick=seen.tick, time=seen.time)
        for pattern, reason in opened:
            kind = "stale_reading" if reason == "stale" else "missing_reading"
            out.emit(
                "alarm",
                {"kind": kind, "level": "warn", "key": pattern, "reason": reason},
                tags=ALARM_TAGS,
            )
            out.react(pattern, READING_REACTION, reason=reason)

    def fail_safe(self, seen: Seen, out: Outbox, stops: list[str]) -> None:
        """Stop every tick while safety items (``safety:*``, or the scanner's reading) are
        missing; report it when that starts."""
        missing, tick, time = seen.missing, seen.tick, seen.time
        found = next(
            ((p, r) for p in FAIL_SAFE_ON if (r := missing.get(p)) not in (None, "absent")),
            None,
        )
        if found is None:
            self._safety.miss(_SAFETY_KEY, tick=tick, time=time)
            return
        pattern, reason = found
        stops.append("fail_safe")
        self._incidents.opens(("stop", "fail_safe", reason), tick=tick, time=time)
        if self._safety.hit(_SAFETY_KEY, tick=tick, time=time, reason=f"{pattern} {reason}"):
            out.emit(
                "emergency_stop",
                {"reason": "fail_safe", "missing": reason, "pattern": pattern},
                tags=STOP_TAGS,
            )
            out.react(pattern, FAIL_SAFE, reason=reason)
