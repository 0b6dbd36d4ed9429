"""Text for a model cut to a size with a visible marker, and tool-call arguments kept JSON."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from runtime.agent.clip import clip, clip_arguments
from runtime.scratchpad import Scratchpad


@given(st.text(), st.integers(0, 300))
def test_a_clipped_text_keeps_its_head_and_says_how_much_went(text: str, limit: int) -> None:
    cut = clip(text, limit)
    if len(text) <= limit:
        assert cut == text
    else:
        dropped = len(text) - limit
        assert cut == text[:limit] + f"…[truncated: {dropped} of {len(text)} characters not shown]"


@given(st.text(), st.integers(0, 300))
def test_clipped_arguments_stay_json(arguments: str, limit: int) -> None:
    cut = clip_arguments(arguments, limit)
    if len(arguments) <= limit:
        assert cut == arguments
    else:
        assert json.loads(cut) == {"truncated_arguments": clip(arguments, limit)}


def test_a_huge_note_is_cut_in_the_prompt_and_kept_whole_in_the_pad() -> None:
    pad = Scratchpad()
    pad.write("log", "x" * 200_000, "d" * 5_000)
    text = pad.to_prompt_text(value_chars=2_000)
    assert len(text) < 5_000 and text.count("characters not shown]") == 2
    assert "…[truncated: 198002 of 200002 characters not shown]" in text
    assert len(pad.to_prompt_text()) > 200_000 and pad.read("log") == "x" * 200_000
