"""An agent cabin in the warehouse: it orders the pending deliveries through agent turns.

``WarehouseAgent`` is a ``cabins.agent.AgentCabin`` whose goal is "order the pending
deliveries" whenever the set of pending ``goal:deliver:*`` items changes. Each turn the model
plans (list the deliveries, measure each trip, set the order), runs each step with tools
that read the cabin's view (``list_deliveries``, ``trip_length``) or act through its outbox
(``set_order`` writes ``dispatch:order``, which the planner follows), passes results between
steps through the scratchpad, re-plans if a step fails, answers, and asks the run's
long-term memory to keep the turn's summary. It decides off the tick thread (its spec's
``[timing]``): the robot drives on while the model thinks.

``ScriptedWarehouseAgent`` runs on ``WarehouseModel``, a scripted stand-in for a model that
reads the conversation and answers as a model following the plan would (the same script
serves an OpenAI-compatible test server). From the project's root::

    python -m sim run --cabin \\
        warehouse_agent:ScriptedWarehouseAgent@examples/warehouse_agent/warehouse_agent.toml
    python -m sim run --cabin \\
        warehouse_agent:WarehouseAgent@examples/warehouse_agent/warehouse_agent.toml \\
        --llm-base-url http://127.0.0.1:8000/v1 --llm-model my-model
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from cabins.agent import AgentCabin
from cabins.dispatcher import OrderArgs, pending_tasks
from cabins.llm import ChatReply, ScriptedClient
from cabins.warehouse.values import DISPATCH_ORDER, GOAL_DELIVER_PREFIX, DeliverGoal, read_places
from runtime import CabinView, ContextSpec, Outbox, Tool, ToolArgs

LIST_DELIVERIES, TRIP_LENGTH, SET_ORDER = "list_deliveries", "trip_length", "set_order"


class NoArgs(ToolArgs):
    pass


class TripArgs(ToolArgs):
    pickup: str = Field(description="The dock the load is picked up at.")
    drop: str = Field(description="The dock the load is dropped at.")


class WarehouseAgent(AgentCabin):
    """Orders the pending deliveries through agent turns; see the module docstring."""

    def goals_in(self, view: CabinView) -> dict[str, str]:
        pending = pending_tasks(view)
        if not pending:
            return {}
        return {
            "deliveries": f"Order the pending deliveries {', '.join(pending)} so that the "
            "robot makes the shortest trips first, and set that order."
        }

    def tools_for(self, view: CabinView, out: Outbox) -> Sequence[Tool[Any]]:
        docks = read_places(view.get("docks"))
        pending = set(pending_tasks(view))

        def deliveries(args: NoArgs) -> dict[str, Any]:
            found = []
            for task in sorted(pending):
                goal = DeliverGoal.read(view[f"{GOAL_DELIVER_PREFIX}{task}"], docks)
                if goal is not None:
                    found.append(
                        {"task": task, "pickup": goal.pickup, "drop": goal.drop}
                        | {"released": goal.released}
                    )
            return {"success": True, "deliveries": found}

        def trip(args: TripArgs) -> dict[str, Any]:
            unknown = [d for d in (args.pickup, args.drop) if d not in docks]
            if unknown:
                return {"success": False, "error": f"no dock {unknown} (docks: {sorted(docks)})"}
            (x0, y0), (x1, y1) = docks[args.pickup], docks[args.drop]
            metres = round(math.hypot(x1 - x0, y1 - y0), 2)
            return {"success": True, "pickup": args.pickup, "drop": args.drop, "metres": metres}

        def order(args: OrderArgs) -> dict[str, Any]:
            if sorted(args.tasks) != sorted(pending):
                return {"success": False, "error": f"give each of {sorted(pending)} once"}
            out.write(DISPATCH_ORDER, tuple(args.tasks))
            return {"success": True, "order": args.tasks, "note": "the planner follows it"}

        return (
            *super().tools_for(view, out),
            Tool(LIST_DELIVERIES, "The pending deliveries and their docks.", NoArgs, deliveries),
            Tool(TRIP_LENGTH, "A trip's straight-line length in metres.", TripArgs, trip),
            Tool(SET_ORDER, "Set the order of the pending deliveries.", OrderArgs, order),
        )

    def recheck(self, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        """A late decision still holds if the pending deliveries are the ones it ordered."""
        return pending_tasks(decided) == pending_tasks(current)


PLAN = {
    "steps": [
        {
            "id": "s1",
            "description": "List the pending deliveries",
            "tool": LIST_DELIVERIES,
            "verify": "every pending task is listed with its docks",
            "depends_on": [],
        },
        {
            "id": "s2",
            "description": "Measure each delivery's trip and save the lengths as trips",
            "tool": TRIP_LENGTH,
            "verify": "the scratchpad holds trips, one length per task",
            "depends_on": ["s1"],
        },
        {
            "id": "s3",
            "description": "Set the order, shortest trip first",
            "tool": SET_ORDER,
            "verify": "set_order accepted the order",
            "depends_on": ["s2"],
        },
    ]
}


class WarehouseModel:
    """A scripted stand-in for a model: it reads the conversation of a request and answers
    as a model following ``PLAN`` would. A class, so that a run holds it by name."""

    def __call__(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> ChatReply:
        first = str(messages[0].get("content") or "")
        if not tools and first.startswith("You are the planner"):
            plan = _revised(messages) if _asks_revision(messages) else PLAN
            return ChatReply.text(json.dumps(plan))
        last = messages[-1]
        if last.get("role") == "user" and str(last.get("content")).startswith("Every step"):
            return ChatReply.text("The deliveries are ordered shortest trip first.")
        step, called = _step_so_far(messages)
        return _next_move(step, called, messages)


def _asks_revision(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any("Feedback:" in str(m.get("content") or "") for m in messages[1:2])


def _revised(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The plan again: done steps as they were, a failed one tried again as pending."""
    text = str(messages[1].get("content") or "")
    shown = json.loads(text.split("Plan: ", 1)[1].split("\nFeedback:", 1)[0])
    steps = []
    for step in shown["steps"]:
        step.pop("result", None)
        step["status"] = "done" if step["status"] == "done" else "pending"
        steps.append(step)
    return {"steps": steps}


def _step_so_far(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[tuple[str, Any]]]:
    """The current step's id, and each tool call since it began with its result."""
    start = max(
        i
        for i, m in enumerate(messages)
        if m.get("role") == "user" and str(m.get("content")).startswith("Current step ")
    )
    step = str(messages[start]["content"]).split()[2].rstrip(":")
    later = messages[start:]
    results = {m.get("tool_call_id"): m.get("content") for m in later if m.get("role") == "tool"}
    called = [
        (call["function"]["name"], json.loads(results.get(call["id"]) or "null"))
        for m in messages[start:]
        for call in m.get("tool_calls") or ()
    ]
    return step, called


def _tool_result(messages: Sequence[Mapping[str, Any]], name: str) -> Any:
    """The latest result of tool ``name`` in the conversation."""
    calls = [c for m in messages for c in m.get("tool_calls") or ()]
    ids = {c["id"] for c in calls if c["function"]["name"] == name}
    found = [m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") in ids]
    return json.loads(str(found[-1]["content"])) if found else None


def _next_move(
    step: str, called: list[tuple[str, Any]], messages: Sequence[Mapping[str, Any]]
) -> ChatReply:
    names = [name for name, _ in called]
    n = len(messages)
    if step == "s1":
        if not names:
            return ChatReply.calls((LIST_DELIVERIES, {}), first_id=n)
        listed = _tool_result(messages, LIST_DELIVERIES) or {}
        return ChatReply.text(f"{len(listed.get('deliveries', []))} pending deliveries listed.")
    if step == "s2":
        deliveries = (_tool_result(messages, LIST_DELIVERIES) or {}).get("deliveries", [])
        if not names:
            trips = [(TRIP_LENGTH, {"pickup": d["pickup"], "drop": d["drop"]}) for d in deliveries]
            return ChatReply.calls(*trips, first_id=n)
        if names[-1] == TRIP_LENGTH:
            pairs = zip(deliveries, called, strict=True)
            lengths = {d["task"]: r["metres"] for d, (_, r) in pairs}
            save = ("save_to_scratchpad", {"key": "trips", "value": lengths})
            return ChatReply.calls(save, first_id=n)
        return ChatReply.text("The trip lengths are saved as trips.")
    if step == "s3":
        if not names:
            return ChatReply.calls(("read_from_scratchpad", {"key": "trips"}), first_id=n)
        if names[-1] == "read_from_scratchpad":
            trips = called[-1][1].get("value") or {}
            order = sorted(trips, key=lambda task: (trips[task], task))
            return ChatReply.calls((SET_ORDER, {"tasks": order}), first_id=n)
        return ChatReply.text(f"Order set: {called[-1][1].get('order')}.")
    return ChatReply.text("Nothing to do for this step.")


class ScriptedWarehouseAgent(WarehouseAgent):
    """``WarehouseAgent`` on ``WarehouseModel``: runs anywhere, without a model."""

    def __init__(self, spec: ContextSpec, **settings: Any) -> None:
        settings.setdefault("client", ScriptedClient([WarehouseModel()], repeat_last=True))
        super().__init__(spec, **settings)
