"""Settings: a cabin's tuning values as one frozen, validated object.

A cabin that can be tuned (a planner's stall time, a monitor's stop margin) takes its
values as one ``Settings`` subclass instead of a long list of constructor arguments. The
subclass declares each value once, as an annotated field with its default, its bounds
(the ``Field`` constraints or the annotated types below) and, in the docstring under it,
its unit and meaning; that docstring is also the field's description in the JSON Schema
(``model_json_schema()``), so the same text documents the setting in code and in files.

Every value is checked in one place, when the object is built: keyword arguments only,
no unknown names, no bool where a number is expected, no NaN or infinity, each bound
and each rule across fields (a ``model_validator``). A bad value raises ``SettingError``
naming the setting, its value and the bound it breaks; nothing else is raised. A built
object cannot change; ``replace(**changes)`` gives a checked copy. ``from_table(data,
where=...)`` reads the same values from a mapping (a spec's table, say) and names
``where`` in its errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.errors import SettingError

__all__ = [
    "Count",
    "Fraction",
    "NonNegative",
    "Positive",
    "Settings",
    "describe_errors",
    "settings_from_spec",
]

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
"""A finite number above 0."""
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A finite number of at least 0."""
Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
"""A number in (0, 1]."""
Count = Annotated[int, Field(ge=1)]
"""A whole number of at least 1 (ticks, samples, attempts)."""


class Settings(BaseModel):
    """The base of every cabin's settings object (see the module docstring)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        use_attribute_docstrings=True,
        validate_default=True,
    )

    def __init__(self, **values: Any) -> None:
        self._build(values, type(self).__name__)

    def _build(self, values: dict[str, Any], where: str) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise SettingError(f"{where}: {describe_errors(exc)}") from None

    @classmethod
    def from_table(cls, data: Mapping[str, Any], *, where: str = "") -> Self:
        """The settings a mapping holds; errors name ``where`` (a file and table, say)."""
        shown = where or cls.__name__
        if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
            raise SettingError(f"{shown}: expected a table of settings, got {data!r}")
        settings = cls.__new__(cls)
        settings._build(dict(data), shown)
        return settings

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, checked as a new object is."""
        values = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**{**values, **changes})


def describe_errors(exc: ValidationError) -> str:
    """One line per problem: the setting, what is wrong and the value given."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "settings"
        message = str(error["msg"])
        if error["type"] == "extra_forbidden":
            message = "no such setting"
        elif message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        given = error.get("input")
        shown = "" if error["type"] in ("missing", "value_error") else f", got {given!r}"
        lines.append(f"{where}: {message}{shown}")
    return "; ".join(lines)


def settings_from_spec(factory: Any, spec: Any) -> Settings | None:
    """The settings a cabin class declares (its ``Settings`` attribute, a ``Settings``
    subclass) read from ``spec.params``; None when it declares none and the spec has no
    parameters. A spec with parameters for a cabin that declares no settings is refused
    (``SettingError``), as is a parameter its settings do not have."""
    declared = getattr(factory, "Settings", None)
    params = getattr(spec, "params", {}) or {}
    name = getattr(spec, "name", "?")
    if not (isinstance(declared, type) and issubclass(declared, Settings)):
        if params:
            what = getattr(factory, "__qualname__", repr(factory))
            raise SettingError(
                f"spec {name!r}: [params] given ({', '.join(params)}) but cabin {what} declares "
                "no Settings class to read them"
            )
        return None
    return declared.from_table(dict(params), where=f"spec {name!r} [params]")
