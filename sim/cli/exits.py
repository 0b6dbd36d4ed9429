"""What every command of ``python -m sim`` shares: exit statuses, the error for bad input,
and how notices and JSON reach the terminal.

Exit status 0 means all is well, 1 that the command did its work and found a bad
outcome (a run's failed verdict, a missed reaction, drift, a suggestion), 2 bad input: any
``TickworkError``, which ``sim.cli.app.main`` prints as one ``error:`` line.
"""

from __future__ import annotations

import sys
from typing import Any

from runtime.errors import TickworkError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class InputError(TickworkError):
    """Bad input from the user that no library error describes: one message, exit status 2."""


def notice(text: str) -> None:
    """A note for people on standard error (e.g. that a recording is damaged)."""
    print(f"notice: {text}", file=sys.stderr)


def print_json(report: Any) -> None:
    """One JSON object on standard output, keys sorted, no NaN."""
    import json

    print(json.dumps(report, sort_keys=True, allow_nan=False))
