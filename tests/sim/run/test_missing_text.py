"""The summary's missing-items text says what its unit is and that ``absent`` is harmless."""

from __future__ import annotations

from sim.run.missing_text import ABSENT_NOTE, missing_text


def test_missing_items_read_as_pattern_ticks_and_absent_is_explained() -> None:
    assert missing_text({}) == "none"
    assert missing_text({"stale": 3}) == "stale 3 pattern-ticks"
    text = missing_text({"absent": 2400, "stale": 3})
    assert text.startswith("absent 2400, stale 3 pattern-ticks") and ABSENT_NOTE in text
