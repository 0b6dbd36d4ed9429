"""``python -m benchmarks.sim_ab``: what it reports from the runs of two versions, and its
refusals; the runs themselves are left to the command (nothing here is timed)."""

from __future__ import annotations

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
