"""The LLM cabin end to end, with scripted clients instead of a model."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import Field

from cabins.llm import (
    ActionTool,
    ChatReply,
    LLMCabin,
    OpenAIChatClient,
    ScriptedClient,
    ScriptExhausted,
    command_tool,
    event_tool,
    render_view,
)
from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    Outbox,
    Scratchpad,
    SimClock,
    StateBoard,
    TickLoop,
    TickResult,
    ToolArgs,
    WorkingMemory,
)
from runtime.testing import make_view

SPEC = ContextSpec(
    name="llm",
    board_keys=("goal:*", "pose"),
    required=("goal:*", "pose"),
    weights={"goal:*": 1.0, "pose": 0.9, "note:*": 0.6},
)


class DriveArgs(ToolArgs):
    speed: float = Field(ge=0, le=1.5, description="forward speed in m/s")


DRIVE = command_tool("drive", DriveArgs, "Drive forward at a speed.")


@dataclass
class Rig:
    client: ScriptedClient
    max_steps: int = 4
    clock: SimClock = field(default_factory=SimClock)
    pad: Scratchpad = field(default_factory=Scratchpad)

    def __post_init__(self) -> None:
        self.board = StateBoard(clock=self.clock)
        self.log = EventLog(clock=self.clock)
        self.cabin = LLMCabin(
            SPEC,
            client=self.client,
            action_tools=(DRIVE,),
            max_steps=self.max_steps,
            answer_key="llm:answer",
        )
        assembler = Assembler(
            self.board, CabinMap(), self.log, WorkingMemory(), [SPEC], scratchpads={"llm": self.pad}
        )
        self.loop = TickLoop(assembler, [self.cabin], 10.0, self.clock)
        self.board.write("goal:deliver:t1", {"pickup": "A", "drop": "B"})
        self.board.write("pose", (1.0, 2.0, 0.0))

    def step(self) -> TickResult:
        return self.loop.step()

    def events(self, kind: str) -> list[Any]:
        return [e.data for e in self.log.query(0.0, 1e9, kinds=[kind], limit=100)]


def system_of(request: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> str:
    messages = request[0]
    assert messages[0]["role"] == "system"
    return str(messages[0]["content"])


def tool_messages(request: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> list[Any]:
    return [json.loads(m["content"]) for m in request[0] if m["role"] == "tool"]


def test_a_tick_saves_reads_back_acts_and_answers() -> None:
    client = ScriptedClient(
        [
            ChatReply.calls(
                (
                    "save_to_scratchpad",
                    {"key": "route_plan", "value": ["A", "B"], "description": "dock order"},
                )
            ),
            ChatReply.calls(("read_from_scratchpad", {"key": "route_plan"}), first_id=1),
            ChatReply.calls(("drive", {"speed": 0.5}), first_id=2),
            ChatReply.text("heading to A"),
        ]
    )
    rig = Rig(client)
    result = rig.step()

    assert len(client.requests) == 4
    tools = [t["function"]["name"] for t in client.requests[0][1]]
    assert tools == ["save_to_scratchpad", "read_from_scratchpad", "list_scratchpad_keys", "drive"]
    # the system prompt is rebuilt every round: the note saved in round 1 shows in round 2
    assert "Scratchpad: (empty)" in system_of(client.requests[0])
    assert '- route_plan (dock order): ["A","B"]' in system_of(client.requests[1])
    # read-after-write within the tick, through the draft
    assert tool_messages(client.requests[2])[-1] == {
        "key": "route_plan",
        "found": True,
        "value": ["A", "B"],
    }
    # the view is in the prompt, the goal is the first user message
    assert "- pose: [1.0,2.0,0.0]" in system_of(client.requests[0])
    assert "Missing: none" in system_of(client.requests[0])
    assert client.requests[0][0][1] == {
        "role": "user",
        "content": "Decide what to do this tick.\nYour task: goal:deliver:t1 "
        '= {"drop":"B","pickup":"A"}',
    }

    # the outcome went to the outbox, and was applied after the tick
    assert [(c.name, dict(c.args)) for c in result.commands] == [("drive", {"speed": 0.5})]
    assert rig.pad.read("route_plan") == ("A", "B") and rig.pad.task == "goal:deliver:t1"
    assert rig.board.read("llm:answer").value == "heading to A"  # type: ignore[union-attr]
    (outcome,) = rig.events("llm_outcome")
    assert outcome["stopped"] == "answer" and outcome["rounds"] == 4
    assert outcome["tool_calls"] == 3 and outcome["tool_errors"] == 0
    assert outcome["notes_written"] == ("route_plan",)
    assert rig.events("llm_max_steps") == []


def test_notes_come_back_through_the_view_next_tick() -> None:
    client = ScriptedClient(
        [
            ChatReply.calls(("save_to_scratchpad", {"key": "visits", "value": 1})),
            ChatReply.text("noted"),
            ChatReply.text("nothing new"),
        ]
    )
    rig = Rig(client)
    rig.step()
    rig.step()  # only its own note changed: not a change to ask the model about
    assert len(client.requests) == 2
    rig.board.write("pose", (1.5, 2.0, 0.0))
    rig.step()
    assert "- visits: 1" in system_of(client.requests[2])  # from the view, tick 2
    outcome = rig.events("llm_outcome")[-1]
    assert outcome["notes_written"] == ()  # unchanged notes are not rewritten
    assert [e.tick for e in rig.pad.log if e.action == "write"] == [0]


def test_a_model_looping_on_one_tool_is_stopped_by_max_steps() -> None:
    client = ScriptedClient([ChatReply.calls(("list_scratchpad_keys", "{}"))], repeat_last=True)
    rig = Rig(client, max_steps=3)
    result = rig.step()
    assert len(client.requests) == 3  # the hard cap: no fourth call
    (stopped,) = rig.events("llm_max_steps")
    assert stopped == {
        "cabin": "llm",
        "max_steps": 3,
        "tool_calls": 3,
        "last_tools": ("list_scratchpad_keys",),
    }
    (outcome,) = rig.events("llm_outcome")
    assert outcome["stopped"] == "max_steps" and outcome["answer"] is None
    assert rig.board.read("llm:answer") is None and not result.failures


def test_malformed_arguments_are_answered_and_the_model_recovers() -> None:
    client = ScriptedClient(
        [
            ChatReply.calls(("save_to_scratchpad", '{"key": "eta", "value": 12')),  # broken JSON
            ChatReply.calls(("save_to_scratchpad", '{"key": "eta"}'), first_id=1),  # no value
            ChatReply.calls(("drive", '{"speed": "fast"}'), first_id=2),  # wrong type
            ChatReply.calls(("teleport", "{}"), first_id=3),  # no such tool
            ChatReply.calls(("save_to_scratchpad", '{"key": "eta", "value": 12}'), first_id=4),
            ChatReply.text("saved the eta"),
        ]
    )
    rig = Rig(client, max_steps=8)
    result = rig.step()
    errors = [m["error"] for m in tool_messages(client.requests[4])]
    assert errors[0].startswith("arguments are not valid JSON")
    assert "missing argument 'value'" in errors[1]
    assert "argument 'speed': Input should be a valid number" in errors[2]
    assert errors[3].startswith("unknown tool 'teleport'")
    assert rig.pad.read("eta") == 12 and result.commands == () and not result.failures
    (outcome,) = rig.events("llm_outcome")
    assert outcome["tool_errors"] == 4 and outcome["tool_calls"] == 5
    assert outcome["answer"] == "saved the eta"


def test_the_pad_is_cleared_when_the_goal_completes_and_not_carried_into_the_next() -> None:
    client = ScriptedClient(
        [
            ChatReply.calls(("save_to_scratchpad", {"key": "progress", "value": "half"})),
            ChatReply.text("working"),
            ChatReply.text("next task"),
        ]
    )
    rig = Rig(client)
    rig.step()
    assert rig.pad.read("progress") == "half"
    rig.board.delete("goal:deliver:t1")
    rig.board.write("goal:deliver:t2", {"pickup": "C", "drop": "D"})
    rig.step()
    prompt = system_of(client.requests[2])
    assert "Scratchpad: (empty)" in prompt and "progress" not in prompt
    assert rig.pad.task == "goal:deliver:t2" and len(rig.pad) == 0


def test_missing_items_are_rendered_with_their_reason() -> None:
    view = make_view(SPEC, board={"goal:deliver:t1": {"drop": "B"}}, now=1.5, tick=3)
    text = render_view(view)
    assert text.splitlines() == [
        "State at tick 3 (t=1.500s), cabin llm:",
        '- goal:deliver:t1: {"drop":"B"}',
        "Missing (required but not visible):",
        "- pose: absent (nothing in the sources matches)",
    ]
    hidden = render_view(make_view(SPEC, board={"pose": (0, 0, 0)}, suppress=("pose",)))
    assert "- pose: fault (hidden from you)" in hidden and "- (nothing)" in hidden
    long = render_view(make_view(SPEC, board={"pose": list(range(200))}), value_chars=30)
    assert "- pose: [0,1,2,3,4,5,6,7,8,9,10,11,...\n" in long


def test_items_lost_to_capacity_are_rendered_apart_from_missing_ones() -> None:
    board = {"goal:deliver:t1": {"drop": "B"}, "pose": (0, 0, 0)}
    view = make_view(SPEC, board=board, now=1.5, tick=3, evicted=["pose"])
    assert render_view(view).splitlines()[-4:] == [
        "Missing (required but not visible):",
        "- pose: evicted (dropped from working memory for capacity)",
        "Lost to capacity (selected for you, but working memory had no room for them this "
        "tick; they exist, you cannot see their values):",
        "- pose (importance 0.9)",
    ]


def test_what_the_view_lost_to_capacity_is_in_the_prompt_and_a_lost_note_reads_as_evicted() -> None:
    """Memory has room for the goal and the pose only: the note the pad holds is lost to
    capacity. The prompt lists it (not "Missing: none"), and reading it says it was
    evicted from the working set rather than that there is no such note."""
    client = ScriptedClient(
        [
            ChatReply.calls(("read_from_scratchpad", {"key": "route_plan"})),
            ChatReply.calls(("list_scratchpad_keys", {}), first_id=1),
            ChatReply.text("waiting"),
        ]
    )
    rig = Rig(client)
    rig.pad.write("route_plan", ["A", "B"])
    rig.loop.assembler.memory.capacity = 2
    rig.step()
    prompt = system_of(client.requests[0])
    assert "Missing: none" not in prompt
    assert "Lost to capacity" in prompt and "- note:route_plan (importance 0.6)" in prompt
    read = tool_messages(client.requests[1])[-1]
    assert read["found"] is False and read["evicted"] is True and "evicted" in read["why"]
    assert tool_messages(client.requests[2])[-1] == {"keys": [], "evicted": ["route_plan"]}
    assert rig.pad.read("route_plan") == ("A", "B")  # the pad keeps it: only the view lost it


def test_a_failing_client_ends_the_decision_with_an_outcome_not_a_cabin_failure() -> None:
    rig = Rig(ScriptedClient([]))
    result = rig.step()
    assert result.failures == () and rig.events("cabin_failed") == []
    (outcome,) = rig.events("llm_outcome")
    assert outcome["stopped"] == "error" and outcome["answer"] is None
    assert outcome["error"]["kind"] == "error" and outcome["error"]["type"] == "ScriptExhausted"
    assert outcome["lost"]["answer"] is True
    with pytest.raises(ScriptExhausted, match="0 replies"):
        ScriptedClient([]).complete([], [])


def test_event_tools_emit_events_and_custom_actions_get_the_outbox() -> None:
    class Alarm(ToolArgs):
        kind: str

    class Note(ToolArgs):
        key: str

    def write_flag(args: Note, out: Outbox) -> dict[str, str]:
        out.write(f"flag:{args.key}", True)
        return {"flagged": args.key}

    client = ScriptedClient(
        [
            ChatReply.calls(("raise_alarm", {"kind": "blocked_aisle"}), ("flag", {"key": "a1"})),
            ChatReply.text("done"),
        ]
    )
    spec = ContextSpec(name="llm")
    cabin = LLMCabin(
        spec,
        client=client,
        action_tools=(
            event_tool("alarm", Alarm, "Raise an alarm.", tool_name="raise_alarm"),
            ActionTool("flag", "Set a flag on the board.", Note, write_flag),
        ),
    )
    out = Outbox("llm")
    cabin.step(make_view(spec), out)
    assert [e.kind for e in out.events] == ["alarm", "llm_outcome"]
    assert out.events[0].data == {"kind": "blocked_aisle"}
    assert [(w.key, w.value) for w in out.writes] == [("flag:a1", True)]
    assert tool_messages(client.requests[1])[1] == {"flagged": "a1"}


def test_the_cabin_refuses_bad_settings() -> None:
    client = ScriptedClient([])
    with pytest.raises(ValueError, match="two tools are named 'save_to_scratchpad'"):
        LLMCabin(
            SPEC,
            client=client,
            action_tools=(command_tool("save_to_scratchpad", DriveArgs, "clash"),),
        )
    with pytest.raises(ValueError, match="max_steps"):
        LLMCabin(SPEC, client=client, max_steps=0)
    with pytest.raises(TypeError, match="complete"):
        LLMCabin(SPEC, client=object())  # type: ignore[arg-type]
    board = StateBoard(clock=SimClock())
    assembler = Assembler(board, CabinMap(), EventLog(), WorkingMemory(), [SPEC])
    with pytest.raises(ValueError, match="use notes"):
        TickLoop(assembler, [LLMCabin(SPEC, client=client)], 10.0, SimClock())


def test_the_openai_adapter_sends_a_chat_completions_request() -> None:
    sent: list[dict[str, Any]] = []

    def create(**request: Any) -> Any:
        sent.append(request)
        call = SimpleNamespace(
            id="call_x",
            type="function",
            function=SimpleNamespace(name="drive", arguments='{"speed": 1}'),
        )
        message = SimpleNamespace(content=None, tool_calls=[call])
        return SimpleNamespace(
            choices=[SimpleNamespace(message=message, finish_reason="tool_calls")]
        )

    fake = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    client = OpenAIChatClient(fake, model="some-model", temperature=0)
    messages: Sequence[Mapping[str, Any]] = [{"role": "user", "content": "hi"}]
    tools = [DRIVE.bind(Outbox("x")).schema()]
    reply = client.complete(messages, tools)
    assert sent == [
        {
            "model": "some-model",
            "messages": [{"role": "user", "content": "hi"}],
            "temperature": 0,
            "tools": tools,
            "tool_choice": "auto",
        }
    ]
    assert reply.finish_reason == "tool_calls" and reply.content is None
    (call,) = reply.tool_calls or ()
    assert (call.id, call.function.name, call.function.arguments) == (
        "call_x",
        "drive",
        '{"speed": 1}',
    )
    client.complete(messages, [])
    assert "tools" not in sent[-1] and "tool_choice" not in sent[-1]
    with pytest.raises(TypeError, match="OpenAI-compatible"):
        OpenAIChatClient(object(), model="m")
