"""Memory per logged event beyond its payload, measured with tracemalloc.

Payloads are built and frozen before tracing starts (``freeze`` keeps an already
frozen ``FrozenDict`` as it is), so what tracing sees while ``EventLog.append``
runs is what the log itself keeps per event: its columns, its per-kind index and
their growth slack. The seed's log (a list of ``Event`` objects) is measured the
same way for comparison, and the payload's own size is given for scale.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any, TypeVar

from benchmarks.world import EVENT_KINDS, TAG_SETS
from runtime import Event, EventLog, FrozenDict

T = TypeVar("T")


def _traced(build: Callable[[], T]) -> tuple[int, T]:
    """Bytes still allocated after ``build`` returns (its result kept alive), and the result."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, kept


def bytes_per_event(count: int) -> dict[str, Any]:
    """Bytes each of ``count`` appended events costs beyond its payload, runtime and seed."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    kinds = [k for k, _ in EVENT_KINDS]
    tasks = [f"t{i}" for i in range(16)]

    def payloads() -> list[FrozenDict[str, Any]]:
        return [FrozenDict({"n": i, "task": tasks[i % 16]}) for i in range(count)]

    payload_bytes, data = _traced(payloads)

    def runtime_log() -> EventLog:
        log = EventLog()
        append = log.append
        for i in range(count):
            append(kinds[i % len(kinds)], data[i], stamp=i * 0.05, tags=TAG_SETS[i % 6])
        return log

    def seed_log() -> list[Event]:
        return [
            Event(i + 1, i * 0.05, kinds[i % len(kinds)], TAG_SETS[i % 6], data[i])
            for i in range(count)
        ]

    runtime_bytes, log = _traced(runtime_log)
    if len(log) != count:
        raise RuntimeError(f"the log holds {len(log)} events, not {count}")
    del log
    seed_bytes, _ = _traced(seed_log)
    return {
        "events": count,
        "payload_bytes_per_event": round(payload_bytes / count, 1),
        "runtime_log_bytes_per_event": round(runtime_bytes / count, 1),
        "seed_list_bytes_per_event": round(seed_bytes / count, 1),
        "payload": "FrozenDict({'n': int, 'task': str}), frozen before tracing",
    }
