"""The results of a run: the machine, the targets (issues 7 and 17), a JSON file and markdown."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("numpy", "shapely", "pydantic", "structlog", "py_trees")
X = "\u00d7"  # the multiplication sign of "500x"


def machine() -> dict[str, Any]:
    """CPU model (from /proc/cpuinfo), cores, Python and library versions, load average."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.release()}",
        "packages": versions,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _largest(worlds: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return max(
        worlds, key=lambda w: (w["size"]["board"], w["size"]["features"], w["size"]["events"])
    )


def _find(
    worlds: Sequence[Mapping[str, Any]], board: int, features: int, events: int
) -> Mapping[str, Any] | None:
    for w in worlds:
        if (w["size"]["board"], w["size"]["features"], w["size"]["events"]) == (
            board,
            features,
            events,
        ):
            return w
    return None


def growth(
    worlds: Sequence[Mapping[str, Any]], axis: str, low: int, high: int
) -> list[dict[str, Any]]:
    """Runtime p50 at ``high`` over p50 at ``low`` along ``axis``, for every pair measured."""
    out = []
    for w in worlds:
        size = w["size"]
        if size[axis] != high:
            continue
        other = dict(size)
        other[axis] = low
        base = _find(worlds, other["board"], other["features"], other["events"])
        if base is None:
            continue
        out.append(
            {
                "from": base["label"],
                "to": w["label"],
                "p50_from_us": base["runtime_tick"]["p50_us"],
                "p50_to_us": w["runtime_tick"]["p50_us"],
                "ratio": round(w["runtime_tick"]["p50_us"] / base["runtime_tick"]["p50_us"], 2),
            }
        )
    return out


def _target(name: str, goal: str, measured: str, met: bool | None) -> dict[str, Any]:
    return {"target": name, "goal": goal, "measured": measured, "met": met}


def targets(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The targets against the largest world measured (and the other figures): first the
    ratios of issue 17, then issue 7's absolute figures."""
    worlds = results["worlds"]
    big = _largest(worlds)
    tick = big["runtime_tick"]
    busy = big["busy_control"]
    out = []
    anchor = big.get("anchor") or {}
    peer = results.get("peer")
    if anchor:
        ratio = anchor["runtime_over_py_trees_p50"]
        out.append(
            _target(
                "freeze + 3 views / 10-leaf py_trees anchor (alternating ticks)",
                f"≤ 2.0{X}",
                f"{ratio}{X} ({anchor['runtime_tick']['p50_us']:.0f} µs / "
                f"{anchor['py_trees_tick']['p50_us']:.0f} µs)",
                ratio <= 2.0,
            )
        )
        if "runtime_over_equal_work_p50" in anchor:
            equal = anchor["runtime_over_equal_work_p50"]
            parity = anchor["equal_work_parity"]
            out.append(
                _target(
                    "freeze + 3 views / equal-work py_trees peer (alternating ticks)",
                    f"≤ 1.0{X}",
                    f"{equal}{X} ({anchor['runtime_tick']['p50_us']:.0f} µs / "
                    f"{anchor['equal_work_tick']['p50_us']:.0f} µs; CPU time "
                    f"{anchor['runtime_over_equal_work_cpu_p50']}{X}; the same items in "
                    f"{parity['ticks_compared'] - parity['ticks_differing']} of "
                    f"{parity['ticks_compared']} ticks)",
                    equal <= 1.0 and parity["ticks_differing"] == 0,
                )
            )
    elif peer:
        ratio = round(tick["p50_us"] / peer["tick"]["p50_us"], 3)
        out.append(
            _target(
                "freeze + 3 views / py_trees tick (separate runs)",
                f"≤ 1.0{X}",
                f"{ratio}{X}",
                ratio <= 1.0,
            )
        )
    else:
        missing = "not measured: py_trees is not installed (pip install -e '.[bench]')"
        out.append(
            _target(
                "freeze + 3 views / 10-leaf py_trees anchor (alternating ticks)",
                f"≤ 2.0{X}",
                missing,
                None,
            )
        )
        out.append(
            _target(
                "freeze + 3 views / equal-work py_trees peer (alternating ticks)",
                f"≤ 1.0{X}",
                missing,
                None,
            )
        )
    seed_ratio = big["seed_over_runtime_p50"]
    out.append(
        _target("seed reference / runtime", f"≥ 1000{X}", f"{seed_ratio}{X}", seed_ratio >= 1000)
    )
    for axis, low, high, limit, label in (
        ("events", 1000, 1_000_000, 1.5, "log 1k → 1M"),
        ("features", 1000, 100_000, 1.5, "map 1k → 100k"),
        ("board", 100, 10_000, 1.5, "board 100 → 10k"),
    ):
        pairs = growth(worlds, axis, low, high)
        at_big = [g for g in pairs if g["to"] == big["label"]]
        chosen = at_big or pairs
        if chosen:
            worst = max(g["ratio"] for g in chosen)
            out.append(
                _target(f"cost growth, {label}", f"≤ {limit}{X}", f"{worst}{X}", worst <= limit)
            )
        else:
            out.append(_target(f"cost growth, {label}", f"≤ {limit}{X}", "not measured", None))
    compared = [w["parity"] for w in worlds]
    fewest = min(p["ticks_compared"] for p in compared)
    wrong = sum(p["mismatches"] for p in compared)
    out.append(
        _target(
            "parity with the reference model, every field",
            "0 differences, ≥ 1000 ticks per world",
            f"{wrong} ticks differ; at least {fewest} ticks per world",
            wrong == 0 and fewest >= 1000,
        )
    )
    rtf = results["simulator"]["median_real_time_factor"]
    out.append(_target("default scenario speed", f"≥ 250{X} real time", f"{rtf}{X}", rtf >= 250))
    out += [
        _target(
            "tick p50 (freeze + 3 views)",
            "≤ 100 µs",
            f"{tick['p50_us']:.0f} µs",
            tick["p50_us"] <= 100,
        ),
        _target("tick p99", "≤ 400 µs", f"{tick['p99_us']:.0f} µs", tick["p99_us"] <= 400),
        _target(
            "tick p99.9",
            "≤ 2 ms",
            f"{tick['p999_us'] / 1e3:.2f} ms (busy control {busy['p999_us'] / 1e3:.2f} ms)",
            tick["p999_us"] <= 2000,
        ),
    ]
    gen2 = big["gc_during_runtime_ticks"]["gen2"]
    full = big["gc_full_collection_ms"]
    out.append(
        _target(
            "no GC pause from the loaded world in a tick",
            "no in-tick collection over 2 ms",
            f"{gen2['in_tick']} gen-2 collections in ticks, longest "
            f"{gen2['max_in_tick_us'] / 1e3:.1f} ms (full collection of the loaded world "
            f"{full['runtime_loaded']:.0f} ms, after "
            f"gc.freeze() {full.get('after_gc_freeze', float('nan')):.1f} ms)",
            gen2["max_in_tick_us"] <= 2000,
        )
    )
    mem = results["event_memory"]["runtime_log_bytes_per_event"]
    out.append(
        _target("bytes per logged event beyond its payload", "≤ 100 B", f"{mem} B", mem <= 100)
    )
    overhead = results["simulator"].get("recording_overhead")
    if overhead is not None:
        out.append(
            _target(
                "recording (--record) slows a run by", f"≤ 2{X}", f"{overhead}{X}", overhead <= 2
            )
        )
    if results.get("long_term"):
        from benchmarks import long_term

        out.extend(long_term.targets(results["long_term"]))
    return out


def _ms(us: float) -> str:
    return f"{us / 1e3:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def _mark(met: bool | None) -> str:
    return "n/a" if met is None else ("met" if met else "**missed**")


def markdown(results: Mapping[str, Any]) -> str:
    """The run as markdown: machine, targets, per-world table, stages, growth, the rest."""
    m = results["machine"]
    lines = [
        "# tickwork benchmarks: latest run",
        "",
        f"`{results['command']}` ({results['mode']} mode, {results['duration_s']:.0f} s) on "
        f"{m['cpu']}, {m['cores']} cores, {m['implementation']} {m['python']}, {m['system']}; "
        f"load average at start {', '.join(str(x) for x in m['load_average_at_start'])}.",
        "",
        "A tick is the runtime's freeze plus three views (planner, executor, monitor, the "
        f"shipped specs), capacity {results['settings']['capacity']}. Worlds: one map feature "
        f"per {results['settings']['area_per_feature_m2']:.0f} m² (the floor grows with the "
        f"count), {results['settings']['event_rate_hz']:.0f} events per second of history.",
        "",
        "## Targets (largest world: " + _largest(results["worlds"])["label"] + ")",
        "",
        "| target | goal | measured | |",
        "|---|---|---|---|",
    ]
    for t in results["targets"]:
        lines.append(f"| {t['target']} | {t['goal']} | {t['measured']} | {_mark(t['met'])} |")
    lines += [
        "",
        "## Tick cost per world",
        "",
        "| world | runtime p50 | p99 | p99.9 | busy control p50 / p99 / p99.9 | seed p50 | "
        "seed / runtime | runtime / py_trees | runtime / equal-work peer | parity |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in results["worlds"]:
        r, b, s = w["runtime_tick"], w["busy_control"], w["seed_tick"]
        par = w["parity"]
        anchor = w.get("anchor") or {}
        over = f"{anchor['runtime_over_py_trees_p50']}{X}" if anchor else "-"
        equal = anchor.get("runtime_over_equal_work_p50")
        equal_text = f"{equal}{X}" if equal is not None else "-"
        lines.append(
            f"| {w['label']} | {_ms(r['p50_us'])} | {_ms(r['p99_us'])} | {_ms(r['p999_us'])} | "
            f"{_ms(b['p50_us'])} / {_ms(b['p99_us'])} / {_ms(b['p999_us'])} | "
            f"{_ms(s['p50_us'])} | {w['seed_over_runtime_p50']}{X} | {over} | {equal_text} | "
            f"{par['ticks_compared'] - par['mismatches']}/{par['ticks_compared']} |"
        )
    lines += [
        "",
        "Runtime ticks per world: "
        + ", ".join(str(w["runtime_tick"]["n"]) for w in results["worlds"])
        + "; seed ticks: "
        + ", ".join(str(w["seed_tick"]["n"]) for w in results["worlds"])
        + ". Parity: ticks on which the working set and every view equal the reference "
        "model's (`benchmarks/reference_model.py`, sharing no code with the runtime) in every "
        "field and in order: items with value, importance, last_used, first_seen, source, "
        "stamp, seq and via; missing items and their reasons; map window, corridor and "
        "events in order; evictions with reason; the capacity alarm. Runtime / py_trees: "
        "medians of alternating runtime and py_trees anchor ticks. Runtime / equal-work "
        "peer: the same alternation (runtime, anchor and peer in turn, on a world of their "
        "own built from the same size and seed) against `benchmarks/peer_work.py`, the same "
        "views assembled the way a py_trees user would (blackboard clients, a shapely "
        "`STRtree` window and corridor, a `bisect` event window, the same capacity and "
        "value eviction), checked to hold the same items on every tick.",
        "",
        "## Stages (mean per tick, timed inside the real tick)",
        "",
        "`Assembler.laps` marks the end of each stage of the freeze (board: the board's "
        "change feed and readings; log: event windows and notes; map: windows and "
        "corridors; eviction: letting go and choosing victims, writing memory; freeze: "
        "the selections and the frozen pack), and the three views are timed after it. "
        "Means add up to the tick's mean (medians do not add); the seed's stages are its "
        "p50s.",
        "",
        "| world | board | log | map | eviction | freeze | views | sum | tick mean (p50) | "
        "seed board | map | log | eviction | evictions per tick |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in results["worlds"]:
        st, ss, sh = w["runtime_stages_p50_us"], w["seed_stages_p50_ms"], w["shape"]
        if not st:
            continue
        mean = st["mean_us"]
        lines.append(
            f"| {w['label']} | "
            + " | ".join(
                f"{mean[k]:.1f} µs" for k in ("board", "log", "map", "eviction", "freeze", "views")
            )
            + f" | {st['sum_of_means_us']:.1f} µs | {st['tick_mean_us']:.1f} µs "
            f"({st['tick_p50_us']:.1f} µs) | "
            + " | ".join(f"{ss[k]:.2f} ms" for k in ("board", "map", "log", "eviction"))
            + f" | {sh['evictions_per_tick']} |"
        )
    lines += ["", "## Cost growth (runtime p50)", ""]
    for axis, low, high in (
        ("events", 1000, 1_000_000),
        ("features", 1000, 100_000),
        ("board", 100, 10_000),
    ):
        for g in growth(results["worlds"], axis, low, high):
            lines.append(
                f"- {g['from']} → {g['to']}: {_ms(g['p50_from_us'])} → "
                f"{_ms(g['p50_to_us'])}, **{g['ratio']}{X}**"
            )
    big = _largest(results["worlds"])
    gcs = big["gc_during_runtime_ticks"]
    full = big["gc_full_collection_ms"]
    lines += [
        "",
        "## Garbage collection (largest world)",
        "",
        f"- A full collection with the world loaded: {full['runtime_loaded']:.0f} ms (runtime "
        f"only), {full['runtime_and_seed_loaded']:.0f} ms (with the seed reference's copy); "
        f"after `gc.freeze()`: {full.get('after_gc_freeze', float('nan')):.2f} ms.",
        f"- During {big['runtime_tick']['n']} timed ticks (automatic GC, world frozen): "
        + ", ".join(
            f"{g}: {v['count']} ({v['in_tick']} in ticks, longest in a tick "
            f"{_ms(v['max_in_tick_us'])})"
            for g, v in gcs.items()
        )
        + ".",
    ]
    slack = big.get("runtime_tick_gc_in_slack")
    if slack:
        t = slack["tick"]
        lines.append(
            f"- Collections moved to the slack between ticks (automatic GC off during ticks): "
            f"tick p50 {_ms(t['p50_us'])}, p99 {_ms(t['p99_us'])}, p99.9 {_ms(t['p999_us'])}; "
            f"collections between ticks {slack['collections_between_ticks']}, longest "
            f"{_ms(slack['longest_collection_between_ticks_us'])}."
        )
    peer = results.get("peer")
    lines += ["", "## Peer anchor, event memory, simulator", ""]
    if peer:
        t, b = peer["tick"], peer["busy_control"]
        lines.append(
            f"- py_trees {peer['py_trees_version']}, {peer['tree']}: tick p50 "
            f"{_ms(t['p50_us'])}, p99 {_ms(t['p99_us'])}, p99.9 {_ms(t['p999_us'])} "
            f"(busy control {_ms(b['p50_us'])} / {_ms(b['p99_us'])} / "
            f"{_ms(b['p999_us'])})."
        )
    em = results["event_memory"]
    lines.append(
        f"- Event log memory beyond the payload, {em['events']:,} events: runtime "
        f"{em['runtime_log_bytes_per_event']} B/event; the seed's list of Event objects "
        f"{em['seed_list_bytes_per_event']} B/event (payload itself "
        f"{em['payload_bytes_per_event']} B)."
    )
    sim = results["simulator"]
    runs = sim["runs"]
    lines.append(
        f"- Default scenario at {sim['rate_hz']:.0f} Hz, {len(runs)} run(s) of "
        f"{runs[0]['ticks']} ticks ({runs[0]['sim_time_s']:.0f} s simulated): median "
        f"{sim['median_ticks_per_s']:.0f} ticks/s, "
        f"**{sim['median_real_time_factor']}{X} "
        f"real time**; loop compute p50 {runs[0]['tick_compute_p50_ms']} ms."
    )
    prof = big.get("profile") or {}
    if prof:
        lines += [
            "",
            f"## Profile, largest world (cProfile over {prof['profiled_ticks']} ticks; "
            "it inflates per-call overhead)",
            "",
            "Runtime functions by cumulative time per tick:",
            "",
            "| function | calls / tick | self µs / tick | cumulative µs / tick |",
            "|---|---|---|---|",
        ]
        for row in prof["top_runtime_cumulative"][:20]:
            lines.append(
                f"| `{row['function']}` | {row['calls_per_tick']} | "
                f"{row['self_us_per_tick']} | {row['cumulative_us_per_tick']} |"
            )
    sprof = results.get("simulator_profile")
    if sprof:
        lines += [
            "",
            f"Share of the simulator's tick (cProfile, {sprof['ticks']} ticks): "
            + ", ".join(f"{k} {v}%" for k, v in sprof["share_of_tick_percent"].items())
            + "".join(
                f"; of the whole tick, {k} {v}%"
                for k, v in sprof.get("within_tick_percent", {}).items()
            )
            + ".",
        ]
    if results.get("long_term"):
        from benchmarks import long_term

        lines += long_term.markdown(results["long_term"])
    lines.append("")
    return "\n".join(lines)


def write(results: Mapping[str, Any], folder: Path) -> tuple[Path, Path]:
    """Write ``latest.json`` and ``latest.md`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / "latest.json"
    md_path = folder / "latest.md"
    json_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    md_path.write_text(markdown(results))
    return json_path, md_path
