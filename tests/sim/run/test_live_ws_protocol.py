"""The live view as the Foxglove WebSocket protocol's own client library sees it.

``@foxglove/ws-protocol``'s ``FoxgloveClient`` (npm, pinned in ``tests/support/npm.py``)
offers only ``foxglove.websocket.v1``, the name Foxglove up to 1.87 offers too; the SDK's
server alone answers it with HTTP 400. Run on Node against a live run on 127.0.0.1
(``tests/support/foxglove/ws_protocol_client.js``), it must connect, see every channel,
the ``time`` capability and the run's time, and ``/board`` and ``/scan`` once per tick.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading

import pytest

from runtime.recording.format import LIVE_CHANNELS
from runtime.recording.timebase import TimeBase
from tests.support import npm
from tests.support.paths import SUPPORT

pytest.importorskip("foxglove", reason="the live view needs the foxglove extra")

from sim.run.harness import Simulation
from sim.run.live import LiveView

START = TimeBase(1_767_225_600_000_000_000)


@pytest.mark.node
@pytest.mark.slow
def test_the_protocols_own_client_connects_and_sees_the_run() -> None:
    modules = npm.node_modules("ws-protocol-1", npm.WS_PROTOCOL)
    live = LiveView(port=0)
    sim = Simulation("warehouse", seed=1, sinks=[live], realtime=True, time_base=START)
    stop = threading.Event()

    def drive() -> None:
        while not stop.is_set():
            sim.run(10, until_done=False)

    runner = threading.Thread(target=drive, daemon=True)
    runner.start()
    try:
        done = subprocess.run(
            ["node", str(SUPPORT / "foxglove" / "ws_protocol_client.js"), live.url, "40"],
            env={**os.environ, "NODE_PATH": str(modules)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        stop.set()
        runner.join(timeout=30)
        sim.close()
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["offered"] == out["protocol"] == "foxglove.websocket.v1"
    assert "time" in out["serverInfo"]["capabilities"]
    assert set(out["channels"]) == set(LIVE_CHANNELS)
    times = [int(t) for t in out["times"]]
    assert times == sorted(times) and all(t >= START.start_ns for t in times)
    board, stats = out["messages"]["/board"], out["messages"]["/stats"]
    assert board["count"] > 10
    assert len(set(board["ticks"])) == len(board["ticks"])  # one /board message per tick
    # the client subscribes channel by channel, so one may start a tick before another
    both = max(min(board["ticks"]), min(stats["ticks"]))
    seen = {t for t in board["ticks"] if t >= both}
    assert seen <= set(stats["ticks"]) | {max(stats["ticks"]) + 1}
    for topic in ("/scene", "/tf", "/robot/pose", "/series", "/working_set", "/scan"):
        assert out["messages"][topic]["count"] > 0, topic
    scans = out["messages"]["/scan"]["log_times"]
    assert len(scans) > 10 and len(set(scans)) == len(scans)  # one /scan message per tick
