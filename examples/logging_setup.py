"""Choose how tickwork logs, once, at the start of an application."""

from runtime import configure_logging

configure_logging(json=True, level="info")  # JSON lines on stderr; json=False for a console
