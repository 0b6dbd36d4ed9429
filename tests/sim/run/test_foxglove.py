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
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcap.writer import Writer

from runtime.recording.format import (
    ALL_CHANNELS,
    FOXGLOVE_CHANNELS,
    LIVE_CHANNELS,
    PROFILE,
    SCHEMA_VERSION,
)
from runtime.recording.reader import Recording, RecordingError
from sim.run.harness import Simulation
from sim.run.view import NO_RETURN, RETURN
from tests.support import npm
from tests.support.paths import ROOT, SUPPORT

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


LIVE_ONLY = [c for c in LIVE_CHANNELS.values() if c not in ALL_CHANNELS.values()]


@pytest.mark.parametrize(
    "channel",
    [*ALL_CHANNELS.values(), *LIVE_ONLY],
    ids=lambda c: f"{c.topic}:{c.schema_name}",
)
def test_every_schema_uses_only_forms_foxglove_parses(channel: Any) -> None:
    assert _parser_problems(channel.schema(), channel.topic) == []


def test_well_known_channels_carry_foxglove_schema_names() -> None:
    names = {c.topic: c.schema_name for c in FOXGLOVE_CHANNELS.values()}
    assert names["/scene"] == "foxglove.SceneUpdate"
    assert names["/log"] == "foxglove.Log"
    assert names["/tf"] == "foxglove.FrameTransform"
    assert names["/robot/pose"] == "foxglove.PoseInFrame"
    assert names["/scan"] == "foxglove.LaserScan"


def test_a_recording_of_format_1_is_refused_naming_the_versions(tmp_path: Path) -> None:
    old = tmp_path / "old.mcap"
    with old.open("wb") as fh:
        writer = Writer(fh)
        writer.start(profile=PROFILE, library="tickwork 0.1")
        writer.add_metadata("run", {"schema_version": "1"})
        writer.finish()  # type: ignore[no-untyped-call]
    with pytest.raises(RecordingError, match=rf"format version 1.*format version {SCHEMA_VERSION}"):
        Recording.open(old)


@pytest.mark.slow
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


@pytest.fixture(scope="module")
def node_modules() -> Path:
    return npm.node_modules("foxglove-1", npm.FOXGLOVE_READER)


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
    # the safety scanner, validated against @foxglove/schemas' LaserScan: one a tick
    assert out["channels"]["/scan"]["schema"] == "foxglove.LaserScan"
    assert out["channels"]["/scan"]["messages"] == out["channels"]["/tf"]["messages"] == 300


LAYOUT = ROOT / "sim" / "run" / "foxglove_layout.json"


def _alpha(colour: str) -> float:
    """The alpha of a Foxglove settings colour ``rgba(r, g, b, a)``."""
    match = re.fullmatch(r"rgba\(\s*\d+,\s*\d+,\s*\d+,\s*([\d.]+)\)", colour)
    assert match is not None, colour
    return float(match.group(1))


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
    # the scanner shows (a laser scan topic is hidden unless enabled), its returns only:
    # intensity NO_RETURN is coloured fully transparent, RETURN opaque
    scan = three_d["topics"]["/scan"]
    assert scan["visible"] is True
    assert (scan["colorField"], scan["colorMode"]) == ("intensity", "gradient")
    assert (scan["minValue"], scan["maxValue"]) == (NO_RETURN, RETURN)
    assert [_alpha(c) for c in scan["gradient"]] == [0.0, 1.0]
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


_PATH = re.compile(r"^/series\.(\w+)(?:\[:\]\{(\w+)==\"([^\"]+)\"\}\.(\w+))?$")


def _evaluate(path: str, message: dict[str, Any]) -> list[Any]:
    """A Plot message path of the two forms the layout uses, as Foxglove evaluates it:
    ``/series.field`` and ``/series.list[:]{key=="value"}.field``."""
    match = _PATH.match(path)
    assert match is not None, f"a message path the layout should not use: {path}"
    field, key, value, inner = match.groups()
    if key is None:
        return [message[field]]
    return [entry[inner] for entry in message[field] if entry[key] == value]


def test_every_plot_path_of_the_layout_evaluates_to_numbers_on_a_recording(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.mcap"
    sim = Simulation("warehouse", seed=0, capacity=16, record=path)  # small: under pressure
    try:
        sim.run(60)
    finally:
        sim.close()
    series = list(Recording.open(path).messages(FOXGLOVE_CHANNELS["/series"]))
    layout = json.loads(LAYOUT.read_text(encoding="utf-8"))
    plotted: set[str] = set()
    for key, panel in layout["configById"].items():
        if not key.startswith("Plot!"):
            continue
        for entry in panel["paths"]:
            plotted.add(entry["value"])
            for message in series:
                values = _evaluate(entry["value"], message)
                assert len(values) == 1, (entry["value"], message["tick"])
                assert isinstance(values[0], int | float) and not isinstance(values[0], bool)
    # the numbers a user watches are typed fields the layout plots
    for field in ("battery", "speed", "x", "y", "heading", "held", "capacity", "lost"):
        assert f"/series.{field}" in plotted, field
    for cabin in ("planner", "executor", "monitor"):
        assert f'/series.missing[:]{{cabin=="{cabin}"}}.missing' in plotted
        assert f'/series.missing[:]{{cabin=="{cabin}"}}.evicted' in plotted
    assert max(m["lost"] for m in series) > 0  # the pressure of a small capacity shows
    poses = list(Recording.open(path).messages(FOXGLOVE_CHANNELS["/robot/pose"]))
    last = poses[-1]["pose"]["position"]
    assert (series[-1]["x"], series[-1]["y"]) == (last["x"], last["y"])
