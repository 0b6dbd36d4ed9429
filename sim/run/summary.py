"""A run's summary read back from a file: the fields its verdict is judged from, typed.

``Simulation.summary()`` writes a summary whose fields are right by construction. One read
back from a file (a recording's ``summary`` metadata, a campaign journal's line) is data
someone may have edited, so it is checked here before ``sim.run.verdict.judge`` or a page
uses it: JSON nested at most ``runtime.jsondata.MAX_DEPTH`` deep, and every field the verdict
reads of the type ``Simulation.summary()`` gives it (``"collisions": [1]`` is refused, not
judged as no collision). Fields it does not judge from are kept as they are. A field an
older summary lacks stays absent: ``judge`` counts it as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr
from pydantic import ValidationError as PydanticValidationError

from runtime.errors import TickworkError
from runtime.jsondata import JSONDataError, parse
from runtime.tomlfile import key_path

if TYPE_CHECKING:
    from runtime.recording.reader import Recording

MAX_TASKS = 10**6
"""The most tasks a summary may count (a scenario's numbers are at most 10⁶)."""
MAX_COUNT = 10**9
"""The largest count (ticks, collisions, ...) a summary may hold."""

Count = Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]
Tasks = Annotated[StrictInt, Field(ge=0, le=MAX_TASKS)]


class SummaryError(TickworkError, ValueError):
    """A summary read back from a file that is not one; the message names the field."""


class JudgedFields(BaseModel):
    """The fields of a summary ``judge`` reads (and the campaign table adds up), as
    ``Simulation.summary()`` writes them; any may be absent (an older summary)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    ticks: Count | None = None
    scenario_ticks: Count | None = None
    stopped_by: StrictStr | None = None
    deliveries_done: Tasks | None = None
    tasks_total: Tasks | None = None
    tasks_undeliverable: Annotated[list[Any], Field(max_length=MAX_TASKS)] | None = None
    tasks_undelivered: Annotated[list[StrictStr], Field(max_length=MAX_TASKS)] | None = None
    collisions: Count | None = None
    collision_details: list[dict[str, Any]] | None = None
    safety_violations: Count | None = None
    stalled_episodes: Count | None = None
    stalls: list[dict[str, Any]] | None = None
    tasks_abandoned: dict[str, StrictStr] | None = None
    tasks_refused: dict[str, dict[str, Any]] | None = None
    battery_empty_at: StrictFloat | StrictInt | None = None


JUDGED = tuple(JudgedFields.model_fields)
"""The names of the fields a verdict is judged from."""


def checked_summary(value: Any, *, where: str) -> dict[str, Any]:
    """``value`` (parsed JSON) as a summary whose judged fields have their types, or a
    ``SummaryError`` naming ``where`` and the first field that does not."""
    if not isinstance(value, Mapping):
        raise SummaryError(f"{where}: a run summary is a JSON object, not {_kind(value)}")
    try:
        JudgedFields.model_validate(value)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        raise SummaryError(
            f"{where}: the run summary's {key_path(first['loc'])}: {first['msg']}"
        ) from None
    return dict(value)


def read_summary(text: str | bytes, *, where: str) -> dict[str, Any]:
    """A summary from its JSON text (``checked_summary``); ``SummaryError`` if it is not."""
    try:
        value = parse(text)
    except JSONDataError as exc:
        raise SummaryError(f"{where}: the run summary is {exc}") from None
    return checked_summary(value, where=where)


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def recorded_summary(recording: Recording) -> dict[str, Any] | None:
    """The summary a run wrote into its recording when it finished (None: it did not, as a
    killed run does not), checked; a ``SummaryError`` when it is there but not a summary."""
    metadata = recording.scan.metadata.get("summary")
    if metadata is None:
        return None
    text = metadata.get("json")
    where = f"{recording.path}: the recording's summary metadata"
    if text is None:
        raise SummaryError(f"{where} has no 'json' field")
    return read_summary(text, where=where)
