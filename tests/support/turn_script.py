"""A scripted model for agent turns: it answers each request by what the turn asks (a plan,
a revision, a step's next move, the answer), served by ``cabins.fake_llm.FakeLLMServer`` or
called in-process through ``cabins.llm.ScriptedClient`` (``in_process``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cabins.fake_llm import FakeReply
from cabins.llm import ChatReply, FunctionCall, ReplyToolCall, ScriptedClient

Move = FakeReply | str | Mapping[str, Any] | Callable[[list[Any]], FakeReply]
"""A reply: as is, text (a str, or a mapping sent as JSON), or a function of the step's
tool results so far."""


def role_of(request: Mapping[str, Any]) -> str:
    """``plan``, ``revise``, ``answer`` or ``step``: what an agent turn's request asks."""
    messages = request.get("messages", [])
    system = str(messages[0].get("content") or "")
    if not request.get("tools") and system.startswith("You are the planner"):
        return "revise" if "\nFeedback:" in str(messages[1].get("content") or "") else "plan"
    last = messages[-1]
    if last.get("role") == "user" and str(last.get("content")).startswith("Every step"):
        return "answer"
    return "step"


def current_step(messages: Sequence[Mapping[str, Any]]) -> tuple[str, int, list[Any]]:
    """The current step's id, the replies made in it so far and its tool results."""
    start = max(
        i
        for i, m in enumerate(messages)
        if m.get("role") == "user" and str(m.get("content")).startswith("Current step ")
    )
    step = str(messages[start]["content"]).split()[2].rstrip(":")
    later = messages[start:]
    made = sum(1 for m in later if m.get("role") == "assistant")
    results = [json.loads(str(m["content"])) for m in later if m.get("role") == "tool"]
    return step, made, results


class TurnScript:
    """Replies to an agent turn's requests: ``plans`` to the planner's requests in order
    (the last repeats), ``revisions`` to the re-planner's in order, each step's ``moves`` in
    order (past them: a text result), ``answer`` to the last request. ``asked`` counts the
    requests by role."""

    def __init__(
        self,
        *,
        plans: Sequence[Move],
        steps: Mapping[str, Sequence[Move]] | None = None,
        revisions: Sequence[Move] = (),
        answer: Move = "All done.",
    ) -> None:
        self.plans = list(plans)
        self.revisions = list(revisions)
        self.steps = dict(steps or {})
        self.answer = answer
        self.asked: dict[str, int] = {"plan": 0, "revise": 0, "answer": 0, "step": 0}

    def __call__(self, request: Mapping[str, Any]) -> FakeReply:
        role = role_of(request)
        n = self.asked[role]
        self.asked[role] += 1
        if role == "plan":
            return _reply(self.plans[min(n, len(self.plans) - 1)], [])
        if role == "revise":
            return _reply(self.revisions[min(n, len(self.revisions) - 1)], [])
        if role == "answer":
            return _reply(self.answer, [])
        step, made, results = current_step(request["messages"])
        moves = self.steps.get(step, ())
        if made < len(moves):
            return _reply(moves[made], results)
        return FakeReply(f"{step} done")

    def in_process(self) -> ScriptedClient:
        """A ``ScriptedClient`` answering as this script (no server, no HTTP)."""

        def answer(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> ChatReply:
            return chat_reply(self({"messages": list(messages), "tools": list(tools)}))

        return ScriptedClient([answer], repeat_last=True)


def _reply(move: Move, results: list[Any]) -> FakeReply:
    if isinstance(move, FakeReply):
        return move
    if isinstance(move, str):
        return FakeReply(move)
    if isinstance(move, Mapping):
        return FakeReply(json.dumps(move))
    return move(results)


def chat_reply(reply: FakeReply) -> ChatReply:
    """The ``ChatReply`` a ``FakeReply`` stands for (in-process; errors are not modelled)."""
    calls = tuple(
        ReplyToolCall(
            f"call_{i}", FunctionCall(name, args if isinstance(args, str) else json.dumps(args))
        )
        for i, (name, args) in enumerate(reply.tool_calls)
    )
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return ChatReply(reply.content, calls, finish, reply.refusal)


def plan(
    *steps: tuple[str, str, Sequence[str]], status: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A plan's JSON: steps ``(id, tool, depends_on)``, each verifiable; with ``status``,
    a revision (each step's status, pending by default)."""
    out = []
    for step_id, tool, depends in steps:
        item: dict[str, Any] = {
            "id": step_id,
            "description": f"do {step_id}",
            "tool": tool or None,
            "verify": f"{step_id} is done",
            "depends_on": list(depends),
        }
        if status is not None:
            item["status"] = status.get(step_id, "pending")
        out.append(item)
    return {"steps": out}
