"""Memory tiers of an agent: short-term trace, long-term recall, and the working state.

The seed's three tiers, beside the tick-level working memory and the scratchpad:

- ``ShortTermMemory`` is the bounded conversation trace (messages and tool results)
  of one session. When it overflows, the oldest turns are handed to a rolling
  summariser (``runtime.agent.summary``; by default the deterministic, extractive
  ``ExtractiveSummarizer``) and replaced by its summary; the system prompt and the goal
  are never dropped, and an assistant message that calls tools is kept or dropped
  together with the results of those calls, never separated from them.
- ``LongTermMemory`` (``runtime.agent.long_term``) remembers facts across sessions and
  recalls them by embedding similarity within a metadata scope; its parts are the
  embedders (``runtime.agent.embedding``; the optional sentence model,
  ``runtime.agent.sentence_model``), the vector index (``runtime.agent.vectors``) and
  how many are loaded (``runtime.agent.residency``), the write filter
  (``runtime.agent.duplicates``) and forgetting (``runtime.agent.forgetting``). Its
  names are re-exported here.
- ``WorkingState`` is one task's state: goal, plan, current step, variables and
  step results; ``snapshot()`` is a deep copy.
"""

from __future__ import annotations

import copy
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

from runtime.agent.embedding import Embedder, EmbedderIdentity, EmbedderMismatch, HashingEmbedder
from runtime.agent.long_term import LongTermMemory, MemoryRecord, Queued, Remembered
from runtime.agent.plan import Plan
from runtime.agent.summary import ExtractiveSummarizer, LLMSummarizer
from runtime.errors import SettingError
from runtime.logs import debug_enabled

__all__ = [
    "Embedder",
    "EmbedderIdentity",
    "EmbedderMismatch",
    "ExtractiveSummarizer",
    "HashingEmbedder",
    "LLMSummarizer",
    "LongTermMemory",
    "MemoryRecord",
    "Message",
    "Queued",
    "Remembered",
    "ShortTermMemory",
    "Summarizer",
    "ToolCall",
    "WorkingState",
    "omitted_summary",
]

_log = structlog.get_logger(__name__)

# -- short-term memory --------------------------------------------------------------------

Role = Literal["system", "user", "assistant", "tool"]
_ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call an assistant message makes: its id, the tool and the JSON arguments."""

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: a system, user or assistant turn, or a tool's result."""

    role: Role
    content: str | None = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # the tool's name, on a tool result

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise SettingError(
                f"a message role must be one of {', '.join(_ROLES)}, got {self.role!r}"
            )
        if self.tool_calls and self.role != "assistant":
            raise SettingError(f"only an assistant message calls tools, not a {self.role} one")
        if (self.role == "tool") != (self.tool_call_id is not None):
            raise SettingError(
                "a tool message needs the tool_call_id it answers, and only a "
                f"tool message has one (role {self.role!r}, "
                f"tool_call_id {self.tool_call_id!r})"
            )
        ids = [c.id for c in self.tool_calls]
        if len(set(ids)) != len(ids):
            raise SettingError(f"an assistant message calls two tools with one id: {ids}")
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    def to_openai(self) -> dict[str, Any]:
        """The message as a chat-completions request message."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


Summarizer = Callable[[str | None, Sequence[Message]], str]
"""``(previous summary or None, messages being dropped) -> the new summary``."""


def omitted_summary(previous: str | None, dropped: Sequence[Message]) -> str:
    """A summary that only counts: how many earlier messages were dropped, and which tools
    ran (the default is ``ExtractiveSummarizer``, which keeps what they said)."""
    count = len(dropped)
    tools: list[str] = []
    found = re.match(
        r"\[(\d+) earlier messages omitted(?:; tools used: ([^\]]*))?\]", previous or ""
    )
    if found:
        count += int(found[1])
        tools = [t for t in (found[2] or "").split(", ") if t]
    for message in dropped:
        for call in message.tool_calls:
            if call.name not in tools:
                tools.append(call.name)
    used = f"; tools used: {', '.join(tools)}" if tools else ""
    return f"[{count} earlier messages omitted{used}]"


class ShortTermMemory:
    """A bounded message trace with a rolling summary (see the module docstring).

    ``messages()`` is: the system prompt, the goal (as a user message), the summary
    of dropped turns (as a system message), then the kept turns. It holds at most
    ``max_messages`` messages and, with ``keep_turns``, at most that many of the latest
    turns (a turn: a message, or an assistant message with the results of its tool
    calls), except while the newest turn alone needs more room (an assistant message
    with many tool calls and their results is never split). ``summarize`` defaults to
    ``ExtractiveSummarizer()``.
    """

    def __init__(
        self,
        *,
        max_messages: int = 30,
        keep_turns: int | None = None,
        summarize: Summarizer | None = None,
    ) -> None:
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 4:
            raise SettingError(
                "max_messages must be an int >= 4 (system, goal, summary and "
                f"one turn), got {max_messages!r}"
            )
        if keep_turns is not None and (
            isinstance(keep_turns, bool) or not isinstance(keep_turns, int) or keep_turns < 1
        ):
            raise SettingError(f"keep_turns must be an int >= 1 or None, got {keep_turns!r}")
        self.max_messages = max_messages
        self.keep_turns = keep_turns
        self.summarize: Summarizer = summarize if summarize is not None else ExtractiveSummarizer()
        self._system: Message | None = None
        self._goal: Message | None = None
        self._summary: str | None = None
        self._turns: deque[list[Message]] = deque()
        self.dropped = 0

    # -- fixed parts --------------------------------------------------------------------

    @property
    def system(self) -> str | None:
        return None if self._system is None else self._system.content

    def set_system(self, text: str) -> None:
        """Set (or rebuild) the system prompt; it is never dropped."""
        self._system = Message("system", text)

    @property
    def goal(self) -> str | None:
        return None if self._goal is None else self._goal.content

    def set_goal(self, text: str) -> None:
        """Set the goal, kept as the first user message; it is never dropped."""
        self._goal = Message("user", text)
        self._fit()

    @property
    def summary(self) -> str | None:
        """The rolling summary of the dropped turns, or None while nothing was dropped."""
        return self._summary

    # -- the trace ----------------------------------------------------------------------

    def add(self, message: Message) -> None:
        """Append a message. A tool result must answer an open call of the last turn."""
        if not isinstance(message, Message):
            raise TypeError(f"add takes a Message, got {type(message).__name__}")
        last = self._turns[-1] if self._turns else []
        open_calls = _open_calls(last)
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                raise SettingError(
                    f"tool result for call {message.tool_call_id!r}, which is "
                    f"not an open call of the last assistant message "
                    f"(open: {open_calls})"
                )
            last.append(message)
        else:
            if open_calls:
                raise SettingError(
                    f"tool call(s) {open_calls} have no result yet; add their "
                    "results before the next message"
                )
            self._turns.append([message])
        self._fit()

    def add_user(self, content: str) -> None:
        self.add(Message("user", content))

    def add_assistant(self, content: str | None, tool_calls: Sequence[ToolCall] = ()) -> None:
        self.add(Message("assistant", content, tuple(tool_calls)))

    def add_tool_result(self, call_id: str, content: str, *, name: str | None = None) -> None:
        self.add(Message("tool", content, tool_call_id=call_id, name=name))

    def messages(self) -> tuple[Message, ...]:
        out: list[Message] = []
        if self._system is not None:
            out.append(self._system)
        if self._goal is not None:
            out.append(self._goal)
        if self._summary is not None:
            out.append(Message("system", f"Summary of earlier turns: {self._summary}"))
        for turn in self._turns:
            out.extend(turn)
        return tuple(out)

    def __len__(self) -> int:
        return len(self.messages())

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as a chat-completions ``messages`` list."""
        return [m.to_openai() for m in self.messages()]

    def to_prompt_context(self) -> str:
        """The trace as plain text (``role: content``, ``[tool:name] result``)."""
        lines = []
        for m in self.messages():
            if m.role == "tool":
                lines.append(f"[tool:{m.name or m.tool_call_id}] {m.content}")
            else:
                calls = "".join(f" -> {c.name}({c.arguments})" for c in m.tool_calls)
                lines.append(f"{m.role}: {m.content or ''}{calls}")
        return "\n".join(lines)

    def get_state(self) -> dict[str, Any]:
        """The trace as plain values (its messages are ``Message`` records), for a
        checkpoint or for a task that goes on later (``set_state``)."""
        return {
            "system": self.system,
            "goal": self.goal,
            "summary": self._summary,
            "turns": tuple(tuple(turn) for turn in self._turns),
            "dropped": self.dropped,
        }

    def set_state(self, data: Mapping[str, Any]) -> None:
        """Take back what ``get_state`` gave (a ``SettingError`` if it is not that)."""
        turns = data.get("turns", ())
        if not isinstance(turns, tuple | list) or not all(
            isinstance(t, tuple | list) and t and all(isinstance(m, Message) for m in t)
            for t in turns
        ):
            raise SettingError("a trace's turns must be non-empty sequences of messages")
        for name in ("system", "goal", "summary"):
            if data.get(name) is not None and not isinstance(data.get(name), str):
                raise SettingError(f"a trace's {name} must be text or None")
        dropped = data.get("dropped", 0)
        if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 0:
            raise SettingError(f"a trace's dropped must be an int >= 0, got {dropped!r}")
        system, goal = data.get("system"), data.get("goal")
        self._system = None if system is None else Message("system", system)
        self._goal = None if goal is None else Message("user", goal)
        self._summary = data.get("summary")
        self._turns = deque(list(t) for t in turns)
        self.dropped = dropped

    def _fit(self) -> None:
        fixed = (self._system is not None) + (self._goal is not None)
        dropped: list[Message] = []
        while len(self._turns) > 1:
            summary_slot = 1 if (self._summary is not None or dropped) else 0
            held = sum(len(t) for t in self._turns)
            if fixed + summary_slot + held <= self.max_messages and (
                self.keep_turns is None or len(self._turns) <= self.keep_turns
            ):
                break
            dropped.extend(self._turns.popleft())
        if dropped:
            self._summary = self.summarize(self._summary, tuple(dropped))
            self.dropped += len(dropped)
            if debug_enabled(_log):
                _log.debug("short_term_summarized", dropped=len(dropped), total=self.dropped)


def _open_calls(turn: list[Message]) -> list[str]:
    if not turn:
        return []
    answered = {m.tool_call_id for m in turn[1:]}
    return [c.id for c in turn[0].tool_calls if c.id not in answered]


# -- working state ------------------------------------------------------------------------


@dataclass(slots=True)
class WorkingState:
    """One task's state: the goal, its plan, the current step, variables and step results."""

    goal: str
    plan: Plan | None = None
    current_step: str | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    step_results: dict[str, Any] = field(default_factory=dict)

    def set_plan(self, plan: Plan) -> None:
        """Adopt ``plan``; a current step the plan no longer has is forgotten."""
        if not isinstance(plan, Plan):
            raise TypeError(f"set_plan takes a Plan, got {type(plan).__name__}")
        self.plan = plan
        if self.current_step is not None and self.current_step not in plan:
            self.current_step = None

    def start_step(self, step_id: str) -> None:
        """Make ``step_id`` (a step of the plan) the current step."""
        if self.plan is None or step_id not in self.plan:
            known = ", ".join(self.plan.ids) if self.plan is not None else "no plan"
            raise SettingError(f"no step {step_id!r} in the plan (steps: {known})")
        self.current_step = step_id

    def set_step_result(self, step_id: str, result: Any) -> None:
        self.step_results[str(step_id)] = result

    def set_variable(self, name: str, value: Any) -> None:
        self.variables[name] = value

    def snapshot(self) -> WorkingState:
        """A deep copy: changing it never changes this state, nor the other way round."""
        return copy.deepcopy(self)
