"""A checkpoint holds what declared writes and the task protocol add to a run: each cabin's
counts, the refusals the planner honours and the summary's refused tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cabins.warehouse.tasks import refuse_task
from runtime import CabinView, ContextSpec, Outbox
from sim.run.checkpoint import RunPlan, load, save
from sim.run.harness import ExtraCabin, Simulation, deterministic_fields
from tests.support.worlds import TWO_TASKS, write_world

SPEC = ContextSpec(
    name="triage",
    board_keys=("goal:deliver:*",),
    writes={"board": ["task:refused:*"]},  # type: ignore[arg-type]
)


class Triage:
    """Refuses t2 once, and scribbles an undeclared key every 7 ticks (refused)."""

    def __init__(self, spec: ContextSpec) -> None:
        self.spec, self.name = spec, spec.name
        self.refused: list[str] = []

    def step(self, view: CabinView, out: Outbox) -> None:
        for key in view.matching("goal:deliver:*"):
            task = key.removeprefix("goal:deliver:")
            if task == "t2" and task not in self.refused:
                refuse_task(out, task, "the drop dock is closed")
                self.refused.append(task)
        if view.tick % 7 == 0:
            out.write("scribble", view.tick)

    def get_state(self) -> dict[str, Any]:
        return {"refused": list(self.refused)}

    def set_state(self, data: Any) -> None:
        self.refused = [str(t) for t in data["refused"]]


def test_a_run_with_refusals_resumes_exactly(tmp_path: Path) -> None:
    world = write_world(tmp_path, TWO_TASKS)
    extra = [ExtraCabin(SPEC, Triage)]
    expected = deterministic_fields(Simulation(world, extra=extra).run(300, until_done=False))
    assert expected["tasks_refused"] == {
        "t2": {"cabin": "triage", "reason": "the drop dock is closed"}
    }
    assert expected["cabins"]["triage"]["writes_refused"] == 43  # ticks 0, 7, ..., 294

    half = Simulation(world, extra=extra)
    half.run(150, until_done=False)
    save(half, RunPlan(ticks=300, until_done=False), tmp_path / "t.ckpt")
    back = load(tmp_path / "t.ckpt", extra=[ExtraCabin(SPEC, Triage)])
    assert deterministic_fields(back.run()) == expected


class Stubborn(Triage):
    """Scribbles the undeclared key at every tick from 140 on: a refusal episode that is
    open when the checkpoint is taken at tick 150."""

    def step(self, view: CabinView, out: Outbox) -> None:
        if view.tick >= 140:
            out.write("scribble", view.tick)


def test_a_refusal_episode_open_at_the_checkpoint_stays_one_episode(tmp_path: Path) -> None:
    world = write_world(tmp_path, TWO_TASKS)
    extra = [ExtraCabin(SPEC, Stubborn)]
    whole = Simulation(world, extra=extra)
    expected = deterministic_fields(whole.run(200, until_done=False))
    assert expected["cabins"]["triage"]["writes_refused"] == 60
    kinds = [e.kind for e in whole.loop.assembler.log.query(0.0, limit=None)]
    assert kinds.count("write_refused") == 1

    half = Simulation(world, extra=extra)
    half.run(150, until_done=False)
    save(half, RunPlan(ticks=200, until_done=False), tmp_path / "s.ckpt")
    back = load(tmp_path / "s.ckpt", extra=[ExtraCabin(SPEC, Stubborn)])
    assert deterministic_fields(back.run()) == expected  # the log digest too
