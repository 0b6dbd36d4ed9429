"""``python -m benchmarks.sim_ab --base REF``: this code's simulator against another version's,
run for run, in one run of the benchmark.

``benchmarks.ab`` times the runtime's tick; this times what users wait for, whole simulator
runs, the same way: two worker processes, one per version (``benchmarks.ab.extract`` takes
the base from git), each running its own code, given the same runs in turn (the first of
each pair alternating), so both meet the same load at almost the same moments and never
compete for a core. Each worker times a run in CPU time (``time.process_time``: time the
process was not running does not count) and reports the run's board digest, so the
comparison also says whether the two versions made the same decisions.

Each worker first runs the first run once, untimed. Without that warm-up, the first timed
run of a side paid for compiling and importing what the simulator imports lazily, and a
fresh ``git archive`` extract (the base) has no bytecode yet where the checkout has: on
identical code the checkout came out about 1.5 % faster (issue 34's round 3), a bias as
large as the changes being measured. A process also keeps its own speed for its whole life
(two extracts of the same commit: one side's process faster in 19 of 25 runs, by 1.4 %),
so the runs are shared among ``--pairs`` fresh pairs of processes (default 4), which
average that out; each pair's own speed-up is reported (``pair_speedups``), and their
spread is what a figure can resolve.

Two workloads:

- ``campaign``: the runs of ``python -m sim campaign --scenario gen:A-B --faults auto
  --seeds ...`` (the fault-free control and every fault ``--faults auto`` derives from the
  version's own specs), each run as the campaign's worker runs it (``run_one``), so the
  figure is runs per CPU-hour; ``--every K`` keeps every K-th run, for a quicker sample.
- ``default``: the default scenario run whole (``Simulation("warehouse").run()``), its
  real-time factor in CPU time (simulated seconds per CPU second).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from benchmarks.ab import ABError, extract

ROOT = Path(__file__).resolve().parents[1]

WORKER = r"""
import io, json, sys, time
from runtime import configure_logging

configure_logging(level="warning", stream=io.StringIO())
workload, seeds = sys.argv[1], sys.argv[4]
first, last, every = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
if workload == "campaign":
    from runtime.spec import load_specs
    from sim.run.campaign import RunRequest, auto_faults, run_one
    from sim.run.harness import SPECS_DIR

    faults = [None, *auto_faults(load_specs(SPECS_DIR))]
    requests = [
        RunRequest(scenario=f"gen:{n}", seed=int(s), fault=f)
        for n in range(first, last + 1)
        for s in seeds.split(",")
        for f in faults
    ][::every]
    print(len(requests), flush=True)

    def run(i):
        r = run_one(requests[i])
        fault = requests[i].fault
        return r["ticks"], r["board_digest"], (fault.label if fault else "-")
else:
    from sim.run.harness import Simulation

    print(first, flush=True)

    def run(i):
        sim = Simulation("warehouse", seed=0, rate_hz=20.0)
        try:
            s = sim.run()
        finally:
            sim.close()
        return s["ticks"], s["board_digest"], str(s["sim_time"])

for line in sys.stdin:
    if not line.strip():
        break
    i = int(line)
    cpu = time.process_time()
    ticks, digest, label = run(i)
    cpu = time.process_time() - cpu
    print(json.dumps([cpu, ticks, digest, label]), flush=True)
"""


class _Worker:
    """One version's simulator in a process of its own, running the runs it is asked for."""

    def __init__(self, tree: Path, args: Sequence[str]) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
        self._errors = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, *args],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
        )
        self.tree = tree
        line = self._line()
        try:
            self.count = int(line)
        except ValueError:
            raise ABError(f"{tree}: the worker did not start: {self._stderr()}") from None

    def run(self, index: int) -> tuple[float, int, str, str]:
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdin.write(f"{index}\n")
        stdin.flush()
        line = self._line()
        try:
            cpu, ticks, digest, label = json.loads(line)
        except ValueError:
            raise ABError(f"{self.tree}: run {index} failed: {self._stderr()}") from None
        return float(cpu), int(ticks), str(digest), str(label)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._errors.close()

    def _line(self) -> str:
        stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        return stdout.readline().strip()

    def _stderr(self) -> str:
        self.process.kill()
        self.process.wait()
        self._errors.seek(0)
        lines = self._errors.read().strip().splitlines()
        return lines[-1] if lines else "(no message)"


def compare(
    base: Path,
    this: Path,
    *,
    workload: str = "campaign",
    worlds: tuple[int, int] = (0, 9),
    seeds: str = "0",
    every: int = 1,
    repeats: int = 3,
    pairs: int = 4,
) -> dict[str, Any]:
    """Run the workload's runs on ``base`` and ``this`` in turn; CPU times, ratio, parity.

    The runs are dealt out among ``pairs`` pairs of fresh worker processes (one per side,
    the first started alternating; run n to pair n mod pairs), each warmed up first."""
    args = [workload, str(worlds[0]), str(worlds[1]) if workload == "campaign" else "0"]
    args += [seeds, str(every)]
    if workload != "campaign":
        args[1] = str(repeats)
    rows: list[dict[str, Any]] = []
    pair, used = 0, 1  # ``used``: the pairs the runs are shared among, known once one starts
    while pair < used:
        started: dict[int, _Worker] = {}
        try:
            for side in (0, 1) if pair % 2 == 0 else (1, 0):
                started[side] = _Worker((base, this)[side], args)
            count = started[0].count
            if started[1].count != count:
                raise ABError(f"the two versions make {count} and {started[1].count} runs")
            used = max(1, min(pairs, count))
            for side in (0, 1) if count else ():
                started[side].run(0)  # warm-up, untimed: see the module docstring
            for n in range(pair, count, used):
                order = (0, 1) if n % 2 == 0 else (1, 0)
                at = n if workload == "campaign" else 0
                got = {side: started[side].run(at) for side in order}
                rows.append(
                    {
                        "run": n,
                        "pair": pair,
                        "label": got[0][3],
                        "ticks": [got[0][1], got[1][1]],
                        "cpu_s": [round(got[0][0], 4), round(got[1][0], 4)],
                        "same_digest": got[0][2] == got[1][2],
                    }
                )
        finally:
            for worker in started.values():
                worker.close()
        pair += 1
    rows.sort(key=lambda r: r["run"])
    return summary(rows, workload=workload)


def summary(rows: Sequence[dict[str, Any]], *, workload: str) -> dict[str, Any]:
    """Both sides' totals, the speed-up and the runs whose digests differ."""
    base_cpu = sum(r["cpu_s"][0] for r in rows)
    this_cpu = sum(r["cpu_s"][1] for r in rows)
    ticks = [sum(r["ticks"][0] for r in rows), sum(r["ticks"][1] for r in rows)]
    out: dict[str, Any] = {
        "workload": workload,
        "runs": len(rows),
        "ticks": ticks,
        "cpu_s": [round(base_cpu, 2), round(this_cpu, 2)],
        "speedup": round(base_cpu / this_cpu, 3) if this_cpu else None,
        "us_per_tick": [
            round(base_cpu / max(ticks[0], 1) * 1e6, 1),
            round(this_cpu / max(ticks[1], 1) * 1e6, 1),
        ],
        "digests_differing": [r["run"] for r in rows if not r["same_digest"]],
        "pair_speedups": _pair_speedups(rows),
        "rows": list(rows),
    }
    if workload == "campaign":
        out["runs_per_cpu_hour"] = [
            round(len(rows) / base_cpu * 3600, 1),
            round(len(rows) / this_cpu * 3600, 1),
        ]
    else:
        sim_time = float(rows[0]["label"]) if rows else 0.0
        per_run = [sorted(r["cpu_s"][side] for r in rows) for side in (0, 1)]
        out["real_time_factor_cpu_median"] = [
            round(sim_time / runs[len(runs) // 2], 1) for runs in per_run
        ]
    return out


def _pair_speedups(rows: Sequence[dict[str, Any]]) -> list[float]:
    """Each worker pair's own speed-up: their spread is the figure's noise floor."""
    out = []
    for pair in sorted({r.get("pair", 0) for r in rows}):
        mine = [r for r in rows if r.get("pair", 0) == pair]
        this_cpu = sum(r["cpu_s"][1] for r in mine)
        out.append(round(sum(r["cpu_s"][0] for r in mine) / this_cpu, 3) if this_cpu else 0.0)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sim_ab",
        description="Whole simulator runs of this checkout against another version's, in turn.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--base", metavar="REF", help="a git ref to compare against")
    where.add_argument("--base-dir", metavar="DIR", type=Path, help="a folder with the base code")
    parser.add_argument("--this-dir", metavar="DIR", type=Path, default=ROOT)
    parser.add_argument("--workload", choices=("campaign", "default"), default="campaign")
    parser.add_argument("--worlds", default="0-9", help="generated worlds A-B (campaign)")
    parser.add_argument("--seeds", default="0", help="seeds, comma-separated (campaign)")
    parser.add_argument("--every", type=int, default=1, help="keep every K-th run (campaign)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side (default)")
    parser.add_argument(
        "--pairs", type=int, default=4, help="fresh pairs of worker processes the runs share"
    )
    parser.add_argument("--out", type=Path, help="also write the result as JSON here")
    args = parser.parse_args(argv)
    try:
        first, _, last = args.worlds.partition("-")
        worlds = (int(first), int(last or first))
        if min(args.every, args.repeats, args.pairs) < 1 or worlds[0] > worlds[1]:
            raise ValueError
    except ValueError:
        print(
            "error: --worlds A-B with A <= B; --every, --repeats and --pairs at least 1",
            file=sys.stderr,
        )
        return 2
    load = [round(x, 2) for x in os.getloadavg()]
    try:
        with tempfile.TemporaryDirectory(prefix="tickwork-sim-ab-") as tmp:
            base = extract(args.base, Path(tmp)) if args.base else args.base_dir
            result = compare(
                base,
                args.this_dir,
                workload=args.workload,
                worlds=worlds,
                seeds=args.seeds,
                every=args.every,
                repeats=args.repeats,
                pairs=args.pairs,
            )
    except ABError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result["base"] = args.base or str(args.base_dir)
    result["load_average"] = {"start": load, "end": [round(x, 2) for x in os.getloadavg()]}
    text = json.dumps(result, sort_keys=True)
    if args.out is not None:
        tmp_out = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp_out.write_text(text + "\n")
        tmp_out.replace(args.out)
    brief = {k: v for k, v in result.items() if k != "rows"}
    print(json.dumps(brief, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
