"""The live view, tested with WebSocket clients of its own on 127.0.0.1: they subscribe
over the Foxglove WebSocket protocol (under either of its names), receive messages that
decode as their channels' records at the recording's log times, the run's time after
every tick and one ``/board`` and one ``/scan`` message per tick, and disconnect while the
run goes on.
``test_live_ws_protocol.py`` connects the protocol's own client library on Node."""

from __future__ import annotations

import io
import json
import logging
import struct
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import structlog

from runtime.errors import SettingError
from runtime.recording.format import (
    ALL_CHANNELS,
    BOARD,
    LIVE_BOARD,
    LIVE_CHANNELS,
    ROBOT_POSE,
    SCAN,
    SCENE,
    STATS,
)
from runtime.recording.reader import Recording
from runtime.recording.timebase import TimeBase

pytest.importorskip("foxglove", reason="the live view needs the foxglove extra")
client = pytest.importorskip("websockets.sync.client", reason="the test needs websockets")

from sim.run.harness import Simulation  # noqa: E402
from sim.run.live import LiveView, is_loopback  # noqa: E402

SUBPROTOCOLS: Any = ["foxglove.sdk.v1", "foxglove.websocket.v1"]
MESSAGE_DATA = 0x01
TIME = 0x02
START = TimeBase(1_767_225_600_000_000_000)  # 2026-01-01T00:00:00Z


def _advertised(ws: Any, wanted: set[str]) -> dict[str, dict[str, Any]]:
    channels: dict[str, dict[str, Any]] = {}
    while not wanted <= set(channels):
        frame = ws.recv(timeout=10)
        if isinstance(frame, str):
            message = json.loads(frame)
            if message.get("op") == "advertise":
                channels.update({c["topic"]: c for c in message["channels"]})
    return channels


def _subscribe(ws: Any, channels: dict[str, dict[str, Any]], topics: list[str]) -> dict[int, str]:
    by_id = {sid: topic for sid, topic in enumerate(topics, start=1)}
    subscriptions = [{"id": sid, "channelId": channels[t]["id"]} for sid, t in by_id.items()]
    ws.send(json.dumps({"op": "subscribe", "subscriptions": subscriptions}))
    return by_id


@pytest.mark.slow
def test_a_client_subscribes_receives_scene_and_pose_and_leaves() -> None:
    live = LiveView(port=0)
    sim = Simulation("warehouse", seed=2, sinks=[live])
    stop = threading.Event()

    def drive() -> None:
        while not stop.is_set():
            sim.run(20, until_done=False)

    runner = threading.Thread(target=drive, daemon=True)
    try:
        with client.connect(
            live.url, subprotocols=SUBPROTOCOLS, open_timeout=10, close_timeout=1
        ) as ws:
            channels = _advertised(ws, {SCENE.topic, ROBOT_POSE.topic})
            assert set(ALL_CHANNELS) <= set(channels)
            assert channels[SCENE.topic]["schemaName"] == "foxglove.SceneUpdate"
            wanted = {1: SCENE, 2: ROBOT_POSE}
            _subscribe(ws, channels, [SCENE.topic, ROBOT_POSE.topic])
            runner.start()
            got: dict[str, Any] = {}
            while len(got) < len(wanted):
                frame = ws.recv(timeout=10)
                if isinstance(frame, bytes) and frame[0] == MESSAGE_DATA:
                    (sid,) = struct.unpack_from("<I", frame, 1)
                    channel = wanted[sid]
                    got.setdefault(channel.topic, channel.decode(json.loads(frame[13:])))
        scene, pose = got[SCENE.topic], got[ROBOT_POSE.topic]
        assert scene["entities"] and all(e["frame_id"] == "world" for e in scene["entities"])
        assert pose["frame_id"] == "world"
        stop.set()
        runner.join(timeout=30)
        ticks = sim.loop.tick
        sim.run(5, until_done=False)  # the run goes on after the client left
        assert sim.loop.tick == ticks + 5
    finally:
        stop.set()
        if runner.is_alive():
            runner.join(timeout=30)
        sim.close()
    assert live.closed  # closed with the recorder
    assert live.published > 0


@pytest.mark.parametrize("offered", [["foxglove.websocket.v1"], ["foxglove.sdk.v1"]])
def test_a_client_offering_either_name_of_the_protocol_connects(offered: Any) -> None:
    """Foxglove up to 1.87 and @foxglove/ws-protocol offer only foxglove.websocket.v1,
    which foxglove-sdk's server refuses (HTTP 400) unless the front renames it."""
    live = LiveView(port=0)
    try:
        with client.connect(live.url, subprotocols=offered, open_timeout=10, close_timeout=1) as ws:
            assert ws.subprotocol == offered[0]
            info = json.loads(ws.recv(timeout=10))
            assert info["op"] == "serverInfo"
            assert "time" in info["capabilities"]
            channels = _advertised(ws, set(LIVE_CHANNELS))
            assert channels[BOARD.topic]["schemaName"] == LIVE_BOARD.schema_name
    finally:
        live.close()


def test_a_client_offering_neither_name_is_refused_and_logged() -> None:
    live = LiveView(port=0)
    try:
        offered: Any = ["nope"]
        with structlog.testing.capture_logs() as logs, pytest.raises(Exception, match="400"):
            client.connect(live.url, subprotocols=offered, open_timeout=10)
        refused = [e for e in logs if e["event"] == "live_client_refused"]
        assert refused and refused[0]["offered"] == ["nope"]
        assert "foxglove.websocket.v1" in refused[0]["accepted"]
    finally:
        live.close()


def _collect(ws: Any, by_id: dict[int, str], until: Any) -> tuple[dict[str, list[Any]], list[int]]:
    """Messages (log time, decoded JSON) by topic, and the time messages, until
    ``until(messages, times)``."""
    messages: dict[str, list[Any]] = defaultdict(list)
    times: list[int] = []
    while not until(messages, times):
        frame = ws.recv(timeout=10)
        if not isinstance(frame, bytes):
            continue
        if frame[0] == MESSAGE_DATA:
            sid, log_time = struct.unpack_from("<IQ", frame, 1)
            messages[by_id[sid]].append((log_time, json.loads(frame[13:])))
        elif frame[0] == TIME:
            times.append(struct.unpack_from("<Q", frame, 1)[0])
    return messages, times


def test_live_messages_have_the_recordings_time_axis_and_board_and_scan_come_once_per_tick(
    tmp_path: Path,
) -> None:
    live = LiveView(port=0)
    path = tmp_path / "run.mcap"
    sim = Simulation("warehouse", seed=4, record=path, sinks=[live], time_base=START)
    ticks = 12
    try:
        with client.connect(
            live.url, subprotocols=SUBPROTOCOLS, open_timeout=10, close_timeout=1
        ) as ws:
            channels = _advertised(ws, set(LIVE_CHANNELS))
            by_id = _subscribe(ws, channels, [BOARD.topic, STATS.topic, SCAN.topic])
            for _ in range(100):  # until the server has taken the subscription
                sim.run(1, until_done=False)
                if _collect(ws, by_id, lambda m, t: bool(m) or len(t) == 1)[0]:
                    break
            first = sim.loop.tick
            sim.run(ticks, until_done=False)
            last = first + ticks - 1
            end = START.log_time(last * sim.dt)
            messages, times = _collect(
                ws,
                by_id,
                lambda m, t: (  # data and time messages travel apart: wait for each
                    all(any(lt == end for lt, _ in m[x]) for x in by_id.values()) and end in t
                ),
            )
    finally:
        sim.close()
    span = range(first, first + ticks)
    # the run's time after every tick, on the recording's axis: start + run time
    assert times[-ticks:] == [START.log_time(t * sim.dt) for t in span]
    stats = [(lt, m) for lt, m in messages[STATS.topic] if m["tick"] >= first]
    assert [m["tick"] for _, m in stats] == list(span)
    assert [lt for lt, _ in stats] == [START.log_time(t * sim.dt) for t in span]
    # the scanner too: one message a tick, each the recording's of that tick
    scans = [(lt, SCAN.decode(m)) for lt, m in messages[SCAN.topic]]
    scans = [(lt, m) for lt, m in scans if lt >= START.log_time(first * sim.dt)]
    assert [lt for lt, _ in scans] == [START.log_time(t * sim.dt) for t in span]
    board = [LIVE_BOARD.decode(m) for _, m in messages[BOARD.topic]]
    board = [m for m in board if m["tick"] >= first]
    assert [m["tick"] for m in board] == list(span)  # one message per tick
    recording = Recording.open(path)
    for message in board:  # the same writes as the recording's, in order
        assert message["changes"] == recording.at(BOARD, message["tick"])
        assert len(message["changes"]) > 1
    for tick, (_, scan) in zip(span, scans, strict=True):
        assert [scan] == recording.at(SCAN, tick)
    run = recording.metadata
    assert TimeBase.from_metadata(run) == START
    assert run["start_time"] == "2026-01-01T00:00:00.000Z"


def test_serving_beyond_this_machine_is_warned_and_a_bad_address_refused() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    with structlog.testing.capture_logs() as logs:
        wide = LiveView(host="0.0.0.0", port=0)
        wide.close()
        narrow = LiveView(host="127.0.0.1", port=0)
        narrow.close()
    exposed = [e for e in logs if e["event"] == "live_view_exposed"]
    assert len(exposed) == 1 and exposed[0]["host"] == "0.0.0.0"
    assert wide.url == f"ws://127.0.0.1:{wide.port}"
    with pytest.raises(SettingError, match=r"cannot serve the live view on no\.such"):
        LiveView(host="no.such.host.invalid", port=0)


def test_a_busy_port_is_a_setting_error() -> None:
    first = LiveView(port=0)
    try:
        with pytest.raises(SettingError, match="cannot serve the live view"):
            LiveView(port=first.port)
    finally:
        first.close()


def test_the_cli_refuses_a_port_without_live_and_a_busy_port(tmp_path: Any) -> None:
    from sim.cli.app import main

    assert main(["run", "--port", "9999", "--ticks", "1"]) == 2
    assert main(["run", "--host", "0.0.0.0", "--ticks", "1"]) == 2
    first = LiveView(port=0)
    try:
        assert main(["run", "--live", "--port", str(first.port), "--ticks", "1", "--json"]) == 2
    finally:
        first.close()


def test_the_cli_says_which_port_it_serves_and_keeps_json_stderr_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sim.cli.app import main

    assert main(["run", "--live", "--port", "0", "--ticks", "3", "--json"]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in err.splitlines()]  # every stderr line is JSON
    live = lines[0]["live"]
    assert live["port"] > 0 and live["url"] == f"ws://127.0.0.1:{live['port']}"
    assert json.loads(out)["live"] == live


def test_standard_library_log_lines_are_rendered_as_json_events() -> None:
    """foxglove-sdk's Rust core logs through Python's logging ("Dropping client ...")."""
    from runtime import configure_logging

    stream = io.StringIO()
    configure_logging(json=True, level="warning", stream=stream)
    logging.getLogger("foxglove.websocket.server").warning("Dropping client x: handshake failed")
    logging.getLogger("foxglove.websocket.server").info("Started server")  # below the level
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines == [
        {
            "event": "Dropping client x: handshake failed",
            "level": "warning",
            "logger": "foxglove.websocket.server",
        }
    ]
