"""What an agent turn holds while it runs, what it gives back, and how it is tuned.

- ``TurnSettings``: the bounds of a turn (plan size, attempts, iterations per step,
  revisions, requests, what is sent), checked when built.
- ``TurnState``: a turn under way, as plain values, so that it can wait (for a retry, on
  the loop's clock) and go on later, and so that a checkpoint holds it as a record: the goal
  and what was recalled, the phase, the working state (plan, current step, step results),
  the plan conversation under way, the short-term trace, the scratchpad notes, and the
  tallies (requests, failures in a row, when it may ask again).
- ``TurnResult``: how a turn ended. ``outcome`` says which way (``TURN_OUTCOMES``); with it
  the answer or the model's refusal or the error, the plan with each step's state and
  every revision adopted, each step's run, what was recalled and remembered, and the
  model requests made. Every way a turn can end has its own outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, model_validator

from runtime.agent.memory import Message, WorkingState
from runtime.agent.plan import Plan
from runtime.freeze import FrozenDict
from runtime.scratchpad import Note
from runtime.settings import Count, Settings

__all__ = [
    "TURN_OUTCOMES",
    "Remembrance",
    "StepRun",
    "TurnOutcome",
    "TurnResult",
    "TurnSettings",
    "TurnState",
]

TurnOutcome = Literal[
    "answer",
    "refusal",
    "permanent_error",
    "budget_spent",
    "malformed_plan",
    "replan_limit",
    "content_filter",
    "error",
    "abandoned",
]
"""How a turn ended:

- ``answer``: every step of the plan is done and the model answered (the only outcome
  that remembers);
- ``refusal``: the model declined (``message.refusal``), its text in ``refusal``;
- ``permanent_error``: a request failed in a way asking again cannot fix (HTTP 400,
  context length among them, 401, 403, 404, 422), the error in ``error``;
- ``budget_spent``: the turn made ``step_budget`` requests without ending;
- ``malformed_plan``: no acceptable plan (or revision) after ``plan_attempts`` replies,
  the last problem in ``detail``;
- ``replan_limit``: a step failed after ``replans`` revisions;
- ``content_filter``: the reply was withheld by the server's content filter;
- ``error``: ``failures`` requests in a row failed (timeouts, 429, 5xx, transport), the
  last error in ``error``;
- ``abandoned``: the goal went away while the turn ran (a cabin's turn only)."""

TURN_OUTCOMES: tuple[str, ...] = get_args(TurnOutcome)

Phase = Literal["plan", "steps", "replan", "answer"]
Chars = Annotated[int, Field(ge=16, le=1_000_000)]


class TurnSettings(Settings):
    """The bounds of one agent turn (a cabin's spec may set them in ``[params]``)."""

    min_steps: Count = 3
    """The fewest steps a plan may have (default 3, as the design says: 3 to 8)."""

    max_steps: Count = 8
    """The most steps a plan may have, and a revision may leave to do (default 8)."""

    plan_attempts: Count = 3
    """Replies the model has to write an acceptable plan, or revision, each problem shown
    back to it (default 3); then the turn ends ``malformed_plan``."""

    step_iterations: Count = 6
    """ReAct rounds (requests) one step may take without a result before it fails
    (default 6)."""

    replans: Annotated[int, Field(ge=0)] = 3
    """Revisions the model may make in one turn (default 3; 0: none); a step that fails
    after them ends the turn ``replan_limit``."""

    step_budget: Count = 64
    """The most model requests in one turn, failed ones included (default 64); then the
    turn ends ``budget_spent``."""

    failures: Count = 5
    """Failed requests in a row (each retried after the retry policy's wait) before the
    turn ends ``error`` (default 5)."""

    recall: Annotated[int, Field(ge=0)] = 3
    """Long-term memories recalled into the system prompt (default 3; 0: none)."""

    note_chars: Chars = 2000
    """The most characters of a scratchpad note's value in the prompt (default 2000); the
    rest is cut with the marker ``…[truncated: N of M characters not shown]``."""

    message_chars: Chars = 4000
    """The most characters of a tool result, a recalled memory, a step result and the
    model's own earlier texts and tool-call arguments in what is sent (default 4000), cut
    with the same marker."""

    memory_chars: Annotated[int, Field(ge=64, le=4000)] = 1500
    """The most characters of the summary remembered at the end (default 1500, at most
    4000: under long-term memory's default ``Retention.max_chars``)."""

    history: Annotated[int, Field(ge=8)] = 40
    """The most messages of the short-term trace; older turns roll into its summary
    (default 40)."""

    @model_validator(mode="after")
    def _steps_in_order(self) -> TurnSettings:
        if self.min_steps > self.max_steps:
            raise ValueError(
                f"min_steps ({self.min_steps}) must be at most max_steps ({self.max_steps})"
            )
        return self


@dataclass(frozen=True, slots=True)
class StepRun:
    """One run of a step: which step, under which plan revision, how it ended (``done``, or
    ``failed`` with the ``reason``: ``tool_failed``, ``same_action_twice`` or
    ``too_many_iterations``, and what happened), after how many requests."""

    step: str
    revision: int
    status: Literal["done", "failed"]
    iterations: int
    reason: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Remembrance:
    """What a turn asked long-term memory to keep: the text, and whether it was stored and
    why (``stored`` None: queued, for the loop to store; ``reason`` ``queued``)."""

    content: str
    stored: bool | None
    reason: str


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended (see ``TurnOutcome``) and what it did."""

    outcome: TurnOutcome
    goal: str
    answer: str | None = None
    refusal: str | None = None
    error: FrozenDict[str, Any] | None = None
    detail: str = ""
    plan: Plan | None = None
    revisions: tuple[Plan, ...] = ()
    results: FrozenDict[str, str] = field(default_factory=FrozenDict)
    steps_run: tuple[StepRun, ...] = ()
    recalled: tuple[str, ...] = ()
    remembered: Remembrance | None = None
    calls: int = 0
    started: float = 0.0
    ended: float = 0.0

    def step_states(self) -> dict[str, str]:
        """Each step of the final plan by id, with its status."""
        return {} if self.plan is None else {s.id: s.status for s in self.plan.steps}


@dataclass(slots=True)
class TurnState:
    """A turn under way (see the module docstring); ``result`` is set when it ends."""

    goal: str
    scope: FrozenDict[str, str]
    started: float
    recalled: tuple[str, ...] = ()
    phase: Phase = "plan"
    working: WorkingState = field(default_factory=lambda: WorkingState(""))
    revisions: tuple[Plan, ...] = ()
    asking: tuple[Message, ...] = ()
    attempts: int = 0
    replans: int = 0
    feedback: str = ""
    iterations: int = 0
    last_action: str | None = None
    steps_run: tuple[StepRun, ...] = ()
    trace: dict[str, Any] = field(default_factory=dict)
    notes: tuple[Note, ...] = ()
    calls: int = 0
    failures: int = 0
    error: FrozenDict[str, Any] | None = None
    retry_at: float | None = None
    result: TurnResult | None = None

    @property
    def plan(self) -> Plan | None:
        return self.working.plan

    @property
    def waiting(self) -> bool:
        """True while it waits to ask again after a failed request."""
        return self.result is None and self.retry_at is not None
