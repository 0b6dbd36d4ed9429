"""The assembler: freezes one working set per tick from the board, the map and the log.

Under the sources' lock, for the union of all cabin specs, it reads board keys
(stale readings skipped), the map window around each spec's centre and the
corridor along its route, and the event window; upserts what it read into
working memory; lets memory evict down to capacity; and freezes the result,
with each spec's selection and what each spec required but cannot have.
Queries that several specs share are made once per tick.

An item's ``last_used`` is when its source last refreshed it: a reading's or an event's
stamp (never later than the freeze), the freeze time for a note, and for a map feature
the freeze time at which some spec's window or corridor first offered its current
revision (``CabinMap.revision``, the item's ``seq``). A feature keeps that time while it
is offered at every freeze and not replaced; one replaced, or one that left every window
and came back, is fresh at the freeze that offers it. Both paths keep those times from
freeze to freeze in the one ``FirstOffered`` they are handed (``runtime.assembly.maps``),
which a checkpoint holds, so a map that never changes costs no writes.

Two paths freeze the same working set (the package ``runtime.assembly`` holds them and
what they share). The delta path (``runtime.assembly.delta``, when memory forgets by
``ValueEviction``, the default) keeps a ``CandidateTable`` from tick to tick: it reads
only the board keys written since the last freeze (the board's change feed), combines
offers again only when their shape changed, asks the map once per centre key (a smaller
radius is a prefix of the nearest-first answer), chooses the victims of eviction before
anything is written and builds each view from the pack without copying its items. The
from-scratch path (``runtime.assembly.scratch``: any other policy, or a board key that
names a map feature, an event or a note) offers everything again each tick, upserts it
and lets memory evict. The tests hold the two to the same working sets, views and
evictions, tick for tick.

Scratchpads: a cabin given a ``Scratchpad`` has its notes enter the working set
at each freeze, as ``note:<key>`` items in its view only (importance = its spec's
weight for ``note:<key>``, via ``note:scratchpad``), subject to capacity and
eviction like every other item. In working memory, and so in ``WorkingSet.items``
and eviction records, a note is held as ``note:<cabin>/<key>`` so that two
cabins' pads never collide. A pad scoped to a task whose goal key has left the
board is cleared (and unscoped) at the freeze, before its notes are read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from runtime.assembly.delta import STAGES, DeltaPath
from runtime.assembly.events import EventWindows
from runtime.assembly.maps import FirstOffered, MapWindows
from runtime.assembly.scratch import FromScratch
from runtime.assembly.sources import Sources
from runtime.assembly.specs import CompiledSpecs

if TYPE_CHECKING:
    from runtime.board import StateBoard
    from runtime.cabin_map import CabinMap
    from runtime.freeze import FrozenDict
    from runtime.log import EventLog
    from runtime.memory import WorkingMemory
    from runtime.pack import WorkingSet
    from runtime.scratchpad import Scratchpad
    from runtime.spec import ContextSpec

__all__ = ["STAGES", "Assembler"]


class Assembler:
    """Builds the ``WorkingSet`` of each tick for a fixed set of specs."""

    _derived = ("laps",)  # a caller's timer, not state
    _state_types: ClassVar[dict[str, Any]] = {}  # its parts check theirs; nothing plain

    def __init__(
        self,
        board: StateBoard,
        cabin_map: CabinMap,
        log: EventLog,
        memory: WorkingMemory,
        specs: Iterable[ContextSpec] | Mapping[str, ContextSpec],
        *,
        scratchpads: Mapping[str, Scratchpad] | None = None,
    ) -> None:
        compiled = self._compiled = CompiledSpecs(specs)
        sources = self._sources = Sources(
            board, cabin_map, log, scratchpads or {}, specs=compiled.by_name
        )
        self._memory = memory
        events = EventWindows(log)
        first_offered = FirstOffered()
        self._scratch = FromScratch(
            sources, compiled, memory, events, MapWindows(sources, compiled), first_offered
        )
        self._delta = DeltaPath(sources, compiled, memory, events, first_offered)
        self.laps: Callable[[str], None] | None = None
        """For profiling: called with each stage's name as the stage ends (the delta path's
        stages, in order: ``STAGES``), so that a caller can time them inside the real tick."""

    @property
    def board(self) -> StateBoard:
        return self._sources.board

    @property
    def cabin_map(self) -> CabinMap:
        return self._sources.cabin_map

    @property
    def log(self) -> EventLog:
        return self._sources.log

    @property
    def memory(self) -> WorkingMemory:
        return self._memory

    @property
    def specs(self) -> dict[str, ContextSpec]:
        """The specs by cabin name, in the order given."""
        return self._compiled.by_name

    @property
    def scratchpads(self) -> FrozenDict[str, Scratchpad]:
        """The cabins' scratchpads by cabin name."""
        return self._sources.scratchpads

    def assemble(self, tick: int, now: float) -> WorkingSet:
        """Freeze the working set of ``tick`` at time ``now``."""
        locks = self._sources.locks
        for lock in locks:
            lock.acquire()
        try:
            if self._memory.settles:
                ws = self._delta.freeze(tick, now, self.laps)
                if ws is not None:
                    return ws
            self._delta.stop()
            return self._scratch.freeze(tick, now)
        finally:
            for lock in reversed(locks):
                lock.release()
