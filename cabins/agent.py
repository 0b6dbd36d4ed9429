"""The agent cabin: agent turns (``runtime.agent.turn``) on the goals in a cabin's view, off
the tick thread.

``AgentCabin`` carries each goal in its view (board keys matching ``goals``, by default
``goal:*``) through one agent turn: recall, a plan the model writes, a ReAct loop per step,
re-plans, an answer, and the turn's summary remembered. It is asynchronous (its spec's
``[timing]``, or ``DEFAULT_TIMING``: ``mode = "async"``), so the loop hands it a view and
goes on while the model thinks; on the simulated clock a decision takes the declared
latency, so a run stays the same run tick for tick.

A decision advances the turn until it ends or must wait before asking again after a failed
request (``retry_at``, on the loop's clock, never a sleep): the next decision at or after
that time goes on where it stopped. A goal whose text changes (or that leaves the view)
while its turn runs ends that turn ``abandoned``; a goal is carried once, and again only
when its text changes.

Its tools are the scratchpad's, ``tools`` and ``action_tools`` (``cabins.llm.ActionTool``,
bound to the decision's outbox: commands, events and board writes apply after the
decision); a subclass offers tools that read its view (``tools_for``). What it reports, in
its outbox: an ``agent_step`` event for each step run (done or failed, with why), a
``replan`` event for each revision the model wrote, an ``agent_turn`` event when a turn ends
(outcome, answer or refusal, the plan's step states, requests, what it asked to remember),
an ``alarm`` of kind ``agent_turn_failed`` for any other outcome than ``answer``, and, with
``answer_key``, a board write of the answer. The summary it asks to remember goes through
``out.remember`` to the loop's long-term memory; it recalls from ``long_term`` (the same
memory, given to it by the simulator when a run has one), within ``memory_scope``.

A checkpoint holds what ``get_state`` gives: its turn under way (a ``TurnState`` record),
the goals it carried and its generator's state; the agent, its client, tools and memory are
rebuilt by the run (a subclass in a user's module is checkpointed the same way).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import structlog

from cabins.llm import ActionTool, LLMEndpoint
from runtime.agent.chat import ChatClient
from runtime.agent.clip import clip
from runtime.agent.tools import Tool
from runtime.agent.turn import DEFAULT_INSTRUCTIONS, Agent, Recall
from runtime.agent.turn_state import TurnResult, TurnSettings, TurnState
from runtime.backoff import Backoff
from runtime.cabin import Outbox
from runtime.errors import SettingError
from runtime.pack import CabinView
from runtime.patterns import matches
from runtime.scratchpad import NOTE_PREFIX, to_json_text
from runtime.spec import ContextSpec
from runtime.timing import Timing

__all__ = ["DEFAULT_TIMING", "AgentCabin"]

DEFAULT_TIMING = Timing(mode="async", deadline=120.0)
"""An agent cabin's timing when its spec has no ``[timing]`` table: asynchronous, and a
decision that takes more than 120 s is late (a turn makes many requests)."""

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Queued:
    """What asking the loop to remember answers: queued (the loop stores it after the
    decision, with a ``remembered`` event)."""

    stored: bool = False
    reason: str = "queued"


class _ThroughOutbox:
    """A long-term store that asks the loop to remember, through the decision's outbox."""

    def __init__(self, out: Outbox) -> None:
        self.out = out

    def remember(
        self,
        content: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        stamp: float | None = None,
    ) -> _Queued:
        self.out.remember(content, scope=scope, metadata=metadata, stamp=stamp)
        return _Queued()


class AgentCabin:
    """Runs an agent turn on each goal in its view; see the module docstring.

    ``client`` is its model (a ``runtime.agent.chat.ChatClient``), or ``llm`` an
    ``LLMEndpoint`` that makes one (``python -m sim run --llm-base-url``). ``settings``
    (``TurnSettings``; its spec's ``[params]``) bound each turn; ``retry`` and ``rng`` say
    how long it waits after a failed request (by default ``Backoff()`` and a generator
    seeded from its name).
    """

    uses_notes: ClassVar[bool] = False
    Settings = TurnSettings
    """What ``[params]`` in its spec may set (``runtime.settings.settings_from_spec``)."""

    def __init__(
        self,
        spec: ContextSpec,
        *,
        client: ChatClient | None = None,
        llm: LLMEndpoint | None = None,
        tools: Sequence[Tool[Any]] = (),
        action_tools: Sequence[ActionTool[Any]] = (),
        settings: TurnSettings | None = None,
        goals: str = "goal:*",
        long_term: Recall | None = None,
        memory_scope: Mapping[str, str] | None = None,
        answer_key: str | None = None,
        retry: Backoff | None = None,
        rng: np.random.Generator | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        timing: Timing | None = None,
    ) -> None:
        if client is None:
            if llm is None:
                raise SettingError(
                    f"cabin {spec.name!r} needs a model: give --llm-base-url URL (or set "
                    f"{LLMEndpoint.BASE_URL_ENV} or OPENAI_API_KEY), or client=..."
                )
            client = llm.client()
        for tool in action_tools:
            if not isinstance(tool, ActionTool):
                raise TypeError(f"action_tools take ActionTool objects, got {tool!r}")
        self.spec = spec
        self.client = client
        self.tools = tuple(tools)
        self.action_tools = tuple(action_tools)
        self.goals = goals
        self.answer_key = answer_key
        self.rng = rng if rng is not None else np.random.default_rng(zlib.crc32(spec.name.encode()))
        self.long_term = long_term
        self.agent = Agent(
            client,
            tools=[*self.tools, *(t.bind(Outbox(spec.name)) for t in self.action_tools)],
            memory=long_term,
            scope=memory_scope if memory_scope is not None else {"cabin": spec.name},
            settings=settings,
            retry=retry,
            rng=self.rng,
            instructions=instructions,
        )
        if timing is None:
            timing = spec.timing if "timing" in spec.model_fields_set else DEFAULT_TIMING
        self.timing = timing
        self.turn: TurnState | None = None
        self.task: str | None = None
        """The board key of the goal the turn under way carries."""
        self.carried: dict[str, str] = {}
        """Each goal key in sight whose turn ended, with the goal text it carried."""
        self.turns = 0
        self._asked = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settings(self) -> TurnSettings:
        return self.agent.settings

    def latency_share(self) -> float:
        """All of its declared latency if the decision asked the model, none if it did not."""
        return 1.0 if self._asked else 0.0

    # -- what a subclass may change ---------------------------------------------------------

    def goals_in(self, view: CabinView) -> dict[str, str]:
        """The goals on ``view``, by task (a name the cabin tracks them by) with the goal text
        a turn carries: each key matching ``goals`` with its value. A subclass may make one
        goal of many items."""
        return {
            key: f"{key}: {to_json_text(view[key])}"
            for key in sorted(view)
            if not key.startswith(NOTE_PREFIX) and matches(key, self.goals)
        }

    def tools_for(self, view: CabinView, out: Outbox) -> Sequence[Tool[Any]]:
        """The tools of a decision on ``view``: ``tools`` and the action tools bound to
        ``out``; a subclass adds tools that read ``view``."""
        return (*self.tools, *(t.bind(out) for t in self.action_tools))

    # -- a decision -------------------------------------------------------------------------

    def step(self, view: CabinView, out: Outbox) -> None:
        self._asked = False
        goals = self.goals_in(view)
        self.carried = {k: v for k, v in self.carried.items() if goals.get(k) == v}  # bounded
        turn = self.turn
        if turn is not None and goals.get(self.task or "") != turn.goal:
            self._abandon(turn, self.task not in goals, view, out)
            turn = None
        if turn is None:
            todo = [(k, text) for k, text in goals.items() if self.carried.get(k) != text]
            if not todo:
                return
            self.task = todo[0][0]
            turn = self.turn = self.agent.start(todo[0][1], now=view.time)
        if turn.retry_at is not None and view.time < turn.retry_at:
            return  # waiting to ask again: no request, no simulated time
        self._asked = True
        runs, plans = len(turn.steps_run), len(turn.revisions)
        self.agent.advance(
            turn,
            now=view.time,
            tools=self.tools_for(view, out),
            store=_ThroughOutbox(out),
            stamp=view.time,
        )
        self._report(turn, runs, plans, out)
        if turn.result is not None:
            self._finish(turn.result, out)

    # -- a checkpoint -------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """What a checkpoint holds of it (plain values and records)."""
        return {
            "turn": self.turn,
            "task": self.task,
            "carried": dict(self.carried),
            "turns": self.turns,
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, data: Mapping[str, Any]) -> None:
        """Take back what ``get_state`` gave; a ``SettingError`` if it is not that."""
        turn, task, carried = data.get("turn"), data.get("task"), data.get("carried")
        if turn is not None and not isinstance(turn, TurnState):
            raise SettingError(f"turn: a TurnState or None, got {type(turn).__name__}")
        if task is not None and not isinstance(task, str):
            raise SettingError(f"task: a goal's name or None, got {task!r}")
        if (turn is None) != (task is None):
            raise SettingError("a turn under way needs its task, and only it has one")
        if not isinstance(carried, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in carried.items()
        ):
            raise SettingError("carried: a mapping of goal names to goal texts")
        turns = data.get("turns")
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
            raise SettingError(f"turns: an int >= 0, got {turns!r}")
        state = data.get("rng")
        if not isinstance(state, Mapping):
            raise SettingError("rng: not a generator's state")
        try:
            self.rng.bit_generator.state = state
        except (TypeError, ValueError, KeyError) as exc:
            raise SettingError(f"rng: not a generator's state ({exc})") from None
        self.turn, self.task, self.carried, self.turns = turn, task, dict(carried), turns

    # -- reporting ----------------------------------------------------------------------------

    def _abandon(self, turn: TurnState, gone: bool, view: CabinView, out: Outbox) -> None:
        """End the turn under way: its goal changed or left the view (``gone``)."""
        result = TurnResult(
            outcome="abandoned",
            goal=turn.goal,
            detail=f"the goal {'left the view' if gone else 'changed'} while the turn ran",
            plan=turn.plan,
            revisions=turn.revisions,
            steps_run=turn.steps_run,
            recalled=turn.recalled,
            calls=turn.calls,
            started=turn.started,
            ended=view.time,
        )
        self._finish(result, out)

    def _report(self, turn: TurnState, runs: int, plans: int, out: Outbox) -> None:
        """An ``agent_step`` event for each step run since ``runs``, a ``replan`` event for
        each revision adopted since ``plans``."""
        for run in turn.steps_run[runs:]:
            out.emit(
                "agent_step",
                {
                    "cabin": self.name,
                    "task": self.task,
                    "step": run.step,
                    "status": run.status,
                    "revision": run.revision,
                    "iterations": run.iterations,
                    "reason": run.reason,
                    "detail": run.detail,
                },
                tags=("agent",),
            )
        failed = [r for r in turn.steps_run if r.status == "failed"]
        for plan in turn.revisions[max(plans, 1) :]:
            cause = failed[plan.revision - 1] if plan.revision - 1 < len(failed) else None
            out.emit(
                "replan",
                {
                    "reason": "agent_step_failed",
                    "detail": "" if cause is None else f"{cause.reason}: {cause.detail}",
                    "revision": plan.revision,
                    "task": self.task,
                    "step": None if cause is None else cause.step,
                },
                tags=("agent", "plan"),
            )

    def _finish(self, result: TurnResult, out: Outbox) -> None:
        """Report how the turn ended (``agent_turn``, and an ``alarm`` unless it answered),
        write the answer to ``answer_key``, and remember the goal as carried."""
        remembered = result.remembered
        out.emit(
            "agent_turn",
            {
                "cabin": self.name,
                "task": self.task,
                "goal": clip(result.goal, 300),
                "outcome": result.outcome,
                "answer": result.answer,
                "refusal": result.refusal,
                "detail": result.detail,
                "error": None if result.error is None else dict(result.error),
                "steps": result.step_states(),
                "revisions": len(result.revisions),
                "calls": result.calls,
                "remembered": None if remembered is None else remembered.content,
            },
            tags=("agent",),
        )
        if result.outcome != "answer":
            level = "warn" if result.outcome in ("refusal", "abandoned") else "alarm"
            out.emit(
                "alarm",
                {
                    "kind": "agent_turn_failed",
                    "level": level,
                    "cabin": self.name,
                    "task": self.task,
                    "reason": clip(f"{result.outcome}: {result.refusal or result.detail}", 300),
                    "cause": None if result.error is None else dict(result.error),
                },
                tags=("agent", "alarm"),
            )
        elif self.answer_key is not None and result.answer is not None:
            out.write(self.answer_key, result.answer)
        _log.info("agent_turn_ended", cabin=self.name, task=self.task, outcome=result.outcome)
        if self.task is not None and result.outcome != "abandoned":
            self.carried[self.task] = result.goal
        self.turns += 1
        self.turn = None
        self.task = None
