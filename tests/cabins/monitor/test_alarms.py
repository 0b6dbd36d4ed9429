"""The monitor's alarms on events, the battery, late cabins and speed zones."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cabins.monitor import Monitor
from cabins.monitor.alarms import Alarms
from cabins.monitor.incidents import Incidents
from cabins.monitor.seen import Seen, ViewReader
from cabins.monitor.settings import MonitorSettings
from runtime import load_spec
from runtime.cabin import Outbox
from runtime.testing import make_view, run_step
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "monitor.toml")
LOAD = {"held": 70, "pinned": 66, "capacity": 64}


def read(incidents: Incidents, now: float = 10.0, tick: int = 0, **kwargs: Any) -> Seen:
    view = make_view(SPEC, now=now, tick=tick, **kwargs)
    incidents.expire(tick=tick, time=now)
    return ViewReader(SPEC.route_key).read(view)


def alarms(out: Outbox) -> list[tuple[str, Any]]:
    return [(e.data["kind"], e.data.get("cabin")) for e in out.events if e.kind == "alarm"]


def test_each_event_is_alarmed_once_while_it_stays_in_the_window() -> None:
    incidents = Incidents(MonitorSettings(episode_gap=1.0))
    part = Alarms(MonitorSettings(episode_gap=1.0), incidents, event_window=SPEC.event_window)
    failed = ("cabin_failed", {"cabin": "planner", "error_type": "KeyError", "tick": 3}, 9.5)
    ended = ("capacity_alarm", {**LOAD, "phase": "end"}, 9.6)
    out = Outbox("monitor")
    part.events(read(incidents, events=[failed, ended]), out)
    assert alarms(out) == [("cabin_failed", "planner")]  # an end of pressure is no alarm
    again = Outbox("monitor")
    part.events(read(incidents, now=10.05, tick=1, events=[failed, ended]), again)
    assert alarms(again) == []


def test_capacity_alarms_stamped_more_than_the_gap_apart_are_two_episodes() -> None:
    for stamps, episodes in (((8.5, 9.9), 2), ((8.5, 9.0, 9.9), 1)):  # the gap from the last
        events = [("capacity_alarm", LOAD, stamp) for stamp in stamps]
        out = run_step(Monitor(SPEC), make_view(SPEC, board={"pose": (0, 0, 0)}, events=events))
        assert [a for a, _ in alarms(out)] == ["capacity"] * episodes, stamps


def test_a_view_overflowing_after_an_older_capacity_event_is_a_new_episode() -> None:
    board: dict[str, Any] = {
        f"safety:forbidden:z{i}": {"zone": f"z{i}", "polygon": ((9 + i, 9), (10 + i, 9), (9, 10))}
        for i in range(3)
    }
    overflow = read(Incidents(MonitorSettings(episode_gap=1.0)), board=board, capacity=2).overflow
    assert overflow is not None
    for stamp, episodes in ((9.5, 1), (8.5, 2)):
        incidents = Incidents(MonitorSettings(episode_gap=1.0))
        part = Alarms(MonitorSettings(episode_gap=1.0), incidents, event_window=SPEC.event_window)
        seen = read(incidents, events=[("capacity_alarm", LOAD, stamp)])
        out = Outbox("monitor")
        part.events(replace(seen, overflow=overflow), out)
        assert [e.data["held"] for e in out.events] == [70, 3][:episodes], stamp


def test_a_late_cabin_and_a_low_battery_are_alarmed_once_per_episode() -> None:
    incidents = Incidents(MonitorSettings(episode_gap=1.0))
    part = Alarms(MonitorSettings(episode_gap=1.0), incidents, event_window=SPEC.event_window)
    board = {
        "late:llm": {"cabin": "llm", "since_tick": 3, "limit": 2},
        "late:other": {},
        "battery": 0.3,
        "battery:low": 0.4,
    }
    out = Outbox("monitor")
    seen = read(incidents, board=board)
    part.battery(seen, out)
    part.late(seen, out)
    assert alarms(out) == [("battery", None), ("cabin_late", "llm"), ("cabin_late", "other")]
    again = Outbox("monitor")
    seen = read(incidents, now=10.5, tick=10, board=board)
    part.battery(seen, again)
    part.late(seen, again)
    assert alarms(again) == []
