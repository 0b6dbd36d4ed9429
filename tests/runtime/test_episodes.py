"""Episodes of trouble: one report per episode, ended by the policy chosen."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.episodes import Episodes, QuietSeconds, QuietTicks, UntilSeen
from runtime.errors import SettingError


def _run(episodes: Episodes[str], holds: list[str | None]) -> list[int]:
    """The ticks at which an episode opened, for one key whose condition holds (with a
    reason) or not (None) tick by tick, at 20 Hz."""
    opened = []
    for tick, reason in enumerate(holds):
        time = tick * 0.05
        if reason is None:
            episodes.miss("k", tick=tick, time=time)
        elif episodes.hit("k", tick=tick, time=time, reason=reason):
            opened.append(tick)
    return opened


def test_until_seen_ends_on_the_first_tick_the_condition_does_not_hold() -> None:
    holds = ["stale", "stale", None, "stale", "fault", "fault"]
    assert _run(Episodes(UntilSeen()), holds) == [0, 3]
    assert _run(Episodes(UntilSeen(new_reason=True)), holds) == [0, 3, 4]


def test_quiet_ticks_bridge_short_gaps() -> None:
    holds = ["fault", *([None] * 2), "fault", *([None] * 3), "fault"]
    assert _run(Episodes(QuietTicks(2)), holds) == [0, 7]
    assert _run(Episodes(QuietTicks(3)), holds) == [0]


def test_quiet_seconds_expire_by_time() -> None:
    episodes: Episodes[str] = Episodes(QuietSeconds(1.0))
    assert episodes.hit("stop", tick=0, time=0.0)
    episodes.expire(tick=10, time=0.5)
    assert not episodes.hit("stop", tick=10, time=0.5)  # within the gap: the same episode
    episodes.expire(tick=40, time=2.0)
    assert "stop" not in episodes
    assert episodes.hit("stop", tick=40, time=2.0)
    assert episodes.open == ("stop",)


def test_follow_reports_missing_items_other_than_absent_in_pattern_order() -> None:
    episodes: Episodes[str] = Episodes(UntilSeen())
    missing = {"pose": "stale", "route": "absent", "goal:*": "fault"}
    patterns = ["goal:*", "route", "pose"]
    assert episodes.follow(missing, patterns, tick=0, time=0.0) == [
        ("goal:*", "fault"),
        ("pose", "stale"),
    ]
    assert episodes.follow(missing, patterns, tick=1, time=0.05) == []
    assert episodes.reason("pose") == "stale"
    assert episodes.follow({}, patterns, tick=2, time=0.1) == []
    assert episodes.open == ()


@pytest.mark.parametrize(
    "make", [lambda: QuietTicks(-1), lambda: QuietTicks(True), lambda: QuietSeconds(float("nan"))]
)
def test_bad_policies_are_refused(make: object) -> None:
    with pytest.raises(SettingError):
        make()  # type: ignore[operator]


@given(
    holds=st.lists(st.one_of(st.none(), st.sampled_from(["stale", "fault"])), max_size=60),
    quiet=st.integers(min_value=0, max_value=5),
)
def test_an_episode_opens_only_after_a_quiet_stretch_longer_than_the_policy(
    holds: list[str | None], quiet: int
) -> None:
    opened = _run(Episodes(QuietTicks(quiet)), holds)
    seen = [t for t, r in enumerate(holds) if r is not None]
    expected = [t for i, t in enumerate(seen) if i == 0 or t - seen[i - 1] - 1 > quiet]
    assert opened == expected
    # UntilSeen is QuietTicks(0): any tick without the condition ends the episode
    assert _run(Episodes(UntilSeen()), holds) == _run(Episodes(QuietTicks(0)), holds)


def test_a_late_hit_can_end_an_episode_that_is_over_at_its_own_time() -> None:
    episodes: Episodes[str] = Episodes(QuietSeconds(1.0))
    assert episodes.hit("alarm", tick=0, time=0.0)
    assert not episodes.hit("alarm", tick=50, time=2.5)  # no expire ran: still open
    assert episodes.hit("alarm", tick=100, time=5.0, end_if_over=True)  # over at 5.0
    assert not episodes.hit("alarm", tick=101, time=5.05, end_if_over=True)
    assert episodes.expire(tick=200, time=9.0) == ("alarm",)
    assert episodes.expire(tick=201, time=9.05) == ()
