"""The LLM cabin's settings: how much it sends its model, and how long it keeps asking.

One frozen, keyword-only object, checked when it is built (``runtime.settings``): a bad
value raises one ``SettingError`` naming the setting. A spec's ``[params]`` table sets
them for a cabin built from a spec (``LLMCabin.Settings``), e.g.::

    [params]
    note_chars = 1000
    step_budget = 16
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from runtime.settings import Count, Settings

__all__ = ["LLMSettings"]

Chars = Annotated[int, Field(ge=16, le=1_000_000)]


class LLMSettings(Settings):
    """An LLM cabin's tuning values (see the module docstring)."""

    note_chars: Chars = 2000
    """The most characters of one scratchpad note's value (as JSON), and of its
    description, in the system prompt (default 2000, 16 to 10⁶); the rest is cut, with the
    marker ``…[truncated: N of M characters not shown]``."""

    message_chars: Chars = 4000
    """The most characters of a tool result, and of the text and tool-call arguments of
    the model's own earlier messages, in what is sent back to the model (default 4000, 16
    to 10⁶); cut with the same marker (cut arguments are sent as
    ``{"truncated_arguments": "..."}``). The tools and the outcome get the whole text."""

    step_budget: Count = 32
    """The most model requests for one task without an answer, across ticks and
    decisions (default 32, >= 1); failed requests count. An answer starts the count again;
    a task that reaches it is given up (an ``alarm`` of kind ``llm_step_budget``) and not
    asked about again while it lasts."""
