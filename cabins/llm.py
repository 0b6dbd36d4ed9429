"""The LLM cabin: a cabin whose decisions come from a chat-completions model with tools.

When it decides, ``LLMCabin.step`` runs a bounded tool loop on its frozen view:

1. It takes a private *draft* of its scratchpad notes (the view's ``note:*`` items,
   of its current task only) so that tool rounds within the decision can read what
   earlier rounds wrote; the live pad is never touched.
2. Every round it rebuilds the system prompt from the view (a compact,
   deterministic rendering of its items, its missing items and what it lost to
   capacity; reading a note the view lost says it was evicted) and the draft notes
   (the seed's "re-inject the latest state before every call"), and asks the client
   for the next message, offering the scratchpad tools and its action tools (in
   OpenAI's strict mode with ``strict_tools=True``).
3. Tool calls are executed by a ``ToolDispatcher``: bad calls (unknown tool,
   malformed JSON, wrong arguments) come back to the model as error results. Action
   tools put commands, events or board writes in the outbox (applied after the
   decision). The same action with the same arguments twice in one decision is not
   queued again: the model is told to re-plan, and a ``replan`` event (reason
   ``same_action_twice``) says so.
4. It stops when the model answers without tool calls, when it refuses
   (``message.refusal``: the outcome is ``refusal``, with the model's text, and an
   ``alarm`` of kind ``llm_refusal``), or after ``max_steps`` rounds (then it emits an
   ``llm_max_steps`` event). A reply cut off at the length limit
   (``finish_reason = "length"``) is not an answer: it is not used, and the model is
   asked again. The changed notes go to the outbox (``out.note``), and the outcome is
   an ``llm_outcome`` event (and, with ``answer_key``, a board write of the answer).

What it sends is bounded (``LLMSettings``, which a spec's ``[params]`` may set): each note
at ``note_chars`` in the prompt, each tool result and each of the model's earlier texts and
tool-call arguments at ``message_chars`` in the history, cut with a visible marker
(``runtime.agent.clip``). How long it keeps asking is bounded too: a ``StepBudget``
(``step_budget`` requests for one task without an answer, across ticks) gives a task up
with an ``alarm`` (kind ``llm_step_budget``), and the cabin's own note writes are not a
change that makes it ask again.

It is asynchronous by default (``DEFAULT_TIMING``, unless its spec has a ``[timing]``
table): the loop hands it a view and goes on while the model thinks. It calls the model
only when it should (``call_when``, a ``CallPolicy``: by default ``OnChange``, when the
prompt it would send differs from the last one it sent, or at a declared interval).

A client that fails mid-decision (a transport error, HTTP 429 or 5xx, a timeout, any
exception) ends the decision: the ``llm_outcome`` event (``stopped = "error"``) says what
kind of failure it was and lists what was queued (writes, commands, events, notes) and
what was lost (the rest of the decision: its answer, and whatever the ``on_error`` policy
dropped: ``KeepQueued``, the default, applies what earlier rounds queued; ``DropQueued``
drops it and lists every dropped board write). Nothing is dropped without being listed.
When it asks again is the ``retry`` policy's (``runtime.backoff.Backoff``): exponential
backoff with jitter drawn from the cabin's seeded generator (``rng``), at least what a
429's or 503's ``Retry-After`` asks, measured on the loop's clock (the view's time: never
a sleep). An error asking again cannot fix (HTTP 400, context length among them, 401,
403, 404, 422) is not retried: the task is given up with an ``alarm`` of kind
``llm_permanent_error`` naming the cause.

The client is an interface (``ChatClient``, ``runtime.agent.chat``, which also reads replies
and classifies failures for the agent turn): anything with
``complete(messages, tools)`` returning a message shaped like OpenAI's
(``content``, ``tool_calls`` with ``id``/``function.name``/``function.arguments``,
``finish_reason``). ``ScriptedClient`` replays canned replies (for tests);
``OpenAIChatClient`` adapts any OpenAI-compatible client object
(``client.chat.completions.create``), e.g. from the ``openai`` package, with a read
timeout of ``DEFAULT_TIMEOUT`` seconds, a whole-request deadline and bounds on a reply's
size and tool calls (``cabins.model_reply.ReplyLimits``) and no retries inside a decision by
default;
``LLMEndpoint`` says where a model is (base URL, model, key) and makes one.
"""

from __future__ import annotations

import copy
import hashlib
import os
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np
import structlog
from pydantic import BaseModel

from cabins.llm_settings import LLMSettings
from cabins.model_reply import (
    ReplyLimits,
    check_deadline,
    completion_of,
    read_reply,
)
from runtime.agent.budget import StepBudget
from runtime.agent.chat import (
    ChatClient,
    ChatReplyLike,
    arguments_text,
    canonical_arguments,
    classify_error,
    refusal_of,
    reply_parts,
)
from runtime.agent.clip import clip, clip_arguments
from runtime.agent.memory import ShortTermMemory, Summarizer, ToolCall
from runtime.agent.tools import Tool, ToolDispatcher, scratchpad_tools
from runtime.backoff import Backoff
from runtime.cabin import Outbox
from runtime.errors import SettingError, TickworkError
from runtime.pack import CabinView
from runtime.patterns import matches
from runtime.scratchpad import NOTE_PREFIX, Note, Scratchpad, to_json_text
from runtime.spec import ContextSpec
from runtime.timing import Timing

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MODEL",
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_TASK_PROMPT",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TIMING",
    "MAX_STEPS",
    "ActionTool",
    "CallPolicy",
    "ChatClient",
    "ChatReply",
    "ChatReplyLike",
    "DropQueued",
    "EveryTick",
    "FunctionCall",
    "KeepQueued",
    "LLMCabin",
    "LLMEndpoint",
    "LLMSettings",
    "OnChange",
    "OpenAIChatClient",
    "ReplyToolCall",
    "ScriptExhausted",
    "ScriptedClient",
    "classify_error",
    "command_tool",
    "event_tool",
    "render_view",
]

MAX_STEPS = 8
"""Default hard cap on client calls (tool-call rounds) per decision."""
DEFAULT_TIMEOUT = 5.0
"""Seconds an ``OpenAIChatClient`` waits for each read of a request by default (the SDK's
own is 600); ``DEFAULT_LIMITS.deadline`` bounds the whole request."""
DEFAULT_MODEL = "gpt-4o-mini"
"""The model an ``LLMEndpoint`` names when nothing else does."""
DEFAULT_LIMITS = ReplyLimits()
"""What one model request may take by default: 20 s in all, a 1 MiB reply, 64 tool calls."""
DEFAULT_TIMING = Timing(mode="async", deadline=30.0)
"""An LLM cabin's timing when its spec has no ``[timing]`` table: asynchronous, and a
decision that takes more than 30 s is late (dropped)."""
LENGTH_NUDGE = (
    "Your last reply was cut off at the length limit (finish_reason=length) and was not "
    "used. Reply again, shorter."
)

DEFAULT_SYSTEM_PROMPT = (
    "You are a decision component (a cabin) of a robot runtime. Each tick you see a "
    "frozen snapshot of the state; act only through your tools. Break the work into "
    "steps; after each step save intermediate results with save_to_scratchpad so that "
    "later steps and later ticks can read them. Answer with a short summary, without "
    "tool calls, when you are done for this tick."
)
DEFAULT_TASK_PROMPT = "Decide what to do this tick."

_TOLERANCE = 1e-9
"""Seconds: a retry time met to the last float digit is met."""

_MISSING_MEANING = {
    "absent": "nothing in the sources matches",
    "stale": "the reading is too old",
    "evicted": "dropped from working memory for capacity",
    "fault": "hidden from you",
}

_log = structlog.get_logger(__name__)

A = TypeVar("A", bound=BaseModel)


# -- the client interface -----------------------------------------------------------------


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
    """A concrete ``ChatReplyLike``, with the model's ``refusal`` (OpenAI's
    ``message.refusal``; a reply object without that attribute never refuses)."""

    content: str | None = None
    tool_calls: tuple[ReplyToolCall, ...] = ()
    finish_reason: str | None = "stop"
    refusal: str | None = None

    @classmethod
    def text(cls, content: str) -> ChatReply:
        """A final answer without tool calls."""
        return cls(content, (), "stop")

    @classmethod
    def refused(cls, why: str) -> ChatReply:
        """The model declines, saying ``why``."""
        return cls(None, (), "stop", why)

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
    A client with ``with_options`` (as the ``openai`` SDK's) gets ``timeout`` seconds per
    read and ``max_retries`` retries (default: ``DEFAULT_TIMEOUT``, none: a decision that
    fails fails now, and the cabin's ``retry`` policy says when it decides again, on the
    loop's clock; the SDK's own retries sleep inside the request). Every request is read
    within ``limits`` (``cabins.model_reply``), its deadline by ``clock``.

    A checkpoint holds nothing of it: a resumed run's LLM cabin is built with the endpoint
    the person resuming gives (``--llm-base-url``, the environment) and connects again.
    """

    _derived = ("*",)

    def __init__(
        self,
        client: Any,
        *,
        model: str,
        tool_choice: str = "auto",
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 0,
        limits: ReplyLimits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
        **options: Any,
    ) -> None:
        if not hasattr(client, "chat"):
            raise TypeError(
                f"expected an OpenAI-compatible client with .chat.completions, "
                f"got {type(client).__name__}"
            )
        if not timeout > 0:
            raise SettingError(f"timeout must be positive seconds, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise SettingError(f"max_retries must be an int >= 0, got {max_retries!r}")
        with_options = getattr(client, "with_options", None)
        if callable(with_options):
            client = with_options(timeout=timeout, max_retries=max_retries)
        self.client = client
        self.model = model
        self.tool_choice = tool_choice
        self.timeout = timeout
        self.max_retries = max_retries
        self.limits = limits
        self.clock = clock
        self.options = options
        self.endpoint: LLMEndpoint | None = None

    def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ChatReplyLike:
        """The model's next message, read within ``limits`` (a ``ModelReplyError`` past
        them): through the SDK's streaming response when it has one, so the body is read
        piece by piece under the deadline and the size bound."""
        request: dict[str, Any] = {"model": self.model, "messages": list(messages), **self.options}
        if tools:
            request["tools"] = list(tools)
            request["tool_choice"] = self.tool_choice
        completions = self.client.chat.completions
        started = self.clock()
        streaming = getattr(completions, "with_streaming_response", None)
        if streaming is None:  # a client object without one: bounded after the fact
            response = completions.create(**request)
            check_deadline(self.limits, self.clock, started)
            reply = completion_of(response.choices[0], self.limits)
        else:
            left = check_deadline(self.limits, self.clock, started)
            with streaming.create(**request, timeout=min(self.timeout, left)) as response:
                reply = read_reply(
                    response.iter_bytes(), limits=self.limits, clock=self.clock, started=started
                )
        calls = tuple(
            ReplyToolCall(call_id, FunctionCall(name, arguments_text(arguments)))
            for call_id, name, arguments in reply.tool_calls
        )
        return ChatReply(reply.content, calls, reply.finish_reason, reply.refusal)


@dataclass(frozen=True, slots=True)
class LLMEndpoint:
    """Where a model is: an OpenAI-compatible base URL, the model's name, and the name of the
    environment variable holding the API key (read when connecting, never stored)."""

    base_url: str | None = None
    model: str = DEFAULT_MODEL
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = 0
    limits: ReplyLimits = DEFAULT_LIMITS

    BASE_URL_ENV: ClassVar[str] = "TICKWORK_LLM_BASE_URL"
    MODEL_ENV: ClassVar[str] = "TICKWORK_LLM_MODEL"

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], *, base_url: str | None = None, model: str | None = None
    ) -> LLMEndpoint | None:
        """The endpoint ``base_url``/``model`` name, else ``TICKWORK_LLM_BASE_URL`` (or
        ``OPENAI_BASE_URL``) and ``TICKWORK_LLM_MODEL`` in ``environ``; None when nothing
        names one (no base URL and no ``OPENAI_API_KEY``)."""
        url = base_url or environ.get(cls.BASE_URL_ENV) or environ.get("OPENAI_BASE_URL")
        if url is None and not environ.get("OPENAI_API_KEY"):
            return None
        return cls(base_url=url, model=model or environ.get(cls.MODEL_ENV) or DEFAULT_MODEL)

    def client(self, **options: Any) -> OpenAIChatClient:
        """An ``OpenAIChatClient`` for this endpoint (needs the ``openai`` package)."""
        try:
            import openai
        except ImportError as exc:
            raise SettingError(
                "an LLM endpoint needs the openai package: pip install 'tickwork[llm]'"
            ) from exc
        # a local OpenAI-compatible server needs no key, but the SDK wants one
        key = os.environ.get(self.api_key_env) or "unused"
        made = OpenAIChatClient(
            openai.OpenAI(base_url=self.base_url, api_key=key),
            model=self.model,
            timeout=self.timeout,
            max_retries=self.max_retries,
            limits=self.limits,
            **options,
        )
        made.endpoint = self
        return made


# -- when to call the model, and what a failure keeps ------------------------------------


@dataclass(frozen=True, slots=True)
class LastCall:
    """The cabin's last call of the model: when, on what prompt (the one the cabin expects
    to see next: its own note writes applied), and whether it worked; after a failure, how
    many in a row and when it may ask again (None: not for this task, a permanent error)."""

    time: float
    fingerprint: str
    ok: bool
    failures: int = 0
    retry_at: float | None = None


class CallPolicy(Protocol):
    """Whether the cabin calls the model on a view (most views repeat the last one)."""

    def should_call(self, *, time: float, fingerprint: str, last: LastCall | None) -> bool: ...


@dataclass(frozen=True, slots=True)
class OnChange:
    """Call when the prompt differs from the last one sent (the view, or notes the cabin did
    not write itself, changed), or ``every`` seconds anyway (the cabin's declared rate;
    None: never just for time); after a failed call, again as soon as the cabin's ``retry``
    policy lets it."""

    every: float | None = None

    def __post_init__(self) -> None:
        if self.every is not None and not self.every > 0:
            raise SettingError(f"every must be positive seconds or None, got {self.every!r}")

    def should_call(self, *, time: float, fingerprint: str, last: LastCall | None) -> bool:
        if last is None or not last.ok:
            return True
        if fingerprint != last.fingerprint:
            return True
        return self.every is not None and time - last.time >= self.every


@dataclass(frozen=True, slots=True)
class EveryTick:
    """Call on every view (every decision)."""

    def should_call(self, *, time: float, fingerprint: str, last: LastCall | None) -> bool:
        return True


class KeepQueued:
    """After a failed call, apply what the decision's earlier rounds queued."""

    name = "keep"
    keep = True


class DropQueued:
    """After a failed call, drop everything the decision queued (listed as lost)."""

    name = "drop"
    keep = False


ErrorPolicy = KeepQueued | DropQueued


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


@dataclass(slots=True)
class _Decision:
    """The tallies of one decision (one call of ``step`` that asks the model)."""

    rounds: int = 0
    calls_made: int = 0
    errors: int = 0
    truncated: int = 0
    repeats: int = 0
    answer: str | None = None
    refusal: str | None = None
    finish: str | None = None
    stopped: str = "max_steps"
    error: dict[str, Any] | None = None
    last_tools: list[str] = field(default_factory=list)
    acted: set[tuple[str, str]] = field(default_factory=set)


class LLMCabin:
    """A cabin deciding with a chat-completions client; see the module docstring.

    ``settings`` (an ``LLMSettings``; a spec's ``[params]``) bounds what it sends and its
    step budget; ``retry`` (a ``runtime.backoff.Backoff``) says when it asks again after a
    failed call, with jitter drawn from ``rng`` (a seeded ``numpy.random.Generator``; by
    default one seeded from the cabin's name, so a run is the same every time).
    """

    uses_notes: ClassVar[bool] = True
    Settings = LLMSettings
    """What ``[params]`` in its spec may set (``runtime.settings.settings_from_spec``)."""

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
        timing: Timing | None = None,
        call_when: CallPolicy | None = None,
        on_error: ErrorPolicy | None = None,
        strict_tools: bool = False,
        settings: LLMSettings | None = None,
        retry: Backoff | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.settings, self.retry, self.rng = _asking(spec, settings, retry, rng)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise SettingError(f"max_steps must be an int >= 1, got {max_steps!r}")
        if value_chars < 16:
            raise SettingError(f"value_chars must be at least 16, got {value_chars!r}")
        if not callable(getattr(client, "complete", None)):
            raise TypeError(f"client needs complete(messages, tools): {type(client).__name__}")
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
        if timing is None:
            timing = spec.timing if "timing" in spec.model_fields_set else DEFAULT_TIMING
        self.timing = timing
        self.call_when: CallPolicy = call_when if call_when is not None else OnChange()
        self.on_error: ErrorPolicy = on_error if on_error is not None else KeepQueued()
        self.strict_tools = bool(strict_tools)
        self.budget = StepBudget(self.settings.step_budget)
        self.last_call: LastCall | None = None
        self._asked = False
        self.skipped = 0
        """Views it did not call the model on (a policy said no, or every task is given up)."""

    @property
    def name(self) -> str:
        return self.spec.name

    def tools_for(self, view: CabinView) -> Sequence[ActionTool[Any]]:
        """The action tools offered on ``view`` (by default ``action_tools``); a subclass
        may bind them to what the view holds."""
        return self.action_tools

    def should_decide(self, view: CabinView) -> bool:
        """Whether there is anything to decide on ``view`` at all (by default: yes)."""
        return True

    def latency_share(self) -> float:
        """The share of the declared latency its last decision takes on a simulated clock:
        all of it if it asked the model, none if it did not."""
        return 1.0 if self._asked else 0.0

    def step(self, view: CabinView, out: Outbox) -> None:
        self._asked = False
        found, task = self._pick_task(view)
        draft = Scratchpad.from_view(view, task=task)
        if not (found and self._may_call(view, self._fingerprint(view, draft, task))):
            self.skipped += 1
            return
        if task is not None:
            out.scope_notes(task)
        before = {n.key: n for n in draft.notes()}
        mark = _Mark.of(out)
        d = self._decide(view, out, draft, task)
        # the prompt it expects next: its own note writes are not a change to ask about
        self.last_call = self._called(view, d, task, self._fingerprint(view, draft, task))
        if d.stopped == "max_steps":
            self._report_max_steps(view, out, d)
        written, lost = self._settle(d, draft, before, mark, out)
        self._emit_outcome(out, d, task, written, lost, mark.queued(out, written))
        self._raise_alarms(out, d, task)
        if self.answer_key is not None and d.answer is not None:
            out.write(self.answer_key, d.answer)

    def _pick_task(self, view: CabinView) -> tuple[bool, str | None]:
        """The task to work on: the first goal in sight (``scope_to``) not given up, or
        None when it is not scoped or sees no goal; False when every goal is given up."""
        goals: list[str | None] = []
        if self.scope_to is not None:
            goals.extend(
                sorted(
                    k for k in view if not k.startswith(NOTE_PREFIX) and matches(k, self.scope_to)
                )
            )
        tasks = goals or [None]
        self.budget.keep_only(tasks)
        for task in tasks:
            if self.budget.reason(task) is None:
                return True, task
        return False, None

    def _may_call(self, view: CabinView, fingerprint: str) -> bool:
        """Whether to ask the model on ``view``: there is something to decide, the retry
        policy's wait after a failed call is over, and the call policy says so."""
        last = self.last_call
        if not self.should_decide(view):
            return False
        retry_at = last.retry_at if last is not None and not last.ok else None
        if retry_at is not None and view.time + _TOLERANCE < retry_at:
            return False
        return self.call_when.should_call(time=view.time, fingerprint=fingerprint, last=last)

    def _called(self, view: CabinView, d: _Decision, task: str | None, expected: str) -> LastCall:
        """The ``LastCall`` of a decision, and what it spent: after a failure, when the retry
        policy lets it ask again (told in ``d.error``: ``retry_in`` seconds, or
        ``permanent``, which gives the task up); the task's budget, given up when spent."""
        if d.stopped == "answer":
            self.budget.answered(task)
        elif self.budget.left(task) == 0:
            self.budget.give_up(task, "step_budget")
            if d.stopped == "max_steps" and d.rounds < self.max_steps:
                d.stopped = "step_budget"
        if d.error is None:
            return LastCall(view.time, expected, True)
        last = self.last_call
        failures = last.failures + 1 if last is not None and not last.ok else 1
        wait = self.retry.wait(
            failures, self.rng, status=d.error["status"], retry_after=d.error.get("retry_after")
        )
        d.error["permanent"] = wait is None
        d.error["retry_in"] = wait
        if wait is None:
            self.budget.give_up(task, "permanent_error")
        return LastCall(
            view.time, expected, False, failures, None if wait is None else view.time + wait
        )

    def _decide(
        self, view: CabinView, out: Outbox, draft: Scratchpad, task: str | None
    ) -> _Decision:
        """The tool loop of one decision: ask the model, run the tools it calls and tell it
        their results (clipped to ``message_chars``), round after round, until it answers
        without tool calls, refuses, the call fails or is filtered, or ``max_steps`` rounds
        (or what is left of the task's step budget) are used up."""
        tools = self.tools_for(view)
        actions = {t.name for t in tools}
        dispatcher = ToolDispatcher(
            [
                *scratchpad_tools(draft, tick=view.tick, evicted=_lost_notes(view)),
                *(t.bind(out) for t in tools),
            ]
        )
        schemas = dispatcher.schemas(strict=self.strict_tools)
        trace = ShortTermMemory(max_messages=self.history, summarize=self.summarize)
        trace.set_goal(self._goal_text(view, task))
        d = _Decision()
        chars = self.settings.message_chars
        for d.rounds in range(1, min(self.max_steps, self.budget.left(task)) + 1):
            trace.set_system(self.render_prompt(view, draft))
            self._asked = True
            self.budget.spend(task)
            try:
                reply = self.client.complete(trace.to_openai(), schemas)
            except Exception as exc:  # the model failed: the decision ends, nothing is hidden
                d.error, d.stopped = classify_error(exc), "error"
                _log.warning("llm_call_failed", cabin=self.name, tick=view.tick, **d.error)
                break
            content, calls, d.finish = reply_parts(reply, view.tick, d.rounds)
            d.refusal = refusal_of(reply)
            if d.refusal is not None:  # the model declines: its own outcome, with its text
                d.stopped = "refusal"
                break
            if d.finish == "length":  # cut off: neither an answer nor whole tool calls
                d.truncated += 1
                trace.add_user(LENGTH_NUDGE)
                continue
            if d.finish == "content_filter":
                d.stopped = "content_filter"
                break
            sent = [replace(c, arguments=clip_arguments(c.arguments, chars)) for c in calls]
            trace.add_assistant(None if content is None else clip(content, chars), sent)
            if not calls:
                d.answer, d.stopped = content, "answer"
                break
            d.last_tools = [c.name for c in calls]
            for call in calls:
                result = self._call(dispatcher, call, actions, d, view, out)
                trace.add_tool_result(call.id, clip(result, chars), name=call.name)
        return d

    def _report_max_steps(self, view: CabinView, out: Outbox, d: _Decision) -> None:
        """An ``llm_max_steps`` event (and a warning): the decision used up its rounds."""
        out.emit(
            "llm_max_steps",
            {
                "cabin": self.name,
                "max_steps": self.max_steps,
                "tool_calls": d.calls_made,
                "last_tools": d.last_tools,
            },
            tags=("llm",),
        )
        _log.warning(
            "llm_max_steps",
            cabin=self.name,
            tick=view.tick,
            max_steps=self.max_steps,
            last_tools=d.last_tools,
        )

    def _raise_alarms(self, out: Outbox, d: _Decision, task: str | None) -> None:
        """An ``alarm`` for a refusal (kind ``llm_refusal``, a warning with the model's text)
        and for a task given up in this decision (``llm_permanent_error`` with the error as
        its ``cause``, or ``llm_step_budget``)."""
        alarms: list[dict[str, Any]] = []
        if d.refusal is not None:
            alarms.append({"kind": "llm_refusal", "level": "warn", "reason": clip(d.refusal, 300)})
        why = self.budget.reason(task)
        if why == "permanent_error" and d.error is not None:
            status = d.error["status"]
            reason = f"HTTP {status}" if status is not None else d.error["kind"]
            if d.error["code"]:
                reason += f" ({d.error['code']})"
            alarms.append(
                {
                    "kind": "llm_permanent_error",
                    "level": "alarm",
                    "reason": f"{reason}: not asked again for this task",
                    "cause": dict(d.error),
                }
            )
        elif why == "step_budget":
            budget = self.budget.limit
            alarms.append(
                {
                    "kind": "llm_step_budget",
                    "level": "alarm",
                    "reason": f"{budget} requests without an answer (step_budget {budget}): "
                    "the task is given up",
                    "cause": {"step_budget": budget, "last_stop": d.stopped},
                }
            )
        for alarm in alarms:
            out.emit("alarm", {**alarm, "cabin": self.name, "task": task}, tags=("llm", "alarm"))
            _log.warning("llm_alarm", cabin=self.name, task=task, **alarm)

    def _settle(
        self,
        d: _Decision,
        draft: Scratchpad,
        before: Mapping[str, Note],
        mark: _Mark,
        out: Outbox,
    ) -> tuple[list[str], dict[str, Any]]:
        """Keep what the decision queued (its draft notes flushed to ``out``), or, after a
        failed call under ``DropQueued``, take it out of ``out`` again: the notes written,
        and what was lost (with the answer and the rounds left when the call failed)."""
        lost: dict[str, Any] = {}
        if d.error is None or self.on_error.keep:
            written = self._flush_notes(draft, before, out)
        else:
            written = []
            lost = mark.drop(out)
            lost["notes"] = sorted(
                k for k, n in {n.key: n for n in draft.notes()}.items() if before.get(k) != n
            )
        if d.error is not None:
            lost["answer"] = True
            lost["rounds_left"] = self.max_steps - d.rounds
        return written, lost

    def _emit_outcome(
        self,
        out: Outbox,
        d: _Decision,
        task: str | None,
        written: list[str],
        lost: dict[str, Any],
        queued: dict[str, list[str]],
    ) -> None:
        """The ``llm_outcome`` event: how the decision ended, what it queued and lost."""
        out.emit(
            "llm_outcome",
            {
                "cabin": self.name,
                "stopped": d.stopped,
                "answer": d.answer,
                "refusal": d.refusal,
                "rounds": d.rounds,
                "tool_calls": d.calls_made,
                "tool_errors": d.errors,
                "finish_reason": d.finish,
                "notes_written": written,
                "task": task,
                "truncated": d.truncated,
                "repeated_actions": d.repeats,
                "error": d.error,
                "queued": queued,
                "lost": lost,
            },
            tags=("llm",),
        )

    def _call(
        self,
        dispatcher: ToolDispatcher,
        call: ToolCall,
        actions: set[str],
        d: _Decision,
        view: CabinView,
        out: Outbox,
    ) -> str:
        """Run one tool call; the text its result carries back to the model."""
        d.calls_made += 1
        same = (call.name, canonical_arguments(call.arguments)) if call.name in actions else None
        if same is not None and same in d.acted:
            d.repeats += 1
            d.errors += 1
            out.emit(
                "replan",
                {
                    "cabin": self.name,
                    "reason": "same_action_twice",
                    "tool": call.name,
                    "arguments": same[1],
                    "tick": view.tick,
                },
                tags=("llm", "plan"),
            )
            return to_json_text(
                {
                    "error": f"same action twice: {call.name} with these arguments was already "
                    "queued in this decision and was not queued again; re-plan: choose "
                    "another action, or answer without tool calls if you are done"
                }
            )
        result = dispatcher.call(call.name, call.arguments)
        d.errors += not result.ok
        if result.ok and same is not None:
            d.acted.add(same)
        return result.content

    # -- prompts ------------------------------------------------------------------------

    def render_prompt(self, view: CabinView, draft: Scratchpad) -> str:
        """The system prompt of one round: instructions, the view, the draft notes (each
        clipped to ``settings.note_chars``)."""
        return "\n\n".join(
            (
                self.system_prompt,
                render_view(view, value_chars=self.value_chars),
                draft.to_prompt_text(value_chars=self.settings.note_chars),
            )
        )

    def _fingerprint(self, view: CabinView, draft: Scratchpad, task: str | None) -> str:
        """What the model would be told, without the tick and the time: equal fingerprints,
        equal prompts."""
        body = render_view(view, value_chars=self.value_chars).partition("\n")[2]
        notes = draft.to_prompt_text(value_chars=self.settings.note_chars)
        text = "\n".join((body, notes, self._goal_text(view, task)))
        return hashlib.sha256(text.encode()).hexdigest()

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


def _asking(
    spec: ContextSpec,
    settings: LLMSettings | None,
    retry: Backoff | None,
    rng: np.random.Generator | None,
) -> tuple[LLMSettings, Backoff, np.random.Generator]:
    """A cabin's settings, retry policy and generator, checked, with their defaults (the
    generator seeded from the spec's name: the same waits every run, and two cabins that
    fail together do not wait alike)."""
    if settings is not None and not isinstance(settings, LLMSettings):
        raise TypeError(f"settings must be LLMSettings, got {type(settings).__name__}")
    if retry is not None and not isinstance(retry, Backoff):
        raise TypeError(f"retry must be a Backoff, got {type(retry).__name__}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return (
        LLMSettings() if settings is None else settings,
        Backoff() if retry is None else retry,
        np.random.default_rng(zlib.crc32(spec.name.encode())) if rng is None else rng,
    )


@dataclass(frozen=True, slots=True)
class _Mark:
    """How full an outbox was when a decision began, to tell what the decision queued."""

    writes: int
    events: int
    commands: int
    reactions: int

    @classmethod
    def of(cls, out: Outbox) -> _Mark:
        return cls(len(out.writes), len(out.events), len(out.commands), len(out.reactions))

    def queued(self, out: Outbox, notes: Sequence[str]) -> dict[str, list[str]]:
        return {
            "writes": [w.key for w in out.writes[self.writes :]],
            "commands": [c.name for c in out.commands[self.commands :]],
            "events": [e.kind for e in out.events[self.events :] if e.kind != "replan"],
            "notes": list(notes),
        }

    def drop(self, out: Outbox) -> dict[str, Any]:
        """Take out what the decision queued (its ``replan`` events stay); what was taken."""
        lost = {
            "writes": [w.key for w in out.writes[self.writes :]],
            "commands": [c.name for c in out.commands[self.commands :]],
            "events": [e.kind for e in out.events[self.events :] if e.kind != "replan"],
        }
        del out.writes[self.writes :]
        del out.commands[self.commands :]
        del out.reactions[self.reactions :]
        out.events[self.events :] = [e for e in out.events[self.events :] if e.kind == "replan"]
        return lost


def render_view(view: CabinView, *, value_chars: int = 240) -> str:
    """A compact, deterministic text of what ``view`` holds (notes excepted), misses, and
    lost to capacity (notes included: they are in the scratchpad but not in the view)."""
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
    elif not view.evicted:
        lines.append("Missing: none")
    if view.evicted:
        lines.append(
            "Lost to capacity (selected for you, but working memory had no room for them "
            "this tick; they exist, you cannot see their values):"
        )
        for key, eviction in view.evicted.items():
            lines.append(f"- {key} (importance {eviction.importance:g})")
    return "\n".join(lines)


def _lost_notes(view: CabinView) -> tuple[str, ...]:
    """The notes (keys without ``note:``) ``view`` lost to capacity."""
    return tuple(k[len(NOTE_PREFIX) :] for k in view.evicted if k.startswith(NOTE_PREFIX))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
