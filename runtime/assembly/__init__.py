"""How the assembler freezes a working set: two paths, and what they share.

``runtime.assembler.Assembler`` is the facade: it takes the sources' locks and has one of
two paths freeze the tick's working set, which the tests hold to the same result tick for
tick.

- ``scratch``: **from scratch**. Every spec offers everything again; the offers are
  combined, upserted into working memory, and memory evicts by its own policy. The
  reference, and the path of any eviction policy other than ``ValueEviction``.
- ``delta``: **the delta freeze**. It carries the last tick's work forward (``carried``):
  only what changed since the last freeze is read and offered again, the candidates'
  ranks are kept (``candidates``) so the victims of eviction are chosen before anything
  is written, and the views are built without copying their items (``views``).

What both paths share:

- ``specs``: the specs compiled once (vias, required matchers, shared map queries);
- ``sources``: the board, map, log and pads under their locks, the board's keys per
  pattern, the pads of finished tasks, why a source no longer backs an item;
- ``maps``: map windows and corridors, their relevance to the active goals, and when a
  window first offered each map item (``FirstOffered``: the item's stamp);
- ``events``: event windows, carried on from the last freeze;
- ``eviction``: letting go of what no spec offers, and the ``evicted`` log line;
- ``freezing``: each spec's selection, missing items and their reasons, the
  ``WorkingSet``.
"""

from runtime.assembly.candidates import CandidateTable
from runtime.assembly.delta import STAGES, DeltaPath
from runtime.assembly.events import EventWindows
from runtime.assembly.maps import FirstOffered, MapOffers, MapWindows
from runtime.assembly.scratch import FromScratch
from runtime.assembly.sources import Sources
from runtime.assembly.specs import CompiledSpecs

__all__ = [
    "STAGES",
    "CandidateTable",
    "CompiledSpecs",
    "DeltaPath",
    "EventWindows",
    "FirstOffered",
    "FromScratch",
    "MapOffers",
    "MapWindows",
    "Sources",
]
