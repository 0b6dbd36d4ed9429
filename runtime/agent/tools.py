"""Function tools for LLM-backed cabins: schemas, argument validation and dispatch.

A ``Tool`` is a name, a description, a pydantic model of its arguments and a
function run on validated arguments. Its ``schema()`` is the OpenAI-style
function-tool schema (``{"type": "function", "function": {...}}``), generated
from the same model that validates the arguments, so the two cannot disagree.

A ``ToolDispatcher`` executes one tool call (a name and a JSON argument string,
as a chat-completions model sends them) and always answers with a ``ToolResult``:
an unknown tool, invalid JSON, arguments that are not an object, a missing,
unexpected or mistyped argument, or a tool that raises, each give an error
result saying what is wrong, which goes back to the model as the tool's output.
Nothing a model sends can raise out of ``call``.

``scratchpad_tools(pad)`` are the seed's three scratchpad tools (save, read, list)
over a ``Scratchpad``; action tools (commands, events) are added the same way. Given the
notes the view lost to capacity (``evicted=``), reading one says it was evicted from the
working set rather than that it does not exist.

``schema(strict=True)`` gives a schema usable in OpenAI's strict mode (structured outputs
for function calling), by the rules the ``openai`` SDK applies in ``pydantic_function_tool``:
``"strict": true``, every object closed (``additionalProperties: false``) with every
property required, a ``$ref`` with siblings inlined, null defaults dropped; and, since
strict mode wants a type everywhere, an argument of any JSON value is offered as a
string, number, boolean, null or an array of those. Arguments are still validated by
the model of the tool, so strict mode changes what the model is offered, never what is
accepted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, get_args

import structlog
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from runtime.errors import SettingError
from runtime.logs import debug_enabled
from runtime.scratchpad import Scratchpad, check_note_key, to_json_text

__all__ = [
    "EVICTED_NOTE",
    "LIST_SCRATCHPAD_KEYS",
    "READ_FROM_SCRATCHPAD",
    "SAVE_TO_SCRATCHPAD",
    "ListArgs",
    "ReadArgs",
    "SaveArgs",
    "Tool",
    "ToolArgs",
    "ToolDispatcher",
    "ToolResult",
    "scratchpad_tools",
    "strict_schema",
]

SAVE_TO_SCRATCHPAD = "save_to_scratchpad"
READ_FROM_SCRATCHPAD = "read_from_scratchpad"
LIST_SCRATCHPAD_KEYS = "list_scratchpad_keys"
_SHOWN = 200  # characters of a bad argument string quoted back in an error

_log = structlog.get_logger(__name__)

A = TypeVar("A", bound=BaseModel)


class ToolArgs(BaseModel):
    """Base of argument models: strict types, unknown arguments refused."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class Tool(Generic[A]):
    """A function tool: ``run`` gets the validated ``args`` model and returns JSON-able data."""

    name: str
    description: str
    args: type[A]
    run: Callable[[A], Any]

    def __post_init__(self) -> None:
        if (
            not isinstance(self.name, str)
            or not self.name.replace("_", "a").replace("-", "a").isalnum()
            or len(self.name) > 64
        ):
            raise SettingError(
                f"a tool name must be 1-64 letters, digits, '_' or '-', got {self.name!r}"
            )
        if not (isinstance(self.args, type) and issubclass(self.args, BaseModel)):
            raise TypeError(
                f"tool {self.name!r}: args must be a pydantic model class, got {self.args!r}"
            )

    def schema(self, *, strict: bool = False) -> dict[str, Any]:
        """The OpenAI-style function-tool schema of this tool (``strict``: for strict mode)."""
        parameters = _strip_titles(self.args.model_json_schema())
        parameters.setdefault("properties", {})
        function: dict[str, Any] = {"name": self.name, "description": self.description}
        if strict:
            parameters = strict_schema(parameters)
            function["strict"] = True
        function["parameters"] = parameters
        return {"type": "function", "function": function}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one tool call: data when it worked, an error message when not;
    ``raised`` when the call was valid and the tool itself raised (a failed tool, not a
    bad call)."""

    name: str
    ok: bool
    data: Any = None
    error: str | None = None
    raised: bool = False

    @property
    def content(self) -> str:
        """The result as the JSON text a tool message carries back to the model."""
        return to_json_text(self.data if self.ok else {"error": self.error})


class ToolDispatcher:
    """Executes tool calls by name, validating arguments; never raises on bad calls."""

    def __init__(self, tools: Iterable[Tool[Any]]) -> None:
        index: dict[str, Tool[Any]] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise TypeError(f"a ToolDispatcher takes Tool objects, got {tool!r}")
            if tool.name in index:
                raise SettingError(f"two tools are named {tool.name!r}")
            index[tool.name] = tool
        self._tools = index

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def schemas(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """The schemas of every tool, in the order given (the ``tools`` of a request)."""
        return [tool.schema(strict=strict) for tool in self._tools.values()]

    def with_tools(self, *tools: Tool[Any]) -> ToolDispatcher:
        """A dispatcher with these tools added (e.g. action tools beside the scratchpad's)."""
        return ToolDispatcher([*self._tools.values(), *tools])

    def call(self, name: Any, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        """Run tool ``name`` on ``arguments`` (JSON text, or an already parsed object)."""
        shown = str(name)
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return self._fail(shown, f"unknown tool {name!r} (known tools: {known})")
        text = _arguments_text(arguments)
        if text is None:
            return self._fail(
                shown, f"arguments must be a JSON object or text, got {type(arguments).__name__}"
            )
        try:
            parsed = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            return self._fail(
                shown,
                f"arguments are not valid JSON ({exc.msg} at line "
                f"{exc.lineno} column {exc.colno}): {_quote(text)}",
            )
        if not isinstance(parsed, dict):
            return self._fail(
                shown, f"arguments must be a JSON object, got {_json_type(parsed)}: {_quote(text)}"
            )
        try:
            args = tool.args.model_validate_json(text if text.strip() else "{}")
        except ValidationError as exc:
            return self._fail(
                shown,
                f"bad arguments for {tool.name}: {_describe(exc)}; expected {_signature(tool)}",
            )
        try:
            data = tool.run(args)
        except Exception as exc:  # a tool's failure is an answer to the model, not a crash
            return self._fail(
                shown, f"tool {tool.name} failed: {type(exc).__name__}: {exc}", raised=True
            )
        if debug_enabled(_log):
            _log.debug("tool_call", tool=tool.name, ok=True)
        return ToolResult(tool.name, True, data)

    @staticmethod
    def _fail(name: str, message: str, *, raised: bool = False) -> ToolResult:
        _log.info("tool_call_refused", tool=name, error=message)
        return ToolResult(name, False, None, message, raised)


# -- the scratchpad tools -----------------------------------------------------------------

NoteKey = Annotated[str, AfterValidator(check_note_key)]


class SaveArgs(ToolArgs):
    key: NoteKey = Field(description="Key name, in English snake_case (e.g. total_revenue).")
    value: Any = Field(description="The value to save (any JSON value).")
    description: str = Field(default="", description="What the value is, in a few words.")


class ReadArgs(ToolArgs):
    key: str = Field(description="The key of a saved note.")


class ListArgs(ToolArgs):
    pass


EVICTED_NOTE = (
    "the note is in the scratchpad, but working memory evicted it for capacity at this "
    "tick: its value is not in your view (save it again only if you know it)"
)
"""What ``read_from_scratchpad`` says of a note the view lost to capacity."""


def scratchpad_tools(
    pad: Scratchpad, *, tick: int | None = None, evicted: Iterable[str] = ()
) -> tuple[Tool[Any], ...]:
    """save_to_scratchpad, read_from_scratchpad and list_scratchpad_keys over ``pad``.

    ``evicted`` names the notes (keys without ``note:``) that the pad holds but the view
    ``pad`` was drafted from lost to capacity: reading one says so (``evicted``: true)
    rather than that there is no such note, and listing names them apart."""
    lost = tuple(dict.fromkeys(evicted))

    def save(args: SaveArgs) -> dict[str, Any]:
        replaced = args.key in pad
        pad.write(args.key, args.value, args.description, tick=tick)
        return {"saved": args.key, "replaced": replaced}

    def read(args: ReadArgs) -> dict[str, Any]:
        found = args.key in pad
        if not found and args.key in lost:
            return {
                "key": args.key,
                "found": False,
                "evicted": True,
                "value": None,
                "why": EVICTED_NOTE,
            }
        return {"key": args.key, "found": found, "value": pad.read(args.key)}

    def list_keys(args: ListArgs) -> dict[str, Any]:
        keys = pad.list_keys()
        gone = [k for k in lost if k not in keys]
        return {"keys": keys, "evicted": gone} if gone else {"keys": keys}

    return (
        Tool(
            SAVE_TO_SCRATCHPAD,
            "Save an intermediate result to working memory (the "
            "scratchpad) for later steps; saving to an existing key replaces it.",
            SaveArgs,
            save,
        ),
        Tool(
            READ_FROM_SCRATCHPAD,
            "Read a previously saved intermediate result; found is "
            "false when there is no such key, with evicted true when the note exists but "
            "working memory had no room for it this tick.",
            ReadArgs,
            read,
        ),
        Tool(LIST_SCRATCHPAD_KEYS, "List the keys saved in working memory.", ListArgs, list_keys),
    )


# -- helpers ------------------------------------------------------------------------------


def _arguments_text(arguments: Any) -> str | None:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, (bytes, bytearray)):
        return bytes(arguments).decode("utf-8", errors="replace")
    if isinstance(arguments, Mapping):
        return to_json_text(arguments)
    return None


def _quote(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def _json_type(value: Any) -> str:
    names = {
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


def _describe(exc: ValidationError) -> str:
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        kind = error["type"]
        if kind == "missing":
            problems.append(f"missing argument {where!r}")
        elif kind == "extra_forbidden":
            problems.append(f"unexpected argument {where!r}")
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(f"argument {where!r}: {message} (got {error.get('input')!r})")
    return "; ".join(problems)


def _signature(tool: Tool[Any]) -> str:
    fields = tool.args.model_fields
    if not fields:
        return "no arguments"
    parts = []
    for name, field in fields.items():
        annotation = field.annotation
        hint = (
            str(annotation).replace("typing.", "")
            if get_args(annotation)
            else getattr(annotation, "__name__", str(annotation))
        )
        parts.append(f"{name}: {hint}" + ("" if field.is_required() else " (optional)"))
    return "{" + ", ".join(parts) + "}"


_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _strip_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without pydantic's ``title`` keywords (property names are kept)."""
    out = {k: v for k, v in schema.items() if k != "title"}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _strip_titles(v) for k, v in out["properties"].items()}
    if isinstance(out.get("$defs"), dict):
        out["$defs"] = {k: _strip_titles(v) for k, v in out["$defs"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = _strip_titles(out[key])
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_strip_titles(v) if isinstance(v, dict) else v for v in out[key]]
    return out


_TYPED = ("type", "anyOf", "allOf", "oneOf", "$ref", "enum", "const")
_ANY_SCALAR: dict[str, Any] = {"type": ["string", "number", "boolean", "null"]}
ANY_JSON_STRICT: dict[str, Any] = {
    "anyOf": [_ANY_SCALAR, {"type": "array", "items": _ANY_SCALAR}],
}
"""What strict mode offers for an argument of any JSON value."""


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (a JSON Schema of tool arguments) made usable in OpenAI's strict mode."""
    root = json.loads(json.dumps(schema))  # a deep copy the rules may change
    return _strict(root, root, top=True)


def _strict(node: dict[str, Any], root: dict[str, Any], *, top: bool = False) -> dict[str, Any]:
    defs = node.get("$defs")
    if isinstance(defs, dict):
        node["$defs"] = {k: _strict(v, root) for k, v in defs.items() if isinstance(v, dict)}
    if node.get("type") == "object" and "additionalProperties" not in node:
        node["additionalProperties"] = False
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {k: _strict(v, root) for k, v in properties.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _strict(node["items"], root)
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            node[key] = [_strict(v, root) if isinstance(v, dict) else v for v in node[key]]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1 and isinstance(all_of[0], dict):
            node.pop("allOf")
            node.update(_strict(all_of[0], root))
        else:
            node["allOf"] = [_strict(v, root) if isinstance(v, dict) else v for v in all_of]
    if "default" in node and node["default"] is None:
        node.pop("default")
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        merged = {**json.loads(json.dumps(target)), **node}
        merged.pop("$ref")
        return _strict(merged, root)
    if not top and not any(k in node for k in _TYPED):  # any JSON value
        node.update(json.loads(json.dumps(ANY_JSON_STRICT)))
    return node
