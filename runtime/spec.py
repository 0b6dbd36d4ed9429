"""Context specs: the contract that says what a cabin needs to see every tick.

A ``ContextSpec`` (the seed's assembly list) names the board keys a cabin reads
and how much each matters, the map window and route corridor around it, the
event window, which items are required (their absence is flagged in the view),
the reaction the cabin declares for each missing one, and its timing (``[timing]``:
inside the tick or asynchronously, see ``runtime.timing``). Specs live as one TOML
file per cabin; ``load_spec`` and ``load_specs`` read them and raise a
``SpecError`` naming the file, the key path and the problem.

``python -m runtime.spec --schema`` prints the JSON Schema editors can use;
``python -m runtime.spec FILE_OR_FOLDER...`` checks spec files.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    WrapSerializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from runtime.errors import SettingError
from runtime.freeze import FrozenDict
from runtime.patterns import is_glob, matches, specificity, validate_pattern
from runtime.timing import Timing
from runtime.tomlfile import FileError, did_you_mean, key_path, read_toml

__all__ = [
    "ContextSpec",
    "SpecError",
    "Writes",
    "json_schema",
    "load_spec",
    "load_specs",
    "main",
    "schema_text",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_TITLE = "tickwork cabin context spec"
_WEIGHT_CACHE_LIMIT = 4096


def _check_pattern(pattern: str) -> str:
    try:
        return validate_pattern(pattern)
    except ValueError as exc:
        raise PydanticCustomError("invalid_pattern", "{reason}", {"reason": str(exc)}) from exc


def _check_exact_key(key: str) -> str:
    _check_pattern(key)
    if is_glob(key):
        raise PydanticCustomError(
            "not_exact_key",
            "{key} is a glob; this must be one exact board key",
            {"key": repr(key)},
        )
    return key


def _freeze_mapping(value: Mapping[Any, Any]) -> FrozenDict[Any, Any]:
    return FrozenDict(value)


def _dump_mapping(value: Mapping[Any, Any], handler: SerializerFunctionWrapHandler) -> Any:
    return handler(dict(value))


MAX_TEXT = 256
"""The longest key pattern, board key, label or reaction (characters)."""

MAX_ITEMS = 1024
"""The most entries in any list or table of a spec."""

MAX_DISTANCE = 1e6
"""The largest map radius, corridor width (m) or event window (s)."""

MAX_EVENT_LIMIT = 100_000
"""The most events one view can hold."""

MAX_FEATURE_LIMIT = 100_000
"""The largest ``map_limit`` or ``corridor_limit``."""

PATTERN_REGEX = r"^(?:[^\s\[\]]|\[(?:!(?:\][^\]\s]*|[^\]\s]+)|\][^\]\s]*|[^\]\s!][^\]\s]*)\])+$"
"""What ``validate_pattern`` accepts, as a regular expression (for the JSON Schema): no
white space, every ``[`` closed (a ``]`` first in a class, after an optional ``!``, is
literal), no stray ``]``."""

EXACT_KEY_REGEX = r"^[^\s\[\]*?]+$"
"""One exact board key: no white space and no glob character."""

KeyPattern = Annotated[
    str,
    Field(min_length=1, max_length=MAX_TEXT, json_schema_extra={"pattern": PATTERN_REGEX}),
    AfterValidator(_check_pattern),
]
BoardKey = Annotated[
    str,
    Field(min_length=1, max_length=MAX_TEXT, json_schema_extra={"pattern": EXACT_KEY_REGEX}),
    AfterValidator(_check_exact_key),
]
Weight = Annotated[float, Field(ge=0, le=1, strict=True, allow_inf_nan=False)]
Distance = Annotated[float, Field(ge=0, le=MAX_DISTANCE, strict=True, allow_inf_nan=False)]
ReactionText = Annotated[str, Field(max_length=MAX_TEXT, pattern=r"^[a-z_]+:[a-z0-9_.-]+$")]
Label = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
UNIQUE: dict[str, Any] = {"uniqueItems": True}


def _integral_float(value: Any) -> Any:
    # 16.0 is the whole number 16 to a JSON Schema, so to the loader too
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_integral_float)]
Limit = Annotated[
    int, Field(ge=1, le=MAX_FEATURE_LIMIT, strict=True), BeforeValidator(_integral_float)
]
"""A cap on the features one map query gives a view (``map_limit``, ``corridor_limit``)."""
Share = Annotated[float, Field(gt=0, le=1, strict=True, allow_inf_nan=False)]
"""A share of working memory's capacity, in (0, 1] (``map_share``)."""
WeightMap = Annotated[
    Mapping[KeyPattern, Weight], AfterValidator(_freeze_mapping), WrapSerializer(_dump_mapping)
]
RelevanceMap = Annotated[
    Mapping[Label, tuple[Label, ...]],
    AfterValidator(_freeze_mapping),
    WrapSerializer(_dump_mapping),
]
ReactionMap = Annotated[
    Mapping[KeyPattern, ReactionText],
    AfterValidator(_freeze_mapping),
    WrapSerializer(_dump_mapping),
]
ConditionName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
ParamName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=MAX_TEXT)]


def _frozen(value: Any) -> Any:
    """A parameter value as held: arrays as tuples, tables as ``FrozenDict``."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, Mapping):
        return FrozenDict({k: _frozen(v) for k, v in value.items()})
    return value


def _thawed(value: Any) -> Any:
    """A held parameter value as JSON: tuples as lists, tables as dicts."""
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    return value


ParamMap = Annotated[
    Mapping[ParamName, JsonValue], AfterValidator(_frozen), PlainSerializer(_thawed)
]
ConditionMap = Annotated[
    Mapping[ConditionName, ReactionText],
    AfterValidator(_freeze_mapping),
    WrapSerializer(_dump_mapping),
]


PatternList = Annotated[
    tuple[KeyPattern, ...], Field(max_length=MAX_ITEMS, json_schema_extra=UNIQUE)
]


class Writes(BaseModel):
    """What a cabin may change (a spec's ``[writes]``): patterns as in ``board_keys``.

    What a declared table leaves out is refused (``runtime.writes``); ``goal:*`` and
    ``safety:*`` are granted only by patterns that name them explicitly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    board: PatternList = Field(
        default=(),
        description="Board keys the cabin may write: exact keys or globs. goal:* and "
        "safety:* keys only through a pattern that starts with 'goal:' or 'safety:'.",
        examples=[["route", "plan:*"]],
    )
    delete: PatternList = Field(
        default=(),
        description="Board keys the cabin may delete (the same rules as board).",
        examples=[["task:refused:*"]],
    )
    events: PatternList = Field(
        default=(),
        description="Event kinds the cabin may emit: exact kinds or globs.",
        examples=[["alarm", "task_*"]],
    )

    @model_validator(mode="after")
    def _unique(self) -> Writes:
        errors: list[InitErrorDetails] = []
        for field in ("board", "delete", "events"):
            seen: dict[str, int] = {}
            for i, pattern in enumerate(getattr(self, field)):
                if pattern in seen:
                    errors.append(
                        InitErrorDetails(
                            type=PydanticCustomError(
                                "duplicate",
                                "{pattern} is already at {field}[{first}]",
                                {"pattern": repr(pattern), "field": field, "first": seen[pattern]},
                            ),
                            loc=(field, i),
                            input=pattern,
                        )
                    )
                seen.setdefault(pattern, i)
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self


class _WeightLookup:
    """``weights`` compiled for ``weight_for``: exact keys, then globs by specificity.

    Equality ignores the result cache, so two equal specs stay equal after use.
    """

    __slots__ = ("_cache", "_default", "_exact", "_globs")

    def __init__(self, weights: Mapping[str, float], default: float) -> None:
        self._default = default
        self._exact = {p: w for p, w in weights.items() if not is_glob(p)}
        declared = [(p, w) for p, w in weights.items() if is_glob(p)]
        ranked = sorted(
            enumerate(declared), key=lambda iw: (specificity(iw[1][0]), -iw[0]), reverse=True
        )
        self._globs = tuple((re.compile(fnmatch.translate(p)), w) for _, (p, w) in ranked)
        self._cache: dict[str, float] = {}

    def weight(self, key: str) -> float:
        found = self._cache.get(key)
        if found is not None:
            return found
        weight = self._exact.get(key)
        if weight is None:
            weight = next((w for rx, w in self._globs if rx.match(key)), self._default)
        if len(self._cache) >= _WEIGHT_CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = weight
        return weight

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _WeightLookup):
            return NotImplemented
        return (self._default, self._exact, self._globs) == (
            other._default,
            other._exact,
            other._globs,
        )

    def __hash__(self) -> int:
        return hash((self._default, tuple(self._exact.items()), self._globs))


class ContextSpec(BaseModel):
    """A cabin's context spec (assembly list): what it needs to see every tick."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(
        pattern=r"^[a-z][a-z0-9_-]*$",
        max_length=64,
        description="Cabin name: lower case letters, digits, '_' and '-'. "
        "Defaults to the file name (without .toml).",
    )
    description: str = Field(
        default="", max_length=10_000, description="What the cabin decides, for people."
    )
    board_keys: tuple[KeyPattern, ...] = Field(
        default=(),
        max_length=MAX_ITEMS,
        json_schema_extra=UNIQUE,
        description="State-board keys the cabin reads: exact keys (pose) or globs (goal:*).",
        examples=[["pose", "route", "goal:*"]],
    )
    weights: WeightMap = Field(
        default={},
        max_length=MAX_ITEMS,
        validate_default=True,
        description="Key pattern -> importance in [0, 1] of the items it names. A key takes "
        "the weight of its exact entry, else of its most specific matching glob "
        "(ties: first declared), else default_weight.",
        examples=[{"goal:*": 1.0, "pose": 0.9, "event:*": 0.4}],
    )
    default_weight: Weight = Field(
        default=0.5, description="Importance in [0, 1] of an item no weights pattern matches."
    )
    required: tuple[KeyPattern, ...] = Field(
        default=(),
        max_length=MAX_ITEMS,
        json_schema_extra=UNIQUE,
        description="Patterns whose absence from the view is flagged as a missing item.",
        examples=[["goal:*", "safety:*", "event:action_failed*"]],
    )
    map_center: BoardKey | None = Field(
        default=None,
        description="Board key holding the centre of the map window (e.g. pose); "
        "required when map_radius > 0.",
    )
    map_radius: Distance = Field(
        default=0.0, description="Radius of the map window around map_center; 0 = no window."
    )
    map_kinds: tuple[Label, ...] = Field(
        default=(),
        max_length=MAX_ITEMS,
        description="Feature kinds kept in the map window; empty = all kinds.",
    )
    map_tags: tuple[Label, ...] = Field(
        default=(),
        max_length=MAX_ITEMS,
        description="Feature tags kept in the map window; empty = all tags.",
    )
    map_limit: Limit | None = Field(
        default=None,
        description="At most this many features from the map window, nearest first (after "
        "the kind, tag and relevance filters); unset = every feature within map_radius.",
    )
    map_share: Share | None = Field(
        default=None,
        description="At most this share of working memory's capacity for the map window "
        "(rounded down, at least 1 feature), nearest first; with map_limit the smaller cap "
        "holds. Unset = no share.",
    )
    route_key: BoardKey = Field(
        default="route", description="Board key holding the route the corridor follows."
    )
    corridor_width: Distance = Field(
        default=0.0,
        description="Width of the map corridor along the route; 0 = no corridor.",
    )
    corridor_limit: Limit | None = Field(
        default=None,
        description="At most this many features from the corridor, first along the route; "
        "unset = every feature within corridor_width of the route.",
    )
    event_window: Distance = Field(
        default=0.0,
        description="Seconds of recent events the cabin sees; 0 = no events.",
    )
    event_kinds: tuple[Label, ...] = Field(
        default=(),
        max_length=MAX_ITEMS,
        description="Event kinds kept in the event window; empty = all kinds.",
    )
    event_tags: tuple[Label, ...] = Field(
        default=(),
        max_length=MAX_ITEMS,
        description="Event tags kept in the event window; empty = all tags.",
    )
    event_limit: WholeNumber = Field(
        default=16,
        ge=1,
        le=MAX_EVENT_LIMIT,
        strict=True,
        description="At most this many (newest) events.",
    )
    relevance: RelevanceMap = Field(
        default={},
        max_length=MAX_ITEMS,
        validate_default=True,
        description="Goal kind -> map kinds/tags kept while a goal of that kind is active "
        "(a delivery goal keeps no charger details).",
        examples=[{"delivery": ["shelf", "dock", "obstacle"]}],
    )
    on_missing: ReactionMap = Field(
        default={},
        max_length=MAX_ITEMS,
        validate_default=True,
        description="Required pattern -> the reaction the cabin declares when it is "
        "missing, as <verb>:<detail>. Every key must be listed in required.",
        examples=[
            {
                "event:action_failed*": "retry:conservative",
                "constraint:*": "alarm:constraint_check",
                "safety:*": "stop:fail_safe",
            }
        ],
    )
    on_condition: ConditionMap = Field(
        default={},
        validate_default=True,
        description="Condition the cabin watches for -> the reaction it declares while the "
        "condition holds, as <verb>:<detail>. Which conditions there are is the cabin's to "
        "say (the monitor: deviation_growing, contact_predicted); a cabin refuses one it "
        "does not know.",
        examples=[{"deviation_growing": "slow:deviation", "contact_predicted": "stop:protective"}],
    )

    timing: Timing = Field(
        default_factory=Timing,
        description="When the cabin decides: inside the tick (sync, the default) or off the "
        "tick thread (async), and how long its asynchronous decisions stay good.",
    )
    writes: Writes | None = Field(
        default=None,
        description="What the cabin may write, delete and emit ([writes]: board, delete, "
        "events); anything else is refused at the apply with a write_refused event. Unset "
        "= undeclared: any key but goal:* and safety:*, and any event.",
    )
    params: ParamMap = Field(
        default={},
        max_length=MAX_ITEMS,
        validate_default=True,
        description="The cabin's parameters: setting name -> value, validated by the cabin's "
        "settings object (its Settings class) and handed to its constructor; a cabin "
        "without one refuses a non-empty table.",
        examples=[{"watchdog_s": 120.0, "max_deferrals": 3}],
    )

    _lookup: _WeightLookup = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._lookup = _WeightLookup(self.weights, self.default_weight)

    @model_validator(mode="after")
    def _check_consistency(self) -> ContextSpec:
        errors: list[InitErrorDetails] = []

        def refuse(
            loc: tuple[str | int, ...], value: Any, kind: str, message: str, **ctx: Any
        ) -> None:
            errors.append(
                InitErrorDetails(type=PydanticCustomError(kind, message, ctx), loc=loc, input=value)
            )

        for field in ("board_keys", "required"):
            seen: dict[str, int] = {}
            for i, pattern in enumerate(getattr(self, field)):
                if pattern in seen:
                    refuse(
                        (field, i),
                        pattern,
                        "duplicate",
                        "{pattern} is already at {field}[{first}]",
                        pattern=repr(pattern),
                        field=field,
                        first=seen[pattern],
                    )
                seen.setdefault(pattern, i)
        if self.map_radius > 0 and self.map_center is None:
            refuse(
                ("map_radius",),
                self.map_radius,
                "needs_map_center",
                "a map window (map_radius > 0) needs map_center, a board key such as 'pose'",
            )
        for pattern in self.on_missing:
            if pattern not in self.required:
                refuse(
                    ("on_missing", pattern),
                    pattern,
                    "not_required",
                    "{pattern} is not one of required {required}",
                    pattern=repr(pattern),
                    required=repr(list(self.required)),
                )
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self

    def weight_for(self, key: str) -> float:
        """The importance of ``key``: its exact ``weights`` entry, else that of the most
        specific matching glob (ties: first declared), else ``default_weight``."""
        return self._lookup.weight(key)

    @property
    def weigher(self) -> Callable[[str], float]:
        """``weight_for`` as a plain function, for hot loops (no model attribute lookups)."""
        return self._lookup.weight

    def reactions_in_force(
        self,
        table: Literal["on_missing", "on_condition"],
        allowed: Mapping[str, Sequence[str]],
        *,
        cabin: str,
    ) -> dict[str, str]:
        """The reaction in force for each key of ``allowed`` (a required pattern for
        ``on_missing``, a condition for ``on_condition`` -> what ``cabin`` can do, its
        default first): the one the spec's ``table`` declares, else the default. A spec
        that declares a key ``allowed`` lacks, or a reaction not allowed for its key, is
        refused: one ``SettingError`` naming each."""
        declared: Mapping[str, str] = getattr(self, table)
        wrong = []
        for key, reaction in declared.items():
            choices = allowed.get(key)
            if choices is None:
                known = ", ".join(map(repr, allowed))
                wrong.append(
                    f"{key!r} = {reaction!r} (the {cabin} has no reaction for {key!r}; it has "
                    f"them for {known})"
                    if table == "on_missing"
                    else f"{key!r} (the {cabin} watches for {known})"
                )
            elif reaction not in choices:
                wrong.append(
                    f"{key!r} = {reaction!r} (for {key!r} it can do "
                    f"{' or '.join(map(repr, choices))})"
                )
        if wrong:
            refused = (
                f"reactions the {cabin} does not have"
                if table == "on_missing"
                else f"conditions the {cabin} cannot act on"
            )
            raise SettingError(f"spec {self.name!r} declares {refused}: " + "; ".join(wrong))
        return {key: declared.get(key, choices[0]) for key, choices in allowed.items()}

    def reaction_for(self, pattern: str) -> str | None:
        """The declared reaction for a missing ``pattern`` (a required pattern, or a key
        one matches: the most specific wins), or None if none is declared."""
        exact = self.on_missing.get(pattern)
        if exact is not None:
            return exact
        found = [p for p in self.on_missing if matches(pattern, p)]
        if not found:
            return None
        return self.on_missing[max(found, key=specificity)]


class SpecError(FileError):
    """A spec file (or folder) that cannot be loaded; one problem per line."""


def _describe(error: Mapping[str, Any]) -> str:
    where = key_path(error["loc"])
    if error["type"] == "extra_forbidden":
        name = str(error["loc"][-1])
        tables: dict[Any, Any] = {"timing": Timing.model_fields, "writes": Writes.model_fields}
        known = tables.get(error["loc"][0], ContextSpec.model_fields)
        return f"{where}: unknown key{did_you_mean(name, known)}"
    message = str(error["msg"])
    value = error.get("input")
    if isinstance(value, (str, int, float)) and repr(value) not in message:
        message += f" (got {value!r})"
    return f"{where}: {message}" if where else message


def load_spec(path: str | os.PathLike[str]) -> ContextSpec:
    """Read one cabin spec from a TOML file; its ``name`` defaults to the file stem."""
    shown = os.fspath(path)
    data = read_toml(path, error=SpecError)
    data.setdefault("name", Path(path).stem)
    try:
        return ContextSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(shown, tuple(_describe(e) for e in exc.errors())) from exc


def load_specs(folder: str | os.PathLike[str]) -> dict[str, ContextSpec]:
    """Load every ``*.toml`` in ``folder`` (sorted by file name; dot files skipped),
    keyed by cabin name."""
    shown = os.fspath(folder)
    where = Path(folder)
    if not where.exists():
        raise SpecError(shown, ("folder not found",))
    if not where.is_dir():
        raise SpecError(shown, ("not a folder",))
    files = sorted(
        entry.name
        for entry in where.iterdir()
        if entry.suffix == ".toml" and not entry.name.startswith(".") and entry.is_file()
    )
    if not files:
        raise SpecError(shown, ("no spec files (*.toml) in this folder",))
    specs: dict[str, ContextSpec] = {}
    origin: dict[str, str] = {}
    for file_name in files:
        file_path = os.path.join(shown, file_name)
        spec = load_spec(file_path)
        if spec.name in origin:
            raise SpecError(
                file_path, (f"name: cabin {spec.name!r} is already defined in {origin[spec.name]}",)
            )
        specs[spec.name] = spec
        origin[spec.name] = file_path
    return specs


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, for editors (e.g. taplo / Even Better TOML).

    ``name`` is optional in a file (the loader falls back to the file stem), so the
    schema does not require it.
    """
    schema = ContextSpec.model_json_schema()
    schema.pop("$id", None)
    required = [field for field in schema.pop("required", []) if field != "name"]
    if required:
        schema["required"] = required
    schema["title"] = SCHEMA_TITLE
    _closed_tables(schema)
    # the loader's cross-field rule a schema can say: a map window needs its centre
    schema["if"] = {
        "properties": {"map_radius": {"exclusiveMinimum": 0}},
        "required": ["map_radius"],
    }
    schema["then"] = {"required": ["map_center"]}
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def _closed_tables(node: Any) -> None:
    """Make every table whose keys follow a pattern refuse other keys, as the loader does:
    pydantic says the pattern in ``patternProperties``, which lets other keys through, so
    the pattern moves to ``propertyNames`` and the value schema to ``additionalProperties``."""
    if isinstance(node, dict):
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict) and len(patterns) == 1:
            ((pattern, values),) = node.pop("patternProperties").items()
            node["propertyNames"] = {**node.get("propertyNames", {}), "pattern": pattern}
            node["additionalProperties"] = values
        for value in node.values():
            _closed_tables(value)
    elif isinstance(node, list):
        for value in node:
            _closed_tables(value)


def schema_text() -> str:
    """``json_schema()`` as committed in ``specs/context-spec.schema.json``."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``--schema`` prints the JSON Schema; paths (files or folders) are checked."""
    parser = argparse.ArgumentParser(prog="python -m runtime.spec", description=__doc__)
    parser.add_argument("--schema", action="store_true", help="print the JSON Schema")
    parser.add_argument("paths", nargs="*", help="spec files or folders to check")
    args = parser.parse_args(argv)
    if not args.schema and not args.paths:
        parser.error("give --schema or at least one spec file or folder")
    if args.schema:
        sys.stdout.write(schema_text())
    failed = False
    for path in args.paths:
        try:
            names = list(load_specs(path)) if Path(path).is_dir() else [load_spec(path).name]
        except SpecError as exc:
            failed = True
            sys.stderr.write(f"{exc}\n")
        else:
            sys.stdout.write(f"{path}: ok ({', '.join(names)})\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
