"""Unit tests of the warehouse agent cabin on a hand-built view: one turn on its scripted
model orders the pending deliveries, and everything it writes is declared."""

from pathlib import Path

from warehouse_agent import ScriptedWarehouseAgent

from runtime import load_spec
from runtime.testing import make_view, refusals, run_step

SPEC = load_spec(Path(__file__).with_name("warehouse_agent.toml"))


def goal(task: str, drop: str) -> dict[str, object]:
    return {"task": task, "pickup": "inbound", "drop": drop, "released": 0.0}


def test_one_turn_orders_the_pending_deliveries() -> None:
    board = {
        "goal:deliver:t1": goal("t1", "outbound"),
        "goal:deliver:t2": goal("t2", "returns"),
        "docks": {"inbound": (2.0, 2.0), "outbound": (28.0, 2.0), "returns": (28.0, 18.0)},
    }
    out = run_step(ScriptedWarehouseAgent(SPEC), make_view(SPEC, board=board, now=1.0))
    written = {w.key: w.value for w in out.writes}
    assert sorted(written["dispatch:order"]) == ["t1", "t2"]
    turns = [e.data for e in out.events if e.kind == "agent_turn"]
    assert [t["outcome"] for t in turns] == ["answer"]
    assert refusals(SPEC, out) == []  # everything it wrote is declared in its [writes]
