"""Long-term memory: structured facts that supersede each other by subject, text memories
filtered for duplicates, and writes queued off the tick by a ``MemoryWriter``."""

from runtime.agent.long_term import LongTermMemory
from runtime.agent.writer import MemoryWriter
from runtime.longterm import MemoryTerms

memory = LongTermMemory(":memory:")  # or a file: LongTermMemory("memory.sqlite")
here = {"robot": "r1", "site": "warehouse"}


def fact(subject: str, holds: bool = True) -> dict:
    return MemoryTerms(subject=subject, holds=holds, importance=0.8).attach({})


# A structured fact: compared by its subject, never by its text.
print(memory.remember("aisle 3 blocked", scope=here, metadata=fact("aisle:3"), stamp=40).reason)
print(memory.remember("aisle 3 blocked", scope=here, metadata=fact("aisle:3"), stamp=90).reason)
clear = fact("aisle:3", holds=False)  # "clear now": retires the current fact
print(memory.remember("aisle 3 clear", scope=here, metadata=clear, stamp=120).reason)
print([r.content for r in memory.history(scope=here, subject="aisle:3")])

# Text memories: a restatement is a duplicate, an update that changes a number is not.
print(memory.remember("the meeting is at 10", scope=here).reason)
print(memory.remember("The meeting is at 10.", scope=here).reason)
print(memory.remember("the meeting is at 11", scope=here).reason)
print([r.content for r in memory.recall("when is the meeting?", scope=here, k=2)])  # both kept

# Off the tick: remember() only queues; flush() applies the queue in one transaction.
writer = MemoryWriter(memory, on_written=lambda write, outcome: print("written:", outcome.reason))
print(writer.remember("dock B is slow to load", scope=here).reason)
writer.flush()
writer.close()
# stored
# superseded
# retired
# ['aisle 3 blocked', 'aisle 3 blocked', 'aisle 3 clear']
# stored
# duplicate
# stored
# ['the meeting is at 10', 'the meeting is at 11']
# queued
# written: stored
