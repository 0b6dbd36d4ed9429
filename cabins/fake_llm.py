"""A local OpenAI-compatible chat-completions server that answers from a script.

``FakeLLMServer`` serves ``POST /v1/chat/completions`` on 127.0.0.1 from a thread (the
standard library's ``http.server``), so tests and benchmarks can drive an LLM cabin
through the real ``openai`` client, and see it meet real latency and real failures:
each request gets the next ``FakeReply`` of the script (the last one repeats), which
may take ``delay`` seconds, answer with an HTTP error status (429, 500, ...) in OpenAI's
error shape (with ``error_code``, e.g. ``context_length_exceeded``, and extra ``headers``
such as ``Retry-After``; a ``Date`` among them replaces the server's own), close the
connection without answering (``drop``), send its body one byte at a time (``trickle``),
stop for the length limit, or refuse (``refusal``, OpenAI's ``message.refusal``). Every
request body is kept in ``requests``. Closing the server wakes the requests it is delaying,
so a test never waits on it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLMServer", "FakeReply"]


@dataclass(frozen=True, slots=True)
class FakeReply:
    """One scripted answer: an assistant message (content and tool calls), or a failure."""

    content: str | None = "done"
    tool_calls: tuple[tuple[str, str | Mapping[str, Any]], ...] = ()
    finish_reason: str | None = None
    """Default: ``tool_calls`` when there are tool calls, else ``stop``."""
    delay: float = 0.0
    status: int = 200
    drop: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    trickle: float = 0.0
    """Seconds between the body's bytes: the headers at once, then one byte at a time (a
    server that keeps a request going forever without tripping a read timeout)."""
    refusal: str | None = None
    """The model declines: ``message.refusal`` holds why (``content`` is then usually None)."""
    error_code: str | None = None
    """With an error ``status``: the error's ``code`` (e.g. ``context_length_exceeded``)."""

    @classmethod
    def calls(cls, *calls: tuple[str, str | Mapping[str, Any]], delay: float = 0.0) -> FakeReply:
        return cls(content=None, tool_calls=tuple(calls), delay=delay)

    def error_body(self) -> dict[str, Any]:
        """The body of an error ``status``, in OpenAI's shape."""
        code = f" ({self.error_code})" if self.error_code else ""
        return {
            "error": {
                "message": f"scripted HTTP {self.status}{code}",
                "type": _ERROR_TYPES.get(self.status, "server_error"),
                "code": self.error_code,
            }
        }

    def body(self, request: Mapping[str, Any], number: int) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.content,
            "refusal": self.refusal,
        }
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{i}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for i, (name, args) in enumerate(self.tool_calls)
            ]
        finish = self.finish_reason or ("tool_calls" if self.tool_calls else "stop")
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": str(request.get("model", "fake")),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


Script = FakeReply | Callable[[Mapping[str, Any]], FakeReply]


class FakeLLMServer:
    """A scripted OpenAI-compatible server on 127.0.0.1; use it as a context manager.

    ``url`` is the base URL to give a client (``http://127.0.0.1:PORT/v1``).
    """

    def __init__(self, script: Sequence[Script] = (FakeReply(),)) -> None:
        if not script:
            raise ValueError("a FakeLLMServer needs at least one reply")
        self._script = list(script)
        self._next = 0
        self._lock = threading.Lock()
        self.closing = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-llm-server",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def reply_for(self, request: dict[str, Any]) -> tuple[FakeReply, int]:
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            script = self._script[min(self._next, len(self._script) - 1)]
            self._next += 1
        reply = script(request) if callable(script) else script
        return reply, number

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a test reads ``requests`` instead."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                request = {}
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "x"}})
                return
            reply, number = server.reply_for(request if isinstance(request, dict) else {})
            if reply.delay > 0 and server.closing.wait(reply.delay):
                self.close_connection = True
                return
            if reply.drop:
                self.close_connection = True  # no answer at all: the client sees a disconnect
                return
            if reply.status != 200:
                self._send(reply.status, reply.error_body(), reply.headers)
                return
            self._send(200, reply.body(request, number), reply.headers, trickle=reply.trickle)

        def _send(
            self,
            status: int,
            body: Mapping[str, Any],
            headers: Mapping[str, str] = {},
            *,
            trickle: float = 0.0,
        ) -> None:
            data = json.dumps(body).encode()
            if any(name.lower() == "date" for name in headers):
                self.log_request(status)
                self.send_response_only(status)  # the scripted Date stands for the server's
                self.send_header("Server", self.version_string())
            else:
                self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if trickle <= 0:
                self.wfile.write(data)
                return
            self.close_connection = True
            _trickle(self.wfile, data, trickle, server.closing)

    return Handler


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    422: "invalid_request_error",
    429: "rate_limit_exceeded",
}


def _trickle(out: Any, data: bytes, pause: float, closing: threading.Event) -> None:
    """Write ``data`` one byte every ``pause`` seconds, until it is all sent, the server
    closes or the client hangs up."""
    try:
        for i in range(len(data)):
            out.write(data[i : i + 1])
            out.flush()
            if closing.wait(pause):
                return
    except OSError:  # the client gave up and closed the connection
        return
