"""The sources a freeze reads: the board, the map, the event log and the cabins' pads.

A freeze holds every lock they use (each distinct lock once, in a fixed order). Both
paths ask the board for the keys matching a pattern, which are looked up once while the
board's key set stays the same; clear the pads whose task's goal key left the board
before their notes are read; and, when working memory holds an item no spec offered,
ask why its source no longer backs it (``retraction``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from runtime.errors import SettingError
from runtime.freeze import FrozenDict
from runtime.pack import Versions
from runtime.scratchpad import NOTE_PREFIX, Scratchpad

if TYPE_CHECKING:
    from runtime.board import StateBoard
    from runtime.cabin_map import CabinMap
    from runtime.log import EventLog
    from runtime.memory import EvictionReason, WorkItem
    from runtime.spec import ContextSpec


class Sources:
    """The board, map, log and scratchpads of one assembler, and their locks; ``specs``
    (the assembler's, by cabin name) say which cabins may have a pad."""

    def __init__(
        self,
        board: StateBoard,
        cabin_map: CabinMap,
        log: EventLog,
        scratchpads: Mapping[str, Scratchpad],
        *,
        specs: Mapping[str, ContextSpec],
    ) -> None:
        pads = dict(scratchpads)
        unknown = sorted(set(pads) - set(specs))
        if unknown:
            raise SettingError(
                f"scratchpads for cabin(s) {', '.join(unknown)} that have no spec "
                f"(specs: {', '.join(sorted(specs)) or 'none'})"
            )
        for name, pad in pads.items():
            if not isinstance(pad, Scratchpad):
                raise TypeError(
                    f"the scratchpad of cabin {name!r} must be a Scratchpad, "
                    f"got {type(pad).__name__}"
                )
        shared = sorted(n for n, p in pads.items() if sum(q is p for q in pads.values()) > 1)
        if shared:
            raise SettingError(
                f"cabins {', '.join(shared)} share one Scratchpad; give each cabin its own"
            )
        self.board = board
        self.cabin_map = cabin_map
        self.log = log
        self.scratchpads: FrozenDict[str, Scratchpad] = FrozenDict(pads)
        locks: list[threading.RLock] = []
        for lock in (board.lock, cabin_map.lock, log.lock, *(p.lock for p in pads.values())):
            if all(lock is not held for held in locks):
                locks.append(lock)
        self.locks = tuple(locks)
        self._keys_of: dict[str, tuple[str, ...]] = {}  # pattern -> board keys, while
        self._keys_version = -1  # the board's key set is unchanged

    _derived = ("_keys_of", "_keys_version")
    _state_types: ClassVar[dict[str, Any]] = {}  # its parts check theirs; nothing plain
    """Rebuilt from the board: a checkpoint holds no answers."""

    def versions(self) -> Versions:
        """The sources' versions now: the board's seq, the map's version, the log's seq."""
        return Versions(self.board.seq, self.cabin_map.version, self.log.seq)

    def board_keys(self, pattern: str) -> tuple[str, ...]:
        """The board's keys matching ``pattern``."""
        if self._keys_version != self.board.key_set_version:
            self._keys_of.clear()
            self._keys_version = self.board.key_set_version
        keys = self._keys_of.get(pattern)
        if keys is None:
            keys = self._keys_of[pattern] = self.board.keys(pattern)
        return keys

    def end_finished_tasks(self, tick: int) -> None:
        """Clear (and unscope) every pad whose task's goal key has left the board."""
        for pad in self.scratchpads.values():
            task = pad.task
            if task is not None and self.board.read(task) is None:
                pad.end_task(tick=tick)

    def retraction(self, item: WorkItem, now: float) -> EvictionReason | None:
        """Why ``item``'s source no longer backs it (``retracted``, ``stale``), or None."""
        if item.source == "board":
            reading = self.board.read(item.key)
            if reading is None:
                return "retracted"
            return "stale" if reading.is_stale(now) else None
        if item.source == "map":
            return "retracted" if self.cabin_map.get(item.key[4:]) is None else None
        if item.source == "note":
            cabin, _, note_key = item.key[len(NOTE_PREFIX) :].partition("/")
            pad = self.scratchpads.get(cabin)
            return "retracted" if pad is None or note_key not in pad else None
        return None
