"""The wall-clock collection benchmark runs both policies and counts what it says."""

from __future__ import annotations

import pytest

from benchmarks.gc_wall import POLICIES, markdown, measure
from benchmarks.world import WorldSize


@pytest.mark.slow
def test_both_policies_are_measured_and_in_slack_keeps_collections_out_of_ticks() -> None:
    results = measure(1.0, 0.5, size=WorldSize(100, 1_000, 1_000))
    assert set(results) == set(POLICIES)
    for name in POLICIES:
        assert results[name]["ticks"] == 10
    # the policy switches the collector off for every tick: nothing can start inside one
    assert results["in_slack"]["collections_in_ticks"] == 0
    text = markdown(
        {"machine": "m", "when": "w", "seconds": 1.0, "segment": 0.5, "policies": results}
    )
    assert "`in_slack`" in text and "`anywhere`" in text
