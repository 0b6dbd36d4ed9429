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
over a ``Scratchpad``; action tools (commands, events) are added the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, get_args

import structlog
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from runtime.errors import SettingError
from runtime.scratchpad import Scratchpad, check_note_key, to_json_text

__all__ = [
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

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function-tool schema of this tool."""
        parameters = _strip_titles(self.args.model_json_schema())
        parameters.setdefault("properties", {})
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one tool call: data when it worked, an error message when not."""

    name: str
    ok: bool
    data: Any = None
    error: str | None = None

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

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas of every tool, in the order given (the ``tools`` of a request)."""
        return [tool.schema() for tool in self._tools.values()]

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
            return self._fail(shown, f"tool {tool.name} failed: {type(exc).__name__}: {exc}")
        _log.debug("tool_call", tool=tool.name, ok=True)
        return ToolResult(tool.name, True, data)

    @staticmethod
    def _fail(name: str, message: str) -> ToolResult:
        _log.info("tool_call_refused", tool=name, error=message)
        return ToolResult(name, False, None, message)


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


def scratchpad_tools(pad: Scratchpad, *, tick: int | None = None) -> tuple[Tool[Any], ...]:
    """save_to_scratchpad, read_from_scratchpad and list_scratchpad_keys over ``pad``."""

    def save(args: SaveArgs) -> dict[str, Any]:
        replaced = args.key in pad
        pad.write(args.key, args.value, args.description, tick=tick)
        return {"saved": args.key, "replaced": replaced}

    def read(args: ReadArgs) -> dict[str, Any]:
        found = args.key in pad
        return {"key": args.key, "found": found, "value": pad.read(args.key)}

    def list_keys(args: ListArgs) -> dict[str, Any]:
        return {"keys": pad.list_keys()}

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
            "false when there is no such key.",
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
