"""One world, measured: the seed reference and the runtime side by side, then the runtime alone.

``measure_world`` builds a world, builds the map's index (it is built lazily at the
first query), times a full garbage collection over what is loaded, calls
``gc.freeze()`` (when the plan says so) and then runs these phases:

1. **Side by side.** Each tick, the runtime's freeze plus three views and the seed
   reference's three assemblies run on the same inputs, and their selections are
   compared: every item a runtime view holds is in the seed's pack, what the pack
   holds beyond it was evicted by the runtime's memory that tick, and the map
   windows agree in order.
2. **Runtime.** The seed is detached. Each tick the runtime is timed, then the busy
   control (calibrated to the runtime's median in a warm-up) and the empty control,
   while a ``GcWatch`` records every collection and whether it fell inside a tick.
3. **Runtime, collections in the slack** (optional). Automatic collection is off
   during ticks and the collection CPython would have run is run between ticks, as
   a loop could do while it waits for its next deadline.
4. **Stages.** ``stages.replay`` times board, map, log and eviction; the real tick
   on the same state gives the freeze remainder.
5. **Profile** (optional). cProfile over more runtime ticks: the top functions.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.profiling import profile_stats, top_functions
from benchmarks.seed_reference import STAGES, SeedPack, StageClock, seed_tick
from benchmarks.stages import replay, shadow_of
from benchmarks.timing import (
    GcWatch,
    Summary,
    busy,
    calibrate_busy,
    collect_in_slack,
    summarize,
    time_full_collection,
)
from benchmarks.world import (
    Driver,
    RuntimeWorld,
    SeedWorld,
    WorldSize,
    generate,
    load_shipped_specs,
)
from runtime import CabinView, WorkingSet


@dataclass(frozen=True, slots=True)
class Plan:
    """How long to measure one world."""

    ticks: int
    warmup: int
    seed_ticks: int
    seed_budget_s: float
    stage_ticks: int
    profile_ticks: int = 0
    slack_ticks: int = 0
    gc_freeze: bool = True


@dataclass(slots=True)
class WorldResult:
    """Everything measured on one world."""

    size: WorldSize
    build_s: float
    gc_full_ms: dict[str, float]
    runtime: Summary
    busy_control: Summary
    empty_control: Summary
    side_runtime: Summary
    seed: Summary
    seed_stages_ms: dict[str, float]
    stages_us: dict[str, float]
    gc: dict[str, Any]
    parity: dict[str, Any]
    shape: dict[str, float]
    slack: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """Seed reference p50 over runtime p50."""
        return self.seed.p50_us / self.runtime.p50_us

    def as_dict(self) -> dict[str, Any]:
        return {
            "size": {
                "board": self.size.board,
                "features": self.size.features,
                "events": self.size.events,
            },
            "label": self.size.label,
            "build_s": round(self.build_s, 2),
            "gc_full_collection_ms": self.gc_full_ms,
            "runtime_tick": self.runtime.as_dict(),
            "busy_control": self.busy_control.as_dict(),
            "empty_control": self.empty_control.as_dict(),
            "runtime_tick_side_by_side": self.side_runtime.as_dict(),
            "seed_tick": self.seed.as_dict(),
            "seed_over_runtime_p50": round(self.ratio, 1),
            "seed_stages_p50_ms": self.seed_stages_ms,
            "runtime_stages_p50_us": self.stages_us,
            "gc_during_runtime_ticks": self.gc,
            "runtime_tick_gc_in_slack": self.slack,
            "parity": self.parity,
            "shape": self.shape,
            "profile": self.profile,
        }


def views_match(
    ws: WorkingSet, views: Sequence[CabinView], packs: Mapping[str, SeedPack]
) -> str | None:
    """None when the runtime's views and the seed's packs select the same items, else why not.

    A runtime view holds what its spec selected and memory kept; the seed's pack
    holds everything its spec selected. So every view item must be in the pack,
    the pack's surplus must have been evicted this tick, and the map windows must
    list the kept features in the same order.
    """
    evicted = {e.key for e in ws.evictions}
    for view in views:
        pack = packs[view.cabin]
        seed_keys = pack.keys()
        held = set(view.keys())
        if not held <= seed_keys:
            return f"{view.cabin}: the runtime holds {sorted(held - seed_keys)[:5]} unseen by seed"
        if not (seed_keys - held) <= evicted:
            lost = sorted(seed_keys - held - evicted)[:5]
            return (
                f"{view.cabin}: the seed selects {lost}, which the runtime neither holds "
                "nor evicted"
            )
        seed_nearby = [f.id for f in pack.nearby_map if f"map:{f.id}" in held]
        if [f.id for f in view.nearby_map] != seed_nearby:
            return f"{view.cabin}: the map windows differ in order"
    return None


def _side_by_side(
    driver: Driver, runtime: RuntimeWorld, seed_world: SeedWorld, plan: Plan
) -> tuple[list[int], list[int], dict[str, list[float]], dict[str, Any]]:
    clock = time.perf_counter_ns
    side_ns: list[int] = []
    seed_ns: list[int] = []
    stage_ns: dict[str, list[float]] = {s: [] for s in STAGES}
    mismatches = 0
    first: str | None = None
    budget_end = time.perf_counter() + plan.seed_budget_s
    for k in range(plan.seed_ticks):
        tick, now = driver.advance()
        t0 = clock()
        ws, views = runtime.tick(tick, now)
        t1 = clock()
        stages = StageClock()
        t2 = clock()
        packs = seed_tick(seed_world.memory, seed_world.specs, now, stages)
        t3 = clock()
        side_ns.append(t1 - t0)
        seed_ns.append(t3 - t2)
        for s in STAGES:
            stage_ns[s].append(stages.totals[s] * 1e9)
        why = views_match(ws, views, packs)
        if why is not None:
            mismatches += 1
            first = first or f"tick {tick}: {why}"
        if k >= 2 and time.perf_counter() > budget_end:
            break
    parity: dict[str, Any] = {"ticks_compared": len(seed_ns), "mismatches": mismatches}
    if first is not None:
        parity["first_mismatch"] = first
    return side_ns, seed_ns, stage_ns, parity


def _runtime_alone(
    driver: Driver,
    runtime: RuntimeWorld,
    plan: Plan,
) -> tuple[list[int], list[int], list[int], GcWatch, dict[str, float]]:
    clock = time.perf_counter_ns
    warm_ns = []
    for _ in range(plan.warmup):
        tick, now = driver.advance()
        t0 = clock()
        runtime.tick(tick, now)
        warm_ns.append(clock() - t0)
    steps = calibrate_busy(float(np.median(warm_ns)))
    run_ns: list[int] = []
    busy_ns: list[int] = []
    empty_ns: list[int] = []
    evictions = 0
    held = 0
    with GcWatch() as watch:
        for _ in range(plan.ticks):
            tick, now = driver.advance()
            watch.ticking = True
            t0 = clock()
            ws, views = runtime.tick(tick, now)
            t1 = clock()
            busy(steps)
            t2 = clock()
            t3 = clock()
            watch.ticking = False
            run_ns.append(t1 - t0)
            busy_ns.append(t2 - t1)
            empty_ns.append(t3 - t2)
            evictions += len(ws.evictions)
            held += sum(len(v) for v in views)
    shape = {
        "evictions_per_tick": round(evictions / plan.ticks, 2),
        "view_items_per_tick": round(held / plan.ticks, 1),
    }
    return run_ns, busy_ns, empty_ns, watch, shape


def _runtime_gc_in_slack(driver: Driver, runtime: RuntimeWorld, ticks: int) -> dict[str, Any]:
    clock = time.perf_counter_ns
    run_ns: list[int] = []
    slack_ns: list[int] = []
    generations = [0, 0, 0]
    gc.disable()
    try:
        for _ in range(ticks):
            tick, now = driver.advance()
            t0 = clock()
            runtime.tick(tick, now)
            t1 = clock()
            generation = collect_in_slack()
            if generation >= 0:
                generations[generation] += 1
                slack_ns.append(clock() - t1)
            run_ns.append(t1 - t0)
    finally:
        gc.enable()
    return {
        "tick": summarize(run_ns).as_dict(),
        "collections_between_ticks": dict(zip(("gen0", "gen1", "gen2"), generations, strict=True)),
        "longest_collection_between_ticks_us": round(max(slack_ns, default=0) / 1e3, 1),
    }


def _stages(
    driver: Driver,
    runtime: RuntimeWorld,
    ticks: int,
) -> tuple[dict[str, float], float]:
    clock = time.perf_counter_ns
    shadow = shadow_of(runtime.memory)
    stage_ns: dict[str, list[float]] = {s: [] for s in STAGES}
    candidates = 0
    for _ in range(ticks):
        tick, now = driver.advance()
        stages = StageClock()
        candidates += replay(
            runtime.board, runtime.cabin_map, runtime.log, shadow, runtime.specs, tick, now, stages
        )
        t0 = clock()
        runtime.tick(tick, now)
        total = clock() - t0
        replayed = 0.0
        for s in STAGES[:-1]:
            stage_ns[s].append(stages.totals[s] * 1e9)
            replayed += stages.totals[s] * 1e9
        stage_ns["freeze"].append(max(0.0, total - replayed))
    medians = {s: round(float(np.median(v)) / 1e3, 1) for s, v in stage_ns.items()}
    return medians, candidates / ticks


def _full_collection_ms() -> float:
    """The shorter of two full collections, in milliseconds (the first also ages objects)."""
    return round(min(time_full_collection(), time_full_collection()), 2)


def measure_world(size: WorldSize, plan: Plan, *, seed: int = 0) -> WorldResult:
    """Build the world of ``size`` from ``seed`` and measure it as ``plan`` says."""
    specs = load_shipped_specs()
    started = time.perf_counter()
    data = generate(size, np.random.default_rng(seed))
    runtime = RuntimeWorld(data, specs)
    runtime.cabin_map.window((0.0, 0.0), 0.0)  # builds the index now, before any freeze
    gc_full = {"runtime_loaded": _full_collection_ms()}
    seed_world = SeedWorld(data, runtime)
    gc_full["runtime_and_seed_loaded"] = _full_collection_ms()
    if plan.gc_freeze:
        gc.collect()
        gc.freeze()
        gc_full["after_gc_freeze"] = _full_collection_ms()
    build_s = time.perf_counter() - started
    driver = Driver(data, runtime, np.random.default_rng(seed + 1), seed_world)
    try:
        side_ns, seed_ns, seed_stage_ns, parity = _side_by_side(driver, runtime, seed_world, plan)
        driver.detach_seed()
        del seed_world
        run_ns, busy_ns, empty_ns, watch, shape = _runtime_alone(driver, runtime, plan)
        shape["floor_side_m"] = round(data.side, 1)
        slack = _runtime_gc_in_slack(driver, runtime, plan.slack_ticks) if plan.slack_ticks else {}
        stages_us: dict[str, float] = {}
        if plan.stage_ticks:
            stages_us, candidates = _stages(driver, runtime, plan.stage_ticks)
            shape["candidates_per_tick"] = round(candidates, 1)
        profile: dict[str, Any] = {}
        if plan.profile_ticks:
            state = [0, 0.0]

            def advance() -> None:
                state[0], state[1] = driver.advance()

            def one() -> None:
                runtime.tick(int(state[0]), state[1])

            stats = profile_stats(one, plan.profile_ticks, setup=advance)
            profile = {
                "profiled_ticks": plan.profile_ticks,
                "top_self": top_functions(stats, plan.profile_ticks),
                "top_runtime_cumulative": top_functions(
                    stats, plan.profile_ticks, 30, by="cumulative", only="runtime/"
                ),
            }
    finally:
        if plan.gc_freeze:
            gc.unfreeze()
    return WorldResult(
        size=size,
        build_s=build_s,
        gc_full_ms=gc_full,
        runtime=summarize(run_ns),
        busy_control=summarize(busy_ns),
        empty_control=summarize(empty_ns),
        side_runtime=summarize(side_ns),
        seed=summarize(seed_ns),
        seed_stages_ms={s: round(float(np.median(v)) / 1e6, 3) for s, v in seed_stage_ns.items()},
        stages_us=stages_us,
        gc=watch.report(),
        parity=parity,
        shape=shape,
        slack=slack,
        profile=profile,
    )
