"""One regression test per class of bad input a fuzzer found: each ends in the documented
outcome (a clear error and exit 2, or exit 1 for a failed campaign), never a traceback,
a hang, a wrong acceptance or a lost file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.spec import ContextSpec, SpecError, load_spec
from sim import cli
from sim.world.limits import MAX_FLOOR_SIDE
from sim.world.scenario import SCENARIOS_DIR, ScenarioError, load_scenario
from tests.support.paths import ROOT


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``python -m sim ARGV`` in this process: its exit status, stdout and stderr."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse refuses a flag's value with exit 2
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# -- numbers without bounds -------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--rate", "1e308"],
        ["--rate", "1e-300"],
        ["--rate", "nan"],
        ["--duration", "1e308"],
        ["--duration", "inf"],
        ["--ticks", str(10**20)],
        ["--capacity", str(2**63)],
    ],
)
def test_a_number_out_of_range_on_the_command_line_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = run_cli(capsys, "run", *argv)
    assert code == 2 and argv[0] in err and "expected" in err


def _scenario_with(tmp_path: Path, old: str, new: str) -> Path:
    text = (SCENARIOS_DIR / "warehouse.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "big.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("side", ["10000.0", "1e308"])
def test_a_floor_too_big_to_plan_on_is_refused_at_load(tmp_path: Path, side: str) -> None:
    path = _scenario_with(tmp_path, "max_x = 30.0\n", f"max_x = {side}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert "floor.max_x" in str(caught.value)
    assert f"at most {MAX_FLOOR_SIDE:g} m" in str(caught.value) or "at most 1e+06" in str(
        caught.value
    )


def test_a_scenario_rate_too_slow_to_simulate_is_refused(tmp_path: Path) -> None:
    path = _scenario_with(tmp_path, "rate_hz = 20.0\n", "rate_hz = 1e-300\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert "rate_hz" in str(caught.value)


def test_an_event_limit_past_its_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "planner.toml"
    path.write_text(f"event_window = 5.0\nevent_limit = {2**63}\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert "event_limit" in str(caught.value)
    assert ContextSpec.model_json_schema()["properties"]["event_limit"]["maximum"] == 100_000


# -- outputs that destroy each other or an input ----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--record", "X.toml", "--checkpoint-every", "5", "--checkpoint", "X.toml"],
        ["--record", "X.toml", "--report", "X.toml"],
        ["--record", "X.toml", "--memory", "X.toml"],
        ["--record", "X.toml", "--scenario", "X.toml"],
        ["--record", "sub/../X.toml", "--checkpoint-every", "5", "--checkpoint", "X.toml"],
    ],
)
def test_two_outputs_naming_one_file_are_refused_before_either_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    before = (SCENARIOS_DIR / "warehouse.toml").read_bytes()  # a valid scenario, as X
    (tmp_path / "X.toml").write_bytes(before)
    code, _, err = run_cli(capsys, "run", "--ticks", "3", *argv)
    assert code == 2 and ("same file" in err or "not a tickwork report" in err)
    assert (tmp_path / "X.toml").read_bytes() == before
    fresh = [a.replace("X.toml", "Y") for a in argv if a != "--scenario"]
    if "--scenario" not in argv:  # the same two outputs, neither of them there yet
        code, _, err = run_cli(capsys, "run", "--ticks", "3", *fresh)
        assert code == 2 and "same file" in err and not (tmp_path / "Y.toml").exists()


def test_a_bad_checkpoint_path_leaves_an_existing_recording_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.mcap").write_bytes(b"an earlier run's recording")
    code, _, err = run_cli(
        capsys,
        "run",
        "--ticks",
        "3",
        "--record",
        "run.mcap",
        "--checkpoint-every",
        "2",
        "--checkpoint",
        "nowhere/run.ckpt",
    )
    assert code == 2 and "--checkpoint" in err and "does not exist" in err
    assert (tmp_path / "run.mcap").read_bytes() == b"an earlier run's recording"


@pytest.mark.parametrize("target", ["a folder", "a missing folder"])
def test_campaign_out_that_cannot_be_written_is_refused_before_the_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    out = tmp_path if target == "a folder" else tmp_path / "missing" / "r.json"
    code, out_text, err = run_cli(
        capsys, "campaign", "--fault", "stale:pose@1-2", "--seeds", "0", "--ticks", "1",
        "--out", str(out),
    )  # fmt: skip
    assert code == 2 and "--out" in err and out_text == ""


@pytest.mark.slow
def test_campaign_out_is_written_whole_and_a_fault_that_never_started_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    previous = {"scenarios": ["warehouse"], "seeds": [0], "passed": True, "table": [], "runs": []}
    out.write_text(json.dumps(previous))  # the previous campaign's result: replaced
    code, _, _ = run_cli(
        capsys, "campaign", "--fault", "missing:executor:pose@500-600", "--seeds", "0",
        "--ticks", "20", "--workers", "1", "--out", str(out),
    )  # fmt: skip
    assert code == 1  # the fault starts at tick 500 of a 20-tick run: it tested nothing
    report = json.loads(out.read_text())
    faulty = [r for r in report["runs"] if r["fault_kind"] is not None]
    assert faulty and all(not r["fault_started"] and not r["passed"] for r in faulty)
    assert report["passed"] is False
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left


# -- recordings with nothing to analyse ----------------------------------------------------------


@pytest.mark.parametrize("command", ["replay", "doctor", "report"])
def test_a_recording_without_ticks_is_bad_input_for_every_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    from runtime.recording.writer import Recorder

    path = tmp_path / "empty.mcap"
    Recorder(path, metadata={"run": {"scenario": "warehouse"}}).close()
    code, _, err = run_cli(capsys, command, str(path))
    assert code == 2 and "holds no ticks" in err


# -- user cabins ------------------------------------------------------------------------------

CABINS = """
class Raises:
    def __init__(self, spec):
        raise RuntimeError("no model file")


class NoArgs:
    def __init__(self):
        pass


class Impostor:
    def __init__(self, spec):
        self.spec = spec
        self.name = "planner"

    def step(self, view, out):
        pass


class NotACabin:
    def __init__(self, spec):
        self.spec = spec
"""


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        ("Raises", "RuntimeError: no model file"),
        ("NoArgs", "could not be built"),
        ("Impostor", "calls itself 'planner'"),
        ("NotACabin", "not a cabin"),
    ],
)
@pytest.mark.parametrize("command", ["run", "replay"])
def test_a_user_cabin_that_cannot_be_built_is_one_clear_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cls: str,
    words: str,
    command: str,
) -> None:
    module = f"badcabins_{cls.lower()}_{command}"
    (tmp_path / f"{module}.py").write_text(CABINS)
    (tmp_path / "helper.toml").write_text('name = "helper"\nboard_keys = ["pose"]\n')
    monkeypatch.chdir(tmp_path)
    target = ["--ticks", "2"] if command == "run" else ["missing.mcap"]
    code, _, err = run_cli(capsys, command, *target, "--cabin", f"{module}:{cls}@helper.toml")
    assert code == 2 and words in err and "'helper'" in err


# -- specs that blind a cabin -----------------------------------------------------------------


def test_check_spec_warns_of_a_spec_that_blinds_the_robot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = ROOT / "specs"
    executor = tmp_path / "executor.toml"
    executor.write_text(
        (specs / "executor.toml").read_text().replace("map_radius = 4.0", "map_radius = 0.0")
    )
    monitor = tmp_path / "monitor.toml"
    monitor.write_text(
        (specs / "monitor.toml")
        .read_text()
        .replace('map_center = "pose"', 'map_center = "battery"')
    )
    code, out, _ = run_cli(capsys, "check-spec", str(executor), str(monitor), "--json")
    assert code == 0
    warnings = {Path(r["path"]).stem: r["warnings"] for r in json.loads(out)}
    assert any("would not see an obstacle" in w for w in warnings["executor"])
    assert any("not a position" in w for w in warnings["monitor"])
    code, out, _ = run_cli(capsys, "check-spec", str(specs))
    assert code == 0  # the shipped specs blind nobody (capacity is check-spec's other topic)
    assert "would not see an obstacle" not in out and "not a position" not in out


def test_resume_refuses_a_report_over_its_own_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_cli(
        capsys, "run", "--ticks", "4", "--record", "r.mcap", "--checkpoint-every", "2", "--json"
    )
    assert code == 0
    before = (tmp_path / "r.ckpt").read_bytes()
    code, _, err = run_cli(capsys, "run", "--resume", "r.ckpt", "--report", "r.ckpt")
    assert code == 2 and "not a tickwork report" in err
    code, _, err = run_cli(capsys, "run", "--resume", "r.ckpt", "--report", "r.mcap")
    assert code == 2 and "not a tickwork report" in err
    code, _, err = run_cli(
        capsys, "run", "--resume", "r.ckpt", "--checkpoint", "r.mcap", "--checkpoint-every", "2"
    )
    assert code == 2 and "same file" in err
    assert (tmp_path / "r.ckpt").read_bytes() == before
    assert os.path.getsize(tmp_path / "r.mcap") > 0


GREETER = """
class Greeter:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        self.greeted = 0

    def step(self, view, out):
        self.greeted += 1
        if view.tick % 5 == 0:
            out.emit("greeting", {"n": self.greeted})

    def get_state(self):
        return {"greeted": self.greeted}

    def set_state(self, data):
        self.greeted = int(data["greeted"])
"""


def test_a_run_with_user_cabins_resumes_only_when_they_are_named_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "greeter_resume.py").write_text(GREETER)
    (tmp_path / "greeter.toml").write_text('name = "greeter"\nboard_keys = ["pose"]\n')
    monkeypatch.chdir(tmp_path)
    cabin = "greeter_resume:Greeter@greeter.toml"
    code, _, _ = run_cli(
        capsys, "run", "--ticks", "12", "--record", "r.mcap", "--checkpoint-every", "6",
        "--cabin", cabin, "--json",
    )  # fmt: skip
    assert code == 0
    code, _, err = run_cli(capsys, "run", "--resume", "r.ckpt", "--ticks", "20", "--json")
    assert code == 2 and f"--cabin {cabin}" in err  # the file alone names no code to run
    code, _, err = run_cli(
        capsys, "run", "--resume", "r.ckpt", "--ticks", "20", "--cabin", "other:X@greeter.toml"
    )
    assert code == 2 and "same cabins" in err
    code, out, err = run_cli(
        capsys, "run", "--resume", "r.ckpt", "--ticks", "20", "--cabin", cabin, "--json"
    )
    assert code == 0, err
    assert json.loads(out)["ticks"] == 20


def test_a_chunk_whose_length_field_overflows_is_damage_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fuzzer's find: a length inside a chunk past any index size (OverflowError)."""
    import struct

    from runtime.recording.salvage import _whole_chunk

    content = struct.pack("<QQQI", 0, 0, 100, 0) + struct.pack("<I", 4) + b"zstd"
    content += struct.pack("<Q", 2**63 + 5)  # the records' length
    assert _whole_chunk(content) is False


# -- issue 30: special files, hostile values, files that are not ours ------------------------------


@pytest.fixture(scope="module")
def short_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("short") / "run.mcap"
    assert cli.main(["run", "--ticks", "5", "--record", str(path), "--json"]) == 0
    return path


def _with_summary(source: Path, target: Path, text: str) -> Path:
    """``source`` copied whole (every CRC right) with its ``summary`` metadata ``text``."""
    from runtime.recording.reader import scan
    from runtime.recording.writer import RawMessage, Recorder

    old = scan(source)
    topics = {cid: c.topic for cid, c in old.channels.items()}
    writer = Recorder(target, metadata=old.metadata["run"])
    writer.copy_messages(
        RawMessage(topics[m.channel_id], m.sequence, m.log_time, m.publish_time, m.data)
        for m in old.messages
    )
    writer.add_metadata("summary", {"json": text})
    writer.close()
    return target


@pytest.mark.parametrize(
    ("summary", "words"),
    [
        ('{"collisions": [1]}', "collisions: Input should be a valid integer"),
        ('{"tasks_abandoned": {"t1": 3}}', "tasks_abandoned.t1"),
        ("[" * 3000 + "]" * 3000, "nested deeper than 32 levels"),
        ('{"a": ' * 3000 + "1" + "}" * 3000, "nested deeper than 32 levels"),
        ("[]", "a run summary is a JSON object"),
    ],
)
@pytest.mark.parametrize("command", ["report", "doctor"])
def test_a_recording_whose_summary_is_not_one_is_a_clear_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    short_recording: Path,
    summary: str,
    words: str,
    command: str,
) -> None:
    path = _with_summary(short_recording, tmp_path / "bad.mcap", summary)
    argv = [command, str(path)] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and words in err and str(path) in err
    assert not (tmp_path / "r.html").exists()


SPECIAL = ["/dev/zero", "a FIFO", "a folder", "a link to a device"]


def special_file(tmp_path: Path, kind: str, name: str) -> Path:
    """A path of the given kind: a device, a FIFO, a folder, or a link to ``/dev/zero``."""
    if kind == "/dev/zero":
        return Path("/dev/zero")
    path = tmp_path / name
    if kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "a folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")
    return path


INPUT_FLAGS: dict[str, Callable[[Path], list[str]]] = {
    "run --scenario": lambda p: ["run", "--scenario", str(p), "--ticks", "1"],
    "run --faults": lambda p: ["run", "--faults", str(p), "--ticks", "1"],
    "run --cabin SPEC": lambda p: ["run", "--cabin", f"tw_none:X@{p}", "--ticks", "1"],
    "run --memory": lambda p: ["run", "--memory", str(p), "--ticks", "1"],
    "run --resume": lambda p: ["run", "--resume", str(p)],
    "check-spec": lambda p: ["check-spec", str(p)],
    "campaign --scenario": lambda p: ["campaign", "--scenario", str(p), "--faults", "none"],
    "campaign --faults": lambda p: ["campaign", "--faults", str(p)],
    "campaign --journal": lambda p: ["campaign", "--faults", "none", "--journal", str(p)],
    "report": lambda p: ["report", str(p)],
    "doctor": lambda p: ["doctor", str(p)],
    "replay": lambda p: ["replay", str(p)],
    "inspect": lambda p: ["inspect", str(p), "--tick", "0"],
    "repair": lambda p: ["repair", str(p), "-o", str(p.parent / "fixed.mcap")],
}


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("flag", sorted(INPUT_FLAGS))
def test_a_special_file_for_any_input_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, kind: str
) -> None:
    """/dev/zero is never read without bound and a FIFO never hangs (nothing writes it):
    every input flag refuses what is not a regular file, with exit 2."""
    if flag == "check-spec" and kind == "a folder":
        pytest.skip("check-spec takes folders of specs")
    path = special_file(tmp_path, kind, "input.toml")
    code, out, err = run_cli(capsys, *INPUT_FLAGS[flag](path))
    assert code == 2
    assert err.startswith("error: ") or (flag == "check-spec" and out.startswith("error "))
    said = out if flag == "check-spec" else err  # refused as what it is, not for another reason
    assert str(path) in said.replace("\n", "")  # check-spec's table wraps long lines
    words = " ".join(said.split())
    assert any(w in words for w in ("regular file", "is a folder", "not a long-term memory file"))


def test_check_spec_refuses_a_fifo_without_waiting_for_a_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = special_file(tmp_path, "a FIFO", "spec.toml")
    code, out, _ = run_cli(capsys, "check-spec", str(fifo))
    assert code == 2 and "is a FIFO (a named pipe)" in out


def test_campaign_out_does_not_replace_a_file_that_is_not_a_campaign_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], short_recording: Path
) -> None:
    out = tmp_path / "run.mcap"
    out.write_bytes(short_recording.read_bytes())
    code, _, err = run_cli(
        capsys, "campaign", "--fault", "stale:pose@1-2", "--seeds", "0", "--ticks", "1",
        "--out", str(out),
    )  # fmt: skip
    assert code == 2 and "is not a campaign result: it is not replaced" in err
    assert out.read_bytes() == short_recording.read_bytes()


@pytest.mark.parametrize(
    "text", [".:X@specs/planner.toml", "..x:X@specs/planner.toml", "a/b:X@s", "a:1X@s", "a:X.Y@s"]
)
def test_a_cabin_that_is_not_an_absolute_module_and_class_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    code, _, err = run_cli(capsys, "run", "--cabin", text, "--ticks", "1")
    assert code == 2 and "is not a" in err


def test_another_program_s_database_as_memory_leaves_it_and_the_recording_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], short_recording: Path
) -> None:
    import sqlite3

    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    db.close()
    before = other.read_bytes()
    record = tmp_path / "run.mcap"
    record.write_bytes(short_recording.read_bytes())
    code, _, err = run_cli(
        capsys, "run", "--memory", str(other), "--record", str(record), "--ticks", "1"
    )
    assert code == 2 and "not a tickwork long-term memory file" in err
    assert other.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "app.db",
        "run.mcap",
    ]
    assert record.read_bytes() == short_recording.read_bytes()


# -- nothing written before every input is checked (issue 30) ------------------------------------


def _folder(path: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``path``, with the bytes of each file."""
    return {
        str(p.relative_to(path)): p.read_bytes() if p.is_file() else None
        for p in sorted(path.rglob("*"))
    }


def _bad_inputs(tmp_path: Path) -> None:
    """One bad file of each kind a run or a campaign reads, and another program's database."""
    import sqlite3

    (tmp_path / "bad.toml").write_text("name = [\n")  # invalid TOML
    (tmp_path / "badspecs").mkdir()
    (tmp_path / "badspecs" / "planner.toml").write_bytes(b"\xff")
    with sqlite3.connect(tmp_path / "app.db") as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    db.close()


BAD_INPUTS: dict[str, list[str]] = {
    "--scenario": ["--scenario", "bad.toml"],
    "--faults": ["--faults", "bad.toml"],
    "--fault": ["--fault", "stale:pose@30-10"],
    "--specs": ["--specs", "badspecs"],
    "--cabin spec": ["--cabin", "tw_absent:X@bad.toml"],
    "--memory": ["--memory", "app.db"],
}


@pytest.mark.parametrize("bad", sorted(BAD_INPUTS))
def test_a_refused_run_input_leaves_every_output_as_it_was(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    short_recording: Path,
    bad: str,
) -> None:
    """Every input is read and checked before any output is opened: a run refused for any
    one of them leaves an earlier recording whole and creates no checkpoint, report or
    memory file."""
    monkeypatch.chdir(tmp_path)
    _bad_inputs(tmp_path)
    (tmp_path / "run.mcap").write_bytes(short_recording.read_bytes())
    before = _folder(tmp_path)
    code, _, err = run_cli(
        capsys, "run", "--ticks", "3", "--record", "run.mcap", "--report", "run.html",
        "--checkpoint-every", "1", "--checkpoint", "run.ckpt", *BAD_INPUTS[bad],
    )  # fmt: skip
    assert code == 2 and err.startswith("error: ")
    assert _folder(tmp_path) == before


@pytest.mark.parametrize("bad", sorted(BAD_INPUTS))
def test_a_refused_campaign_input_leaves_every_output_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    monkeypatch.chdir(tmp_path)
    _bad_inputs(tmp_path)
    previous = {"scenarios": ["warehouse"], "seeds": [0], "passed": True, "table": [], "runs": []}
    (tmp_path / "out.json").write_text(json.dumps(previous))
    before = _folder(tmp_path)
    faults = [] if bad in ("--faults", "--fault") else ["--fault", "stale:pose@1-2"]
    code, _, err = run_cli(
        capsys, "campaign", "--seeds", "0", "--ticks", "1", "--workers", "1", "--out",
        "out.json", "--journal", "c.jsonl", "--report", "c.html", *faults, *BAD_INPUTS[bad],
    )  # fmt: skip
    assert code == 2 and err.startswith("error: ")
    assert _folder(tmp_path) == before


STATELESS = """
class Stateless:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name

    def step(self, view, out):
        pass
"""


def test_checkpointing_a_user_cabin_without_get_state_is_refused_before_anything_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    short_recording: Path,
) -> None:
    """The decision for a user cabin without get_state/set_state (docs/guides/checkpoints.md,
    'User cabins'): its run cannot be checkpointed, and says so before writing anything."""
    (tmp_path / "stateless_cabin.py").write_text(STATELESS)
    (tmp_path / "helper.toml").write_text('name = "helper"\nboard_keys = ["pose"]\n')
    (tmp_path / "run.mcap").write_bytes(short_recording.read_bytes())
    monkeypatch.chdir(tmp_path)
    before = _folder(tmp_path)
    code, _, err = run_cli(
        capsys, "run", "--ticks", "4", "--record", "run.mcap", "--checkpoint-every", "2",
        "--cabin", "stateless_cabin:Stateless@helper.toml",
    )  # fmt: skip
    assert code == 2 and "have no get_state() and set_state(data)" in err
    assert {k: v for k, v in _folder(tmp_path).items() if "__pycache__" not in k} == before
    code, _, err = run_cli(
        capsys, "run", "--ticks", "4", "--cabin", "stateless_cabin:Stateless@helper.toml",
        "--json",
    )  # fmt: skip
    assert code == 0, err  # without checkpoints it runs
