"""Argument types shared by the commands of ``python -m sim`` (argparse ``type=`` callables).

Each refuses bad text with an ``argparse.ArgumentTypeError`` that says what it expected,
so argparse reports it as a usage error (exit status 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive_int(text: str) -> int:
    """A whole number above 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


def at_least(low: int, *, what: str = "number") -> Callable[[str], int]:
    """A whole number of at least ``low``; ``what`` names it in messages (``number of ticks``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole {what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected a {what} of at least {low}, got {value}")
        return value

    return parse


def seeds(text: str) -> list[int]:
    """Seeds as ``0-4`` or ``1,5,9`` (or both, comma-separated)."""
    found: list[int] = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            if dash:
                found.extend(range(int(low), int(high) + 1))
            else:
                found.append(int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected seeds like 0-4 or 1,5,9, got {text!r}"
        ) from None
    if not found or any(s < 0 for s in found):
        raise argparse.ArgumentTypeError(f"expected non-negative seeds, got {text!r}")
    return found
