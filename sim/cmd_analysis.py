"""Commands added to ``python -m sim`` (placeholder until written)."""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    """Add this module's commands to the ``python -m sim`` parser."""
