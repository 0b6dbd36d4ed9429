"""Long-term memory keeps updates: a text that contradicts a fact just recalled (or held)
is stored, never refused as its echo or duplicate, whatever the embedder says; with the
fact's subject it supersedes the fact, which stays as history. English and CJK."""

# ruff: noqa: RUF001 - Chinese text is written with Chinese punctuation
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.agent.duplicates import NearDuplicate, content_words, negates, numbers_in
from runtime.agent.embedding import HashingEmbedder
from runtime.agent.long_term import LongTermMemory
from runtime.longterm import MemoryTerms

R1 = {"user": "u1"}


class Blind:
    """The worst embedder for the filter: every text gets the same vector (every pair is
    1.0 similar), so only the claim guards can tell an update from an echo."""

    name = "blind"

    def __call__(self, text: str) -> np.ndarray:
        return np.ones(8)


WHO = ["Alice", "the user", "Bob's team", "the night shift", "张伟"]
THINGS = ["the standup", "the backup", "the release", "the audit", "the deploy"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "March", "April", "June", "October", "December"]
PLACES = ["home", "the office", "the warehouse", "school", "the lab"]
SWAPS = [  # (before, after): one word of the claim changes to another
    ("succeeded", "failed"),
    ("passed", "failed"),
    ("prefers", "dislikes"),
    ("likes", "hates"),
    ("is open", "is closed"),
    ("is enabled", "is disabled"),
    ("is on", "is off"),
]
CJK_NUMERALS = ["一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"]


@st.composite
def updates(draw: Any) -> tuple[str, str]:
    """A fact and an update that contradicts it (one of the ways facts change)."""
    who, thing = draw(st.sampled_from(WHO)), draw(st.sampled_from(THINGS))
    kind = draw(
        st.sampled_from(
            [
                *("negation", "number", "day", "month", "swap", "place"),
                *("cjk_month", "cjk_day", "cjk_negation", "cjk_failure", "cjk_number"),
            ]
        )
    )
    two = st.lists(st.integers(0, 10_000), min_size=2, max_size=2, unique=True)
    if kind == "negation":
        return f"{thing} is blocked for {who}", f"{thing} is not blocked for {who}"
    if kind == "number":
        a, b = draw(two)
        return f"{who} set {thing} to {a} percent", f"{who} set {thing} to {b} percent"
    if kind in ("day", "month", "place"):
        pool = {"day": DAYS, "month": MONTHS, "place": PLACES}[kind]
        a, b = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=2, unique=True))
        verb = (
            "works from"
            if kind == "place"
            else "has " + thing + " in"
            if kind == "month"
            else "meets on"
        )
        return f"{who} {verb} {a}", f"{who} {verb} {b}"
    if kind == "swap":
        before, after = draw(st.sampled_from(SWAPS))
        return f"{thing} {before} for {who}", f"{thing} {after} for {who}"
    if kind in ("cjk_month", "cjk_day", "cjk_number"):
        pool = "一二三四五六日" if kind == "cjk_day" else CJK_NUMERALS
        a, b = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=2, unique=True))
        if kind == "cjk_month":
            return f"{who}的会议在{a}月举行", f"{who}的会议在{b}月举行"
        if kind == "cjk_day":
            return f"{who}每周星期{a}开例会", f"{who}每周星期{b}开例会"
        return f"仓库里有{a}台机器人", f"仓库里有{b}台机器人"
    if kind == "cjk_negation":
        return f"{who}喜欢用Python", f"{who}没有用Python" if draw(
            st.booleans()
        ) else f"{who}不喜欢用Python"
    return f"{who}的部署成功了", f"{who}的部署失败了"


EMBEDDERS = [Blind(), HashingEmbedder()]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(pair=updates(), blind=st.booleans(), recalled=st.booleans())
def test_a_contradicting_update_is_never_refused(
    pair: tuple[str, str], blind: bool, recalled: bool
) -> None:
    fact, update = pair
    memory = LongTermMemory(embed=EMBEDDERS[0] if blind else EMBEDDERS[1])
    assert memory.remember(fact, scope=R1).stored
    if recalled:  # the fact is in the echo window, as an agent's recall leaves it
        assert [r.content for r in memory.recall(fact, scope=R1, k=1)] == [fact]
    outcome = memory.remember(update, scope=R1)
    assert (outcome.stored, outcome.reason) == (True, "stored"), pair
    assert {r.content for r in memory.records(scope=R1)} == {fact, update}


@settings(max_examples=60, deadline=None)
@given(pair=updates(), blind=st.booleans())
def test_an_update_with_the_facts_subject_supersedes_it_and_keeps_it_as_history(
    pair: tuple[str, str], blind: bool
) -> None:
    fact, update = pair
    memory = LongTermMemory(embed=EMBEDDERS[0] if blind else EMBEDDERS[1])
    terms = MemoryTerms(subject="s").attach()
    first = memory.remember(fact, scope=R1, metadata=terms, stamp=1.0)
    memory.recall(fact, scope=R1)
    second = memory.remember(update, scope=R1, metadata=terms, stamp=2.0)
    assert first.record is not None and second.record is not None
    assert (second.stored, second.reason, second.replaced) == (True, "superseded", first.record.id)
    assert [r.content for r in memory.recall(fact, scope=R1, k=5, min_score=-1.0)] == [update]
    history = memory.history(scope=R1, subject="s")
    assert [(r.content, r.status) for r in history] == [
        (fact, "superseded"),
        (update, "current"),
    ]
    assert history[0].replaced_by == second.record.id


RESTATED = [  # the same claim again: still refused after a recall
    ("The standup is on Tuesday", "the standup is on tuesday."),
    ("a forklift blocked the way", "the way was blocked by a forklift"),
    ("会议在三月举行", "会议在三月举行。"),
    ("叉车挡住了路", "路被叉车挡住了"),
]


@pytest.mark.parametrize(("fact", "again"), RESTATED)
def test_a_restatement_of_what_was_recalled_is_still_refused(fact: str, again: str) -> None:
    memory = LongTermMemory(embed=Blind())
    memory.remember(fact, scope=R1)
    memory.recall(fact, scope=R1)
    outcome = memory.remember(again, scope=R1)
    assert (outcome.stored, outcome.reason) == (False, "recalled")


def test_the_claim_guards_read_cjk_text() -> None:
    assert numbers_in("会议在三月举行") == ("3",) and numbers_in("会议在四月举行") == ("4",)
    assert numbers_in("十二月二十日, 三百零五号, 一九八四年") == ("12", "20", "305", "1984")
    assert numbers_in("１２点") == ("12",)  # full-width digits are digits
    for text in ("我不喜欢", "没有问题", "部署失败了", "未完成", "行かない", "the deploy failed"):
        assert negates(text), text
    assert not negates("部署成功了") and not negates("会议在三月举行")
    assert content_words("路被叉车挡住了") == content_words("叉车挡住了路")
    assert content_words("在家工作") != content_words("在办公室工作")
    policy = NearDuplicate()
    assert not policy.same_claim("会议在三月举行", "会议在四月举行")
    assert not policy.same_claim("部署成功了", "部署失败了")
    assert not policy.same_claim("张伟在家工作", "张伟在办公室工作")
    assert policy.same_claim("会议在三月举行", "会议在三月举行。")


def test_the_default_embedder_splits_cjk_text_so_chinese_recall_works() -> None:
    """Before, a Chinese clause was one word: a query shared no feature with its fact."""
    facts = ["张伟对花生过敏", "张伟的经理是李娜", "张伟每天骑自行车上班", "仓库在上海浦东新区"]
    memory = LongTermMemory()
    for fact in facts:
        memory.remember(fact, scope=R1)
    for query, fact in [
        ("张伟对什么过敏？", facts[0]),
        ("张伟的经理是谁", facts[1]),
        ("张伟怎么上班", facts[2]),
        ("仓库在哪个区", facts[3]),
    ]:
        assert [r.content for r in memory.recall(query, scope=R1, k=1)] == [fact]
    embed = HashingEmbedder()
    english = "a forklift blocked the way near (13, 7)"
    assert float(embed(english) @ embed(english.upper())) == pytest.approx(1.0)
