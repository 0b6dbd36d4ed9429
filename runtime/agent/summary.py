"""Rolling summaries of a short-term trace: what is left of the turns that no longer fit.

A summariser is ``(previous summary or None, messages being dropped) -> new summary``;
``ShortTermMemory`` calls it each time old turns leave its trace, and shows the result as
one system message after the system prompt and the goal (which are never dropped).

- ``ExtractiveSummarizer`` (the default) is deterministic and invents nothing: each
  dropped turn becomes one line taken from it (``user: …``, ``assistant: …``, or, for a
  tool call with its result, ``tool name(arguments) -> result``), appended to the
  previous summary's lines; while the summary is over its token budget the oldest
  conversational line goes first, then the oldest tool line, and a leading
  ``[N earlier lines condensed]`` counts what went.
- ``LLMSummarizer`` asks a chat-completions client (anything with
  ``complete(messages, tools)`` whose reply has ``.content``) to condense instead; an
  answer that fails, is empty or is over the budget falls back to the extractive one.

Tokens are counted by a ``TokenCounter`` (default ``approx_tokens``: about four
characters a token, as with the usual BPE vocabularies of English); pass a real
tokenizer's count for exact budgets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import structlog

from runtime.errors import SettingError

__all__ = [
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "TokenCounter",
    "approx_tokens",
]

_log = structlog.get_logger("tickwork.summary")

TokenCounter = Callable[[str], int]


class _Call(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...


class Message(Protocol):
    """What a summariser reads of a message (``runtime.agent.memory.Message`` has it)."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str | None: ...
    @property
    def tool_calls(self) -> Sequence[_Call]: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...


_CONDENSED = re.compile(r"^\[(\d+) earlier lines? condensed\]$")
_TOOL = "tool "


def approx_tokens(text: str) -> int:
    """About four characters a token (at least one for non-empty text)."""
    return math.ceil(len(text) / 4) if text else 0


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class ExtractiveSummarizer:
    """The default rolling summary: extracted lines within ``budget`` tokens (module doc)."""

    def __init__(
        self,
        *,
        budget: int = 200,
        line_chars: int = 160,
        tokens: TokenCounter = approx_tokens,
    ) -> None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 16:
            raise SettingError(f"budget must be an int >= 16 (tokens), got {budget!r}")
        if isinstance(line_chars, bool) or not isinstance(line_chars, int) or line_chars < 16:
            raise SettingError(f"line_chars must be an int >= 16, got {line_chars!r}")
        self.budget = budget
        self.line_chars = line_chars
        self.tokens = tokens

    def __call__(self, previous: str | None, dropped: Sequence[Message]) -> str:
        condensed, lines = self._parse(previous)
        lines.extend(self.lines(dropped))
        return self.fit(condensed, lines)

    def lines(self, dropped: Sequence[Message]) -> list[str]:
        """One line per message taken from ``dropped`` (a tool call with its results)."""
        results = {m.tool_call_id: m for m in dropped if m.role == "tool"}
        out: list[str] = []
        limit = self.line_chars
        for m in dropped:
            if m.role == "tool":
                if not any(m.tool_call_id == c.id for d in dropped for c in d.tool_calls):
                    out.append(
                        _clip(f"tool {m.name or m.tool_call_id} -> {m.content or ''}", limit)
                    )
                continue
            if m.content:
                out.append(_clip(f"{m.role}: {m.content}", limit))
            for call in m.tool_calls:
                result = results.get(call.id)
                answer = "(no result)" if result is None else (result.content or "")
                out.append(_clip(f"tool {call.name}({call.arguments}) -> {answer}", limit))
        return out

    def fit(self, condensed: int, lines: list[str]) -> str:
        """The summary of ``lines`` within the budget, with the count of lines dropped."""
        lines = list(lines)
        while lines and self.tokens(_render(condensed, lines)) > self.budget:
            chatter = next((i for i, line in enumerate(lines) if not line.startswith(_TOOL)), None)
            lines.pop(0 if chatter is None else chatter)
            condensed += 1
        return _render(condensed, lines)

    @staticmethod
    def _parse(previous: str | None) -> tuple[int, list[str]]:
        if not previous:
            return 0, []
        lines = previous.split("\n")
        found = _CONDENSED.match(lines[0])
        if found:
            return int(found[1]), lines[1:]
        return 0, lines


def _render(condensed: int, lines: list[str]) -> str:
    head = (
        [f"[{condensed} earlier line{'s' if condensed != 1 else ''} condensed]"]
        if condensed
        else []
    )
    return "\n".join(head + lines)


class _Reply(Protocol):
    @property
    def content(self) -> str | None: ...


class _Client(Protocol):
    def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> _Reply: ...


class LLMSummarizer:
    """A rolling summary written by a model, with the extractive one as its fallback."""

    PROMPT = (
        "Condense the conversation below into a summary for an agent that will continue "
        "it. Keep every fact, decision, tool call and tool result that may matter later; "
        "drop pleasantries. At most {budget} tokens. Answer with the summary only."
    )

    def __init__(
        self,
        client: _Client,
        *,
        budget: int = 200,
        fallback: ExtractiveSummarizer | None = None,
        tokens: TokenCounter = approx_tokens,
    ) -> None:
        if not callable(getattr(client, "complete", None)):
            raise TypeError(
                f"client must have complete(messages, tools), got {type(client).__name__}"
            )
        self.client = client
        self.fallback = (
            fallback if fallback is not None else ExtractiveSummarizer(budget=budget, tokens=tokens)
        )
        self.budget = budget
        self.tokens = tokens
        self.fallbacks = 0

    def __call__(self, previous: str | None, dropped: Sequence[Message]) -> str:
        transcript = "\n".join(self.fallback.lines(dropped))
        before = f"Summary so far:\n{previous}\n\n" if previous else ""
        messages = [
            {"role": "system", "content": self.PROMPT.format(budget=self.budget)},
            {"role": "user", "content": f"{before}Conversation:\n{transcript}"},
        ]
        try:
            answer = (self.client.complete(messages, []).content or "").strip()
        except Exception as exc:  # a model that fails must not lose the trace
            _log.warning("summary_model_failed", error_type=type(exc).__name__, error=str(exc))
            answer = ""
        if answer and self.tokens(answer) <= self.budget:
            return answer
        self.fallbacks += 1
        _log.info("summary_fallback", reason="empty" if not answer else "over_budget")
        return self.fallback(previous, dropped)
