"""One world, measured: the seed reference and the runtime side by side, then the runtime alone.

``measure_world`` builds a world, builds the map's index (it is built lazily at the
first query), times a full garbage collection over what is loaded, calls
``gc.freeze()`` (when the plan says so) and then runs these phases:

1. **Side by side.** Each tick, the runtime's freeze plus three views and the seed
   reference's three assemblies run on the same inputs and are timed.
2. **Parity.** On every tick of phase 1 and on more ticks after it (``parity_ticks`` in
   all, goal changes among them), the runtime's working set and views are compared with
   ``reference_model.ReferenceModel``'s freeze, every field in order
   (``reference_model.differences``).
3. **Runtime.** The seed and the model are detached. Each tick the runtime is timed,
   then the busy control (calibrated to the runtime's median in a warm-up) and the empty
   control, while a ``GcWatch`` records every collection and whether it fell inside a tick.
4. **Anchor and peer** (when py_trees is installed). On a world of their own (the same
   size and seed), runtime ticks, py_trees anchor ticks (10 leaves reading 20 keys) and
   equal-work peer ticks (``benchmarks.peer_work``: the same views by py_trees, an
   ``STRtree`` and ``bisect``) take turns, so that the machine's load weighs on all alike;
   the ratios of their medians, and the peer's parity with the runtime on every tick.
5. **Runtime, collections in the slack** (optional). Automatic collection is off
   during ticks and the collection CPython would have run is run between ticks, as
   a loop could do while it waits for its next deadline.
6. **Stages.** ``Assembler.laps`` times each stage inside the real tick (and the views
   after it), so the stages' means add up to the tick's mean.
7. **Profile** (optional). cProfile over more runtime ticks: the top functions.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks import peer, peer_work
from benchmarks.profiling import profile_stats, top_functions
from benchmarks.reference_model import ReferenceModel, differences
from benchmarks.seed_reference import STAGES, StageClock, seed_tick
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
from runtime.assembler import STAGES as RUNTIME_STAGES


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
    parity_ticks: int = 1000
    anchor_ticks: int = 0


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
    stages_us: dict[str, Any]
    gc: dict[str, Any]
    parity: dict[str, Any]
    shape: dict[str, float]
    slack: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    anchor: dict[str, Any] = field(default_factory=dict)

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
            "anchor": self.anchor,
            "parity": self.parity,
            "shape": self.shape,
            "profile": self.profile,
        }


class _Parity:
    """Counts the ticks compared with the reference model and the first difference."""

    def __init__(self) -> None:
        self.ticks = 0
        self.mismatches = 0
        self.first: str | None = None
        self.goal_changes = 0
        self._goals: frozenset[str] | None = None

    def check(
        self, tick: int, ws: WorkingSet, views: Sequence[CabinView], model: ReferenceModel
    ) -> None:
        why = differences(ws, views, model.freeze(tick, ws.time))
        self.ticks += 1
        if why is not None:
            self.mismatches += 1
            self.first = self.first or f"tick {tick}: {why}"
        goals = frozenset(k for k in ws.items if k.startswith("goal:"))
        if self._goals is not None and goals != self._goals:
            self.goal_changes += 1
        self._goals = goals

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ticks_compared": self.ticks,
            "mismatches": self.mismatches,
            "goal_changes": self.goal_changes,
            "against": "benchmarks.reference_model, every field in order",
        }
        if self.first is not None:
            out["first_mismatch"] = self.first
        return out


def _compared(
    driver: Driver,
    runtime: RuntimeWorld,
    seed_world: SeedWorld,
    model: ReferenceModel,
    plan: Plan,
) -> tuple[list[int], list[int], dict[str, list[float]], dict[str, Any]]:
    """Phases 1 and 2: the seed timed beside the runtime while its budget lasts, and every
    tick's working set held against the reference model."""
    clock = time.perf_counter_ns
    side_ns: list[int] = []
    seed_ns: list[int] = []
    stage_ns: dict[str, list[float]] = {s: [] for s in STAGES}
    parity = _Parity()
    seeding = plan.seed_ticks > 0
    budget_end = time.perf_counter() + plan.seed_budget_s
    k = 0
    while seeding or k < plan.parity_ticks:
        tick, now = driver.advance()
        t0 = clock()
        ws, views = runtime.tick(tick, now)
        t1 = clock()
        if seeding:
            stages = StageClock()
            t2 = clock()
            seed_tick(seed_world.memory, seed_world.specs, now, stages)
            t3 = clock()
            side_ns.append(t1 - t0)
            seed_ns.append(t3 - t2)
            for s in STAGES:
                stage_ns[s].append(stages.totals[s] * 1e9)
            if len(seed_ns) >= plan.seed_ticks or (k >= 2 and time.perf_counter() > budget_end):
                seeding = False
                driver.detach_seed()
        if k < plan.parity_ticks:
            parity.check(tick, ws, views, model)
            if k + 1 == plan.parity_ticks:
                driver.detach_model()
        k += 1
    driver.detach_model()
    return side_ns, seed_ns, stage_ns, parity.report()


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


def _stages(driver: Driver, runtime: RuntimeWorld, ticks: int) -> dict[str, Any]:
    """Each stage's time inside the real tick (``Assembler.laps``), and the views after it:
    means (which add up to the tick's mean) and medians, in microseconds."""
    clock = time.perf_counter_ns
    names = (*RUNTIME_STAGES, "views")
    laps: dict[str, int] = {}
    mark = [0]

    def lap(stage: str) -> None:
        t = clock()
        laps[stage] = t - mark[0]
        mark[0] = t

    samples: dict[str, list[int]] = {s: [] for s in names}
    whole: list[int] = []
    assembler = runtime.assembler
    assembler.laps = lap
    try:
        for _ in range(ticks):
            tick, now = driver.advance()
            laps.clear()
            t0 = mark[0] = clock()
            ws = assembler.assemble(tick, now)
            t1 = clock()
            for name in runtime.names:
                ws.view(name)
            t2 = clock()
            laps["views"] = t2 - t1
            laps["freeze"] = laps.get("freeze", 0) + (t1 - mark[0])  # the return itself
            whole.append(t2 - t0)
            for s in names:
                samples[s].append(laps.get(s, 0))
    finally:
        assembler.laps = None
    means = {s: round(float(np.mean(v)) / 1e3, 2) for s, v in samples.items()}
    return {
        "ticks": ticks,
        "mean_us": means,
        "p50_us": {s: round(float(np.median(v)) / 1e3, 2) for s, v in samples.items()},
        "tick_mean_us": round(float(np.mean(whole)) / 1e3, 2),
        "tick_p50_us": round(float(np.median(whole)) / 1e3, 2),
        "sum_of_means_us": round(sum(means.values()), 2),
    }


def _anchor(size: WorldSize, seed: int, ticks: int, *, freeze: bool) -> dict[str, Any]:
    """The runtime's tick, the 10-leaf py_trees anchor's and the equal-work peer's
    (``benchmarks.peer_work``), ticked in turn (the first of each round rotating) on a world
    of their own, built again from the same size and seed so that the peer follows it from
    its first tick; medians, their ratios, and the peer's parity with the runtime's views on
    every tick (checked outside the timing)."""
    if not peer.available():
        return {}
    data = generate(size, np.random.default_rng(seed))
    runtime = RuntimeWorld(data, load_shipped_specs())
    runtime.cabin_map.window((0.0, 0.0), 0.0)  # builds the index now, before any freeze
    work = peer_work.peer_of(data.features, runtime)
    driver = Driver(data, runtime, np.random.default_rng(seed + 1), peer=work)
    anchor = peer.Anchor()
    wall, cpu = time.perf_counter_ns, time.process_time_ns
    samples: list[list[tuple[int, int]]] = [[], [], []]
    differing: list[int] = []
    first: str | None = None
    if freeze:  # as the measured world is (measure_world unfreezes both at its end)
        gc.collect()
        gc.freeze()
    try:
        for n in range(ticks):
            tick, now = driver.advance()
            out: dict[int, Any] = {}
            for side in ((0, 1, 2), (1, 2, 0), (2, 0, 1))[n % 3]:
                w0, c0 = wall(), cpu()
                if side == 0:
                    out[0] = runtime.tick(tick, now)
                elif side == 1:
                    anchor.tick()
                else:
                    out[2] = work.tick(now)
                samples[side].append((wall() - w0, cpu() - c0))
            found = peer_work.parity(out[0][1], out[2])
            if found is not None:
                differing.append(n)
                first = first or found
    finally:
        anchor.close()
        work.close()
    run, tree, equal = (summarize([s[0] for s in side]) for side in samples)
    run_cpu, equal_cpu = (summarize([s[1] for s in samples[i]]) for i in (0, 2))
    return {
        "ticks": ticks,
        "runtime_tick": run.as_dict(),
        "py_trees_tick": tree.as_dict(),
        "equal_work_tick": equal.as_dict(),
        "runtime_over_py_trees_p50": round(run.p50_us / tree.p50_us, 3),
        "runtime_over_equal_work_p50": round(run.p50_us / equal.p50_us, 3),
        "runtime_over_equal_work_cpu_p50": round(run_cpu.p50_us / equal_cpu.p50_us, 3),
        "equal_work_parity": {
            "ticks_compared": ticks,
            "ticks_differing": len(differing),
            "first_difference": first,
        },
        "items_per_tick": sum(len(v) for v in out[0][1]),
    }


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
    model = seed_world.model(data, runtime)
    driver = Driver(data, runtime, np.random.default_rng(seed + 1), seed_world, model)
    try:
        side_ns, seed_ns, seed_stage_ns, parity = _compared(
            driver, runtime, seed_world, model, plan
        )
        del seed_world, model
        run_ns, busy_ns, empty_ns, watch, shape = _runtime_alone(driver, runtime, plan)
        shape["floor_side_m"] = round(data.side, 1)
        anchor = (
            _anchor(size, seed, plan.anchor_ticks, freeze=plan.gc_freeze)
            if plan.anchor_ticks
            else {}
        )
        slack = _runtime_gc_in_slack(driver, runtime, plan.slack_ticks) if plan.slack_ticks else {}
        stages_us: dict[str, Any] = {}
        if plan.stage_ticks:
            stages_us = _stages(driver, runtime, plan.stage_ticks)
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
        anchor=anchor,
    )
