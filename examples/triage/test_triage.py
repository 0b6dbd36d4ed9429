"""Unit tests of the ``Triage`` cabin on hand-built views."""

from pathlib import Path

from triage import Triage

from runtime import load_spec
from runtime.testing import make_view, refusals, run_step

SPEC = load_spec(Path(__file__).with_name("triage.toml"))


def goal(task: str, drop: str) -> dict[str, object]:
    return {"task": task, "pickup": "inbound", "drop": drop, "released": 0.0}


def test_returns_are_refused_with_a_reason_and_low_battery_defers() -> None:
    board = {
        "battery": 0.3,
        "goal:deliver:t4": goal("t4", "returns"),
        "goal:deliver:t5": goal("t5", "outbound"),
    }
    out = run_step(Triage(SPEC), make_view(SPEC, board=board, now=10.0))
    written = {w.key: dict(w.value) for w in out.writes}
    assert written["task:refused:t4"]["reason"] == "returns are another robot's"
    assert written["task:deferred:t5"]["until"] == 40.0
    assert refusals(SPEC, out) == []  # everything it wrote is declared in its [writes]
