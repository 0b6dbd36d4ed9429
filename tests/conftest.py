"""Test set-up: hypothesis profiles. ``ci`` extends hypothesis' built-in ``ci`` profile."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
import structlog
from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.support.fake_model"]  # the ``serve`` fixture: a scripted model server

settings.register_profile(
    "ci",
    parent=settings.get_profile("ci"),
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    """Logging configuration is process-wide: no test may leave its own to the next."""
    yield
    structlog.reset_defaults()
    root = logging.getLogger()  # configure_logging routes the standard library's logging too
    for handler in [h for h in root.handlers if type(h).__name__ == "_ToStructlog"]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)


@pytest.fixture(autouse=True)
def _collector_left_on() -> Iterator[None]:
    """A wall-clock loop switches the garbage collector off between its first tick and its
    ``close()``: a test that leaves one open must not leave the rest of its worker without
    a collector, and is told so."""
    import gc

    was = gc.isenabled()
    yield
    if was and not gc.isenabled():
        gc.enable()
        pytest.fail("the test left the garbage collector off: close every wall-clock loop")
