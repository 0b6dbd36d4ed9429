"""Long-term memory at 1,000, 10,000 and 100,000 memories in one scope.

Measured, for each size, on a memory file filled with distinct text memories
(generated sentences about aisles, docks and obstacles, with numbers):

- ``recall`` (k = 5) latency, against the baseline in the same run: the design before
  issue 16, which loaded the whole scope from SQLite and ranked it with numpy at every
  call (``baseline_recall``);
- ``remember`` latency of a new text memory (the duplicate check and the insert, one
  transaction) and of a structured fact (a subject); the duplicate check scans the
  memories of the text's claim (``NearDuplicate.claim``: its numbers and negation),
  and ``remember_text_one_claim`` is its worst case, a filter comparing neither, so
  that one claim holds the whole scope and every check scans it;
- what a ``MemoryWriter`` costs in the tick (queueing) and between ticks (a flush);
- the index's load time when a file is opened (traced by tracemalloc, for its peak
  Python allocation, and untraced), bytes per memory in the index
  (``ScopeIndex.nbytes``) and in the file.

And the tick cost of remembering during a run: a ``TickLoop`` on a simulated clock
whose one cabin asks to remember a new fact every tick, with 100,000 memories in the
scope, the memory given to the loop directly (written in the apply phase, as before
issue 16) against a ``MemoryWriter`` flushed between ticks (the simulator's way):
tick compute p50/p99/max, and the flush time outside the tick.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    SimClock,
    StateBoard,
    TickLoop,
    WorkingMemory,
)
from runtime.agent.duplicates import NearDuplicate
from runtime.agent.long_term import LongTermMemory
from runtime.agent.writer import MemoryWriter
from runtime.cabin import MemoryWrite, Outbox
from runtime.freeze import FrozenDict
from runtime.longterm import MemoryTerms
from runtime.pack import CabinView

SIZES = (1_000, 10_000, 100_000)
X = "\u00d7"  # the multiplication sign of "100x"
SCOPE = {"site": "bench"}
RECALL_LIMIT_MS = 20.0
REMEMBER_LIMIT_MS = 5.0

_KINDS = ("forklift", "person", "pallet", "cart", "robot", "spill", "door", "ladder")
_VERBS = ("blocked", "slowed", "crossed", "waited at", "passed", "left", "reached", "cleared")
_PLACES = ("aisle", "dock", "charger", "shelf", "bay", "ramp", "gate", "corner", "lift")
_WHEN = ("in the morning", "at noon", "after lunch", "late", "twice", "during a shift change")


def sentences(n: int, seed: int, *, start: int = 0) -> list[str]:
    """``n`` distinct sentences (each carries its own number)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(start, start + n):
        kind, verb = _KINDS[rng.integers(len(_KINDS))], _VERBS[rng.integers(len(_VERBS))]
        place, when = _PLACES[rng.integers(len(_PLACES))], _WHEN[rng.integers(len(_WHEN))]
        out.append(f"a {kind} {verb} the {place} {rng.integers(1, 40)} {when}, report {i}")
    return out


def fill(path: str, n: int, seed: int) -> None:
    """A memory file with ``n`` distinct text memories in ``SCOPE``."""
    with LongTermMemory(path) as memory:
        texts = sentences(n, seed)
        for start in range(0, n, 5000):
            memory.import_many(
                [
                    MemoryWrite(t, FrozenDict(SCOPE), FrozenDict(), float(start + i))
                    for i, t in enumerate(texts[start : start + 5000])
                ]
            )


def baseline_recall(path: str, query_vector: np.ndarray, k: int = 5) -> list[int]:
    """Recall as before issue 16: the whole scope from SQLite at every call, then numpy."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT id, embedding FROM memories WHERE scope = ? ORDER BY id",
            (json.dumps(dict(sorted(SCOPE.items())), sort_keys=True),),
        ).fetchall()
    ids = [int(r[0]) for r in rows]
    matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows]).astype(np.float64)
    sims = matrix @ query_vector
    order = sorted(range(len(ids)), key=lambda i: (-float(sims[i]), ids[i]))
    return [ids[i] for i in order[:k]]


def _stats(samples: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1e3
    return {
        "n": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p90_ms": round(float(np.percentile(ms, 90)), 3),
        "max_ms": round(float(ms.max()), 3),
    }


def _normalised_baseline(path: str, vector: np.ndarray) -> list[int]:
    """``baseline_recall`` of ``vector`` normalised, as timed: the norm is part of its work."""
    return baseline_recall(path, vector / np.linalg.norm(vector))


def _timed(calls: Sequence[Callable[[], Any]]) -> list[float]:
    out = []
    for call in calls:
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return out


def measure_size(n: int, *, repeats: int, seed: int, folder: Path) -> dict[str, Any]:
    path = str(folder / f"memory_{n}.sqlite")
    t0 = time.perf_counter()
    fill(path, n, seed)
    fill_s = time.perf_counter() - t0
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    memory = LongTermMemory(path)
    memory.recall("warm up", scope=SCOPE)  # loads the scope's index
    load_s = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    try:
        queries = [
            f"is the {p} {i} blocked by a {k}?"
            for i, (p, k) in enumerate(zip(_PLACES * repeats, _KINDS * repeats, strict=False))
        ][:repeats]
        recall = _timed([partial(memory.recall, q, scope=SCOPE, k=5) for q in queries])
        vectors = [np.asarray(memory.embed(q), dtype=np.float64) for q in queries]
        exact = all(
            [r.id for r in memory.recall(q, scope=SCOPE, k=5)]
            == baseline_recall(path, v / np.linalg.norm(v))
            for q, v in list(zip(queries, vectors, strict=True))[:3]
        )
        base_reps = max(3, repeats // (10 if n >= 100_000 else 2))
        baseline = _timed([partial(_normalised_baseline, path, v) for v in vectors[:base_reps]])
        fresh = sentences(repeats, seed + 1, start=n)
        remember = _timed([partial(memory.remember, t, scope=SCOPE, stamp=float(n)) for t in fresh])
        refused = _timed([partial(memory.remember, t, scope=SCOPE, stamp=float(n)) for t in fresh])
        facts = [
            (f"spot {i} is blocked", MemoryTerms(subject=f"spot:{i}").attach())
            for i in range(repeats)
        ]
        structured = _timed(
            [partial(memory.remember, c, scope=SCOPE, metadata=m, stamp=float(n)) for c, m in facts]
        )
        writer = MemoryWriter(memory)
        queued_texts = sentences(repeats, seed + 2, start=2 * n)
        queue = _timed(
            [partial(writer.remember, t, scope=SCOPE, stamp=float(n)) for t in queued_texts]
        )
        flush = _timed([writer.flush])
        index_bytes = memory.index_bytes()
        held = memory.count(scope=SCOPE)
    finally:
        memory.close()
    # the worst case of the duplicate check: every memory of the scope makes one claim
    # (a filter that compares no numbers and no negation), so the whole scope is scanned
    t0 = time.perf_counter()
    with LongTermMemory(path, duplicates=NearDuplicate(numbers=False, negation=False)) as one:
        one.recall("warm up", scope=SCOPE)  # opening and loading the index, untraced
        untraced_load_s = time.perf_counter() - t0
        one_claim = _timed(
            [
                partial(one.remember, t, scope=SCOPE, stamp=float(n))
                for t in sentences(repeats, seed + 4, start=4 * n)
            ]
        )
    return {
        "memories": n,
        # 1, 5 and 15 minutes, at the end: the 1-minute one spans the measurements
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "fill_s": round(fill_s, 1),
        "index_load_s": round(load_s, 3),  # traced by tracemalloc, which slows it
        "index_load_untraced_s": round(untraced_load_s, 3),
        "index_load_peak_mb": round(peak / 2**20, 1),
        "index_bytes_per_memory": round(index_bytes / held, 1),
        "file_bytes_per_memory": round(os.path.getsize(path) / held, 1),
        "recall": _stats(recall),
        "recall_matches_baseline": exact,
        "baseline_recall": _stats(baseline),
        "baseline_over_recall_p50": round(float(np.median(baseline)) / float(np.median(recall)), 1),
        "remember_text": _stats(remember),
        "remember_text_one_claim": _stats(one_claim),
        "remember_duplicate": _stats(refused),
        "remember_structured": _stats(structured),
        "writer_queue": _stats(queue),
        "writer_flush": {**_stats(flush), "writes": len(queued_texts)},
    }


class _Learner:
    """A cabin that asks to remember a new fact every tick."""

    name = "learner"
    spec = ContextSpec(name="learner", board_keys=("pose",))

    def __init__(self, seed: int, n: int) -> None:
        self.texts = sentences(4000, seed + 3, start=3 * n)
        self.i = 0

    def step(self, view: CabinView, out: Outbox) -> None:
        out.remember(self.texts[self.i % len(self.texts)], scope=SCOPE, stamp=view.time)
        self.i += 1


class _Flush:
    """A loop hook that flushes a writer between ticks, timing each flush."""

    def __init__(self, writer: MemoryWriter | None, times: list[float]) -> None:
        self.writer = writer
        self.times = times

    def before_freeze(self, tick: int, now: float) -> None:
        pass

    def after_apply(self, result: object) -> None:
        if self.writer is not None:
            t0 = time.perf_counter()
            self.writer.flush()
            self.times.append(time.perf_counter() - t0)


def measure_ticks(n: int, ticks: int, *, seed: int, folder: Path) -> dict[str, Any]:
    """Tick compute with the memory written in the apply phase against a writer."""
    path = str(folder / f"memory_{n}.sqlite")
    if not os.path.exists(path):
        fill(path, n, seed)
    out: dict[str, Any] = {"memories": n, "ticks": ticks}
    load = os.getloadavg()
    for mode in ("in_apply_phase", "writer_between_ticks"):
        memory = LongTermMemory(path)
        memory.recall("warm up", scope=SCOPE)
        clock = SimClock()
        board = StateBoard(clock=clock)
        board.write("pose", (0.0, 0.0, 0.0))
        log = EventLog(clock=clock, retention=10_000)
        assembler = Assembler(board, CabinMap(), log, WorkingMemory(), [_Learner.spec])
        writer = MemoryWriter(memory) if mode == "writer_between_ticks" else None
        flushes: list[float] = []

        loop = TickLoop(
            assembler,
            [_Learner(seed, n)],
            20.0,
            clock,
            hooks=(_Flush(writer, flushes),),
            long_term=writer if writer is not None else memory,
        )
        compute = []
        for _ in range(ticks):
            compute.append(loop.step().compute_seconds)
        memory.close()
        out[mode] = {"tick_compute": _stats(compute)}
        if flushes:
            out[mode]["flush_between_ticks"] = _stats(flushes)
    out["load_average"] = [round(x, 2) for x in load]  # 1, 5 and 15 minutes, at the start
    return out


def measure_long_term(
    *, quick: bool, seed: int = 0, scope_sizes: Sequence[int] = SIZES
) -> dict[str, Any]:
    """Every measurement above; ``quick``: fewer repetitions and ticks."""
    repeats = 30 if quick else 200
    ticks = 100 if quick else 400
    with tempfile.TemporaryDirectory(prefix="tickwork-ltm-") as tmp:
        folder = Path(tmp)
        sizes = [measure_size(n, repeats=repeats, seed=seed, folder=folder) for n in scope_sizes]
        during = measure_ticks(max(scope_sizes), ticks, seed=seed, folder=folder)
    return {
        "scope_sizes": list(scope_sizes),
        "repeats": repeats,
        "embedder": "hashing-256-3",
        "sizes": sizes,
        "tick_cost": during,
    }


def targets(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Issue 16's targets at the largest size."""
    big = max(results["sizes"], key=lambda s: s["memories"])
    recall, remember = big["recall"]["p50_ms"], big["remember_text"]["p50_ms"]
    worst = big["remember_text_one_claim"]["p50_ms"]
    label = f"{big['memories']:,}"
    return [
        {
            "target": f"long-term recall, {label} memories in one scope",
            "goal": f"≤ {RECALL_LIMIT_MS:g} ms",
            "measured": f"{recall} ms p50 (p90 {big['recall']['p90_ms']} ms; before: "
            f"{big['baseline_recall']['p50_ms']} ms)",
            "met": recall <= RECALL_LIMIT_MS,
        },
        {
            "target": f"long-term remember, {label} memories in one scope",
            "goal": f"≤ {REMEMBER_LIMIT_MS:g} ms",
            "measured": f"{remember} ms p50 (p90 {big['remember_text']['p90_ms']} ms; with "
            f"one claim for the whole scope: {worst} ms p50, p90 "
            f"{big['remember_text_one_claim']['p90_ms']} ms; load average "
            f"{big['load_average'][0]})",
            "met": max(remember, worst) <= REMEMBER_LIMIT_MS,
        },
    ]


def markdown(results: Mapping[str, Any]) -> list[str]:
    """The long-term memory section of ``latest.md``."""
    lines = [
        "",
        "## Long-term memory (one scope, HashingEmbedder, k = 5)",
        "",
        "| memories | recall p50 / p90 | before (whole scope per call) | remember text | "
        "remember text, one claim | duplicate refused | structured | writer queue | "
        "index load | index B / memory | file B / memory | load average |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in results["sizes"]:
        lines.append(
            f"| {s['memories']:,} | {s['recall']['p50_ms']} / {s['recall']['p90_ms']} ms | "
            f"{s['baseline_recall']['p50_ms']} ms ({s['baseline_over_recall_p50']}{X}) | "
            f"{s['remember_text']['p50_ms']} ms | "
            f"{s.get('remember_text_one_claim', {}).get('p50_ms', '-')} ms | "
            f"{s['remember_duplicate']['p50_ms']} ms | "
            f"{s['remember_structured']['p50_ms']} ms | {s['writer_queue']['p50_ms']} ms | "
            f"{s.get('index_load_untraced_s', s['index_load_s'])} s | "
            f"{s['index_bytes_per_memory']} | "
            f"{s['file_bytes_per_memory']} | {s.get('load_average', ['-'])[0]} |"
        )
    t = results["tick_cost"]
    a, w = t["in_apply_phase"], t["writer_between_ticks"]
    lines += [
        "",
        f"Tick cost of remembering a new fact every tick, {t['memories']:,} memories, "
        f"{t['ticks']} ticks: written in the apply phase, compute p50 "
        f"{a['tick_compute']['p50_ms']} ms, max {a['tick_compute']['max_ms']} ms; "
        f"through a writer, p50 {w['tick_compute']['p50_ms']} ms, max "
        f"{w['tick_compute']['max_ms']} ms, with the flush between ticks p50 "
        f"{w['flush_between_ticks']['p50_ms']} ms.",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.long_term [--quick] [--repeat N]``: this part alone, as JSON."""
    import argparse
    import io
    import sys

    from runtime import configure_logging

    parser = argparse.ArgumentParser(prog="python -m benchmarks.long_term")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and ticks")
    parser.add_argument("--repeat", type=int, default=1, help="measure this many times")
    args = parser.parse_args(argv)
    configure_logging(level="warning", stream=io.StringIO())
    runs = []
    for _ in range(max(1, args.repeat)):
        load = os.getloadavg()
        result = measure_long_term(quick=args.quick)
        runs.append({**result, "load_average_at_start": [round(x, 2) for x in load]})
    json.dump(runs, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
