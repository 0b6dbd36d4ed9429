"""The live view: a run's channels served over the Foxglove WebSocket protocol.

A ``LiveView`` is a message sink of the run's recorder (``runtime.recording.writer``):
every message the recording holds (tickwork's channels and the Foxglove ones of
``sim.run.view``) is also logged, with the same schema, bytes and log time, on a channel
of a WebSocket server of Foxglove's own SDK (``foxglove-sdk``, the ``foxglove`` extra),
so that Foxglove's "Open connection" watches the run as it happens, on the same time
axis as its recording. Two things differ from the file: ``/board`` is coalesced to one
message per tick (``LIVE_BOARD``: that tick's writes, in order), and the server
advertises the ``time`` capability and sends the run's time after every tick, so that a
viewer's clock is the run's, not its own.

The SDK's server listens on the loopback interface; a ``SubprotocolFront``
(``sim.run.subprotocol``) listens on ``host:port`` for viewers and relays to it, so that
clients that name the protocol ``foxglove.websocket.v1`` (older Foxglove builds, the
``@foxglove/ws-protocol`` client) connect as well as those that name it
``foxglove.sdk.v1``. Each view has a ``foxglove.Context`` of its own: two views in one
process never share channels.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import structlog

from runtime.errors import SettingError
from runtime.recording.format import BOARD, ENCODING, LIVE_BOARD, LIVE_CHANNELS, Channel
from sim.run.subprotocol import SubprotocolFront

DEFAULT_PORT = 8765
DEFAULT_HOST = "127.0.0.1"

log = structlog.get_logger("tickwork.live")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (a loopback address or ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    """How a viewer on this machine reaches ``host``: a wildcard address as loopback."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class LiveView:
    """A Foxglove WebSocket server on ``host:port`` (port 0: any free one) with a channel
    for every recording channel."""

    def __init__(
        self, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, name: str = "tickwork"
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
                name=name,
                host="127.0.0.1",
                port=0,
                context=self._context,
                capabilities=[foxglove.Capability.Time],
            )
        except Exception as exc:  # the SDK raises its own error types
            raise SettingError(f"cannot start the live view's server ({exc})") from None
        try:
            self.front = SubprotocolFront(host=host, port=port, target_port=int(self.server.port))
        except (OSError, socket.gaierror) as exc:
            self.server.stop()
            raise SettingError(
                f"cannot serve the live view on {host}:{port} ({exc.strerror or exc})"
            ) from None
        self.host = host
        if not is_loopback(host):
            log.warning(
                "live_view_exposed",
                host=host,
                port=self.port,
                hint="any machine that reaches this address can watch the run; the "
                "Foxglove WebSocket protocol has no authentication",
            )
        self._channels: dict[str, Any] = {
            topic: foxglove.Channel(
                topic,
                schema=foxglove.Schema(
                    name=c.schema_name, encoding="jsonschema", data=c.schema_bytes()
                ),
                message_encoding=ENCODING,
                context=self._context,
            )
            for topic, c in LIVE_CHANNELS.items()
        }
        self._board: list[bytes] = []
        self._tick = 0  # the tick being gathered, and its latest log time
        self._log_time = 0
        self.published = 0
        self.closed = False

    @property
    def port(self) -> int:
        return self.front.port

    @property
    def url(self) -> str:
        return f"ws://{_url_host(self.host)}:{self.port}"

    def publish(self, channel: Channel[Any], data: bytes, log_time: int) -> None:
        if self.closed:
            return
        self._log_time = log_time
        if channel.topic == BOARD.topic:  # sent with the tick's other writes at its end
            self._board.append(data)
            return
        self._channels[channel.topic].log(data, log_time=log_time)
        self.published += 1

    def end_tick(self, tick: int, log_time: int) -> None:
        """Send tick ``tick``'s board writes as one ``/board`` message, then the run's time."""
        if self.closed:
            return
        self._send_board(tick, log_time)
        self.server.broadcast_time(log_time)
        self._tick = tick + 1

    def _send_board(self, tick: int, log_time: int) -> None:
        if not self._board:
            return
        # the writes are already JSON objects of the recording's /board: joined, not re-encoded
        data = b'{"tick":%d,"changes":[%s]}' % (tick, b",".join(self._board))
        self._board = []
        self._channels[LIVE_BOARD.topic].log(data, log_time=log_time)
        self.published += 1

    def close(self) -> None:
        """Stop the server (clients are disconnected). Safe to call twice."""
        if self.closed:
            return
        self._send_board(self._tick, self._log_time)
        self.closed = True
        for channel in self._channels.values():
            channel.close()
        self.front.close()
        self.server.stop()
