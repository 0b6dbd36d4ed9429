"""Garbage collection on a wall clock: the loop's collection policies at the largest world.

``python -m benchmarks.gc_wall [--seconds 600] [--segment 30]``

A real ``TickLoop`` ticks at 20 Hz on the wall clock over the largest benchmark world
(10,000 board keys, 100,000 map features, 1,000,000 logged events, loaded and then frozen
by the policy's start-up), running the shipped planner, executor and monitor specs with
cabins that read every item of their views, while a tick hook moves the world (the
benchmark ``Driver``: route, pose, battery, events) to the loop's time before each freeze,
so that readings' stamps and time-to-live agree with the wall clock. Segments of
``--segment`` seconds alternate the two policies of ``runtime.collection`` (the
interpreter's collector, and collections in the slack between ticks), so that the
machine's load weighs on both alike. A ``GcWatch`` notes every collection and whether it
fell inside a tick (from the hook before the freeze to the hook after the apply).

What is timed: the loop's compute (``TickResult.compute_seconds``, wall time), that is the
freeze, the three cabins reading every item of their views (about 110 items in all, the
work of the quick benchmark's freeze plus three views) and the apply of their empty
outboxes; the driver's writes (before the freeze) and the wait are outside it. The same
region's thread CPU time is noted too: on a loaded machine the wall time's tail holds the
waits for a core, the CPU time's only the tick's own work. Per policy: tick compute and
CPU p50, p99, p99.9 and max, the items in the three views and the capacity evictions per
tick (the work measured), collections inside ticks and the longest, collections between
ticks. Results: ``benchmarks/results/gc_wall.json`` and ``gc_wall.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.timing import GcWatch, summarize
from benchmarks.world import Driver, RuntimeWorld, WorldSize, generate, load_shipped_specs
from runtime import CabinView, Outbox
from runtime.collection import CollectAnywhere, CollectInSlack, CollectionPolicy
from runtime.loop import TickLoop, TickResult

RATE_HZ = 20.0
POLICIES = ("anywhere", "in_slack")


class _Shifted:
    """Wall time from the world's start: the loop's time and the driver's stamps agree."""

    def __init__(self, start: float) -> None:
        self._zero = time.monotonic() - start

    def now(self) -> float:
        return time.monotonic() - self._zero

    def sleep_until(self, deadline: float) -> None:
        delay = deadline - self.now()
        if delay > 0:
            time.sleep(delay)


class _Reader:
    """A cabin that reads every item of its view, as a real cabin's first pass would."""

    def __init__(self, name: str, spec: Any) -> None:
        self.name, self.spec = name, spec

    def step(self, view: CabinView, out: Outbox) -> None:
        for key in view:
            view[key]


class _Hook:
    """Moves the world to the loop's time before each freeze, marks the tick for the
    ``GcWatch`` and notes what the tick did: its compute (wall), its thread CPU time, the
    items in its views and its evictions."""

    def __init__(self, driver: Driver, watch: GcWatch) -> None:
        self.driver, self.watch = driver, watch
        self.compute: list[int] = []
        self.cpu: list[int] = []
        self.items: list[int] = []
        self.evictions: list[int] = []
        self._cpu_start = 0

    def before_freeze(self, tick: int, now: float) -> None:
        self.driver.advance(now)
        self.watch.ticking = True
        self._cpu_start = time.thread_time_ns()

    def after_apply(self, result: TickResult) -> None:
        self.cpu.append(time.thread_time_ns() - self._cpu_start)
        self.watch.ticking = False
        self.compute.append(round(result.compute_seconds * 1e9))
        self.items.append(sum(len(view) for view in result.views))
        self.evictions.append(len(result.working_set.evictions))


def _policy(name: str) -> CollectionPolicy:
    return CollectInSlack() if name == "in_slack" else CollectAnywhere()


def measure(
    seconds: float, segment: float, *, size: WorldSize | None = None, seed: int = 0
) -> dict[str, Any]:
    """Alternate the policies in segments for ``seconds`` of wall time in all, on the
    world of ``size`` (the largest by default)."""
    from benchmarks.cli import LARGEST

    specs = load_shipped_specs()
    data = generate(size or LARGEST, np.random.default_rng(seed))
    world = RuntimeWorld(data, specs)
    world.cabin_map.window((0.0, 0.0), 0.0)  # the index is built before any tick
    driver = Driver(data, world, np.random.default_rng(seed + 1))
    cabins = [_Reader(name, spec) for name, spec in specs.items()]
    clock = _Shifted(data.start)
    per: dict[str, dict[str, Any]] = {
        n: {"compute": [], "cpu": [], "items": [], "evictions": [], "watch": [], "overruns": 0}
        for n in POLICIES
    }
    segments = max(2, round(seconds / segment))
    for k in range(segments):
        name = POLICIES[k % 2]
        _progress(f"  segment {k + 1}/{segments}: {name}, {segment:g} s")
        if name == "anywhere":
            gc.unfreeze()  # the interpreter's own collector, over the whole heap as it is
        with GcWatch() as watch:
            hook = _Hook(driver, watch)
            loop = TickLoop(
                world.assembler, cabins, RATE_HZ, clock, hooks=(hook,), collection=_policy(name)
            )
            stats = loop.run(round(segment * RATE_HZ))
            loop.close()
        for part in ("compute", "cpu", "items", "evictions"):
            per[name][part] += getattr(hook, part)
        per[name]["watch"] += watch.collections
        per[name]["overruns"] += stats.overruns
    return {n: _report(v) for n, v in per.items()}


def _report(data: dict[str, Any]) -> dict[str, Any]:
    watch = GcWatch()
    watch.collections = data["watch"]
    in_tick = [c for c in watch.collections if c.in_tick]
    return {
        "ticks": len(data["compute"]),
        "overruns": data["overruns"],
        "tick": summarize(data["compute"]).as_dict(),
        "tick_cpu": summarize(data["cpu"]).as_dict(),
        "view_items_mean": round(float(np.mean(data["items"])), 1),
        "evictions_per_tick": round(float(np.mean(data["evictions"])), 2),
        "collections": watch.report(),
        "collections_in_ticks": len(in_tick),
        "longest_in_tick_ms": round(max((c.duration_ns for c in in_tick), default=0) / 1e6, 3),
        "collections_between_ticks": len(watch.collections) - len(in_tick),
    }


def markdown(results: dict[str, Any]) -> str:
    rows = [
        "# Garbage collection on a wall clock (largest world)",
        "",
        f"{results['machine']}; {results['when']}; {results['seconds']:g} s of 20 Hz ticks "
        f"in {results['segment']:g} s segments alternating the policies "
        "(`python -m benchmarks.gc_wall`); load average "
        f"{results.get('load_before', '?')} before, {results.get('load_after', '?')} over the "
        "last 5 minutes (a load above the core count puts the machine's own stalls in the "
        "tails of both policies alike).",
        "",
        "A tick here is the loop's compute (wall time): the freeze, three cabins reading "
        "every item of their views and the apply; the driver's writes and the wait are "
        "outside it. CPU is the same region's thread CPU time (without the waits for a core "
        "that a loaded machine adds to the wall time).",
        "",
        "| policy | ticks | tick p50 | p99 | p99.9 | max | CPU p50 | p99 | p99.9 "
        "| items in views | evictions per tick | collections in ticks "
        "| longest in a tick | between ticks |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in POLICIES:
        r = results["policies"][name]
        t, c = r["tick"], r.get("tick_cpu")
        cpu = (
            f"{c['p50_us'] / 1e3:.2f} ms | {c['p99_us'] / 1e3:.2f} ms | {c['p999_us'] / 1e3:.2f} ms"
            if c
            else "- | - | -"
        )
        rows.append(
            f"| `{name}` | {r['ticks']:,} | {t['p50_us'] / 1e3:.2f} ms "
            f"| {t['p99_us'] / 1e3:.2f} ms "
            f"| {t['p999_us'] / 1e3:.2f} ms | {t['max_us'] / 1e3:.2f} ms | {cpu} "
            f"| {r.get('view_items_mean', '-')} | {r.get('evictions_per_tick', '-')} "
            f"| {r['collections_in_ticks']:,} | {r['longest_in_tick_ms']:.2f} ms "
            f"| {r['collections_between_ticks']:,} |"
        )
    rows += [
        "",
        "Targets (issue 34): with collections in the slack, no collection over 1 ms inside "
        "a tick and a tick p99.9 of at most 2 ms.",
        "",
    ]
    return "\n".join(rows)


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.cli import RESULTS
    from runtime import configure_logging
    from runtime.files import atomic_output

    parser = argparse.ArgumentParser(prog="python -m benchmarks.gc_wall", description=__doc__)
    parser.add_argument("--seconds", type=float, default=600.0, help="wall time in all")
    parser.add_argument("--segment", type=float, default=30.0, help="seconds per segment")
    args = parser.parse_args(argv)
    if not (args.seconds > 0 and args.segment > 0):
        parser.error("--seconds and --segment must be > 0")
    configure_logging(level="error")
    results = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"CPython {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d"),
        "seconds": args.seconds,
        "segment": args.segment,
        "load_before": round(os.getloadavg()[0], 2),
        "policies": measure(args.seconds, args.segment),
        "load_after": round(os.getloadavg()[1], 2),
    }
    RESULTS.mkdir(exist_ok=True)
    text = markdown(results)
    with atomic_output(RESULTS / "gc_wall.json") as fh:
        fh.write((json.dumps(results, indent=2) + "\n").encode())
    with atomic_output(RESULTS / "gc_wall.md") as fh:
        fh.write(text.encode())
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
