"""Spec checking: validate cabin specs, lint them, and show what each would receive.

With a scenario, it also bounds how many items each spec may select at once on that
world, and all of them together (they share one working memory), against the capacity
(``sim.analysis.demand``): demand above it warns before anything runs.

``check_specs`` loads each spec file (or every spec in a folder), reports load
errors as ``SpecError`` text, lints what loads (a required pattern with no
declared reaction, or one no selector of the spec can ever satisfy; no declared
``[writes]``, or a broad pattern that cannot grant ``goal:*`` or ``safety:*``), and
assembles one tick of a scenario for the spec, so its author sees the items the
cabin would get and what it would find missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from runtime import ContextSpec, SpecError, StateBoard, load_spec
from runtime.patterns import overlaps
from runtime.writes import lint as lint_writes


def lint(spec: ContextSpec) -> list[str]:
    """Warnings about a spec that loads but will not do what its author likely means."""
    warnings: list[str] = []
    for pattern in spec.required:
        if spec.reaction_for(pattern) is None:
            warnings.append(f"required[{pattern!r}] has no declared reaction in [on_missing]")
        if pattern.startswith("event:"):
            if spec.event_window <= 0:
                warnings.append(
                    f"required {pattern!r} names events, but event_window is 0: "
                    "it will always be missing"
                )
        elif pattern.startswith("map:"):
            if spec.map_radius <= 0 and spec.corridor_width <= 0:
                warnings.append(
                    f"required {pattern!r} names map features, but the spec has "
                    "no map window or corridor: it will always be missing"
                )
        elif pattern.startswith("note:"):
            continue
        elif not any(overlaps(pattern, key) for key in spec.board_keys):
            warnings.append(f"required {pattern!r} is not read: no board_keys pattern covers it")
    # settings that do nothing because what they refine is off (every distance defaults to 0)
    if spec.map_center is not None and spec.map_radius <= 0:
        warnings.append(f"map_center is {spec.map_center!r} but map_radius is 0: no map window")
    if (spec.map_kinds or spec.map_tags) and spec.map_radius <= 0 and spec.corridor_width <= 0:
        warnings.append(
            "map_kinds/map_tags are set but the spec has no map window or "
            "corridor: they filter nothing"
        )
    if (spec.map_limit is not None or spec.map_share is not None) and spec.map_radius <= 0:
        warnings.append("map_limit/map_share are set but map_radius is 0: no map window to cap")
    if spec.corridor_limit is not None and spec.corridor_width <= 0:
        warnings.append("corridor_limit is set but corridor_width is 0: no corridor to cap")
    if (spec.event_kinds or spec.event_tags) and spec.event_window <= 0:
        warnings.append("event_kinds/event_tags are set but event_window is 0: no events")
    unused = spec.timing.unused()
    if unused:
        names = ", ".join(f"timing.{name}" for name in unused)
        warnings.append(f'{names} set but timing.mode is "sync": only asynchronous cabins use it')
    return warnings


MAP_READERS = {
    "planner": "routes around the obstacles in its map window",
    "executor": "slows and stops for the obstacles in its map window",
    "monitor": "guards against the obstacles and zone edges in its map window",
}
"""The built-in cabins that look for obstacles in ``nearby_map``, and what for: a spec
of theirs without a map window, or one that filters obstacles out, blinds them."""


def blinding(spec: ContextSpec) -> list[str]:
    """Warnings about a spec that leaves a built-in cabin unable to see obstacles."""
    why = MAP_READERS.get(spec.name)
    if why is None:
        return []
    warnings: list[str] = []
    if spec.map_radius <= 0 or spec.map_center is None:
        warnings.append(
            f"the built-in {spec.name} {why}, but this spec gives it no map window "
            "(map_radius is 0): it would not see an obstacle"
        )
    elif spec.map_kinds and "obstacle" not in spec.map_kinds:
        warnings.append(
            f"the built-in {spec.name} {why}, but map_kinds ({', '.join(spec.map_kinds)}) "
            "leaves obstacles out: it would not see one"
        )
    return warnings


def center_warnings(spec: ContextSpec, board: StateBoard, scenario: str) -> list[str]:
    """A warning if ``map_center`` does not hold a position in ``scenario``: the map window
    is then empty every tick, and a cabin cannot tell from its view why."""
    from runtime.position import read_xy

    if spec.map_center is None or spec.map_radius <= 0:
        return []
    reading = board.read(spec.map_center)
    if reading is None:
        return [
            f"map_center {spec.map_center!r} is not on the board in scenario {scenario}: "
            "the map window is empty"
        ]
    if read_xy(reading.value) is None:
        shown = repr(reading.value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return [
            f"map_center {spec.map_center!r} holds {shown} in scenario {scenario}, not a "
            "position (x, y): the map window is empty every tick"
        ]
    return []


def describe(spec: ContextSpec) -> dict[str, str]:
    """What a spec reads, in words."""
    reads: dict[str, str] = {}
    reads["board keys"] = ", ".join(spec.board_keys) or "none"
    reads["weights"] = ", ".join(f"{k}={v:g}" for k, v in spec.weights.items())
    reads["weights"] = (
        reads["weights"] + "; " if reads["weights"] else ""
    ) + f"default {spec.default_weight:g}"
    reads["required"] = ", ".join(spec.required) or "none"
    if spec.map_center and spec.map_radius > 0:
        filters = _filters(spec.map_kinds, spec.map_tags)
        reads["map window"] = f"{spec.map_radius:g} m around {spec.map_center}{filters}"
    if spec.corridor_width > 0:
        reads["map corridor"] = f"{spec.corridor_width:g} m along {spec.route_key}"
    if spec.event_window > 0:
        reads["events"] = (
            f"last {spec.event_window:g} s, newest {spec.event_limit}"
            f"{_filters(spec.event_kinds, spec.event_tags)}"
        )
    if spec.relevance:
        reads["relevance"] = "; ".join(
            f"{goal}: {', '.join(kept)}" for goal, kept in spec.relevance.items()
        )
    if spec.on_missing:
        reads["on missing"] = ", ".join(f"{k} → {v}" for k, v in spec.on_missing.items())
    writes = spec.writes
    if writes is None:
        reads["writes"] = "undeclared: any key but goal:* and safety:*, any event"
    else:
        reads["writes"] = ", ".join(writes.board) or "nothing"
        reads["deletes"] = ", ".join(writes.delete) or "nothing"
        reads["emits"] = ", ".join(writes.events) or "nothing"
    return reads


def _filters(kinds: Iterable[str], tags: Iterable[str]) -> str:
    parts = []
    if kinds:
        parts.append("kinds " + ", ".join(kinds))
    if tags:
        parts.append("tags " + ", ".join(tags))
    return f" ({'; '.join(parts)})" if parts else ""


def receives(spec: ContextSpec, scenario: str, capacity: int = 64) -> dict[str, Any]:
    """The items and missing items of ``spec``'s view at the first tick of ``scenario``."""
    import numpy as np

    from runtime import Assembler, CabinMap, EventLog, SimClock, StateBoard, WorkingMemory
    from sim.world.scenario import load_scenario
    from sim.world.world import World

    sc = load_scenario(scenario)
    clock = SimClock()
    board = StateBoard(clock=clock)
    cabin_map = CabinMap()
    log = EventLog(clock=clock)
    world = World(sc, rng=np.random.default_rng(0))
    world.install(board, cabin_map)
    world.sense(board, cabin_map, 0.0)
    memory = WorkingMemory(capacity=capacity)
    view = Assembler(board, cabin_map, log, memory, [spec]).assemble(0, 0.0).view(spec.name)
    return {
        "scenario": sc.name,
        "items": sorted(view),
        "missing": dict(view.missing),
        "evicted": list(view.evicted),
        "warnings": center_warnings(spec, board, sc.name),
    }


def unregistered(spec: ContextSpec, others: Iterable[ContextSpec] = ()) -> list[str]:
    """What ``spec`` names that the simulator, the built-in cabins and the cabins of
    ``others`` (by their declared ``[writes]``) never write, weights or required patterns
    that select nothing (``cabins.warehouse.registry``), and declared writes that look
    misspelt, each with the names it may have meant."""
    from cabins.warehouse.registry import WAREHOUSE

    registry = WAREHOUSE.with_declared([*others, spec])
    return [finding.text() for finding in registry.check(spec)]


def check_specs(
    paths: Iterable[str | Path],
    *,
    scenario: str | None = "warehouse",
    capacity: int = 64,
    strict: bool = False,
) -> list[dict[str, Any]]:
    """One report per spec file: errors, warnings, what it reads and receives; with a
    scenario, its worst-case demand on that world (``demand``) and that of every spec
    that loads, together, against working memory's ``capacity`` (``memory``). Names no one
    writes (``unregistered``) are warnings, errors when ``strict``."""
    from sim.world.scenario import ScenarioError

    reports: list[dict[str, Any]] = []
    loaded: list[tuple[dict[str, Any], ContextSpec]] = []
    parsed: list[tuple[dict[str, Any], ContextSpec]] = []
    for path in _spec_files(paths):
        report: dict[str, Any] = {"path": str(path), "errors": [], "warnings": []}
        reports.append(report)
        try:
            parsed.append((report, load_spec(path)))
        except SpecError as exc:
            report["errors"] = str(exc).splitlines()
    together = [spec for _, spec in parsed]  # what each declares it writes counts as known
    for report, spec in parsed:
        report["spec"] = spec.model_dump(mode="json")
        report["warnings"] = lint(spec) + blinding(spec) + lint_writes(spec.writes)
        unknown = unregistered(spec, together)
        report["errors" if strict else "warnings"] += unknown
        if strict and unknown:
            continue
        report["reads"] = describe(spec)
        if scenario is not None:
            try:
                received = receives(spec, scenario, capacity)
            except ScenarioError as exc:
                report["errors"] = str(exc).splitlines()
            else:
                report["warnings"] += received.pop("warnings")
                report["receives"] = received
                loaded.append((report, spec))
    if scenario is not None and loaded:
        _add_demand(loaded, scenario, capacity)
    return reports


def _add_demand(
    loaded: list[tuple[dict[str, Any], ContextSpec]], scenario: str, capacity: int
) -> None:
    """Each report's worst-case demand on ``scenario``, the shared one, and their
    warnings (specs of one name are counted once: the first)."""
    from sim.analysis.demand import demand
    from sim.world.scenario import load_scenario

    unique: dict[str, ContextSpec] = {}
    for _, spec in loaded:
        unique.setdefault(spec.name, spec)
    shared = demand(list(unique.values()), load_scenario(scenario), capacity)
    mine = {d.spec: d for d in shared.specs}
    for report, spec in loaded:
        report["demand"] = mine[spec.name].as_json()
        report["memory"] = shared.as_json()
        if unique[spec.name] is spec:
            report["warnings"] += shared.warnings(spec.name)


def _spec_files(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.glob("*.toml") if not p.name.startswith("."))
            files.extend(found)
        else:
            files.append(path)
    return files
