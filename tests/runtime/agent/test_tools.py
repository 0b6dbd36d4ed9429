"""Function tools: schemas, dispatch with good and bad arguments, extensibility."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from runtime import Scratchpad, Tool, ToolArgs, ToolDispatcher, scratchpad_tools


def dispatcher(pad: Scratchpad | None = None) -> ToolDispatcher:
    return ToolDispatcher(scratchpad_tools(pad if pad is not None else Scratchpad()))


def test_scratchpad_tool_schemas_are_openai_function_tools() -> None:
    schemas = {s["function"]["name"]: s for s in dispatcher().schemas()}
    assert list(schemas) == ["save_to_scratchpad", "read_from_scratchpad", "list_scratchpad_keys"]
    for schema in schemas.values():
        assert schema["type"] == "function"
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert "title" not in params and schema["function"]["description"]
    save = schemas["save_to_scratchpad"]["function"]["parameters"]
    assert save["required"] == ["key", "value"]
    assert save["properties"]["key"]["type"] == "string"
    assert "type" not in save["properties"]["value"]  # any JSON value
    assert schemas["read_from_scratchpad"]["function"]["parameters"]["required"] == ["key"]
    assert schemas["list_scratchpad_keys"]["function"]["parameters"]["properties"] == {}
    json.dumps(list(schemas.values()))  # plain JSON, ready for a request


def test_good_calls_save_read_and_list() -> None:
    pad = Scratchpad()
    tools = dispatcher(pad)
    saved = tools.call(
        "save_to_scratchpad", '{"key": "total", "value": {"q1": [1, 2]}, "description": "sum"}'
    )
    assert saved.ok and saved.data == {"saved": "total", "replaced": False}
    assert pad.read("total") == {"q1": (1, 2)}
    again = tools.call("save_to_scratchpad", {"key": "total", "value": 3})
    assert again.ok and again.data["replaced"] is True and pad.read("total") == 3
    read = tools.call("read_from_scratchpad", '{"key": "total"}')
    assert read.ok and json.loads(read.content) == {"key": "total", "found": True, "value": 3}
    absent = tools.call("read_from_scratchpad", '{"key": "nope"}')
    assert absent.ok and json.loads(absent.content) == {
        "key": "nope",
        "found": False,
        "value": None,
    }
    for empty in ("{}", "", None):
        listed = tools.call("list_scratchpad_keys", empty)
        assert listed.ok and listed.data == {"keys": ["total"]}


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        (
            "delete_everything",
            "{}",
            "unknown tool 'delete_everything' (known tools: "
            "save_to_scratchpad, read_from_scratchpad, list_scratchpad_keys)",
        ),
        ("read_from_scratchpad", '{"key": "a"', "arguments are not valid JSON"),
        ("read_from_scratchpad", "key=a", "arguments are not valid JSON"),
        ("read_from_scratchpad", '["a"]', "arguments must be a JSON object, got an array"),
        ("read_from_scratchpad", '"a"', "arguments must be a JSON object, got a string"),
        ("read_from_scratchpad", "{}", "missing argument 'key'"),
        ("save_to_scratchpad", '{"key": "a"}', "missing argument 'value'"),
        ("read_from_scratchpad", '{"key": 7}', "argument 'key': Input should be a valid string"),
        ("save_to_scratchpad", '{"key": "a b", "value": 1}', "note key 'a b' is not allowed"),
        (
            "save_to_scratchpad",
            '{"key": "a", "value": 1, "colour": "red"}',
            "unexpected argument 'colour'",
        ),
        ("list_scratchpad_keys", '{"all": true}', "unexpected argument 'all'"),
        (None, "{}", "unknown tool None"),
    ],
)
def test_bad_calls_get_a_clear_error_result(name: Any, arguments: str, expected: str) -> None:
    pad = Scratchpad()
    result = dispatcher(pad).call(name, arguments)
    assert not result.ok and result.error is not None and expected in result.error
    assert json.loads(result.content) == {"error": result.error}
    assert len(pad) == 0


def test_reading_a_note_the_view_lost_to_capacity_says_it_was_evicted() -> None:
    from runtime.agent.tools import EVICTED_NOTE

    tools = ToolDispatcher(scratchpad_tools(Scratchpad(), evicted=["plan"]))
    read = json.loads(tools.call("read_from_scratchpad", '{"key": "plan"}').content)
    assert read == {
        "key": "plan",
        "found": False,
        "evicted": True,
        "value": None,
        "why": EVICTED_NOTE,
    }
    other = json.loads(tools.call("read_from_scratchpad", '{"key": "nope"}').content)
    assert other == {"key": "nope", "found": False, "value": None}
    assert json.loads(tools.call("list_scratchpad_keys", "{}").content) == {
        "keys": [],
        "evicted": ["plan"],
    }


def test_an_argument_error_says_what_was_expected() -> None:
    result = dispatcher().call("save_to_scratchpad", '{"value": 1}')
    assert result.error == (
        "bad arguments for save_to_scratchpad: missing argument 'key'; "
        "expected {key: str, value: Any, description: str (optional)}"
    )


def test_a_tool_that_raises_answers_with_an_error() -> None:
    class Args(ToolArgs):
        n: int

    def explode(args: Args) -> int:
        raise ZeroDivisionError(f"cannot divide {args.n} by zero")

    result = ToolDispatcher([Tool("divide", "divides", Args, explode)]).call("divide", '{"n": 4}')
    assert not result.ok
    assert result.error == "tool divide failed: ZeroDivisionError: cannot divide 4 by zero"


def test_action_tools_extend_the_dispatcher() -> None:
    class Drive(ToolArgs):
        speed: float = Field(ge=0, le=2, description="m/s")
        title: str = Field(default="", description="a property named title is kept")

    driven: list[float] = []

    def drive(args: Drive) -> dict[str, float]:
        driven.append(args.speed)
        return {"speed": args.speed}

    tools = dispatcher().with_tools(Tool("drive", "drive forward", Drive, drive))
    assert "drive" in tools and tools.names[-1] == "drive"
    params = tools.schemas()[-1]["function"]["parameters"]
    assert set(params["properties"]) == {"speed", "title"}
    assert params["properties"]["speed"]["maximum"] == 2
    assert tools.call("drive", '{"speed": 1}').ok  # a JSON integer is a valid float
    bad = tools.call("drive", '{"speed": 3.5}')
    assert not bad.ok and "less than or equal to 2" in (bad.error or "")
    assert driven == [1.0]
    with pytest.raises(ValueError, match="two tools are named 'drive'"):
        tools.with_tools(Tool("drive", "again", Drive, drive))


def test_tools_refuse_bad_definitions() -> None:
    with pytest.raises(ValueError, match="tool name"):
        Tool("no spaces please", "x", ToolArgs, lambda a: None)
    with pytest.raises(TypeError, match="pydantic model"):
        Tool("fine", "x", dict, lambda a: None)  # type: ignore[type-var]


@given(
    name=st.sampled_from(
        ["save_to_scratchpad", "read_from_scratchpad", "list_scratchpad_keys", "other"]
    ),
    arguments=st.one_of(
        st.text(max_size=60),
        st.dictionaries(
            st.text(max_size=8),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                lambda kids: (
                    st.lists(kids, max_size=3)
                    | st.dictionaries(st.text(max_size=4), kids, max_size=3)
                ),
                max_leaves=6,
            ),
            max_size=4,
        ).map(json.dumps),
    ),
)
def test_no_call_ever_raises(name: str, arguments: str) -> None:
    pad = Scratchpad()
    result = dispatcher(pad).call(name, arguments)
    payload = json.loads(result.content)
    assert result.ok == ("error" not in payload)
    if not result.ok:
        assert isinstance(result.error, str) and result.error
