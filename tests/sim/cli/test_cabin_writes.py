"""A user's cabin, written in a folder of its own and run through ``python -m sim``: what it
may change is declared and enforced, it can refuse a task with a reason, and its activity
has a row in the summary (the issue's items 2, 3 and 4, from the user's side)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime.recording.format import BOARD, EVENTS
from runtime.recording.reader import Recording
from sim import cli
from tests.support.worlds import TWO_TASKS, write_world

VANDAL = """
from runtime import CabinView, ContextSpec, Outbox


class Vandal:
    def __init__(self, spec: ContextSpec) -> None:
        self.spec, self.name = spec, spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        out.delete("safety:forbidden:switchgear")
        out.emit("vandalised", {"tick": view.tick})
"""

TRIAGE = """
from cabins.warehouse.tasks import refuse_task
from runtime import CabinView, ContextSpec, Outbox


class Triage:
    def __init__(self, spec: ContextSpec) -> None:
        self.spec, self.name = spec, spec.name
        self.refused: set[str] = set()

    def step(self, view: CabinView, out: Outbox) -> None:
        for key in view.matching("goal:deliver:*"):
            task = key.removeprefix("goal:deliver:")
            if task == "t2" and task not in self.refused:
                refuse_task(out, task, "the drop dock is closed")
                self.refused.add(task)
"""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def cabin_folder(tmp_path: Path, module: str, source: str, spec: str) -> str:
    """The cabin's module and spec in ``tmp_path``; its ``--cabin`` text."""
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    (tmp_path / f"{module}.toml").write_text(spec, encoding="utf-8")
    cls = "".join(part.title() for part in module.split("_")[2:])
    return f"{module}:{cls}@{tmp_path / f'{module}.toml'}"


def test_an_undeclared_delete_of_a_forbidden_zone_is_refused_with_an_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cabin = cabin_folder(tmp_path, "tw_writes_vandal", VANDAL, 'name = "vandal"\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(
        capsys, "run", "--ticks", "20", "--cabin", cabin, "--record", "run.mcap", "--json"
    )
    summary = json.loads(out)
    assert code == 0 and summary["safety_violations"] == 0
    row = summary["cabins"]["vandal"]
    assert row["writes_refused"] == 20 and row["deletes"] == 0  # one delete a tick, none done
    assert row["events"] == 20  # an undeclared spec may emit any event
    assert summary["writes_refused"] == 20
    recording = Recording.open(tmp_path / "run.mcap")
    refused = [e for e in recording.messages(EVENTS) if e["kind"] == "write_refused"]
    assert len(refused) == 1  # one episode: the same delete refused at every tick
    assert refused[0]["data"] | {"detail": None} == {
        "cabin": "vandal",
        "op": "delete",
        "key": "safety:forbidden:switchgear",
        "reason": "protected",
        "detail": None,
        "tick": 0,
    }
    assert "cabin:vandal" in refused[0]["tags"]
    zone = [m for m in recording.messages(BOARD) if m["key"] == "safety:forbidden:switchgear"]
    assert zone and not any(m["deleted"] for m in zone)  # the zone stayed on the board

    code, out, _ = run_cli(capsys, "run", "--ticks", "5", "--cabin", cabin)
    assert code == 0 and "cabin · vandal" in out and "refused 5" in out
    assert "writes refused" in out


def test_a_declared_delete_goes_through_and_the_recording_names_the_cabin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = 'name = "keeper"\n[writes]\ndelete = ["safety:forbidden:*"]\nevents = ["vandalised"]\n'
    source = VANDAL.replace("class Vandal", "class Keeper")
    cabin = cabin_folder(tmp_path, "tw_writes_keeper", source, spec)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(
        capsys, "run", "--ticks", "3", "--cabin", cabin, "--record", "run.mcap", "--json"
    )
    assert code == 0 and json.loads(out)["cabins"]["keeper"]["deletes"] == 1
    recording = Recording.open(tmp_path / "run.mcap")
    deleted = [m for m in recording.messages(BOARD) if m["deleted"]]
    assert [(m["key"], m["source"]) for m in deleted] == [("safety:forbidden:switchgear", "keeper")]
    code, out, _ = run_cli(capsys, "inspect", "run.mcap", "--key", "safety:forbidden:switchgear")
    assert code == 0 and "keeper" in out


def refusing_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    spec = (
        'name = "triage"\nboard_keys = ["goal:deliver:*"]\n[writes]\nboard = ["task:refused:*"]\n'
    )
    cabin = cabin_folder(tmp_path, "tw_writes_triage", TRIAGE, spec)
    world = write_world(tmp_path, TWO_TASKS)
    return run_cli(capsys, "run", "--scenario", str(world), "--cabin", cabin, *extra)


def test_a_refused_task_is_not_delivered_counted_apart_and_does_not_fail_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = refusing_run(tmp_path, capsys, "--json")
    summary = json.loads(out)
    assert code == 0, summary["verdict"]
    assert summary["deliveries_done"] == 1 and summary["tasks_undelivered"] == []
    assert summary["tasks_refused"] == {
        "t2": {"cabin": "triage", "reason": "the drop dock is closed"}
    }
    verdict = summary["verdict"]
    assert verdict["status"] == "passed" and verdict["refused_by_cabins"] == 1
    assert verdict["line"] == (
        "safe and delivered: 1 of 2 tasks; "
        "1 task refused by cabins (t2 by triage: the drop dock is closed)"
    )
    assert summary["cabins"]["triage"]["writes"] == 1
    assert summary["ticks"] == summary["scenario_ticks"]  # ran to the end, t2 never served

    code, out, _ = refusing_run(tmp_path, capsys)
    assert code == 0 and "refused tasks" in out and "t2 by triage" in out
    assert "cabin · triage" in out


def test_an_undeclared_refusal_is_itself_refused_and_the_task_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cabin whose spec declares [writes] without the protocol's key cannot refuse: its
    write is refused, the planner never sees a refusal, and a task left undone fails."""
    spec = 'name = "triage"\nboard_keys = ["goal:deliver:*"]\n[writes]\nboard = []\n'
    cabin = cabin_folder(
        tmp_path, "tw_writes_mute_triage", TRIAGE.replace("Triage", "MuteTriage"), spec
    )
    world = write_world(tmp_path, TWO_TASKS.replace("duration = 25.0", "duration = 4.0"))
    code, out, _ = run_cli(capsys, "run", "--scenario", str(world), "--cabin", cabin, "--json")
    summary = json.loads(out)
    assert summary["tasks_refused"] == {} and summary["cabins"]["triage"]["writes_refused"] == 1
    assert code == 1 and "undelivered" in summary["verdict"]["line"]


def test_check_spec_warns_of_undeclared_writes_and_catches_a_misspelt_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "silent.toml").write_text('name = "silent"\n', encoding="utf-8")
    (tmp_path / "typo.toml").write_text(
        'name = "typo"\n[writes]\nboard = ["dispatch:oder", "*"]\nevents = ["alram"]\n',
        encoding="utf-8",
    )
    code, out, _ = run_cli(capsys, "check-spec", str(tmp_path), "--json")
    reports = {r["spec"]["name"]: r for r in json.loads(out)}
    assert code == 0
    assert any("declares no [writes]" in w for w in reports["silent"]["warnings"])
    typo = reports["typo"]["warnings"]
    assert any("'dispatch:oder'" in w and "did you mean 'dispatch:order'" in w for w in typo)
    assert any("'alram'" in w and "did you mean 'alarm'" in w for w in typo)
    assert any("'*' does not grant safety:*" in w for w in typo)
    assert reports["typo"]["reads"]["writes"] == "dispatch:oder, *"
    code, _, _ = run_cli(capsys, "check-spec", str(tmp_path / "typo.toml"), "--strict")
    assert code == 2
