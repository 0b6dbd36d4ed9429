"""Recordings as Foxglove reads them: checked with Foxglove's own code where node exists.

The node test installs Foxglove's MCAP reader (``@mcap/core``, ``@mcap/support`` for
zstd), its published schemas (``@foxglove/schemas``) and a JSON Schema validator (``ajv``)
from npm into a cache folder, then runs ``tests/support/foxglove/check_recording.js`` on a fresh
recording. ``@foxglove/mcap-support`` (home of ``parseJsonSchema``) is not published to
npm, so the script restates its rules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcap.writer import Writer

from runtime.recording.format import ALL_CHANNELS, FOXGLOVE_CHANNELS, PROFILE, SCHEMA_VERSION
from runtime.recording.reader import Recording, RecordingError
from sim.run.harness import Simulation
from tests.support.paths import ROOT, SUPPORT

NPM_PACKAGES = ("@mcap/core@2", "@mcap/support", "@foxglove/schemas@2", "ajv@8")
SCALARS = {"boolean", "string", "number", "integer"}


def _parser_problems(schema: dict[str, Any], path: str) -> list[str]:
    """The forms Foxglove's parseJsonSchema refuses (as in check_recording.js)."""
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        return [f"{path}: not an object with properties"]
    problems: list[str] = []
    for name, field in schema["properties"].items():
        where = f"{path}.{name}"
        if "oneOf" in field:
            if not all(isinstance(a.get("const"), int) for a in field["oneOf"]):
                problems.append(f"{where}: a oneOf that is not numeric consts")
        elif field.get("type") == "object":
            problems += _parser_problems(field, where)
        elif field.get("type") == "array":
            items = field.get("items")
            if not isinstance(items, dict):
                problems.append(f"{where}: an array without items")
            elif items.get("type") == "object":
                problems += _parser_problems(items, where + "[]")
            elif items.get("type") not in SCALARS:
                problems.append(f"{where}: array items of type {items.get('type')!r}")
        elif field.get("type") not in SCALARS:
            problems.append(f"{where}: type {field.get('type')!r}")
    return problems


@pytest.mark.parametrize("topic", list(ALL_CHANNELS))
def test_every_schema_uses_only_forms_foxglove_parses(topic: str) -> None:
    assert _parser_problems(ALL_CHANNELS[topic].schema(), topic) == []


def test_well_known_channels_carry_foxglove_schema_names() -> None:
    names = {c.topic: c.schema_name for c in FOXGLOVE_CHANNELS.values()}
    assert names["/scene"] == "foxglove.SceneUpdate"
    assert names["/log"] == "foxglove.Log"
    assert names["/tf"] == "foxglove.FrameTransform"
    assert names["/robot/pose"] == "foxglove.PoseInFrame"


def test_a_recording_of_format_1_is_refused_naming_the_versions(tmp_path: Path) -> None:
    old = tmp_path / "old.mcap"
    with old.open("wb") as fh:
        writer = Writer(fh)
        writer.start(profile=PROFILE, library="tickwork 0.1")
        writer.add_metadata("run", {"schema_version": "1"})
        writer.finish()  # type: ignore[no-untyped-call]
    with pytest.raises(RecordingError, match=rf"format version 1.*format version {SCHEMA_VERSION}"):
        Recording.open(old)


def test_the_scene_is_thinned_to_changes_and_the_log_has_every_event(tmp_path: Path) -> None:
    path = tmp_path / "run.mcap"
    sim = Simulation("warehouse", seed=3, record=path)
    try:
        sim.run(400)
    finally:
        sim.close()
    recording = Recording.open(path)
    counts = recording.counts()
    ticks = len(recording.ticks())
    assert counts["/tf"] == counts["/robot/pose"] == counts["/series"] == ticks
    assert 0 < counts["/scene"] < ticks * 0.6
    assert counts["/log"] == counts["/events"]
    first = next(recording.messages(FOXGLOVE_CHANNELS["/scene"]))
    ids = {e["id"] for e in first["entities"]}
    assert {"floor", "robot", "route"} <= ids
    assert any(i.startswith("shelf:") for i in ids)
    layouts = [
        m
        for m in recording.messages(FOXGLOVE_CHANNELS["/scene"])
        if any(e["id"] == "floor" for e in m["entities"])
    ]
    assert len(layouts) == 2  # at 0 s and again at 10 s of the 20 s run, for seeking
    series = list(recording.messages(FOXGLOVE_CHANNELS["/series"]))
    assert all(0.0 <= s["battery"] <= 1.0 for s in series)
    assert max(s["speed"] for s in series) > 0


def _npm_dir() -> Path:
    base = Path(os.environ.get("TICKWORK_NPM_CACHE", Path.home() / ".cache" / "tickwork-npm"))
    return base / "foxglove-1"


@pytest.fixture(scope="module")
def node_modules() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: Foxglove's reader cannot be run")
    where = _npm_dir()
    if not (where / "node_modules" / "ajv").is_dir():
        where.mkdir(parents=True, exist_ok=True)
        (where / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", *NPM_PACKAGES],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.skip(f"npm could not install Foxglove's packages: {done.stderr[-300:]}")
    return where / "node_modules"


@pytest.mark.node
@pytest.mark.slow
def test_foxglove_reads_every_channel_and_every_message_validates(
    tmp_path: Path, node_modules: Path
) -> None:
    path = tmp_path / "run.mcap"
    sim = Simulation("warehouse", seed=1, record=path)
    try:
        sim.run(300)
    finally:
        sim.close()
    done = subprocess.run(
        ["node", str(SUPPORT / "foxglove" / "check_recording.js"), str(path)],
        env={**os.environ, "NODE_PATH": str(node_modules)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr
    out = json.loads(done.stdout)
    assert out["problems"] == []
    assert out["profile"] == PROFILE
    assert set(out["channels"]) == set(ALL_CHANNELS)
    for topic, channel in out["channels"].items():
        assert channel["parser_problems"] == 0, topic
        assert channel["invalid"] == 0, topic
    for topic in ("/scene", "/tf", "/robot/pose", "/series", "/working_set", "/decisions"):
        assert out["channels"][topic]["messages"] > 0, topic
    assert out["channels"]["/scene"]["schema"] == "foxglove.SceneUpdate"


LAYOUT = ROOT / "sim" / "run" / "foxglove_layout.json"


def _panels(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    return _panels(node["first"]) + _panels(node["second"])


def test_the_shipped_layout_shows_channels_and_fields_the_recording_has() -> None:
    layout = json.loads(LAYOUT.read_text(encoding="utf-8"))
    panels = _panels(layout["layout"])
    assert sorted(panels) == sorted(layout["configById"])
    kinds = {p.split("!")[0] for p in panels}
    assert {"3D", "RosOut", "Plot", "RawMessages"} <= kinds
    config = layout["configById"]
    three_d = next(v for k, v in config.items() if k.startswith("3D!"))
    assert set(three_d["topics"]) <= set(ALL_CHANNELS) and "/scene" in three_d["topics"]
    raw = next(v for k, v in config.items() if k.startswith("RawMessages!"))
    assert raw["topicPath"] == "/working_set"
    series = FOXGLOVE_CHANNELS["/series"].schema()["properties"]
    missing = series["missing"]["items"]["properties"]
    for key, panel in config.items():
        if not key.startswith("Plot!"):
            continue
        for path in panel["paths"]:
            topic, _, rest = path["value"].partition(".")
            assert topic == "/series"
            field = rest.split("[")[0]
            assert field in series, path["value"]
            if "{" in rest:  # /series.missing[:]{cabin=="planner"}.missing
                assert rest.rsplit(".", 1)[1] in missing
