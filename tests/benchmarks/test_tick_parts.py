"""The tick-parts benchmark finds every part of the tick, puts the functions back, and its
arithmetic (shares, the rest, the budget) is right.

Nothing here asserts a speed: the figures come from ``python -m benchmarks.tick_parts``.
"""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.simulator import _breakdown, _within
from benchmarks.tick_parts import _owner, _timed, main, markdown, table


def test_every_part_is_timed_on_every_tick_and_the_originals_come_back() -> None:
    from runtime.loop import TickLoop
    from sim.run.harness import Simulation

    parts = (("tick", TickLoop.step), *_breakdown(), *_within())
    before = {label: fn for label, fn in parts}
    spent: Counter[str] = Counter()
    sim = Simulation("warehouse", seed=0, rate_hz=20.0)
    try:
        with _timed(parts, spent):
            for _ in range(20):
                sim.loop.step()
    finally:
        sim.close()
    for label, _ in parts:
        assert spent[label] > 0, label  # a part the timers missed would read 0
    disjoint = sum(spent[label] for label, _ in _breakdown())
    assert disjoint <= spent["tick"]
    for label, fn in parts:
        assert vars(_owner(fn))[fn.__name__] is before[label], label


def test_the_originals_come_back_when_a_run_raises() -> None:
    from runtime.loop import TickLoop

    original = vars(TickLoop)["step"]
    with pytest.raises(RuntimeError), _timed((("tick", TickLoop.step),), Counter()):
        assert vars(TickLoop)["step"] is not original
        raise RuntimeError("a run failed")
    assert vars(TickLoop)["step"] is original


def test_the_table_gives_shares_the_rest_and_the_budget() -> None:
    nested = _within()[0][0]
    first, second = _breakdown()[0][0], _breakdown()[1][0]
    spent = Counter({"tick": 1_000_000, first: 500_000, second: 300_000, nested: 100_000})
    result = table(spent, ticks=2, runs=1, cpu_s=0.0012, total="tick", target=4.0)
    assert result["tick_us"] == 500.0
    assert result["run_us_per_tick"] == 600.0
    assert result["budget_us_per_tick"] == 150.0
    rows = {row["part"]: row for row in result["parts"]}
    assert rows[first] == {"part": first, "us_per_tick": 250.0, "share_percent": 50.0}
    assert rows["rest of the loop"]["us_per_tick"] == 100.0  # 500 - 250 - 150
    assert nested not in rows  # inside other parts: not part of the sum
    assert result["within"] == [{"part": nested, "us_per_tick": 50.0, "share_percent": 10.0}]
    text = markdown(result)
    assert f"| {first} | 250.0 | 50.0 % | 1.67x |" in text


@pytest.mark.parametrize(
    "argv", [["--every", "0"], ["--target", "0"], ["--worlds", "3-1"], ["--worlds", "a"]]
)
def test_bad_arguments_are_refused_before_any_run(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "error" in capsys.readouterr().err
