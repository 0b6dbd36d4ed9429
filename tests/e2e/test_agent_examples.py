"""The agent turn's examples run: the design's Q1 task on the scripted OpenAI-compatible
server through the real ``openai`` client (as a script, and from Python), and the warehouse
agent cabin in ``python -m sim run --cabin`` on its scripted model, on the scripted server
through ``--llm-base-url``, and across a checkpoint."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cabins.fake_llm import FakeLLMServer, FakeReply
from runtime import configure_logging, load_spec
from sim import cli
from sim.run.checkpoint import RunPlan, load, save
from sim.run.harness import ExtraCabin, Simulation, deterministic_fields
from tests.support.paths import ROOT

pytestmark = pytest.mark.e2e

openai = pytest.importorskip("openai")

Q1 = ROOT / "examples" / "q1_financial" / "q1_agent.py"
WAREHOUSE = ROOT / "examples" / "warehouse_agent"
SPEC = WAREHOUSE / "warehouse_agent.toml"
SCRIPTED = f"warehouse_agent:ScriptedWarehouseAgent@{SPEC.relative_to(ROOT)}"


def module_at(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


# -- the Q1 task -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_q1_example_runs_as_a_script() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(Q1)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "outcome: answer (every step is done)" in done.stdout
    assert "s3 failed after 1 requests (tool_failed" in done.stdout
    assert "remembered: stored" in done.stdout


def test_the_q1_turn_recalls_replans_keeping_done_steps_and_remembers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = module_at(Q1).main()
    capsys.readouterr()
    assert result.outcome == "answer" and result.calls == 15
    assert result.recalled == (
        "The CFO wants every figure in reports in thousands of dollars (k$).",
    )
    first, revised = result.revisions
    assert [s.status for s in first.steps] == ["pending"] * 4
    assert [(s.id, s.status) for s in revised.steps] == [
        ("s1", "done"),
        ("s2", "done"),
        ("s3b", "pending"),
        ("s4", "pending"),
    ]
    failed = [r for r in result.steps_run if r.status == "failed"]
    assert [(r.step, r.reason) for r in failed] == [("s3", "tool_failed")]
    assert result.step_states() == {"s1": "done", "s2": "done", "s3b": "done", "s4": "done"}
    assert result.answer is not None and "1400 k$" in result.answer  # the recalled k$
    assert "cloud (+37.5 %)" in result.answer and "support" in result.answer
    assert result.remembered is not None and result.remembered.stored is True


# -- the warehouse agent ---------------------------------------------------------------------


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


@pytest.mark.slow
def test_the_warehouse_agent_runs_in_the_simulator_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    code, out = run_cli("run", "--cabin", SCRIPTED, "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["cabin_failures"] == 0 and summary["missing"]["warehouse_agent"] == {}
    assert summary["verdict"]["status"] == "passed"


def warehouse_agent() -> ExtraCabin:
    from sim.cli.inputs import cabin_ref

    return cabin_ref(SCRIPTED).load()


@pytest.mark.slow
def test_each_change_of_the_deliveries_is_one_turn_that_sets_the_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure_logging(level="critical")
    monkeypatch.chdir(ROOT)
    sim = Simulation(seed=0, extra=[warehouse_agent()], long_term=":memory:")
    try:
        summary = sim.run(3000)
        events = sim.log.query(0.0, 1e9, limit=None)
    finally:
        sim.close()
    turns = [e.data for e in events if e.kind == "agent_turn"]
    assert turns and {t["outcome"] for t in turns} == {"answer"}
    assert all(dict(t["steps"]) == {"s1": "done", "s2": "done", "s3": "done"} for t in turns)
    asked = [e for e in events if e.kind == "remembered" and e.data.get("source") == "agent"]
    assert [e.data["content"] for e in asked] == [t["remembered"] for t in turns]
    written = [e.data for e in events if e.kind == "memory_written"]
    kept = [w for w in written if w["content"].startswith("Goal: Order the pending deliveries")]
    assert len(kept) == len(turns) and all(w["stored"] for w in kept)
    assert summary["verdict"]["status"] == "passed"


def scripted_server_reply(request: Mapping[str, Any]) -> FakeReply:
    """The warehouse example's scripted model, served over HTTP."""
    model = sys.modules["warehouse_agent"].WarehouseModel()
    reply = model(request.get("messages", []), request.get("tools", []))
    calls: Sequence[tuple[str, str]] = [
        (c.function.name, c.function.arguments) for c in reply.tool_calls
    ]
    return FakeReply(content=reply.content, tool_calls=tuple(calls))


@pytest.mark.slow
def test_the_warehouse_agent_asks_an_openai_compatible_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    warehouse_agent()  # imports the example's module, for its scripted model
    with FakeLLMServer([scripted_server_reply]) as server:
        code, out = run_cli(
            "run",
            "--cabin",
            f"warehouse_agent:WarehouseAgent@{SPEC.relative_to(ROOT)}",
            "--llm-base-url",
            server.url,
            "--llm-model",
            "fake-model",
            "--ticks",
            "800",
            "--json",
        )
        assert code == 0
        assert json.loads(out)["cabin_failures"] == 0
        requests = list(server.requests)
    assert requests and requests[0]["model"] == "fake-model"
    assert requests[0]["messages"][0]["content"].startswith("You are the planner")
    tools = {t["function"]["name"] for r in requests for t in r.get("tools", [])}
    assert {"list_deliveries", "trip_length", "set_order", "save_to_scratchpad"} <= tools


@pytest.mark.slow
def test_a_run_with_the_warehouse_agent_resumes_from_a_checkpoint_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_logging(level="critical")
    monkeypatch.chdir(ROOT)
    whole = Simulation(seed=1, extra=[warehouse_agent()])
    whole.run(900, until_done=False)
    half = Simulation(seed=1, extra=[warehouse_agent()])
    half.run(433, until_done=False)
    save(half, RunPlan(ticks=900), tmp_path / "run.ckpt")
    resumed = load(tmp_path / "run.ckpt", extra=[warehouse_agent()]).sim
    resumed.run(900 - 433, until_done=False)
    assert deterministic_fields(resumed.summary()) == deterministic_fields(whole.summary())
    assert load_spec(SPEC).timing.is_async
