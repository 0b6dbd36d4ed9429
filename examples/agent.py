"""An LLM cabin on the runtime: a scripted model, tools, a scratchpad and long-term memory."""

from pydantic import Field

from cabins.llm import ChatReply, LLMCabin, ScriptedClient, command_tool
from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    LongTermMemory,
    Scratchpad,
    SimClock,
    StateBoard,
    TickLoop,
    ToolArgs,
    WorkingMemory,
    configure_logging,
)

configure_logging(level="warning")


class Drive(ToolArgs):  # an action tool's arguments, validated by pydantic
    speed: float = Field(ge=0, le=1.5, description="forward speed, m/s")


spec = ContextSpec(
    name="agent",
    board_keys=("goal:*", "pose"),
    required=("goal:*", "pose"),
    weights={"goal:*": 1.0, "pose": 0.9, "note:*": 0.6},
)
client = ScriptedClient(
    [  # stands in for a model (OpenAIChatClient: a real one)
        ChatReply.calls(("save_to_scratchpad", {"key": "next_dock", "value": "A"})),
        ChatReply.calls(("drive", '{"speed": "fast"}'), first_id=1),  # bad arguments: told why
        ChatReply.calls(("drive", {"speed": 0.8}), first_id=2),
        ChatReply.text("driving to dock A"),
        ChatReply.text("nothing to do"),
    ]
)
agent = LLMCabin(
    spec, client=client, max_steps=6, action_tools=[command_tool("drive", Drive, "Drive forward.")]
)

clock = SimClock()
board, log, pad = StateBoard(clock=clock), EventLog(clock=clock), Scratchpad()
board.write("goal:deliver:t1", {"pickup": "A", "drop": "B"})
board.write("pose", (0.0, 0.0, 0.0))
assembler = Assembler(
    board, CabinMap(), log, WorkingMemory(), [spec], scratchpads={"agent": pad}
)  # the pad is a source, like the board
loop = TickLoop(assembler, [agent], 10.0, clock)

command = loop.step().commands[0]
print(command.name, dict(command.args), pad.read("next_dock"), pad.task)
board.delete("goal:deliver:t1")  # the goal is done: its notes go at the next freeze
loop.step()
print(len(pad), [e.data["tool_errors"] for e in log.query(0, 1, kinds=["llm_outcome"])])

memory = LongTermMemory(":memory:")  # or a SQLite file; HashingEmbedder by default
here = {"robot": "r1", "session": "warehouse"}
memory.remember("aisle 3 was blocked at t=40", scope=here)
print(
    memory.remember("Aisle 3 was blocked at t=40.", scope=here).reason,
    memory.recall("is aisle 3 blocked?", scope=here)[0].content,
    memory.recall("is aisle 3 blocked?", scope={"robot": "r2"}),
)
# drive {'speed': 0.8} A goal:deliver:t1
# 0 [1, 0]
# duplicate aisle 3 was blocked at t=40 ()
