"""An example LLM cabin for the warehouse: a dispatcher that orders the pending deliveries.

``LLMDispatcher`` is an ``LLMCabin`` whose view holds the delivery goals on the board, the
docks, the cargo and its own last order. When that changes, it asks its model for the
order in which the deliveries should be made; the model answers with the ``set_order``
tool (task ids, each a pending delivery), which writes ``dispatch:order``; the planner
takes its next task from that order (``cabins.warehouse.values.DISPATCH_ORDER``). It is
asynchronous (its spec, ``specs/examples/dispatcher.toml``, declares ``[timing]``): the
robot drives on while the model thinks, and an order that comes back late is applied only
if the pending deliveries are still the ones it ordered (``recheck``).

Its model is any ``ChatClient``: ``client=`` (e.g. ``lifo_client()``, a scripted stand-in
that orders the latest released first, for tests and demos: ``ScriptedDispatcher`` uses
it), or ``llm=`` an ``LLMEndpoint`` (any OpenAI-compatible server; ``python -m sim run
--cabin cabins.dispatcher:LLMDispatcher@specs/examples/dispatcher.toml --llm-base-url
URL``).

When its goals are missing for a reason other than "absent" it reports the reaction its
spec declares (``idle:no_goal``) once per episode and does not call the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from cabins.llm import ActionTool, ChatReply, LLMCabin, LLMEndpoint, ScriptedClient
from cabins.warehouse.values import DISPATCH_ORDER, GOAL_DELIVER_PREFIX
from runtime.agent.tools import ToolArgs
from runtime.cabin import Outbox
from runtime.errors import SettingError
from runtime.pack import CabinView
from runtime.spec import ContextSpec

__all__ = [
    "GOALS",
    "SET_ORDER",
    "LLMDispatcher",
    "LifoReply",
    "OrderArgs",
    "ScriptedDispatcher",
    "lifo_client",
    "pending_tasks",
]

GOALS = f"{GOAL_DELIVER_PREFIX}*"
SET_ORDER = "set_order"

DISPATCH_PROMPT = (
    "You are the dispatcher of a warehouse robot. The pending deliveries are the "
    "goal:deliver:* items below (each a task id, a pick-up dock and a drop dock, and when "
    "it was released). Decide the order in which the robot should make them and call "
    "set_order once with every pending task id, first to last. Prefer short trips between "
    "docks. Then answer with one short sentence, without tool calls."
)


class OrderArgs(ToolArgs):
    tasks: list[str] = Field(description="Every pending task id, in the order to deliver them.")


def pending_tasks(view: Mapping[str, Any]) -> tuple[str, ...]:
    """The task ids of the delivery goals in ``view``, sorted."""
    return tuple(sorted(k[len(GOAL_DELIVER_PREFIX) :] for k in view if k.startswith(GOALS[:-1])))


class LLMDispatcher(LLMCabin):
    """Orders the pending deliveries with a model; see the module docstring."""

    def __init__(
        self,
        spec: ContextSpec,
        *,
        client: Any = None,
        llm: LLMEndpoint | None = None,
        **settings: Any,
    ) -> None:
        if client is None:
            if llm is None:
                raise SettingError(
                    f"cabin {spec.name!r} needs a model: give --llm-base-url URL (or set "
                    f"{LLMEndpoint.BASE_URL_ENV} or OPENAI_API_KEY), or client=..."
                )
            client = llm.client()
        settings.setdefault("system_prompt", DISPATCH_PROMPT)
        settings.setdefault("task_prompt", "Order the pending deliveries.")
        settings.setdefault("scope_to", None)
        settings.setdefault("max_steps", 4)
        super().__init__(spec, client=client, **settings)
        self._reacted = False

    def should_decide(self, view: CabinView) -> bool:
        reason = view.missing.get(GOALS)
        if reason is not None and reason != "absent":
            return False
        return bool(pending_tasks(view))

    def step(self, view: CabinView, out: Outbox) -> None:
        reason = view.missing.get(GOALS)
        if reason is not None and reason != "absent":
            self._asked = False  # no model: this decision takes no time
            reaction = self.spec.reaction_for(GOALS)
            if reaction is not None and not self._reacted:
                out.react(GOALS, reaction, reason=reason)
            self._reacted = True
            return
        self._reacted = False
        super().step(view, out)

    def tools_for(self, view: CabinView) -> Sequence[ActionTool[Any]]:
        pending = set(pending_tasks(view))

        def set_order(args: OrderArgs, out: Outbox) -> dict[str, Any]:
            unknown = [t for t in args.tasks if t not in pending]
            if unknown or len(set(args.tasks)) != len(args.tasks):
                raise SettingError(
                    f"give each pending task once (pending: {sorted(pending)}); "
                    f"not pending: {unknown}"
                )
            out.write(DISPATCH_ORDER, tuple(args.tasks))
            return {"queued": "order", "tasks": args.tasks, "note": "the planner follows it"}

        return (
            *self.action_tools,
            ActionTool(SET_ORDER, "Set the order of the pending deliveries.", OrderArgs, set_order),
        )

    def recheck(self, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        """A late order still holds if the pending deliveries are the ones it ordered."""
        return pending_tasks(decided) == pending_tasks(current)


_GOAL_LINE = re.compile(r"^- goal:deliver:(\S+): (.*)$")


class LifoReply:
    """The scripted model's reply to a request: the pending deliveries, latest released
    first. A class, not a function, so that a checkpoint holds it by name (checkpoints
    rebuild tickwork classes only)."""

    def __call__(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> ChatReply:
        return _lifo_reply(messages)


def _lifo_reply(messages: Sequence[Mapping[str, Any]]) -> ChatReply:
    if messages and messages[-1].get("role") == "tool":
        return ChatReply.text("ordered the latest released first")
    system = str(messages[0].get("content", "")) if messages else ""
    released: list[tuple[float, str]] = []
    for line in system.splitlines():
        found = _GOAL_LINE.match(line)
        if found is None:
            continue
        try:
            when = float(json.loads(found[2]).get("released", 0.0))
        except (ValueError, AttributeError, TypeError):
            when = 0.0
        released.append((when, found[1]))
    order = [task for _, task in sorted(released, key=lambda r: (-r[0], r[1]))]
    return ChatReply.calls((SET_ORDER, {"tasks": order}))


def lifo_client() -> ScriptedClient:
    """A scripted stand-in for a model: it reads the pending deliveries from the prompt and
    orders the latest released first (the opposite of the planner's default)."""
    return ScriptedClient([LifoReply()], repeat_last=True)


class ScriptedDispatcher(LLMDispatcher):
    """The dispatcher on ``lifo_client()``: runs anywhere, without a model (tests, demos)."""

    def __init__(self, spec: ContextSpec, **settings: Any) -> None:
        settings.setdefault("client", lifo_client())
        super().__init__(spec, **settings)
