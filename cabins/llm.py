"""The LLM cabin: a cabin whose decisions come from a chat-completions model with tools.

Each tick, ``LLMCabin.step`` runs a bounded tool loop on its frozen view:

1. It takes a private *draft* of its scratchpad notes (the view's ``note:*`` items,
   of its current task only) so that tool rounds within the tick can read what
   earlier rounds wrote; the live pad is never touched.
2. Every round it rebuilds the system prompt from the view (a compact,
   deterministic rendering of its items and missing items) and the draft notes
   (the seed's "re-inject the latest state before every call"), and asks the client
   for the next message, offering the scratchpad tools and its action tools.
3. Tool calls are executed by a ``ToolDispatcher``: bad calls (unknown tool,
   malformed JSON, wrong arguments) come back to the model as error results.
   Action tools put commands or events in the outbox (applied after the tick).
4. It stops when the model answers without tool calls, or after ``max_steps``
   rounds (then it emits an ``llm_max_steps`` event). The changed notes go to the
   outbox (``out.note``), and the outcome is an ``llm_outcome`` event (and, with
   ``answer_key``, a board write of the answer).

The client is an interface (``ChatClient``): anything with
``complete(messages, tools)`` returning a message shaped like OpenAI's
(``content``, ``tool_calls`` with ``id``/``function.name``/``function.arguments``,
``finish_reason``). ``ScriptedClient`` replays canned replies (for tests);
``OpenAIChatClient`` adapts any OpenAI-compatible client object
(``client.chat.completions.create``), e.g. from the ``openai`` package.
An exception from the client propagates: the loop isolates the cabin for that tick.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import structlog
from pydantic import BaseModel

from runtime.agent.memory import ShortTermMemory, Summarizer, ToolCall
from runtime.agent.tools import Tool, ToolDispatcher, scratchpad_tools
from runtime.cabin import Outbox
from runtime.errors import SettingError, TickworkError
from runtime.pack import CabinView
from runtime.patterns import matches
from runtime.scratchpad import NOTE_PREFIX, Note, Scratchpad, to_json_text
from runtime.spec import ContextSpec

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_TASK_PROMPT",
    "MAX_STEPS",
    "ActionTool",
    "ChatClient",
    "ChatReply",
    "ChatReplyLike",
    "FunctionCall",
    "LLMCabin",
    "OpenAIChatClient",
    "ReplyToolCall",
    "ScriptExhausted",
    "ScriptedClient",
    "command_tool",
    "event_tool",
    "render_view",
]

MAX_STEPS = 8
"""Default hard cap on client calls (tool-call rounds) per tick."""

DEFAULT_SYSTEM_PROMPT = (
    "You are a decision component (a cabin) of a robot runtime. Each tick you see a "
    "frozen snapshot of the state; act only through your tools. Break the work into "
    "steps; after each step save intermediate results with save_to_scratchpad so that "
    "later steps and later ticks can read them. Answer with a short summary, without "
    "tool calls, when you are done for this tick."
)
DEFAULT_TASK_PROMPT = "Decide what to do this tick."

_MISSING_MEANING = {
    "absent": "nothing in the sources matches",
    "stale": "the reading is too old",
    "evicted": "dropped from working memory for capacity",
    "fault": "hidden from you",
}

_log = structlog.get_logger(__name__)

A = TypeVar("A", bound=BaseModel)


# -- the client interface -----------------------------------------------------------------


class FunctionCallLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> Any: ...


class ToolCallLike(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def function(self) -> FunctionCallLike: ...


class ChatReplyLike(Protocol):
    """An assistant message as chat-completions returns it, plus its finish reason."""

    @property
    def content(self) -> str | None: ...

    @property
    def tool_calls(self) -> Sequence[ToolCallLike] | None: ...

    @property
    def finish_reason(self) -> str | None: ...


class ChatClient(Protocol):
    """Something that answers a chat-completions request with tools."""

    def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ChatReplyLike: ...


@dataclass(frozen=True, slots=True)
class FunctionCall:
    name: str
    arguments: str = "{}"


@dataclass(frozen=True, slots=True)
class ReplyToolCall:
    id: str
    function: FunctionCall


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A concrete ``ChatReplyLike``."""

    content: str | None = None
    tool_calls: tuple[ReplyToolCall, ...] = ()
    finish_reason: str | None = "stop"

    @classmethod
    def text(cls, content: str) -> ChatReply:
        """A final answer without tool calls."""
        return cls(content, (), "stop")

    @classmethod
    def calls(
        cls,
        *calls: tuple[str, str | Mapping[str, Any]],
        content: str | None = None,
        first_id: int = 0,
    ) -> ChatReply:
        """Tool calls ``(name, arguments)``; arguments as JSON text (sent as is, even when
        malformed) or a mapping (encoded). Ids are ``call_<n>`` from ``first_id``."""
        made = tuple(
            ReplyToolCall(
                f"call_{first_id + i}",
                FunctionCall(name, args if isinstance(args, str) else to_json_text(args)),
            )
            for i, (name, args) in enumerate(calls)
        )
        return cls(content, made, "tool_calls")


class ScriptExhausted(TickworkError, RuntimeError):
    """A ``ScriptedClient`` was asked for more replies than it was given."""


Script = (
    ChatReplyLike
    | Callable[[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]], ChatReplyLike]
)


class ScriptedClient:
    """Replays canned replies in order (a reply, or a function of the request), and records
    every request (``requests``: deep copies of ``(messages, tools)``)."""

    def __init__(self, replies: Iterable[Script], *, repeat_last: bool = False) -> None:
        self._replies = list(replies)
        self.repeat_last = repeat_last
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self._next = 0

    @property
    def remaining(self) -> int:
        return max(0, len(self._replies) - self._next)

    def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ChatReplyLike:
        self.requests.append(
            ([dict(copy.deepcopy(m)) for m in messages], [dict(copy.deepcopy(t)) for t in tools])
        )
        if self._next >= len(self._replies):
            if not (self.repeat_last and self._replies):
                raise ScriptExhausted(
                    f"the script has {len(self._replies)} replies and "
                    f"request {len(self.requests)} asked for another"
                )
            reply = self._replies[-1]
        else:
            reply = self._replies[self._next]
            self._next += 1
        return reply(messages, tools) if callable(reply) else reply


class OpenAIChatClient:
    """Adapts an OpenAI-compatible client object (``client.chat.completions.create``).

    ``client`` is e.g. ``openai.OpenAI(base_url=..., api_key=...)`` (``pip install
    'tickwork[llm]'``); ``options`` (temperature, seed, ...) are passed to every request.
    """

    def __init__(
        self, client: Any, *, model: str, tool_choice: str = "auto", **options: Any
    ) -> None:
        if not hasattr(client, "chat"):
            raise TypeError(
                f"expected an OpenAI-compatible client with .chat.completions, "
                f"got {type(client).__name__}"
            )
        self.client = client
        self.model = model
        self.tool_choice = tool_choice
        self.options = options

    def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ChatReplyLike:
        request: dict[str, Any] = {"model": self.model, "messages": list(messages), **self.options}
        if tools:
            request["tools"] = list(tools)
            request["tool_choice"] = self.tool_choice
        response = self.client.chat.completions.create(**request)
        choice = response.choices[0]
        message = choice.message
        calls = tuple(
            ReplyToolCall(
                str(c.id), FunctionCall(str(c.function.name), _arguments(c.function.arguments))
            )
            for c in (getattr(message, "tool_calls", None) or ())
        )
        return ChatReply(
            getattr(message, "content", None), calls, getattr(choice, "finish_reason", None)
        )


# -- action tools -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ActionTool(Generic[A]):
    """A tool that acts through the cabin's outbox: ``act(args, out)`` returns what the
    model is told (JSON-able data). Effects apply after the tick, like any outbox."""

    name: str
    description: str
    args: type[A]
    act: Callable[[A, Outbox], Any]

    def bind(self, out: Outbox) -> Tool[A]:
        """This action as a plain ``Tool`` acting on ``out``."""
        act = self.act

        def run(args: A) -> Any:
            return act(args, out)

        return Tool(self.name, self.description, self.args, run)


def command_tool(name: str, args: type[A], description: str) -> ActionTool[A]:
    """An action tool that queues the command ``name`` with the validated arguments."""

    def act(parsed: A, out: Outbox) -> dict[str, Any]:
        values = parsed.model_dump()
        out.command(name, **values)
        return {
            "queued": "command",
            "name": name,
            "args": values,
            "note": "applied after this tick",
        }

    return ActionTool(name, description, args, act)


def event_tool(
    kind: str, args: type[A], description: str, *, tool_name: str | None = None
) -> ActionTool[A]:
    """An action tool that emits an event of ``kind`` with the validated arguments."""

    def act(parsed: A, out: Outbox) -> dict[str, Any]:
        values = parsed.model_dump()
        out.emit(kind, values, tags=("llm",))
        return {"queued": "event", "kind": kind, "data": values, "note": "logged after this tick"}

    return ActionTool(tool_name or kind, description, args, act)


# -- the cabin ----------------------------------------------------------------------------


class LLMCabin:
    """A cabin deciding with a chat-completions client; see the module docstring."""

    uses_notes: ClassVar[bool] = True

    def __init__(
        self,
        spec: ContextSpec,
        *,
        client: ChatClient,
        action_tools: Sequence[ActionTool[Any]] = (),
        max_steps: int = MAX_STEPS,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        task_prompt: str = DEFAULT_TASK_PROMPT,
        scope_to: str | None = "goal:*",
        answer_key: str | None = None,
        history: int = 40,
        summarize: Summarizer | None = None,
        value_chars: int = 240,
    ) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise SettingError(f"max_steps must be an int >= 1, got {max_steps!r}")
        if value_chars < 16:
            raise SettingError(f"value_chars must be at least 16, got {value_chars!r}")
        if not callable(getattr(client, "complete", None)):
            raise TypeError(
                f"client must have complete(messages, tools), got {type(client).__name__}"
            )
        for tool in action_tools:
            if not isinstance(tool, ActionTool):
                raise TypeError(f"action_tools take ActionTool objects, got {tool!r}")
        # builds once to refuse duplicate or clashing tool names now, not at the first tick
        ToolDispatcher(
            [*scratchpad_tools(Scratchpad()), *(t.bind(Outbox(spec.name)) for t in action_tools)]
        )
        ShortTermMemory(max_messages=history)
        self.spec = spec
        self.client = client
        self.action_tools = tuple(action_tools)
        self.max_steps = max_steps
        self.system_prompt = system_prompt
        self.task_prompt = task_prompt
        self.scope_to = scope_to
        self.answer_key = answer_key
        self.history = history
        self.summarize = summarize
        self.value_chars = value_chars

    @property
    def name(self) -> str:
        return self.spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        task = self._task(view)
        if task is not None:
            out.scope_notes(task)
        draft = Scratchpad.from_view(view, task=task)
        before = {n.key: n for n in draft.notes()}
        dispatcher = ToolDispatcher(
            [*scratchpad_tools(draft, tick=view.tick), *(t.bind(out) for t in self.action_tools)]
        )
        schemas = dispatcher.schemas()
        trace = ShortTermMemory(max_messages=self.history, summarize=self.summarize)
        trace.set_goal(self._goal_text(view, task))

        answer: str | None = None
        finish: str | None = None
        stopped = "max_steps"
        calls_made = errors = rounds = 0
        last_tools: list[str] = []
        for rounds in range(1, self.max_steps + 1):
            trace.set_system(self.render_prompt(view, draft))
            reply = self.client.complete(trace.to_openai(), schemas)
            content, calls, finish = _read_reply(reply, view.tick, rounds)
            trace.add_assistant(content, calls)
            if not calls:
                answer, stopped = content, "answer"
                break
            last_tools = [c.name for c in calls]
            for call in calls:
                result = dispatcher.call(call.name, call.arguments)
                calls_made += 1
                errors += not result.ok
                trace.add_tool_result(call.id, result.content, name=call.name)

        if stopped == "max_steps":
            out.emit(
                "llm_max_steps",
                {
                    "cabin": self.name,
                    "max_steps": self.max_steps,
                    "tool_calls": calls_made,
                    "last_tools": last_tools,
                },
                tags=("llm",),
            )
            _log.warning(
                "llm_max_steps",
                cabin=self.name,
                tick=view.tick,
                max_steps=self.max_steps,
                last_tools=last_tools,
            )
        written = self._flush_notes(draft, before, out)
        out.emit(
            "llm_outcome",
            {
                "cabin": self.name,
                "stopped": stopped,
                "answer": answer,
                "rounds": rounds,
                "tool_calls": calls_made,
                "tool_errors": errors,
                "finish_reason": finish,
                "notes_written": written,
                "task": task,
            },
            tags=("llm",),
        )
        if self.answer_key is not None and answer is not None:
            out.write(self.answer_key, answer)

    # -- prompts ------------------------------------------------------------------------

    def render_prompt(self, view: CabinView, draft: Scratchpad) -> str:
        """The system prompt of one round: instructions, the view, the draft notes."""
        return "\n\n".join(
            (
                self.system_prompt,
                render_view(view, value_chars=self.value_chars),
                draft.to_prompt_text(),
            )
        )

    def _task(self, view: CabinView) -> str | None:
        if self.scope_to is None:
            return None
        found = sorted(
            k for k in view if not k.startswith(NOTE_PREFIX) and matches(k, self.scope_to)
        )
        return found[0] if found else None

    def _goal_text(self, view: CabinView, task: str | None) -> str:
        if task is None:
            return self.task_prompt
        value = _clip(to_json_text(view[task]), self.value_chars)
        return f"{self.task_prompt}\nYour task: {task} = {value}"

    @staticmethod
    def _flush_notes(draft: Scratchpad, before: Mapping[str, Note], out: Outbox) -> list[str]:
        now = {n.key: n for n in draft.notes()}
        if set(before) - set(now):
            out.clear_notes()
            before = {}
        written = []
        for key, note in now.items():
            old = before.get(key)
            if old is None or old.value != note.value or old.description != note.description:
                out.note(key, note.value, note.description)
                written.append(key)
        return written


def render_view(view: CabinView, *, value_chars: int = 240) -> str:
    """A compact, deterministic text of what ``view`` holds (notes excepted) and misses."""
    lines = [f"State at tick {view.tick} (t={view.time:.3f}s), cabin {view.cabin}:"]
    keys = sorted(k for k in view if not k.startswith(NOTE_PREFIX))
    for key in keys:
        lines.append(f"- {key}: {_clip(to_json_text(view[key]), value_chars)}")
    if not keys:
        lines.append("- (nothing)")
    if view.missing:
        lines.append("Missing (required but not visible):")
        for pattern in sorted(view.missing):
            reason = view.missing[pattern]
            lines.append(f"- {pattern}: {reason} ({_MISSING_MEANING.get(reason, reason)})")
    else:
        lines.append("Missing: none")
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    if isinstance(raw, Mapping):
        return to_json_text(raw)
    return str(raw)


def _read_reply(
    reply: ChatReplyLike, tick: int, round_: int
) -> tuple[str | None, tuple[ToolCall, ...], str | None]:
    """Content, tool calls (with ids; missing ids are made up) and the finish reason."""
    content = getattr(reply, "content", None)
    raw_calls = getattr(reply, "tool_calls", None) or ()
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_calls):
        function = getattr(raw, "function", None)
        name = getattr(function, "name", None)
        call_id = getattr(raw, "id", None)
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = f"call_t{tick}_r{round_}_{i}"
        seen.add(call_id)
        calls.append(
            ToolCall(
                call_id,
                name if isinstance(name, str) else repr(name),
                _arguments(getattr(function, "arguments", None)),
            )
        )
    text = content if isinstance(content, str) or content is None else str(content)
    return text, tuple(calls), getattr(reply, "finish_reason", None)
