"""The planner's long-term memory in the simulator: a blocked aisle remembered across runs.

The scenario is the default warehouse with a forklift working the aisle between shelf
rows A and B and deliveries that run along that aisle, from the ``returns`` dock to a
``west`` dock at its other end. Run 1 meets the forklift and re-plans; run 2, on the
same memory file and seed, remembers where the aisle was blocked and takes another way.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cabins.planner import Planner
from runtime import LongTermMemory
from runtime.recording.format import DECISIONS
from runtime.recording.reader import Recording
from sim.cli import main
from sim.run.campaign import RunRequest
from sim.run.checkpoint import Checkpointer, RunPlan, load, resume, save
from sim.run.harness import Simulation, deterministic_fields
from tests.support.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

NAME = "blocked_aisle"
SCOPE = {"scenario": NAME}
SEED = 1

FORKLIFT = """
[[docks]]
id = "west"
x = 5.0
y = 7.25

[[moving_obstacles]]
id = "forklift1"
kind = "forklift"
radius = 0.6
speed = 0.5
waypoints = [[20.0, 7.25], [10.0, 7.25]]

[[moving_obstacles]]
id = "worker2"
kind = "person"
radius = 0.3
speed = 0.6
waypoints = [[21.0, 12.25], [9.0, 12.25]]
"""

TASKS = """
[[tasks]]
id = "t1"
pickup = "returns"
drop = "west"
release = 0.0

[[tasks]]
id = "t2"
pickup = "west"
drop = "returns"
release = 30.0

[[tasks]]
id = "t3"
pickup = "returns"
drop = "west"
release = 60.0

[failures]
pick_fail_p = 0.0
drop_fail_p = 0.0
sensor_dropout_p = 0.0
"""


def scenario_text(name: str = NAME, *, obstacles: str = FORKLIFT) -> str:
    """warehouse.toml with its people, tasks and failures replaced."""
    text = (ROOT / "sim" / "world" / "scenarios" / "warehouse.toml").read_text()
    head, *tables = re.split(r"(?m)^(?=\[)", text)
    replaced = ("[[moving_obstacles]]", "[[tasks]]", "[failures]")
    head = re.sub(r"(?m)^name = .*$", f'name = "{name}"', head)
    return head + "".join(t for t in tables if not t.startswith(replaced)) + obstacles + TASKS


@dataclasses.dataclass(frozen=True)
class Run:
    summary: dict[str, Any]
    events: Counter[str]
    replans: Counter[str]
    stored: int
    written_at: list[float]  # when each memory_written event was logged


def run(scenario: Path, memory: str | Path | LongTermMemory | None, *, seed: int = SEED) -> Run:
    sim = Simulation(scenario, seed=seed, long_term=memory)
    try:
        summary = sim.run()
    finally:
        sim.close()
    events = sim.log.query(0.0, limit=None)
    return Run(
        summary,
        Counter(e.kind for e in events),
        Counter(e.data["reason"] for e in events if e.kind == "replan"),
        sum(1 for e in events if e.kind == "memory_written" and e.data["stored"]),
        [e.stamp for e in events if e.kind == "memory_written"],
    )


def records(path: Path, scope: dict[str, str] = SCOPE) -> list[str]:
    with LongTermMemory(str(path)) as memory:
        return [r.content for r in memory.records(scope=scope)]


def delivered_safely(r: Run) -> bool:
    s = r.summary
    return bool(
        s["deliveries_done"] == s["tasks_total"] == 3
        and s["safety_violations"] == 0
        and s["collisions"] == 0
    )


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("long_term")


@pytest.fixture(scope="module")
def scenario(place: Path) -> Path:
    path = place / f"{NAME}.toml"
    path.write_text(scenario_text())
    return path


@pytest.fixture(scope="module")
def runs(place: Path, scenario: Path) -> dict[str, Any]:
    """Run 1 on an empty memory file, a copy of the file after it, then run 2 on the file."""
    memory = place / "memory.sqlite"
    first = run(scenario, memory)
    after_first = place / "after_first.sqlite"
    shutil.copyfile(memory, after_first)
    learned = records(memory)
    second = run(scenario, memory)
    return {
        "memory": memory,
        "after_first": after_first,
        "first": first,
        "second": second,
        "learned": learned,
        "kept": records(memory),
    }


def test_a_second_run_past_the_blocked_aisle_replans_less(runs: dict[str, Any]) -> None:
    first, second = runs["first"], runs["second"]
    assert delivered_safely(first) and delivered_safely(second)
    assert first.replans["obstacle_in_corridor"] >= 1
    assert first.stored >= 1 and runs["learned"]
    assert all("forklift" in fact for fact in runs["learned"])
    assert second.replans["obstacle_in_corridor"] < first.replans["obstacle_in_corridor"]
    assert second.summary["replans"] < first.summary["replans"]
    assert second.events["recalled"] >= 1


def test_learning_during_a_run_already_replans_less_than_no_memory(
    scenario: Path, runs: dict[str, Any]
) -> None:
    forgetful = run(scenario, None)
    assert delivered_safely(forgetful)
    assert forgetful.events["remembered"] == forgetful.events["recalled"] == 0
    assert runs["first"].summary["replans"] < forgetful.summary["replans"]


def test_the_same_memory_and_seed_give_the_same_run(
    place: Path, scenario: Path, runs: dict[str, Any]
) -> None:
    copies = [place / "copy_a.sqlite", place / "copy_b.sqlite"]
    again = []
    for copy in copies:
        shutil.copyfile(runs["after_first"], copy)
        again.append(deterministic_fields(run(scenario, copy).summary))
    assert again[0] == again[1] == deterministic_fields(runs["second"].summary)


def test_near_duplicates_are_not_stored_twice(
    place: Path, scenario: Path, runs: dict[str, Any]
) -> None:
    assert runs["kept"] == runs["learned"]  # run 2 learned nothing new, copied nothing
    assert runs["second"].stored == 0 and runs["second"].events["remembered"] == 0

    # two runs that start on one empty file before either learned anything, as the
    # parallel runs of a campaign do: the second run's facts are refused as duplicates
    shared = place / "shared.sqlite"
    sims = [Simulation(scenario, seed=SEED, long_term=shared) for _ in range(2)]
    stored = []
    for sim in sims:
        sim.run()
        sim.close()
        asked = sim.log.query(0.0, kinds=["remembered"], limit=None)
        assert all(e.data["why"] == "queued" for e in asked)  # written between ticks
        notes = [e.data for e in sim.log.query(0.0, kinds=["memory_written"], limit=None)]
        assert len(notes) == len(asked)
        stored.append([n["stored"] for n in notes])
        assert all(n["stored"] or n["why"] == "duplicate" for n in notes)
    assert stored[0] and all(stored[0]) and not any(stored[1])
    facts = records(shared)
    assert facts == runs["learned"] and len(set(facts)) == len(facts)


def test_facts_are_scoped_to_the_scenario(place: Path, runs: dict[str, Any]) -> None:
    twin = place / "twin.toml"
    twin.write_text(scenario_text("blocked_aisle_twin"))
    shutil.copyfile(runs["after_first"], place / "twin.sqlite")
    with LongTermMemory(str(place / "twin.sqlite")) as memory:
        assert (
            memory.recall("a forklift blocked the way", scope={"scenario": "blocked_aisle_twin"})
            == ()
        )
        sim = Simulation(twin, seed=SEED, long_term=memory)
        [planner] = [c for c in sim.loop.cabins if isinstance(c, Planner)]
        assert planner.blocked_spots == ()
        summary = sim.run()
        assert [r.content for r in memory.records(scope=SCOPE)] == runs["learned"]
        assert len(memory.records(scope={"scenario": "blocked_aisle_twin"})) == len(runs["learned"])
    # the twin learns on its own, exactly as run 1 did on an empty memory
    assert summary["replans"] == runs["first"].summary["replans"]


def test_a_memory_that_knows_and_learns_nothing_changes_nothing(place: Path) -> None:
    quiet = place / "quiet.toml"
    quiet.write_text(scenario_text("quiet", obstacles=FORKLIFT.split("[[moving_obstacles]]")[0]))
    with LongTermMemory(":memory:") as memory:
        remembering = run(quiet, memory)
        assert memory.count() == 0
    assert deterministic_fields(remembering.summary) == deterministic_fields(
        run(quiet, None).summary
    )


def test_a_checkpointed_run_with_memory_resumes_to_the_same_end(
    place: Path, scenario: Path, runs: dict[str, Any]
) -> None:
    memory = place / "resumed.sqlite"
    sim = Simulation(scenario, seed=SEED, long_term=memory)
    sim.run(700, until_done=False)  # past the re-plan: a spot is learned by then
    assert records(memory) and records(memory) == runs["learned"]
    save(sim, RunPlan(ticks=sim.max_ticks), place / "run.ckpt")
    sim.close()
    restored = load(place / "run.ckpt", long_term=memory)  # the memory named again
    resumed = restored.run()
    restored.sim.close()
    assert deterministic_fields(resumed) == deterministic_fields(runs["first"].summary)


def test_a_run_with_memory_that_dies_after_a_write_and_resumes_loses_and_repeats_no_fact(
    place: Path, scenario: Path, runs: dict[str, Any]
) -> None:
    """Killed between a checkpoint and a fact it already wrote, the run resumes from the
    checkpoint and asks for that fact again: refused as a duplicate (by subject), so the
    file ends as the uninterrupted run's did, and the run itself goes the same way."""
    first_write = round(runs["first"].written_at[0] * 20)
    checkpoint_at = first_write - first_write % 100
    memory = place / "crashed.sqlite"
    plan = RunPlan(
        ticks=Simulation(scenario).max_ticks, every=100, path=str(place / "crashed.ckpt")
    )
    dying = Simulation(scenario, seed=SEED, long_term=memory)
    dying.run(first_write + 20, until_done=False, after_tick=Checkpointer(plan))  # no close
    assert records(memory)  # the fact was written before the run died
    again = resume(plan.path or "", long_term=memory)
    assert again.info.tick == checkpoint_at < first_write
    summary = again.run()
    again.sim.close()
    assert records(memory) == runs["learned"]
    for digest in ("board_digest", "world_digest", "memory_digest"):
        assert summary[digest] == runs["first"].summary[digest]
    written = again.sim.log.query(0.0, kinds=["memory_written"], limit=None)
    assert [e.data["why"] for e in written][:1] == ["duplicate"]


def test_closing_a_simulation_writes_what_is_still_queued(place: Path, scenario: Path) -> None:
    memory = place / "closing.sqlite"
    sim = Simulation(scenario, seed=SEED, long_term=memory)
    sim.run(5, until_done=False)
    assert sim.writer is not None
    sim.writer.remember("asked on the last tick", scope=SCOPE, stamp=0.25)
    assert sim.writer.pending == 1 and "asked on the last tick" not in records(memory)
    sim.close()
    assert "asked on the last tick" in records(memory)


# -- the command line ---------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_memory_remembers_for_the_next_run(
    tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = str(tmp_path / "cli.sqlite")
    args = ("run", "--scenario", str(scenario), "--seed", str(SEED), "--memory", memory, "--json")
    summaries = []
    for _ in range(2):
        code, out, _ = cli(capsys, *args)
        assert code == 0
        summaries.append(json.loads(out))
    assert summaries[1]["replans"] < summaries[0]["replans"]
    assert records(Path(memory))


def test_run_memory_bad_input_exits_2(
    tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database, " * 100)
    code, _, err = cli(capsys, "run", "--scenario", str(scenario), "--memory", str(garbage))
    assert code == 2 and "--memory" in err and "garbage.sqlite" in err
    code, _, err = cli(capsys, "run", "--memory", str(tmp_path / "no" / "such" / "m.sqlite"))
    assert code == 2 and "--memory" in err
    code, _, err = cli(
        capsys, "run", "--resume", str(tmp_path / "x.ckpt"), "--memory", str(tmp_path / "m.sqlite")
    )
    assert code == 2 and "x.ckpt: no such file" in err
    assert not (tmp_path / "m.sqlite").exists()  # nothing opened before the checkpoint is read


@pytest.mark.skipif(
    "memory" not in {f.name for f in dataclasses.fields(RunRequest)},
    reason="sim.run.campaign.RunRequest has no memory field",
)
def test_campaign_runs_share_one_memory(
    tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = tmp_path / "campaign.sqlite"
    code, out, _ = cli(
        capsys,
        "campaign",
        "--scenario",
        str(scenario),
        "--seeds",
        str(SEED),
        "--fault",
        "crash:planner@5",
        "--memory",
        str(memory),
        "--workers",
        "1",
        "--json",
    )
    report = json.loads(out)
    assert code == 0 and report["passed"], report
    assert report["memory"] == str(memory.resolve())
    facts = records(memory)
    assert facts and len(set(facts)) == len(facts)


@pytest.mark.parametrize("start", ["empty", "after_first"])
def test_a_run_with_memory_replays_without_drift(
    place: Path, scenario: Path, runs: dict[str, Any], start: str
) -> None:
    """The recording holds what the planner knew at the start and every fact it asked to
    keep, so a replayed planner plans, and learns, exactly as the recorded one did."""
    from sim.analysis.replay import replay

    memory = place / f"replay_{start}.sqlite"
    if start == "after_first":
        shutil.copyfile(runs["after_first"], memory)
    out = place / f"replay_{start}.mcap"
    sim = Simulation(scenario, seed=SEED, long_term=memory, record=out)
    sim.run()
    sim.close()
    asked = [
        d
        for d in Recording.open(out).messages(DECISIONS)
        for c in d["cabins"].values()
        if c.get("memories")
    ]
    assert bool(asked) == (start == "empty")  # the second run learns nothing new
    report = replay(out)
    assert report.drifts == (), report.drifts[:3]
