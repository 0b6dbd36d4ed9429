"""Recall quality and speed of long-term memory, per embedder, on a held-out recall set.

For each embedder (the default ``HashingEmbedder``, and the sentence model of the
``[embeddings]`` extra where it is installed), the facts of ``benchmarks.recall_set``
are stored in one memory, each user in a scope of their own, and each query is asked
in its user's scope:

- ``recall_at_1`` / ``recall_at_3``: the share of queries whose fact is first / among
  the first three; ``mrr``: the mean of 1 / its rank (over the whole scope);
- the same three on the Chinese set (one user, 12 facts);
- latency: embedding one text (p50), a batch of all the facts (per text), ``recall``
  (k = 3; p50 and p90) and ``remember`` of a new text (p50), and the model's load time;
  through a ``MemoryWriter``: ``remember`` (queueing, what a tick pays) and the flush
  that embeds the queue in one batch (per text).

    python -m benchmarks.recall [--out benchmarks/results/recall.json] [--repeat N]

writes JSON (each figure, the load average when it was taken, the embedders' names);
the docs' recall table is generated from it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.recall_set import CHINESE, USERS
from runtime.agent.embedding import Embedder, HashingEmbedder, embed_many
from runtime.agent.long_term import LongTermMemory
from runtime.agent.sentence_model import SentenceEmbedder, unavailable
from runtime.agent.writer import MemoryWriter
from runtime.cabin import MemoryWrite
from runtime.freeze import FrozenDict

OUT = Path(__file__).parent / "results" / "recall.json"


def quality(embed: Embedder, users: dict[str, Sequence[tuple[str, str]]]) -> dict[str, float | int]:
    """recall@1, recall@3 and MRR of ``embed`` over ``users``' (fact, query) pairs."""
    memory = LongTermMemory(embed=embed)
    ranks: list[int] = []
    for user, pairs in users.items():
        scope = FrozenDict({"user": user})
        ids = memory.import_many([MemoryWrite(f, scope, FrozenDict(), 0.0) for f, _ in pairs])
        for fact_id, (_, query) in zip(ids, pairs, strict=True):
            found = [r.id for r in memory.recall(query, scope=scope, k=len(pairs), min_score=-1)]
            ranks.append(found.index(fact_id) + 1)
    memory.close()
    rank = np.asarray(ranks, dtype=np.float64)
    return {
        "queries": len(ranks),
        "recall_at_1": round(float(np.mean(rank <= 1)), 3),
        "recall_at_3": round(float(np.mean(rank <= 3)), 3),
        "mrr": round(float(np.mean(1.0 / rank)), 3),
    }


def _timed(call: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def latency(embed: Embedder, repeat: int) -> dict[str, float]:
    """Milliseconds: one text embedded, a batch per text, recall and remember (p50/p90)."""
    facts = [f for pairs in USERS.values() for f, _ in pairs]
    queries = [q for pairs in USERS.values() for _, q in pairs]
    one = _timed(lambda: embed_many(embed, [queries[0]]), repeat)
    batch = _timed(lambda: embed_many(embed, facts), max(3, repeat // 10))
    memory = LongTermMemory(embed=embed)
    scope = FrozenDict({"user": "alice"})
    memory.import_many([MemoryWrite(f, scope, FrozenDict(), 0.0) for f in facts])
    turn = iter(range(10**9))
    recall = _timed(
        lambda: memory.recall(queries[next(turn) % len(queries)], scope=scope, k=3), repeat
    )
    remember = _timed(
        lambda: memory.remember(f"a new fact number {next(turn)} about the dock", scope=scope),
        repeat,
    )
    writer = MemoryWriter(memory)
    queue = _timed(
        lambda: writer.remember(f"robot {next(turn)} parked at dock 4", scope=scope), repeat
    )
    flush = _timed(writer.flush, 1)
    memory.close()
    ms = 1000.0
    return {
        "embed_one_p50_ms": round(float(np.median(one)) * ms, 3),
        "embed_batch_per_text_ms": round(float(np.median(batch)) * ms / len(facts), 3),
        "recall_p50_ms": round(float(np.median(recall)) * ms, 3),
        "recall_p90_ms": round(float(np.percentile(recall, 90)) * ms, 3),
        "remember_p50_ms": round(float(np.median(remember)) * ms, 3),
        "writer_remember_p50_ms": round(float(np.median(queue)) * ms, 4),
        "writer_flush_per_text_ms": round(flush[0] * ms / repeat, 3),
    }


def measure(repeat: int = 50, *, model: bool = True) -> dict[str, Any]:
    """Every embedder available here (the model only with ``model``), with its quality
    and latency."""
    embedders: list[tuple[str, Callable[[], Embedder]]] = [("hashing", HashingEmbedder)]
    skipped = unavailable() if model else "not asked for"
    if skipped is None:
        embedders.append(("all-MiniLM-L6-v2", SentenceEmbedder))
    results: dict[str, Any] = {
        "recall_set": {"facts": sum(len(p) for p in USERS.values()), "users": len(USERS)},
        "chinese_set": {"facts": len(CHINESE), "users": 1},
        "embedders": {},
    }
    if skipped is not None:
        results["skipped"] = {"all-MiniLM-L6-v2": skipped}
    for label, make in embedders:
        start = time.perf_counter()
        embed = make()
        loaded = time.perf_counter() - start
        results["embedders"][label] = {
            "name": getattr(embed, "name", label),
            "load_s": round(loaded, 3),
            "recall_set": quality(embed, dict(USERS)),
            "chinese_set": quality(embed, {"zhang": CHINESE}),
            "latency": latency(embed, repeat),
            "load_average": round(os.getloadavg()[0], 2),
        }
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recall", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args(argv)
    results = measure(args.repeat)
    text = json.dumps(results, indent=2, ensure_ascii=False) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_suffix(".json.part")
    partial.write_text(text, encoding="utf-8")
    partial.replace(args.out)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
