"""JSON that came from a file or a database: parsed with a bound on its nesting.

A value nested thousands deep stops Python's parser with a ``RecursionError`` (not a
``ValueError``), and code that walks a value recursively (freezing it, rendering it) would
stop on it too; ``parse`` turns both into one ``JSONDataError`` and refuses anything
nested deeper than ``max_depth``, so that what it returns is safe to walk.
"""

from __future__ import annotations

import json
from typing import Any

from runtime.errors import TickworkError

MAX_DEPTH = 32
"""Arrays and objects nested deeper than this are refused by default (ours nest past 6
nowhere)."""


class JSONDataError(TickworkError, ValueError):
    """Text that is not JSON, or JSON nested deeper than allowed; the message says which."""


def parse(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``text`` as JSON, nested at most ``max_depth`` deep, or a ``JSONDataError``."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONDataError(f"JSON nested deeper than {max_depth} levels") from None
    except (ValueError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
        raise JSONDataError(f"not JSON ({exc})") from None
    if depth(value, stop=max_depth) > max_depth:
        raise JSONDataError(f"JSON nested deeper than {max_depth} levels")
    return value


def depth(value: Any, *, stop: int | None = None) -> int:
    """How deep arrays and objects nest in ``value`` (without recursion); it stops
    counting once past ``stop``."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if stop is not None and deepest > stop:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, level + 1) for v in item)
    return deepest
