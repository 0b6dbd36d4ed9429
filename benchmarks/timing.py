"""Timing tools: percentile summaries, a garbage-collection watch and the null-tick controls.

Every figure is a distribution of per-tick durations in nanoseconds from
``time.perf_counter_ns``, summarised as p50, p99 and p99.9. The controls say
what the machine itself does to a loop of the same shape: the *empty* control
times nothing between two timer reads; the *busy* control times a pure-Python
loop that allocates nothing, calibrated to last as long as the measured tick,
so a stall of the machine hits it about as often as it hits the tick.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class Summary:
    """A distribution of durations, in microseconds."""

    n: int
    p50_us: float
    p99_us: float
    p999_us: float
    max_us: float
    mean_us: float

    def as_dict(self) -> dict[str, float | int]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def summarize(samples_ns: Sequence[int] | Sequence[float]) -> Summary:
    """p50, p99, p99.9, max and mean of ``samples_ns`` (nanoseconds), in microseconds."""
    if not samples_ns:
        raise ValueError("cannot summarise an empty list of samples")
    a = np.asarray(samples_ns, dtype=np.float64) / 1e3
    p50, p99, p999 = np.percentile(a, [50.0, 99.0, 99.9])
    return Summary(len(a), float(p50), float(p99), float(p999), float(a.max()), float(a.mean()))


def busy(n: int) -> int:
    """A pure-Python loop of ``n`` steps that allocates nothing beyond small ints."""
    total = 0
    for i in range(n):
        total ^= i
    return total


def calibrate_busy(target_ns: float, *, rounds: int = 200) -> int:
    """Steps of ``busy`` that take about ``target_ns`` (the median of ``rounds`` trials)."""
    probe = 1000
    trials = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        busy(probe)
        trials.append(time.perf_counter_ns() - t0)
    per_step = float(np.median(trials)) / probe
    return max(1, round(target_ns / per_step))


@dataclass(slots=True)
class Collection:
    generation: int
    duration_ns: int
    in_tick: bool


@dataclass(slots=True)
class GcWatch:
    """Records every garbage collection while active, and whether it fell inside a tick.

    Set ``ticking`` around the timed region; ``gc.callbacks`` runs on the thread
    that triggered the collection, so the flag is exact.
    """

    ticking: bool = False
    collections: list[Collection] = field(default_factory=list)
    _started: int = 0
    _generation: int = 0

    def __enter__(self) -> GcWatch:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter_ns()
            self._generation = int(info["generation"])
        else:
            self.collections.append(
                Collection(self._generation, time.perf_counter_ns() - self._started, self.ticking)
            )

    def report(self) -> dict[str, Any]:
        """Collections per generation, those inside ticks, and the longest pause in a tick."""
        out: dict[str, Any] = {}
        for gen in (0, 1, 2):
            all_gen = [c for c in self.collections if c.generation == gen]
            in_tick = [c for c in all_gen if c.in_tick]
            out[f"gen{gen}"] = {
                "count": len(all_gen),
                "in_tick": len(in_tick),
                "max_in_tick_us": round(max((c.duration_ns for c in in_tick), default=0) / 1e3, 1),
            }
        return out


def collect_in_slack() -> int:
    """With automatic collection disabled, run the collection CPython's thresholds call for
    now (ignoring its long-lived ratio); the generation collected, or -1 for none."""
    c0, c1, c2 = gc.get_count()
    t0, t1, t2 = gc.get_threshold()
    if c0 <= t0:
        return -1
    generation = 0
    if c1 + 1 > t1:
        generation = 2 if c2 + 1 > t2 else 1
    gc.collect(generation)
    return generation


def time_full_collection() -> float:
    """Milliseconds one full ``gc.collect()`` takes now."""
    t0 = time.perf_counter_ns()
    gc.collect()
    return (time.perf_counter_ns() - t0) / 1e6
