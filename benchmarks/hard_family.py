"""``python -m benchmarks.hard_family``: runs of the ``hard:N`` family, judged for liveness.

Each world of ``--worlds`` (a family name, ``hard:0-29`` by default) runs once per run
seed of ``--seeds``, fault-free and until every delivery is done or its duration is over,
in ``--workers`` processes. Each run gives a row: the world's layout and measured traits
(``sim.world.hard.traits``), deliveries done of the reachable ones, collisions, safety
violations, simulated and wall time (and the worker's CPU time, which other load on the
machine moves less), the lowest battery, re-plans by reason, give-ways, waits for
obstacles, the planner's items evicted for capacity, and, for a run that left reachable
deliveries undone, which of issue 29's failures it shows:

- ``starvation``: the planner's working set is full: its view lost required items to
  capacity (``evicted``), or it raised a constraint-check alarm (its constraints were
  crowded out, so it would not plan), or working memory evicted 5 items a tick or more
  (the issue's starvation is silent: nothing missing, no capacity alarm);
- ``stand-off``: five give-ways or more, the robot backing off and coming back;
- ``shuttling``: twenty re-plans or more for an obstacle in its corridor, and fewer than
  five give-ways (it followed a mover, stopping and starting behind it);
- ``flat battery``: the battery ran out (below 0.5 %);
- ``stuck``: none of these (read the run).

A run can show several; they are listed in that order. ``--jsonl`` keeps one line per run
as it ends (a run already in the file is not run again), ``--table`` writes the Markdown
table of the rows and a summary. ``--max-floor WxH`` and ``--tasks T`` draw the worlds with
those settings (cheaper runs of the same layouts: what the property tests use).
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

GIVE_WAYS = 5
SHUTTLES = 20
CHURN = 5.0
FLAT = 0.005


def _settings(max_floor: tuple[float, float] | None, tasks: int | None) -> Any:
    from sim.world.hard import HardSettings

    extra: dict[str, Any] = {} if max_floor is None else {"max_floor": max_floor}
    return HardSettings(tasks=tasks, **extra)


def run_one(
    seed: int, run_seed: int, max_floor: tuple[float, float] | None, tasks: int | None
) -> dict[str, Any]:
    """One run of ``hard:seed`` (with the settings) and its row."""
    from runtime.logs import configure_logging
    from sim.run.harness import Simulation
    from sim.world.hard import generate_hard
    from sim.world.hard.traits import traits

    configure_logging(level="error", stream=io.StringIO())
    scenario = generate_hard(seed, _settings(max_floor, tasks))
    started, cpu = time.perf_counter(), time.process_time()
    sim = Simulation(scenario, seed=run_seed)
    kinds: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    lowest = [1.0]
    capacity = scenario.robot.battery_wh

    def listen(event: Any) -> None:
        kinds[event.kind] += 1
        if event.kind == "replan":
            reasons[str(event.data.get("reason"))] += 1

    def tick(_result: Any) -> None:
        lowest[0] = min(lowest[0], sim.world.state.robot.battery_wh / capacity)

    sim.log.add_listener(listen)
    sim.add_tick_listener(tick)
    try:
        summary = sim.run()
    finally:
        sim.close()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    reachable = summary["tasks_total"] - len(summary["tasks_undeliverable"])
    evicted = int(summary["missing"].get("planner", {}).get("evicted", 0))
    row = {
        "world": scenario.name,
        "seed": run_seed,
        "layout": scenario.description.split(", ")[1],
        "traits": sorted(traits(scenario)),
        "floor": [scenario.floor.max_x, scenario.floor.max_y],
        "shelves": len(scenario.shelves),
        "movers": len(scenario.moving_obstacles),
        "reachable": reachable,
        "delivered": summary["deliveries_done"],
        "collisions": summary["collisions"],
        "safety_violations": summary["safety_violations"],
        "sim_time": round(summary["sim_time"], 1),
        "duration": scenario.duration,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "battery_lowest": round(lowest[0], 3),
        "battery_end": round(summary["battery_end"], 3),
        "replans": dict(reasons),
        "give_ways": kinds["give_way"],
        "waits": kinds["wait_for_obstacles"],
        "alarms": summary["alarms"],
        "planner_evicted": evicted,
        "evictions": summary["evictions"],
        "ticks": summary["ticks"],
        "capacity_alarms": summary["capacity_alarms"],
        "last_delivery": max(summary["delivery_times"].values(), default=None),
    }
    row["failures"] = failures(row)
    return row


def failures(row: dict[str, Any]) -> list[str]:
    """Which of issue 29's failures a run that left reachable deliveries undone shows."""
    if row["delivered"] >= row["reachable"]:
        return []
    found = []
    churn = row.get("evictions", 0) / max(1, row.get("ticks", 1))
    if row["planner_evicted"] > 0 or "constraint_check" in row["alarms"] or churn >= CHURN:
        found.append("starvation")
    if row["give_ways"] >= GIVE_WAYS:
        found.append("stand-off")
    elif row["replans"].get("obstacle_in_corridor", 0) >= SHUTTLES:
        found.append("shuttling")
    if row["battery_end"] < FLAT:
        found.append("flat battery")
    return found or ["stuck"]


def _seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def _done(path: Path | None) -> dict[tuple[str, int], dict[str, Any]]:
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    if path is not None and path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                row["failures"] = failures(row)  # as judged now
                rows[(row["world"], row["seed"])] = row
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table, then one summary paragraph."""
    head = (
        "| world | layout | floor (m) | shelves | movers | seed | delivered | coll. | viol. "
        "| sim (s) | of (s) | wall (s) | CPU (s) | lowest batt. | re-plans | give-ways | waits "
        "| planner evicted | failure |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        replans = sum(r["replans"].values())
        lines.append(
            f"| {r['world']} | {r['layout']} | {r['floor'][0]:.0f} x {r['floor'][1]:.0f} "
            f"| {r['shelves']} | {r['movers']} | {r['seed']} | {r['delivered']} / "
            f"{r['reachable']} | {r['collisions']} | {r['safety_violations']} "
            f"| {r['sim_time']:.0f} | {r['duration']:.0f} | {r['wall_seconds']:.0f} "
            f"| {r['cpu_seconds']:.0f} | {r['battery_lowest']:.2f} | {replans} "
            f"| {r['give_ways']} | {r['waits']} | {r['planner_evicted']} "
            f"| {', '.join(r['failures']) or '-'} |"
        )
    return "\n".join(lines) + "\n\n" + summary(rows) + "\n"


def summary(rows: Sequence[dict[str, Any]]) -> str:
    runs = len(rows)
    failed = [r for r in rows if r["failures"]]
    kinds = collections.Counter(f for r in failed for f in r["failures"])
    by_layout: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        by_layout[r["layout"]][0] += 1
        by_layout[r["layout"]][1] += bool(r["failures"])
    walls = sorted(r["wall_seconds"] for r in rows)
    cpus = sorted(r["cpu_seconds"] for r in rows)
    return (
        f"{runs} runs: {sum(r['delivered'] for r in rows)} of "
        f"{sum(r['reachable'] for r in rows)} reachable deliveries done; "
        f"{sum(r['collisions'] for r in rows)} collisions, "
        f"{sum(r['safety_violations'] for r in rows)} safety violations; "
        f"{len(failed)} runs left reachable deliveries undone "
        f"({', '.join(f'{k} {v}' for k, v in kinds.most_common())}); by layout, runs "
        f"failed of runs: {', '.join(f'{k} {v[1]}/{v[0]}' for k, v in sorted(by_layout.items()))}. "
        f"Wall time per run: median {walls[runs // 2]:.0f} s, max {walls[-1]:.0f} s, "
        f"total {sum(walls) / 60:.0f} min; CPU time per run: median {cpus[runs // 2]:.0f} s, "
        f"total {sum(cpus) / 60:.0f} min; simulated "
        f"{sum(r['sim_time'] for r in rows) / 3600:.1f} h."
    )


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hard_family", description=__doc__)
    parser.add_argument("--worlds", default="hard:0-29", help="hard:A-B (default hard:0-29)")
    parser.add_argument("--seeds", default="0-1", help="run seeds A-B (default 0-1)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-floor", help="WxH: draw floors at most this big")
    parser.add_argument("--tasks", type=int, help="deliveries per world")
    parser.add_argument("--jsonl", type=Path, help="one line per run, kept across restarts")
    parser.add_argument("--table", type=Path, help="write the Markdown table here")
    args = parser.parse_args(list(argv) if argv is not None else None)
    family, _, seeds = args.worlds.partition(":")
    if family != "hard":
        parser.error("--worlds must be hard:N or hard:A-B")
    max_floor = None
    if args.max_floor:
        w, _, h = args.max_floor.partition("x")
        max_floor = (float(w), float(h))
    done = _done(args.jsonl)
    todo = [
        (seed, run_seed)
        for seed in _seeds(seeds)
        for run_seed in _seeds(args.seeds)
        if (f"hard:{seed}", run_seed) not in done
    ]
    rows = list(done.values())
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(run_one, s, r, max_floor, args.tasks) for s, r in todo]
        for future in as_completed(futures):
            row = future.result()
            rows.append(row)
            if args.jsonl is not None:
                with args.jsonl.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, sort_keys=True) + "\n")
            mark = ", ".join(row["failures"]) or "ok"
            print(
                f"{row['world']} seed {row['seed']}: {row['delivered']}/{row['reachable']} "
                f"{mark} ({row['wall_seconds']:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    rows.sort(key=lambda r: (int(r["world"].partition(":")[2]), r["seed"]))
    text = table(rows)
    if args.table is not None:
        from runtime.files import atomic_output

        with atomic_output(args.table) as fh:
            fh.write(text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
