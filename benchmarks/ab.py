"""``python -m benchmarks.ab --base REF``: this code's tick against another version's, as a ratio.

On a loaded machine two benchmark runs differ by more than most changes do (the py_trees
anchor's own median moved 1.7x between two runs of the same code), so a change is timed
here against a base version in one run: the same world (same size, same seed) is built
by both versions, each in a worker process of its own, and the two are ticked in turn,
tick by tick, so that each of them meets the same load at almost the same moments. While
one ticks, the other waits: they never compete for a core. Each worker times its own
tick (freeze and three views) in CPU time (``time.process_time_ns``, which does not count
the time the process was not running) and in wall time, and reports a fingerprint of
its working set (every view's keys, values, importance, missing reasons and map and event
ids), so the run also says whether the two versions froze the same working sets.

The base is a git ref (its ``runtime``, ``cabins``, ``benchmarks``, ``sim`` and ``specs``
folders, taken with ``git archive``) or a folder holding them (``--base-dir``); the other side is
this checkout (or ``--this-dir``). Both workers run the worker code of this file, so a
base only needs what ``benchmarks.world`` offered when the delta path came in.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from runtime.errors import TickworkError

ROOT = Path(__file__).resolve().parents[1]
TREES = ("runtime", "cabins", "benchmarks", "sim", "specs")
LARGEST = (10_000, 100_000, 1_000_000)
BOOTSTRAP = 2000

WORKER = r"""
import hashlib, io, sys, time
import numpy as np
from benchmarks.world import Driver, RuntimeWorld, WorldSize, generate, load_shipped_specs
from runtime import configure_logging

configure_logging(level="warning", stream=io.StringIO())
board, features, events, seed = (int(a) for a in sys.argv[1:5])
data = generate(WorldSize(board, features, events), np.random.default_rng(seed))
world = RuntimeWorld(data, load_shipped_specs())
driver = Driver(data, world, np.random.default_rng(seed + 1))


def canon(value):  # a value's form whatever order a set or a mapping was built in
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(repr(canon(v)) for v in value))
    if hasattr(value, "items") and callable(value.items):
        return ("map", sorted((repr(canon(k)), repr(canon(v))) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(canon(v) for v in value)
    return repr(value)


def fingerprint(views):
    parts = []
    for view in views:
        items = view.provenance
        parts.append(
            (
                view.cabin,
                tuple((k, canon(items[k].value), round(items[k].importance, 9)) for k in view),
                tuple(sorted(view.missing.items())),
                tuple(f.id for f in view.nearby_map),
                tuple(f.id for f in view.corridor_map),
                tuple((e.kind, e.seq) for e in view.recent_events),
            )
        )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


print("ready", flush=True)
for line in sys.stdin:
    if line.strip() != "tick":
        break
    tick, now = driver.advance()
    wall, cpu = time.perf_counter_ns(), time.process_time_ns()
    ws, views = world.tick(tick, now)
    cpu, wall = time.process_time_ns() - cpu, time.perf_counter_ns() - wall
    print(cpu, wall, fingerprint(views), flush=True)
"""


class ABError(TickworkError):
    """The comparison cannot be made (a bad ref, a base without the benchmark world)."""


def extract(ref: str, into: Path) -> Path:
    """``ref``'s code trees, from ``git archive``, in a folder of ``into``."""
    folder = into / "base"
    folder.mkdir()
    done = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, *TREES],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise ABError(f"--base {ref!r}: git archive failed: {done.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            tar.extractall(folder, filter="data")
        else:  # pragma: no cover - git's own archive of this repository
            tar.extractall(folder)
    return folder


class Worker:
    """One version's world in a process of its own, ticked on request."""

    def __init__(self, tree: Path, *, size: tuple[int, int, int], seed: int) -> None:
        if not (tree / "benchmarks" / "world.py").is_file():
            raise ABError(f"{tree}: no benchmarks/world.py there (not a tickwork tree)")
        # one hash seed for both: a set's order (and so a value's repr) must not differ
        env = {
            **os.environ,
            "PYTHONPATH": str(tree),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
        }
        self.tree = tree
        self._errors = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, *map(str, size), str(seed)],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
        )
        if self._line() != "ready":
            raise ABError(f"{tree}: the worker did not start: {self._stderr()}")

    def tick(self) -> tuple[int, int, str]:
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdin.write("tick\n")
        stdin.flush()
        line = self._line()
        try:
            cpu, wall, digest = line.split()
            return int(cpu), int(wall), digest
        except ValueError:
            raise ABError(f"{self.tree}: the worker failed: {self._stderr()}") from None

    def close(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
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
    size: tuple[int, int, int] = LARGEST,
    seed: int = 0,
    ticks: int = 2000,
    warmup: int = 200,
) -> dict[str, Any]:
    """Tick ``base``'s and ``this``'s worlds in turn; their per-tick costs and ratios."""
    started: list[Worker] = []
    try:
        started.append(Worker(base, size=size, seed=seed))
        started.append(Worker(this, size=size, seed=seed))
        workers = tuple(started)
        samples: list[list[tuple[int, int, str]]] = [[], []]
        for n in range(warmup + ticks):
            order = (0, 1) if n % 2 == 0 else (1, 0)  # neither always goes first
            got = {side: workers[side].tick() for side in order}
            if n >= warmup:
                for side in (0, 1):
                    samples[side].append(got[side])
    finally:
        for worker in started:
            worker.close()
    return summary(samples[0], samples[1], seed=seed) | {
        "size": {"board": size[0], "features": size[1], "events": size[2]},
        "seed": seed,
        "ticks": ticks,
        "warmup": warmup,
    }


def summary(
    base: Sequence[tuple[int, int, str]], this: Sequence[tuple[int, int, str]], *, seed: int
) -> dict[str, Any]:
    """Per-tick figures of both sides, the ratios this/base, and the parity of their sets."""
    out: dict[str, Any] = {}
    for clock, column in (("cpu", 0), ("wall", 1)):
        a = np.array([s[column] for s in base], dtype=np.float64) / 1e3
        b = np.array([s[column] for s in this], dtype=np.float64) / 1e3
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, len(a), size=(BOOTSTRAP, len(a)))
        means = b[picks].mean(axis=1) / a[picks].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        out[clock] = {
            "base_p50_us": round(float(np.median(a)), 1),
            "this_p50_us": round(float(np.median(b)), 1),
            "base_mean_us": round(float(a.mean()), 1),
            "this_mean_us": round(float(b.mean()), 1),
            "ratio_p50": round(float(np.median(b) / np.median(a)), 3),
            "ratio_mean": round(float(b.mean() / a.mean()), 3),
            "ratio_mean_95ci": [round(float(low), 3), round(float(high), 3)],
            "ratio_per_tick_p50": round(float(np.median(b / a)), 3),
        }
    differ = [n for n, (x, y) in enumerate(zip(base, this, strict=True)) if x[2] != y[2]]
    out["parity"] = {
        "ticks_compared": len(base),
        "ticks_differing": len(differ),
        "first_differing": differ[0] if differ else None,
    }
    return out


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ab",
        description="Time this checkout's freeze + three views against another version's, "
        "ticked in turn on the same world, and say whether both froze the same working sets.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--base", metavar="REF", help="a git ref to compare against (main, HEAD~1)")
    where.add_argument("--base-dir", metavar="DIR", type=Path, help="a folder with the base code")
    parser.add_argument(
        "--this-dir",
        metavar="DIR",
        type=Path,
        default=ROOT,
        help="the code to time (this checkout)",
    )
    parser.add_argument(
        "--size",
        default=",".join(map(str, LARGEST)),
        help="board keys, map features, logged events (default: the largest world)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ticks", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    try:
        counts = [int(x) for x in args.size.split(",")]
        if len(counts) != 3 or min(counts) < 1:
            raise ValueError
        size = (counts[0], counts[1], counts[2])
    except ValueError:
        print(
            f"error: --size {args.size!r}: give three positive counts: BOARD,FEATURES,EVENTS",
            file=sys.stderr,
        )
        return 2
    if args.ticks < 1 or args.warmup < 0:
        print("error: --ticks must be at least 1 and --warmup at least 0", file=sys.stderr)
        return 2
    try:
        with tempfile.TemporaryDirectory(prefix="tickwork-ab-") as tmp:
            base = extract(args.base, Path(tmp)) if args.base else args.base_dir
            result = compare(
                base,
                args.this_dir,
                size=size,
                seed=args.seed,
                ticks=args.ticks,
                warmup=args.warmup,
            )
    except ABError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result["base"] = args.base or str(args.base_dir)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        _print(result)
    return 0


def _print(result: dict[str, Any]) -> None:
    size = result["size"]
    print(
        f"this checkout against {result['base']}, board {size['board']:,} · map "
        f"{size['features']:,} · log {size['events']:,}, {result['ticks']} ticks in turn "
        f"(load average {result['load_average'][0]})"
    )
    for clock in ("cpu", "wall"):
        r = result[clock]
        low, high = r["ratio_mean_95ci"]
        print(
            f"  {clock:4}: p50 {r['base_p50_us']} -> {r['this_p50_us']} µs "
            f"(x{r['ratio_p50']}), mean {r['base_mean_us']} -> {r['this_mean_us']} µs "
            f"(x{r['ratio_mean']}, 95% {low}-{high}), per tick x{r['ratio_per_tick_p50']}"
        )
    parity = result["parity"]
    if parity["ticks_differing"]:
        print(
            f"  working sets differ in {parity['ticks_differing']} of "
            f"{parity['ticks_compared']} ticks (first: tick {parity['first_differing']})"
        )
    else:
        print(f"  the same working sets in all {parity['ticks_compared']} ticks")


if __name__ == "__main__":
    raise SystemExit(main())
