"""The delta path: a freeze that carries the last tick's work forward.

When working memory forgets by ``ValueEviction`` (the default), a freeze changes only
what changed since the last one (``Carried`` holds what it carries), in five stages
(``STAGES``): the board, read only where written since (the board's change feed),
whole again only when its key set changed; the event windows and notes, each stable
group offered anew only when its shape changed; the map, one query per centre key (a
smaller radius is a prefix of the nearest-first answer), combined again only when a
window or corridor gained or lost a feature; eviction, whose victims the
``CandidateTable`` chooses before anything is written; and the views, built from the
table without copying their items. A board key that names a map feature, an event or a
note sends the freeze to the from-scratch path; so does a clock that went back or a
change of memory's pinned patterns start the carried state afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from runtime.assembly.carried import Carried
from runtime.assembly.eviction import log_evictions
from runtime.assembly.freezing import capacity_losses, working_set
from runtime.freeze import adopt

if TYPE_CHECKING:
    from runtime.assembly.candidates import Group
    from runtime.assembly.events import EventWindows
    from runtime.assembly.maps import FirstOffered, Offered
    from runtime.assembly.sources import Sources
    from runtime.assembly.specs import CompiledSpecs
    from runtime.memory import Eviction, WorkingMemory
    from runtime.pack import Versions, WorkingSet

Laps = Callable[[str], None] | None

STAGES = ("board", "log", "map", "eviction", "freeze")
"""The stages of a freeze on the delta path, in order: the board's changes and readings,
the event windows and notes, the map windows and corridors, letting go and eviction, and
the views' selections with the frozen pack."""


class DeltaPath:
    """Freezes a working set from what changed since the last freeze."""

    def __init__(
        self,
        sources: Sources,
        compiled: CompiledSpecs,
        memory: WorkingMemory,
        events: EventWindows,
        first_offered: FirstOffered,
    ) -> None:
        self.sources = sources
        self.compiled = compiled
        self.memory = memory
        self.events = events
        self.first_offered = first_offered
        self.carried: Carried | None = None

    _derived = ("carried",)
    _state_types: ClassVar[dict[str, Any]] = {}  # its parts check theirs; nothing plain
    """A checkpoint holds none of what the path carries: a resumed one starts afresh."""

    def stop(self) -> None:
        """Drop what the path carries (the from-scratch path freezes next)."""
        self.carried = None

    def freeze(self, tick: int, now: float, laps: Laps) -> WorkingSet | None:
        """The working set of ``tick``, or None when the from-scratch path must freeze it;
        ``laps`` is called with each stage's name as the stage ends."""
        versions = self.sources.versions()
        self.sources.end_finished_tasks(tick)
        carried = self._carry_to(now)
        board = self._board(carried, now)
        if board is None:
            return None
        changed, stale = board
        offered: list[Group] = []
        if (carried.key_set_version, stale) != carried.board_shape:
            carried.board_shape = (carried.key_set_version, stale)
            carried.offer_board(stale)
            offered.append("board")
        elif changed:
            for key in changed:
                reading = carried.readings[key]
                carried.table.refresh(key, reading.value, reading.stamp, reading.seq)
        if laps is not None:
            laps("board")
        offered += self._offer_log(carried, now)
        if offered:
            carried.match_requirements(offered)
        if laps is not None:
            laps("log")
        near, along = self._offer_map(carried, now, versions)
        if laps is not None:
            laps("map")
        evictions, victims = self._evict(carried, tick, now)
        if laps is not None:
            laps("eviction")
        ws = self._freeze(carried, tick, now, versions, evictions, near, along, victims, stale)
        if laps is not None:
            laps("freeze")
        return ws

    def _carry_to(self, now: float) -> Carried:
        """What the path carries, made afresh on the first freeze, when the clock went
        back, or when memory's pinned patterns changed; moved on to ``now``."""
        carried = self.carried
        memory = self.memory
        if (
            carried is None
            or now < carried.table.now
            or memory.pinned is not carried.table.pinned_patterns
        ):
            carried = self.carried = Carried(
                self.sources, self.compiled, memory, self.first_offered
            )
        carried.table.advance(now)
        return carried

    def _board(self, carried: Carried, now: float) -> tuple[list[str], frozenset[str]] | None:
        """The selected board keys written since the last freeze and the stale ones; None
        when a selected key has the form of a map, event or note key."""
        changed = carried.catch_up()
        if changed is None:
            if not carried.expand():
                return None
            changed = []
        carried.board_seq = self.sources.board.seq
        readings = carried.readings
        stale = frozenset(
            k
            for k in carried.ttl_keys
            if now - readings[k].stamp > readings[k].ttl  # type: ignore[operator]
        )
        return changed, stale

    def _offer_log(self, carried: Carried, now: float) -> list[Group]:
        """Offer the event windows and the notes anew where they changed; the groups
        offered."""
        offered: list[Group] = []
        windows = tuple(
            self.events.recent(spec, now) if spec.event_window > 0 else ()
            for spec in self.compiled.by_name.values()
        )
        seen = carried.windows_seen  # compared by identity: an event's data may hold arrays
        if len(seen) != len(windows) or any(a is not b for a, b in zip(seen, windows, strict=True)):
            carried.windows_seen = windows
            carried.offer_events(windows)
            offered.append("log")
        pads = self.sources.scratchpads
        if pads:
            shape = tuple((pad.version, pad.task) for pad in pads.values())
            if shape != carried.pads_shape:
                carried.pads_shape = shape
                carried.offer_notes()
                offered.append("note")
        return offered

    def _offer_map(
        self, carried: Carried, now: float, versions: Versions
    ) -> tuple[dict[str, Offered], dict[str, Offered]]:
        """Offer each spec's map window and corridor; them, as offered."""
        near, along = carried.maps.offers(now, self.memory.capacity)
        cabin_map = self.sources.cabin_map
        changed_features = (
            cabin_map.changed_since(carried.map_version) if carried.map_version >= 0 else []
        )
        carried.map_version = versions.map_version
        carried.table.offer_map(
            near,
            along,
            self.compiled.weighers,
            self.compiled.map_vias,
            cabin_map.revisions(),
            changed_features,
            cabin_map.get,
        )
        return near, along

    def _evict(self, carried: Carried, tick: int, now: float) -> tuple[list[Eviction], set[str]]:
        """Let go of what no spec offered and settle memory: the evictions, and the keys
        of the candidates that lost for capacity."""
        retraction = self.sources.retraction
        evictions = carried.table.let_go(tick, lambda item: retraction(item, now))
        capacity, victims = carried.table.settle(tick)
        evictions.extend(capacity)
        if evictions and carried.debug():
            log_evictions(tick, evictions)
        return evictions, victims

    def _freeze(
        self,
        carried: Carried,
        tick: int,
        now: float,
        versions: Versions,
        evictions: list[Eviction],
        near: dict[str, Offered],
        along: dict[str, Offered],
        victims: set[str],
        stale: frozenset[str],
    ) -> WorkingSet:
        """Each spec's selection and the frozen pack."""
        memory = self.memory
        held = memory.contents()
        requires = self.compiled.requires
        losses = capacity_losses(evictions) if victims else {}
        selections = {
            name: carried.views.select(
                name,
                held,
                near[name],
                along[name],
                victims,
                losses,
                stale,
                carried.requirements[name],
                carried.windows[name],
                requires[name],
            )
            for name in self.compiled.names
        }
        return working_set(tick, now, versions, adopt(held), evictions, memory, selections)
