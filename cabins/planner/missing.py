"""The planner's missing items: one reaction per episode of missingness.

A required item that goes missing (for a reason other than "absent") is reported once,
on the tick it goes missing, with the reaction ``REACTIONS`` names for it; it is
reported again only after it came back and went missing again (``UntilSeen``). A
missing ``constraint:*`` also raises an alarm that says how many speed zones the
planner still knows. What the planner does meanwhile (hold, idle, route round the
zones it knows) is the route's business, not this one's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cabins.planner.seen import Seen
from runtime.cabin import Outbox
from runtime.episodes import Episodes, UntilSeen

__all__ = ["REACTIONS", "MissingItems"]

REACTIONS: Final[Mapping[str, str]] = {
    "goal:*": "idle:no_goal",
    "pose": "hold:no_plan",
    "constraint:*": "alarm:constraint_check",
    "safety:*": "hold:no_plan",
}
"""Required pattern -> the reaction the planner reports when it goes missing (not absent)."""


class MissingItems:
    """Reports each episode of a missing required item once (see the module docstring)."""

    def __init__(self) -> None:
        self._episodes: Episodes[str] = Episodes(UntilSeen())

    def react(self, seen: Seen, known_zones: int, out: Outbox) -> None:
        """Report the items that went missing this tick; ``known_zones`` is how many
        speed zones the planner knows, for the alarm of a missing ``constraint:*``."""
        opened = self._episodes.follow(seen.missing, REACTIONS, tick=seen.tick, time=seen.time)
        for pattern, reason in opened:
            out.react(pattern, REACTIONS[pattern], reason=reason)
            if pattern == "constraint:*":
                out.emit(
                    "alarm",
                    {
                        "kind": "constraint_check",
                        "level": "alarm",
                        "pattern": pattern,
                        "reason": reason,
                        "known_zones": known_zones,
                    },
                    tags=("alarm",),
                )
