"""The executor's reactions to missing items: what it can do, what it does, and when it
reports it.

``REACTIONS`` lists, per required pattern, what the executor can do when the item is
missing for a reason other than ``absent``: the first by default, or another the spec's
``[on_missing]`` picks (holding is always one of them). A spec that picks a reaction
the executor cannot carry out is refused (``ContextSpec.reactions_in_force``). Each
reaction is reported once per episode: an episode ends after ``EPISODE_QUIET_TICKS``
ticks without the item missing, and a new reason starts a new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cabins.executor.retry import FAILURE_PATTERN
from cabins.executor.zones import ZONE_PATTERN
from runtime.cabin import Outbox
from runtime.episodes import Episodes, QuietTicks
from runtime.spec import ContextSpec

__all__ = ["EPISODE_QUIET_TICKS", "HOLD", "REACTIONS", "MissingItems"]

HOLD: Final = "stop:hold"
"""The reaction that holds the robot where it is (``drive(v=0, w=0)``)."""

SLOW_BLIND: Final = "slow:speed_limits_unknown"
"""The reaction that caps the speed everywhere while the speed limits are hidden."""

REACTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "pose": (HOLD,),
    "velocity": (HOLD,),
    "plan": (HOLD,),
    "route": (HOLD,),
    ZONE_PATTERN: (SLOW_BLIND, HOLD),
    FAILURE_PATTERN: ("retry:conservative", HOLD),
}
"""Required pattern -> what the executor can do when it is missing (not merely absent): the
first unless the spec's ``[on_missing]`` picks another. Holding is always one of them."""

EPISODE_QUIET_TICKS: Final = 20
"""Ticks an item must stay visible (or merely absent) before a new episode is reported."""


class MissingItems:
    """The reactions in force for ``spec`` and their open episodes (see the module
    docstring)."""

    __slots__ = ("_episodes", "reactions")

    def __init__(self, spec: ContextSpec) -> None:
        self.reactions: Mapping[str, str] = spec.reactions_in_force(
            "on_missing", REACTIONS, cabin="executor"
        )
        """Required pattern -> the reaction in force: the spec's choice, else the default."""
        self._episodes: Episodes[str] = Episodes(QuietTicks(EPISODE_QUIET_TICKS, new_reason=True))

    @property
    def slow_when_blind(self) -> bool:
        """Whether hidden speed limits cap the speed (rather than hold the robot)."""
        return self.reactions[ZONE_PATTERN] == SLOW_BLIND

    def report(self, missing: Mapping[str, str], tick: int, time: float, out: Outbox) -> None:
        """React to each item that went missing in a new episode this tick."""
        opened = self._episodes.follow(missing, self.reactions, tick=tick, time=time)
        for pattern, reason in opened:
            out.react(pattern, self.reactions[pattern], reason=reason, tick=tick)

    def hold(self, missing: Mapping[str, str]) -> bool:
        """Whether an item the spec says to hold for is missing (for a reason but absence)."""
        return any(
            reaction == HOLD and missing.get(pattern) not in (None, "absent")
            for pattern, reaction in self.reactions.items()
        )
