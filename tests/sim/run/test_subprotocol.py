"""The live view's front: which handshakes it renames, and how (sim.run.subprotocol)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.run.subprotocol import CURRENT, HEAD_LIMIT, HandshakeError, Head, _read_head, renamed_offer

REQUEST = (
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n"
)


def test_an_offer_of_the_older_name_alone_is_renamed_and_others_pass() -> None:
    assert renamed_offer(["foxglove.websocket.v1"]) == "foxglove.websocket.v1"
    assert renamed_offer(["x", "foxglove.websocket.v1"]) == "foxglove.websocket.v1"
    assert renamed_offer([CURRENT, "foxglove.websocket.v1"]) is None  # the server picks it
    assert renamed_offer([CURRENT]) is None
    assert renamed_offer(["nope"]) is None and renamed_offer([]) is None


def test_a_renamed_head_keeps_every_other_header_and_one_protocol_line() -> None:
    head = Head.parse(REQUEST)
    assert head.protocols() == ["foxglove.websocket.v1"]
    renamed = Head.parse(head.with_protocol(CURRENT).encode())
    assert renamed.start == "GET / HTTP/1.1"
    assert renamed.protocols() == [CURRENT]
    kept = [(k, v) for k, v in head.headers if k.lower() != "sec-websocket-protocol"]
    assert [(k, v) for k, v in renamed.headers if k.lower() != "sec-websocket-protocol"] == kept


@given(st.lists(st.sampled_from(["a", "foxglove.websocket.v1", CURRENT, "b.c"]), max_size=4))
def test_protocols_are_read_from_every_header_line_in_order(names: list[str]) -> None:
    lines = "".join(f"Sec-WebSocket-Protocol: {n}, \r\n" for n in names)
    head = Head.parse(f"GET / HTTP/1.1\r\nsec-websocket-protocol:\r\n{lines}\r\n".encode())
    assert head.protocols() == names


def _read(data: bytes) -> tuple[bytes, bytes]:
    async def go() -> tuple[bytes, bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await _read_head(reader)

    return asyncio.run(go())


def test_a_head_is_read_to_its_blank_line_and_what_follows_is_kept() -> None:
    assert _read(REQUEST + b"\x81\x02hi") == (REQUEST, b"\x81\x02hi")
    with pytest.raises(HandshakeError, match="closed inside"):
        _read(REQUEST[:40])
    with pytest.raises(HandshakeError, match=f"within {HEAD_LIMIT}"):
        _read(b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 5000)
    with pytest.raises(HandshakeError, match="without a colon"):
        Head.parse(b"GET / HTTP/1.1\r\nnonsense\r\n\r\n")
