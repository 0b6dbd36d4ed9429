"""Whole-simulator speed: the default scenario at 20 Hz, ticks per second and real-time factor.

Each run builds ``sim.run.harness.Simulation`` on the default (warehouse) scenario and
runs it as ``python -m sim run`` does, until every delivery is done or the
scenario's duration is over. The real-time factor is simulated seconds over wall
seconds of ``run`` (construction excluded, reported apart).
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import time
from typing import Any

from benchmarks.profiling import top_functions

RATE_HZ = 20.0


def _one_run(scenario: str, seed: int, *, record: str | None = None) -> dict[str, Any]:
    from sim.run.harness import Simulation

    t0 = time.perf_counter()
    sim = Simulation(scenario, seed=seed, rate_hz=RATE_HZ, record=record)
    build_s = time.perf_counter() - t0
    try:
        summary = sim.run()
    finally:
        sim.close()
    ticks = int(summary["ticks"])
    wall = float(summary["wall_seconds"])
    return {
        "ticks": ticks,
        "sim_time_s": float(summary["sim_time"]),
        "wall_s": round(wall, 3),
        "build_s": round(build_s, 3),
        "ticks_per_s": round(ticks / wall, 1),
        "real_time_factor": round(float(summary["real_time_factor"]), 1),
        "tick_compute_p50_ms": round(float(summary["tick_compute_p50_ms"]), 3),
        "tick_compute_p99_ms": round(float(summary["tick_compute_p99_ms"]), 3),
        "deliveries_done": summary["deliveries_done"],
    }


def measure_simulator(
    runs: int,
    *,
    scenario: str = "warehouse",
    seed: int = 0,
) -> dict[str, Any]:
    """``runs`` runs of ``scenario``; each run's figures and the median real-time factor."""
    import tempfile
    from pathlib import Path

    results = []
    overheads = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(runs):  # plain and recorded runs alternate, so load hits both alike
            plain = _one_run(scenario, seed)
            recorded = _one_run(scenario, seed, record=str(Path(folder) / f"run{i}.mcap"))
            results.append(plain)
            overheads.append(recorded["wall_s"] / plain["wall_s"])
    factors = [r["real_time_factor"] for r in results]
    return {
        "recording_overhead": round(statistics.median(overheads), 2),
        "scenario": scenario,
        "seed": seed,
        "rate_hz": RATE_HZ,
        "runs": results,
        "median_real_time_factor": round(statistics.median(factors), 1),
        "median_ticks_per_s": round(statistics.median(r["ticks_per_s"] for r in results), 1),
    }


def _breakdown() -> tuple[tuple[str, Any], ...]:
    """The parts of the loop's tick, disjoint, by the functions that run them (imported, so a
    function that moves or is renamed fails here instead of matching nothing)."""
    from cabins.executor import Executor
    from cabins.monitor import Monitor
    from cabins.planner import Planner
    from runtime.assembler import Assembler
    from runtime.loop import TickLoop
    from sim.run.harness import Simulation

    return (
        ("freeze (Assembler.assemble)", Assembler.assemble),
        ("planner step", Planner.step),
        ("executor step", Executor.step),
        ("monitor step", Monitor.step),
        ("apply outboxes (TickLoop._apply)", TickLoop._apply),
        ("world sensing (before_freeze)", Simulation.before_freeze),
        ("world motion and tallies (after_apply)", Simulation.after_apply),
    )


def _within() -> tuple[tuple[str, Any], ...]:
    """Parts nested inside the parts above (shares of the whole tick, not additive)."""
    from sim.run.harness import _Digest

    return (("board digest (inside sensing and apply)", _Digest.__call__),)


def _key(fn: Any) -> tuple[str, int, str]:
    code = fn.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


def profile_simulator(
    *, scenario: str = "warehouse", seed: int = 0, ticks: int | None = None
) -> dict[str, Any]:
    """cProfile over one run (or its first ``ticks``): the top functions, and the share of
    the tick each part of the loop takes (cProfile inflates Python-heavy parts); the parts
    and the rest of the loop add up to 100 %."""
    from runtime.loop import TickLoop
    from sim.run.harness import Simulation

    sim = Simulation(scenario, seed=seed, rate_hz=RATE_HZ)
    limit = sim.max_ticks if ticks is None else ticks
    done = 0
    profiler = cProfile.Profile()
    profiler.enable()
    while done < limit and not sim.done:
        sim.loop.step()
        done += 1
    profiler.disable()
    sim.close()
    entries: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]

    def cumulative(fn: Any) -> float:
        entry = entries.get(_key(fn))
        return float(entry[3]) if entry is not None else 0.0

    total = cumulative(TickLoop.step)
    parts: dict[str, float | None] = {}
    for label, fn in _breakdown():
        parts[label] = round(100.0 * cumulative(fn) / total, 1) if total else None
    if total:
        parts["rest of the loop"] = round(100.0 - sum(v or 0.0 for v in parts.values()), 1)
    within = {
        label: (round(100.0 * cumulative(fn) / total, 1) if total else None)
        for label, fn in _within()
    }
    return {
        "ticks": done,
        "share_of_tick_percent": parts,
        "within_tick_percent": within,
        "top": top_functions(entries, max(done, 1)),
    }
