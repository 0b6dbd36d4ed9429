"""Long-term memory: subjects, the duplicate filter, forgetting by value, the exact index,
embedder identity, batching, queued writes and the schema-1 files it still opens."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cabins.planner import BlockedSpot, Planner, blocked_subject
from runtime import TickworkError
from runtime.agent.duplicates import NearDuplicate, negates, numbers_in
from runtime.agent.embedding import EmbedderMismatch, HashingEmbedder
from runtime.agent.forgetting import Retention
from runtime.agent.long_term import LongTermMemory, MemoryFileError
from runtime.agent.vectors import ScopeIndex, quantize
from runtime.agent.writer import MemoryWriter
from runtime.cabin import MemoryWrite
from runtime.freeze import FrozenDict
from runtime.longterm import MemoryTerms
from runtime.spec import load_spec
from tests.support.paths import ROOT

R1 = {"robot": "r1"}


def fact(subject: str, *, holds: bool = True, **terms: Any) -> dict[str, Any]:
    return MemoryTerms(subject=subject, holds=holds, **terms).attach({"note": subject})


# -- structured facts: supersede and retire ------------------------------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),  # subject
        st.integers(0, 6),  # stamp
        st.booleans(),  # holds
        st.sampled_from(["x", "y"]),  # content variant
    ),
    max_size=30,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(ops)
def test_a_subject_has_one_current_fact_the_newest_and_retired_ones_are_never_recalled(
    script: list[tuple[str, int, bool, str]],
) -> None:
    memory = LongTermMemory()
    model: dict[str, tuple[float, str]] = {}  # subject -> (stamp, content) of its current fact
    for subject, stamp, holds, variant in script:
        content = f"{subject} is {'' if holds else 'no longer '}{variant}"
        outcome = memory.remember(
            content, scope=R1, metadata=fact(subject, holds=holds), stamp=float(stamp)
        )
        current = model.get(subject)
        if not holds:
            expected = (
                "nothing_to_retire"
                if current is None
                else ("older" if stamp < current[0] else "retired")
            )
            if expected == "retired":
                del model[subject]
        elif current is None:
            expected = "stored"
            model[subject] = (stamp, content)
        elif stamp < current[0]:
            expected = "older"
        elif (stamp, content) == current:
            expected = "duplicate"
        else:
            expected = "superseded"
            model[subject] = (stamp, content)
        assert outcome.reason == expected
        assert outcome.stored == (expected in ("stored", "superseded", "retired"))
    records = memory.records(scope=R1)
    assert {r.subject: (r.stamp, r.content) for r in records} == model
    assert len(records) == len(model) == memory.count(scope=R1)
    found = memory.recall("is x", scope=R1, k=10, min_score=-1.0)
    assert {r.id for r in found} == {r.id for r in records}  # history is never recalled
    for subject in "abc":
        history = memory.history(scope=R1, subject=subject)
        assert sum(r.status == "current" for r in history) == (subject in model)
        assert all(r.status != "current" for r in history[:-1])


def test_a_clear_now_retires_the_fact_and_keeps_it_as_history() -> None:
    memory = LongTermMemory()
    blocked = memory.remember("aisle 3 is blocked", scope=R1, metadata=fact("aisle:3"), stamp=1)
    clear = memory.remember(
        "aisle 3 is clear now", scope=R1, metadata=fact("aisle:3", holds=False), stamp=2
    )
    assert clear.stored and clear.reason == "retired" and clear.replaced == blocked.record.id  # type: ignore[union-attr]
    assert memory.records(scope=R1) == () and memory.recall("aisle 3", scope=R1) == ()
    assert [(r.content, r.status) for r in memory.history(scope=R1, subject="aisle:3")] == [
        ("aisle 3 is blocked", "retired"),
        ("aisle 3 is clear now", "retraction"),
    ]
    again = memory.remember("aisle 3 is blocked", scope=R1, metadata=fact("aisle:3"), stamp=3)
    assert again.reason == "stored" and memory.current(scope=R1, subject="aisle:3") is not None


def test_history_is_bounded_per_subject() -> None:
    memory = LongTermMemory(retention=Retention(history=2))
    for stamp in range(6):
        memory.remember(f"version {stamp}", scope=R1, metadata=fact("s"), stamp=stamp)
    history = memory.history(scope=R1, subject="s")
    assert [r.content for r in history] == ["version 3", "version 4", "version 5"]


def test_one_current_fact_per_subject_is_enforced_by_the_database(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    LongTermMemory(str(path)).remember("a", scope=R1, metadata=fact("s"), stamp=1)
    with sqlite3.connect(path) as db, pytest.raises(sqlite3.IntegrityError):
        db.execute(
            "INSERT INTO memories (scope, content, metadata, stamp, embedding, subject) "
            "SELECT scope, 'b', metadata, stamp, embedding, subject FROM memories"
        )


def test_the_planner_keeps_every_fact_of_a_grid_of_its_own_blocked_spots() -> None:
    """40 x 20 cells, a forklift blocking each: 800 distinct facts, all kept (the text
    filter refused 191 of them as duplicates when they were compared by embedding)."""
    memory = LongTermMemory()
    scope = {"scenario": "grid"}
    writes = []
    for x in range(40):
        for y in range(20):
            spot = BlockedSpot(float(x), float(y), 1.0, "forklift", 5.0)
            content, metadata = spot.fact((float(x), float(y)), reason="obstacle_in_corridor")
            writes.append(MemoryWrite(content, FrozenDict(scope), FrozenDict(metadata), 5.0))
    outcomes = memory.remember_many(writes)
    assert all(o.stored and o.reason == "stored" for o in outcomes)
    assert memory.count(scope=scope) == 800
    # the same facts again are duplicates by subject, not by text
    assert all(o.reason == "duplicate" for o in memory.remember_many(writes[:50]))
    spec = load_spec(ROOT / "specs" / "planner.toml")
    planner = Planner(spec, long_term=memory, memory_scope=scope)
    assert len(planner.blocked_spots) == 800
    # a newer sighting supersedes its cell's fact; clear now retires one
    newer = BlockedSpot(13.0, 7.0, 1.0, "forklift", 60.0)
    content, metadata = newer.fact((13.0, 7.0))
    assert memory.remember(content, scope=scope, metadata=metadata, stamp=60.0).reason == (
        "superseded"
    )
    content, metadata = newer.clear_fact((7.0, 13.0), 70.0)
    assert memory.remember(content, scope=scope, metadata=metadata, stamp=70.0).reason == (
        "retired"
    )
    assert memory.count(scope=scope) == 799
    assert memory.current(scope=scope, subject=blocked_subject("forklift", (7.0, 13.0))) is None
    assert memory.current(scope=scope, subject=blocked_subject("forklift", (13.0, 7.0))) is not None


@pytest.mark.slow
def test_the_grid_facts_as_text_are_kept_by_the_number_guard_and_lost_without_it() -> None:
    texts = [f"a forklift blocked the way near ({x}, {y})" for x in range(40) for y in range(20)]
    blind = NearDuplicate(numbers=False, negation=False, words=False)
    for policy, refused in ((blind, 191), (None, 0)):
        memory = LongTermMemory(duplicates=policy)
        outcomes = [memory.remember(t, scope=R1) for t in texts]
        assert sum(not o.stored for o in outcomes) == refused


# -- text memories: the duplicate filter ----------------------------------------------------

PARAPHRASES = [  # the same claim: refused as duplicates
    ("Dock B unloads slowly.", "dock b unloads slowly"),
    ("aisle 3 was blocked at t=40", "Aisle 3 was blocked at t=40."),
    ("the charger at (1, 2) is out of order", "The charger at (1,2) is out of order!"),
    ("the  west   aisle is narrow", "the west aisle is narrow"),
]
DIFFERENT = [  # distinct facts a word-based embedding finds alike: both stored
    ("a forklift blocked the way near (13, 7)", "a forklift blocked the way near (7, 13)"),
    ("aisle 3 was blocked at t=40", "aisle 3 was blocked at t=41"),
    ("aisle 3 is blocked", "aisle 3 is not blocked"),
    ("the dock is open", "the dock isn't open"),
    ("dock A unloads slowly", "the battery is at 20 percent"),
]


@pytest.mark.parametrize(("first", "second"), PARAPHRASES)
def test_a_restated_fact_is_refused(first: str, second: str) -> None:
    memory = LongTermMemory()
    assert memory.remember(first, scope=R1).stored
    again = memory.remember(second, scope=R1)
    assert (again.stored, again.reason) == (False, "duplicate") and again.similarity >= 0.95


@pytest.mark.parametrize(("first", "second"), DIFFERENT)
def test_a_different_fact_is_stored_however_alike_the_words(first: str, second: str) -> None:
    memory = LongTermMemory()
    assert memory.remember(first, scope=R1).stored
    assert memory.remember(second, scope=R1).stored
    assert memory.count(scope=R1) == 2


class SemanticTable:
    """A stand-in for a semantic model: true paraphrases get one vector."""

    name = "semantic-table"
    vectors: ClassVar[dict[str, list[float]]] = {
        "a forklift blocked the way": [1.0, 0.0, 0.0, 0.0],
        "the way was blocked by a forklift": [0.99, 0.1, 0.0, 0.0],
        "the battery is low": [0.0, 0.0, 1.0, 0.0],
    }

    def __call__(self, text: str) -> list[float]:
        return self.vectors.get(text, [0.0, 0.0, 0.0, 1.0])


def test_true_paraphrases_are_caught_by_an_embedder_that_knows_meaning_not_by_hashing() -> None:
    pair = ("a forklift blocked the way", "the way was blocked by a forklift")
    semantic = LongTermMemory(embed=SemanticTable())
    semantic.remember(pair[0], scope=R1)
    assert semantic.remember(pair[1], scope=R1).reason == "duplicate"
    hashing = LongTermMemory()  # words, not meaning: a known limit of the default
    hashing.remember(pair[0], scope=R1)
    assert hashing.remember(pair[1], scope=R1).stored


@given(st.text(max_size=40), st.text(max_size=40))
def test_the_claim_guards_are_symmetric_and_reflexive(a: str, b: str) -> None:
    policy = NearDuplicate()
    assert policy.same_claim(a, a)
    assert policy.same_claim(a, b) == policy.same_claim(b, a)
    assert numbers_in("near (07, 13.5)") == ("7", "13.5") and negates("it isn\u2019t")


# -- forgetting by value ----------------------------------------------------------------------

writes = st.lists(
    st.tuples(
        st.sampled_from([0.1, 0.5, 0.9]),  # importance
        st.booleans(),  # pinned
        st.integers(0, 5),  # stamp step
        st.one_of(st.none(), st.sampled_from([2.0, 5.0])),  # ttl
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(1, 6), script=writes)
def test_capacity_and_ttl_forget_by_importance_recency_and_id_never_a_pinned_memory(
    capacity: int, script: list[tuple[float, bool, int, float | None]]
) -> None:
    memory = LongTermMemory(retention=Retention(capacity=capacity))
    model: dict[int, tuple[float, float, bool, float | None]] = {}  # id -> terms
    now = 0.0
    for n, (importance, pinned, step, ttl) in enumerate(script):
        now += step
        outcome = memory.remember(
            f"memory number {n}",  # the numbers differ: never duplicates
            scope=R1,
            metadata=MemoryTerms(importance=importance, pinned=pinned, ttl=ttl).attach(),
            stamp=now,
        )
        assert outcome.record is not None
        expired = sorted(i for i, t in model.items() if t[3] is not None and t[3] <= now)
        for i in expired:
            del model[i]
        model[outcome.record.id] = (importance, now, pinned, None if ttl is None else now + ttl)
        victims = []
        while len(model) > capacity:
            free = [(t[0], t[1], i) for i, t in model.items() if not t[2]]
            if not free:
                break
            victim = min(free)[2]
            victims.append(victim)
            del model[victim]
        assert [e.memory_id for e in outcome.evicted] == expired + victims
        assert [e.reason for e in outcome.evicted] == ["expired"] * len(expired) + [
            "capacity"
        ] * len(victims)
        assert outcome.capacity_alarm == (len(model) > capacity)
        assert {r.id for r in memory.records(scope=R1)} == set(model)
    assert all(not e.pinned or e.reason == "expired" for e in memory.evictions())


def test_recall_with_a_time_forgets_what_expired_and_touch_makes_a_memory_recent() -> None:
    memory = LongTermMemory(retention=Retention(capacity=2, ttl=10.0))
    memory.remember("dock A is slow", scope=R1, stamp=0.0)
    memory.remember("dock B is fast", scope=R1, stamp=1.0)
    assert [r.content for r in memory.recall("dock A", scope=R1, k=1, now=2.0, touch=True)] == [
        "dock A is slow"
    ]
    third = memory.remember("dock C is closed", scope=R1, stamp=3.0)  # B is the stalest now
    assert [e.content for e in third.evicted] == ["dock B is fast"]
    assert [r.content for r in memory.recall("dock", scope=R1, now=12.5)] == ["dock C is closed"]
    assert [e.reason for e in memory.evictions(scope=R1)] == ["capacity", "expired"]


def test_scopes_never_evict_each_other() -> None:
    memory = LongTermMemory(retention=Retention(capacity=2))
    for n in range(5):
        memory.remember(f"fact {n}", scope={"robot": "a"}, stamp=float(n))
    memory.remember("fact b", scope={"robot": "b"}, stamp=0.0)
    assert memory.count(scope={"robot": "a"}) == 2 and memory.count(scope={"robot": "b"}) == 1
    assert all(e.scope == {"robot": "a"} for e in memory.evictions())


# -- the index: exact answers from quantised vectors ---------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    dim=st.integers(8, 40),
    k=st.integers(1, 8),
    seed=st.integers(0, 2**16),
    near=st.booleans(),
)
def test_the_bounds_hold_and_top_candidates_contain_the_exact_top_k(
    n: int, dim: int, k: int, seed: int, near: bool
) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim))
    if near:  # many vectors close together: where ties and bounds matter
        vectors = vectors[:1] + 0.01 * vectors
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors.astype(np.float32)
    query = rng.standard_normal(dim)
    query /= np.linalg.norm(query)
    index = ScopeIndex(dim, capacity=4)
    index.add(list(range(100, 100 + n)), vectors)
    ids, lower, upper = index.bounds(query)
    exact = {int(i): float(vectors[int(i) - 100].astype(np.float64) @ query) for i in ids}
    assert all(lo <= exact[int(i)] <= up for i, lo, up in zip(ids, lower, upper, strict=True))
    best = sorted(exact, key=lambda i: (-exact[i], i))[:k]
    assert set(best) <= {int(i) for i in index.top_candidates(query, k)}
    threshold = float(np.median(list(exact.values())))
    assert {i for i, s in exact.items() if s >= threshold} <= {
        int(i) for i in index.reaching(query, threshold)
    }
    index.remove([100, 100 + n - 1, 999])
    assert len(index) == max(0, n - 2) and 100 not in index
    index.add([7, 7], np.vstack([vectors[:1], vectors[:1]]))  # one id twice: the last vector wins
    assert len(index) == max(0, n - 2) + 1 and 7 in index


@settings(max_examples=40, deadline=None)
@given(
    claims=st.lists(st.one_of(st.none(), st.integers(0, 7)), min_size=1, max_size=80),
    asked=st.one_of(st.none(), st.integers(0, 7)),
    seed=st.integers(0, 2**16),
    drop=st.integers(0, 10),
)
def test_a_threshold_query_of_one_claim_finds_every_vector_of_it_that_reaches(
    claims: list[int | None], asked: int | None, seed: int, drop: int
) -> None:
    rng = np.random.default_rng(seed)
    n, dim = len(claims), 24
    vectors = rng.standard_normal((n, dim))
    vectors = vectors[:1] + 0.3 * vectors  # alike: many reach the threshold
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors.astype(np.float32)
    index = ScopeIndex(dim, capacity=4)
    index.add(list(range(n)), vectors, claims)
    gone = set(range(1, n, drop + 1)) if drop else set()  # the first always stays
    index.remove(gone)
    query = vectors[0].astype(np.float64) + 0.05 * rng.standard_normal(dim)
    query /= np.linalg.norm(query)
    exact = {i: float(vectors[i].astype(np.float64) @ query) for i in range(n) if i not in gone}
    threshold = float(np.median(list(exact.values())))
    found = {int(i) for i in index.reaching(query, threshold, asked)}
    # the claim's own vectors and those without one, never another claim's
    mine = {i for i in exact if claims[i] == asked or (asked is not None and claims[i] is None)}
    assert {i for i in mine if exact[i] >= threshold} <= found
    if len(mine) <= len(exact) // 4:  # the grouped scan (else the full one, a superset)
        assert found <= mine


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 300),
    dim=st.integers(8, 48),
    spread=st.sampled_from([0.05, 0.3, 1.0, 10.0]),  # 10: no direction dominates
    seed=st.integers(0, 2**16),
    sketch_from=st.integers(1, 40),
    drop=st.integers(0, 5),
    unit=st.booleans(),
)
def test_the_sketch_bound_holds_and_a_threshold_query_through_it_misses_nothing(
    n: int, dim: int, spread: float, seed: int, sketch_from: int, drop: int, unit: bool
) -> None:
    """The sketch skips only vectors that cannot reach the threshold (brute force), for
    bases fitted at any size, refitted as the scope grows, through removals."""
    rng = np.random.default_rng(seed)
    centre = rng.standard_normal((3, dim))
    vectors = centre[rng.integers(0, 3, n)] + spread * rng.standard_normal((n, dim))
    if unit:
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors.astype(np.float32)
    index = ScopeIndex(dim, capacity=4, sketch_from=sketch_from)
    for start in range(0, n, 37):  # in several adds: the basis is refitted as n doubles
        index.add(list(range(start, min(n, start + 37))), vectors[start : start + 37])
        index.fit()  # when due: first at sketch_from, then as n doubles; else rows are sketched
    gone = set(range(1, n, drop + 1)) if drop else set()
    index.remove(gone)
    held = [i for i in range(n) if i not in gone]
    query = vectors[held[0]].astype(np.float64) + 0.1 * rng.standard_normal(dim)
    if unit:
        query /= np.linalg.norm(query)
    exact = {i: float(vectors[i].astype(np.float64) @ query) for i in held}
    rows = (
        {int(index.ids()[r]) for r in index._sketched(query, -np.inf)}
        if index._basis is not None
        else set(held)
    )
    assert rows == set(held)  # every held vector is sketched
    for threshold in [*sorted(exact.values())[-3:], float(np.median(list(exact.values())))]:
        reaching = {i for i, s in exact.items() if s >= threshold}
        if index._basis is not None:
            kept = {int(index.ids()[r]) for r in index._sketched(query, threshold)}
            assert reaching <= kept
        assert reaching <= {int(i) for i in index.reaching(query, threshold)}


@pytest.mark.slow
def test_the_sketch_skips_most_of_a_scope_of_alike_texts() -> None:
    """What makes the duplicate check fast: on texts that share words (the benchmark's
    kind), the sketch leaves the int8 check a small fraction of the scope."""
    from benchmarks.long_term import sentences
    from runtime.agent.embedding import embed_many

    embed = HashingEmbedder()
    vectors = embed_many(embed, sentences(6000, 0))
    index = ScopeIndex(256, sketch_from=4096)
    index.add(list(range(len(vectors))), vectors)
    index.fit()
    assert index._basis is not None
    for query in embed_many(embed, sentences(20, 4, start=10_000)):
        kept = index._sketched(query, 0.95)
        assert len(kept) < len(vectors) // 20
        truth = set(np.flatnonzero(vectors @ query >= 0.95).tolist())
        assert truth <= {int(i) for i in index.reaching(query, 0.95)}


def test_the_numpy_scan_gives_what_the_simd_scan_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    import runtime.agent.vectors as vectors

    rng = np.random.default_rng(5)
    data = rng.standard_normal((50, 16)).astype(np.float32)
    query = rng.standard_normal(16)
    index = ScopeIndex(16)
    index.add(list(range(50)), data)
    simd = [index.bounds(query), index.top_candidates(query, 3), index.reaching(query, 0.1)]
    monkeypatch.setattr(vectors, "_nk", None)
    plain = [index.bounds(query), index.top_candidates(query, 3), index.reaching(query, 0.1)]
    for a, b in zip(simd[0], plain[0], strict=True):
        assert np.allclose(a, b, rtol=0, atol=1e-12)
    assert [list(x) for x in simd[1:]] == [list(x) for x in plain[1:]]


def test_quantised_codes_are_bounded_and_zero_stays_zero() -> None:
    codes, inverse, norm, error = quantize(np.array([[0.0, 0.0], [1.0, -0.5]]))
    assert codes.tolist() == [[0, 0], [127, -64]] and norm[0] == error[0] == 0.0
    assert error[1] <= 0.5 * inverse[1] * np.sqrt(2)


def test_recall_is_exact_against_a_brute_force_ranking() -> None:
    memory = LongTermMemory()
    rng = np.random.default_rng(1)
    words = ["aisle", "dock", "blocked", "charger", "slow", "people", "forklift", "east"]
    texts = sorted({" ".join(rng.choice(words, 4)) + f" {i}" for i in range(300)})
    memory.remember_many([MemoryWrite(t, FrozenDict(R1), FrozenDict(), 0.0) for t in texts])
    records = memory.records(scope=R1)
    embed = HashingEmbedder()
    matrix = np.vstack([embed(r.content).astype(np.float32) for r in records]).astype(np.float64)
    for query in ("blocked aisle", "forklift near the east dock", "slow charger 7"):
        scores = matrix @ embed(query)
        expected = sorted(range(len(records)), key=lambda i: (-scores[i], records[i].id))[:7]
        found = memory.recall(query, scope=R1, k=7, min_score=-1.0)
        assert [r.id for r in found] == [records[i].id for i in expected]
        assert [r.score for r in found] == pytest.approx([scores[i] for i in expected])


# -- the embedder's identity and batches ------------------------------------------------------


def test_two_embedders_of_one_name_and_dimension_are_told_apart(tmp_path: Path) -> None:
    path = str(tmp_path / "m.sqlite")
    first = lambda text: [1.0, float(len(text)), 0.0]  # noqa: E731 - two lambdas, one name
    second = lambda text: [0.0, 1.0, float(len(text) % 3)]  # noqa: E731
    LongTermMemory(path, embed=first).remember("fact", scope=R1)
    LongTermMemory(path, embed=first).close()  # the same function: accepted
    with pytest.raises(EmbedderMismatch, match="gives other vectors") as caught:
        LongTermMemory(path, embed=second)
    assert isinstance(caught.value, TickworkError) and "<lambda>" in str(caught.value)
    with pytest.raises(EmbedderMismatch, match="<lambda>', not 'hashing-256-3'"):
        LongTermMemory(path)


def test_embedding_is_batched() -> None:
    class Counting(HashingEmbedder):
        batches: list[int]

        def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
            self.batches.append(len(texts))
            return super().embed_batch(texts)

    embed = Counting()
    embed.batches = []
    memory = LongTermMemory(embed=embed)
    outcomes = memory.remember_many(
        [MemoryWrite(f"fact {i}", FrozenDict(R1), FrozenDict(), 0.0) for i in range(20)]
    )
    assert all(o.stored for o in outcomes) and embed.batches[1:] == [20]  # [0]: the probes


# -- queued writes ---------------------------------------------------------------------------


def test_a_writer_queues_and_applies_between_ticks_and_at_close() -> None:
    memory = LongTermMemory()
    seen: list[tuple[str, str]] = []
    writer = MemoryWriter(memory, on_written=lambda w, o: seen.append((w.content, o.reason)))
    queued = writer.remember("dock A is slow", scope=R1, stamp=1.0)
    writer.remember("Dock A is slow.", scope=R1, stamp=2.0)
    assert (queued.stored, queued.reason) == (False, "queued") and memory.count() == 0
    assert writer.pending == 2
    writer.after_apply(None)
    assert seen == [("dock A is slow", "stored"), ("Dock A is slow.", "duplicate")]
    writer.remember("dock B is fast", scope=R1, stamp=3.0)
    writer.close()
    assert writer.pending == 0 and memory.count() == 2
    with pytest.raises(ValueError, match="needs content"):
        writer.remember("  ", scope=R1)


def test_a_restored_writer_keeps_its_queue() -> None:
    from runtime.cabin import MemoryWrite
    from runtime.testing import round_trip_state

    memory = LongTermMemory()
    writer = MemoryWriter(memory)
    writer.remember("dock A is slow", scope=R1, stamp=1.0)
    copy = round_trip_state(writer, MemoryWriter(memory), records={"MemoryWrite": MemoryWrite})
    assert copy.pending == 1 and copy.memory is memory  # the memory is the program's own
    [(write, outcome)] = copy.flush()
    assert write.content == "dock A is slow" and outcome.stored


def test_the_background_writer_applies_while_the_caller_goes_on(tmp_path: Path) -> None:
    memory = LongTermMemory(str(tmp_path / "m.sqlite"))
    for journal in (False, True):
        writer = MemoryWriter(memory, journal=journal)
        writer.start(interval=0.01)
        for i in range(20):
            writer.remember(f"fact {i} of {journal}", scope=R1, stamp=float(i))
        writer.close()  # stops the thread; nothing queued is lost
        assert writer.pending == 0
    assert memory.count(scope=R1) == 40


def test_a_journaled_write_applied_by_another_thread_at_once_is_still_handed_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race behind a flaky background-writer test, made to happen every time: a flush
    on another thread applies a write between its journaling and its counting as this
    writer's. Its outcome must come back, and ``pending`` fall to 0."""
    memory = LongTermMemory(str(tmp_path / "m.sqlite"))
    seen: list[tuple[str, str]] = []
    writer = MemoryWriter(
        memory, journal=True, on_written=lambda w, o: seen.append((w.content, o.reason))
    )
    applied = threading.Event()
    flushers: list[threading.Thread] = []
    enqueue, flush = memory.enqueue, memory.flush

    def flushing(**kwargs: Any) -> Any:
        out = flush(**kwargs)
        applied.set()
        return out

    def enqueuing(content: str, **kwargs: Any) -> Any:
        queued = enqueue(content, **kwargs)  # in the journal, and now another thread flushes
        flushers.append(threading.Thread(target=writer.flush))
        flushers[-1].start()
        assert applied.wait(timeout=60)  # it applied the write before remember() goes on
        return queued

    monkeypatch.setattr(memory, "enqueue", enqueuing)
    monkeypatch.setattr(memory, "flush", flushing)
    writer.remember("dock A is slow", scope=R1, stamp=1.0)
    flushers[0].join(timeout=60)
    assert not flushers[0].is_alive()
    assert seen == [("dock A is slow", "stored")]
    assert (writer.pending, writer.written, memory.count(scope=R1)) == (0, 1, 1)


def test_writes_journaled_before_the_background_writer_starts_are_handed_back(
    tmp_path: Path,
) -> None:
    memory = LongTermMemory(str(tmp_path / "m.sqlite"))
    seen: list[str] = []
    writer = MemoryWriter(memory, journal=True, on_written=lambda w, o: seen.append(w.content))
    writer.remember("dock A is slow", scope=R1, stamp=1.0)
    writer.start(interval=60.0)  # its connection must not apply (and swallow) the journal
    writer.close()
    assert seen == ["dock A is slow"] and writer.pending == 0 and memory.count(scope=R1) == 1


@pytest.mark.parametrize("journal", [False, True])
def test_a_closed_writer_refuses_writes_instead_of_queueing_them_for_no_one(
    tmp_path: Path, journal: bool
) -> None:
    memory = LongTermMemory(str(tmp_path / "m.sqlite"))
    writer = MemoryWriter(memory, journal=journal)
    writer.remember("dock A is slow", scope=R1, stamp=1.0)
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.remember("dock B is fast", scope=R1, stamp=2.0)
    with pytest.raises(ValueError, match="closed"):
        writer.start()
    assert writer.pending == 0 and memory.count(scope=R1) == 1 and memory.pending() == 0


def test_a_failed_batch_stays_queued_and_the_applied_ones_are_still_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = LongTermMemory()
    seen: list[str] = []
    writer = MemoryWriter(memory, batch=1, on_written=lambda w, o: seen.append(w.content))
    for i in range(3):
        writer.remember(f"fact {i}", scope=R1, stamp=float(i))
    remember_many = memory.remember_many

    def failing_second(writes: Sequence[MemoryWrite]) -> Any:
        if writes[0].content == "fact 1":
            raise sqlite3.OperationalError("disk I/O error")
        return remember_many(writes)

    monkeypatch.setattr(memory, "remember_many", failing_second)
    with pytest.raises(sqlite3.OperationalError):
        writer.flush()
    assert seen == ["fact 0"] and writer.pending == 2 and writer.written == 1
    monkeypatch.setattr(memory, "remember_many", remember_many)
    writer.close()
    assert seen == ["fact 0", "fact 1", "fact 2"] and memory.count(scope=R1) == 3


CRASH = """
import os, sys
from runtime.agent.long_term import LongTermMemory
from runtime.agent.writer import MemoryWriter
memory = LongTermMemory(sys.argv[1])
writer = MemoryWriter(memory, journal=True)
for i in range(5):
    writer.remember(f"fact {i}", scope={"robot": "r1"}, stamp=float(i))
os._exit(9)  # killed before any flush
"""


def test_a_journaled_write_survives_a_crash_before_the_flush(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    done = subprocess.run([sys.executable, "-c", CRASH, str(path)], cwd=ROOT, check=False)
    assert done.returncode == 9
    with LongTermMemory(str(path)) as memory:  # opening applies what the journal holds
        assert [r.content for r in memory.records(scope=R1)] == [f"fact {i}" for i in range(5)]
        assert memory.pending() == 0


# -- two processes, one file -----------------------------------------------------------------

WRITER = """
import sys
from runtime.agent.long_term import LongTermMemory
from runtime.longterm import MemoryTerms
path, me, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
order = range(n) if me == "a" else reversed(range(n))
memory = LongTermMemory(path)
for i in order:  # the same facts from both, in opposite orders, and one of each's own
    memory.remember(f"shared fact number {i}", scope={"site": "x"}, stamp=1.0)
    memory.remember(
        f"spot {i}", scope={"site": "x"}, stamp=1.0,
        metadata=MemoryTerms(subject=f"spot:{i}").attach(),
    )
    memory.remember(f"{me} saw number {i}", scope={"site": "x"}, stamp=1.0)
memory.close()
"""


@pytest.mark.slow
def test_two_processes_writing_one_file_store_each_fact_once_and_lose_none(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.sqlite"
    LongTermMemory(str(path)).close()
    n = 60
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), me, str(n)], cwd=ROOT)
        for me in "ab"
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with LongTermMemory(str(path)) as memory:
        contents = [r.content for r in memory.records(scope={"site": "x"})]
    assert len(contents) == len(set(contents))  # no duplicate
    expected = {f"shared fact number {i}" for i in range(n)}
    expected |= {f"spot {i}" for i in range(n)}
    expected |= {f"{me} saw number {i}" for me in "ab" for i in range(n)}
    assert set(contents) == expected  # and no lost fact


# -- files ------------------------------------------------------------------------------------

SCHEMA_1 = """
CREATE TABLE memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, content TEXT NOT NULL,
    metadata TEXT NOT NULL, stamp REAL NOT NULL, embedding BLOB NOT NULL
);
CREATE INDEX memories_scope ON memories (scope);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def test_a_schema_1_file_opens_with_its_memories(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    embed = HashingEmbedder()
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA_1)
        db.execute("INSERT INTO meta VALUES ('embedder', 'hashing-256-3'), ('dim', '256')")
        for i, text in enumerate(["aisle 3 was blocked", "dock B unloads slowly"]):
            db.execute(
                "INSERT INTO memories (scope, content, metadata, stamp, embedding) "
                "VALUES (?, ?, ?, ?, ?)",
                (json.dumps(R1), text, "{}", float(i), embed(text).astype(np.float32).tobytes()),
            )
    with LongTermMemory(str(path)) as memory:
        assert [r.content for r in memory.recall("blocked aisle", scope=R1, k=1)] == [
            "aisle 3 was blocked"
        ]
        assert memory.remember("Aisle 3 was blocked.", scope=R1).reason == "recalled"
        assert [r.last_used for r in memory.records(scope=R1)] == [0.0, 1.0]


def test_a_schema_2_file_gets_its_claims_stored_and_keeps_its_duplicate_filter(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "m.sqlite")
    with LongTermMemory(path) as memory:
        for i, text in enumerate(["aisle 3 was blocked", "aisle 4 was not blocked", "dock B"]):
            memory.remember(text, scope=R1, stamp=float(i))
    with sqlite3.connect(path) as db:  # as schema 2 left it: no claim columns
        db.execute("ALTER TABLE memories DROP COLUMN numbers")
        db.execute("ALTER TABLE memories DROP COLUMN negates")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    with LongTermMemory(path) as memory:
        assert memory.remember("Aisle 3 was blocked.", scope=R1, stamp=5.0).reason == "duplicate"
        assert memory.remember("aisle 3 was not blocked", scope=R1, stamp=6.0).stored
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT content, numbers, negates FROM memories ORDER BY id").fetchall()
        assert rows[:2] == [("aisle 3 was blocked", "3", 0), ("aisle 4 was not blocked", "4", 1)]
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("3",)
        db.execute("UPDATE memories SET numbers = NULL, negates = NULL")  # an older writer's
    with LongTermMemory(path) as memory:  # a NULL claim is read from the text
        assert memory.remember("aisle 4 was NOT blocked!", scope=R1, stamp=7.0).reason == (
            "duplicate"
        )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from("ab 0123.,'n\u2019t"), min_size=1, max_size=20).filter(
            str.strip
        ),
        min_size=1,
        max_size=8,
        unique=True,
    )
)
def test_the_stored_claim_of_a_memory_is_the_claim_of_its_text(texts: list[str]) -> None:
    from runtime.agent.duplicates import claim_of

    memory = LongTermMemory(duplicates=NearDuplicate(threshold=1.0))
    memory.import_many([MemoryWrite(t, FrozenDict(R1), FrozenDict(), 0.0) for t in texts[:4]])
    for t in texts[4:]:
        memory.remember(t, scope=R1, stamp=1.0)
    rows = memory._db.execute("SELECT content, numbers, negates FROM memories").fetchall()
    for content, numbers, negation in rows:
        assert (numbers, bool(negation)) == claim_of(content)


def test_a_file_that_is_no_memory_is_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database, " * 100)
    with pytest.raises(MemoryFileError, match="not a usable long-term memory file"):
        LongTermMemory(str(garbage))


def test_bad_terms_are_refused_with_what_is_wrong() -> None:
    memory = LongTermMemory()
    with pytest.raises(ValueError, match="importance must be a number in"):
        memory.remember("x", scope=R1, metadata={"memory": {"importance": 2}})
    with pytest.raises(ValueError, match="unknown terms"):
        memory.remember("x", scope=R1, metadata={"memory": {"subjct": "s"}})
    with pytest.raises(ValueError, match="only a fact with a subject"):
        MemoryTerms(holds=False)
    with pytest.raises(ValueError, match="capacity must be"):
        Retention(capacity=0)


def test_a_write_that_fails_halfway_leaves_the_index_as_the_file_is() -> None:
    memory = LongTermMemory()
    memory.remember("dock A is slow", scope=R1)
    writes = [
        MemoryWrite("dock B is fast", FrozenDict(R1), FrozenDict(), 0.0),
        MemoryWrite("dock C is closed", FrozenDict(R1), FrozenDict(), 0.0),
    ]
    original = memory._write_one
    calls = []

    def failing(write: Any) -> Any:
        calls.append(write)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return original(write)

    memory._write_one = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        memory.remember_many(writes)
    memory._write_one = original  # type: ignore[method-assign]
    assert [r.content for r in memory.records(scope=R1)] == ["dock A is slow"]
    assert [r.content for r in memory.recall("dock", scope=R1, k=5)] == ["dock A is slow"]
    assert memory.remember("dock B is fast", scope=R1).stored  # rolled back, so not a duplicate
