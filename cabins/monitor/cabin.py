"""The monitor cabin: one step over its parts (see the package docstring for what it does).

Each tick it reads its view once into a ``Seen``, expires the episodes of trouble that are
over, and hands the ``Seen`` to its parts in the order their reports go to the outbox: the
bad readings met on the way, missing readings, deviation, the fail-safe and the stop
guards, speeding, the conditions and their reactions, the stop or slow-down command, the
battery, late cabins, events, and last the status.
"""

from __future__ import annotations

from collections.abc import Mapping

from cabins.monitor.alarms import Alarms
from cabins.monitor.bands import Level
from cabins.monitor.contact import ContactForecast
from cabins.monitor.deviation import Deviation
from cabins.monitor.guards import StopGuards
from cabins.monitor.incidents import Incidents
from cabins.monitor.missing import MissingItems
from cabins.monitor.reactions import Reactions
from cabins.monitor.seen import ViewReader
from cabins.monitor.settings import MonitorSettings
from cabins.monitor.status import StatusWriter
from runtime.cabin import Outbox
from runtime.pack import CabinView
from runtime.spec import ContextSpec

__all__ = ["Monitor"]


class Monitor:
    """Deviation bands, stale readings, emergency stops and alarms for one robot."""

    Settings = MonitorSettings
    """What ``[params]`` in its spec may set (``runtime.settings.settings_from_spec``)."""

    def __init__(self, spec: ContextSpec, settings: MonitorSettings | None = None) -> None:
        if not isinstance(spec, ContextSpec):
            raise TypeError(f"spec must be a ContextSpec, got {type(spec).__name__}")
        settings = MonitorSettings() if settings is None else settings
        if not isinstance(settings, MonitorSettings):
            raise TypeError(f"settings must be MonitorSettings, got {type(settings).__name__}")
        self.spec = spec
        self._settings = settings
        self._reactions = Reactions(settings, spec)
        self._incidents = incidents = Incidents(settings)
        self._reader = ViewReader(spec.route_key)
        self._missing = MissingItems(spec, incidents)
        self._deviation = Deviation(settings, spec.route_key, incidents)
        self._guards = StopGuards(settings, incidents)
        self._contact = ContactForecast(settings)
        self._alarms = Alarms(settings, incidents, event_window=spec.event_window)
        self._status = StatusWriter(settings)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settings(self) -> MonitorSettings:
        """The monitor's tuning values (its parts read them from this one object)."""
        return self._settings

    @property
    def reactions(self) -> Mapping[str, str]:
        """Condition -> the reaction in force: the spec's choice, else the default."""
        return self._reactions.chosen

    @property
    def reacting(self) -> tuple[str, ...]:
        """The conditions whose reaction is in force now."""
        return self._reactions.reacting

    @property
    def level(self) -> Level:
        """The deviation band the robot is in now."""
        return self._deviation.level

    @property
    def deviation(self) -> float | None:
        """The last cross-track error (m), or None when it cannot be measured."""
        return self._deviation.error

    @property
    def history(self) -> tuple[tuple[float, float], ...]:
        """Recent (time, cross-track error) samples, oldest first."""
        return tuple(self._deviation.history)

    @property
    def estop(self) -> bool:
        """True while an emergency-stop episode is open."""
        return self._incidents.estop

    def step(self, view: CabinView, out: Outbox) -> None:
        seen = self._reader.read(view)
        tick, time = seen.tick, seen.time
        self._incidents.expire(tick=tick, time=time)
        self._incidents.bad_readings(out, seen.bad, tick=tick, time=time)
        self._missing.report_missing(seen, out)
        self._deviation.track(seen, out)
        stops: list[str] = []
        self._missing.fail_safe(seen, out, stops)
        scanned = self._guards.guard(seen, out, stops)
        robot = seen.robot
        if robot is not None and robot.speed is not None:
            self._alarms.speeding(seen, robot.here, abs(robot.speed), out)
        held = {
            "deviation_growing": self._deviation.growing(seen.time),
            "contact_predicted": self._contact.predict(seen, scanned),
        }
        slow = self._reactions.react(seen.time, out, held, stops)
        if stops:
            out.command("stop", reason=stops[0])
        elif slow is not None:
            out.command("slow", v=slow[0], reason=slow[1])
        self._alarms.battery(seen, out)
        self._alarms.late(seen, out)
        self._alarms.events(seen, out)
        self._status.write(
            out, self._deviation.error, self._deviation.level, self.estop, self.reacting
        )
