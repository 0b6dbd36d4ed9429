"""Reactions to the monitor's conditions: reported when they start, a stop while the
condition holds, a slow-down until lifted, lifted after ``clear_after`` clear seconds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cabins.monitor import CONDITIONS, MonitorSettings
from cabins.monitor.reactions import Reactions
from runtime import ContextSpec
from runtime.cabin import Outbox
from runtime.errors import SettingError

CONTACT = {"with": "shelf:s", "gap": 0.2, "speed": 1.0, "stopping": 0.5}
GROWING = {"deviation": 0.6, "grown": 0.1}


def run(
    reactions: Reactions,
    ticks: Sequence[tuple[float, dict[str, Any] | None, dict[str, Any] | None]],
) -> list[tuple[list[str], list[str], list[str], tuple[float, str] | None]]:
    """Each tick (now, growing, contact): (reactions, lifted, stops, slow-down)."""
    seen = []
    for now, growing, contact in ticks:
        out, stops = Outbox("monitor"), list[str]()
        held = {"deviation_growing": growing, "contact_predicted": contact}
        slow = reactions.react(now, out, held, stops)
        lifted = [e.data["condition"] for e in out.events if e.kind == "reaction_lifted"]
        seen.append(([r.reaction for r in out.reactions], lifted, stops, slow))
    return seen


def test_a_protective_stop_holds_while_the_contact_does_and_is_lifted_when_clear() -> None:
    reactions = Reactions(MonitorSettings(clear_after=0.5), ContextSpec(name="m"))
    ticks = [(1.0, None, CONTACT), (1.05, None, CONTACT), (1.1, None, None), (1.6, None, None)]
    assert run(reactions, ticks) == [
        (["stop:protective"], [], ["protective"], None),
        ([], [], ["protective"], None),
        ([], [], [], None),
        ([], ["contact_predicted"], [], None),
    ]
    assert reactions.reacting == ()


def test_a_slow_down_lasts_until_lifted_capped_by_the_predicted_gap() -> None:
    spec = ContextSpec(name="m", on_condition={"contact_predicted": "slow:contact"})
    reactions = Reactions(MonitorSettings(slow_speed=0.5, clear_after=0.5), spec)
    ticks = [(1.0, GROWING, CONTACT), (1.2, GROWING, None), (1.4, None, None), (1.75, None, None)]
    assert run(reactions, ticks) == [
        (["slow:deviation", "slow:contact"], [], [], (0.2, "contact")),
        ([], [], [], (0.5, "deviation")),
        ([], [], [], (0.5, "deviation")),
        ([], ["deviation_growing", "contact_predicted"], [], None),
    ]


def test_the_spec_chooses_among_what_the_monitor_can_do() -> None:
    spec = ContextSpec(name="m", on_condition={"deviation_growing": "stop:protective"})
    assert Reactions(MonitorSettings(), spec).chosen == {
        "deviation_growing": "stop:protective",
        "contact_predicted": CONDITIONS["contact_predicted"][0],
    }
    with pytest.raises(SettingError, match="'slow:x'"):
        Reactions(
            MonitorSettings(), ContextSpec(name="m", on_condition={"deviation_growing": "slow:x"})
        )
