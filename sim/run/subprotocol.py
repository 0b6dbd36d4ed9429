"""A front for the live view's server that also answers to the protocol's older name.

Foxglove's SDK serves the Foxglove WebSocket protocol under the subprotocol name
``foxglove.sdk.v1`` and refuses (HTTP 400) a client that offers only the name the
protocol had before, ``foxglove.websocket.v1``: Foxglove up to 1.87, Lichtblick before
1.22 and the ``FoxgloveClient`` of ``@foxglove/ws-protocol`` offer only that. Foxglove
states that the two names are one protocol (the new name marks the SDK's servers), so a
``SubprotocolFront`` listens where the viewer connects and relays every connection, byte
for byte, to the SDK's server on the loopback interface; in the opening handshake only,
it renames an offered ``foxglove.websocket.v1`` to ``foxglove.sdk.v1`` and the server's
answer back, so each side sees the name it speaks. A client that offers ``foxglove.sdk.v1``
is relayed untouched; one that offers neither is relayed too (the server refuses it) and
logged as ``live_client_refused`` with the names it offered.

The front runs an asyncio loop on a thread of its own; ``close`` stops it and every
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

CURRENT = "foxglove.sdk.v1"
"""The name foxglove-sdk's server accepts."""
LEGACY = ("foxglove.websocket.v1",)
"""Older names of the same protocol, renamed in the handshake."""
HEAD_LIMIT = 16 * 1024
"""The largest HTTP head (request or response) the front reads before it gives up."""
_END = b"\r\n\r\n"
_HEADER = "sec-websocket-protocol"

log = structlog.get_logger("tickwork.live")


class HandshakeError(Exception):
    """A head that is not an HTTP head of at most ``HEAD_LIMIT`` bytes."""


@dataclass(frozen=True, slots=True)
class Head:
    """An HTTP request or response head: its first line and its header lines, as sent."""

    start: str
    headers: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, raw: bytes) -> Head:
        lines = raw.decode("latin-1").split("\r\n")
        headers = []
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep:
                raise HandshakeError(f"a header line without a colon: {line[:60]!r}")
            headers.append((name.strip(), value.strip()))
        return cls(lines[0], tuple(headers))

    def protocols(self) -> list[str]:
        """The subprotocols named (every ``Sec-WebSocket-Protocol`` header, in order)."""
        return [
            name.strip()
            for key, value in self.headers
            if key.lower() == _HEADER
            for name in value.split(",")
            if name.strip()
        ]

    def with_protocol(self, name: str) -> Head:
        """This head with one ``Sec-WebSocket-Protocol: name`` in place of those it had."""
        kept = [(k, v) for k, v in self.headers if k.lower() != _HEADER]
        return Head(self.start, (*kept, ("Sec-WebSocket-Protocol", name)))

    def encode(self) -> bytes:
        lines = [self.start, *(f"{k}: {v}" for k, v in self.headers)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def renamed_offer(offered: Sequence[str]) -> str | None:
    """The legacy name to rename in a handshake that offers ``offered``, or None when it
    should pass untouched (it offers the current name, or no name the front knows)."""
    if CURRENT in offered:
        return None
    return next((name for name in offered if name in LEGACY), None)


async def _read_head(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """An HTTP head (through its blank line) and whatever bytes followed it in the read."""
    data = b""
    while _END not in data:
        if len(data) > HEAD_LIMIT:
            raise HandshakeError(f"no end of the HTTP head within {HEAD_LIMIT} bytes")
        chunk = await reader.read(4096)
        if not chunk:
            raise HandshakeError("the connection closed inside the HTTP head")
        data += chunk
    end = data.index(_END) + len(_END)
    return data[:end], data[end:]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            writer.close()


class SubprotocolFront:
    """Serves ``host:port`` (0: any free port) as a front for the WebSocket server at
    ``127.0.0.1:target_port``; ``OSError`` when the address cannot be bound."""

    def __init__(self, *, host: str, port: int, target_port: int, timeout: float = 10.0) -> None:
        self.target_port = target_port
        self.renamed = 0  # connections whose handshake named the protocol by its older name
        self.relayed = 0
        self._loop = asyncio.new_event_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="live-front")
        self._thread.daemon = True
        self._thread.start()
        try:
            self._server = asyncio.run_coroutine_threadsafe(
                asyncio.start_server(self._serve, host, port), self._loop
            ).result(timeout)
        except BaseException:
            self._stop_loop()
            raise
        self.port = int(self._server.sockets[0].getsockname()[1])
        self.closed = False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        upstream: asyncio.StreamWriter | None = None
        try:
            raw, rest = await _read_head(reader)
            request = Head.parse(raw)
            offered = request.protocols()
            legacy = renamed_offer(offered)
            if legacy is not None:
                request = request.with_protocol(CURRENT)
                self.renamed += 1
            elif CURRENT not in offered:
                log.warning(
                    "live_client_refused",
                    offered=offered,
                    accepted=[CURRENT, *LEGACY],
                    hint="a Foxglove WebSocket client offers one of the accepted names",
                )
            up_reader, upstream = await asyncio.open_connection("127.0.0.1", self.target_port)
            upstream.write(request.encode() + rest)
            await upstream.drain()
            if legacy is not None:
                raw, rest = await _read_head(up_reader)
                response = Head.parse(raw)
                if CURRENT in response.protocols():
                    response = response.with_protocol(legacy)
                writer.write(response.encode() + rest)
                await writer.drain()
            self.relayed += 1
            await asyncio.gather(_pipe(reader, upstream), _pipe(up_reader, writer))
        except (HandshakeError, UnicodeError) as exc:
            log.warning("live_client_dropped", reason=str(exc))
        except (ConnectionError, OSError):
            pass
        finally:
            for end in (writer, upstream):
                if end is not None:
                    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
                        end.close()
            if task is not None:
                self._tasks.discard(task)

    async def _shutdown(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    def close(self) -> None:
        """Stop listening and end every relayed connection. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._stop_loop()
