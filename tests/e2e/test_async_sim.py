"""Asynchronous cabins in the simulator: exact on the simulated clock (across seeds, replay,
checkpoint and resume), an LLM dispatcher under faults and in campaigns, and the CLI's
``--realtime``, ``--overrun`` and ``--llm-base-url``."""

from __future__ import annotations

import concurrent.futures as cf
import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from cabins.dispatcher import LLMDispatcher, ScriptedDispatcher, lifo_client
from cabins.fake_llm import FakeLLMServer, FakeReply
from runtime import CabinView, ContextSpec, Outbox, load_spec, load_specs
from runtime.recording.format import DECISIONS
from runtime.recording.inspect import tick_report
from runtime.recording.reader import Recording
from runtime.testing import make_view, run_step
from sim import cli
from sim.analysis.replay import replay
from sim.faults.model import parse_fault
from sim.run.campaign import Campaign, RunRequest
from sim.run.checkpoint import RunPlan, load, save
from sim.run.harness import SPECS_DIR, ExtraCabin, Simulation, deterministic_fields
from tests.support.paths import ROOT

pytestmark = pytest.mark.e2e

DISPATCHER = ROOT / "specs" / "examples" / "dispatcher.toml"
SLOW = ContextSpec(
    name="slow",
    board_keys=("goal:*", "pose"),
    timing={"mode": "async", "latency": 0.2, "latency_max": 2.5, "max_age": 30},
)


class Slow:
    """A slow cabin of no consequence for the robot: it reports what it saw."""

    def __init__(self, spec: ContextSpec) -> None:
        self.spec, self.name = spec, spec.name
        self.decisions = 0

    def step(self, view: CabinView, out: Outbox) -> None:
        self.decisions += 1
        x, y, _ = view.get("pose", (0.0, 0.0, 0.0))
        out.write("slow:seen", {"tick": view.tick, "at": (round(x, 6), round(y, 6))})
        out.emit("slow_decided", {"goals": sorted(view.matching("goal:*"))})


def slow_sim(seed: int = 0, **kwargs: Any) -> Simulation:
    return Simulation(seed=seed, extra=[ExtraCabin(SLOW, Slow)], **kwargs)


def returned(sim: Simulation, ticks: int) -> list[tuple[int, int, str]]:
    got = []
    for _ in range(ticks):
        got += [(r.decided_tick, r.applied_tick, r.status) for r in sim.loop.step().returned]
    return got


@pytest.mark.slow
def test_asynchronous_runs_are_exact_across_seeds_and_leave_the_world_alone() -> None:
    runs = {seed: (slow_sim(seed), slow_sim(seed)) for seed in (0, 1)}
    back = {seed: [returned(s, 300) for s in pair] for seed, pair in runs.items()}
    for seed, (a, b) in runs.items():
        assert back[seed][0] == back[seed][1]  # same seed: the same latencies, tick for tick
        assert a.summary()["board_digest"] == b.summary()["board_digest"]
    assert back[0][0] != back[1][0]  # another seed draws other latencies
    statuses = {status for _, _, status in back[0][0]}
    assert statuses == {"on_time", "dropped"}  # latencies above 1.5 s pass max_age 30
    # the latencies come from a generator of their own: the world runs as without the cabin
    plain = Simulation(seed=0)
    plain.run(300, until_done=False)
    assert plain.summary()["world_digest"] == runs[0][0].summary()["world_digest"]


@pytest.mark.slow
def test_an_asynchronous_run_replays_with_zero_drift_and_records_both_ticks(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.mcap"
    sim = slow_sim(record=path)
    sim.run(300, until_done=False)
    sim.close()
    recording = Recording.open(path)
    tagged = [
        (tick, d)
        for tick, message in recording.records(DECISIONS)
        for cabin, d in message["cabins"].items()
        if cabin == "slow"
    ]
    assert tagged and all(
        d["applied_tick"] == tick and d["decided_tick"] <= tick for tick, d in tagged
    )
    assert {d["status"] for _, d in tagged} == {"on_time", "dropped"}
    dropped = next(d for _, d in tagged if d["status"] == "dropped")
    assert dropped["writes"][0]["key"] == "slow:seen"  # recorded, though never applied
    assert json.loads(recording.metadata["timing"])["slow"]["max_age"] == 30
    first_tick, first = tagged[0]
    seen = tick_report(recording, first["decided_tick"], cabin="slow")
    assert seen["cabins"]["slow"]["decision"] == first  # what it decided on that view
    back = tick_report(recording, first_tick)
    assert back["returned"]["slow"]["decided_tick"] == first["decided_tick"]
    if first_tick != first["decided_tick"]:
        assert "slow" not in back["cabins"]  # it took no view while deciding
    report = replay(path, cabins=[Slow(SLOW)])
    assert not report.drifted and report.ticks == 300
    assert report.cabins == ("planner", "executor", "monitor", "slow")

    class Other(Slow):
        def step(self, view: CabinView, out: Outbox) -> None:
            super().step(view, out)
            if view.tick > 150:
                out.emit("surprise")

    drifted = replay(path, cabins=[Other(SLOW)])
    assert drifted.drifted and {d.cabin for d in drifted.drifts} == {"slow"}
    assert min(d.tick for d in drifted.drifts) > 150  # at the tick it decided on


def slow_monitor_sim(**kwargs: Any) -> Simulation:
    """The built-in monitor made slow (a checkpoint holds only tickwork's own classes),
    beside the LLM dispatcher (a cabin with a scratchpad) on its scripted client."""
    specs = load_specs(SPECS_DIR)
    timing = SLOW.timing.model_dump()
    specs["monitor"] = ContextSpec.model_validate(
        {**specs["monitor"].model_dump(), "timing": timing}
    )
    extra = [ExtraCabin(dispatcher_spec(), ScriptedDispatcher)]
    return Simulation(seed=0, specs=specs, extra=extra, **kwargs)


@pytest.mark.slow
def test_decisions_in_flight_survive_a_checkpoint_exactly(tmp_path: Path) -> None:
    whole = slow_monitor_sim(faults=[parse_fault("crash:monitor@150")])
    whole.run(300, until_done=False)
    half = slow_monitor_sim(faults=[parse_fault("crash:monitor@150")])
    half.run(123, until_done=False)
    assert half.loop.asynchronous is not None and "monitor" in half.loop.asynchronous.in_flight()
    save(half, RunPlan(ticks=300), tmp_path / "run.ckpt")
    extra = [ExtraCabin(dispatcher_spec(), ScriptedDispatcher)]  # named again, as --cabin
    resumed = load(tmp_path / "run.ckpt", extra=extra).sim
    resumed.run(300 - 123, until_done=False)
    assert deterministic_fields(resumed.summary()) == deterministic_fields(whole.summary())
    assert whole.summary()["cabin_failures"] == 1  # the crash due mid-decision hit the next


@pytest.mark.slow
def test_zero_latency_asynchronous_builtin_cabins_run_exactly_as_synchronous_ones() -> None:
    specs = load_specs(SPECS_DIR)
    for name in ("planner", "monitor"):
        specs[name] = ContextSpec.model_validate(
            {**specs[name].model_dump(), "timing": {"mode": "async"}}
        )
    asynchronous = Simulation(seed=3, specs=specs)
    plain = Simulation(seed=3)
    assert set(asynchronous.timings) == {"planner", "monitor"}
    one, two = asynchronous.run(300), plain.run(300)
    assert one["board_digest"] == two["board_digest"] and one["log_digest"] == two["log_digest"]


def dispatcher_spec() -> ContextSpec:
    return load_spec(DISPATCHER)


def test_the_planner_takes_its_next_task_from_the_dispatch_order() -> None:
    from cabins.planner import Planner

    specs = load_specs(SPECS_DIR)
    docks = {"A": (2.0, 2.0), "B": (8.0, 2.0), "C": (8.0, 8.0)}
    goals = {
        "goal:deliver:t1": {"task": "t1", "pickup": "A", "drop": "B", "released": 0.0},
        "goal:deliver:t2": {"task": "t2", "pickup": "B", "drop": "C", "released": 5.0},
    }
    board = {"pose": (1.0, 1.0, 0.0), "docks": docks, "world:bounds": (0, 0, 10, 10), **goals}

    def first_task(**extra: Any) -> Any:
        out = run_step(Planner(specs["planner"]), make_view(specs["planner"], board=board | extra))
        (started,) = [e.data for e in out.events if e.kind == "task_started"]
        return started["task"]

    assert first_task() == "t1"  # oldest released first
    assert first_task(**{"dispatch:order": ("t2", "t1")}) == "t2"
    assert first_task(**{"dispatch:order": ("t9", "t2")}) == "t2"  # unknown ids are skipped
    assert first_task(**{"dispatch:order": "t2"}) == "t1"  # not an order: ignored


DISPATCH_FAULTS = (
    "missing:dispatcher:goal:deliver:*@100-300",
    "crash:dispatcher@400",
)


@pytest.mark.slow
def test_the_llm_dispatcher_runs_in_a_simulation_with_a_fault_plan() -> None:
    spec = dispatcher_spec()
    faults = [parse_fault(f) for f in DISPATCH_FAULTS]
    sim = Simulation(seed=0, extra=[ExtraCabin(spec, ScriptedDispatcher)], faults=faults)
    summary = sim.run(700, until_done=False)
    assert summary["collisions"] == summary["safety_violations"] == 0
    assert summary["reactions"] == {"dispatcher:idle:no_goal": 1}
    assert summary["cabin_failures"] == 1 and summary["alarms"].get("cabin_failed") == 1
    outcomes = [e.data for e in sim.log.query(0, 1e9, kinds=["llm_outcome"], limit=None)]
    assert outcomes and all(o["stopped"] == "answer" for o in outcomes)
    assert sim.board.read("dispatch:order") is not None
    # fewer calls than ticks: the model is asked when the deliveries change
    assert len(outcomes) < summary["ticks"] / 50


@pytest.mark.slow
def test_with_the_llm_dispatcher_under_faults_every_delivery_is_made_safely() -> None:
    faults = [parse_fault(f) for f in DISPATCH_FAULTS]
    extra = [ExtraCabin(dispatcher_spec(), ScriptedDispatcher)]
    summary = Simulation(seed=0, extra=extra, faults=faults).run()
    assert summary["deliveries_done"] == summary["tasks_total"] == 5
    assert summary["collisions"] == summary["safety_violations"] == 0
    assert summary["reactions"] == {"dispatcher:idle:no_goal": 1}


@pytest.mark.slow
def test_a_campaign_runs_an_llm_cabin() -> None:
    extra = (ExtraCabin(dispatcher_spec(), ScriptedDispatcher),)
    # a slow cabin reacts once the decision it was making when the fault began is back:
    # within its latency_max (3 s, 60 ticks) and a tick
    within = 61
    requests = [
        RunRequest("warehouse", 0, None, ticks=300, extra=extra),
        RunRequest(
            "warehouse",
            0,
            parse_fault("missing:dispatcher:goal:deliver:*@100-200"),
            ticks=300,
            extra=extra,
            within=within,
        ),
    ]
    results = Campaign(requests, lambda n: cf.ThreadPoolExecutor(n), workers=2).run()
    assert [r["error"] for r in results] == [None, None]
    (expected,) = results[1]["expected"]
    assert expected["reaction"] == "idle:no_goal" and 100 <= expected["seen_at"] <= 100 + within
    assert all(r["passed"] for r in results)


@pytest.mark.slow
def test_an_llm_cabin_that_is_late_is_seen_by_the_monitor() -> None:
    late = ContextSpec.model_validate(
        {
            **dispatcher_spec().model_dump(),
            "timing": {"mode": "async", "latency": 4.0, "max_age": 20},
        }
    )
    sim = Simulation(seed=0, extra=[ExtraCabin(late, ScriptedDispatcher)])
    summary = sim.run(400, until_done=False)
    assert summary["late_decisions"] >= 1 and summary["dropped_decisions"] >= 1
    assert summary["alarms"].get("cabin_late", 0) >= 1
    lateness = [e.data for e in sim.log.query(0, 1e9, kinds=["decision_late"], limit=None)]
    assert lateness[0]["phase"] == "overdue" and lateness[0]["cabin"] == "dispatcher"


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


@pytest.mark.slow
def test_run_takes_an_llm_cabin_on_an_openai_compatible_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)

    def answer(request: Any) -> FakeReply:
        if request["messages"][-1]["role"] == "tool":
            return FakeReply(content="ordered")
        tasks = sorted(
            line.split(":", 3)[2].split(":")[0]
            for line in request["messages"][0]["content"].splitlines()
            if line.startswith("- goal:deliver:")
        )
        return FakeReply.calls(("set_order", {"tasks": tasks[::-1]}))

    with FakeLLMServer([answer]) as server:
        code, out = run_cli(
            "run",
            "--cabin",
            f"cabins.dispatcher:LLMDispatcher@{DISPATCHER}",
            "--llm-base-url",
            server.url,
            "--llm-model",
            "fake-model",
            "--ticks",
            "400",
            "--json",
        )
        assert code == 0
        summary = json.loads(out)
        assert summary["missing"]["dispatcher"] == {} and summary["cabin_failures"] == 0
        assert server.requests and server.requests[0]["model"] == "fake-model"
        assert any(t["function"]["name"] == "set_order" for t in server.requests[0]["tools"])

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("TICKWORK_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, _ = run_cli("run", "--cabin", f"cabins.dispatcher:LLMDispatcher@{DISPATCHER}")
    assert code == 2


def test_realtime_runs_on_the_wall_clock_and_the_overrun_policy_is_chosen(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run_cli("run", "--realtime", "--ticks", "6", "--overrun", "catch-up", "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["realtime"] is True and summary["ticks"] == 6
    assert summary["overruns"] >= 0 and summary["skipped_ticks"] == 0  # catch-up skips none
    sim = Simulation(realtime=True)
    assert type(sim.clock).__name__ == "WallClock" and type(sim.loop.overrun).__name__ == (
        "SkipMissed"
    )
    sim.close()
    capsys.readouterr()
    for argv, message in [
        (["--overrun", "skip"], "only a --realtime run can overrun"),
        (["--realtime", "--checkpoint-every", "10"], "cannot be checkpointed"),
    ]:
        assert run_cli("run", "--ticks", "3", *argv)[0] == 2
        assert message in capsys.readouterr().err


def test_an_llm_dispatcher_without_a_model_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="needs a model: give --llm-base-url"):
        LLMDispatcher(dispatcher_spec())
    assert LLMDispatcher(dispatcher_spec(), client=lifo_client()).timing.is_async
