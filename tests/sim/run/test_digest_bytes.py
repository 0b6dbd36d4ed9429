"""The board digest's record bytes are ``json.dumps``'s compact text, whatever the record."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.run.harness import _json_bytes

records = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(records, max_size=6))
def test_record_bytes_are_the_compact_json_text(record: list[Any]) -> None:
    assert _json_bytes(record) == json.dumps(record, separators=(",", ":")).encode()
