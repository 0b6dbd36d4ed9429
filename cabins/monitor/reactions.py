"""Reactions to the monitor's conditions (``deviation_growing``, ``contact_predicted``).

Each condition has the reaction its spec's ``[on_condition]`` declares, or the default
(``CONDITIONS``): a protective stop (``stop:protective``) or a slow-down (``slow:*``, a
speed cap of ``slow_speed``, no higher than the predicted gap for a contact). The reaction
is reported (a ``reaction``) when the condition starts and a ``reaction_lifted`` event when
it has stayed clear for ``clear_after`` seconds; a stop is commanded on the ticks the
condition holds, a slow-down until it is lifted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cabins.monitor.names import CONDITIONS, PROTECTIVE, STOP_TAGS
from cabins.monitor.settings import MonitorSettings
from runtime.cabin import Outbox
from runtime.spec import ContextSpec

__all__ = ["Reactions"]


class Reactions:
    """The reactions in force, by condition (see the module docstring)."""

    def __init__(self, settings: MonitorSettings, spec: ContextSpec) -> None:
        self.chosen: Mapping[str, str] = spec.reactions_in_force(
            "on_condition", CONDITIONS, cabin="monitor"
        )
        """Condition -> the reaction in force: the spec's choice, else the default."""
        self._settings = settings
        self._reacting: dict[str, tuple[float, float]] = {}  # condition -> (since, last held)

    @property
    def reacting(self) -> tuple[str, ...]:
        """The conditions whose reaction is in force now."""
        return tuple(sorted(self._reacting))

    def react(
        self,
        now: float,
        out: Outbox,
        held: Mapping[str, dict[str, Any] | None],
        stops: list[str],
    ) -> tuple[float, str] | None:
        """Start, keep or lift each condition's reaction (``held``: condition -> what holds,
        or None); add a protective stop to ``stops``; the slow-down in force, if any, as
        (speed cap, reason)."""
        slow: tuple[float, str] | None = None
        for condition, detail in held.items():
            reaction = self.chosen[condition]
            active = self._reacting.get(condition)
            if detail is not None:
                if active is None:
                    out.react(condition, reaction, condition=condition, **detail)
                    active = (now, now)
                self._reacting[condition] = (active[0], now)
            elif active is not None and now - active[1] >= self._settings.clear_after:
                del self._reacting[condition]
                out.emit(
                    "reaction_lifted",
                    {
                        "condition": condition,
                        "reaction": reaction,
                        "since": active[0],
                        "lasted": round(now - active[0], 3),
                    },
                    tags=STOP_TAGS,
                )
                continue
            if condition not in self._reacting:
                continue
            if reaction == PROTECTIVE:
                if detail is not None:
                    stops.append("protective")
            else:
                cap = self._settings.slow_speed
                if condition == "contact_predicted" and detail is not None:
                    cap = min(cap, max(0.0, float(detail["gap"])))
                if slow is None or cap < slow[0]:
                    slow = (cap, reaction.partition(":")[2])
        return slow
