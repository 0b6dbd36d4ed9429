"""tickwork runtime: a tick-driven working memory for robots and agents.

The state board, the spatial map and the event log hold the truth; each tick the
assembler freezes one working set from them for every cabin's context spec;
working memory forgets by value; the tick loop runs the cabins on their views.
Agents add a task-scoped scratchpad (notes in the working set), function tools,
and short-term, long-term and working-state memory tiers.

Names are loaded when first used (``from runtime import StateBoard`` imports the board,
not the whole package), so a light module such as ``runtime.errors`` costs nothing to
import. No name here is also the name of a module of the package (the module would
shadow it): ``freeze`` is ``runtime.freeze.freeze``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.agent.memory import HashingEmbedder as HashingEmbedder
    from runtime.agent.memory import LongTermMemory as LongTermMemory
    from runtime.agent.memory import MemoryRecord as MemoryRecord
    from runtime.agent.memory import Message as Message
    from runtime.agent.memory import ShortTermMemory as ShortTermMemory
    from runtime.agent.memory import ToolCall as ToolCall
    from runtime.agent.memory import WorkingState as WorkingState
    from runtime.agent.tools import Tool as Tool
    from runtime.agent.tools import ToolArgs as ToolArgs
    from runtime.agent.tools import ToolDispatcher as ToolDispatcher
    from runtime.agent.tools import ToolResult as ToolResult
    from runtime.agent.tools import scratchpad_tools as scratchpad_tools
    from runtime.agent.turn import Agent as Agent
    from runtime.agent.turn_state import TurnResult as TurnResult
    from runtime.agent.turn_state import TurnSettings as TurnSettings
    from runtime.assembler import Assembler as Assembler
    from runtime.asynchronous import Asynchronous as Asynchronous
    from runtime.asynchronous import Returned as Returned
    from runtime.asynchronous import SimulatedExecutor as SimulatedExecutor
    from runtime.asynchronous import ThreadExecutor as ThreadExecutor
    from runtime.board import Reading as Reading
    from runtime.board import StateBoard as StateBoard
    from runtime.cabin import Cabin as Cabin
    from runtime.cabin import CabinFailure as CabinFailure
    from runtime.cabin import CabinWrapper as CabinWrapper
    from runtime.cabin import Command as Command
    from runtime.cabin import DropLate as DropLate
    from runtime.cabin import NoteOp as NoteOp
    from runtime.cabin import Outbox as Outbox
    from runtime.cabin import Reaction as Reaction
    from runtime.cabin import RecheckLate as RecheckLate
    from runtime.cabin_map import CabinMap as CabinMap
    from runtime.cabin_map import Feature as Feature
    from runtime.clock import Clock as Clock
    from runtime.clock import SimClock as SimClock
    from runtime.clock import WallClock as WallClock
    from runtime.collection import CollectAnywhere as CollectAnywhere
    from runtime.collection import CollectInSlack as CollectInSlack
    from runtime.episodes import Episodes as Episodes
    from runtime.episodes import QuietSeconds as QuietSeconds
    from runtime.episodes import QuietTicks as QuietTicks
    from runtime.episodes import UntilSeen as UntilSeen
    from runtime.errors import SettingError as SettingError
    from runtime.errors import TickworkError as TickworkError
    from runtime.freeze import FreezeError as FreezeError
    from runtime.freeze import FrozenDict as FrozenDict
    from runtime.log import Event as Event
    from runtime.log import EventLog as EventLog
    from runtime.logs import configure_logging as configure_logging
    from runtime.longterm import LongTermStore as LongTermStore
    from runtime.loop import CatchUp as CatchUp
    from runtime.loop import SkipMissed as SkipMissed
    from runtime.loop import TickLoop as TickLoop
    from runtime.loop import TickResult as TickResult
    from runtime.loop import TickStats as TickStats
    from runtime.memory import Eviction as Eviction
    from runtime.memory import EvictionPolicy as EvictionPolicy
    from runtime.memory import FifoEviction as FifoEviction
    from runtime.memory import ValueEviction as ValueEviction
    from runtime.memory import WorkingMemory as WorkingMemory
    from runtime.memory import WorkItem as WorkItem
    from runtime.pack import CabinView as CabinView
    from runtime.pack import Occupancy as Occupancy
    from runtime.pack import Versions as Versions
    from runtime.pack import WorkingSet as WorkingSet
    from runtime.pressure import PressureCount as PressureCount
    from runtime.scratchpad import Note as Note
    from runtime.scratchpad import Scratchpad as Scratchpad
    from runtime.settings import Settings as Settings
    from runtime.spec import ContextSpec as ContextSpec
    from runtime.spec import SpecError as SpecError
    from runtime.spec import load_spec as load_spec
    from runtime.spec import load_specs as load_specs
    from runtime.timing import Timing as Timing

_WHERE: dict[str, str] = {
    "Agent": "runtime.agent.turn",
    "Assembler": "runtime.assembler",
    "Asynchronous": "runtime.asynchronous",
    "Cabin": "runtime.cabin",
    "CabinFailure": "runtime.cabin",
    "CabinMap": "runtime.cabin_map",
    "CabinWrapper": "runtime.cabin",
    "CabinView": "runtime.pack",
    "CatchUp": "runtime.loop",
    "Clock": "runtime.clock",
    "CollectAnywhere": "runtime.collection",
    "CollectInSlack": "runtime.collection",
    "Command": "runtime.cabin",
    "DropLate": "runtime.cabin",
    "ContextSpec": "runtime.spec",
    "Episodes": "runtime.episodes",
    "Event": "runtime.log",
    "EventLog": "runtime.log",
    "Eviction": "runtime.memory",
    "EvictionPolicy": "runtime.memory",
    "Feature": "runtime.cabin_map",
    "FifoEviction": "runtime.memory",
    "FreezeError": "runtime.freeze",
    "FrozenDict": "runtime.freeze",
    "HashingEmbedder": "runtime.agent.memory",
    "LongTermMemory": "runtime.agent.memory",
    "LongTermStore": "runtime.longterm",
    "MemoryRecord": "runtime.agent.memory",
    "Message": "runtime.agent.memory",
    "Note": "runtime.scratchpad",
    "NoteOp": "runtime.cabin",
    "Occupancy": "runtime.pack",
    "Outbox": "runtime.cabin",
    "PressureCount": "runtime.pressure",
    "QuietSeconds": "runtime.episodes",
    "QuietTicks": "runtime.episodes",
    "Reaction": "runtime.cabin",
    "Reading": "runtime.board",
    "RecheckLate": "runtime.cabin",
    "Returned": "runtime.asynchronous",
    "Scratchpad": "runtime.scratchpad",
    "SettingError": "runtime.errors",
    "Settings": "runtime.settings",
    "ShortTermMemory": "runtime.agent.memory",
    "SimClock": "runtime.clock",
    "SimulatedExecutor": "runtime.asynchronous",
    "SkipMissed": "runtime.loop",
    "SpecError": "runtime.spec",
    "StateBoard": "runtime.board",
    "TickLoop": "runtime.loop",
    "TickResult": "runtime.loop",
    "ThreadExecutor": "runtime.asynchronous",
    "TickStats": "runtime.loop",
    "TickworkError": "runtime.errors",
    "TurnResult": "runtime.agent.turn_state",
    "TurnSettings": "runtime.agent.turn_state",
    "Tool": "runtime.agent.tools",
    "ToolArgs": "runtime.agent.tools",
    "ToolCall": "runtime.agent.memory",
    "ToolDispatcher": "runtime.agent.tools",
    "Timing": "runtime.timing",
    "ToolResult": "runtime.agent.tools",
    "UntilSeen": "runtime.episodes",
    "ValueEviction": "runtime.memory",
    "Versions": "runtime.pack",
    "WallClock": "runtime.clock",
    "WorkItem": "runtime.memory",
    "WorkingMemory": "runtime.memory",
    "WorkingSet": "runtime.pack",
    "WorkingState": "runtime.agent.memory",
    "configure_logging": "runtime.logs",
    "load_spec": "runtime.spec",
    "load_specs": "runtime.spec",
    "scratchpad_tools": "runtime.agent.tools",
}
"""Each public name and the module that defines it."""

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
