"""Long-term memory stays within its bounds: loaded scope indexes (LRU, by count and
bytes), eviction records, the size of one memory; and what opening an older file
brings up to date (claims by the current rules, CJK text embedded by the current
tokeniser)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import TickworkError
from runtime.agent.duplicates import NearDuplicate, claim_of
from runtime.agent.embedding import HashingEmbedder
from runtime.agent.forgetting import MemoryTooLarge, Retention
from runtime.agent.long_term import LongTermMemory
from runtime.agent.residency import IndexBudget
from runtime.agent.writer import MemoryWriter
from runtime.cabin import MemoryWrite
from runtime.freeze import FrozenDict

R1 = {"user": "u1"}

ops = st.lists(
    st.tuples(st.sampled_from(["remember", "recall"]), st.integers(0, 11), st.integers(0, 30)),
    max_size=60,
)


@settings(max_examples=40, deadline=None)
@given(script=ops, scopes=st.integers(1, 4), capacity=st.integers(1, 3), window=st.booleans())
def test_loaded_indexes_stay_within_the_budget_and_answers_do_not_change(
    script: list[tuple[str, int, int]], scopes: int, capacity: int, window: bool
) -> None:
    """A memory that unloads indexes (LRU) answers exactly as one that keeps them all.
    The echo windows of the latest recalls are bounded too (as many scopes as indexes):
    a scope whose window went no longer refuses an echo of its last recall (its
    duplicates still), so answers are compared with the echo filter off."""
    policy = NearDuplicate(recall_window=1 if window else 0)
    bounded = LongTermMemory(
        indexes=IndexBudget(scopes=scopes),
        retention=Retention(capacity=capacity),
        duplicates=policy,
    )
    unbounded = LongTermMemory(retention=Retention(capacity=capacity), duplicates=policy)
    for op, scope_number, n in script:
        scope = {"user": f"u{scope_number}"}
        if op == "remember":
            text = f"fact {n} about dock {n % 3}"
            a, b = (m.remember(text, scope=scope, stamp=float(n)) for m in (bounded, unbounded))
            if window:  # the echo windows may differ: the bounds alone, below
                continue
            assert (a.stored, a.reason, [e.memory_id for e in a.evicted]) == (
                b.stored,
                b.reason,
                [e.memory_id for e in b.evicted],
            )
        else:
            a_ids, b_ids = (
                [r.id for r in m.recall(f"dock {n % 3}", scope=scope, k=3)]
                for m in (bounded, unbounded)
            )
            assert a_ids == b_ids or window
        assert bounded.loaded_scopes() <= scopes
        assert len(bounded._recalled) <= scopes


def test_twenty_thousand_scopes_do_not_keep_twenty_thousand_indexes() -> None:
    """One memory each, as many users as the issue's 20,000 (scaled down to stay fast):
    at most ``IndexBudget.scopes`` indexes stay loaded, each small."""
    budget = IndexBudget(scopes=50)
    memory = LongTermMemory(indexes=budget)
    writes = [
        MemoryWrite(f"user {i} likes dock {i % 7}", FrozenDict({"user": str(i)}), FrozenDict(), 0.0)
        for i in range(2000)
    ]
    memory.remember_many(writes)
    for i in range(0, 2000, 10):
        assert memory.recall("dock", scope={"user": str(i)}, k=1)
    assert memory.loaded_scopes() == 50 and memory._indexes.unloaded >= 1950
    assert memory.index_bytes() <= 50 * 4096  # a one-memory index holds 8 rows, not 64


def test_loaded_indexes_stay_within_their_bytes() -> None:
    memory = LongTermMemory(indexes=IndexBudget(bytes=20_000))
    for i in range(30):
        memory.remember(f"user {i} likes dock {i}", scope={"user": str(i)})
        assert memory.index_bytes() <= 20_000 or memory.loaded_scopes() == 1
    assert memory.loaded_scopes() < 30
    with pytest.raises(ValueError, match="scopes must be an int >= 1"):
        IndexBudget(scopes=0)


@settings(max_examples=40, deadline=None)
@given(
    bound=st.integers(1, 12),
    capacity=st.integers(1, 4),
    writes=st.integers(0, 40),
    forgets=st.integers(0, 5),
)
def test_the_eviction_table_keeps_the_latest_records_within_its_bound(
    bound: int, capacity: int, writes: int, forgets: int
) -> None:
    memory = LongTermMemory(retention=Retention(capacity=capacity, evictions=bound))
    seen: list[int] = []
    for i in range(writes):
        outcome = memory.remember(f"fact number {i}", scope={"s": str(i % 2)}, stamp=float(i))
        seen += [e.memory_id for e in outcome.evicted]
        rows = memory._db.execute("SELECT COUNT(*) FROM evictions").fetchone()[0]
        assert rows <= bound
    for record in memory.records(scope={"s": "0"})[:forgets]:
        memory.forget(record.id)
        seen.append(record.id)
    kept = [e.memory_id for e in memory.evictions()]
    assert kept == seen[-bound:] if seen else kept == []


@pytest.mark.slow
def test_the_issues_capacity_run_keeps_a_bounded_eviction_table() -> None:
    """20,000 writes at capacity 100 left 19,900 eviction rows (scaled down 10 times)."""
    memory = LongTermMemory(retention=Retention(capacity=100, evictions=500))
    writes = [MemoryWrite(f"fact {i}", FrozenDict(R1), FrozenDict(), float(i)) for i in range(2000)]
    memory.remember_many(writes)
    assert memory._db.execute("SELECT COUNT(*) FROM evictions").fetchone()[0] == 500
    assert memory.count(scope=R1) == 100


# -- one memory's size ----------------------------------------------------------------------


class Counting(HashingEmbedder):
    """Counts the texts it embeds (after the probes)."""

    texts: list[str]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().embed_batch(texts)


def test_a_text_over_the_size_limit_is_refused_before_anything_is_embedded_or_written(
    tmp_path: Path,
) -> None:
    embed = Counting()
    embed.texts = []
    memory = LongTermMemory(str(tmp_path / "m.sqlite"), embed=embed)
    page = "<html>" + "<p>row</p>" * 200_000  # 2 MB, as the issue's HTML page
    embed.texts.clear()
    with pytest.raises(MemoryTooLarge, match=r"at most 4,096 characters .* summarise it first"):
        memory.remember(page, scope=R1)
    writes = [
        MemoryWrite("a fine fact", FrozenDict(R1), FrozenDict(), 0.0),
        MemoryWrite("x" * 4097, FrozenDict(R1), FrozenDict(), 0.0),
    ]
    with pytest.raises(TickworkError):  # the whole batch, before any of it is written
        memory.remember_many(writes)
    with pytest.raises(MemoryTooLarge):
        memory.enqueue(page, scope=R1)
    with pytest.raises(MemoryTooLarge):
        MemoryWriter(memory).remember(page, scope=R1)
    assert memory.count() == 0 and memory.pending() == 0 and embed.texts == []
    assert memory.remember("y" * 4096, scope=R1).stored  # the limit itself is allowed


def test_a_queued_write_over_this_memorys_limit_is_refused_as_too_large(tmp_path: Path) -> None:
    """Queued by a process with a larger limit: applied here as a refusal, not an error
    that would stop every later open of the file."""
    path = str(tmp_path / "m.sqlite")
    roomy = LongTermMemory(path, retention=Retention(max_chars=10_000))
    roomy.enqueue("z" * 5000, scope=R1)
    roomy.enqueue("a short fact", scope=R1)
    roomy.close()
    embed = Counting()
    embed.texts = []
    with LongTermMemory(path, embed=embed, recover=False) as memory:
        embed.texts.clear()
        outcomes = [o.reason for _, o in memory.flush()]
        assert outcomes == ["too_large", "stored"] and embed.texts == ["a short fact"]
        assert memory.pending() == 0


# -- opening a file of older rules ------------------------------------------------------------


def test_opening_a_file_computes_its_claims_by_the_current_rules(tmp_path: Path) -> None:
    path = str(tmp_path / "m.sqlite")
    with LongTermMemory(path) as memory:
        memory.remember("会议在三月举行", scope=R1)
    with sqlite3.connect(path) as db:  # as the rules before CJK numerals left it
        db.execute("UPDATE memories SET numbers = '', negates = 0")
        db.execute("DELETE FROM meta WHERE key = 'claims'")
    with LongTermMemory(path) as memory:
        row = memory._db.execute("SELECT numbers, negates FROM memories").fetchone()
        assert (row[0], bool(row[1])) == claim_of("会议在三月举行") == ("3", False)
        assert memory.remember("会议在三月举行。", scope=R1).reason == "duplicate"


def test_opening_a_file_embeds_its_cjk_memories_again_with_the_current_tokeniser(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "m.sqlite")
    texts = ["张伟对花生过敏", "dock B unloads slowly"]
    with LongTermMemory(path) as memory:
        for text in texts:
            memory.remember(text, scope=R1)
        memory.remember("张伟的经理是李娜", scope=R1, metadata={"memory": {"subject": "boss"}})
    stale = np.zeros(256, dtype="<f4")
    stale[0] = 1.0  # what the whole-clause tokeniser gave: nothing a query shares
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE memories SET embedding = ? WHERE content != ?", (stale.tobytes(), texts[1])
        )
        before = db.execute(
            "SELECT embedding FROM memories WHERE content = ?", texts[1:]
        ).fetchone()
        db.execute("DELETE FROM meta WHERE key = 'revision'")
    with LongTermMemory(path) as memory:
        assert [r.content for r in memory.recall("张伟对什么过敏", scope=R1, k=1)] == [texts[0]]
        vectors = dict(memory._db.execute("SELECT content, embedding FROM memories").fetchall())
    embed = HashingEmbedder()
    for text in ("张伟对花生过敏", "张伟的经理是李娜"):
        assert np.allclose(np.frombuffer(vectors[text], dtype="<f4"), embed(text), atol=1e-6)
    assert vectors[texts[1]] == before[0]  # text without CJK characters is left alone
