"""``python -m benchmarks [--quick]``: run every measurement and write the results.

The full run measures every combination of board (100, 10,000 keys), map (1,000,
10,000, 100,000 features) and log (1,000, 100,000, 1,000,000 events); ``--quick``
measures the four worlds the targets need (the smallest, the largest, and the
largest with the log or the map at its smallest) with fewer ticks (not
enough for the growth along the board). Progress goes to stderr; the results to
``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import io
import itertools
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import long_term, peer, report
from benchmarks.event_memory import bytes_per_event
from benchmarks.simulator import measure_simulator, profile_simulator
from benchmarks.ticks import Plan, measure_world
from benchmarks.world import (
    AREA_PER_FEATURE,
    CAPACITY,
    EVENT_RATE,
    RATE_HZ,
    WorldSize,
)
from runtime import configure_logging

RESULTS = Path(__file__).resolve().parent / "results"
BOARDS = (100, 10_000)
FEATURES = (1_000, 10_000, 100_000)
EVENTS = (1_000, 100_000, 1_000_000)
LARGEST = WorldSize(BOARDS[-1], FEATURES[-1], EVENTS[-1])

QUICK_WORLDS = (
    WorldSize(100, 1_000, 1_000),
    WorldSize(10_000, 100_000, 1_000),
    WorldSize(10_000, 1_000, 1_000_000),
    LARGEST,
)
QUICK = Plan(
    ticks=1000, warmup=100, seed_ticks=40, seed_budget_s=1.0, stage_ticks=500, parity_ticks=1000
)
QUICK_LARGEST = Plan(
    ticks=2000,
    warmup=200,
    seed_ticks=8,
    seed_budget_s=1.5,
    stage_ticks=1000,
    profile_ticks=200,
    slack_ticks=1000,
    parity_ticks=1000,
    anchor_ticks=2000,
)
FULL = Plan(
    ticks=10_000,
    warmup=500,
    seed_ticks=200,
    seed_budget_s=15.0,
    stage_ticks=2000,
    parity_ticks=1000,
    anchor_ticks=2000,
)
FULL_LARGEST = Plan(
    ticks=30_000,
    warmup=1000,
    seed_ticks=100,
    seed_budget_s=30.0,
    stage_ticks=5000,
    profile_ticks=3000,
    slack_ticks=30_000,
    parity_ticks=2000,
    anchor_ticks=20_000,
)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Measure tickwork's tick cost against the seed's design and py_trees, "
        "its scaling, and the simulator's speed.",
    )
    parser.add_argument("--quick", action="store_true", help="four worlds and fewer ticks")
    parser.add_argument("--seed", type=int, default=0, help="seed of the world generator")
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help=f"folder for latest.json and latest.md (default {RESULTS})",
    )
    parser.add_argument(
        "--no-gc-freeze", action="store_true", help="do not gc.freeze() the loaded worlds"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    started = time.perf_counter()
    configure_logging(level="warning", stream=io.StringIO())
    mode = "quick" if args.quick else "full"
    worlds = (
        QUICK_WORLDS
        if args.quick
        else tuple(WorldSize(b, m, e) for b, m, e in itertools.product(BOARDS, FEATURES, EVENTS))
    )
    results: dict[str, Any] = {
        "command": "python -m benchmarks" + (" --quick" if args.quick else ""),
        "mode": mode,
        "machine": report.machine(),
        "settings": {
            "rate_hz": RATE_HZ,
            "capacity": CAPACITY,
            "area_per_feature_m2": AREA_PER_FEATURE,
            "event_rate_hz": EVENT_RATE,
            "seed": args.seed,
            "gc_freeze": not args.no_gc_freeze,
            "specs": ["planner", "executor", "monitor"],
        },
        "worlds": [],
    }
    for size in worlds:
        plan = (
            (QUICK_LARGEST if size == LARGEST else QUICK)
            if args.quick
            else (FULL_LARGEST if size == LARGEST else FULL)
        )
        if args.no_gc_freeze:
            plan = dataclasses.replace(plan, gc_freeze=False)
        _say(f"world {size.label}: measuring ({plan.ticks} runtime ticks)")
        t0 = time.perf_counter()
        load = os.getloadavg()[0]
        world = measure_world(size, plan, seed=args.seed)
        gc.collect()
        results["worlds"].append(
            {
                **world.as_dict(),
                "load_average_1min_at_start": round(load, 2),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        anchor = world.anchor.get("runtime_over_py_trees_p50")
        equal = world.anchor.get("runtime_over_equal_work_p50")
        _say(
            f"  runtime p50 {world.runtime.p50_us:.0f} µs, p99 {world.runtime.p99_us:.0f} µs; "
            f"seed p50 {world.seed.p50_us / 1e3:.2f} ms ({world.ratio:.0f}x); "
            + (f"{anchor}x py_trees; " if anchor is not None else "")
            + (f"{equal}x the equal-work peer; " if equal is not None else "")
            + f"parity {world.parity['ticks_compared'] - world.parity['mismatches']}/"
            f"{world.parity['ticks_compared']}; {time.perf_counter() - t0:.0f} s"
        )
    if peer.available():
        _say("py_trees anchor")
        results["peer"] = peer.measure_py_trees(2000 if args.quick else 20_000)
    else:
        _say("py_trees is not installed (pip install 'tickwork[bench]'): no peer anchor")
        results["peer"] = None
    _say("event log memory (tracemalloc)")
    results["event_memory"] = bytes_per_event(100_000 if args.quick else 1_000_000)
    _say("simulator, default scenario")
    results["simulator"] = measure_simulator(1 if args.quick else 5)
    results["simulator_profile"] = profile_simulator(ticks=600 if args.quick else None)
    _say("long-term memory, 1k / 10k / 100k memories in one scope")
    results["long_term"] = long_term.measure_long_term(quick=args.quick, seed=args.seed)
    results["duration_s"] = round(time.perf_counter() - started, 1)
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["targets"] = report.targets(results)
    json_path, md_path = report.write(results, args.out)
    _say(f"wrote {json_path} and {md_path} in {results['duration_s']:.0f} s")
    for t in results["targets"]:
        _say(
            f"  {t['target']}: {t['measured']} (goal {t['goal']}) "
            f"{'met' if t['met'] else 'MISSED' if t['met'] is not None else 'n/a'}"
        )
    return 0
