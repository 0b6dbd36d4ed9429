"""Memory tiers: short-term trace, long-term recall by scope, and the working state."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import (
    HashingEmbedder,
    LongTermMemory,
    Message,
    ShortTermMemory,
    ToolCall,
    WorkingState,
)
from runtime.agent.memory import omitted_summary
from runtime.agent.plan import Plan, PlanStep
from runtime.agent.summary import ExtractiveSummarizer, LLMSummarizer, approx_tokens

# -- short-term memory --------------------------------------------------------------------


def test_system_and_goal_survive_overflow_and_the_summary_rolls() -> None:
    summaries: list[tuple[str | None, int]] = []

    def summarize(previous: str | None, dropped: Sequence[Message]) -> str:
        summaries.append((previous, len(dropped)))
        return f"{(previous or '')}+{len(dropped)}"

    memory = ShortTermMemory(max_messages=6, summarize=summarize)
    memory.set_system("you are a robot")
    memory.set_goal("deliver t1")
    for i in range(8):
        memory.add_user(f"u{i}")
    messages = memory.messages()
    assert len(messages) == 6
    assert messages[0] == Message("system", "you are a robot")
    assert messages[1] == Message("user", "deliver t1")
    assert messages[2].role == "system" and "Summary of earlier turns" in (
        messages[2].content or ""
    )
    assert [m.content for m in messages[3:]] == ["u5", "u6", "u7"]
    # the first overflow also makes room for the summary; each later roll builds on the last
    assert memory.dropped == 5 and memory.summary == "+2+1+1+1"
    assert summaries == [(None, 2), ("+2", 1), ("+2+1", 1), ("+2+1+1", 1)]


def test_a_tool_call_is_dropped_with_its_results_never_apart() -> None:
    memory = ShortTermMemory(max_messages=5)
    memory.set_system("s")
    memory.add_assistant(None, [ToolCall("c1", "read"), ToolCall("c2", "list")])
    memory.add_tool_result("c1", "r1", name="read")
    memory.add_tool_result("c2", "r2", name="list")
    memory.add_user("next")  # 5 messages: fits
    assert len(memory) == 5
    memory.add_user("and more")  # the whole 3-message tool turn goes, not just its call
    assert [m.content for m in memory.messages()] == [
        "s",
        "Summary of earlier turns: tool read({}) -> r1\ntool list({}) -> r2",
        "next",
        "and more",
    ]


def test_the_newest_turn_is_kept_whole_even_when_it_alone_is_too_big() -> None:
    memory = ShortTermMemory(max_messages=4)
    memory.set_system("s")
    memory.add_user("old")
    calls = [ToolCall(f"c{i}", "t") for i in range(5)]
    memory.add_assistant(None, calls)
    for c in calls:
        memory.add_tool_result(c.id, "ok")
    roles = [m.role for m in memory.messages()]
    assert roles == ["system", "system", "assistant"] + ["tool"] * 5


def test_tool_results_must_answer_open_calls() -> None:
    memory = ShortTermMemory()
    with pytest.raises(ValueError, match="not an open call"):
        memory.add_tool_result("c9", "orphan")
    memory.add_assistant(None, [ToolCall("c1", "t")])
    with pytest.raises(ValueError, match=r"\['c1'\] have no result yet"):
        memory.add_user("too early")
    memory.add_tool_result("c1", "done")
    with pytest.raises(ValueError, match="not an open call"):
        memory.add_tool_result("c1", "twice")


def test_messages_render_as_openai_requests_and_plain_text() -> None:
    memory = ShortTermMemory()
    memory.set_system("s")
    memory.set_goal("g")
    memory.add_assistant("thinking", [ToolCall("c1", "read", '{"key": "a"}')])
    memory.add_tool_result("c1", '{"value": 1}', name="read")
    assert memory.to_openai() == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "g"},
        {
            "role": "assistant",
            "content": "thinking",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"key": "a"}'},
                }
            ],
        },
        {"role": "tool", "content": '{"value": 1}', "tool_call_id": "c1"},
    ]
    assert memory.to_prompt_context().splitlines() == [
        "system: s",
        "user: g",
        'assistant: thinking -> read({"key": "a"})',
        '[tool:read] {"value": 1}',
    ]


def test_bad_messages_and_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_messages"):
        ShortTermMemory(max_messages=3)
    with pytest.raises(ValueError, match="role"):
        Message("robot", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool_call_id"):
        Message("tool", "x")
    with pytest.raises(ValueError, match="only an assistant"):
        Message("user", "x", (ToolCall("a", "t"),))


def test_the_default_summary_counts_across_rolls() -> None:
    first = omitted_summary(None, [Message("user", "a"), Message("user", "b")])
    second = omitted_summary(first, [Message("assistant", None, (ToolCall("c", "save"),))])
    assert second == "[3 earlier messages omitted; tools used: save]"


turns = st.lists(
    st.one_of(
        st.just(("user", 0)),
        st.just(("assistant", 0)),
        st.tuples(st.just("tools"), st.integers(1, 4)),
    ),
    max_size=40,
)


@given(max_messages=st.integers(4, 12), script=turns, with_goal=st.booleans())
def test_short_term_invariants(
    max_messages: int, script: list[tuple[str, int]], with_goal: bool
) -> None:
    memory = ShortTermMemory(max_messages=max_messages)
    memory.set_system("system prompt")
    if with_goal:
        memory.set_goal("the goal")
    added = 0
    for n, (kind, calls) in enumerate(script):
        if kind == "tools":
            ids = [f"c{n}_{i}" for i in range(calls)]
            memory.add_assistant(None, [ToolCall(i, "t") for i in ids])
            for i in ids:
                memory.add_tool_result(i, "r")
            added += 1 + calls
            newest = 1 + calls
        else:
            memory.add(Message(kind, f"m{n}"))  # type: ignore[arg-type]
            added += 1
            newest = 1
        messages = memory.messages()
        fixed = 1 + with_goal + (memory.summary is not None)
        # capacity: within the bound, unless the newest turn alone needs more room
        assert len(messages) <= max(max_messages, fixed + newest)
        # the system prompt and the goal are never dropped
        assert messages[0].content == "system prompt"
        if with_goal:
            assert messages[1] == Message("user", "the goal")
        # tool pairs: every result follows its call, every call has its result
        calls_seen: set[str] = set()
        for m in messages:
            calls_seen.update(c.id for c in m.tool_calls)
            if m.role == "tool":
                assert m.tool_call_id in calls_seen
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        assert calls_seen == answered
        # nothing is lost silently: kept + dropped = added
        kept = len(messages) - fixed
        assert kept + memory.dropped == added


# -- embeddings ---------------------------------------------------------------------------


def test_the_hashing_embedder_is_deterministic_unit_and_meaningful() -> None:
    one, two = HashingEmbedder(), HashingEmbedder()
    a = one("the aisle at x=3 was blocked")
    assert np.array_equal(a, two("the aisle at x=3 was blocked"))
    assert a.shape == (256,) and np.linalg.norm(a) == pytest.approx(1.0)
    near = float(a @ one("aisle x=3 blocked"))
    far = float(a @ one("battery charged to ninety percent"))
    assert near > 0.5 > far
    assert not one("").any()
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=2)


# -- long-term memory ---------------------------------------------------------------------

R1 = {"robot": "r1", "session": "s1"}


def test_remember_and_recall_by_similarity() -> None:
    with LongTermMemory() as memory:
        for text in (
            "the aisle at x=3 was blocked at t=10",
            "dock B unloads slowly",
            "the charger at (1, 2) is out of order",
        ):
            assert memory.remember(text, scope=R1, metadata={"kind": "fact"}).stored
        found = memory.recall("is the aisle at x=3 blocked?", scope=R1, k=2)
        assert found[0].content == "the aisle at x=3 was blocked at t=10"
        assert len(found) == 2 and found[0].score >= found[1].score
        assert found[0].scope == R1 and found[0].metadata == {"kind": "fact"}
        assert memory.recall("anything", scope={"robot": "r2"}) == ()


def test_near_duplicates_are_refused() -> None:
    with LongTermMemory() as memory:
        first = memory.remember("Dock B unloads slowly.", scope=R1)
        again = memory.remember("dock b unloads slowly", scope=R1)
        assert first.stored and first.record is not None
        assert not again.stored and again.reason == "duplicate"
        assert again.similar_to == first.record.id and again.similarity >= 0.95
        assert memory.remember("dock b unloads slowly", scope={"robot": "r2"}).stored
        assert memory.remember("   ", scope=R1).reason == "empty"
        assert memory.count(scope=R1) == 1 and memory.count() == 2


class TableEmbedder:
    """Fixed vectors, so similarities are exactly known."""

    name = "table"
    vectors: ClassVar[dict[str, list[float]]] = {
        "fact": [1.0, 0.0, 0.0],
        "The fact.": [0.9, 0.43589, 0.0],
        "query": [1.0, 0.1, 0.0],
        "other": [0.0, 0.0, 1.0],
    }

    def __call__(self, text: str) -> list[float]:
        return self.vectors.get(text, [0.0, 1.0, 0.0])


def test_what_was_just_recalled_is_not_stored_again() -> None:
    memory = LongTermMemory(embed=TableEmbedder())
    memory.remember("fact", scope=R1)
    assert [r.content for r in memory.recall("query", scope=R1)] == ["fact"]
    echo = memory.remember("The fact.", scope=R1)  # cos 0.9: not a duplicate, an echo
    assert not echo.stored and echo.reason == "recalled"
    assert memory.remember("other", scope=R1).stored

    fresh = LongTermMemory(embed=TableEmbedder())
    fresh.remember("fact", scope=R1)
    assert fresh.remember("The fact.", scope=R1).stored  # nothing was recalled


def test_memories_persist_in_a_sqlite_file(tmp_path: Path) -> None:
    path = str(tmp_path / "memories.sqlite")
    with LongTermMemory(path) as memory:
        memory.remember("the aisle at x=3 was blocked", scope=R1, stamp=12.5)
    with LongTermMemory(path) as memory:
        (record,) = memory.recall("aisle blocked", scope=R1, k=1)
        assert record.content == "the aisle at x=3 was blocked" and record.stamp == 12.5
    with pytest.raises(ValueError, match="embedded with 'hashing-256-3', not 'table'"):
        LongTermMemory(path, embed=TableEmbedder())

    class Wider(TableEmbedder):
        def __call__(self, text: str) -> list[float]:
            return [*super().__call__(text), 0.0]

    other = str(tmp_path / "table.sqlite")
    LongTermMemory(other, embed=TableEmbedder()).remember("fact", scope=R1)
    with pytest.raises(ValueError, match="returned 4 numbers; this memory holds 3-dim"):
        LongTermMemory(other, embed=Wider()).recall("query", scope=R1)


def test_bad_scopes_and_arguments_are_refused() -> None:
    memory = LongTermMemory()
    with pytest.raises(ValueError, match="strings to strings"):
        memory.remember("x", scope={"robot": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="mapping"):
        memory.recall("x", scope="r1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be"):
        memory.recall("x", scope=R1, k=0)
    with pytest.raises(ValueError, match="JSON"):
        memory.remember("x", scope=R1, metadata={"f": object()})


scopes = st.fixed_dictionaries(
    {"robot": st.sampled_from(["r1", "r2"]), "session": st.sampled_from(["a", "b", "c"])}
)
words = st.sampled_from(["aisle", "dock", "blocked", "charger", "slow", "x=3", "x=7", "people"])


@given(
    writes=st.lists(st.tuples(scopes, st.lists(words, min_size=1, max_size=5)), max_size=25),
    query=st.lists(words, min_size=1, max_size=4),
    asked=scopes,
    k=st.integers(1, 30),
)
def test_a_recall_never_returns_another_scopes_memories(
    writes: list[tuple[dict[str, str], list[str]]], query: list[str], asked: dict[str, str], k: int
) -> None:
    memory = LongTermMemory()
    stored: dict[int, dict[str, str]] = {}
    for scope, text in writes:
        outcome = memory.remember(" ".join(text), scope=scope)
        if outcome.record is not None:
            stored[outcome.record.id] = scope
    found = memory.recall(" ".join(query), scope=asked, k=k, min_score=-1.0)
    assert all(r.scope == asked and stored[r.id] == asked for r in found)
    mine = [i for i, s in stored.items() if s == asked]
    assert len(found) == min(k, len(mine))  # and every one of its own it can give
    memory.close()


# -- working state ------------------------------------------------------------------------


def test_a_snapshot_is_a_deep_copy() -> None:
    state = WorkingState("deliver t1")
    state.set_plan(
        Plan((PlanStep("go", action="goto"), PlanStep("pick", action="pick", depends_on=("go",))))
    )
    state.start_step("go")
    state.set_variable("route", [[0, 0], [1, 0]])
    state.set_step_result("go", {"ok": True, "log": ["left dock"]})
    snap = state.snapshot()
    assert snap == state and snap is not state
    snap.variables["route"].append([2, 0])
    snap.step_results["go"]["log"].append("changed")
    snap.current_step = "pick"
    assert state.variables["route"] == [[0, 0], [1, 0]]
    assert state.step_results["go"]["log"] == ["left dock"] and state.current_step == "go"
    state.variables["new"] = 1
    assert "new" not in snap.variables


def test_working_state_checks_steps_against_its_plan() -> None:
    state = WorkingState("g")
    with pytest.raises(ValueError, match="no plan"):
        state.start_step("a")
    state.set_plan(Plan((PlanStep("a"),)))
    state.start_step("a")
    with pytest.raises(ValueError, match="no step 'b'"):
        state.start_step("b")
    state.set_plan(Plan((PlanStep("c"),)))
    assert state.current_step is None  # the plan lost the current step


# -- rolling summaries ---------------------------------------------------------------------


def chat(memory: ShortTermMemory, n: int) -> None:
    for i in range(n):
        memory.add_user(f"please check dock {i} and tell me how busy it is today")
        memory.add_assistant(None, [ToolCall(f"c{i}", "read_dock", f'{{"dock": {i}}}')])
        memory.add_tool_result(f"c{i}", f"dock {i}: {i % 3} trucks waiting", name="read_dock")
        memory.add_assistant(f"Dock {i} has {i % 3} trucks waiting.")


def test_the_default_summary_keeps_the_goal_prompt_tool_pairs_and_the_latest_turns() -> None:
    memory = ShortTermMemory(max_messages=12, keep_turns=3)
    memory.set_system("you are a dispatcher")
    memory.set_goal("find the quietest dock")
    chat(memory, 8)
    messages = memory.messages()
    assert [m.content for m in messages[:2]] == ["you are a dispatcher", "find the quietest dock"]
    summary = memory.summary or ""
    assert messages[2].content == f"Summary of earlier turns: {summary}"
    assert len(messages) - 3 <= 3 + 2  # the latest 3 turns (a tool turn is 2 messages)
    assert approx_tokens(summary) <= ExtractiveSummarizer().budget
    # tool calls with their results outlive the chatter around them
    assert 'tool read_dock({"dock": 6}) -> dock 6: 0 trucks waiting' in summary
    assert all(f'{{"dock": {i}}}) -> dock {i}' in summary for i in range(7))
    assert "user: please check dock 0" not in summary  # chatter went first
    assert summary.split("\n")[0] == "[7 earlier lines condensed]"


def test_the_extractive_summary_is_deterministic_and_within_its_budget() -> None:
    def run() -> str | None:
        memory = ShortTermMemory(max_messages=8, summarize=ExtractiveSummarizer(budget=40))
        memory.set_system("s")
        chat(memory, 6)
        return memory.summary

    first = run()
    assert first is not None and first == run() and approx_tokens(first) <= 40


@given(
    texts=st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=12),
    budget=st.integers(16, 120),
)
def test_every_extractive_summary_fits_its_budget(texts: list[str], budget: int) -> None:
    summarize = ExtractiveSummarizer(budget=budget)
    summary = None
    for text in texts:
        summary = summarize(summary, [Message("user", text)])
        assert approx_tokens(summary) <= budget


def test_an_llm_summary_is_used_and_a_bad_one_falls_back() -> None:
    from cabins.llm import ChatReply, ScriptedClient

    client = ScriptedClient(
        [ChatReply.text("dock 0 is quiet"), ChatReply.text("x " * 500), ChatReply.text("")]
    )
    summarize = LLMSummarizer(client, budget=60)
    dropped = [Message("user", "how is dock 0?"), Message("assistant", "dock 0 is quiet")]
    assert summarize(None, dropped) == "dock 0 is quiet"
    prompt = client.requests[0][0]
    assert "how is dock 0?" in prompt[1]["content"] and "60 tokens" in prompt[0]["content"]
    over = summarize("dock 0 is quiet", dropped)  # over its budget: the extractive one
    assert over.startswith("dock 0 is quiet\nuser: how is dock 0?")
    assert summarize(None, dropped).startswith("user: how is dock 0?")  # empty answer
    assert summarize.fallbacks == 2
    with pytest.raises(TypeError, match="complete"):
        LLMSummarizer(object())  # type: ignore[arg-type]
