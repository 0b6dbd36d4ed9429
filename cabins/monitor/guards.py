"""Stop guards: the emergency stops for forbidden zones, obstacles and the scanner's people.

The robot is stopped while its disc is within ``stop_margin`` of a forbidden zone (the
``safety:forbidden:*`` items, and the forbidden zones on its map) or within
``obstacle_margin`` of an obstacle (on its map, or a disc in the safety scanner's reading
that no obstacle on the map covers: a map that lost its people leaves the scanner), as
the stop rule of ``cabins.monitor.holds`` says. An unreadable zone or scan is a bad
reading and a fail-safe stop. Each stop opens an episode: its ``emergency_stop`` event is
reported once per episode, while the stop itself holds every tick.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from functools import partial
from typing import Any

from shapely.geometry import Point
from shapely.geometry.base import BaseGeometry

from cabins.monitor.holds import HOLD_REACH, Holds
from cabins.monitor.incidents import Incidents
from cabins.monitor.names import STOP_TAGS
from cabins.monitor.parsed import Parsed, private_copy
from cabins.monitor.seen import Robot, Seen
from cabins.monitor.settings import MonitorSettings
from cabins.warehouse.shapes import point
from cabins.warehouse.values import SCANNER, Scan, Zone
from runtime.cabin import Outbox

__all__ = ["Scanned", "StopGuards"]

Scanned = tuple[tuple[str, BaseGeometry, Point], ...]
"""The people and vehicles the safety scanner sees: (name, disc, centre), nearest first."""


class StopGuards:
    """Stops the robot short of zones and obstacles (see the module docstring)."""

    def __init__(self, settings: MonitorSettings, incidents: Incidents) -> None:
        self._settings = settings
        self._incidents = incidents
        self._holds = Holds(settings)
        self._zone_values: Parsed[Zone | None] = Parsed()  # board zone values
        self._features: Parsed[BaseGeometry] = Parsed()  # forbidden zones of the map

    def guard(self, seen: Seen, out: Outbox, stops: list[str]) -> Scanned:
        """Add this tick's stop reasons to ``stops``; what the scanner sees."""
        scanned = self._scanned(seen, out, stops)
        zones = self._zones(seen, out, stops)
        robot = seen.robot
        if robot is not None:
            self._guard_zones(seen, zones, robot, out, stops)
            self._guard_obstacles(seen, robot, out, stops, scanned)
        self._holds.next_tick()
        return scanned

    def _stop(
        self,
        seen: Seen,
        out: Outbox,
        stops: list[str],
        reason: str,
        episode: Hashable,
        data: Mapping[str, Any],
    ) -> bool:
        """Stop this tick; True (and an ``emergency_stop`` event) if a stop episode opens."""
        stops.append(reason)
        if not self._incidents.opens(("stop", reason, episode), tick=seen.tick, time=seen.time):
            return False
        out.emit("emergency_stop", {"reason": reason, **data}, tags=STOP_TAGS)
        return True

    def _scanned(self, seen: Seen, out: Outbox, stops: list[str]) -> Scanned:
        """The people and vehicles the safety scanner sees; an unreadable scan is a bad
        reading and a fail-safe stop."""
        if not seen.scan_shown:
            return ()
        value = seen.scan
        scan = Scan.read(value)
        if scan is None:
            self._incidents.bad(
                out,
                SCANNER,
                f"a scan must be {{range: r > 0, hits: ((x, y, radius > 0), ...)}}, got {value!r}",
                tick=seen.tick,
                time=seen.time,
            )
            self._stop(
                seen, out, stops, "fail_safe", SCANNER, {"missing": "unreadable", "key": SCANNER}
            )
            return ()
        found: list[tuple[str, BaseGeometry, Point]] = []
        for i, (x, y, r) in enumerate(scan.hits):
            centre = point(x, y)
            found.append((f"scanner:{i}", centre.buffer(r), centre))
        return tuple(found)

    def _zones(self, seen: Seen, out: Outbox, stops: list[str]) -> list[tuple[str, BaseGeometry]]:
        zones: dict[str, BaseGeometry] = {}
        for key, value in seen.forbidden:
            zone = self._zone_values.get(key, value, partial(Zone.read, key))
            if zone is not None:
                zones[zone.id] = zone.shape
                continue
            self._incidents.bad(
                out,
                key,
                f"a forbidden zone must be {{zone, polygon: ((x, y), ...)}} outlining a "
                f"valid polygon, got {value!r}",
                tick=seen.tick,
                time=seen.time,
            )
            self._stop(seen, out, stops, "fail_safe", key, {"missing": "unreadable", "key": key})
        for feature in seen.nearby_map:
            if feature.kind != "forbidden":
                continue
            name = str(feature.props.get("id", feature.id))
            if name not in zones:
                zones[name] = self._features.get(feature.id, feature.geometry, private_copy)
        return list(zones.items())

    def _guard_zones(
        self,
        seen: Seen,
        zones: list[tuple[str, BaseGeometry]],
        robot: Robot,
        out: Outbox,
        stops: list[str],
    ) -> None:
        margin = self._settings.stop_margin
        reach = robot.radius + HOLD_REACH * margin
        for zone, shape in zones:
            if not shape.dwithin(robot.here, reach):
                continue
            gap = self._holds.must_stop(shape, robot, margin, ("zone", zone), seen.time)
            if gap is not None:
                self._stop(
                    seen, out, stops, "forbidden_zone", zone, {"zone": zone, "distance": gap}
                )

    def _guard_obstacles(
        self, seen: Seen, robot: Robot, out: Outbox, stops: list[str], scanned: Scanned
    ) -> None:
        """Stop short of the obstacles on the map, and of those the scanner sees where the
        map shows none (a map that lost them: the scanner's disc is guarded alike)."""
        on_map: list[BaseGeometry] = []
        guarded: list[tuple[str, BaseGeometry]] = []
        for feature in seen.nearby_map:
            if feature.kind == "obstacle":
                on_map.append(feature.geometry)
                guarded.append((feature.id, feature.geometry))
        for name, disc, centre in scanned:
            if not any(shape.intersects(centre) for shape in on_map):
                guarded.append((name, disc))
        margin = self._settings.obstacle_margin
        for name, shape in guarded:
            gap = self._holds.must_stop(shape, robot, margin, ("obstacle", name), seen.time)
            if gap is not None:
                self._stop(seen, out, stops, "obstacle", name, {"obstacle": name, "distance": gap})
