"""Bounded text for a model: a note, a tool result or a tool call's arguments cut to a
size, with a marker that says so.

What an agent sends a model grows with what it holds: one 200 kB note would otherwise go
out whole in every request of every round, and again in the history. ``clip`` keeps the
first ``limit`` characters of a text and appends ``TRUNCATED`` (``…[truncated: N of M
characters not shown]``), so the model, and a person reading the request, can see that
something was cut and how much; a text within the limit is returned as it is.
``clip_arguments`` does the same to a tool call's arguments while keeping them JSON (an
object ``{"truncated_arguments": "<clipped text>"}``), since servers may parse the
arguments of earlier calls.
"""

from __future__ import annotations

import json

__all__ = ["TRUNCATED", "clip", "clip_arguments"]

TRUNCATED = "…[truncated: {dropped} of {total} characters not shown]"
"""The marker appended to a cut text."""


def clip(text: str, limit: int) -> str:
    """``text`` if it is at most ``limit`` characters, else its first ``limit`` and the
    ``TRUNCATED`` marker."""
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED.format(dropped=len(text) - limit, total=len(text))


def clip_arguments(arguments: str, limit: int) -> str:
    """Tool-call arguments (JSON text) as they are if within ``limit`` characters, else a
    JSON object holding their clipped text."""
    if len(arguments) <= limit:
        return arguments
    return json.dumps({"truncated_arguments": clip(arguments, limit)}, ensure_ascii=False)
