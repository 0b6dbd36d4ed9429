"""What each cabin did: the counts a run's summary shows for every cabin, a user's too.

The tick loop counts, per cabin, what it applied of its outboxes (commands handed to what
the runtime drives, events logged, reactions, board writes and deletes), what it refused
of them (``runtime.writes``: writes, deletes and events outside the cabin's declared
``[writes]``) and the failures that dropped an outbox. ``ActivityTally`` keeps the counts
(plain data, so a checkpoint holds them); ``TickStats.cabins`` gives them as one
``CabinActivity`` per cabin, in the loop's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from runtime.freeze import FrozenDict

__all__ = ["NO_ACTIVITY", "ActivityTally", "CabinActivity"]


@dataclass(frozen=True, slots=True)
class CabinActivity:
    """One cabin's counts so far."""

    commands: int = 0
    events: int = 0
    """Events logged (refused ones not counted)."""
    reactions: int = 0
    writes: int = 0
    """Board writes applied."""
    deletes: int = 0
    """Board deletes applied that removed a key."""
    writes_refused: int = 0
    """Writes, deletes and events refused (outside the spec's ``[writes]``)."""
    failures: int = 0
    """Outboxes dropped: the cabin raised, or its outbox could not be applied."""

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_NAMES = tuple(f.name for f in fields(CabinActivity))

NO_ACTIVITY: FrozenDict[str, CabinActivity] = FrozenDict()
"""No cabin's counts (the default of ``TickStats.cabins``)."""


class ActivityTally:
    """The counts of every cabin (see the module docstring); a cabin not named at the start
    is counted from its first activity on."""

    _state_types: ClassVar[dict[str, Any]] = {"counts": Mapping[str, Mapping[str, int]]}

    def __init__(self, cabins: Iterable[str] = ()) -> None:
        self.counts: dict[str, dict[str, int]] = {name: dict.fromkeys(_NAMES, 0) for name in cabins}

    def _of(self, cabin: str) -> dict[str, int]:
        mine = self.counts.get(cabin)
        if mine is None:
            mine = self.counts[cabin] = dict.fromkeys(_NAMES, 0)
        return mine

    def add(self, cabin: str, **counts: int) -> None:
        """Add ``counts`` (names of ``CabinActivity``'s fields) to ``cabin``'s."""
        mine = self._of(cabin)
        for name, n in counts.items():
            mine[name] += n

    def snapshot(self) -> FrozenDict[str, CabinActivity]:
        """Every cabin's counts so far."""
        return FrozenDict(
            {
                name: CabinActivity(**{k: counts.get(k, 0) for k in _NAMES})
                for name, counts in self.counts.items()
            }
        )
