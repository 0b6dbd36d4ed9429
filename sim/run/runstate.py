"""A simulated run as data: its inputs, and its state taken from and given back to its parts.

``run_inputs`` says what a run was built from (scenario, specs, faults, seed, rate,
capacity, user cabins, whether it kept a long-term memory) as JSON values;
``rebuild_run`` validates them the way their files are validated, builds the
``Simulation`` the normal way, and gives it its state back. ``capture_run`` writes the
state with ``runtime.snapshot``: each component's own ``get_state()`` where it has one
(the board, map, log, working memory, clock, world, tallies), else its attributes as
plain values. ``RECORDS`` is the fixed table of plain-data classes a state may hold
(readings, events, features, the world's records, the cabins' value records).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import TypeAdapter, ValidationError

from runtime.cabin import innermost
from runtime.errors import TickworkError
from runtime.snapshot import StateCodec, StateError, restore, state_classes

_log = structlog.get_logger(__name__)

if TYPE_CHECKING:
    from runtime.agent.memory import LongTermMemory
    from sim.run.harness import ExtraCabin, Simulation


def _record_classes() -> list[type]:
    """Every plain-data class a run's state may hold: dataclasses and named tuples of
    values (none of them opens, imports or runs anything; reading one calls no code)."""
    from cabins.executor import ledger, plan, retry
    from cabins.llm import (
        ChatReply,
        EveryTick,
        FunctionCall,
        LastCall,
        OnChange,
        ReplyToolCall,
        _Decision,
        _Mark,
    )
    from cabins.monitor.bands import DeviationBands
    from cabins.monitor.holds import Hold
    from cabins.planner import (
        blocked_spots,
        energy,
        goals,
        lanes,
        route,
        stall,
        standoff,
        watchdog,
    )
    from cabins.warehouse import values
    from cabins.warehouse.clearance import Solids
    from cabins.warehouse.energy import BatteryFigures
    from cabins.warehouse.routing import RoutingProblem
    from cabins.warehouse.tasks import TaskRequest
    from runtime import asynchronous, cabin, episodes, pack, pressure, scratchpad
    from runtime.agent.long_term import MemoryRecord, Remembered
    from runtime.agent.memory import Message, ToolCall, WorkingState
    from runtime.agent.plan import Plan, PlanStep, ReplanTrigger
    from runtime.agent.turn_state import Remembrance, StepRun, TurnResult, TurnState
    from runtime.assembly.specs import SharedWindow, Vias
    from runtime.backoff import Backoff
    from runtime.board import Reading
    from runtime.cabin_map import Feature
    from runtime.log import Event
    from runtime.loop import _Counters
    from runtime.memory import Eviction, WorkItem
    from runtime.recording.timebase import TimeBase
    from runtime.runners import LoopContext
    from sim.world import world

    return [
        ledger._Attempts, ledger._Done, ledger._Pending, plan.Step, plan.PlanReading,
        retry.RetryPolicy, retry.PolicyChoice, retry.RetryChooser,
        ChatReply, EveryTick, FunctionCall, LastCall, OnChange, ReplyToolCall, _Decision, _Mark,
        DeviationBands, Hold, blocked_spots.BlockedSpot, energy.Drain, energy.ReserveWaived,
        goals.Choice,
        lanes.Lane, lanes._Wait, route._Leg, standoff._GiveWay, stall._Stall, watchdog.Stalled,
        values.Pose, values.Velocity, values.Scan, values.RobotLimits, values.Acceptance,
        values.ActionOutcome, values.Zone, values.DeliverGoal, Solids, BatteryFigures,
        RoutingProblem, TaskRequest,
        asynchronous.Task, asynchronous._Simulated, asynchronous.Returned, asynchronous._Job,
        asynchronous._Slot, asynchronous.Notices,
        cabin.BoardWrite, cabin.EmittedEvent, cabin.Command, cabin.Reaction, cabin.NoteOp,
        cabin.MemoryWrite, cabin.CabinFailure,
        episodes.Sighting, episodes.UntilSeen, episodes.QuietTicks, episodes.QuietSeconds,
        pressure.PressureCount, pressure._Tally,
        pack.Versions, pack.Selection, pack.Occupancy, pack.WorkingSet,
        scratchpad.Note, scratchpad.PadEntry,
        MemoryRecord, Remembered, Message, ToolCall, Plan, PlanStep, ReplanTrigger,
        WorkingState, TurnState, TurnResult, StepRun, Remembrance,
        SharedWindow, Vias, Backoff, Reading, Feature, Event, _Counters, Eviction, WorkItem,
        LoopContext, TimeBase,
        world.RobotState, world.ObstacleState, world.TaskState, world.Incident, world.Contact,
        world.Stats, world.BatteryLow, world.WorldState,
    ]  # fmt: skip


_RECORDS: dict[str, type] | None = None


def records() -> dict[str, type]:
    """The record kinds a run's state may hold, by name."""
    global _RECORDS
    if _RECORDS is None:
        _RECORDS = state_classes(_record_classes())
    return _RECORDS


def codec() -> StateCodec:
    return StateCodec(records())


# -- inputs ------------------------------------------------------------------------------------


def run_inputs(sim: Simulation) -> dict[str, Any]:
    """What ``sim`` was built from, as JSON values."""
    users = [c.name for c in sim.loop.cabins[3:]]
    return {
        "scenario": json.loads(sim.scenario.model_dump_json()),
        "seed": sim.seed,
        "rate_hz": sim.rate_hz,
        "capacity": sim.memory.capacity,
        "specs": {n: s.model_dump(mode="json") for n, s in sim.specs.items()},
        "faults": [f.model_dump(mode="json") for f in sim.faults.faults],
        "user_cabins": users,
        "long_term": sim.writer is not None,
    }


class InputsError(TickworkError):
    """A checkpoint's inputs that are not a run's, or not the run of the cabins and memory
    given (the message says which)."""


def _check_inputs(inputs: Any, run: Mapping[str, Any]) -> dict[str, Any]:
    expected = {
        "scenario", "seed", "rate_hz", "capacity", "specs", "faults", "user_cabins", "long_term",
    }  # fmt: skip
    if not isinstance(inputs, dict) or set(inputs) != expected:
        keys = sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__
        raise InputsError(f"its inputs have {keys}, not {sorted(expected)}")
    for name, value, want in (
        ("seed", inputs["seed"], run["seed"]),
        ("capacity", inputs["capacity"], run["capacity"]),
    ):
        if type(value) is not int or value != want:
            raise InputsError(f"its inputs' {name} {value!r} is not the header's {want!r}")
    if type(inputs["rate_hz"]) is not float or inputs["rate_hz"] != run["rate_hz"]:
        raise InputsError(f"its inputs' rate {inputs['rate_hz']!r} is not the header's")
    if type(inputs["long_term"]) is not bool:
        raise InputsError("its inputs' long_term is not true or false")
    users = inputs["user_cabins"]
    if not (isinstance(users, list) and all(isinstance(u, str) for u in users)):
        raise InputsError("its inputs' user_cabins is not a list of names")
    if not isinstance(inputs["specs"], dict) or not isinstance(inputs["faults"], list):
        raise InputsError("its inputs' specs are not a mapping or its faults not a list")
    return inputs


def _scenario(data: Any) -> Any:
    from sim.world.scenario import Scenario

    try:
        return Scenario.model_validate_json(json.dumps(data, allow_nan=False))
    except (ValidationError, ValueError, TypeError, RecursionError) as exc:
        raise InputsError(f"its scenario is not valid ({_first(exc)})") from None


def _specs(data: Mapping[str, Any], users: Sequence[str]) -> dict[str, Any]:
    from runtime.spec import ContextSpec

    out = {}
    for name, spec in data.items():
        try:
            out[name] = ContextSpec.model_validate_json(json.dumps(spec, allow_nan=False))
        except (ValidationError, ValueError, TypeError, RecursionError) as exc:
            raise InputsError(f"its spec {name!r} is not valid ({_first(exc)})") from None
        if out[name].name != name:
            raise InputsError(f"its spec {name!r} names itself {out[name].name!r}")
    from sim.run.harness import BUILTIN_CABINS

    if sorted(out) != sorted([*BUILTIN_CABINS, *users]):
        raise InputsError(
            f"its specs are for {sorted(out)}, its cabins {[*BUILTIN_CABINS, *users]}"
        )
    return out


def _faults(data: Sequence[Any]) -> list[Any]:
    from sim.faults.model import Fault

    try:
        return TypeAdapter(list[Fault]).validate_json(json.dumps(data, allow_nan=False))
    except (ValidationError, ValueError, TypeError, RecursionError) as exc:
        raise InputsError(f"its faults are not valid ({_first(exc)})") from None


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
    return f"{type(exc).__name__}: {exc}"


# -- state -------------------------------------------------------------------------------------


def unsaved_cabins(sim: Simulation) -> list[str]:
    """The names of ``sim``'s cabins whose state a checkpoint cannot hold: user cabins
    without both ``get_state`` and ``set_state``."""
    out = []
    for cabin in sim.loop.cabins:
        inner = innermost(cabin)
        module = type(inner).__module__.split(".")[0]
        if module in ("runtime", "cabins", "sim"):
            continue
        if not (
            callable(getattr(inner, "get_state", None))
            and callable(getattr(inner, "set_state", None))
        ):
            out.append(f"{cabin.name} ({type(inner).__module__}.{type(inner).__qualname__})")
    return out


def keeps_no_state(cabin: ExtraCabin) -> bool:
    """Whether a user cabin's class lacks ``get_state`` or ``set_state`` (its factory, or
    the function a ``functools.partial`` factory wraps)."""
    factory: Any = cabin.factory
    while isinstance(factory, functools.partial):
        factory = factory.func
    if type(factory).__module__.split(".")[0] in _OWN and not isinstance(factory, type):
        return False
    if isinstance(factory, type) and factory.__module__.split(".")[0] in _OWN:
        return False
    return not (
        callable(getattr(factory, "get_state", None))
        and callable(getattr(factory, "set_state", None))
    )


_OWN = ("runtime", "cabins", "sim")


def capture_run(sim: Simulation) -> tuple[Any, list[bytes]]:
    """``sim``'s state as a JSON-able tree and its blobs."""
    writer = codec()
    return writer.dump(sim), writer.blobs


def rebuild_run(
    document: Mapping[str, Any],
    blobs: list[bytes],
    *,
    run: Mapping[str, Any],
    extra: Sequence[ExtraCabin] = (),
    long_term: str | Path | LongTermMemory | None = None,
) -> Simulation:
    """The simulation ``document`` holds: built from its inputs, then given its state.
    ``run`` is the run's settings as the header says them; ``InputsError`` when the
    inputs are not the run's or not what was given, ``StateError`` when the state does
    not check."""
    from sim.run.harness import Simulation

    inputs = _check_inputs(document["inputs"], run)
    scenario = _scenario(inputs["scenario"])
    specs = _specs(inputs["specs"], inputs["user_cabins"])
    faults = _faults(inputs["faults"])
    if scenario.name != run["scenario"]:
        raise InputsError(f"its scenario {scenario.name!r} is not the header's")
    if [f.label for f in faults] != run["faults"]:
        raise InputsError("its faults are not the header's")
    users = list(inputs["user_cabins"])
    given = [c.spec.name for c in extra]
    if given != users:
        raise InputsError(
            f"the run holds the user cabins {users}, and {given or 'none'} were given: "
            "resume it with the --cabin arguments it was started with"
        )
    for cabin in extra:
        if cabin.spec != specs[cabin.spec.name]:
            raise InputsError(
                f"the spec given for cabin {cabin.spec.name!r} is not the one the run had"
            )
    if inputs["long_term"] and long_term is None:
        raise InputsError(
            "the run kept a long-term memory: resume it with that memory file (--memory)"
        )
    if not inputs["long_term"] and long_term is not None:
        raise InputsError("the run kept no long-term memory: resume it without one")
    if (
        isinstance(long_term, (str, Path))
        and str(long_term) != ":memory:"
        and not Path(long_term).is_file()
    ):
        raise InputsError(f"the long-term memory {str(long_term)!r}: no such file")
    check = codec()  # every value read and checked before anything is built or opened
    check.load(document["state"], blobs)
    builtin = {n: s for n, s in specs.items() if n not in users}
    sim = Simulation(
        scenario,
        seed=inputs["seed"],
        rate_hz=inputs["rate_hz"],
        capacity=inputs["capacity"],
        specs=builtin,
        extra=extra,
        faults=faults,
        long_term=long_term,
    )
    try:
        sim.prepare_restore(document["state"])
        restore(sim, document["state"], codec(), blobs)
        sim.finish_restore()
    except BaseException:
        _close_quietly(sim)
        raise
    if [c.name for c in sim.loop.cabins] != run["cabins"]:
        _close_quietly(sim)
        raise InputsError("its cabins are not the header's")
    return sim


def _close_quietly(sim: Simulation) -> None:
    """Close a simulation whose state could not be given back (its parts may be half
    restored: what closing them raises is not the error to report)."""
    try:
        sim.close()
    except Exception as exc:  # the restore's own error is the one that is raised
        _log.debug("checkpoint.close_failed", error_type=type(exc).__name__, error=str(exc))


__all__ = [
    "capture_run",
    "codec",
    "rebuild_run",
    "records",
    "run_inputs",
    "unsaved_cabins",
]

_ = StateError
