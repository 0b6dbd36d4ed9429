"""Episodes: one reaction per stretch of trouble, not one per tick.

A required item that goes missing stays missing for many ticks; a stop condition holds
tick after tick; a cabin reports it once, when the *episode* starts, and again only when
a new one starts. What ends an episode is a policy, a small object chosen per use:

- ``UntilSeen()``: the first tick the condition does not hold ends it (an item that
  comes back for one tick and goes again starts a new episode);
- ``QuietTicks(n)``: it ends once the condition has not held for more than ``n`` ticks;
- ``QuietSeconds(s)``: it ends once the condition has not held for more than ``s``
  seconds (a stopped robot that creeps on is still in the same episode).

A policy may also say that a new reason starts a new episode (``new_reason=True``: an
item that was stale and is now hidden by a fault is reported again).

``Episodes`` keeps the open episodes by key. Each tick a cabin calls ``hit`` for every
condition that holds (True when that opens an episode: report it) and ``miss`` for one
that does not, or ``expire`` to end at once every episode its policy says is over (it
returns their keys, for a cabin that reports the end of an episode too).
``follow(missing, patterns, ...)`` does both for a view's missing items: the patterns
missing for a reason other than "absent" are hits, the rest misses, and it returns the
(pattern, reason) pairs that opened an episode, in the order of ``patterns``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from runtime.errors import SettingError

__all__ = [
    "EpisodePolicy",
    "Episodes",
    "QuietSeconds",
    "QuietTicks",
    "Sighting",
    "UntilSeen",
]

K = TypeVar("K", bound=Hashable)


class Sighting(NamedTuple):
    """When an episode's condition last held, and why (a tuple: made on every hit)."""

    tick: int
    time: float
    reason: str


class EpisodePolicy(Protocol):
    """What ends an episode, and whether a new reason opens a new one."""

    @property
    def new_reason(self) -> bool: ...

    def over(self, last: Sighting, tick: int, time: float) -> bool:
        """Whether an episode whose condition last held at ``last`` is over at (tick, time),
        the condition not holding now."""
        ...


@dataclass(frozen=True, slots=True)
class UntilSeen:
    """An episode ends on the first tick its condition does not hold."""

    new_reason: bool = False

    def over(self, last: Sighting, tick: int, time: float) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class QuietTicks:
    """An episode ends once its condition has not held for more than ``ticks`` ticks."""

    ticks: int
    new_reason: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.ticks, bool) or not isinstance(self.ticks, int) or self.ticks < 0:
            raise SettingError(f"ticks must be a whole number >= 0, got {self.ticks!r}")

    def over(self, last: Sighting, tick: int, time: float) -> bool:
        return tick - last.tick > self.ticks


@dataclass(frozen=True, slots=True)
class QuietSeconds:
    """An episode ends once its condition has not held for more than ``seconds``."""

    seconds: float
    new_reason: bool = False

    def __post_init__(self) -> None:
        seconds = self.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not (0 <= seconds < float("inf"))
        ):
            raise SettingError(f"seconds must be a finite number >= 0, got {seconds!r}")

    def over(self, last: Sighting, tick: int, time: float) -> bool:
        return time - last.time > self.seconds


class Episodes(Generic[K]):
    """The open episodes by key, under one policy (see the module docstring)."""

    __slots__ = ("_last", "policy")

    def __init__(self, policy: EpisodePolicy) -> None:
        self.policy = policy
        self._last: dict[K, Sighting] = {}

    def hit(
        self, key: K, *, tick: int, time: float, reason: str = "", end_if_over: bool = False
    ) -> bool:
        """``key``'s condition holds at (tick, time); True when this opens an episode.

        With ``end_if_over``, an episode the policy says is over at (tick, time) ends
        first, so this hit opens a new one: for hits that are not checked tick by tick
        (an event's stamp, seen some time after the last one)."""
        last = self._last.get(key)
        if end_if_over and last is not None and self.policy.over(last, tick, time):
            last = None
        self._last[key] = Sighting(
            tick if last is None else max(last.tick, tick),
            time if last is None else max(last.time, time),
            reason,
        )
        return last is None or (self.policy.new_reason and last.reason != reason)

    def miss(self, key: K, *, tick: int, time: float) -> None:
        """``key``'s condition does not hold at (tick, time): its episode ends if the
        policy says it is over."""
        last = self._last.get(key)
        if last is not None and self.policy.over(last, tick, time):
            del self._last[key]

    def expire(self, *, tick: int, time: float) -> tuple[K, ...]:
        """End every episode the policy says is over at (tick, time); their keys."""
        over = tuple(k for k, last in self._last.items() if self.policy.over(last, tick, time))
        for key in over:
            del self._last[key]
        return over

    def follow(
        self: Episodes[str],
        missing: Mapping[str, str],
        patterns: Iterable[str],
        *,
        tick: int,
        time: float,
    ) -> list[tuple[str, str]]:
        """Hit each of ``patterns`` missing for a reason other than "absent", miss the
        others; the (pattern, reason) pairs that opened an episode, in order."""
        opened: list[tuple[str, str]] = []
        for pattern in patterns:
            reason = missing.get(pattern)
            if reason is None or reason == "absent":
                self.miss(pattern, tick=tick, time=time)
            elif self.hit(pattern, tick=tick, time=time, reason=str(reason)):
                opened.append((pattern, str(reason)))
        return opened

    def __contains__(self, key: object) -> bool:
        return key in self._last

    def reason(self, key: K) -> str | None:
        """The reason of ``key``'s open episode, or None when none is open."""
        last = self._last.get(key)
        return None if last is None else last.reason

    @property
    def open(self) -> tuple[K, ...]:
        """The keys of the open episodes, in the order they opened."""
        return tuple(self._last)
