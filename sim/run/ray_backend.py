"""Ray as a campaign's executor: a session for the campaign, and runs as Ray tasks.

A ``RaySession`` joins the Ray cluster at ``address`` or, without one, starts a local
Ray whose session folder (logs, sockets, spilled objects) is a temporary folder of the
session's own (in /tmp if the temporary directory's path is too long for Ray's
sockets); ``close`` shuts Ray down and removes that folder, so that a campaign leaves
nothing in the temporary directory. A session started while Ray was already initialised
in the process (a test, a notebook) uses that Ray and leaves it up.

A ``RayExecutor`` runs a round's runs as Ray tasks behind the
``concurrent.futures.Executor`` interface with at most ``max_workers`` of them submitted
at once (``--workers``; a local Ray would otherwise run one per core, a cluster one per
core of every node): the others wait in the executor, in order.

Ray prints its notices ("Token authentication is enabled" among them) through a logger
it sets up when imported; the command line adopts it (``runtime.logs.adopt_logger``), so
they are its own log events, at its level.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
import shutil
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from typing import Any


def quiet_worker() -> None:
    """A campaign reports failures in its results; its workers log only what is critical."""
    from runtime import configure_logging

    configure_logging(level="critical")


SOCKET_ROOM = 40
"""The longest session folder Ray can use: its sockets go some 60 characters below it, and
a Unix socket's path holds at most 107 bytes."""


def _session_folder() -> str:
    """A new folder for a local Ray's session: in the temporary directory, or in /tmp when
    that directory's path is too long for Ray's sockets (as macOS's is)."""
    folder = tempfile.mkdtemp(prefix="tickwork-ray-")
    if len(folder) > SOCKET_ROOM and os.path.isdir("/tmp"):
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="tickwork-ray-", dir="/tmp")
    return folder


class RaySession:
    """Ray, for one campaign: joined at ``address`` or started locally; ``ImportError``
    without Ray."""

    def __init__(self, *, address: str | None = None, working_dir: str | None = None) -> None:
        """``working_dir``: a folder every worker imports from (the user cabins' modules)."""
        import ray

        import cabins
        import runtime
        import sim

        self.ray = ray
        self.folder: str | None = None  # the local Ray's session folder, ours to remove
        self.started = False
        self.closed = False
        if ray.is_initialized():
            return
        settings: dict[str, Any] = {}
        if address is None:
            self.folder = _session_folder()
            settings["_temp_dir"] = self.folder
        try:
            # The job ships the driver's own packages: workers need no install of their own,
            # and a cluster with another tickwork installed still runs this code.
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                runtime_env={
                    "worker_process_setup_hook": quiet_worker,
                    "py_modules": [runtime, cabins, sim],
                    **({} if working_dir is None else {"working_dir": working_dir}),
                },
                **settings,
            )
        except BaseException:
            self._remove_folder()
            raise
        self.started = True

    def executor(self, max_workers: int) -> RayExecutor:
        """An executor of this session that runs at most ``max_workers`` tasks at once."""
        return RayExecutor(self, max_workers=max_workers)

    def _remove_folder(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def close(self) -> None:
        """Shut down the Ray this session started and remove its folder. Safe twice."""
        if self.closed:
            return
        self.closed = True
        if self.started:
            self.ray.shutdown()
        self._remove_folder()

    def __enter__(self) -> RaySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_Job = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], "cf.Future[Any]"]


class RayExecutor(cf.Executor):
    """Ray tasks behind the ``concurrent.futures.Executor`` interface, at most
    ``max_workers`` at once."""

    def __init__(self, session: RaySession, *, max_workers: int) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.session = session
        self.max_workers = max_workers
        self._remote: dict[Callable[..., Any], Any] = {}
        self._waiting: deque[_Job] = deque()
        self._running = 0
        self.most_running = 0  # the most tasks submitted to Ray at once
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        future: cf.Future[Any] = cf.Future()
        with self._lock:
            self._waiting.append((fn, args, kwargs, future))
        self._dispatch()
        return future

    def _dispatch(self) -> None:
        while True:
            with self._lock:
                if self._running >= self.max_workers or not self._waiting:
                    return
                fn, args, kwargs, outer = self._waiting.popleft()
                if not outer.set_running_or_notify_cancel():
                    continue  # cancelled while it waited
                self._running += 1
                self.most_running = max(self.most_running, self._running)
                remote = self._remote.get(fn)
                if remote is None:
                    remote = self._remote[fn] = self.session.ray.remote(max_retries=0)(fn)
            try:
                inner: cf.Future[Any] = remote.remote(*args, **kwargs).future()
            except BaseException as exc:
                self._finished(outer, None, exc)
                continue
            inner.add_done_callback(functools.partial(self._relay, outer=outer))

    def _relay(self, inner: cf.Future[Any], *, outer: cf.Future[Any]) -> None:
        exc = inner.exception()
        self._finished(outer, None if exc is not None else inner.result(), exc)

    def _finished(self, outer: cf.Future[Any], result: Any, exc: BaseException | None) -> None:
        with self._lock:
            self._running -= 1
        if exc is not None:
            outer.set_exception(exc)
        else:
            outer.set_result(result)
        self._dispatch()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel what still waits if asked; the Ray session stays up for the next round
        (``RaySession.close`` ends it)."""
        if cancel_futures:
            with self._lock:
                waiting, self._waiting = list(self._waiting), deque()
            for *_, future in waiting:
                future.cancel()


def ray_lost_errors() -> tuple[type[BaseException], ...]:
    from ray.exceptions import WorkerCrashedError

    return (WorkerCrashedError,)
