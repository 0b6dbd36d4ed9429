"""The live view, tested with a WebSocket client of its own on 127.0.0.1: it subscribes
over the Foxglove WebSocket protocol, receives scene and pose messages that decode as
their channels' records, and disconnects while the run goes on."""

from __future__ import annotations

import json
import struct
import threading
from typing import Any

import pytest

from runtime.errors import SettingError
from runtime.recording.format import ALL_CHANNELS, ROBOT_POSE, SCENE

pytest.importorskip("foxglove", reason="the live view needs the foxglove extra")
client = pytest.importorskip("websockets.sync.client", reason="the test needs websockets")

from sim.run.harness import Simulation  # noqa: E402
from sim.run.live import LiveView  # noqa: E402

SUBPROTOCOLS: Any = ["foxglove.sdk.v1", "foxglove.websocket.v1"]
MESSAGE_DATA = 0x01


def _advertised(ws: Any) -> dict[str, dict[str, Any]]:
    channels: dict[str, dict[str, Any]] = {}
    while not {SCENE.topic, ROBOT_POSE.topic} <= set(channels):
        frame = ws.recv(timeout=10)
        if isinstance(frame, str):
            message = json.loads(frame)
            if message.get("op") == "advertise":
                channels.update({c["topic"]: c for c in message["channels"]})
    return channels


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
            channels = _advertised(ws)
            assert set(ALL_CHANNELS) <= set(channels)
            assert channels[SCENE.topic]["schemaName"] == "foxglove.SceneUpdate"
            wanted = {1: SCENE, 2: ROBOT_POSE}
            ws.send(
                json.dumps(
                    {
                        "op": "subscribe",
                        "subscriptions": [
                            {"id": sid, "channelId": channels[c.topic]["id"]}
                            for sid, c in wanted.items()
                        ],
                    }
                )
            )
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
    first = LiveView(port=0)
    try:
        assert main(["run", "--live", "--port", str(first.port), "--ticks", "1", "--json"]) == 2
    finally:
        first.close()
