"""``python -m benchmarks.tick_parts``: the CPU time each part of the simulator's tick takes,
unprofiled, over the runs of a campaign, and what a speed-up target leaves for each.

``benchmarks.simulator``'s profile splits the tick with cProfile, which inflates the
Python-heavy parts (about 2.5 times here) and so distorts their shares. This times the same
disjoint parts (``benchmarks.simulator``'s breakdown) with the process's CPU clock around
each call, over the runs of ``python -m sim campaign --scenario gen:A-B --faults auto
--seeds S`` (every K-th), each run as the campaign's worker runs it. The timers wrap the
parts' functions for the measurement only and are taken off after it; they add about two
clock reads per part per tick.

The answer is per tick: each part's microseconds and share, the rest of the loop, and,
for a target speed-up of the whole run (``--target``, default 4, issue 34's), the tick's
budget beside each part, so a target no change to one part can reach shows as such.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from benchmarks.simulator import _breakdown, _within


@contextmanager
def _timed(parts: Sequence[tuple[str, Any]], spent: Counter[str]) -> Iterator[None]:
    """Wrap each part's function (a class attribute) so that its calls add their CPU
    nanoseconds to ``spent[label]``; the originals are put back on leaving."""
    clock = time.process_time_ns
    saved: list[tuple[type, str, Any]] = []

    def timer(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += clock() - start

        return timed

    try:
        for label, fn in parts:
            owner = _owner(fn)
            saved.append((owner, fn.__name__, owner.__dict__[fn.__name__]))
            setattr(owner, fn.__name__, timer(label, fn))
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _owner(fn: Any) -> type:
    module = sys.modules[fn.__module__]
    owner: Any = module
    for name in fn.__qualname__.split(".")[:-1]:
        owner = getattr(owner, name)
    if not isinstance(owner, type):
        raise TypeError(f"{fn.__qualname__} is not a method of a class")
    return owner


def measure(
    *,
    worlds: tuple[int, int] = (0, 3),
    seeds: Sequence[int] = (0,),
    every: int = 10,
    target: float = 4.0,
) -> dict[str, Any]:
    """Each part's CPU per tick over every ``every``-th run of the campaign's runs (after
    one untimed run, which pays for the lazy imports)."""
    from runtime.loop import TickLoop
    from runtime.spec import load_specs
    from sim.run.campaign import RunRequest, auto_faults, run_one
    from sim.run.harness import SPECS_DIR

    faults = [None, *auto_faults(load_specs(SPECS_DIR))]
    requests = [
        RunRequest(scenario=f"gen:{n}", seed=s, fault=f)
        for n in range(worlds[0], worlds[1] + 1)
        for s in seeds
        for f in faults
    ][::every]
    if not requests:
        raise ValueError("no run to time")
    run_one(requests[0])
    spent: Counter[str] = Counter()
    total = "tick (TickLoop.step)"
    ticks = 0
    cpu = time.process_time()
    with _timed(((total, TickLoop.step), *_breakdown(), *_within()), spent):
        for request in requests:
            ticks += int(run_one(request)["ticks"])
    cpu = time.process_time() - cpu
    return table(spent, ticks=ticks, runs=len(requests), cpu_s=cpu, total=total, target=target)


def table(
    spent: Counter[str], *, ticks: int, runs: int, cpu_s: float, total: str, target: float = 4.0
) -> dict[str, Any]:
    """The parts' microseconds per tick and shares of the tick; the rest of the loop; the
    tick's budget at ``target`` times the whole run's speed."""
    per_tick = {label: ns / ticks / 1e3 for label, ns in spent.items()}
    tick_us = per_tick.pop(total)
    nested = {label for label, _ in _within()}
    disjoint = {k: v for k, v in per_tick.items() if k not in nested}
    rows = [
        {"part": k, "us_per_tick": round(v, 1), "share_percent": round(100 * v / tick_us, 1)}
        for k, v in sorted(disjoint.items(), key=lambda kv: -kv[1])
    ]
    rest = tick_us - sum(disjoint.values())
    rows.append(
        {
            "part": "rest of the loop",
            "us_per_tick": round(rest, 1),
            "share_percent": round(100 * rest / tick_us, 1),
        }
    )
    run_us = cpu_s / ticks * 1e6
    return {
        "runs": runs,
        "ticks": ticks,
        "run_us_per_tick": round(run_us, 1),
        "tick_us": round(tick_us, 1),
        "parts": rows,
        "within": [
            {"part": k, "us_per_tick": round(v, 1), "share_percent": round(100 * v / tick_us, 1)}
            for k, v in per_tick.items()
            if k in nested
        ],
        "target": target,
        "budget_us_per_tick": round(run_us / target, 1),
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"{result['runs']} runs, {result['ticks']:,} ticks: {result['run_us_per_tick']} µs of "
        f"CPU per tick for the whole run, {result['tick_us']} µs inside `TickLoop.step`; "
        f"{result['target']:g}x the run's speed leaves {result['budget_us_per_tick']} µs a tick.",
        "",
        "| part | µs per tick | share of the tick | alone against the budget |",
        "|---|---:|---:|---:|",
    ]
    budget = result["budget_us_per_tick"]
    for row in [*result["parts"], *result["within"]]:
        lines.append(
            f"| {row['part']} | {row['us_per_tick']} | {row['share_percent']} % | "
            f"{row['us_per_tick'] / budget:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def _span(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        a, b = int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A-B, got {text!r}") from None
    if a < 0 or b < a:
        raise argparse.ArgumentTypeError(f"expected 0 <= A <= B, got {text!r}")
    return a, b


def main(argv: Sequence[str] | None = None) -> int:
    from runtime import configure_logging

    parser = argparse.ArgumentParser(prog="python -m benchmarks.tick_parts", description=__doc__)
    parser.add_argument("--worlds", type=_span, default=(0, 3), help="generated worlds A-B")
    parser.add_argument("--seed", type=int, action="append", help="a seed (repeatable; 0)")
    parser.add_argument("--every", type=int, default=10, help="keep every K-th run")
    parser.add_argument("--target", type=float, default=4.0, help="speed-up to budget for")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error("--every must be >= 1")
    if not args.target > 0:
        parser.error("--target must be > 0")
    configure_logging(level="error")
    result = measure(
        worlds=args.worlds, seeds=tuple(args.seed or (0,)), every=args.every, target=args.target
    )
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
