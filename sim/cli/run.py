"""The ``run`` command of ``python -m sim``: one scenario headless, summarised.

Parses the run's flags, builds (or resumes) the simulation, drives it with a
progress bar on a terminal, stops it between two ticks on Ctrl-C or SIGTERM, and
prints the summary as a table ending with the run's verdict or, with ``--json``, as one
JSON object (``verdict`` among its keys). The exit status follows the verdict
(``sim.run.verdict``): 1 when it failed, 0 when the run passed or was cut short.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from sim.cli.args import at_least, duration, positive_int, rate
from sim.cli.exits import EXIT_FAILED, EXIT_OK, InputError
from sim.cli.tables import counts_text
from sim.run.missing_text import counts_of, missing_text

OVERRUN_POLICIES = {"skip": "SkipMissed", "catch-up": "CatchUp"}
"""``--overrun`` choices and the ``runtime`` policy class each names."""

RUN_EPILOG = """\
examples:
  python -m sim run                              the default warehouse, seed 0
  python -m sim run --scenario narrow_aisles --seed 3 --json
  python -m sim run --cabin people_watch:PeopleWatch@examples/people_watch/people_watch.toml
  python -m sim run --record run.mcap --checkpoint-every 200   checkpoints to run.ckpt
  python -m sim run --resume run.ckpt            go on from the last checkpoint
  python -m sim run --memory warehouse.sqlite    remember blocked aisles for the next run
  python -m sim run --realtime                   paced on the wall clock, to watch it live
  python -m sim run --cabin cabins.dispatcher:LLMDispatcher@specs/examples/dispatcher.toml \
      --llm-base-url http://127.0.0.1:8000/v1     an LLM dispatcher on any OpenAI-compatible server
exit status: 0 safe and delivered (tasks a cabin refused with a reason aside), or cut short
  by --ticks/--duration with nothing failed;
  1 the verdict failed: a collision, a safety violation, a reachable task undelivered at
  the scenario's end, a stalled episode, an abandoned task or a flat battery;
  2 bad input; 128+N stopped by signal N (Ctrl-C: 130)
"""


def register(sub: Any) -> None:
    """Add the ``run`` command to the ``python -m sim`` parser."""
    from sim.faults.grammar import GRAMMAR

    run = sub.add_parser(
        "run",
        help="run a scenario headless and summarise it",
        epilog=RUN_EPILOG + "\n" + GRAMMAR,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--scenario",
        metavar="NAME|PATH",
        help="a shipped scenario name (see `python -m sim scenarios`), a TOML file or "
        "one generated world, gen:N or hard:N (default: warehouse)",
    )
    run.add_argument("--seed", type=at_least(0, what="seed"), help="random seed (default: 0)")
    length = run.add_mutually_exclusive_group()
    length.add_argument(
        "--ticks",
        type=positive_int,
        metavar="N",
        help="run at most N ticks (default: the scenario's duration)",
    )
    length.add_argument(
        "--duration", type=duration, metavar="S", help="run at most S simulated seconds"
    )
    run.add_argument(
        "--rate",
        type=rate,
        metavar="HZ",
        help="tick rate (default: the scenario's, usually 20)",
    )
    run.add_argument(
        "--capacity",
        type=positive_int,
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
        "--strict",
        action="store_true",
        help="refuse (exit 2) a --cabin or --specs spec naming a board key, event kind or map "
        "kind nothing writes, or a weight or required pattern that selects nothing (without "
        "it: a warning on stderr)",
    )
    run.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="FAULT",
        help="inject a fault (repeatable; grammar below and in the docs' Faults guide)",
    )
    run.add_argument("--faults", metavar="FILE", help="inject the [[fault]] tables of a TOML file")
    run.add_argument(
        "--record",
        metavar="FILE.mcap",
        help="record the run to an MCAP file (inspect it with `python -m sim "
        "inspect`; Foxglove opens it too)",
    )
    run.add_argument(
        "--ros2",
        metavar="FILE.mcap",
        help="also record the run as a ROS 2 bag (MCAP, CDR): /tf, /tf_static, /odom, "
        "/scan, /map and markers, for ros2 bag, RViz and Foxglove; needs the ros2 extra",
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
        type=positive_int,
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
        "have reached (its settings and recording come from the checkpoint; give "
        "the --cabin and --memory it was started with again; "
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
    run.add_argument(
        "--realtime",
        action="store_true",
        help="pace the run on the wall clock at its rate (asynchronous cabins decide on "
        "threads and meet real latency; overruns are counted)",
    )
    run.add_argument(
        "--live",
        action="store_true",
        help="serve the run over the Foxglove WebSocket protocol as it happens (implies "
        "--realtime; in Foxglove: Open connection, ws://localhost:PORT; needs the foxglove "
        "extra)",
    )
    run.add_argument(
        "--host",
        default=None,
        metavar="ADDR",
        help="with --live: the address to serve on (default: 127.0.0.1, this machine only; "
        "0.0.0.0 for viewers on other machines, in containers or WSL: warned, as anyone who "
        "reaches it can watch)",
    )
    run.add_argument(
        "--port",
        type=int,
        default=None,
        help="with --live: the port to serve on (default: 8765; 0: any free port, printed "
        "when the run starts and in the --json summary)",
    )
    run.add_argument(
        "--overrun",
        choices=sorted(OVERRUN_POLICIES),
        help="with --realtime: after a tick that overran, skip the missed ticks (skip, the "
        "default) or run them back to back (catch-up)",
    )
    run.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="the OpenAI-compatible endpoint of --cabin cabins that take a model (an `llm` "
        "argument); default: $TICKWORK_LLM_BASE_URL, else $OPENAI_BASE_URL; the key is "
        "$OPENAI_API_KEY (a local server needs none)",
    )
    run.add_argument(
        "--llm-model",
        metavar="NAME",
        help="the model those cabins ask (default: $TICKWORK_LLM_MODEL, else gpt-4o-mini)",
    )
    run.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    run.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="runtime log events at or above this level go to stderr (default: warning)",
    )
    run.set_defaults(handler=cmd_run)


# -- handler ---------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from sim.cli.report import run_report_recording

    scratch = run_report_recording(args)  # --report without --record: a temporary recording
    try:
        return _run(args, scratch)
    finally:
        if scratch is not None:
            scratch.unlink(missing_ok=True)


def _run(args: argparse.Namespace, scratch: Any) -> int:
    from runtime import configure_logging
    from sim.run.checkpoint import Checkpointer
    from sim.run.harness import failed

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
    if checkpointer is not None:
        checkpointer.start(sim)
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
    finally:
        sim.close()
        _restore_signals(previous)
    if args.json:
        import json

        from sim.run.live import LiveView

        lives = [s for s in getattr(sim.recorder, "sinks", ()) if isinstance(s, LiveView)]
        shown = {**summary, "live": live_info(lives[0])} if lives else summary
        print(json.dumps(shown, sort_keys=True))
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
        from sim.cli.report import write_run_page

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


def _closing_sinks_on_error(sinks: list[Any]) -> Any:
    """Call a constructor; if it raises, close the live views already serving first."""

    def call(make: Any, *a: Any, **kw: Any) -> Any:
        try:
            return make(*a, **kw)
        except BaseException:
            for sink in sinks:
                sink.close()
            raise

    return call


def _new_run(args: argparse.Namespace, *, record: Any = None) -> tuple[Any, Any]:
    """The simulation and the run plan of a run started from scratch. Every input is read
    and every output path checked before the recording is opened."""
    import os
    import sqlite3

    from sim.cli.inputs import check_memory, load_cabin, load_faults
    from sim.cli.outputs import check_outputs
    from sim.run.checkpoint import RunPlan
    from sim.run.harness import Simulation
    from sim.world.families import load_world

    if args.port is not None and not args.live:
        raise InputError(f"--port {args.port}: only a --live run serves on a port")
    if args.host is not None and not args.live:
        raise InputError(f"--host {args.host}: only a --live run serves on an address")
    if args.live:
        args.realtime = True  # a live view is watched at the run's own pace
    if args.checkpoint is not None and args.checkpoint_every is None:
        raise InputError(
            f"--checkpoint {args.checkpoint!r} needs --checkpoint-every N (how often to write it)"
        )
    if args.overrun is not None and not args.realtime:
        raise InputError(
            f"--overrun {args.overrun}: only a --realtime run can overrun (a simulated "
            "clock waits for every tick)"
        )
    if args.realtime and args.checkpoint_every is not None:
        raise InputError(
            "--realtime runs cannot be checkpointed (their decisions run on threads); "
            "checkpoint a run on the simulated clock"
        )
    seed = 0 if args.seed is None else args.seed
    overrun = None
    if args.overrun is not None:
        import runtime

        overrun = getattr(runtime, OVERRUN_POLICIES[args.overrun])()
    scenario = load_world(args.scenario or "warehouse")
    extra = [load_cabin(text, llm=_llm_endpoint(args)) for text in args.cabin]
    if args.checkpoint_every is not None:
        _check_checkpointable(extra, args.cabin)
    specs = None
    if args.specs:
        from runtime import load_specs

        specs = load_specs(args.specs)
    _check_names([c.spec for c in extra] + list((specs or {}).values()), strict=args.strict)
    faults = load_faults(args.fault, args.faults)
    checkpoint = _checkpoint_path(args, scenario.name, seed)
    scenario_file = args.scenario if args.scenario and os.path.isfile(args.scenario) else None
    check_outputs(
        [
            ("--record", args.record),
            ("--ros2", args.ros2),
            ("--checkpoint", checkpoint),
            ("--report", args.report),
            ("--memory", args.memory),
        ],
        inputs=[("--scenario", scenario_file), ("--faults", args.faults)]
        + [(f"--cabin {text}", text.partition("@")[2]) for text in args.cabin],
    )
    if args.memory is not None:
        check_memory(args.memory)  # read-only, before the recording is opened
    sinks: list[Any] = []
    if args.live:  # after every input is read and every output checked
        sinks.append(_serve_live(args))
    try:
        sim = _closing_sinks_on_error(sinks)(
            Simulation,
            scenario,
            seed=seed,
            rate_hz=args.rate,
            capacity=64 if args.capacity is None else args.capacity,
            specs=specs,
            extra=extra,
            faults=faults,
            record=args.record if args.record is not None else record,
            long_term=args.memory,
            realtime=args.realtime,
            overrun=overrun,
            sinks=sinks,
            ros2=args.ros2,
            time_base=_started_now(),
        )
    except sqlite3.Error as exc:
        raise InputError(f"--memory {args.memory!r}: not a usable SQLite file ({exc})") from None
    except OSError as exc:
        if args.record is None:
            raise InputError(f"cannot start the run: {exc.strerror or exc}") from None
        raise InputError(
            f"--record {args.record!r}: cannot write it ({exc.strerror or exc})"
        ) from None

    if args.ticks is not None:
        ticks = args.ticks
    elif args.duration is not None:
        ticks = max(1, round(args.duration * sim.rate_hz))
    else:
        ticks = sim.max_ticks
    plan = RunPlan(
        ticks=ticks,
        until_done=not args.full,
        record=None if args.record is None else os.path.abspath(args.record),
        every=args.checkpoint_every,
        path=checkpoint,
        cabins=tuple(args.cabin),
    )
    return sim, plan


def _started_now() -> Any:
    """The run's wall-clock start, read once here at the edge: every recorded and served
    message is logged at this start + the run's time (``runtime.recording.timebase``)."""
    import time

    from runtime.recording.timebase import TimeBase

    return TimeBase(time.time_ns())


def live_info(live: Any) -> dict[str, Any]:
    """Where a live view serves: its URL, address and port (``live`` in ``--json``)."""
    return {"url": live.url, "host": live.host, "port": live.port}


def _serve_live(args: argparse.Namespace) -> Any:
    """Start the live view of ``--host``/``--port`` and say where it serves: a line for
    people, or with ``--json`` one JSON object on stderr (the summary repeats it)."""
    import json

    from sim.run.live import DEFAULT_HOST, DEFAULT_PORT, LiveView

    live = LiveView(
        host=DEFAULT_HOST if args.host is None else args.host,
        port=DEFAULT_PORT if args.port is None else args.port,
    )
    if args.json:
        print(json.dumps({"live": live_info(live)}, sort_keys=True), file=sys.stderr, flush=True)
    else:
        print(f"live view: open a connection in Foxglove to {live.url}", file=sys.stderr)
    return live


def _checkpoint_path(args: argparse.Namespace, scenario: str, seed: int) -> str | None:
    """Where a new run writes its checkpoints: ``--checkpoint``, else beside ``--record``,
    else ``SCENARIO-seedN.ckpt`` here; None without ``--checkpoint-every``."""
    import os

    if args.checkpoint_every is None:
        return None
    if args.checkpoint is not None:
        return os.path.abspath(str(args.checkpoint))
    if args.record is not None:
        return os.path.abspath(os.path.splitext(str(args.record))[0] + ".ckpt")
    return os.path.abspath(f"{scenario}-seed{seed}.ckpt")


def _llm_endpoint(args: argparse.Namespace) -> Any:
    """The model endpoint ``--llm-base-url``/``--llm-model`` or the environment names."""
    import os

    from cabins.llm import LLMEndpoint

    return LLMEndpoint.from_environment(
        os.environ, base_url=args.llm_base_url, model=args.llm_model
    )


def _resumed_run(args: argparse.Namespace) -> Any:
    """The checkpoint named by ``--resume``, loaded and ready to go on: the run is rebuilt
    from the inputs the checkpoint holds, with the user cabins (``--cabin``) and the
    long-term memory (``--memory``) the person resuming names again."""
    import sqlite3

    from runtime.errors import TickworkError
    from sim.cli.inputs import load_cabin
    from sim.run.checkpoint import read_info, resume

    fixed = {
        "--scenario": args.scenario,
        "--seed": args.seed,
        "--rate": args.rate,
        "--capacity": args.capacity,
        "--specs": args.specs,
        "--faults": args.faults,
        "--record": args.record,
        "--ros2": args.ros2,
        "--fault": args.fault or None,
        "--realtime": args.realtime or None,
        "--live": args.live or None,
        "--host": args.host,
        "--port": args.port,
        "--overrun": args.overrun,
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
            ticks = max(1, round(args.duration * info.run["rate_hz"]))
        _check_resumed_cabins(args.resume, info.plan.cabins, args.cabin)
        checkpoint = args.checkpoint
        if checkpoint is not None and args.checkpoint_every is None and info.plan.every is None:
            raise InputError(
                f"--checkpoint {checkpoint!r} needs --checkpoint-every N "
                "(the resumed run wrote no checkpoints of its own)"
            )
        from sim.cli.outputs import check_outputs

        every = args.checkpoint_every if args.checkpoint_every is not None else info.plan.every
        target = None if every is None else (checkpoint or args.resume)
        check_outputs(
            [
                ("the resumed run's recording", info.plan.record),
                ("--report", args.report),
                ("--checkpoint", target),
                ("--memory", args.memory),
            ],
            inputs=[(f"--cabin {text}", text.partition("@")[2]) for text in args.cabin],
        )
        check_outputs([("--report", args.report)], inputs=[("--resume", args.resume)])
        extra = [load_cabin(text, llm=_llm_endpoint(args)) for text in args.cabin]
        return resume(
            args.resume,
            ticks=ticks,
            until_done=False if args.full else None,
            every=args.checkpoint_every,
            checkpoint=checkpoint,
            extra=extra,
            long_term=args.memory,
        )
    except TickworkError:
        raise
    except sqlite3.Error as exc:
        raise InputError(f"--memory {args.memory!r}: not a usable SQLite file ({exc})") from None


def _check_checkpointable(extra: Sequence[Any], texts: Sequence[str]) -> None:
    """Refuse, before anything is written, to checkpoint a run with a user cabin whose
    class does not say what it keeps (``get_state`` and ``set_state``)."""
    from sim.run.runstate import keeps_no_state

    lacking = [text for cabin, text in zip(extra, texts, strict=True) if keeps_no_state(cabin)]
    if lacking:
        raise InputError(
            f"--checkpoint-every: the cabin(s) {', '.join(lacking)} have no get_state() and "
            "set_state(data), so a checkpoint cannot hold what they keep and a resumed run "
            "would differ; give the class both (see docs/guides/checkpoints.md, 'User "
            "cabins'), or run without checkpoints"
        )


def _check_resumed_cabins(path: str, recorded: Sequence[str], given: Sequence[str]) -> None:
    """A checkpoint's user cabins are built only from modules the person resuming names
    again (``--cabin``, as the run was started): a checkpoint names no code to run."""
    if list(recorded) == list(given):
        return
    if not recorded:
        raise InputError(f"--resume {path}: the run it holds has no --cabin cabins; give none")
    named = " ".join(f"--cabin {text}" for text in recorded)
    raise InputError(
        f"--resume {path}: the run holds user cabins; a checkpoint rebuilds only code you "
        f"name, so resume it with the same cabins as it was started: {named}"
    )


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


def _print_summary(s: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from sim.run.verdict import judge

    console = Console()
    title = (
        f"{s['scenario']} · seed {s['seed']} · {s['ticks']} ticks · {s['sim_time']:.1f} s simulated"
    )
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    mean = s["mean_delivery_time"]
    table.add_row(
        "deliveries",
        f"{s['deliveries_done']} done of {s['deliveries_assigned']} "
        f"assigned ({s['tasks_total']} in the scenario"
        + (
            f", {len(s['tasks_undeliverable'])} undeliverable"
            if s.get("tasks_undeliverable")
            else ""
        )
        + ")",
    )
    table.add_row("mean delivery time", "-" if mean is None else f"{mean:.1f} s")
    table.add_row("safety violations", _count(s["safety_violations"]))
    table.add_row("collisions", _count(s["collisions"]))
    table.add_row("speed-limit violations", str(s["speed_violations"]))
    table.add_row("re-plans", str(s["replans"]))
    _liveness_rows(table, s)
    table.add_row("failed actions", str(s["actions_failed"]))
    table.add_row("alarms", counts_text(s["alarms"]))
    table.add_row("emergency stops", counts_text(s["emergency_stops"]))
    table.add_row("cabin failures", str(s["cabin_failures"]))
    if s.get("writes_refused"):
        table.add_row(
            "writes refused", f"[red]{s['writes_refused']}[/red] (outside a spec's [writes])"
        )
    if s.get("late_decisions") or s.get("dropped_decisions"):
        table.add_row("late decisions", f"{s['late_decisions']} ({s['dropped_decisions']} dropped)")
    if s.get("realtime"):
        table.add_row("overruns", f"{s['overruns']} ({s['skipped_ticks']} ticks skipped)")
    table.add_row("evictions", str(s["evictions"]))
    table.add_row("capacity alarms", str(s["capacity_alarms"]))
    if not s.get("pressure"):
        table.add_row("capacity pressure", Text(counts_text(s["capacity_pressure"])))
    for cabin, p in s.get("pressure", {}).items():
        table.add_row(
            f"capacity pressure · {cabin}",
            f"[yellow]{p['lost']} selected items lost at {p['ticks']} ticks "
            f"({p['episodes']} episode{'s' if p['episodes'] != 1 else ''})[/yellow]",
        )
    for cabin, row in s["cabins"].items():
        trouble = row.get("writes_refused") or row.get("failures")
        table.add_row(f"cabin · {cabin}", Text(counts_of(row), style="yellow" if trouble else ""))
        table.add_row(f"missing items · {cabin}", missing_text(row.get("missing") or {}))
    table.add_row(
        "tick compute",
        f"p50 {s['tick_compute_p50_ms']:.2f} ms · p99 {s['tick_compute_p99_ms']:.2f} ms",
    )
    rtf = s["real_time_factor"]
    table.add_row("real-time factor", "-" if rtf is None else f"{rtf:.0f}x")
    console.print(table)
    verdict = judge(s)
    style = {"passed": "green", "cut_short": "yellow", "failed": "red"}[verdict.status]
    console.print(Text(verdict.line, style=style), soft_wrap=True)  # one line, for grep


def _liveness_rows(table: Any, s: dict[str, Any]) -> None:
    """Whether the run kept making progress: waits, give-ways, no-progress re-plans,
    re-plans to charge first, reserves waived, stalled episodes, deferred, abandoned and
    refused tasks, and the battery's lowest."""
    from rich.text import Text

    table.add_row("waits for movers", str(s["waits"]))
    table.add_row("give-ways", str(s["give_ways"]))
    table.add_row("no-progress re-plans", str(s["no_progress_replans"]))
    charges = s.get("charge_replans", {})
    charged = str(sum(charges.values()))
    if charges:
        charged += f" ({counts_text(charges)})"
    table.add_row("re-plans to charge first", charged)
    # fresh from a full charge, the robot went on without the reserve (an older summary: 0)
    table.add_row("reserves waived", str(s.get("reserves_waived", 0)))
    causes: dict[str, int] = {}
    for stall in s["stalls"]:
        causes[str(stall.get("cause"))] = causes.get(str(stall.get("cause")), 0) + 1
    stalled = str(s["stalled_episodes"])
    if causes:
        stalled += f" ({counts_text(causes)})"
    table.add_row("stalled episodes", _count(s["stalled_episodes"], stalled))
    deferred = s["tasks_deferred"]
    times = sum(sum(reasons.values()) for reasons in deferred.values())
    table.add_row(
        "deferred tasks",
        Text(
            f"{len(deferred)} ({times} times: "
            + "; ".join(f"{task} {counts_text(r)}" for task, r in deferred.items())
            + ")"
            if deferred
            else "0"
        ),
    )
    abandoned = s["tasks_abandoned"]
    table.add_row(
        "abandoned tasks",
        Text(
            f"{len(abandoned)} (" + ", ".join(f"{t}: {r}" for t, r in abandoned.items()) + ")"
            if abandoned
            else "0",
            style="red" if abandoned else "",
        ),
    )
    refused = s.get("tasks_refused") or {}
    table.add_row(
        "refused tasks",
        Text(
            f"{len(refused)} ("
            + ", ".join(f"{t} by {r.get('cabin')}: {r.get('reason')}" for t, r in refused.items())
            + ")"
            if refused
            else "0"
        ),
    )
    for task, why in (s.get("tasks_left") or {}).items():
        table.add_row(f"left undelivered · {task}", Text(str(why.get("text")), style="red"))
    low = f"{100 * s['battery_min']:.0f}% at {s['battery_min_at']:.1f} s"
    if s["battery_empty_at"] is not None:
        low = f"[red]empty at {s['battery_empty_at']:.1f} s[/red]"
    table.add_row("lowest battery", f"{low} · {100 * s['battery_end']:.0f}% at the end")


def _count(n: int, text: str | None = None) -> str:
    shown = str(n) if text is None else text
    return "0" if n == 0 else f"[red]{shown}[/red]"


def _check_names(specs: Sequence[Any], *, strict: bool) -> None:
    """Warn on stderr about what a user's spec names that nothing writes (``check-spec``'s
    registry check); refuse it under ``--strict``."""
    from sim.analysis.speccheck import unregistered

    found = [f"spec {spec.name!r}: {line}" for spec in specs for line in unregistered(spec, specs)]
    if strict and found:
        raise InputError("; ".join(found) + " (--strict)")
    for line in found:
        print(f"warning: {line}", file=sys.stderr)
