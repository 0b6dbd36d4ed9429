"""The agent turn: one goal carried from recall to remember, the design's plan-and-execute
loop (the source design's ``runAgentTurn``).

An ``Agent`` runs a turn in this order:

1. **Recall.** The ``recall`` memories of its scope most like the goal
   (``LongTermMemory.recall``) go into every system prompt of the turn.
2. **Plan.** The model writes a plan as strict JSON, 3 to 8 steps, each verifiable
   (``runtime.agent.written_plan``); a reply that is not one is shown back to it with
   every problem named, up to ``plan_attempts`` replies. The plan is the working state's
   (``WorkingState``).
3. **Steps.** Each step that can run (``Plan.can_run``: pending, every dependency done) runs
   a ReAct loop: the model sees the goal, the recalled memories, the plan with its step
   states and the scratchpad (rebuilt before every request), and the short-term trace; it
   calls tools (the scratchpad's three and the agent's own) until it answers the step
   without tool calls. The answer is the step's result, in the working state and the
   trace.
4. **Re-plan.** A step fails when a tool fails (its result says ``"success": false``, or it
   raised), when the same action (tool and arguments) comes twice in a row, or after
   ``step_iterations`` requests without a result. Then the model revises the plan
   (``adjust_plan(plan, feedback)``: the model writes the revision, shown the plan with its
   states and results and the feedback; ``read_revision`` checks it, and
   ``Plan.adjust_plan`` keeps every done step as it was), up to ``replans`` times.
5. **Answer and remember.** When every step is done the model answers the goal from the
   trace, and the turn's summary (goal, answer, each step's result, clipped to
   ``memory_chars``) is remembered in the agent's scope.

Every request goes through the ``ChatClient`` (``cabins.llm.OpenAIChatClient`` for the
``openai`` SDK, with its deadline and bounded replies): a refusal ends the turn
``refusal`` with the model's text; a failed request is asked again after the ``retry``
policy's wait (``runtime.backoff.Backoff``: exponential with seeded jitter, at least a 429's
or 503's ``Retry-After``), and a permanent one (400, 401, 403, 404, 422) ends the turn
``permanent_error``; at most ``step_budget`` requests are made in a turn; what is sent is
clipped with a visible marker (``runtime.agent.clip``). Every way a turn ends has its own
outcome (``runtime.agent.turn_state.TurnOutcome``) in the ``TurnResult``.

A turn is a ``TurnState`` of plain values, so it can stop and go on: ``advance`` runs it
until it ends or must wait before asking again (``retry_at``, on the caller's clock), and
never sleeps. ``run`` is the whole turn for agent users: it waits on the agent's ``clock``
(``runtime.clock.Clock``; a ``SimClock`` in tests, so nothing sleeps). In a tick loop
``cabins.agent.AgentCabin`` advances a turn at each of its decisions, off the tick thread.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np
import structlog

from runtime.agent.chat import (
    ChatClient,
    ChatReplyLike,
    canonical_arguments,
    classify_error,
    refusal_of,
    reply_parts,
)
from runtime.agent.clip import clip, clip_arguments
from runtime.agent.memory import Message, ShortTermMemory, Summarizer, ToolCall, WorkingState
from runtime.agent.plan import Plan, PlanError, PlanStep
from runtime.agent.tools import Tool, ToolDispatcher, ToolResult, scratchpad_tools
from runtime.agent.turn_state import (
    Remembrance,
    StepRun,
    TurnOutcome,
    TurnResult,
    TurnSettings,
    TurnState,
)
from runtime.agent.written_plan import (
    PLAN_SHAPE,
    PlanRules,
    plan_json,
    read_plan,
    read_revision,
    verify_of,
)
from runtime.backoff import Backoff
from runtime.clock import Clock, WallClock
from runtime.errors import SettingError, TickworkError
from runtime.freeze import FrozenDict
from runtime.longterm import LongTermStore
from runtime.scratchpad import Scratchpad, to_json_text

__all__ = [
    "ANSWER_PROMPT",
    "DEFAULT_INSTRUCTIONS",
    "LENGTH_NUDGE",
    "Agent",
    "Recall",
    "turn_summary",
]

_log = structlog.get_logger("tickwork.agent")

DEFAULT_INSTRUCTIONS = (
    "You are an agent that carries out a goal step by step with tools. Work on the current "
    "step only. Save intermediate results with save_to_scratchpad so that later steps can "
    "read them. When the current step is done, reply with its result in one short message, "
    "without tool calls."
)
PLANNER_PROMPT = (
    "You are the planner of an agent. Break the goal into {low} to {high} steps. Each step "
    'must be verifiable: it names a concrete result ("the total revenue is saved as '
    'total_revenue"), never "do the whole task"; one tool call or one short computation '
    "each. A step lists in depends_on the ids of the steps whose results it needs. Reply "
    "with the plan as JSON only, no prose, in this shape:\n{shape}"
)
REPLANNER_PROMPT = (
    "You are the planner of an agent. Revise the plan after the feedback below. Keep every "
    "done step exactly as it is (the same id, description, tool, verify, depends_on and "
    'status "done"); change or drop only pending and failed steps; add new steps as '
    "pending; leave no step failed. Reply with the whole plan as JSON only, no prose, each "
    'step with its status, in this shape:\n{shape} (with "status" in each step)'
)
ANSWER_PROMPT = (
    "Every step of the plan is done. Answer the goal now from the results above, in a few "
    "sentences, without tool calls."
)
LENGTH_NUDGE = (
    "Your last reply was cut off at the length limit (finish_reason=length) and was not "
    "used. Reply again, shorter."
)
NO_CALLS_NUDGE = "Answer in text only, without tool calls."


class _Remembered(Protocol):
    @property
    def content(self) -> str: ...


class Recall(Protocol):
    """What a turn recalls from (``runtime.agent.long_term.LongTermMemory`` is one)."""

    def recall(
        self, query: str, *, scope: Mapping[str, str], k: int = 5
    ) -> Sequence[_Remembered]: ...


class Agent:
    """Runs agent turns (see the module docstring) with ``client`` and ``tools``.

    ``memory`` is recalled from and remembered in, within ``scope`` (a mapping of labels,
    e.g. ``{"user": "u1"}``); without one nothing is recalled or remembered. ``settings``
    bound the turn; ``retry`` says how long to wait after a failed request, with jitter drawn
    from ``rng`` (by default one seeded from the scope, so a turn waits the same every time);
    ``clock`` is what ``run`` waits on (default: a ``WallClock``).
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        tools: Sequence[Tool[Any]] = (),
        memory: Recall | None = None,
        scope: Mapping[str, str] | None = None,
        settings: TurnSettings | None = None,
        retry: Backoff | None = None,
        rng: np.random.Generator | None = None,
        clock: Clock | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        summarize: Summarizer | None = None,
    ) -> None:
        if not callable(getattr(client, "complete", None)):
            raise TypeError(f"client needs complete(messages, tools): {type(client).__name__}")
        if settings is not None and not isinstance(settings, TurnSettings):
            raise TypeError(f"settings must be TurnSettings, got {type(settings).__name__}")
        if retry is not None and not isinstance(retry, Backoff):
            raise TypeError(f"retry must be a Backoff, got {type(retry).__name__}")
        if memory is not None and not callable(getattr(memory, "recall", None)):
            raise TypeError(f"memory needs recall(query, scope=, k=): {type(memory).__name__}")
        self.scope: FrozenDict[str, str] = _checked_scope(scope)
        self.client = client
        self.tools = tuple(tools)
        ToolDispatcher([*scratchpad_tools(Scratchpad()), *self.tools])  # names clash now, not later
        self.memory = memory
        self.settings = settings if settings is not None else TurnSettings()
        self.retry = retry if retry is not None else Backoff()
        seed = zlib.crc32(to_json_text(dict(self.scope)).encode())
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.clock: Clock = clock if clock is not None else WallClock()
        self.instructions = instructions
        self.summarize = summarize

    # -- the whole turn -------------------------------------------------------------------

    def run(self, goal: str) -> TurnResult:
        """One whole turn on ``goal``, waiting on the agent's clock between failed requests."""
        state = self.start(goal)
        while state.result is None:
            self.advance(state)
            if state.result is None and state.retry_at is not None:
                self.clock.sleep_until(state.retry_at)
        return state.result

    def start(self, goal: str, *, now: float | None = None) -> TurnState:
        """A new turn on ``goal``, with what long-term memory recalls for it."""
        if not isinstance(goal, str) or not goal.strip():
            raise SettingError(f"a turn needs a goal (non-empty text), got {goal!r}")
        when = self.clock.now() if now is None else float(now)
        recalled: tuple[str, ...] = ()
        if self.memory is not None and self.settings.recall:
            found = self.memory.recall(goal, scope=self.scope, k=self.settings.recall)
            recalled = tuple(clip(r.content, self.settings.message_chars) for r in found)
        trace = ShortTermMemory(max_messages=self.settings.history, summarize=self.summarize)
        trace.set_goal(goal)
        return TurnState(
            goal=goal,
            scope=self.scope,
            started=when,
            recalled=recalled,
            working=WorkingState(goal),
            trace=trace.get_state(),
        )

    def advance(
        self,
        state: TurnState,
        *,
        now: float | None = None,
        tools: Sequence[Tool[Any]] | None = None,
        store: LongTermStore | None = None,
        stamp: float | None = None,
    ) -> TurnState:
        """Run ``state`` on until it ends (``state.result``) or must wait (``retry_at`` after
        ``now``, the caller's time, default the agent's clock). ``tools`` replace the agent's
        own for this call (a cabin's, bound to its outbox); ``store`` is where the summary is
        remembered (default: the agent's memory), with ``stamp``."""
        when = self.clock.now() if now is None else float(now)
        if state.result is not None:
            return state
        if state.retry_at is not None:
            if when < state.retry_at:
                return state
            state.retry_at = None  # the wait is over: ask again
        run = _Run(self, state, when, self.tools if tools is None else tuple(tools))
        try:
            run.go(store if store is not None else _store_of(self.memory), stamp)
        finally:
            run.save()
        return state


def _checked_scope(scope: Mapping[str, str] | None) -> FrozenDict[str, str]:
    if scope is None:
        return FrozenDict({"agent": "default"})
    if (
        not isinstance(scope, Mapping)
        or not scope
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in scope.items())
    ):
        raise SettingError(f"a scope must map strings to strings, got {scope!r}")
    return FrozenDict(dict(scope))


def _store_of(memory: Recall | None) -> LongTermStore | None:
    remember = getattr(memory, "remember", None)
    return memory if callable(remember) else None  # type: ignore[return-value]


class _Run:
    """One call of ``advance``: the turn's state with its live parts (trace, scratchpad,
    tools) rebuilt, run on, and saved back into the state (``save``)."""

    def __init__(
        self, agent: Agent, state: TurnState, now: float, tools: tuple[Tool[Any], ...]
    ) -> None:
        self.agent = agent
        self.settings = agent.settings
        self.state = state
        self.now = now
        self.trace = ShortTermMemory(max_messages=self.settings.history, summarize=agent.summarize)
        self.trace.set_state(state.trace)
        self.pad = Scratchpad.from_notes(state.notes)
        self.dispatcher = ToolDispatcher([*scratchpad_tools(self.pad), *tools])
        self.rules = PlanRules(
            min_steps=self.settings.min_steps,
            max_steps=self.settings.max_steps,
            tools=frozenset(self.dispatcher.names),
        )

    def save(self) -> None:
        self.state.trace = self.trace.get_state()
        self.state.notes = self.pad.notes()

    # -- the loop ---------------------------------------------------------------------------

    def go(self, store: LongTermStore | None, stamp: float | None) -> None:
        state = self.state
        while state.result is None and state.retry_at is None:
            if state.phase in ("plan", "replan"):
                self.write_plan()
            elif state.phase == "steps":
                self.run_step()
            else:
                self.answer(store, stamp)

    def ask(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ChatReplyLike | None:
        """One request; None when it failed (then the state says whether to wait or end)
        or when the reply ends the turn (a refusal, a filtered reply)."""
        state, settings = self.state, self.settings
        if state.calls >= settings.step_budget:
            self.end("budget_spent", detail=f"{state.calls} requests (step_budget)")
            return None
        state.calls += 1
        try:
            reply = self.agent.client.complete(messages, tools)
        except Exception as exc:  # a failed request is an outcome or a wait, never a crash
            self.failed(exc)
            return None
        state.failures, state.retry_at, state.error = 0, None, None
        refusal = refusal_of(reply)
        if refusal is not None:
            self.end("refusal", refusal=refusal, detail="the model declined")
        elif getattr(reply, "finish_reason", None) == "content_filter":
            self.end("content_filter", detail="the reply was withheld by a content filter")
        else:
            return reply
        return None

    def failed(self, exc: Exception) -> None:
        state = self.state
        error = classify_error(exc)
        state.failures += 1
        wait = self.agent.retry.wait(
            state.failures, self.agent.rng, status=error["status"], retry_after=error["retry_after"]
        )
        error["permanent"] = wait is None
        error["retry_in"] = wait
        state.error = FrozenDict(error)
        _log.warning("agent_call_failed", goal=clip(state.goal, 80), **error)
        if wait is None:
            self.end("permanent_error", detail=_error_text(error))
        elif state.failures >= self.settings.failures:
            self.end("error", detail=f"{state.failures} failed requests in a row")
        else:
            state.retry_at = self.now + wait

    # -- writing the plan -----------------------------------------------------------------

    def write_plan(self) -> None:
        state = self.state
        if not state.asking:
            state.asking = self.plan_request()
        reply = self.ask([m.to_openai() for m in state.asking], [])
        if reply is None:
            return
        content, calls, finish = reply_parts(reply, 0, state.calls)
        try:
            if finish == "length":
                raise PlanError(LENGTH_NUDGE)
            if calls:
                raise PlanError("answer with the plan's JSON as text, without tool calls")
            plan = self.read(content)
        except PlanError as exc:
            state.attempts += 1
            if state.attempts >= self.settings.plan_attempts:
                what = "revision" if state.phase == "replan" else "plan"
                self.end(
                    "malformed_plan",
                    detail=f"no acceptable {what} in {state.attempts} replies: {exc}",
                )
                return
            said = Message("assistant", clip(content or "", self.settings.message_chars))
            retry = Message(
                "user", f"The plan was not accepted: {exc}. Reply with the whole plan again."
            )
            state.asking = (*state.asking, said, retry)
            return
        self.adopt(plan)

    def read(self, content: str | None) -> Plan:
        state = self.state
        if state.phase == "plan":
            return read_plan(content, self.rules)
        assert state.plan is not None
        return read_revision(state.plan, content, self.rules)

    def adopt(self, plan: Plan) -> None:
        state = self.state
        if state.phase == "replan":
            state.replans += 1
            self.trace.add_user(
                f"The plan was revised (revision {plan.revision}) after: {state.feedback}"
            )
        state.working.set_plan(plan)
        state.revisions = (*state.revisions, plan)
        state.asking, state.attempts, state.feedback = (), 0, ""
        state.phase = "steps"
        _log.info("agent_plan", revision=plan.revision, steps=len(plan))

    def plan_request(self) -> tuple[Message, ...]:
        state, settings = self.state, self.settings
        shape = PLANNER_PROMPT if state.phase == "plan" else REPLANNER_PROMPT
        system = "\n\n".join(
            (
                shape.format(low=settings.min_steps, high=settings.max_steps, shape=PLAN_SHAPE),
                self.tools_text(),
                self.memories_text(),
            )
        )
        if state.phase == "plan":
            return (Message("system", system), Message("user", f"Goal: {state.goal}"))
        assert state.plan is not None
        shown = plan_json(state.plan, self.results(settings.message_chars))
        return (
            Message("system", system),
            Message("user", f"Goal: {state.goal}\nPlan: {shown}\nFeedback: {state.feedback}"),
        )

    # -- running a step -----------------------------------------------------------------

    def run_step(self) -> None:
        state = self.state
        plan = state.plan
        assert plan is not None
        if state.working.current_step is None:
            if plan.is_done:
                state.phase = "answer"
                self.trace.add_user(ANSWER_PROMPT)
                return
            step = plan.next_runnable()
            if step is None:  # cannot happen after a checked plan; re-plan rather than hang
                self.replan_or_end(None, "no step can run: each waits for one not done")
                return
            self.begin(step)
        step = plan.step(state.working.current_step or "")
        self.trace.set_system(self.system_prompt())
        reply = self.ask(self.trace.to_openai(), self.dispatcher.schemas())
        if reply is None:
            return
        state.iterations += 1
        content, calls, finish = reply_parts(reply, 0, state.calls)
        chars = self.settings.message_chars
        if finish == "length":
            self.trace.add_user(LENGTH_NUDGE)
        else:
            sent = [replace(c, arguments=clip_arguments(c.arguments, chars)) for c in calls]
            self.trace.add_assistant(None if content is None else clip(content, chars), sent)
            if not calls:
                self.finish(step, content or "")
                return
            failure = self.call_tools(calls)
            if failure is not None:
                self.fail(step, *failure)
                return
        if state.iterations >= self.settings.step_iterations:
            self.fail(
                step,
                "too_many_iterations",
                f"no result after {state.iterations} requests (step_iterations)",
            )

    def begin(self, step: PlanStep) -> None:
        state = self.state
        assert state.plan is not None
        state.working.set_plan(state.plan.with_status(step.id, "running"))
        state.working.start_step(step.id)
        state.iterations, state.last_action = 0, None
        tool = f"\nSuggested tool: {step.action}" if step.action else ""
        self.trace.add_user(
            f"Current step {step.id}: {step.description}\nDone when: {verify_of(step)}{tool}"
        )

    def call_tools(self, calls: Iterable[ToolCall]) -> tuple[str, str] | None:
        """Run the calls, each result to the trace; the first failure (reason, detail)."""
        state = self.state
        failure: tuple[str, str] | None = None
        for call in calls:
            result = self.dispatcher.call(call.name, call.arguments)
            text = result.content
            self.trace.add_tool_result(
                call.id, clip(text, self.settings.message_chars), name=call.name
            )
            action = f"{call.name}({canonical_arguments(call.arguments)})"
            if failure is None:
                if action == state.last_action:
                    failure = ("same_action_twice", f"{clip(action, 200)} twice in a row")
                elif _tool_failed(result):
                    failure = ("tool_failed", f"{call.name}: {clip(text, 300)}")
            state.last_action = action
        return failure

    def finish(self, step: PlanStep, result: str) -> None:
        state = self.state
        assert state.plan is not None
        state.working.set_plan(state.plan.with_status(step.id, "done"))
        state.working.set_step_result(step.id, result)
        state.working.current_step = None
        state.steps_run = (
            *state.steps_run,
            StepRun(step.id, state.plan.revision, "done", state.iterations),
        )

    def fail(self, step: PlanStep, reason: str, detail: str) -> None:
        state = self.state
        assert state.plan is not None
        state.working.set_plan(state.plan.with_status(step.id, "failed"))
        state.working.current_step = None
        run = StepRun(step.id, state.plan.revision, "failed", state.iterations, reason, detail)
        state.steps_run = (*state.steps_run, run)
        _log.info("agent_step_failed", step=step.id, reason=reason, detail=detail)
        self.trace.add_user(f"Step {step.id} failed ({reason}): {detail}")
        self.replan_or_end(step.id, f"step {step.id} failed ({reason}): {detail}")

    def replan_or_end(self, step: str | None, feedback: str) -> None:
        state = self.state
        if state.replans >= self.settings.replans:
            self.end(
                "replan_limit", detail=f"{feedback}, after {state.replans} revisions (replans)"
            )
            return
        state.phase, state.feedback = "replan", feedback
        state.asking, state.attempts = (), 0

    # -- the answer -----------------------------------------------------------------------

    def answer(self, store: LongTermStore | None, stamp: float | None) -> None:
        self.trace.set_system(self.system_prompt())
        reply = self.ask(self.trace.to_openai(), [])
        if reply is None:
            return
        content, _, finish = reply_parts(reply, 0, self.state.calls)
        if finish == "length":
            self.trace.add_user(LENGTH_NUDGE)
            return
        if not (content or "").strip():
            self.trace.add_user(NO_CALLS_NUDGE)
            return
        answer = content or ""
        self.trace.add_assistant(clip(answer, self.settings.message_chars))
        remembered = self.remember(answer, store, stamp)
        self.end("answer", answer=answer, remembered=remembered, detail="every step is done")

    def remember(
        self, answer: str, store: LongTermStore | None, stamp: float | None
    ) -> Remembrance | None:
        state = self.state
        if store is None:
            return None
        assert state.plan is not None
        summary = turn_summary(
            state.goal, answer, state.plan, state.working.step_results, self.settings.memory_chars
        )
        metadata = {"source": "agent"}
        try:
            outcome = store.remember(summary, scope=state.scope, metadata=metadata, stamp=stamp)
        except TickworkError as exc:  # the turn answered; what memory said is reported
            _log.warning("agent_remember_failed", error=str(exc))
            return Remembrance(summary, False, f"error: {type(exc).__name__}: {exc}")
        stored = getattr(outcome, "stored", None)
        reason = str(getattr(outcome, "reason", ""))
        return Remembrance(summary, None if reason == "queued" else bool(stored), reason)

    # -- prompts --------------------------------------------------------------------------

    def system_prompt(self) -> str:
        state = self.state
        assert state.plan is not None
        lines = [f"Plan (revision {state.plan.revision}):"]
        results = self.results(200)
        for step in state.plan.steps:
            after = f" (after {', '.join(step.depends_on)})" if step.depends_on else ""
            done = f" -> {results[step.id]}" if step.id in results else ""
            lines.append(f"- {step.id} [{step.status}] {step.description}{after}{done}")
        return "\n\n".join(
            (
                self.agent.instructions,
                f"Goal: {state.goal}",
                self.memories_text(),
                "\n".join(lines),
                self.pad.to_prompt_text(value_chars=self.settings.note_chars),
            )
        )

    def memories_text(self) -> str:
        recalled = self.state.recalled
        if not recalled:
            return "Relevant memories: none"
        return "Relevant memories (from earlier sessions):\n" + "\n".join(
            f"- {m}" for m in recalled
        )

    def tools_text(self) -> str:
        lines = ["Tools:"]
        for schema in self.dispatcher.schemas():
            function = schema["function"]
            lines.append(f"- {function['name']}: {function['description']}")
        return "\n".join(lines)

    def results(self, chars: int) -> dict[str, str]:
        return {k: clip(str(v), chars) for k, v in self.state.working.step_results.items()}

    # -- the end --------------------------------------------------------------------------

    def end(
        self,
        outcome: TurnOutcome,
        *,
        answer: str | None = None,
        refusal: str | None = None,
        detail: str = "",
        remembered: Remembrance | None = None,
    ) -> None:
        state = self.state
        state.retry_at = None
        results = {k: str(v) for k, v in state.working.step_results.items()}
        state.result = TurnResult(
            outcome=outcome,
            goal=state.goal,
            answer=answer,
            refusal=refusal,
            error=state.error,
            detail=detail,
            plan=state.plan,
            revisions=state.revisions,
            results=FrozenDict(results),
            steps_run=state.steps_run,
            recalled=state.recalled,
            remembered=remembered,
            calls=state.calls,
            started=state.started,
            ended=self.now,
        )
        log = _log.info if outcome == "answer" else _log.warning
        log("agent_turn", outcome=outcome, calls=state.calls, detail=detail)


def turn_summary(goal: str, answer: str, plan: Plan, results: Mapping[str, Any], limit: int) -> str:
    """What a turn remembers: the goal, the answer and each done step's result, clipped to
    ``limit`` characters (the marker included)."""
    lines = [f"Goal: {' '.join(goal.split())}", f"Answer: {' '.join(answer.split())}"]
    for step in plan.steps:
        if step.status == "done" and step.id in results:
            said = " ".join(str(results[step.id]).split())
            lines.append(f"- {step.description}: {clip(said, 300)}")
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    return clip(text, max(16, limit - 64))


def _tool_failed(result: ToolResult) -> bool:
    """A tool that ran and failed: it raised, or its result says ``"success": false``."""
    if result.raised:
        return True
    return result.ok and isinstance(result.data, Mapping) and result.data.get("success") is False


def _error_text(error: Mapping[str, Any]) -> str:
    status = error.get("status")
    head = f"HTTP {status}" if status is not None else str(error.get("kind"))
    if error.get("code"):
        head += f" ({error['code']})"
    return f"{head}: {error.get('message', '')}"
