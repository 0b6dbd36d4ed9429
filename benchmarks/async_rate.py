"""``python -m benchmarks.async_rate [--quick]``: slow cabins against the loop's rate.

Two measurements, each against a baseline taken in the same run:

1. **Achieved rate.** A 20 Hz ``TickLoop`` on a real ``WallClock`` runs an ``LLMCabin``
   (the real ``openai`` client) against a local OpenAI-compatible server
   (``cabins.fake_llm``) whose completions take 0.2 s, 1 s or 5 s, beside a fast cabin
   that counts the ticks it runs on. Reported: the fast cabin's achieved rate (Hz) and the
   share of the grid's slots it ran on, with the LLM cabin asynchronous (the default)
   and, as the baseline, synchronous (deciding inside the tick, as before).
2. **Cost when nothing is slow.** The default scenario's three cabins declared
   asynchronous with zero latency (so they decide exactly as synchronous ones do; a test
   checks the digests agree) against the same run synchronous, in alternating runs: the
   median tick compute time of each and the difference, as a share of the synchronous
   tick (target: under 5 %). Also three trivial cabins on worker threads
   (``ThreadExecutor``) at 20 Hz on a real ``WallClock``: the tick thread's compute and
   the decisions applied per tick, against the same cabins deciding inside the tick.

Results go to ``benchmarks/results/async_rate.json`` and ``async_rate.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
RATE_HZ = 20.0
LATENCIES = (0.2, 1.0, 5.0)


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class _Fast:
    """Counts the ticks it runs on."""

    def __init__(self) -> None:
        from runtime import ContextSpec

        self.spec = ContextSpec(name="fast", board_keys=("pose",))
        self.name = "fast"
        self.steps = 0

    def step(self, view: Any, out: Any) -> None:
        self.steps += 1


def achieved_rate(latency: float, seconds: float, *, asynchronous: bool) -> dict[str, Any]:
    """The fast cabin's rate beside an LLM cabin whose model takes ``latency`` seconds."""
    import openai

    from cabins.fake_llm import FakeLLMServer, FakeReply
    from cabins.llm import EveryTick, LLMCabin, OpenAIChatClient
    from runtime import (
        Assembler,
        CabinMap,
        ContextSpec,
        EventLog,
        Scratchpad,
        StateBoard,
        TickLoop,
        WallClock,
        WorkingMemory,
    )

    spec = ContextSpec(
        name="llm",
        board_keys=("goal:*",),
        weights={"goal:*": 1.0, "note:*": 0.5},
        timing={"mode": "async" if asynchronous else "sync"},
    )
    with FakeLLMServer([FakeReply(content="ok", delay=latency)]) as server:
        client = OpenAIChatClient(
            openai.OpenAI(base_url=server.url, api_key="unused"),
            model="fake",
            timeout=latency + 5.0,
        )
        llm = LLMCabin(spec, client=client, call_when=EveryTick())
        fast = _Fast()
        clock = WallClock()
        board, log = StateBoard(clock=clock), EventLog(clock=clock)
        board.write("goal:deliver:t1", {"pickup": "A", "drop": "B"})
        assembler = Assembler(
            board,
            CabinMap(),
            log,
            WorkingMemory(),
            [spec, fast.spec],
            scratchpads={"llm": Scratchpad()},
        )
        loop = TickLoop(assembler, [llm, fast], RATE_HZ, clock)
        started = time.perf_counter()
        try:
            while time.perf_counter() - started < seconds:
                loop.step()
        finally:
            elapsed = time.perf_counter() - started
            loop.close()
        stats = loop.stats()
        calls = len(server.requests)
    slots = stats.ticks + stats.skipped_ticks
    return {
        "model_latency_s": latency,
        "llm_cabin": "async" if asynchronous else "sync",
        "wall_s": round(elapsed, 2),
        "slots": slots,
        "fast_cabin_ticks": fast.steps,
        "fast_cabin_hz": round(fast.steps / elapsed, 2),
        "share_of_slots": round(fast.steps / slots, 4) if slots else 0.0,
        "per_60_slots": round(60 * fast.steps / slots, 1) if slots else 0.0,
        "overruns": stats.overruns,
        "model_calls": calls,
    }


def _simulation(asynchronous: bool) -> Any:
    from runtime import ContextSpec, load_specs
    from sim.run.harness import SPECS_DIR, Simulation

    specs = load_specs(SPECS_DIR)
    if asynchronous:
        for name in ("planner", "executor", "monitor"):
            specs[name] = ContextSpec.model_validate(
                {**specs[name].model_dump(), "timing": {"mode": "async"}}
            )
    return Simulation(seed=0, specs=specs)


def idle_cost(runs: int, ticks: int) -> dict[str, Any]:
    """Tick compute of the default scenario, synchronous against asynchronous (zero latency):
    the two simulations step in turn, tick by tick (which goes first alternates), so that
    the machine's load falls on both alike; medians over ``runs`` pairs of ``ticks`` ticks
    each."""
    sync: list[float] = []
    asyn: list[float] = []
    for i in range(runs):
        _progress(f"  idle cost: pair {i + 1} of {runs}")
        plain, asynchronous = _simulation(False), _simulation(True)
        try:
            for tick in range(ticks):  # which steps first alternates: no bias by position
                if tick % 2:
                    asyn.append(asynchronous.loop.step().compute_seconds)
                    sync.append(plain.loop.step().compute_seconds)
                else:
                    sync.append(plain.loop.step().compute_seconds)
                    asyn.append(asynchronous.loop.step().compute_seconds)
        finally:
            plain.close()
            asynchronous.close()
        same = plain.summary()["board_digest"] == asynchronous.summary()["board_digest"]
        if not same:
            raise RuntimeError("the asynchronous run decided otherwise than the synchronous one")
    base, with_async = statistics.median(sync) * 1e3, statistics.median(asyn) * 1e3
    return {
        "ticks_per_run": ticks,
        "runs": runs,
        "sync_tick_p50_ms": round(base, 4),
        "async_tick_p50_ms": round(with_async, 4),
        "overhead_ms": round(with_async - base, 4),
        "overhead_share_of_tick": round((with_async - base) / base, 4),
        "same_decisions": True,
    }


class _Trivial:
    def __init__(self, name: str, asynchronous: bool) -> None:
        from runtime import ContextSpec

        self.spec = ContextSpec(
            name=name, board_keys=("x",), timing={"mode": "async" if asynchronous else "sync"}
        )
        self.name = name

    def step(self, view: Any, out: Any) -> None:
        out.write(f"{self.name}:seen", view.tick)


def thread_handoff(ticks: int) -> dict[str, Any]:
    """Three trivial cabins at 20 Hz on a real ``WallClock``: deciding inside the tick, and
    handed to worker threads; the tick thread's compute per tick (p50) and the decisions
    applied per tick of each."""
    from runtime import (
        Assembler,
        CabinMap,
        EventLog,
        StateBoard,
        TickLoop,
        WallClock,
        WorkingMemory,
    )

    def run(asynchronous: bool) -> tuple[float, float, int]:
        cabins = [_Trivial(f"c{i}", asynchronous) for i in range(3)]
        clock = WallClock()
        board = StateBoard(clock=clock)
        assembler = Assembler(
            board, CabinMap(), EventLog(clock=clock), WorkingMemory(), [c.spec for c in cabins]
        )
        loop = TickLoop(assembler, cabins, RATE_HZ, clock)  # threads by default here
        applied = 0
        try:
            for _ in range(ticks):
                applied += len(loop.step().outboxes)
        finally:
            loop.close()
        stats = loop.stats()
        return stats.compute_p50, applied / ticks, stats.overruns

    sync_p50, sync_rate, sync_over = run(False)
    threads_p50, threads_rate, threads_over = run(True)
    period = 1.0 / RATE_HZ
    return {
        "ticks": ticks,
        "sync_tick_p50_us": round(sync_p50 * 1e6, 1),
        "sync_decisions_per_tick": round(sync_rate, 3),
        "sync_overruns": sync_over,
        "threads_tick_p50_us": round(threads_p50 * 1e6, 1),
        "threads_decisions_per_tick": round(threads_rate, 3),
        "threads_overruns": threads_over,
        "threads_extra_share_of_period": round((threads_p50 - sync_p50) / period, 5),
    }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Slow cabins and the loop's rate",
        "",
        f"{results['machine']} · {results['when']} · `python -m benchmarks.async_rate"
        f"{' --quick' if results['quick'] else ''}`",
        "",
        "## Achieved rate of the other cabin at 20 Hz on a WallClock",
        "",
        "| model latency | LLM cabin | wall s | slots | other cabin ticks | Hz | per 60 slots "
        "| model calls |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["achieved_rate"]:
        lines.append(
            f"| {r['model_latency_s']} s | {r['llm_cabin']} | {r['wall_s']} | {r['slots']} | "
            f"{r['fast_cabin_ticks']} | {r['fast_cabin_hz']} | {r['per_60_slots']} | "
            f"{r['model_calls']} |"
        )
    idle = results["idle_cost"]
    hand = results["thread_handoff"]
    lines += [
        "",
        "## Cost of the asynchronous machinery when nothing is slow",
        "",
        f"Default scenario, {idle['runs']} pairs of runs of {idle['ticks_per_run']} ticks "
        "stepped in turn, tick by tick, which first alternating (the same decisions, by "
        "board digest); median tick compute:",
        "",
        "| | tick p50 |",
        "|---|---|",
        f"| three cabins synchronous | {idle['sync_tick_p50_ms']} ms |",
        f"| three cabins asynchronous, zero latency | {idle['async_tick_p50_ms']} ms |",
        f"| difference | {idle['overhead_ms']} ms "
        f"({100 * idle['overhead_share_of_tick']:.1f} % of a tick; target < 5 %) |",
        "",
        f"Worker threads (`ThreadExecutor`): three trivial cabins for {hand['ticks']} ticks at "
        f"20 Hz on a real `WallClock`: the tick thread's compute is {hand['sync_tick_p50_us']} "
        f"µs a tick (p50) with them deciding inside the tick "
        f"({hand['sync_decisions_per_tick']} decisions applied a tick) and "
        f"{hand['threads_tick_p50_us']} µs with them on threads "
        f"({hand['threads_decisions_per_tick']} a tick: each comes back at the next apply "
        f"phase, so a cabin decides every other tick); the difference is "
        f"{100 * hand['threads_extra_share_of_period']:.2f} % of the 50 ms period. Overruns: "
        f"{hand['sync_overruns']} and {hand['threads_overruns']}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import os
    import platform

    from runtime import configure_logging

    parser = argparse.ArgumentParser(prog="python -m benchmarks.async_rate", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter runs (about a minute)")
    args = parser.parse_args(argv)
    configure_logging(level="error")
    seconds = {0.2: 4.0, 1.0: 6.0, 5.0: 12.0} if args.quick else {0.2: 10.0, 1.0: 15.0, 5.0: 30.0}
    rates = []
    for latency in LATENCIES:
        for asynchronous in (True, False):
            length = seconds[latency] if asynchronous else min(seconds[latency], 3 * latency + 2)
            _progress(f"  {latency} s model, {'async' if asynchronous else 'sync'}: {length} s")
            rates.append(achieved_rate(latency, length, asynchronous=asynchronous))
    results = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"CPython {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d"),
        "quick": args.quick,
        "achieved_rate": rates,
        "idle_cost": idle_cost(2 if args.quick else 5, 1000 if args.quick else 2700),
        "thread_handoff": thread_handoff(60 if args.quick else 200),
    }
    from runtime.files import atomic_output

    RESULTS.mkdir(exist_ok=True)
    text = markdown(results)
    with atomic_output(RESULTS / "async_rate.json") as fh:
        fh.write((json.dumps(results, indent=2) + "\n").encode())
    with atomic_output(RESULTS / "async_rate.md") as fh:
        fh.write(text.encode())
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
