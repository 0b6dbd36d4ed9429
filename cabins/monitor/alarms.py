"""Alarms on what other parts of the system report, and on the robot's own state.

- one ``alarm`` per ``cabin_failed`` and per ``tick_overrun`` event (an event seen on an
  earlier tick, still in the window, is not alarmed again);
- one per episode of capacity trouble: a ``capacity_alarm`` event that starts, or a view
  whose pinned items alone overflow memory (the alarm event itself is evicted then);
- one per episode of speeding inside a speed zone (an unreadable speed zone is a bad
  reading), of a low battery, and of each late asynchronous cabin (a ``late:<cabin>``
  item, see ``runtime.asynchronous``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Final

from shapely.geometry import Point

from cabins.monitor.incidents import Incidents
from cabins.monitor.names import ALARM_TAGS
from cabins.monitor.parsed import Parsed
from cabins.monitor.seen import Seen
from cabins.monitor.settings import MonitorSettings
from cabins.warehouse.values import (
    DEFAULT_LOW_BATTERY,
    Zone,
    read_battery,
    read_low_battery,
)
from runtime.cabin import LATE_PREFIX, Outbox
from runtime.log import Event

__all__ = ["Alarms"]

_SPEED_TOLERANCE: Final = 1e-6


def _data(event_data: Any) -> Mapping[str, Any]:
    return event_data if isinstance(event_data, Mapping) else {}


class Alarms:
    """Alarms on events, speed zones, the battery and late cabins (see the module
    docstring)."""

    def __init__(
        self, settings: MonitorSettings, incidents: Incidents, *, event_window: float
    ) -> None:
        self._settings = settings
        self._incidents = incidents
        self._event_window = event_window
        self._zone_values: Parsed[Zone | None] = Parsed()  # board speed zone values
        self._seen_events: dict[int, float] = {}  # seq -> stamp

    def speeding(self, seen: Seen, here: Point, speed: float, out: Outbox) -> None:
        """Alarm once per episode of a speed above a speed zone's limit inside it."""
        for key, value in seen.speed_zones:
            zone = self._zone_values.get(key, value, partial(Zone.read, key))
            if zone is None or zone.max_speed is None:
                self._incidents.bad(
                    out,
                    key,
                    f"a speed zone must be {{zone, polygon: ((x, y), ...), max_speed > 0}} "
                    f"outlining a valid polygon, got {value!r}",
                    tick=seen.tick,
                    time=seen.time,
                )
                continue
            limit = zone.max_speed
            if (
                speed > limit + _SPEED_TOLERANCE
                and zone.shape.contains(here)
                and self._incidents.opens(("speed", zone.id), tick=seen.tick, time=seen.time)
            ):
                out.emit(
                    "alarm",
                    {
                        "kind": "speed",
                        "level": "warn",
                        "zone": zone.id,
                        "speed": speed,
                        "max_speed": limit,
                    },
                    tags=ALARM_TAGS,
                )

    def battery(self, seen: Seen, out: Outbox) -> None:
        """Alarm once per episode of a battery below its low threshold."""
        battery = read_battery(seen.battery)
        low = read_low_battery(seen.battery_low)
        threshold = DEFAULT_LOW_BATTERY if low is None else low
        if (
            battery is not None
            and battery < threshold
            and self._incidents.opens(("battery",), tick=seen.tick, time=seen.time)
        ):
            out.emit(
                "alarm",
                {"kind": "battery", "level": "warn", "battery": battery, "threshold": threshold},
                tags=ALARM_TAGS,
            )

    def late(self, seen: Seen, out: Outbox) -> None:
        """Alarm once per episode of an asynchronous cabin being late."""
        for key, value in seen.late:
            data = _data(value)
            cabin = data.get("cabin", key[len(LATE_PREFIX) :])
            if self._incidents.opens(("late", str(cabin)), tick=seen.tick, time=seen.time):
                out.emit(
                    "alarm",
                    {
                        "kind": "cabin_late",
                        "level": "warn",
                        "cabin": cabin,
                        "since_tick": data.get("since_tick"),
                        "limit": data.get("limit"),
                    },
                    tags=ALARM_TAGS,
                )

    def events(self, seen: Seen, out: Outbox) -> None:
        """Alarm on the events not seen before, and on a memory overflowing with pinned items."""
        for event in seen.events:
            if event.seq in self._seen_events:
                continue
            self._seen_events[event.seq] = event.stamp
            alarm = self._alarm_for(event, seen.tick)
            if alarm is not None:
                out.emit("alarm", alarm, tags=ALARM_TAGS)
        load = seen.overflow
        if load is not None and self._incidents.opens(
            ("capacity",), tick=seen.tick, time=seen.time
        ):
            # while pinned items alone overflow memory, the alarm event itself is evicted
            out.emit(
                "alarm",
                {
                    "kind": "capacity",
                    "level": "warn",
                    "held": load.held,
                    "pinned": load.pinned,
                    "capacity": load.capacity,
                },
                tags=ALARM_TAGS,
            )
        horizon = seen.time - self._event_window - self._settings.episode_gap
        old = [seq for seq, stamp in self._seen_events.items() if stamp < horizon]
        for seq in old:
            del self._seen_events[seq]

    def _alarm_for(self, event: Event, tick: int) -> dict[str, Any] | None:
        """The alarm a newly seen event raises, if any."""
        data = _data(event.data)
        if event.kind == "cabin_failed":
            return {
                "kind": "cabin_failed",
                "level": "alarm",
                "cabin": data.get("cabin"),
                "error_type": data.get("error_type"),
                "tick": data.get("tick"),
                "seq": event.seq,
            }
        if event.kind == "tick_overrun":
            return {
                "kind": "tick_overrun",
                "level": "warn",
                "tick": data.get("tick"),
                "compute_s": data.get("compute_s"),
                "skipped": data.get("skipped"),
                "seq": event.seq,
            }
        if (
            event.kind == "capacity_alarm"
            and data.get("phase", "start") == "start"
            and self._incidents.opens(("capacity",), tick=tick, time=event.stamp)
        ):
            return {
                "kind": "capacity",
                "level": "warn",
                "held": data.get("held"),
                "pinned": data.get("pinned"),
                "capacity": data.get("capacity"),
            }
        return None
