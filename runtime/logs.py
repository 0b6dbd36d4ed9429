"""Logging set-up: structlog key-value events, rendered as the caller chooses.

Library code only emits events (``structlog.get_logger(...)``); an application
calls ``configure_logging`` once to pick JSON lines or console rendering and a
level. Libraries that log through the standard library's ``logging`` (Foxglove's SDK,
whose Rust core logs lines such as "Dropping client ...: handshake failed") are rendered
the same way, as events named by their logger, so that ``--json`` stderr holds JSON lines
only. Nothing here prints on its own.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

from runtime.errors import SettingError

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def debug_enabled(logger: Any) -> bool:
    """Whether a debug event would go anywhere. Until the application configures structlog
    (its default prints every level to standard output), the runtime keeps debug quiet."""
    if not structlog.is_configured():
        return False
    check = getattr(logger.bind(), "is_enabled_for", None)
    return True if check is None else bool(check(logging.DEBUG))


class _ToStructlog(logging.Handler):
    """Hands a standard-library log record to structlog, as an event of its logger."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            structlog.get_logger().log(record.levelno, record.getMessage(), logger=record.name)
        except Exception:  # a log line must never break the program that logs it
            self.handleError(record)


def _route_standard_logging(threshold: int) -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _ToStructlog)]:
        root.removeHandler(handler)
    root.addHandler(_ToStructlog(threshold))
    root.setLevel(threshold)


def adopt_logger(name: str) -> None:
    """Render the standard-library logger ``name`` (and those below it) as the others: for a
    library that gives its logger a handler of its own at import (Ray prints notices such as
    "Token authentication is enabled" that way), remove that handler and let its lines go
    where ``configure_logging`` sends every line. Call it after importing the library."""
    logger = logging.getLogger(name)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.propagate = True
    logger.setLevel(logging.NOTSET)


def configure_logging(
    *, json: bool = False, level: str = "info", stream: TextIO | None = None
) -> None:
    """Render runtime events as JSON lines (``json=True``) or for a console, at ``level``."""
    try:
        threshold = _LEVELS[level.lower()]
    except KeyError:
        raise SettingError(
            f"unknown log level {level!r}; use one of {', '.join(_LEVELS)}"
        ) from None
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(sort_keys=True)
        if json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(stream if stream is not None else sys.stderr),
        cache_logger_on_first_use=False,
    )
    _route_standard_logging(threshold)
