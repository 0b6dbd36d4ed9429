"""The live view: a run's channels served over the Foxglove WebSocket protocol.

A ``LiveView`` is a message sink of the run's recorder (``runtime.recording.writer``):
every message the recording holds (tickwork's channels and the Foxglove ones of
``sim.run.view``) is also logged, with the same schema and bytes, on a channel of a
WebSocket server of Foxglove's own SDK (``foxglove-sdk``, the ``foxglove`` extra), so
that Foxglove's "Open connection" watches the run as it happens. Each view has a
``foxglove.Context`` of its own: two views in one process never share channels.
"""

from __future__ import annotations

from typing import Any

from runtime.errors import SettingError
from runtime.recording.format import ALL_CHANNELS, ENCODING, Channel

DEFAULT_PORT = 8765


class LiveView:
    """A Foxglove WebSocket server on ``host:port`` (port 0: any free one) with a channel
    for every recording channel."""

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, name: str = "tickwork"
    ) -> None:
        try:
            import foxglove
        except ImportError:
            raise SettingError(
                "the live view needs Foxglove's SDK: pip install -e '.[foxglove]'"
            ) from None
        if not 0 <= port <= 65535:
            raise SettingError(f"port must be 0..65535, got {port}")
        self._context = foxglove.Context()
        try:
            self.server = foxglove.start_server(
                name=name, host=host, port=port, context=self._context
            )
        except Exception as exc:  # the SDK raises its own error types for a busy port
            raise SettingError(f"cannot serve the live view on {host}:{port} ({exc})") from None
        self.host = host
        self._channels: dict[str, Any] = {
            topic: foxglove.Channel(
                topic,
                schema=foxglove.Schema(
                    name=c.schema_name, encoding="jsonschema", data=c.schema_bytes()
                ),
                message_encoding=ENCODING,
                context=self._context,
            )
            for topic, c in ALL_CHANNELS.items()
        }
        self.published = 0
        self.closed = False

    @property
    def port(self) -> int:
        return int(self.server.port)

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def publish(self, channel: Channel[Any], data: bytes, log_time: int) -> None:
        if not self.closed:
            self._channels[channel.topic].log(data, log_time=log_time)
            self.published += 1

    def end_tick(self, tick: int, log_time: int) -> None:
        """A tick's messages were all published (each was sent as it came)."""

    def close(self) -> None:
        """Stop the server (clients are disconnected). Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        for channel in self._channels.values():
            channel.close()
        self.server.stop()
