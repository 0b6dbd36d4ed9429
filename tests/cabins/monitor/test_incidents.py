"""The monitor's incidents: one report per episode of trouble, an episode ended by a quiet
gap; the open stop episodes are its emergency stop."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cabins.monitor.incidents import Incidents
from cabins.monitor.settings import MonitorSettings
from runtime.cabin import Outbox


class _GapEpisodes:
    """The monitor's own episode tracker before it used ``runtime.episodes``: the
    reference the incidents must agree with."""

    def __init__(self, gap: float) -> None:
        self._gap = gap
        self._last: dict[tuple[str, ...], float] = {}

    def hit(self, key: tuple[str, ...], now: float) -> bool:
        last = self._last.get(key)
        self._last[key] = now if last is None else max(last, now)
        return last is None or now - last > self._gap

    def close_old(self, now: float) -> None:
        for key in [k for k, t in self._last.items() if now - t > self._gap]:
            del self._last[key]


KEYS = [("stop", "obstacle", "p1"), ("stop", "fail_safe", "fault"), ("bad", "pose"), ("battery",)]


@given(
    gap=st.sampled_from([0.0, 0.05, 1.0]),
    ticks=st.lists(
        st.tuples(
            st.floats(0.0, 0.6),  # time since the last tick
            st.lists(st.tuples(st.sampled_from(KEYS), st.floats(0.0, 0.3)), max_size=4),
        ),
        max_size=30,
    ),
)
def test_incidents_open_exactly_when_the_monitors_old_tracker_did(
    gap: float, ticks: list[tuple[float, list[tuple[tuple[str, ...], float]]]]
) -> None:
    """Each tick: expire at the tick's time, then hits at that time or earlier (an
    event's stamp is at most the tick's time)."""
    incidents, reference = Incidents(MonitorSettings(episode_gap=gap)), _GapEpisodes(gap)
    now = 10.0
    for tick, (step, hits) in enumerate(ticks):
        now += step
        incidents.expire(tick=tick, time=now)
        reference.close_old(now)
        for key, earlier in hits:
            opened = incidents.opens(key, tick=tick, time=now - earlier)
            assert opened == reference.hit(key, now - earlier)
        assert incidents.estop == any(k[0] == "stop" for k in reference._last)


def test_a_bad_reading_is_alarmed_once_per_episode() -> None:
    incidents = Incidents(MonitorSettings(episode_gap=1.0))
    out = Outbox("monitor")
    for tick in range(3):
        incidents.expire(tick=tick, time=10.0 + tick * 0.5)
        incidents.bad(out, "pose", "pose must hold 3 finite numbers", tick=tick, time=10 + tick)
    incidents.expire(tick=9, time=13.1)
    incidents.bad(out, "pose", "again", tick=9, time=13.1)
    assert [(e.kind, e.data["kind"], e.data["key"], e.data["error"]) for e in out.events] == [
        ("alarm", "bad_reading", "pose", "pose must hold 3 finite numbers"),
        ("alarm", "bad_reading", "pose", "again"),
    ]
    assert not incidents.estop


def test_the_emergency_stop_lasts_while_a_stop_episode_is_open() -> None:
    incidents = Incidents(MonitorSettings(episode_gap=1.0))
    assert incidents.opens(("stop", "obstacle", "p1"), tick=0, time=10.0)
    assert incidents.opens(("battery",), tick=0, time=10.0)
    assert incidents.estop
    incidents.expire(tick=20, time=11.0)
    assert incidents.estop  # quiet for exactly the gap: still the same episode
    incidents.expire(tick=21, time=11.05)
    assert not incidents.estop
