"""A campaign's journal: finished runs kept at once, resumed runs not run again, a foreign
file refused and left as it was, a damaged or edited line never trusted."""

from __future__ import annotations

import ast
import concurrent.futures as cf
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runtime import load_specs
from sim.faults.model import parse_fault
from sim.run.campaign import RESULT_FIELDS, Campaign, RunRequest, crashed_result, judged, passed
from sim.run.harness import SPECS_DIR, CabinRef
from sim.run.journal import (
    HEADER,
    NOT_RUN_CODE,
    Journal,
    JournalError,
    code_digest,
    line_digest,
    run_code,
    run_key,
)
from sim.world.scenario import load_scenario
from tests.sim.run.test_campaign import cli
from tests.support.paths import ROOT

WORLD = load_scenario("warehouse")
SPECS = load_specs(SPECS_DIR)
FAULTS = [None, parse_fault("missing:executor:pose@20-60"), parse_fault("stale:pose@10-30")]


class InlineExecutor(cf.Executor):
    """Runs each submitted call at once, in this process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        future: cf.Future[Any] = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def inline(_workers: int) -> cf.Executor:
    return InlineExecutor()


def requests(seeds: range) -> list[RunRequest]:
    return [
        RunRequest("warehouse", seed, fault, ticks=50, specs=SPECS, world=WORLD)
        for seed in seeds
        for fault in FAULTS
    ]


MEASURED: dict[str, Any] = {
    "ticks": 50,
    "scenario_ticks": 2400,
    "stopped_by": None,
    "deliveries_done": 1,
    "tasks_total": 5,
    "tasks_undeliverable": [],
    "tasks_undelivered": ["t1", "t2", "t3", "t4"],
    "collisions": 0,
    "collision_details": [],
    "safety_violations": 0,
    "stalled_episodes": 0,
    "stalls": [],
    "tasks_abandoned": {},
    "tasks_refused": {},
    "battery_empty_at": None,
}
"""What a short clean run measured: cut short, nothing failed."""


def fake_result(request: RunRequest) -> dict[str, Any]:
    seen = [{"cabin": "executor", "reaction": "stop", "because": "x", "seen_at": 25}]
    return judged(
        request,
        measured=MEASURED,
        seen=seen if request.fault is not None else [],
        fault_started=True,
        board_digest="d",
    )


class Counting:
    """A runner that records what it ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[int, str]] = []

    def __call__(self, request: RunRequest) -> dict[str, Any]:
        self.ran.append((request.seed, request.label))
        return fake_result(request)


def interrupt_after(n: int) -> Callable[[dict[str, Any]], None]:
    """A progress callback that stops the campaign (as Ctrl-C would) after ``n`` results."""
    seen: list[dict[str, Any]] = []

    def progress(result: dict[str, Any]) -> None:
        seen.append(result)
        if len(seen) == n:
            raise KeyboardInterrupt

    return progress


def test_a_resumed_campaign_runs_only_what_the_journal_lacks(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with Journal(path, code="c") as journal, pytest.raises(KeyboardInterrupt):
        Campaign(
            requests(range(3)),
            inline,
            1,
            runner=Counting(),
            journal=journal,
            progress=interrupt_after(4),
        ).run()
    assert journal.appended == 4  # the interruption lost nothing that had finished

    second = Counting()
    with Journal(path, code="c") as journal:
        results = Campaign(requests(range(3)), inline, 1, runner=second, journal=journal).run()
        assert (journal.reused, journal.appended) == (4, 5)
    assert len(second.ran) == 5
    expected = [json.loads(json.dumps(fake_result(r))) for r in requests(range(3))]
    assert results == expected  # in request order, as if run at one go

    third = Counting()
    with Journal(path, code="c") as journal:
        Campaign(requests(range(3)), inline, 1, runner=third, journal=journal).run()
    assert third.ran == []


def test_runs_that_ended_in_an_error_are_run_again(tmp_path: Path) -> None:
    def failing(request: RunRequest) -> dict[str, Any]:
        raise RuntimeError("boom")

    path = tmp_path / "c.jsonl"
    with Journal(path, code="c") as journal:
        results = Campaign(requests(range(1)), inline, 1, runner=failing, journal=journal).run()
    assert all(r["error"] == "RuntimeError: boom" for r in results)
    again = Counting()
    with Journal(path, code="c") as journal:
        Campaign(requests(range(1)), inline, 1, runner=again, journal=journal).run()
        assert journal.held == 3 and journal.reused == 0
    assert len(again.ran) == 3


def test_a_journal_of_other_code_is_not_taken_for_this_one(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with Journal(path, code="old") as journal:
        Campaign(requests(range(1)), inline, 1, runner=Counting(), journal=journal).run()
    runner = Counting()
    with Journal(path, code="new") as journal:
        Campaign(requests(range(1)), inline, 1, runner=runner, journal=journal).run()
        assert journal.reused == 0 and journal.held == 6
    assert len(runner.ran) == 3


def _run_time_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (never executed)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for other in node.orelse:
                yield other
                yield from _run_time_nodes(other)
            continue
        yield node
        yield from _run_time_nodes(node)


@pytest.mark.slow
def test_the_code_digest_covers_all_a_run_can_import() -> None:
    """The code left out of the digest is never imported by the code in it, so editing
    the command line keeps a journal's runs and editing anything a run executes does not."""
    assert code_digest() == code_digest()
    names = [name for name, _ in run_code()]
    assert "sim/run/campaign.py" in names and "cabins/monitor/cabin.py" in names
    assert "runtime/loop.py" in names and "sim/world/world.py" in names
    assert not any(name.startswith(NOT_RUN_CODE) for name in names)
    left_out = tuple(p.rstrip("/").removesuffix(".py").replace("/", ".") for p in NOT_RUN_CODE)
    for name, path in run_code():
        if not name.endswith(".py"):
            continue
        for node in _run_time_nodes(ast.parse(path.read_text(), name)):
            if isinstance(node, ast.ImportFrom):
                package = name.removesuffix(".py").replace("/", ".").split(".")
                if node.level:  # a relative import, made absolute
                    base = ".".join(package[: len(package) - node.level])
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                imported = [module, *(f"{module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                imported = [a.name for a in node.names]
            else:
                continue
            for module in imported:
                assert not module.startswith(left_out), f"{name} imports {module}"


KEYED = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 3),
        "fault": st.sampled_from(range(len(FAULTS))),
        "ticks": st.sampled_from([None, 50, 51]),
        "within": st.sampled_from([40, 41]),
        "memory": st.sampled_from([None, "m.sqlite"]),
        "world": st.sampled_from(["warehouse", "tight"]),
        "monitor_window": st.sampled_from([None, 3.0]),
        "code": st.sampled_from(["a", "b"]),
        "name": st.sampled_from(["warehouse", "gen:7"]),
        "cabin": st.sampled_from([None, "tw_no_such_cabin_a", "tw_no_such_cabin_b"]),
    }
)


def _keyed(d: dict[str, Any]) -> str:
    specs = dict(SPECS)
    if d["monitor_window"] is not None:
        specs["monitor"] = specs["monitor"].model_copy(update={"event_window": d["monitor_window"]})
    world = WORLD if d["world"] == "warehouse" else WORLD.model_copy(update={"name": "tight"})
    cabins = ()
    if d["cabin"] is not None:
        cabins = (CabinRef(d["cabin"], "Cabin", SPECS["planner"], "/nonexistent"),)
    request = RunRequest(
        d["name"],
        d["seed"],
        FAULTS[d["fault"]],
        ticks=d["ticks"],
        within=d["within"],
        memory=d["memory"],
        specs=specs,
        world=world,
        cabins=cabins,
    )
    return run_key(request, code=d["code"])


@pytest.mark.slow
@given(KEYED, KEYED)
@settings(max_examples=60, deadline=None)
def test_two_runs_share_a_key_exactly_when_everything_their_result_depends_on_agrees(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    assert (_keyed(a) == _keyed(b)) == (a == b)


def test_editing_a_user_cabin_s_module_changes_its_runs_keys(tmp_path: Path) -> None:
    module = tmp_path / "tw_edited_cabin.py"
    module.write_text("class Cabin: ...\n")
    ref = CabinRef("tw_edited_cabin", "Cabin", SPECS["planner"], str(tmp_path))
    request = RunRequest("warehouse", 0, specs=SPECS, world=WORLD, cabins=(ref,))
    before = run_key(request, code="c")
    assert run_key(request, code="c") == before
    module.write_text("class Cabin:\n    speed = 2\n")
    assert run_key(request, code="c") != before


def test_without_specs_a_run_is_keyed_by_the_shipped_ones() -> None:
    bare = RunRequest("warehouse", 0, world=WORLD)
    shipped = RunRequest("warehouse", 0, world=WORLD, specs=SPECS)
    assert run_key(bare, code="c") == run_key(shipped, code="c")


def _filled(path: Path, n: int) -> bytes:
    with Journal(path, code="c") as journal:
        for request in requests(range(n))[:n]:
            journal.append(request, fake_result(request))
    return path.read_bytes()


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b'{"tickwork_journal": 3}\n', r"is in format 3; this tickwork reads format 2"),
        (b'{"tickwork_journal": 1}\n', r"is in format 1; this tickwork reads format 2"),
        (b'{"tickwork_journal": "2"}\n', r"is in format '2'; this tickwork reads format 2"),
        (b'{"tickwork_journal": 2}', r"not a campaign journal: its header line is cut short"),
        (b'{"tickwork_journal": 2, "x": 0}\n', r"is not a campaign journal \(it was left"),
        (b'{"journal": 2}\n', r"is not a campaign journal \(it was left"),
        (b'{"tickwork_journal": true}\n', r"is not a campaign journal \(it was left"),
        (b'{"tickwork_journal": 2.0}\n', r"is not a campaign journal \(it was left"),
    ],
)
def test_a_header_that_is_not_this_format_says_what_it_is(
    tmp_path: Path, header: bytes, message: str
) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(header)
    with pytest.raises(JournalError, match=message):
        Journal(path, code="c")
    assert path.read_bytes() == header


@pytest.mark.slow
@given(n=st.integers(0, 4), cut=st.integers(0, 10_000))
@example(n=0, cut=len(HEADER) - 1)  # the whole header but its newline
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_journal_cut_short_anywhere_keeps_every_complete_line(
    tmp_path: Path, n: int, cut: int
) -> None:
    path = tmp_path / f"cut{n}-{cut}.jsonl"
    path.unlink(missing_ok=True)
    whole = _filled(path, n)
    cut = min(cut, len(whole))
    path.write_bytes(whole[:cut])
    if 0 < cut < len(HEADER):  # only an empty file is a new journal
        with pytest.raises(JournalError, match="not a campaign journal") as raised:
            Journal(path, code="c")
        assert "is in format" not in str(raised.value)
        assert path.read_bytes() == whole[:cut]
        return
    with Journal(path, code="c") as journal:
        complete = whole[:cut].count(b"\n") - 1
        assert journal.held == max(complete, 0)
        request = requests(range(99, 100))[0]
        journal.append(request, fake_result(request))
    with Journal(path, code="c") as journal:
        assert journal.held == max(complete, 0) + 1
        assert journal.get(request) == fake_result(request)
    after = path.read_bytes()
    assert after.startswith(HEADER)
    kept = whole[: whole[:cut].rfind(b"\n") + 1] if cut else HEADER
    assert after.startswith(kept) and after.endswith(b"\n")


@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_file_is_opened_or_refused_with_a_journal_error_and_left_as_it_was(
    tmp_path: Path, data: bytes
) -> None:
    for body in (data, HEADER + data):
        path = tmp_path / "fuzz.jsonl"
        path.write_bytes(body)
        try:
            Journal(path, code="c").close()
        except JournalError:
            assert path.read_bytes() == body
        else:
            after = path.read_bytes()
            # an empty file gets its header; of any other, only a last line without its
            # newline is dropped
            assert after == HEADER if not body else body.startswith(after)
            assert after.endswith(b"\n")


def test_every_result_has_the_fields_a_journal_requires(tmp_path: Path) -> None:
    from sim.run.campaign import run_one

    request = RunRequest("warehouse", 0, FAULTS[1], ticks=25, specs=SPECS, world=WORLD)
    assert run_one(request).keys() == RESULT_FIELDS == crashed_result(request, "x").keys()
    with Journal(tmp_path / "c.jsonl", code="c") as journal:
        partial = {k: v for k, v in fake_result(request).items() if k != "ticks"}
        journal.append(request, partial)  # a result without its fields: kept, but not taken
        assert journal.held == 0 and journal.get(request) is None
    with Journal(tmp_path / "c.jsonl", code="c") as journal:
        assert journal.held == 0 and [n for n, _ in journal.refused] == [2]


def test_odd_files_and_odd_lines_are_refused_with_a_journal_error(tmp_path: Path) -> None:
    for path in (Path("/dev/null"),):
        with pytest.raises(JournalError, match="not a regular file"):
            Journal(path, code="c")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(JournalError, match="not a regular file"):
        Journal(fifo, code="c")
    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(HEADER + b"[" * 100_000 + b"\n")
    with Journal(deep, code="c") as journal:  # a line too deep to read is refused, not read
        assert journal.refused == [(2, "JSON nested deeper than 32 levels")]
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(HEADER.replace(b"\n", b"\r\n"))
    Journal(crlf, code="c").close()  # a header with Windows line ends is still the header
    assert crlf.read_bytes() == HEADER.replace(b"\n", b"\r\n")


def test_a_foreign_or_damaged_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.txt"
    foreign.write_bytes(b"my notes\nmore notes\n")
    with pytest.raises(JournalError, match="not a campaign journal"):
        Journal(foreign, code="c")
    assert foreign.read_bytes() == b"my notes\nmore notes\n"

    damaged = tmp_path / "damaged.jsonl"
    body = HEADER + b'{"key": "k", "result": {}}\nnot json\n{"key": "j", "result": {}}\n'
    damaged.write_bytes(body)
    with Journal(damaged, code="c") as journal:  # every line refused: each runs again
        assert [n for n, _ in journal.refused] == [2, 3, 4] and journal.held == 0
    assert damaged.read_bytes() == body

    newer = tmp_path / "newer.jsonl"
    newer.write_bytes(b'{"tickwork_journal": 3}\n')
    with pytest.raises(JournalError, match="format 3"):
        Journal(newer, code="c")

    with pytest.raises(JournalError, match="is a folder"):
        Journal(tmp_path, code="c")


def test_one_campaign_at_a_time_holds_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with Journal(path, code="c"), pytest.raises(JournalError, match="another campaign"):
        Journal(path, code="c")
    Journal(path, code="c").close()  # free again once the first is closed


@pytest.mark.slow
def test_campaign_journal_end_to_end(tmp_path: Path) -> None:
    journal = tmp_path / "c.jsonl"
    base = ["campaign", "--scenario", "warehouse", "--ticks", "60", "--workers", "1"]
    fault = ["--fault", "missing:executor:pose@10-40", "--journal", str(journal), "--json"]
    first = cli(*base, "--seeds", "0", *fault)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["journal"] == {
        "path": str(journal),
        "reused": 0,
        "ran": 2,
        "refused_lines": 0,
    }
    second = cli(*base, "--seeds", "0-1", *fault, "--out", str(tmp_path / "r.json"))
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["journal"] == {"path": str(journal), "reused": 2, "ran": 2, "refused_lines": 0}
    runs = json.loads(first.stdout)["runs"]
    assert report["runs"][:2] == runs  # taken from the journal as they were run
    assert json.loads((tmp_path / "r.json").read_text())["runs"] == report["runs"]

    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    refused = cli(*base, "--seeds", "0", "--fault", "stale:pose@10-20", "--journal", str(notes))
    assert refused.returncode == 2 and "not a campaign journal" in refused.stderr
    assert notes.read_text() == "mine\n"
    clash = cli(
        *base, "--seeds", "0", "--faults", "none", "--journal", str(notes), "--out", str(notes)
    )
    assert clash.returncode == 2 and "same file" in clash.stderr


FULL_DISK = """
import resource, signal, sys
from sim.run.campaign import RunRequest, crashed_result
from sim.run.journal import Journal, JournalError

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
path = sys.argv[1]
request = RunRequest("warehouse", 0)
with Journal(path, code="c") as journal:
    journal.append(request, crashed_result(request, "small"))
    limit = len(open(path, "rb").read()) + 100
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        journal.append(request, crashed_result(request, "x" * 10_000))
    except JournalError as exc:
        print("refused:", exc)
"""


@pytest.mark.slow
def test_a_write_that_fails_is_a_journal_error_and_leaves_no_half_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "cannot append a run" in done.stdout
    with Journal(path, code="c") as journal:  # the first run kept, nothing of the second
        assert journal.held == 1
    assert path.read_bytes().count(b"\n") == 2


# -- lines verified, not trusted (issue 30) -----------------------------------------------------


def _rewritten(path: Path, edit: Callable[[dict[str, Any]], None], *, resum: bool = True) -> None:
    """Edit the result of the journal's one entry line, its checksum recomputed (``resum``)
    so that the edit reaches the checks behind it."""
    header, line = path.read_bytes().splitlines()
    entry = json.loads(line)
    edit(entry["result"])
    if resum:
        entry["sha256"] = line_digest(entry["key"], entry["result"])
    path.write_bytes(header + b"\n" + json.dumps(entry).encode() + b"\n")


def _journal_of_one(path: Path) -> RunRequest:
    request = requests(range(1))[1]  # a run with a fault
    with Journal(path, code="c") as journal:
        journal.append(request, fake_result(request))
    return request


def _set(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda result: result.update(fields)


WRONG_TYPES: dict[str, Callable[[dict[str, Any]], None]] = {
    "an expected entry without its reaction": lambda r: r["expected"][0].pop("reaction"),
    "collisions as text": _set(collisions="3"),
    "passed as text": _set(passed="true"),
    "fault as a list": _set(fault=["stale:pose@10-30"]),
    "expected as a number": _set(expected=5),
    "tasks_total as a list": _set(tasks_total=[5]),
    "a measured count as a list": lambda r: r["measured"].update(collisions=[1]),
    "a measured field missing": lambda r: r["measured"].pop("safety_violations"),
    "measured nested past its bound": lambda r: r["measured"].update(stalls=[[[[[[[[]]]]]]]]),
    "an unknown field": _set(extra=1),
}


@pytest.mark.parametrize("edit", sorted(WRONG_TYPES))
def test_a_line_with_a_field_of_the_wrong_type_is_refused_and_run_again(
    tmp_path: Path, edit: str
) -> None:
    path = tmp_path / "c.jsonl"
    request = _journal_of_one(path)
    _rewritten(path, WRONG_TYPES[edit])
    runner = Counting()
    with Journal(path, code="c") as journal:
        assert [n for n, _ in journal.refused] == [2]
        Campaign([request], inline, 1, runner=runner, journal=journal).run()
    assert runner.ran == [(request.seed, request.label)]


def test_a_line_whose_checksum_does_not_match_is_refused_and_run_again(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    request = _journal_of_one(path)
    _rewritten(path, _set(ticks=49), resum=False)
    runner = Counting()
    with Journal(path, code="c") as journal:
        assert journal.refused == [(2, "its checksum does not match its key and result")]
        Campaign([request], inline, 1, runner=runner, journal=journal).run()
    assert len(runner.ran) == 1


JUDGED_AGAIN: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "safe: false, collisions: 3, passed: true": (
        lambda r: (
            r.update(safe=False, collisions=3, passed=True),
            r["measured"].update(collisions=3),
        ),
        "collision",
    ),
    "fault_started: false": (_set(fault_started=False, passed=True), "not started"),
    "a reaction never seen, ok: true": (
        lambda r: r["expected"][0].update(seen_at=None, ok=True),
        "not seen",
    ),
    "a reaction seen past its window, ok: true": (
        lambda r: r["expected"][0].update(seen_at=10_000, ok=True),
        "not seen",
    ),
}


@pytest.mark.parametrize("case", sorted(JUDGED_AGAIN))
def test_a_reused_entry_is_judged_again_from_what_it_measured(tmp_path: Path, case: str) -> None:
    path = tmp_path / "c.jsonl"
    request = _journal_of_one(path)
    with Journal(path, code="c") as journal:
        assert journal.get(request) == json.loads(json.dumps(fake_result(request)))
        assert passed([fake_result(request)])
    edit, why = JUDGED_AGAIN[case]
    _rewritten(path, edit)
    runner = Counting()
    with Journal(path, code="c") as journal:
        results = Campaign([request], inline, 1, runner=runner, journal=journal).run()
        assert journal.reused == 1 and journal.refused == []
    assert runner.ran == []  # taken from the journal, but judged here
    (result,) = results
    assert not passed(results) and not result["passed"]
    if why == "collision":
        assert not result["safe"] and result["verdict"]["status"] == "failed"
        assert result["verdict"]["reasons"][0]["kind"] == "collision"
    else:
        assert not result["reactions_ok"]
