"""tickwork runtime: a tick-driven working memory for robots and agents.

The state board, the spatial map and the event log hold the truth; each tick the
assembler freezes one working set from them for every cabin's context spec;
working memory forgets by value; the tick loop runs the cabins on their views.
Agents add a task-scoped scratchpad (notes in the working set), function tools,
and short-term, long-term and working-state memory tiers.
"""

from runtime.agent.memory import (
    HashingEmbedder,
    LongTermMemory,
    MemoryRecord,
    Message,
    ShortTermMemory,
    ToolCall,
    WorkingState,
)
from runtime.agent.tools import Tool, ToolArgs, ToolDispatcher, ToolResult, scratchpad_tools
from runtime.assembler import Assembler
from runtime.board import Reading, StateBoard
from runtime.cabin import Cabin, Command, NoteOp, Outbox, Reaction
from runtime.cabin_map import CabinMap, Feature
from runtime.clock import Clock, SimClock, WallClock
from runtime.freeze import FreezeError, FrozenDict, freeze
from runtime.log import Event, EventLog
from runtime.logs import configure_logging
from runtime.loop import CatchUp, SkipMissed, TickLoop, TickResult, TickStats
from runtime.memory import (
    Eviction,
    EvictionPolicy,
    FifoEviction,
    ValueEviction,
    WorkingMemory,
    WorkItem,
)
from runtime.pack import CabinView, Occupancy, Versions, WorkingSet
from runtime.scratchpad import Note, Scratchpad
from runtime.spec import ContextSpec, SpecError, load_spec, load_specs

__all__ = [
    "Assembler",
    "Cabin",
    "CabinMap",
    "CabinView",
    "CatchUp",
    "Clock",
    "Command",
    "ContextSpec",
    "Event",
    "EventLog",
    "Eviction",
    "EvictionPolicy",
    "Feature",
    "FifoEviction",
    "FreezeError",
    "FrozenDict",
    "HashingEmbedder",
    "LongTermMemory",
    "MemoryRecord",
    "Message",
    "Note",
    "NoteOp",
    "Occupancy",
    "Outbox",
    "Reaction",
    "Reading",
    "Scratchpad",
    "ShortTermMemory",
    "SimClock",
    "SkipMissed",
    "SpecError",
    "StateBoard",
    "TickLoop",
    "TickResult",
    "TickStats",
    "Tool",
    "ToolArgs",
    "ToolCall",
    "ToolDispatcher",
    "ToolResult",
    "ValueEviction",
    "Versions",
    "WallClock",
    "WorkItem",
    "WorkingMemory",
    "WorkingSet",
    "WorkingState",
    "configure_logging",
    "freeze",
    "load_spec",
    "load_specs",
    "scratchpad_tools",
]
