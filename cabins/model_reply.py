"""A model's reply read within bounds, so that a hostile or broken server cannot hold a
cabin's decision forever or fill its memory.

An HTTP client's timeout bounds each read, not the request: a server that sends its
headers and then one byte every 2 s never trips a 5 s read timeout. ``ReplyLimits`` is the
policy an ``OpenAIChatClient`` reads every reply under: a whole-request ``deadline``
(checked as each piece of the body arrives, and each read given at most what is left of
it), a bound on the reply's bytes (``max_bytes``, counted as they arrive, so a reply past
it is never held whole) and on its tool calls (``max_tool_calls``). A reply past any of
them raises a ``ModelReplyError``, which the LLM cabin handles as it handles any failed
call: the decision ends and its ``llm_outcome`` event says why (``kind``: ``timeout`` for
the deadline, ``bad_reply`` for the others).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from runtime.errors import SettingError, TickworkError

__all__ = [
    "Completion",
    "ModelReplyError",
    "ReplyDeadlineExceeded",
    "ReplyLimits",
    "ReplyRefused",
    "read_reply",
]


class ModelReplyError(TickworkError):
    """A model's reply refused: past a ``ReplyLimits`` bound, or not a chat completion.
    ``kind`` is how ``cabins.llm.classify_error`` names it."""

    kind = "bad_reply"


class ReplyDeadlineExceeded(ModelReplyError, TimeoutError):
    """The whole request took longer than its deadline."""

    kind = "timeout"


class ReplyRefused(ModelReplyError, ValueError):
    """A reply too large, with too many tool calls, or that is not a chat completion."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyLimits:
    """What one model request may take: ``deadline`` seconds in all (the cabin's own
    decision deadline is 30 s by default), ``max_bytes`` of reply and ``max_tool_calls``
    tool calls in one reply."""

    deadline: float = 20.0
    max_bytes: int = 1 << 20
    max_tool_calls: int = 64

    def __post_init__(self) -> None:
        if (
            isinstance(self.deadline, bool)
            or not (isinstance(self.deadline, (int, float)) and math.isfinite(self.deadline))
            or self.deadline <= 0
        ):
            raise SettingError(f"deadline must be positive seconds, got {self.deadline!r}")
        for name in ("max_bytes", "max_tool_calls"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingError(f"{name} must be an int >= 1, got {value!r}")


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    arguments: Any = None


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    function: _Function


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="allow")
    message: _Message
    finish_reason: str | None = None


class _Completion(BaseModel):
    model_config = ConfigDict(extra="allow")
    choices: list[_Choice] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Completion:
    """A reply read and checked: its first choice's text, tool calls as ``(id, name,
    arguments)``, finish reason, and the model's refusal (``message.refusal``), if any."""

    content: str | None
    tool_calls: tuple[tuple[str, str, Any], ...]
    finish_reason: str | None
    refusal: str | None = None


def read_reply(
    chunks: Iterable[bytes], *, limits: ReplyLimits, clock: Callable[[], float], started: float
) -> Completion:
    """The completion the body ``chunks`` hold, read until ``started + limits.deadline`` by
    ``clock`` and at most ``limits.max_bytes`` long; a ``ModelReplyError`` if not."""
    parts: list[bytes] = []
    got = 0
    for chunk in chunks:
        got += len(chunk)
        if got > limits.max_bytes:
            raise ReplyRefused(f"the model's reply is over {limits.max_bytes} bytes; refused")
        parts.append(chunk)
        check_deadline(limits, clock, started)
    check_deadline(limits, clock, started)
    try:
        reply = _Completion.model_validate_json(b"".join(parts))
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReplyRefused(
            f"the model's reply is not a chat completion ({where}: {first['msg']})"
        ) from None
    return completion_of(reply.choices[0], limits)


def completion_of(choice: Any, limits: ReplyLimits) -> Completion:
    """A ``Completion`` of a choice shaped like OpenAI's (a parsed SDK object or ours),
    refused when it holds more than ``limits.max_tool_calls`` tool calls."""
    message = choice.message
    calls = getattr(message, "tool_calls", None) or ()
    if len(calls) > limits.max_tool_calls:
        raise ReplyRefused(
            f"the model's reply holds {len(calls)} tool calls; at most "
            f"{limits.max_tool_calls} are taken from one reply (refused)"
        )
    content = getattr(message, "content", None)
    refusal = getattr(message, "refusal", None)
    return Completion(
        content if isinstance(content, str) else None,
        tuple((str(c.id), str(c.function.name), c.function.arguments) for c in calls),
        getattr(choice, "finish_reason", None),
        refusal if isinstance(refusal, str) else None,
    )


def check_deadline(limits: ReplyLimits, clock: Callable[[], float], started: float) -> float:
    """The seconds left of the request's deadline; ``ReplyDeadlineExceeded`` when none."""
    left = started + limits.deadline - clock()
    if left <= 0:
        raise ReplyDeadlineExceeded(
            f"the model's reply took longer than the request's deadline of {limits.deadline:g} s"
        )
    return left
