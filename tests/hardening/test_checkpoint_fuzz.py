"""Structure-aware fuzzing of checkpoints: the body's data is decoded, one value in it is
changed (its type, NaN and infinities, huge numbers, missing and extra keys, deep nesting,
huge arrays and other dtypes, references to objects that are not there), and the file is
written again with every checksum right, so that the change reaches the code that reads
the state. Each case must end as a ``CheckpointError`` (exit 2 with an ``error:`` line) or
as a resumed run (exit 0 or 1), never with an uncaught exception (a cabin that fails on
a changed state of its own is isolated by the loop, as any failing cabin is), and nothing
may be written but the run's own checkpoint and recording.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim import cli
from sim.run.checkpoint import MAGIC, _header_digest, decode_body

DEADLINE_MS = 60_000
FEW = settings(
    max_examples=30,
    deadline=DEADLINE_MS,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MANY = settings(FEW, max_examples=150)


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short recorded run with faults, checkpointed at tick 20."""
    folder = tmp_path_factory.mktemp("ckpt-fuzz")
    code = cli.main(
        [
            "run", "--ticks", "30", "--record", str(folder / "run.mcap"), "--checkpoint-every",
            "20", "--fault", "missing:executor:pose@5-12", "--fault", "crash:planner@18-24",
            "--json",
        ]
    )  # fmt: skip
    assert code == 0
    return folder


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON tree (dict keys and list indexes)."""
    out = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*at, i))
    return out


DEEP = "<100,000 levels deep>"  # written into the JSON text as it is (json.dumps recurses)


def _deep(levels: int) -> Any:
    node: Any = 0
    for _ in range(levels):
        node = [node]
    return node


VALUES = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -1,
            1,
            2**63,
            2**200,
            -(2**70),
            1e308,
            -1e308,
            0.5,
            "",
            "x",
            "goal:*",
            [],
            {},
            {"$f": "nan"},
            {"$f": "inf"},
            {"$f": "-inf"},
            {"$f": "1"},
            {"$t": []},
            {"$t": [1, 2]},
            {"$d": []},
            {"$d": [[[], 1]]},
            {"$d": [[1]]},
            {"$fd": [["a", {"$f": "nan"}]]},
            {"$s": [[]]},
            {"$fs": ["a"]},
            {"$q": [[], -1]},
            {"$c": [["a", "b"]]},
            {"$b": 0},
            {"$b": 10**9},
            {"$b": -1},
            {"$a": ["float64", [10**9], 0, True]},
            {"$a": ["object", [1], 0, True]},
            {"$a": ["float64", [2], 0, True]},
            {"$a": ["<f8", [1], 0, True]},
            {"$a": ["float64", [-1], 0, True]},
            {"$ga": [[0], [1], True]},
            {"$g": 0},
            {"$n": ["float64", "x"]},
            {"$n": ["int8", 1000]},
            {"$aa": ["u", 0]},
            {"$r": ["board.Reading", {}]},
            {"$r": ["harness.CabinRef", {}]},
            {"$r": ["writer.Recorder", {"path": "/tmp/pwned"}]},
            {"$o": [0, {}]},
            {"$o": [10**6, {}]},
            {"$o": "x"},
            {"$ref": 0},
            {"$ref": 10**6},
            {"$keep": None},
            {"$rng": {}},
            {"$m": {}},
            {"$unknown": 1},
            {"a": 1, "b": 2},
            _deep(300),
            {"state": None},
            DEEP,
        ]
    ),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)


def _mutate(document: Any, data: st.DataObject) -> Any:
    places = _paths(document)
    where = data.draw(st.sampled_from(places[1:]), label="where")
    parent = document
    for step in where[:-1]:
        parent = parent[step]
    last = where[-1]
    how = data.draw(st.sampled_from(["replace", "delete", "extra", "nudge"]), label="how")
    old = parent[last]
    if how == "delete":
        del parent[last]
    elif how == "extra" and isinstance(old, dict):
        old[data.draw(st.sampled_from(["extra", "$t", "$o", "__class__"]))] = 1
    elif how == "extra" and isinstance(old, list):
        old.append(data.draw(VALUES))
    elif how == "nudge" and type(old) in (int, float):
        parent[last] = data.draw(
            st.sampled_from([old + 1, -old, old * 1e300 if old else 1e300, old + 0.5, 2**64])
        )
    else:
        parent[last] = data.draw(VALUES, label="value")
    return document


def _write(folder: Path, original: bytes, document: Any, blobs: list[bytes]) -> None:
    head_end = original.index(b"\n", len(MAGIC)) + 1
    header = json.loads(original[len(MAGIC) : head_end])
    text = json.dumps(document).replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000).encode()
    body = zlib.compress(struct.pack(">Q", len(text)) + text + b"".join(blobs))
    header.update(body_bytes=len(body), body_sha256=hashlib.sha256(body).hexdigest())
    header["header_sha256"] = _header_digest(header)
    (folder / "run.ckpt").write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + body)


def _copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkpointed: Path
) -> tuple[bytes, Any, list[bytes]]:
    """The checkpointed run copied into ``tmp_path`` (made the working folder): the
    checkpoint's bytes, and its body's data and blobs."""
    for name in ("run.mcap", "run.ckpt"):
        shutil.copy(checkpointed / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    original = (tmp_path / "run.ckpt").read_bytes()
    head_end = original.index(b"\n", len(MAGIC)) + 1
    document, blobs = decode_body("run.ckpt", original[head_end:])
    return original, document, blobs


def _case(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    checkpointed: Path,
    data: st.DataObject,
) -> None:
    for old in tmp_path.iterdir():
        if old.is_file():
            old.unlink()
    original, document, blobs = _copied(tmp_path, monkeypatch, checkpointed)
    document = _mutate(document, data)
    _write(tmp_path, original, document, blobs)
    try:
        code = cli.main(["run", "--resume", "run.ckpt", "--ticks", "26", "--json"])
    except SystemExit as exc:  # pragma: no cover - argparse only
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    # no uncaught exception (a cabin that fails on a changed state of its own is isolated,
    # and its logged error may hold a traceback inside a JSON log line)
    assert not re.search(r"^Traceback", err + out, re.MULTILINE), err
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert "error: " in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.ckpt", "run.mcap"]
    assert not Path("/tmp/pwned").exists()


def test_the_fuzzed_checkpoint_resumes_when_nothing_is_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkpointed: Path
) -> None:
    """The cases below start from a checkpoint that resumes (else every case is refused
    for the same reason and nothing deep is reached)."""
    _write(tmp_path, *_copied(tmp_path, monkeypatch, checkpointed))
    assert cli.main(["run", "--resume", "run.ckpt", "--ticks", "26", "--json"]) == 0


@pytest.mark.slow
@FEW
@given(data=st.data())
def test_a_checkpoint_whose_data_was_changed_is_refused_or_resumed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    checkpointed: Path,
    data: st.DataObject,
) -> None:
    _case(tmp_path, monkeypatch, capsys, checkpointed, data)


@pytest.mark.slow
@MANY
@given(data=st.data())
def test_many_checkpoints_whose_data_was_changed_are_refused_or_resumed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    checkpointed: Path,
    data: st.DataObject,
) -> None:
    _case(tmp_path, monkeypatch, capsys, checkpointed, data)


def test_a_route_thousands_of_kilometres_long_in_a_checkpoint_resumes_without_a_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    checkpointed: Path,
) -> None:
    """Found by the fuzz on CI: a board route with a waypoint at 1.3e154 m resumed, the
    executor failed on it (isolated), and the robot's infinite distance from that route
    reached the recorder, whose JSON has no infinity: a ValueError ended the run."""
    original, document, blobs = _copied(tmp_path, monkeypatch, checkpointed)
    readings = document["state"]["$o"][1]["board"]["$o"][1]["state"]["$d"][0][1]
    (route,) = [r for r in readings if r["$r"][1]["key"] == "route"]
    route["$r"][1]["value"]["$t"][0]["$t"][0] = 1.3407807929942597e154
    _write(tmp_path, original, document, blobs)
    code = cli.main(["run", "--resume", "run.ckpt", "--ticks", "26", "--json"])
    out, err = capsys.readouterr()
    assert not re.search(r"^Traceback", err + out, re.MULTILINE), err
    assert code in (0, 1), err
