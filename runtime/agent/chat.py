"""What an agent needs of a chat-completions model: the client it asks, how a reply is read
and how a failed request is told apart.

A ``ChatClient`` is anything with ``complete(messages, tools)`` returning an assistant
message shaped like OpenAI's (``content``, ``tool_calls`` with ``id`` and
``function.name``/``function.arguments``, ``finish_reason``, and ``refusal`` when the model
declines). ``cabins.llm.OpenAIChatClient`` adapts the ``openai`` SDK (read timeout,
whole-request deadline, bounded reply) and ``cabins.llm.ScriptedClient`` replays canned
replies; both the LLM cabin and the agent turn (``runtime.agent.turn``) ask through it.

- ``reply_parts`` takes a reply apart: its text, its tool calls as ``ToolCall``\\ s (an id
  that is missing or repeated is made up, so every call can be answered) and its finish
  reason; ``refusal_of`` is the model's refusal, if it sent one.
- ``classify_error`` says what kind of failure a client raised (``timeout``,
  ``rate_limited``, ``server_error``, ``rejected``, ``bad_reply``, ``transport``,
  ``error``), with the HTTP status, the error's code and the seconds a ``Retry-After`` asked
  for, which ``runtime.backoff.Backoff`` turns into a wait, or into no retry at all.
- ``canonical_arguments`` puts a call's JSON arguments in one form, so that the same
  action asked twice is seen to be the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from runtime.agent.memory import ToolCall
from runtime.backoff import retry_after_seconds
from runtime.errors import TickworkError
from runtime.scratchpad import to_json_text

__all__ = [
    "ChatClient",
    "ChatReplyLike",
    "FunctionCallLike",
    "ToolCallLike",
    "arguments_text",
    "canonical_arguments",
    "classify_error",
    "refusal_of",
    "reply_parts",
]


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


def refusal_of(reply: ChatReplyLike) -> str | None:
    """The model's refusal (``message.refusal``), if it sent a non-empty one."""
    refusal = getattr(reply, "refusal", None)
    return refusal if isinstance(refusal, str) and refusal.strip() else None


def reply_parts(
    reply: ChatReplyLike, tick: int, round_: int
) -> tuple[str | None, tuple[ToolCall, ...], str | None]:
    """Content, tool calls (with ids; a missing or repeated id is made up from ``tick`` and
    ``round_``) and the finish reason."""
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
                arguments_text(getattr(function, "arguments", None)),
            )
        )
    text = content if isinstance(content, str) or content is None else str(content)
    return text, tuple(calls), getattr(reply, "finish_reason", None)


def arguments_text(raw: Any) -> str:
    """A tool call's arguments as text (a mapping encoded as JSON, None as empty)."""
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    if isinstance(raw, Mapping):
        return to_json_text(raw)
    return str(raw)


def canonical_arguments(arguments: str) -> str:
    """Tool-call arguments in one form (sorted keys), so equal arguments compare equal;
    text that is not JSON as it is."""
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return arguments


def classify_error(exc: BaseException) -> dict[str, Any]:
    """What kind of failure a client raised: ``kind`` (``timeout``, ``rate_limited``,
    ``server_error``, ``rejected`` for another HTTP status, ``bad_reply`` for a reply
    refused by ``cabins.model_reply.ReplyLimits`` or not a completion (a tickwork error
    that names its ``kind``), ``transport`` or ``error``), the HTTP ``status`` if any, the
    error's ``code`` if the server gave one (e.g. ``context_length_exceeded``), the seconds
    its ``Retry-After`` asked for (``retry_after``, ``runtime.backoff.retry_after_seconds``,
    or None), the exception's ``type`` and ``message``. Works on the ``openai`` SDK's
    exceptions and on anything shaped like them."""
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(response, "status_code", None)
        status = status if isinstance(status, int) else None
    headers = getattr(response, "headers", None)
    retry_after = retry_after_seconds(headers) if isinstance(headers, Mapping) else None
    code = getattr(exc, "code", None)
    names = [k.__name__ for k in type(exc).__mro__]
    own_kind = getattr(exc, "kind", None) if isinstance(exc, TickworkError) else None
    if isinstance(own_kind, str):
        kind = own_kind
    elif isinstance(exc, TimeoutError) or any("Timeout" in n for n in names):
        kind = "timeout"
    elif status == 429:
        kind = "rate_limited"
    elif status is not None and status >= 500:
        kind = "server_error"
    elif status is not None:
        kind = "rejected"
    elif isinstance(exc, ConnectionError | OSError) or any(
        "Connection" in n or "Transport" in n for n in names
    ):
        kind = "transport"
    else:
        kind = "error"
    return {
        "kind": kind,
        "status": status,
        "code": code if isinstance(code, str) else None,
        "retry_after": retry_after,
        "type": type(exc).__name__,
        "message": str(exc)[:300],
    }
