"""The simulator's command line: run scenarios headless, list them, check cabin specs.

Handlers import what they need when they run, so ``--help`` stays instant. Output
is for people (tables, a progress bar on a terminal) unless ``--json`` asks for
one JSON object on standard output. Exit status: 0 when all is well, 1 when a
run had a safety violation or a collision, 2 for bad input (a bad scenario,
spec or argument), with a message naming the file and the key.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

RUN_EPILOG = """\
examples:
  python -m sim run                              the default warehouse, seed 0
  python -m sim run --scenario narrow_aisles --seed 3 --json
  python -m sim run --cabin greeter:Greeter@specs/greeter.toml
  python -m sim run --record run.mcap --checkpoint-every 200   checkpoints to run.ckpt
  python -m sim run --resume run.ckpt            go on from the last checkpoint
  python -m sim run --memory warehouse.sqlite    remember blocked aisles for the next run
exit status: 0 ok, 1 a safety violation or a collision happened, 2 bad input
"""


CAMPAIGN_EPILOG = """\
examples:
  python -m sim campaign --faults auto --seeds 0-2
  python -m sim campaign --fault missing:executor:event:action_failed*@100-400 --seeds 0-9
  python -m sim campaign --faults auto --backend ray --address ray://head:10001 --out r.json
  python -m sim campaign --faults auto --memory shared.sqlite   runs learn from each other
exit status: 0 every declared reaction seen and no safety violation, 1 otherwise, 2 bad input
"""


COMMAND_MODULES = ("sim.cmd_recording", "sim.cmd_analysis", "sim.cmd_report")
"""Modules that add commands: each has ``register(subparsers)``; handlers may raise
``InputError`` for bad input."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sim",
        description="tickwork's headless warehouse simulator.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from sim.fault_grammar import GRAMMAR

    run = sub.add_parser(
        "run",
        help="run a scenario headless and summarise it",
        epilog=RUN_EPILOG + "\n" + GRAMMAR,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--scenario",
        metavar="NAME|PATH",
        help="a shipped scenario name (see `python -m sim scenarios`) or a TOML file "
        "(default: warehouse)",
    )
    run.add_argument("--seed", type=int, help="random seed (default: 0)")
    length = run.add_mutually_exclusive_group()
    length.add_argument(
        "--ticks",
        type=_positive_int,
        metavar="N",
        help="run at most N ticks (default: the scenario's duration)",
    )
    length.add_argument(
        "--duration", type=_positive_float, metavar="S", help="run at most S simulated seconds"
    )
    run.add_argument(
        "--rate",
        type=_positive_float,
        metavar="HZ",
        help="tick rate (default: the scenario's, usually 20)",
    )
    run.add_argument(
        "--capacity",
        type=_positive_int,
        metavar="N",
        help="working-memory capacity in items (default: 64)",
    )
    run.add_argument(
        "--cabin",
        action="append",
        default=[],
        metavar="MODULE:CLASS@SPEC",
        help="also run your own cabin: CLASS from MODULE (importable from the "
        "current directory), built as CLASS(spec) on the spec file SPEC; "
        "repeatable",
    )
    run.add_argument(
        "--specs",
        metavar="DIR",
        help="folder of the built-in cabins' specs (default: the shipped specs/)",
    )
    run.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="FAULT",
        help="inject a fault (repeatable; grammar below and in the README)",
    )
    run.add_argument("--faults", metavar="FILE", help="inject the [[fault]] tables of a TOML file")
    run.add_argument(
        "--record",
        metavar="FILE.mcap",
        help="record the run to an MCAP file (inspect it with `python -m sim "
        "inspect`; Foxglove opens it too)",
    )
    run.add_argument(
        "--report",
        metavar="FILE.html",
        help="write the run as one self-contained HTML page (as `python -m sim "
        "report` does); records to a temporary file unless --record is given",
    )
    run.add_argument(
        "--full",
        action="store_true",
        help="run the whole duration even after every delivery is done",
    )
    run.add_argument(
        "--checkpoint-every",
        type=_positive_int,
        metavar="N",
        help="write the whole state of the run to a checkpoint every N ticks "
        "(atomically; the recording is flushed first)",
    )
    run.add_argument(
        "--checkpoint",
        metavar="FILE",
        help="the checkpoint file (default: FILE.ckpt beside --record FILE.mcap, "
        "else SCENARIO-seedN.ckpt in the current folder; on --resume, the "
        "checkpoint resumed from)",
    )
    run.add_argument(
        "--resume",
        metavar="CKPT",
        help="go on with the run a checkpoint holds, to the end the run would "
        "have reached (its settings and recording come from the checkpoint; "
        "--ticks, --duration and --full set a new end, --checkpoint-every "
        "and --checkpoint a new cadence)",
    )
    run.add_argument(
        "--memory",
        metavar="FILE.sqlite",
        help="the planner's long-term memory: it recalls where earlier runs of "
        "this scenario found the way blocked, and remembers where this run "
        "does (created if absent; the run then depends on what the file "
        "holds)",
    )
    run.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    run.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="runtime log events at or above this level go to stderr (default: warning)",
    )
    run.set_defaults(handler=cmd_run)

    campaign = sub.add_parser(
        "campaign",
        help="run scenarios x seeds x faults and check every declared reaction",
        epilog=CAMPAIGN_EPILOG + "\n" + GRAMMAR,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    campaign.add_argument(
        "--scenario",
        action="append",
        metavar="NAME|PATH",
        help="a scenario (repeatable; default: warehouse)",
    )
    campaign.add_argument(
        "--specs",
        metavar="DIR",
        help="folder of the built-in cabins' specs (default: the shipped "
        "specs/); --faults auto reads their required patterns",
    )
    campaign.add_argument(
        "--seeds",
        default="0-2",
        type=_seeds,
        metavar="LIST",
        help="seeds: 0-4, or 1,5,9 (default: 0-2)",
    )
    campaign.add_argument(
        "--fault", action="append", default=[], metavar="FAULT", help="a fault to run (repeatable)"
    )
    campaign.add_argument(
        "--faults",
        metavar="auto|FILE",
        help="'auto': one missing-item fault per required pattern of every "
        "spec plus one of each other kind; or a TOML fault file",
    )
    campaign.add_argument(
        "--ticks",
        type=_positive_int,
        metavar="N",
        help="ticks per run (default: the scenario's duration; a run stops "
        "early once its deliveries are done and its fault was judged)",
    )
    campaign.add_argument(
        "--within",
        type=_positive_int,
        default=40,
        metavar="K",
        help="a declared reaction must show within K ticks of the fault's start (default: 40)",
    )
    campaign.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="parallel runs (default: the number of CPUs)",
    )
    campaign.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="local process pool (default) or Ray (pip install 'tickwork[ray]')",
    )
    campaign.add_argument(
        "--address", metavar="ADDR", help="Ray cluster address (default: start a local Ray)"
    )
    campaign.add_argument("--out", metavar="FILE", help="write every run's result as JSON")
    campaign.add_argument(
        "--memory",
        metavar="FILE.sqlite",
        help="one long-term memory file for every run of the campaign "
        "(parallel runs share it): the planners remember where the way "
        "was blocked and recall it. Each run recalls what the file holds "
        "when it starts, so results depend on the order the runs happen "
        "to run in (the backend, the workers); without --memory they "
        "do not",
    )
    campaign.add_argument(
        "--report",
        metavar="FILE.html",
        help="write the fault matrix as one self-contained HTML page",
    )
    campaign.add_argument(
        "--json", action="store_true", help="print the results as one JSON object"
    )
    campaign.set_defaults(handler=cmd_campaign)

    scenarios = sub.add_parser("scenarios", help="list the shipped scenarios")
    scenarios.add_argument("--json", action="store_true")
    scenarios.set_defaults(handler=cmd_scenarios)

    check = sub.add_parser("check-spec", help="validate cabin specs and show what each receives")
    check.add_argument("files", nargs="+", metavar="FILE", help="spec TOML files or folders")
    check.add_argument(
        "--scenario",
        default="warehouse",
        metavar="NAME|PATH",
        help="show what each spec would receive in this scenario (default: warehouse)",
    )
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=cmd_check_spec)

    import importlib

    for module in COMMAND_MODULES:  # light modules: their handlers import what they need
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return code


class InputError(Exception):
    """Bad input from the user: reported in one message, exit status 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


# -- run ---------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from sim.cmd_report import run_report_recording

    scratch = run_report_recording(args)  # --report without --record: a temporary recording
    try:
        return _run(args, scratch)
    finally:
        if scratch is not None:
            scratch.unlink(missing_ok=True)


def _run(args: argparse.Namespace, scratch: Any) -> int:
    from runtime import configure_logging
    from sim.checkpoint import Checkpointer, CheckpointError
    from sim.harness import failed

    configure_logging(json=args.json, level=args.log_level)
    resumed = _resumed_run(args) if args.resume is not None else None
    if resumed is not None:
        sim, plan = resumed.sim, resumed.plan
    else:
        sim, plan = _new_run(args, record=scratch)
    if args.report is not None and scratch is None and plan.record is None:
        sim.close()
        raise InputError(
            f"--report {args.report!r}: the resumed run records nothing (resume "
            "a run started with --record to report on it)"
        )
    checkpointer = Checkpointer(plan) if plan.every is not None else None
    remaining = max(0, plan.ticks - sim.loop.tick)
    previous = _stop_on_signals(sim)
    try:
        if args.json or not sys.stdout.isatty():
            summary = sim.run(remaining, until_done=plan.until_done, after_tick=checkpointer)
        else:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            with Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total} ticks"),
                TimeRemainingColumn(),
                transient=True,
            ) as bar:
                task = bar.add_task(
                    f"{sim.scenario.name} seed {sim.seed}",
                    total=plan.ticks,
                    completed=sim.loop.tick,
                )
                summary = sim.run(
                    remaining,
                    until_done=plan.until_done,
                    after_tick=checkpointer,
                    progress=lambda tick: bar.update(task, completed=tick),
                )
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    finally:
        sim.close()
        _restore_signals(previous)
    if args.json:
        import json

        print(json.dumps(summary, sort_keys=True))
    else:
        from rich.console import Console

        console = Console()
        if resumed is not None:
            console.print(
                f"resumed at tick {resumed.info.tick} from {resumed.info.path}", highlight=False
            )
        _print_summary(summary)
        if checkpointer is not None and checkpointer.last is not None:
            console.print(
                f"{checkpointer.written} checkpoint(s) written, the last at tick "
                f"{checkpointer.last.tick}: {checkpointer.last.path}",
                highlight=False,
            )
    if args.report is not None:
        from sim.cmd_report import write_run_page

        write_run_page(args.report, scratch or plan.record, summary, quiet=args.json)
    if summary["stopped_by"] is not None:
        import signal

        print(
            f"stopped by {summary['stopped_by']} after tick {summary['ticks']}"
            + (f"; the recording {plan.record} is complete" if plan.record else ""),
            file=sys.stderr,
        )
        number = getattr(signal.Signals, str(summary["stopped_by"]), signal.SIGINT)
        return 128 + int(number)
    return EXIT_FAILED if failed(summary) else EXIT_OK


def _new_run(args: argparse.Namespace, *, record: Any = None) -> tuple[Any, Any]:
    """The simulation and the run plan of a run started from scratch."""
    import os
    import sqlite3

    from runtime import SpecError
    from sim.checkpoint import RunPlan
    from sim.harness import Simulation
    from sim.scenario import ScenarioError

    if args.checkpoint is not None and args.checkpoint_every is None:
        raise InputError(
            f"--checkpoint {args.checkpoint!r} needs --checkpoint-every N (how often to write it)"
        )
    seed = 0 if args.seed is None else args.seed
    try:
        extra = [_load_cabin(text) for text in args.cabin]
        specs = None
        if args.specs:
            from runtime import load_specs

            specs = load_specs(args.specs)
        faults = _faults(args.fault, args.faults)
        sim = Simulation(
            args.scenario or "warehouse",
            seed=seed,
            rate_hz=args.rate,
            capacity=64 if args.capacity is None else args.capacity,
            specs=specs,
            extra=extra,
            faults=faults,
            record=args.record if args.record is not None else record,
            long_term=args.memory,
        )
    except (ScenarioError, SpecError) as exc:
        raise InputError(str(exc)) from None
    except sqlite3.Error as exc:
        raise InputError(f"--memory {args.memory!r}: not a usable SQLite file ({exc})") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(
            f"--record {args.record!r}: cannot write it ({exc.strerror or exc})"
        ) from None

    if args.ticks is not None:
        ticks = args.ticks
    elif args.duration is not None:
        ticks = max(1, round(args.duration * sim.rate_hz))
    else:
        ticks = sim.max_ticks
    checkpoint = None
    if args.checkpoint_every is not None:
        if args.checkpoint is not None:
            checkpoint = args.checkpoint
        elif args.record is not None:
            checkpoint = os.path.splitext(args.record)[0] + ".ckpt"
        else:
            checkpoint = f"{sim.scenario.name}-seed{seed}.ckpt"
        checkpoint = os.path.abspath(checkpoint)
        if not os.path.isdir(os.path.dirname(checkpoint)):
            sim.close()
            raise InputError(f"--checkpoint {checkpoint!r}: its folder does not exist")
    plan = RunPlan(
        ticks=ticks,
        until_done=not args.full,
        record=None if args.record is None else os.path.abspath(args.record),
        every=args.checkpoint_every,
        path=checkpoint,
        cabins=tuple(args.cabin),
    )
    return sim, plan


def _resumed_run(args: argparse.Namespace) -> Any:
    """The checkpoint named by ``--resume``, loaded and ready to go on."""
    import os

    from sim.checkpoint import CheckpointError, read_info, resume

    fixed = {
        "--scenario": args.scenario,
        "--seed": args.seed,
        "--rate": args.rate,
        "--capacity": args.capacity,
        "--specs": args.specs,
        "--faults": args.faults,
        "--record": args.record,
        "--cabin": args.cabin or None,
        "--fault": args.fault or None,
        "--memory": args.memory,
    }
    given = [name for name, value in fixed.items() if value is not None]
    if given:
        raise InputError(
            f"--resume goes on with the run its checkpoint holds, with that run's "
            f"settings: {', '.join(given)} cannot be given with it"
        )
    try:
        info = read_info(args.resume)
        ticks = args.ticks
        if args.duration is not None:
            ticks = max(1, round(args.duration * float(info.run["rate_hz"])))
        if info.plan.cabins and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # where --cabin modules were imported from
        checkpoint = args.checkpoint
        if checkpoint is not None and args.checkpoint_every is None and info.plan.every is None:
            raise InputError(
                f"--checkpoint {checkpoint!r} needs --checkpoint-every N "
                "(the resumed run wrote no checkpoints of its own)"
            )
        return resume(
            args.resume,
            ticks=ticks,
            until_done=False if args.full else None,
            every=args.checkpoint_every,
            checkpoint=checkpoint,
        )
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{args.resume}: a checkpoint with bad run settings ({exc})") from None


def _stop_on_signals(sim: Any) -> dict[int, Any]:
    """Make Ctrl-C and SIGTERM stop the run between two ticks, so that the recording is
    finished whole; a second signal interrupts at once. Returns the previous handlers."""
    import signal

    received: list[int] = []

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        if len(received) > 1:  # the second one: stop now, as the signal would have
            if signum == signal.SIGINT:
                raise KeyboardInterrupt(f"signal {signum}")
            raise SystemExit(128 + signum)
        sim.request_stop(signal.Signals(signum).name)

    return {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}


def _restore_signals(previous: dict[int, Any]) -> None:
    import signal

    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _faults(texts: Sequence[str], path: str | None) -> list[Any]:
    from sim.faults import FaultError, load_faults, parse_fault

    try:
        faults = [parse_fault(text) for text in texts]
        if path is not None:
            faults.extend(load_faults(path))
    except FaultError as exc:
        raise InputError(str(exc)) from None
    return faults


def _load_cabin(text: str) -> Any:
    """``MODULE:CLASS@SPEC`` → an ExtraCabin."""
    import importlib
    import os

    from runtime import SpecError, load_spec
    from sim.harness import ExtraCabin

    target, sep, spec_path = text.partition("@")
    module_name, colon, class_name = target.partition(":")
    if not sep or not colon or not module_name or not class_name or not spec_path:
        raise InputError(
            f"--cabin {text!r}: expected MODULE:CLASS@SPEC, e.g. greeter:Greeter@specs/greeter.toml"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"--cabin {text!r}: cannot import module {module_name!r}: {exc}") from None
    factory = getattr(module, class_name, None)
    if factory is None or not callable(factory):
        raise InputError(f"--cabin {text!r}: module {module_name!r} has no class {class_name!r}")
    try:
        spec = load_spec(spec_path)
    except SpecError as exc:
        raise InputError(str(exc)) from None
    return ExtraCabin(spec=spec, factory=factory)


def _print_summary(s: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    ok = not (s["safety_violations"] or s["collisions"])
    title = (
        f"{s['scenario']} · seed {s['seed']} · {s['ticks']} ticks · {s['sim_time']:.1f} s simulated"
    )
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    mean = s["mean_delivery_time"]
    table.add_row(
        "deliveries",
        f"{s['deliveries_done']} done of {s['deliveries_assigned']} "
        f"assigned ({s['tasks_total']} in the scenario)",
    )
    table.add_row("mean delivery time", "-" if mean is None else f"{mean:.1f} s")
    table.add_row("safety violations", _count(s["safety_violations"]))
    table.add_row("collisions", _count(s["collisions"]))
    table.add_row("speed-limit violations", str(s["speed_violations"]))
    table.add_row("re-plans", str(s["replans"]))
    table.add_row("failed actions", str(s["actions_failed"]))
    table.add_row("alarms", _counts(s["alarms"]))
    table.add_row("emergency stops", _counts(s["emergency_stops"]))
    table.add_row("cabin failures", str(s["cabin_failures"]))
    table.add_row("evictions", str(s["evictions"]))
    table.add_row("capacity alarms", str(s["capacity_alarms"]))
    for cabin, reasons in s["missing"].items():
        table.add_row(
            f"missing items · {cabin}", f"{_counts(reasons)} (pattern-ticks)" if reasons else "none"
        )
    table.add_row(
        "tick compute",
        f"p50 {s['tick_compute_p50_ms']:.2f} ms · p99 {s['tick_compute_p99_ms']:.2f} ms",
    )
    rtf = s["real_time_factor"]
    table.add_row("real-time factor", "-" if rtf is None else f"{rtf:.0f}x")
    console.print(table)
    if ok:
        console.print("[green]no safety violation, no collision[/green]")
    else:
        console.print("[red]FAILED: a safety violation or a collision happened[/red]")


def _count(n: int) -> str:
    return "0" if n == 0 else f"[red]{n}[/red]"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "none"


def _seeds(text: str) -> list[int]:
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            if dash:
                seeds.extend(range(int(low), int(high) + 1))
            else:
                seeds.append(int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected seeds like 0-4 or 1,5,9, got {text!r}"
        ) from None
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"expected non-negative seeds, got {text!r}")
    return seeds


# -- campaign ----------------------------------------------------------------------------------


def cmd_campaign(args: argparse.Namespace) -> int:
    import json
    import os

    from runtime import SpecError, configure_logging, load_specs
    from sim import campaign as cp
    from sim.faults import FaultError, FaultPlan
    from sim.harness import BUILTIN_CABINS, SPECS_DIR
    from sim.scenario import ScenarioError, load_scenario

    configure_logging(level="error")
    scenarios = args.scenario or ["warehouse"]
    try:
        worlds = {name: load_scenario(name) for name in scenarios}
        specs = load_specs(args.specs or SPECS_DIR)
    except (ScenarioError, SpecError) as exc:
        raise InputError(str(exc)) from None
    absent = [name for name in BUILTIN_CABINS if name not in specs]
    if absent:
        raise InputError(
            f"--specs {args.specs}: no spec for the built-in cabin(s) {', '.join(absent)}"
        )
    others = sorted(set(specs) - set(BUILTIN_CABINS))
    if others:  # a campaign runs the built-in cabins only
        print(
            f"note: --specs {args.specs}: campaigns run the built-in cabins; ignoring the "
            f"spec(s) of {', '.join(others)}",
            file=sys.stderr,
        )
        specs = {name: specs[name] for name in BUILTIN_CABINS}
    if args.report is not None:
        from sim.cmd_report import check_report_target

        check_report_target(args.report)
    faults = _faults(args.fault, None if args.faults in (None, "auto") else args.faults)
    if args.faults == "auto":
        faults.extend(cp.auto_faults(specs))
    try:
        FaultPlan(faults).check_cabins(specs)
    except FaultError as exc:
        raise InputError(str(exc)) from None
    if not faults:
        raise InputError("no faults: give --fault FAULT (repeatable) or --faults auto|FILE")
    shared: dict[str, Any] = {}
    if args.memory is not None:
        shared["memory"] = _memory_file(args.memory)
    requests = [
        cp.RunRequest(
            scenario=name,
            seed=seed,
            fault=fault,
            ticks=args.ticks,
            within=args.within,
            specs=specs,
            world=worlds[name],
            **shared,
        )
        for name in scenarios
        for seed in args.seeds
        for fault in [None, *faults]
    ]
    workers = args.workers or os.cpu_count() or 1
    if args.backend == "ray":
        try:
            ray_executor = cp.RayExecutor(address=args.address)
        except ImportError:
            raise InputError("the Ray backend needs Ray: pip install 'tickwork[ray]'") from None
        campaign = cp.Campaign(
            requests, lambda _n: ray_executor, workers, lost_errors=cp.ray_lost_errors()
        )
    else:
        campaign = cp.Campaign(requests, cp.local_executor, workers)
    if args.json or not sys.stderr.isatty():
        results = campaign.run()
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("[bold]campaign"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            transient=True,
        ) as bar:
            task = bar.add_task("", total=len(requests))
            campaign.progress = lambda r: bar.update(
                task, advance=1, description=f"{r['fault']} seed {r['seed']}"
            )
            results = campaign.run()
    rows = cp.table(results)
    report = {
        "scenarios": scenarios,
        "seeds": args.seeds,
        "within": args.within,
        "backend": args.backend,
        "passed": cp.passed(results),
        "table": rows,
        "runs": results,
    }
    if args.memory is not None:
        report["memory"] = shared["memory"]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2, sort_keys=True)
    if args.report is not None:
        from sim.cmd_report import write_campaign_page

        write_campaign_page(args.report, report, quiet=args.json)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        _print_campaign(rows, report["passed"])
    return EXIT_OK if report["passed"] else EXIT_FAILED


def _memory_file(path: str) -> str:
    """``path`` as an absolute path to a usable long-term memory file (created if absent)."""
    import os
    import sqlite3

    from runtime import LongTermMemory

    absolute = os.path.abspath(path)
    try:
        LongTermMemory(absolute).close()  # created once, before the workers race to
    except sqlite3.Error as exc:
        raise InputError(f"--memory {path!r}: not a usable SQLite file ({exc})") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return absolute


def _print_campaign(rows: list[dict[str, Any]], ok: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="fault campaign", title_justify="left")
    table.add_column("fault", overflow="fold")
    table.add_column("declared reactions", overflow="fold")
    for name in ("seen in", "deliveries", "safety"):
        table.add_column(name)
    for row in rows:
        seen = f"{row['reactions_seen']} of {row['runs']}"
        if row["reactions_seen"] < row["runs"]:
            seen = f"[red]{seen}[/red]"
        unsafe = row["safety_violations"] + row["collisions"]
        safety = (
            "ok"
            if unsafe == 0
            else f"[red]{row['safety_violations']} violations, {row['collisions']} collisions[/red]"
        )
        if row["errors"]:
            safety += f" [red]({row['errors']} runs lost)[/red]"
        table.add_row(
            row["fault"],
            "\n".join(row["expected"]) or "-",
            seen,
            f"{row['deliveries_pct']:.0f}%",
            safety,
        )
    console = Console()
    console.print(table)
    console.print(
        "[green]every declared reaction seen, no safety violation[/green]"
        if ok
        else "[red]FAILED: a declared reaction was missed or a run was unsafe[/red]"
    )


# -- scenarios ---------------------------------------------------------------------------------


def cmd_scenarios(args: argparse.Namespace) -> int:
    from sim.scenario import list_scenarios

    rows = list_scenarios()
    if args.json:
        import json

        print(json.dumps([{"name": n, "description": d} for n, d in rows]))
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    table = Table(
        "name",
        "description",
        title_justify="left",
        title="shipped scenarios (python -m sim run --scenario NAME)",
    )
    for name, description in rows:
        table.add_row(name, description)
    Console().print(table)
    return EXIT_OK


# -- check-spec --------------------------------------------------------------------------------


def cmd_check_spec(args: argparse.Namespace) -> int:
    from runtime import configure_logging
    from sim.speccheck import check_specs

    configure_logging(level="error")
    reports = check_specs(args.files, scenario=args.scenario)
    if args.json:
        import json

        print(json.dumps(reports, sort_keys=True))
    else:
        _print_spec_reports(reports)
    return EXIT_USAGE if any(r["errors"] for r in reports) else EXIT_OK


def _print_spec_reports(reports: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for report in reports:
        if report["errors"]:
            for line in report["errors"]:
                console.print(f"[red]error[/red] {line}", highlight=False)
            continue
        spec = report["spec"]
        table = Table(
            show_header=False,
            title=f"{report['path']}: cabin {spec['name']!r}",
            title_justify="left",
        )
        table.add_column(style="bold")
        table.add_column()
        for label, value in report["reads"].items():
            table.add_row(label, value)
        receives = report.get("receives")
        if receives is not None:
            table.add_row(
                f"receives in {receives['scenario']}", ", ".join(receives["items"]) or "nothing"
            )
            table.add_row(
                "missing there", _counts(receives["missing"]) if receives["missing"] else "nothing"
            )
        console.print(table)
        for warning in report["warnings"]:
            console.print(f"[yellow]warning[/yellow] {report['path']}: {warning}", highlight=False)
