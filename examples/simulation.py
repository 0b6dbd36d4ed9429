"""The simulator from Python: the default warehouse with a cabin of one's own beside the
built-in ones, its summary and its verdict.

Run it from the project's root: ``python examples/simulation.py``.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "people_watch"))  # where people_watch.py is

from people_watch import PeopleWatch  # noqa: E402

from runtime import load_spec  # noqa: E402
from sim.run.harness import ExtraCabin, Simulation  # noqa: E402
from sim.run.verdict import judge  # noqa: E402

spec = load_spec(HERE / "people_watch" / "people_watch.toml")
sim = Simulation("warehouse", seed=0, extra=[ExtraCabin(spec, PeopleWatch)])
summary = sim.run()  # to the end of the scenario, or once every delivery is done
sim.close()

print(
    summary["ticks"],
    "ticks; people_watch raised",
    summary["cabins"]["people_watch"]["events"],
    "alarm(s)",
)
print(judge(summary).line)
