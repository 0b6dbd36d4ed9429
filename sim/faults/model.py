"""Faults: what the simulator does to a run on purpose, to check each cabin's contract.

A fault acts during a tick range ``[start, end)`` (``end`` None: to the end of the
run). The kinds, and their command-line form (``--fault TEXT``, repeatable):

``missing:CABIN:PATTERN@START-END``
    every item matching PATTERN is hidden from CABIN's view (``*``: every cabin's);
    the cabin's required patterns it hides show up in ``view.missing`` as ``fault``.
``stale:KEY@START-END``
    the board keys matching KEY stop updating (the world's writes are dropped), so a
    reading with a time-to-live goes stale.
``dropout[:SENSOR]@START-END``
    a sensor drop-out: SENSOR (``pose``, ``velocity``, ``battery``, ``obstacles``,
    ``scanner``, or ``all``, the default) writes nothing.
``map-loss:FEATURE@START-END``
    the map features whose id matches FEATURE disappear from the map (not from the world).
``event-loss:KIND@START-END``
    events of a kind matching KIND that cabins emit are not written.
``crash:CABIN@START[-END]``
    CABIN raises at tick START (at every tick of START-END when a range is given).

A range is ``START-END``, ``START-`` (open) or ``START`` (one tick); ticks count from
0. The same faults can come from a TOML file with ``[[fault]]`` tables whose keys are
the fields of these models (``kind``, ``cabin``, ``pattern``, ``start``, ``end``, ...).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from runtime.errors import TickworkError
from runtime.patterns import matches, validate_pattern
from runtime.tomlfile import FileError, read_toml

SENSOR_KEYS: dict[str, tuple[str, ...]] = {
    "pose": ("pose",),
    "velocity": ("velocity",),
    "battery": ("battery",),
    "obstacles": (),
    "scanner": ("safety:scanner",),
}
"""The board keys each sensor writes (``obstacles`` writes map features instead)."""


Pattern = Annotated[str, Field(min_length=1)]


class _Fault(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    start: int = Field(ge=0, description="First tick the fault acts at.")
    end: int | None = Field(
        default=None, description="First tick it no longer acts at (None: to the end of the run)."
    )

    @model_validator(mode="after")
    def _check_range(self) -> _Fault:
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"end ({self.end}) must be after start ({self.start})")
        for name in ("pattern", "key", "feature", "event"):
            value = getattr(self, name, None)
            if isinstance(value, str):
                validate_pattern(value)
        return self

    def active(self, tick: int) -> bool:
        return self.start <= tick and (self.end is None or tick < self.end)

    @property
    def label(self) -> str:
        """The fault in its command-line form."""
        end = "" if self.end is None else str(self.end)
        if self.end == self.start + 1 and isinstance(self, CrashFault):
            return f"{self._head()}@{self.start}"
        return f"{self._head()}@{self.start}-{end}"

    def _head(self) -> str:
        raise NotImplementedError


class MissingFault(_Fault):
    """Hide items matching ``pattern`` from ``cabin``'s view (``*``: all cabins)."""

    kind: Literal["missing"] = "missing"
    cabin: str = Field(default="*", min_length=1)
    pattern: Pattern

    def _head(self) -> str:
        return f"missing:{self.cabin}:{self.pattern}"


class StaleFault(_Fault):
    """Board keys matching ``key`` stop updating."""

    kind: Literal["stale"] = "stale"
    key: Pattern

    def _head(self) -> str:
        return f"stale:{self.key}"


class DropoutFault(_Fault):
    """A sensor writes nothing."""

    kind: Literal["dropout"] = "dropout"
    sensor: Literal["all", "pose", "velocity", "battery", "obstacles", "scanner"] = "all"

    def _head(self) -> str:
        return "dropout" if self.sensor == "all" else f"dropout:{self.sensor}"


class MapLossFault(_Fault):
    """Map features whose id matches ``feature`` vanish from the map, not from the world."""

    kind: Literal["map-loss"] = "map-loss"
    feature: Pattern

    def _head(self) -> str:
        return f"map-loss:{self.feature}"


class EventLossFault(_Fault):
    """Events of kinds matching ``event`` that cabins emit are not written."""

    kind: Literal["event-loss"] = "event-loss"
    event: Pattern

    def _head(self) -> str:
        return f"event-loss:{self.event}"


class CrashFault(_Fault):
    """``cabin`` raises at the ticks of the range."""

    kind: Literal["crash"] = "crash"
    cabin: str = Field(min_length=1)

    def _head(self) -> str:
        return f"crash:{self.cabin}"


Fault = Annotated[
    MissingFault | StaleFault | DropoutFault | MapLossFault | EventLossFault | CrashFault,
    Field(discriminator="kind"),
]
_FAULTS: TypeAdapter[list[Fault]] = TypeAdapter(list[Fault])
_ONE: TypeAdapter[Fault] = TypeAdapter(Fault)

FAULT_KINDS = ("missing", "stale", "dropout", "map-loss", "event-loss", "crash")


class FaultError(TickworkError, ValueError):
    """A fault string or file that cannot be read; the message says what is wrong."""


_RANGE = re.compile(r"^(?P<start>\d+)(?:(?P<dash>-)(?P<end>\d+)?)?$")


def parse_fault(text: str) -> Fault:
    """Read one fault from its command-line form (see ``sim.faults.grammar.GRAMMAR``)."""
    head, at, when = text.rpartition("@")
    if not at or not head:
        raise FaultError(
            f"fault {text!r}: expected KIND...@START-END, e.g. "
            "missing:executor:event:action_failed*@100-400"
        )
    found = _RANGE.match(when.strip())
    if found is None:
        raise FaultError(
            f"fault {text!r}: the tick range {when!r} is not START-END, START- "
            "or START (whole ticks)"
        )
    start = int(found["start"])
    end: int | None
    if found["end"] is not None:
        end = int(found["end"])
    elif found["dash"]:
        end = None
    else:
        end = start + 1
    kind, _, rest = head.partition(":")
    fields: dict[str, Any] = {"kind": kind, "start": start, "end": end}
    if kind == "missing":
        cabin, colon, pattern = rest.partition(":")
        if not colon or not cabin or not pattern:
            raise FaultError(
                f"fault {text!r}: expected missing:CABIN:PATTERN@START-END (CABIN may be *)"
            )
        fields |= {"cabin": cabin, "pattern": pattern}
    elif kind == "stale":
        fields["key"] = rest
    elif kind == "dropout":
        fields["sensor"] = rest or "all"
    elif kind == "map-loss":
        fields["feature"] = rest
    elif kind == "event-loss":
        fields["event"] = rest
    elif kind == "crash":
        fields["cabin"] = rest
        if found["dash"] is None:
            fields["end"] = start + 1
    else:
        raise FaultError(
            f"fault {text!r}: unknown kind {kind!r}; kinds are {', '.join(FAULT_KINDS)}"
        )
    try:
        return _ONE.validate_python(fields)
    except ValidationError as exc:
        raise FaultError(f"fault {text!r}: {_problems(exc, prefix='')}") from None


def load_faults(path: str | Path) -> list[Fault]:
    """Read the ``[[fault]]`` tables of a TOML file."""
    shown = str(path)
    if not os.path.lexists(path):
        raise FaultError(f"{shown}: no such fault file")
    try:
        data = read_toml(path, error=FileError)
    except FileError as exc:
        raise FaultError(str(exc)) from None
    extra = sorted(set(data) - {"fault"})
    if extra:
        raise FaultError(
            f"{shown}: unknown key(s) {', '.join(extra)}: a fault file holds [[fault]] tables only"
        )
    try:
        return _FAULTS.validate_python(data.get("fault", []))
    except ValidationError as exc:
        raise FaultError(f"{shown}: {_problems(exc, prefix='fault')}") from None


def _problems(exc: ValidationError, *, prefix: str) -> str:
    lines = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        if prefix and loc and loc[0].isdigit():
            loc = [f"{prefix}[{loc[0]}]", *loc[1:]]
        loc = [part for part in loc if part not in FAULT_KINDS]  # the discriminator's tag
        where = ".".join(loc)
        message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)


class FaultPlan:
    """The faults of one run, asked tick by tick."""

    _derived = ("*",)  # the run's input: a checkpoint holds its faults as data of their own

    def __init__(self, faults: Iterable[Fault] = ()) -> None:
        self.faults: tuple[Fault, ...] = tuple(faults)

    def __bool__(self) -> bool:
        return bool(self.faults)

    def check_cabins(self, cabins: Iterable[str]) -> None:
        """Refuse a fault aimed at a cabin the run does not have (``FaultError``)."""
        known = list(cabins)
        for fault in self.faults:
            cabin = getattr(fault, "cabin", "*")
            if isinstance(fault, CrashFault) and cabin == "*":
                raise FaultError(
                    f"fault {fault.label!r}: a crash names one cabin (cabins: {', '.join(known)})"
                )
            if cabin != "*" and cabin not in known:
                raise FaultError(
                    f"fault {fault.label!r}: there is no cabin {cabin!r} "
                    f"(cabins: {', '.join(known)})"
                )

    def active(self, tick: int) -> list[Fault]:
        return [f for f in self.faults if f.active(tick)]

    def starting(self, tick: int) -> list[Fault]:
        return [f for f in self.faults if f.start == tick]

    def ending(self, tick: int) -> list[Fault]:
        return [f for f in self.faults if f.end == tick]

    def suppress(self, tick: int, cabin: str) -> list[str]:
        """Patterns hidden from ``cabin``'s view at ``tick``."""
        return [
            f.pattern
            for f in self.faults
            if isinstance(f, MissingFault) and f.active(tick) and f.cabin in ("*", cabin)
        ]

    def frozen_keys(self, tick: int) -> list[str]:
        """Board key patterns whose sensor writes are dropped at ``tick``."""
        out: list[str] = []
        for f in self.faults:
            if not f.active(tick):
                continue
            if isinstance(f, StaleFault):
                out.append(f.key)
            elif isinstance(f, DropoutFault):
                sensors = SENSOR_KEYS if f.sensor == "all" else {f.sensor: SENSOR_KEYS[f.sensor]}
                for keys in sensors.values():
                    out.extend(keys)
        return out

    def hidden_features(self, tick: int) -> list[str]:
        """Map feature id patterns kept off the map at ``tick``."""
        out: list[str] = []
        for f in self.faults:
            if not f.active(tick):
                continue
            if isinstance(f, MapLossFault):
                out.append(f.feature)
            elif isinstance(f, DropoutFault) and f.sensor in ("all", "obstacles"):
                out.append("obstacle:*")
        return out

    def lost_events(self, tick: int) -> list[str]:
        return [f.event for f in self.faults if isinstance(f, EventLossFault) and f.active(tick)]

    def crashes(self, tick: int, cabin: str) -> bool:
        return any(
            isinstance(f, CrashFault) and f.cabin == cabin and f.active(tick) for f in self.faults
        )


def hidden(key: str, patterns: Sequence[str]) -> bool:
    return any(matches(key, p) for p in patterns)
