"""The edit loop's share of a property test: a few drawn cases there, many under ``slow``."""

from __future__ import annotations

from typing import Any

import pytest


def few_and_many(few: int, many: int) -> list[Any]:
    """Parameters for ``examples``: ``few`` in the fast subset, ``many`` only under ``slow``."""
    return [
        pytest.param(few, id="few"),
        pytest.param(many, id="many", marks=pytest.mark.slow),
    ]
