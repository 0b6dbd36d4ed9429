"""What the delta path carries from one freeze to the next, and how a freeze updates it.

The ``CandidateTable`` (the candidates, their ranks, what memory holds); the board as the
specs select it (each spec's keys and vias, their last readings, which can go stale),
caught up from the board's change feed and read again whole only when its key set
changed; the event windows and pads last offered and each spec's event offers by seq;
each required pattern's matches among the stable view keys; the map offers' state
(``MapOffers``) and the views' (``DeltaViews``). A stable group (board readings, events,
notes) is offered to the table anew only when its shape changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from runtime.assembly.candidates import CandidateTable, Group
from runtime.assembly.eviction import DebugSwitch
from runtime.assembly.maps import MapOffers
from runtime.assembly.specs import goal_kinds
from runtime.assembly.views import DeltaViews, Requirement
from runtime.scratchpad import NOTE_PREFIX, memory_key

if TYPE_CHECKING:
    from runtime.assembly.maps import FirstOffered
    from runtime.assembly.sources import Sources
    from runtime.assembly.specs import CompiledSpecs
    from runtime.board import Reading
    from runtime.log import Event
    from runtime.memory import WorkingMemory

_GROUP_PREFIX: dict[Group, str] = {"log": "event:", "note": NOTE_PREFIX}
"""What every view key of a stable group starts with (the board's keys: anything)."""


class Carried:
    """The delta path's state between freezes (see the module doc)."""

    def __init__(
        self,
        sources: Sources,
        compiled: CompiledSpecs,
        memory: WorkingMemory,
        first_offered: FirstOffered,
    ) -> None:
        self.sources = sources
        self.compiled = compiled
        self.table = CandidateTable(compiled.names, memory, first_offered)
        self.maps = MapOffers(sources, compiled)
        self.views = DeltaViews(self.table)
        self.debug = DebugSwitch()
        self.map_version = -1  # the map version last caught up with
        self.board_seq = -1  # the board seq last caught up with; -1 reads everything
        self.key_set_version = -1
        self.selected: set[str] = set()  # board keys some spec selects
        self.readings: dict[str, Reading] = {}
        self.ttl_keys: set[str] = set()  # those of them whose reading can go stale
        self.board_pairs: dict[str, list[tuple[str, str]]] = {}  # per spec: (key, via)
        self.board_shape: tuple[Any, ...] | None = None
        self.pads_shape: tuple[Any, ...] | None = None
        self.windows_seen: tuple[tuple[Event, ...], ...] = ()
        self.windows: dict[str, tuple[tuple[Event, ...], list[str]]] = {}
        self.event_offers: dict[str, dict[int, tuple[Any, ...]]] = {}  # per spec, by seq
        self.requirements: dict[str, tuple[Requirement, ...]] = {}
        self.matches: dict[Group, dict[str, list[tuple[str, ...]]]] = {
            "board": {},
            "log": {},
            "note": {},
        }

    # -- the board ------------------------------------------------------------------------

    def catch_up(self) -> list[str] | None:
        """The selected board keys written since the last freeze, their readings taken; or
        None when the board's key set must be read again (``expand``)."""
        board = self.sources.board
        changes = board.changes_since(self.board_seq)
        if changes is None or board.key_set_version != self.key_set_version:
            return None
        changed: list[str] = []
        selected, readings, ttl_keys = self.selected, self.readings, self.ttl_keys
        for key in changes:
            if key in selected:
                reading = board.read(key)
                if reading is None:  # deleted and written again: the key set changed
                    continue
                readings[key] = reading
                if reading.ttl is None:
                    ttl_keys.discard(key)
                else:
                    ttl_keys.add(key)
                changed.append(key)
        return changed

    def expand(self) -> bool:
        """Read the board's key set again: each spec's keys, their readings, the active
        goals. False when a selected board key has the form of a map, event or note key
        (the from-scratch path combines those)."""
        sources, board = self.sources, self.sources.board
        pairs: dict[str, list[tuple[str, str]]] = {}
        selected: set[str] = set()
        for name in self.compiled.by_name:
            mine: dict[str, str] = {}
            for pattern, via in self.compiled.vias[name].board:
                for key in sources.board_keys(pattern):
                    if key not in mine:
                        mine[key] = via
            pairs[name] = list(mine.items())
            selected.update(mine)
        if any(k.startswith(("map:", "event:", NOTE_PREFIX)) for k in selected):
            return False
        readings: dict[str, Reading] = {}
        for key in selected:
            reading = board.read(key)
            if reading is not None:
                readings[key] = reading
        self.board_pairs = pairs
        self.selected = selected
        self.readings = readings
        self.ttl_keys = {k for k, r in readings.items() if r.ttl is not None}
        self.maps.expand(goal_kinds(sources.board_keys("goal:*")))
        self.key_set_version = board.key_set_version
        self.board_shape = None
        return True

    # -- the stable offers ----------------------------------------------------------------

    def offer_board(self, stale: frozenset[str]) -> None:
        """Offer every spec's fresh board readings to the table anew."""
        readings = self.readings
        offers: dict[str, list[tuple[Any, ...]]] = {}
        for name in self.compiled.names:
            weight = self.compiled.weighers[name]
            offers[name] = [
                (key, via, weight(key), r.value, r.stamp, r.seq)
                for key, via in self.board_pairs[name]
                if key not in stale and (r := readings.get(key)) is not None
            ]
        self.table.offer("board", offers)

    def offer_events(self, windows: tuple[tuple[Event, ...], ...]) -> None:
        """Offer every spec's event window to the table anew."""
        offers: dict[str, list[tuple[Any, ...]]] = {}
        for name, found in zip(self.compiled.names, windows, strict=True):
            weight = self.compiled.weighers[name]
            via = self.compiled.vias[name].log
            last = self.event_offers.get(name, {})
            mine = []
            for e in found:
                offer = last.get(e.seq)
                if offer is None or offer[3] is not e:  # not the event offered last time
                    key = e.key
                    offer = (key, via, weight(key), e, e.stamp, e.seq)
                mine.append(offer)
            self.event_offers[name] = {offer[5]: offer for offer in mine}
            self.windows[name] = (found, [offer[0] for offer in mine])
            offers[name] = mine
        self.table.offer("log", offers)

    def offer_notes(self) -> None:
        """Offer every spec's notes to the table anew."""
        offers: dict[str, list[tuple[Any, ...]]] = {}
        for name in self.compiled.names:
            weight = self.compiled.weighers[name]
            pad = self.sources.scratchpads.get(name)
            mine: list[tuple[Any, ...]] = []
            if pad is not None:
                for note in pad.notes():
                    view = NOTE_PREFIX + note.key
                    mine.append((memory_key(name, view), view, weight(view), note, note.seq))
            offers[name] = mine
        self.table.offer("note", offers)

    def match_requirements(self, groups: Sequence[Group]) -> None:
        """Each required pattern of each spec: its glob matcher (None for an exact key), the
        stable view keys it matches, and whether it could match a map key; the matches are
        found again only in the groups offered anew."""
        table, required = self.table, self.compiled.required
        for group in groups:
            part: dict[str, list[tuple[str, ...]]] = {}
            every = _GROUP_PREFIX.get(group, "")  # what every view key of the group starts with
            for name in self.compiled.names:
                keys = table.view_keys(group, name)
                part[name] = [
                    tuple(k for k in keys if rx(k))
                    if rx is not None and (every.startswith(prefix) or prefix.startswith(every))
                    else ()
                    for _, rx, prefix in required[name]
                ]
            self.matches[group] = part
        board, log, notes = self.matches["board"], self.matches["log"], self.matches["note"]
        for name in self.compiled.names:
            out: list[Requirement] = []
            for i, (pattern, rx, prefix) in enumerate(required[name]):
                known = board[name][i] + log[name][i] + (notes[name][i] if name in notes else ())
                maps = rx is not None and ("map:".startswith(prefix) or prefix.startswith("map:"))
                out.append((pattern, rx, known, maps))
            self.requirements[name] = tuple(out)
