"""``python -m benchmarks.ab``: two versions ticked in turn on one world; nothing here is
timed, only that the comparison runs and that its parity check can fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.ab import ROOT, TREES, ABError, compare, extract

TOY = (40, 150, 300)


def _copy(into: Path) -> Path:
    for tree in TREES:
        shutil.copytree(ROOT / tree, into / tree, ignore=shutil.ignore_patterns("__pycache__"))
    return into


@pytest.mark.slow
def test_a_version_against_itself_freezes_the_same_working_sets(tmp_path: Path) -> None:
    result = compare(_copy(tmp_path), ROOT, size=TOY, ticks=30, warmup=5)
    assert result["parity"] == {"ticks_compared": 30, "ticks_differing": 0, "first_differing": None}
    for clock in ("cpu", "wall"):
        figures = result[clock]
        assert figures["base_p50_us"] > 0 and figures["this_p50_us"] > 0
        low, high = figures["ratio_mean_95ci"]
        assert low <= figures["ratio_mean"] <= high


@pytest.mark.slow
def test_a_base_that_weighs_items_otherwise_is_caught_by_the_parity_check(tmp_path: Path) -> None:
    base = _copy(tmp_path)
    spec = base / "runtime" / "spec.py"
    text = spec.read_text()
    glob_weight = "next((w for rx, w in self._globs if rx.match(key)), self._default)"
    assert glob_weight in text
    spec.write_text(text.replace(glob_weight, "self._default"))  # every glob weight ignored
    result = compare(base, ROOT, size=TOY, ticks=10, warmup=0)
    assert result["parity"]["ticks_differing"] == 10
    assert result["parity"]["first_differing"] == 0


def test_a_ref_git_cannot_archive_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ABError, match="no-such-ref"):
        extract("no-such-ref", tmp_path)


def ab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.ab", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_the_command_compares_against_a_git_ref() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    done = ab("--base", "HEAD", "--size", "40,150,300", "--ticks", "12", "--warmup", "2", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["base"] == "HEAD" and result["parity"]["ticks_compared"] == 12
    bad = ab("--base", "HEAD", "--size", "1,2")
    assert bad.returncode == 2 and "three positive counts" in bad.stderr
    missing = ab("--base-dir", "/nonexistent", "--ticks", "1")
    assert missing.returncode == 2 and "not a tickwork tree" in missing.stderr
