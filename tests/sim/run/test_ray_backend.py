"""Campaigns on Ray (sim.run.ray_backend): ``--workers`` bounds the tasks in flight, Ray's
notices stay off a ``--json`` campaign's stderr, and no session folder is left behind."""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from sim.run.ray_backend import RayExecutor
from tests.support.paths import ROOT


class _Task:
    def __init__(self, ray: _FakeRay, fn: Any) -> None:
        self.ray, self.fn = ray, fn

    def remote(self, *args: Any) -> Any:
        future: cf.Future[Any] = cf.Future()
        self.ray.started.append((args, future))
        return type("Ref", (), {"future": lambda _self: future})()


class _FakeRay:
    """Ray's ``remote`` as the executor uses it; each task's future is the test's to end."""

    def __init__(self) -> None:
        self.started: list[tuple[tuple[Any, ...], cf.Future[Any]]] = []

    def remote(self, **_options: Any) -> Any:
        return lambda fn: _Task(self, fn)


def _executor(workers: int) -> tuple[RayExecutor, _FakeRay]:
    ray = _FakeRay()
    session: Any = type("Session", (), {"ray": ray})()
    return RayExecutor(session, max_workers=workers), ray


def test_one_worker_means_one_task_in_flight_and_the_rest_wait_in_order() -> None:
    executor, ray = _executor(1)
    futures = [executor.submit(str, n) for n in range(4)]
    assert [args for args, _ in ray.started] == [(0,)]  # the old executor started all four
    ray.started[0][1].set_result("a")
    assert futures[0].result() == "a"
    assert [args for args, _ in ray.started] == [(0,), (1,)]
    ray.started[1][1].set_exception(RuntimeError("lost"))
    with pytest.raises(RuntimeError, match="lost"):
        futures[1].result()
    executor.shutdown(cancel_futures=True)  # what still waits is cancelled
    assert futures[3].cancelled()
    ray.started[2][1].set_result("c")
    assert futures[2].result() == "c"
    assert executor.most_running == 1
    assert len(ray.started) == 3


def test_more_workers_run_that_many_at_once() -> None:
    executor, ray = _executor(3)
    futures = [executor.submit(str, n) for n in range(5)]
    assert len(ray.started) == 3
    for _, future in list(ray.started):
        future.set_result("x")
    for _, future in ray.started[3:]:
        future.set_result("y")
    assert [f.result() for f in futures] == ["x", "x", "x", "y", "y"]
    assert executor.most_running == 3
    with pytest.raises(ValueError, match="at least 1"):
        _executor(0)


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (the dev extra installs it: pip install -e '.[dev]')",
)
@pytest.mark.slow
def test_a_json_ray_campaign_keeps_stderr_json_and_leaves_no_session_folder(
    request: pytest.FixtureRequest,
) -> None:
    temp = Path(tempfile.mkdtemp(prefix="tw-", dir="/tmp"))  # short: Ray's sockets go below
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
    env = {
        **{k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"},
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(temp),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "campaign",
            "--faults",
            "none",
            "--seeds",
            "0",
            "--ticks",
            "60",
            "--backend",
            "ray",
            "--workers",
            "1",
            "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["backend"] == "ray" and len(report["runs"]) == 1
    assert "Token authentication" not in done.stderr
    for line in done.stderr.splitlines():
        json.loads(line)  # nothing but JSON lines (Ray's notices are below --json's level)
    assert list(temp.iterdir()) == []  # Ray's session folder went with the campaign
