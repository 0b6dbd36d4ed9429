"""A cabin's timing: whether it decides within the tick or off the tick thread, and for how long
its decisions stay good.

The ``[timing]`` table of a context spec is a ``Timing``. A synchronous cabin (the default)
decides inside the tick, on that tick's view. An asynchronous one (``mode = "async"``) takes
the frozen view of a tick on which it is idle and decides off the tick thread; its outbox is
applied at a later apply phase. A decision older than ``max_age`` ticks, or older than
``deadline`` seconds, when it comes back is late: ``on_late`` says whether it is dropped or
re-checked against the view of the tick it came back at. On a simulated clock its latency
is ``latency`` seconds, or drawn uniformly between ``latency`` and ``latency_max`` from the
loop's seeded generator, so a run stays deterministic tick for tick.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["MAX_AGE_LIMIT", "MAX_SECONDS", "Timing"]

MAX_SECONDS = 3600.0
"""The longest deadline or simulated latency a spec may declare (an hour)."""
MAX_AGE_LIMIT = 1_000_000
"""The largest ``max_age`` in ticks a spec may declare."""

Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS, strict=True, allow_inf_nan=False)]
Deadline = Annotated[float, Field(gt=0, le=MAX_SECONDS, strict=True, allow_inf_nan=False)]
Ticks = Annotated[int, Field(ge=1, le=MAX_AGE_LIMIT, strict=True)]


class Timing(BaseModel):
    """When a cabin decides and how long its decisions stay good (a spec's ``[timing]``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["sync", "async"] = Field(
        default="sync",
        description="sync: the cabin decides inside the tick. async: it decides off the tick "
        "thread on the view of a tick it was idle at; the loop never waits for it.",
    )
    deadline: Deadline | None = Field(
        default=None,
        description="Seconds (on the loop's clock) after which an asynchronous decision is "
        "late; none = no deadline.",
    )
    max_age: Ticks | None = Field(
        default=None,
        description="Ticks between the tick decided on and the tick applied at beyond which "
        "an asynchronous decision is late (at least 1: on a wall clock a decision comes back "
        "at the next apply phase at the earliest); none = no limit.",
    )
    on_late: Literal["drop", "recheck"] = Field(
        default="drop",
        description="What happens to a late decision: drop it, or re-check it against the view "
        "of the tick it came back at and apply it only if that still holds.",
    )
    latency: Seconds = Field(
        default=0.0,
        description="Simulated seconds an asynchronous decision takes on a simulated clock "
        "(on a wall clock it takes what it takes).",
    )
    latency_max: Seconds | None = Field(
        default=None,
        description="With it, the simulated latency of each decision is drawn uniformly from "
        "[latency, latency_max] by the loop's seeded generator.",
    )

    @model_validator(mode="after")
    def _check(self) -> Timing:
        if self.latency_max is not None and self.latency_max < self.latency:
            raise ValueError(
                f"latency_max ({self.latency_max!r}) must be at least latency ({self.latency!r})"
            )
        return self

    @property
    def is_async(self) -> bool:
        return self.mode == "async"

    def unused(self) -> list[str]:
        """The settings that do nothing here: every asynchronous setting of a sync cabin."""
        if self.is_async:
            return []
        return [name for name in sorted(self.model_fields_set) if name != "mode"]
