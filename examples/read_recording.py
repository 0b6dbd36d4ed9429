"""Read a recording back from Python: each cabin's view size and what it could not see.

Make one first: ``python -m sim run --record run.mcap``, then
``python read_recording.py run.mcap``.
"""

import sys

from runtime.recording.format import WORKING_SET
from runtime.recording.reader import Recording

recording = Recording.open(sys.argv[1] if len(sys.argv) > 1 else "run.mcap")
for tick, ws in recording.records(WORKING_SET):  # typed: ws["views"]["planner"]["missing"]
    if tick % 100 == 0:
        for cabin, view in sorted(ws["views"].items()):
            print(tick, cabin, len(view["items"]), "items, missing:", view["missing"] or "nothing")
