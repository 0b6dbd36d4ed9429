"""Argument types shared by the commands of ``python -m sim`` (argparse ``type=`` callables).

Each refuses bad text with an ``argparse.ArgumentTypeError`` that says what it expected,
so argparse reports it as a usage error (exit status 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from sim.world.limits import MAX_DURATION, MAX_RATE_HZ, MAX_TICKS, MIN_RATE_HZ


def positive_int(text: str) -> int:
    """A whole number above 0 and at most ``MAX_TICKS`` (a billion)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {value}")
    if value > MAX_TICKS:
        raise argparse.ArgumentTypeError(f"expected a number of at most {MAX_TICKS}, got {value}")
    return value


def rate(text: str) -> float:
    """A tick rate in Hz, from ``MIN_RATE_HZ`` to ``MAX_RATE_HZ``."""
    return number_in(MIN_RATE_HZ, MAX_RATE_HZ, unit="Hz")(text)


def duration(text: str) -> float:
    """A run length in simulated seconds, above 0 and at most ``MAX_DURATION``."""
    return number_in(0.0, MAX_DURATION, unit="s", above=True)(text)


def positive_float(text: str) -> float:
    """A finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


def number_in(
    low: float, high: float, *, unit: str = "", above: bool = False
) -> Callable[[str], float]:
    """A finite number from ``low`` (above it, with ``above``) to ``high``; ``unit`` names
    it in messages."""
    shown = f" {unit}" if unit else ""
    wanted = f"above {low:g}" if above else f"of at least {low:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (low < value if above else low <= value) or not value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a number {wanted} and at most {high:g}{shown}, got {text}"
            )
        return value

    return parse


def at_least(low: int, *, what: str = "number", high: int | None = None) -> Callable[[str], int]:
    """A whole number of at least ``low`` (and at most ``high``, if given); ``what`` names
    it in messages (``number of ticks``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole {what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected a {what} of at least {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"expected a {what} of at most {high}, got {value}")
        return value

    return parse


MAX_SEEDS = 100_000
"""The most seeds one campaign can be given (``0-99999999999`` would be a list too big to
hold)."""


def seeds(text: str) -> list[int]:
    """Seeds as ``0-4`` or ``1,5,9`` (or both, comma-separated), at most ``MAX_SEEDS``."""
    found: list[int] = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            if dash:
                first, last = int(low), int(high)
                if last - first + 1 > MAX_SEEDS - len(found):
                    raise argparse.ArgumentTypeError(
                        f"expected at most {MAX_SEEDS} seeds, got {text!r}"
                    )
                found.extend(range(first, last + 1))
            else:
                found.append(int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected seeds like 0-4 or 1,5,9, got {text!r}"
        ) from None
    if len(found) > MAX_SEEDS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_SEEDS} seeds, got {text!r}")
    if not found or any(s < 0 for s in found):
        raise argparse.ArgumentTypeError(f"expected non-negative seeds, got {text!r}")
    return found
