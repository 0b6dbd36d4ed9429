"""Behaviour held still: the fixed set of runs gives the digests stored in the repository.

``benchmarks/results/digests.json`` holds the board, world, memory and log digests of the
default scenario, ``narrow_aisles`` (also with long-term memory recalled), ``gen:0-19``
and every fault ``--faults auto`` derives, made by ``python -m benchmarks.digests
--write``. A refactor must leave them as they are; a change of behaviour writes them
again in its own commit and says why.
"""

from __future__ import annotations

import json

import pytest

from benchmarks import digests

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_the_fixed_runs_give_the_stored_digests() -> None:
    expected = json.loads(digests.RESULTS.read_text(encoding="utf-8"))
    found = digests.measure(list(digests.cases()), workers=2)
    assert digests.differences(expected, found) == []


def test_a_moved_digest_is_named() -> None:
    before = {"warehouse seed 0": {"board_digest": "a", "ticks": 1}}
    after = {"warehouse seed 0": {"board_digest": "b", "ticks": 1}, "gen:1 seed 0": {}}
    lines = digests.differences(before, after)
    assert lines == [
        "gen:1 seed 0: not in the stored digests",
        "warehouse seed 0: board_digest 'a' -> 'b'",
    ]
