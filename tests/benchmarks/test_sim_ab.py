"""``python -m benchmarks.sim_ab``: what it reports from the runs of two versions, and its
refusals; the runs themselves are left to the command (nothing here is timed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.sim_ab import main, summary


def _row(n: int, cpu: tuple[float, float], same: bool = True, label: str = "-") -> dict:
    return {"run": n, "label": label, "ticks": [100, 100], "cpu_s": list(cpu), "same_digest": same}


def test_a_campaign_summary_gives_runs_per_cpu_hour_and_the_runs_whose_digests_differ() -> None:
    rows = [_row(0, (2.0, 1.0)), _row(1, (4.0, 2.0), same=False)]
    out = summary(rows, workload="campaign")
    assert out["speedup"] == 2.0
    assert out["runs_per_cpu_hour"] == [1200.0, 2400.0]
    assert out["digests_differing"] == [1]
    assert out["us_per_tick"] == [30000.0, 15000.0]


def test_a_default_summary_gives_the_median_real_time_factor_in_cpu_time() -> None:
    rows = [
        _row(n, cpu, label="120.0") for n, cpu in enumerate([(1.0, 2.0), (3.0, 1.5), (2.0, 3.0)])
    ]
    out = summary(rows, workload="default")
    assert out["real_time_factor_cpu_median"] == [60.0, 60.0]
    assert out["digests_differing"] == []


@pytest.mark.parametrize("args", [["--worlds", "5-2"], ["--every", "0"], ["--worlds", "x"]])
def test_bad_settings_are_refused_before_anything_runs(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--base-dir", "/nonexistent", *args]) == 2
    assert "error:" in capsys.readouterr().err


class _FakeWorker:
    """A worker that records the runs it is asked for; its first run costs more, as a
    cold process's does, and each process has its own speed (``speeds``, by start)."""

    calls: list[tuple[int, str, int]]
    speeds: list[float]
    started: int

    def __init__(self, tree: object, args: object) -> None:
        self.tree, self.count, self.done = str(tree), 6, 0
        self.process = _FakeWorker.started
        self.speed = _FakeWorker.speeds[self.process]
        _FakeWorker.started += 1

    def run(self, index: int) -> tuple[float, int, str, str]:
        _FakeWorker.calls.append((self.process, self.tree, index))
        self.done += 1
        return (5.0 if self.done == 1 else self.speed), 100, "d", "-"

    def close(self) -> None:
        pass


def _fake(monkeypatch: pytest.MonkeyPatch, speeds: list[float]) -> Any:
    import benchmarks.sim_ab as sim_ab

    _FakeWorker.calls, _FakeWorker.speeds, _FakeWorker.started = [], speeds, 0
    monkeypatch.setattr(sim_ab, "_Worker", _FakeWorker)
    return sim_ab


def test_each_process_runs_once_untimed_before_its_timed_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim_ab = _fake(monkeypatch, [1.0] * 4)
    out = sim_ab.compare(Path("base"), Path("this"), pairs=2)
    for process in range(4):
        first = next(c for c in _FakeWorker.calls if c[0] == process)
        assert first[2] == 0  # the warm-up
    assert out["runs"] == 6
    assert out["cpu_s"] == [6.0, 6.0]  # the cold first runs are in neither side's time


def test_the_runs_are_dealt_among_fresh_pairs_whose_own_speeds_average_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the first process started in each pair is the faster: base in pair 0, this in pair 1
    sim_ab = _fake(monkeypatch, [1.0, 1.1, 1.0, 1.1])
    out = sim_ab.compare(Path("base"), Path("this"), pairs=2)
    assert [r["pair"] for r in out["rows"]] == [0, 1, 0, 1, 0, 1]
    assert out["pair_speedups"] == [round(1 / 1.1, 3), 1.1]
    assert out["speedup"] == 1.0  # the processes' own speeds cancel
    timed = [c for c in _FakeWorker.calls if c[0] in (0, 1)][2:]
    assert [c[2] for c in timed] == [0, 0, 2, 2, 4, 4]
