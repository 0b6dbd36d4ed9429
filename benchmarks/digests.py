"""``python -m benchmarks.digests``: behaviour as digests, to show that a refactor changed none.

A run's summary carries a digest of every board write (``board_digest``, chained over
the writes in order), of the final world, of working memory and of the event log. Two
versions of the code that produce the same digests on the same runs made the same
decisions, tick for tick. This script runs a fixed set (the default scenario,
``narrow_aisles``, the generated worlds ``gen:0-19``, and the default scenario under
each fault ``--faults auto`` derives from the shipped specs) and either writes their
digests (``--write``, to ``benchmarks/results/digests.json``) or checks them against that
file (the default): a difference names the run and the digest that moved, and exits 1.

A change that is meant to change behaviour writes the file again in the same commit,
and its message says why; ``tests/e2e/test_digests.py`` checks the file on every CI run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "digests.json"
DIGESTS = ("board_digest", "world_digest", "memory_digest", "log_digest")
KEPT = (*DIGESTS, "ticks", "board_writes", "deliveries_done", "collisions", "safety_violations")


@dataclass(frozen=True, slots=True)
class Case:
    """One run of the fixed set: a scenario, a fault label (or none) and a seed."""

    scenario: str
    fault: str | None = None
    seed: int = 0
    memory: bool = False
    """Run twice with one long-term memory file, and keep the second run (it recalls)."""

    @property
    def label(self) -> str:
        fault = f" {self.fault}" if self.fault else ""
        return f"{self.scenario} seed {self.seed}{fault}" + (" recalled" if self.memory else "")


def cases() -> Iterator[Case]:
    """The fixed set, in a stable order."""
    from runtime.spec import load_specs
    from sim.run.campaign import auto_faults
    from sim.run.harness import SPECS_DIR

    yield Case("warehouse")
    yield Case("narrow_aisles")
    yield Case("warehouse", memory=True)
    yield Case("narrow_aisles", memory=True)
    for seed in range(20):
        yield Case(f"gen:{seed}")
    for fault in auto_faults(load_specs(SPECS_DIR)):
        yield Case("warehouse", fault.label)


def run(case: Case) -> dict[str, Any]:
    """The kept fields of ``case``'s summary."""
    from sim.faults.model import parse_fault
    from sim.run.harness import Simulation
    from sim.world.generate import generate, parse_generated

    seeds = parse_generated(case.scenario)
    scenario: Any = generate(seeds[0]) if seeds else case.scenario
    faults = [parse_fault(case.fault)] if case.fault else []
    with tempfile.TemporaryDirectory() as folder:
        memory = Path(folder, "memory.sqlite") if case.memory else None
        for _ in range(2 if case.memory else 1):
            simulation = Simulation(scenario, seed=case.seed, faults=faults, long_term=memory)
            try:
                summary = simulation.run()
            finally:
                simulation.close()
    return {key: summary[key] for key in KEPT}


def _quiet() -> None:
    import io

    from runtime.logs import configure_logging

    configure_logging(level="error", stream=io.StringIO())


def measure(selected: Sequence[Case], *, workers: int = 1) -> dict[str, dict[str, Any]]:
    """The kept fields of every case's run, by label (in worker processes when ``workers``
    is above 1: the runs share nothing)."""
    if workers <= 1:
        _quiet()
        return {case.label: run(case) for case in selected}
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, initializer=_quiet) as pool:
        return dict(zip((c.label for c in selected), pool.map(run, selected), strict=True))


def differences(expected: dict[str, dict[str, Any]], found: dict[str, dict[str, Any]]) -> list[str]:
    """One line per run and field that differs (a run only one side has counts too)."""
    lines = []
    for label in sorted(expected.keys() | found.keys()):
        if label not in found:
            lines.append(f"{label}: not run")
            continue
        if label not in expected:
            lines.append(f"{label}: not in the stored digests")
            continue
        for key in KEPT:
            if expected[label].get(key) != found[label].get(key):
                lines.append(
                    f"{label}: {key} {expected[label].get(key)!r} -> {found[label].get(key)!r}"
                )
    return lines


def _write(path: Path, data: dict[str, dict[str, Any]]) -> None:
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.digests", description=__doc__)
    parser.add_argument(
        "--write", action="store_true", help="store this code's digests instead of checking"
    )
    parser.add_argument("--file", type=Path, default=RESULTS, help="the stored digests")
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="runs at once (default: cores)"
    )
    args = parser.parse_args(argv)
    found = measure(list(cases()), workers=args.workers)
    if args.write:
        _write(args.file, found)
        print(f"wrote the digests of {len(found)} runs to {args.file}")
        return 0
    expected = json.loads(args.file.read_text(encoding="utf-8"))
    lines = differences(expected, found)
    for line in lines:
        print(line)
    print(f"{len(found)} runs, {len(lines)} differences")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
