"""``python -m benchmarks.hard_campaign``: issue 29's campaign over the ``hard:N`` family.

The runs ``python -m sim campaign --scenario hard:A-B --seeds S --faults none|auto`` makes,
judged the same way (``sim.run.campaign.expectations`` and ``judged``: reactions within
``--within`` ticks of a fault's start, the run's verdict), one at a time in this process
(``--workers 1`` of the campaign), with what the campaign's results do not carry: each
run's capacity-pressure episodes by spec (``capacity_pressure`` of the summary), its wall
and CPU seconds and its stalled episodes. ``--jsonl`` keeps one line per run as it ends (a
run already in the file is not run again: the campaign takes hours on this machine, and
can be stopped and started again). Each line names the code it ran (``code``: the
commit, and a digest of the changes to it); a file holding runs of other code is refused
before anything runs when runs would be added to it (a campaign resumed across commits
had mixed two versions of the planner in one table without a word); ``--table`` writes
the figures as Markdown: collisions, safety violations, missed reactions, deliveries of
the reachable tasks, stalled runs, capacity-pressure episodes and wall time, fault-free
and under faults.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from runtime.errors import TickworkError

ROOT = Path(__file__).resolve().parents[1]


class CampaignFileError(TickworkError):
    """``--jsonl`` holds runs of other code than the runs the campaign would add."""


def code_version(root: Path = ROOT) -> str:
    """The code runs are made with: the checkout's commit, with ``+`` and a digest of
    ``git diff HEAD`` when tracked files changed; ``unknown`` outside a git checkout (two
    unknown versions cannot be told apart, and are taken for one)."""
    head = _git(root, "rev-parse", "HEAD")
    if head is None:
        return "unknown"
    diff = _git(root, "diff", "HEAD")
    if diff is None:
        return "unknown"
    if not diff:
        return head.strip()
    return f"{head.strip()}+{hashlib.sha256(diff.encode()).hexdigest()[:12]}"


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def check_same_code(done: dict[tuple[int, int, str], dict[str, Any]], code: str) -> None:
    """Refuse (``CampaignFileError``) to add runs of ``code`` to runs of other code."""
    other = sorted({str(row.get("code", "unknown")) for row in done.values()} - {code})
    if other:
        raise CampaignFileError(
            f"--jsonl holds runs of other code ({', '.join(other)}) than this checkout's "
            f"({code}): start a fresh file for this code, or run the code those runs were "
            "made with"
        )


def run_one(world: int, seed: int, fault_text: str | None) -> dict[str, Any]:
    """One run of ``hard:world`` on ``seed`` under ``fault_text`` (None: fault-free), judged
    as a campaign judges it, with its pressure, time and stalls."""
    from runtime.logs import configure_logging
    from sim.faults.model import parse_fault
    from sim.run.campaign import RunRequest, observed_run

    configure_logging(level="error", stream=io.StringIO())
    fault = parse_fault(fault_text) if fault_text is not None else None
    request = RunRequest(scenario=f"hard:{world}", seed=seed, fault=fault)
    started, cpu = time.perf_counter(), time.process_time()
    run = observed_run(request)
    summary = run.summary
    result = run.judged(request)
    return {
        "world": world,
        "seed": seed,
        "fault": request.label,
        "passed": result["passed"],
        "status": result["verdict"]["status"],
        "verdict": result["verdict"]["line"],
        "reactions_ok": result["reactions_ok"],
        "expected": len(result["expected"]),
        "collisions": result["collisions"],
        "safety_violations": result["safety_violations"],
        "delivered": result["deliveries_done"],
        "reachable": result["tasks_total"] - result["tasks_undeliverable"],
        "stalled_episodes": summary.get("stalled_episodes", 0),
        "abandoned": len(summary.get("tasks_abandoned") or {}),
        "capacity_pressure": summary.get("capacity_pressure", {}),
        "sim_time": round(summary["sim_time"], 1),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
    }


def _range(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def _done(path: Path | None) -> dict[tuple[int, int, str], dict[str, Any]]:
    rows: dict[tuple[int, int, str], dict[str, Any]] = {}
    if path is not None and path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows[(row["world"], row["seed"], row["fault"])] = row
    return rows


def figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The campaign's figures over ``rows``."""
    pressure: Counter[str] = Counter()
    for r in rows:
        pressure.update(r["capacity_pressure"])
    walls = sorted(r["wall_seconds"] for r in rows) or [0.0]
    return {
        "runs": len(rows),
        "passed": sum(r["passed"] for r in rows),
        "collisions": sum(r["collisions"] for r in rows),
        "safety_violations": sum(r["safety_violations"] for r in rows),
        "missed_reactions": sum(
            1 for r in rows if r["fault"] != "(none)" and not r["reactions_ok"]
        ),
        "delivered": sum(r["delivered"] for r in rows),
        "reachable": sum(r["reachable"] for r in rows),
        "stalled_runs": sum(1 for r in rows if r["stalled_episodes"]),
        "stalled_episodes": sum(r["stalled_episodes"] for r in rows),
        "abandoned": sum(r["abandoned"] for r in rows),
        "pressure_episodes": sum(pressure.values()),
        "pressure_by_spec": dict(sorted(pressure.items())),
        "wall_total_s": round(sum(walls), 1),
        "wall_median_s": walls[len(walls) // 2],
        "wall_max_s": walls[-1],
        "cpu_total_s": round(sum(r["cpu_seconds"] for r in rows), 1),
        "failed": sorted(
            f"hard:{r['world']} seed {r['seed']} {r['fault']}: {r['verdict']}"
            for r in rows
            if not r["passed"]
        ),
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The figures, fault-free and under faults, as Markdown."""
    lines = [
        "| runs | passed | collisions | safety violations | missed reactions | delivered "
        "| stalled runs | abandoned tasks | capacity pressure episodes | wall time |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for name, part in (
        ("fault-free", [r for r in rows if r["fault"] == "(none)"]),
        ("under faults", [r for r in rows if r["fault"] != "(none)"]),
    ):
        if not part:
            continue
        f = figures(part)
        pct = 100.0 * f["delivered"] / f["reachable"] if f["reachable"] else 100.0
        missed = f["missed_reactions"] if name != "fault-free" else "-"
        lines.append(
            f"| {name}: {f['runs']} | {f['passed']} | {f['collisions']} "
            f"| {f['safety_violations']} | {missed} "
            f"| {f['delivered']} / {f['reachable']} ({pct:.1f} %) | {f['stalled_runs']} "
            f"| {f['abandoned']} | {f['pressure_episodes']} "
            f"| {f['wall_total_s'] / 3600:.1f} h (median {f['wall_median_s']:.0f} s, max "
            f"{f['wall_max_s']:.0f} s) |"
        )
        if f["failed"]:
            notes.append(
                f"Runs that did not pass ({name}):\n\n"
                + "\n".join(f"- {line}" for line in f["failed"])
            )
    return "\n".join(lines) + "\n\n" + "\n\n".join(notes) + ("\n" if notes else "")


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hard_campaign", description=__doc__)
    parser.add_argument("--worlds", default="0-99", help="hard:A-B as A-B (default 0-99)")
    parser.add_argument("--seeds", default="0-2", help="run seeds A-B (default 0-2)")
    parser.add_argument("--faults", choices=("none", "auto"), default="none")
    parser.add_argument("--jsonl", type=Path, help="one line per run, kept across restarts")
    parser.add_argument("--table", type=Path, help="write the Markdown figures here")
    args = parser.parse_args(list(argv) if argv is not None else None)
    from runtime.spec import load_specs
    from sim.run.campaign import auto_faults
    from sim.run.harness import SPECS_DIR

    faults: list[str | None] = [None]
    if args.faults == "auto":
        faults += [f.label for f in auto_faults(load_specs(SPECS_DIR))]
    done = _done(args.jsonl)
    todo = [
        (world, seed, fault, fault if fault is not None else "(none)")
        for world in _range(args.worlds)
        for seed in _range(args.seeds)
        for fault in faults
    ]
    todo = [t for t in todo if (t[0], t[1], t[3]) not in done]
    versions = sorted({str(row.get("code", "unknown")) for row in done.values()})
    if len(versions) > 1:  # a file of before: its table mixes code, and says so
        print(f"note: --jsonl holds runs of {len(versions)} code versions", file=sys.stderr)
    code = code_version() if todo else ""
    if todo:
        try:
            check_same_code(done, code)
        except CampaignFileError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    for world, seed, fault, label in todo:
        key = (world, seed, label)
        row = {**run_one(world, seed, fault), "code": code}
        done[key] = row
        if args.jsonl is not None:
            with args.jsonl.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
        print(
            f"hard:{world} seed {seed} {row['fault']}: {row['status']} "
            f"{row['delivered']}/{row['reachable']} ({row['wall_seconds']:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    text = table(list(done.values()))
    if args.table is not None:
        from runtime.files import atomic_output

        with atomic_output(args.table) as fh:
            fh.write(text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
