"""Profiles: cProfile statistics of a repeated unit of work, reduced to per-call figures."""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from typing import Any


def profile_stats(
    fn: Callable[[], object], count: int, setup: Callable[[], object] | None = None
) -> dict[Any, Any]:
    """cProfile's raw statistics over ``count`` calls of ``fn`` (``setup`` runs unprofiled)."""
    profiler = cProfile.Profile()
    for _ in range(count):
        if setup is not None:
            setup()
        profiler.enable()
        fn()
        profiler.disable()
    entries: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    return entries


def top_functions(
    entries: dict[Any, Any], count: int, top: int = 25, *, by: str = "self", only: str | None = None
) -> list[dict[str, Any]]:
    """The ``top`` functions of ``entries`` by ``self`` or ``cumulative`` time, per call of the
    profiled unit; ``only`` keeps functions whose short path starts with it (``runtime/``)."""
    if by not in ("self", "cumulative"):
        raise ValueError(f"by must be 'self' or 'cumulative', got {by!r}")
    rows: list[dict[str, Any]] = []
    for (path, line, name), (_cc, ncalls, tottime, cumtime, _callers) in entries.items():
        where = _short(path)
        if only is not None and not where.startswith(only):
            continue
        rows.append(
            {
                "function": f"{where}:{line}:{name}",
                "calls_per_tick": round(ncalls / count, 2),
                "self_us_per_tick": round(tottime / count * 1e6, 2),
                "cumulative_us_per_tick": round(cumtime / count * 1e6, 2),
            }
        )
    rows.sort(key=lambda r: r[f"{by}_us_per_tick"], reverse=True)
    return rows[:top]


def _short(path: str) -> str:
    for root in ("/runtime/", "/benchmarks/", "/sim/", "/cabins/", "/site-packages/"):
        if root in path:
            return root.strip("/") + "/" + path.split(root, 1)[1]
    return path
