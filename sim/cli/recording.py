"""The recording commands of ``python -m sim``: repair, inspect and diff.

The questions are answered by ``runtime.recording.inspect`` as plain dicts; this module only
parses arguments and prints those dicts, as one JSON object (``--json``) or as
tables. Top-level imports stay light so that ``--help`` is instant.
"""

from __future__ import annotations

import argparse
from typing import Any

from sim.cli.exits import EXIT_OK, InputError, notice, print_json
from sim.cli.tables import cell as _t
from sim.cli.tables import console as _console
from sim.cli.tables import table as _table

INSPECT_EPILOG = """\
examples:
  python -m sim inspect run.mcap --tick 250                 every cabin at tick 250
  python -m sim inspect run.mcap --tick 250 --cabin executor --json
  python -m sim inspect run.mcap --key event:action_failed:41
exit status: 0 ok, 2 bad input (not a recording, a tick or cabin it does not hold)
A damaged recording is read up to its break, with a notice on stderr.
"""

DIFF_EPILOG = """\
examples:
  python -m sim diff run.mcap 100 140
  python -m sim diff run.mcap 100 140 --cabin planner --json
exit status: 0 ok, 2 bad input
"""

REPAIR_EPILOG = """\
A recording cut short (a crash, a kill -9, a full disk) is readable up to its
last complete chunk; repair rewrites what precedes the break as a complete file.
exit status: 0 repaired or already complete, 2 not a recording or nothing to recover
"""


def register(sub: Any) -> None:
    """Add this module's commands to the ``python -m sim`` parser."""
    raw = argparse.RawDescriptionHelpFormatter
    repair = sub.add_parser(
        "repair",
        help="rewrite a damaged recording as a complete file",
        epilog=REPAIR_EPILOG,
        formatter_class=raw,
    )
    repair.add_argument("recording", metavar="FILE.mcap")
    repair.add_argument(
        "-o",
        "--out",
        metavar="OUT.mcap",
        help="write the repaired copy here (default: repair in place)",
    )
    repair.add_argument("--json", action="store_true", help="print one JSON object")
    repair.set_defaults(handler=cmd_repair)

    inspect = sub.add_parser(
        "inspect",
        help="what a cabin saw at a tick, or one key's history",
        epilog=INSPECT_EPILOG,
        formatter_class=raw,
    )
    inspect.add_argument("recording", metavar="FILE.mcap")
    what = inspect.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--tick",
        type=int,
        metavar="N",
        help="the working set of tick N: each item and the filter that let it "
        "in, what was missing and why, what was evicted, each decision",
    )
    what.add_argument("--key", metavar="KEY", help="the history of KEY over the ticks")
    inspect.add_argument("--cabin", metavar="NAME", help="only this cabin (default: all)")
    inspect.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (values in full, in their recorded JSON form)",
    )
    inspect.set_defaults(handler=cmd_inspect)

    diff = sub.add_parser(
        "diff",
        help="what changed in the working set between two ticks",
        epilog=DIFF_EPILOG,
        formatter_class=raw,
    )
    diff.add_argument("recording", metavar="FILE.mcap")
    diff.add_argument("first", type=int, metavar="N")
    diff.add_argument("second", type=int, metavar="M")
    diff.add_argument(
        "--cabin", metavar="NAME", help="only this cabin and the items its view held at N or M"
    )
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.set_defaults(handler=cmd_diff)


# -- handlers --------------------------------------------------------------------------------


def cmd_repair(args: argparse.Namespace) -> int:
    from runtime.recording.inspect import repair_report

    try:
        report = repair_report(args.recording, args.out)
    except OSError as exc:
        raise InputError(
            f"cannot write {args.out or args.recording}: {exc.strerror or exc}"
        ) from None
    if args.json:
        print_json(report)
    else:
        print(_repair_text(report))
    return EXIT_OK


def cmd_inspect(args: argparse.Namespace) -> int:
    from runtime.recording import inspect as ins

    recording = ins.open_recording(args.recording, warn=notice)
    if args.tick is not None:
        report = ins.tick_report(recording, args.tick, cabin=args.cabin)
    else:
        report = ins.key_history(recording, args.key, cabin=args.cabin)
    if args.json:
        print_json(report)
    elif args.tick is not None:
        _print_tick(report)
    else:
        _print_key(report)
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from runtime.recording import inspect as ins

    recording = ins.open_recording(args.recording, warn=notice)
    report = ins.diff_report(recording, args.first, args.second, cabin=args.cabin)
    if args.json:
        print_json(report)
    else:
        _print_diff(report)
    return EXIT_OK


# -- repair ----------------------------------------------------------------------------------


def _repair_text(r: dict[str, Any]) -> str:
    ticks = f"ticks {r['tick_range']}" if r["ticks"] else "no tick"
    if r["complete"]:
        return (
            f"{r['path']} is complete ({r['messages']} messages, {ticks}): "
            "nothing to repair, nothing changed"
        )
    pct = 100.0 * r["bytes_recovered"] / r["size"] if r["size"] else 0.0
    partial = "; the last tick lacks its decisions and stats" if r["last_tick_partial"] else ""
    where = "in place" if r["out"] == r["path"] else f"to {r['out']}"
    skipped = r.get("skipped") or []
    passed = (
        f"; passed over {len(skipped)} damaged stretch{'es' if len(skipped) != 1 else ''} "
        "(" + ", ".join(f"bytes {s['start']}-{s['end']}: {s['cause']}" for s in skipped) + ")"
        if skipped
        else ""
    )
    return (
        f"repaired {r['path']}: it is damaged at byte {r['break_at']} of {r['size']} "
        f"({r['cause']}){passed}.\nrecovered {r['messages']} messages, {ticks}{partial}, "
        f"{r['bytes_recovered']} bytes ({pct:.1f}% of the file); dropped "
        f"{r['bytes_dropped']} bytes.\nwrote a complete recording {where}."
    )


# -- tables ----------------------------------------------------------------------------------


def _when(stamp: Any, now: float) -> str:
    if stamp is None:
        return "-"
    if stamp == now:
        return "now"
    return f"{stamp:.2f} s" if isinstance(stamp, (int, float)) else str(stamp)


def _at(stamp: Any) -> str:
    return f"{stamp:.2f} s" if isinstance(stamp, (int, float)) else "-"


def _print_tick(r: dict[str, Any]) -> None:
    from runtime.recording.inspect import brief

    console = _console()
    v = r["versions"]
    console.print(
        _t(
            f"{r['recording']} · tick {r['tick']} · t = {r['time']:.2f} s · "
            f"{r['working_set_size']} items in the working set · board seq {v.get('board_seq')}, "
            f"map version {v.get('map_version')}, log seq {v.get('log_seq')}"
        ),
        style="bold",
    )
    if r["capacity_alarm"]:
        console.print(_t(_alarm_text(r)), style="red")
    now = r["time"]
    for name, c in r["cabins"].items():
        table = _table(
            f"{name} saw {len(c['items'])} items",
            "key",
            "value",
            "source",
            "stamp",
            "importance",
            "last used",
            "first seen",
            "via",
        )
        for key, item in c["items"].items():
            table.add_row(
                _t(key),
                _t(brief(item.get("value"))),
                _t(item.get("source", "-")),
                _t(_when(item.get("stamp"), now)),
                _t(item.get("importance", "-")),
                _t(_when(item.get("last_used"), now)),
                _t(_at(item.get("first_seen"))),
                _t(item["via"]),
            )
        console.print(table)
        lost = c.get("lost")
        if lost:
            console.print(
                _t(
                    f"  lost to capacity ({len(lost)}): "
                    + ", ".join(
                        f"{k} (importance {e.get('importance', '?')})" for k, e in lost.items()
                    )
                ),
                style="yellow",
            )
        if c["missing"]:
            for pattern, m in c["missing"].items():
                line = f"  missing {pattern}: {m['reason']}"
                e = m.get("eviction")
                if e:
                    line += (
                        f" ({e.get('key')} evicted at tick {e['tick']}, importance "
                        f"{e.get('importance')}, {e.get('reason')})"
                    )
                console.print(_t(line), style="yellow")
        else:
            console.print("  nothing missing")
        if c["suppressed"]:
            console.print(_t(f"  hidden by a fault: {', '.join(c['suppressed'])}"), style="yellow")
        console.print(_t(f"  decided: {_decision(c['decision'], r['decisions_recorded'])}"))
        d = c["decision"]
        if d is not None and "decided_tick" in d:
            console.print(
                _t(f"  asynchronously: came back at tick {d['applied_tick']} ({d.get('status')})")
            )
        console.print()
    for name, d in r.get("returned", {}).items():
        console.print(
            _t(
                f"{name}: the decision it made at tick {d['decided_tick']} came back "
                f"({d.get('status')}): {_decision(d, True)}"
            )
        )
    if r["evicted"] is None:
        console.print("evicted at this tick: not recorded (the file breaks in this tick)")
    elif r["evicted"]:
        table = _table("evicted at this tick's freeze", "key", "importance", "last used", "reason")
        for e in r["evicted"]:
            table.add_row(
                _t(e.get("key")),
                _t(e.get("importance")),
                _t(_when(e.get("last_used"), now)),
                _t(e.get("reason")),
            )
        console.print(table)
    else:
        console.print("evicted at this tick: nothing")
    unviewed = r.get("unviewed")
    if unviewed:
        console.print(_t(f"held in working memory but in no cabin's view: {', '.join(unviewed)}"))


def _alarm_text(r: dict[str, Any]) -> str:
    """What a tick's capacity alarm was: pinned items overflowing memory, and which cabins
    lost items they selected."""
    load = r.get("occupancy") or {}
    causes = []
    if load and load.get("held", 0) > load.get("capacity", 0):
        pinned, capacity = load.get("pinned"), load.get("capacity")
        causes.append(f"pinned items alone ({pinned}) exceed the capacity ({capacity})")
    pressure = r.get("pressure") or {}
    if pressure:
        causes.append(
            "capacity pressure: "
            + ", ".join(f"{name} lost {len(keys)}" for name, keys in pressure.items())
            + (f" (capacity {load.get('capacity')})" if load else "")
        )
    if not causes:  # a recording made before the alarm said why
        causes.append("pinned items alone exceed the capacity")
    return "capacity alarm: " + "; ".join(causes)


def _decision(d: dict[str, Any] | None, recorded: bool) -> str:
    from runtime.recording.inspect import brief

    if not recorded:
        return "not recorded (the file breaks in this tick)"
    if d is None:
        return "nothing recorded for this cabin"
    if d.get("failed"):
        f = d["failed"]
        return f"FAILED: {f.get('error_type')}: {f.get('message')}"
    parts = [f"{c.get('name')}({brief(c.get('args'), 40)})" for c in d.get("commands", [])]
    parts += [
        f"delete {w.get('key')}"
        if w.get("delete")
        else f"write {w.get('key')} = {brief(w.get('value'), 40)}"
        for w in d.get("writes", [])
    ]
    parts += [f"event {e.get('kind')} {brief(e.get('data'), 40)}" for e in d.get("events", [])]
    parts += [f"react {x.get('pattern')} → {x.get('reaction')}" for x in d.get("reactions", [])]
    return "; ".join(parts) or "nothing"


def _print_key(r: dict[str, Any]) -> None:
    import json

    from runtime.recording.inspect import brief, compress

    console = _console()
    console.print(
        _t(
            f"{r['recording']} · key {r['key']}"
            + (f" · cabin {r['cabin']}" if r["cabin"] else "")
            + f" · in the working set at ticks {r['in_working_set']} "
            f"(recording: ticks {r['ticks']})"
        ),
        style="bold",
    )

    def shown(row: dict[str, Any]) -> tuple[str, ...]:
        now = row["time"]
        return (
            json.dumps(row.get("value"), sort_keys=True),
            str(row.get("importance")),
            _when(row.get("stamp"), now),
            _when(row.get("last_used"), now),
            _at(row.get("first_seen")) if row["in_working_set"] else "",
            str(row.get("source")),
            str(row["in_working_set"]),
            json.dumps([row["views"], row["missing"], row["evicted"]], sort_keys=True),
        )

    table = _table(
        "history",
        "ticks",
        "value",
        "importance",
        "stamp",
        "last used",
        "first seen",
        "in view of (via)",
        "missing",
        "evicted",
    )
    last: int | None = None
    for run in compress(r["history"], same=shown):
        if last is not None and run["first"] > last + 1:
            table.add_row(
                _t(_span(last + 1, run["first"] - 1)),
                _t("(not in the working set, not missing)"),
                *[""] * 7,
            )
        row = run["row"]
        now = row["time"]
        held = row["in_working_set"]
        table.add_row(
            _t(_span(run["first"], run["last"])),
            _t(brief(row.get("value")) if held else "(not in the working set)"),
            _t(row.get("importance", "") if held else ""),
            _t(_when(row.get("stamp"), now) if held else ""),
            _t(_when(row.get("last_used"), now) if held else ""),
            _t(_at(row.get("first_seen")) if held else ""),
            _t(", ".join(f"{c} ({via})" for c, via in row["views"].items())),
            _t(
                ", ".join(
                    f"{c}: {p} {why}"
                    for c, gaps in row["missing"].items()
                    for p, why in gaps.items()
                )
            ),
            _t(
                ", ".join(
                    [str(e.get("reason")) for e in row["evicted"]]
                    + [f"lost by {c}" for c in row.get("lost_by", ())]
                )
            ),
        )
        last = run["last"]
    console.print(table)
    if not r["board"]:
        console.print("no board write of this key")
        return
    board = _table(
        f"board writes and deletes ({len(r['board'])})",
        "ticks",
        "writes",
        "seq",
        "stamp",
        "value",
        "ttl",
        "source",
    )
    runs: list[tuple[list[dict[str, Any]], str]] = []
    for w in r["board"]:
        same = json.dumps(
            [w.get("deleted"), w.get("value"), w.get("ttl"), w.get("source")], sort_keys=True
        )
        if runs and runs[-1][1] == same:
            runs[-1][0].append(w)
        else:
            runs.append(([w], same))
    for group, _ in runs:
        a, b = group[0], group[-1]
        board.add_row(
            _t(_span(a["tick"], b["tick"])),
            _t(len(group)),
            _t(_span(a.get("seq"), b.get("seq"))),
            _t(
                f"{a.get('stamp'):.2f} s"
                if len(group) == 1
                else f"{a.get('stamp'):.2f}-{b.get('stamp'):.2f} s"
            ),
            _t("(deleted)" if a.get("deleted") else brief(a.get("value"))),
            _t(a.get("ttl") if a.get("ttl") is not None else "-"),
            _t(a.get("source") or "-"),
        )
    console.print(board)


def _span(first: Any, last: Any) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _print_diff(r: dict[str, Any]) -> None:
    from runtime.recording.inspect import brief

    console = _console()
    console.print(
        _t(
            f"{r['recording']} · tick {r['from']} → {r['to']} ({r['time']['from']:.2f} s → "
            f"{r['time']['to']:.2f} s) · working set {r['size']['from']} → {r['size']['to']} items"
        ),
        style="bold",
    )
    for label, items in (("added", r["added"]), ("removed", r["removed"])):
        if not items:
            console.print(f"{label}: nothing")
            continue
        table = _table(f"{label} ({len(items)})", "key", "value", "source", "importance")
        for key, item in items.items():
            table.add_row(
                _t(key),
                _t(brief(item.get("value"))),
                _t(item.get("source")),
                _t(item.get("importance")),
            )
        console.print(table)
    if r["changed"]:
        table = _table(f"changed ({len(r['changed'])})", "key", "field", "from", "to")
        for key, delta in r["changed"].items():
            for name, change in delta.items():
                before, after = brief(change["from"]), brief(change["to"])
                if before == after:  # a change below the shown precision: show it all
                    before, after = (
                        brief(change["from"], digits=17),
                        brief(change["to"], digits=17),
                    )
                table.add_row(_t(key), _t(name), _t(before), _t(after))
        console.print(table)
    else:
        console.print("changed: nothing")
    if r["evicted_between"]:
        table = _table("evicted in between", "tick", "key", "importance", "reason")
        for e in r["evicted_between"]:
            table.add_row(
                _t(e["tick"]), _t(e.get("key")), _t(e.get("importance")), _t(e.get("reason"))
            )
        console.print(table)
    else:
        console.print("evicted in between: nothing")
    for name, c in r["cabins"].items():
        lines = [f"came into view: {_keys(c['in'])}", f"left the view: {_keys(c['out'])}"]
        if c["via_changed"]:
            lines.append(
                "filter changed: "
                + ", ".join(
                    f"{k} ({ch['from']} → {ch['to']})" for k, ch in c["via_changed"].items()
                )
            )
        lines.append(
            "newly missing: "
            + (", ".join(f"{p} ({why})" for p, why in c["missing_new"].items()) or "nothing")
        )
        lines.append("no longer missing: " + (", ".join(c["missing_gone"]) or "nothing"))
        if c["missing_changed"]:
            lines.append(
                "missing for another reason: "
                + ", ".join(
                    f"{p} ({ch['from']} → {ch['to']})" for p, ch in c["missing_changed"].items()
                )
            )
        console.print(_t(f"{name}:"), style="bold")
        for line in lines:
            console.print(_t(f"  {line}"))


def _keys(items: dict[str, Any]) -> str:
    return ", ".join(items) if items else "nothing"
