"""The executor's step ledger: attempts, outcomes, steps done, on hand-made readings."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cabins.executor import REANNOUNCE_TICKS, RETRYABLE_REASONS, ExecutorSettings
from cabins.executor.ledger import StepLedger
from cabins.executor.plan import PlanReading, Step
from cabins.executor.retry import CONSERVATIVE, NORMAL, RetryPolicy
from cabins.executor.seen import Seen, ViewReader
from cabins.warehouse.values import ActionOutcome
from runtime import Outbox, load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "executor.toml")
BASE = ViewReader().read(make_view(SPEC, board={"pose": (0.0, 0.0, 0.0)}))


def step(action: str = "pick", *, task: str = "t1", step_id: str | None = None) -> Step:
    return Step(step_id or f"{action}-1", action, "dock", (5.0, 0.0), task, "running")


def seen(tick: int = 0, **changes: Any) -> Seen:
    return replace(BASE, tick=tick, **changes)


def answer(ident: int, ok: bool, reason: str = "failed", action: str = "pick") -> ActionOutcome:
    outcome = ActionOutcome.read(
        {"id": ident, "action": action, "task": "t1", "ok": ok, "reason": reason, "stamp": 1.0}
    )
    assert outcome is not None
    return outcome


def ledger_on(revision: int = 1, task: str = "t1", **settings: Any) -> StepLedger:
    ledger = StepLedger(ExecutorSettings(**settings))
    ledger.follow_plan(PlanReading(revision, task, None))
    return ledger


def events(out: Outbox, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in out.events if e.kind == kind]


def test_a_pick_is_commanded_once_and_answered_by_a_newer_outcome_only() -> None:
    ledger, out = ledger_on(), Outbox("executor")
    old = answer(7, True, "ok")
    ledger.poll_outcome(seen(0, outcome=old), out, NORMAL)  # before the command: not its answer
    ledger.command(1, out, step())
    assert [(c.name, dict(c.args)) for c in out.commands] == [("pick", {"task": "t1"})]
    assert ledger.waiting
    ledger.poll_outcome(seen(2, outcome=old), out, NORMAL)
    ledger.poll_outcome(seen(3, outcome=answer(8, True, "ok", action="drop")), out, NORMAL)
    assert out.events == [] and ledger.waiting
    ledger.poll_outcome(seen(4, outcome=answer(9, True, "ok")), out, NORMAL)
    assert events(out, "action_done") == [
        {"action": "pick", "task": "t1", "step": "pick-1", "attempt": 1}
    ]
    assert not ledger.waiting


def test_an_unanswered_pick_fails_with_no_outcome_after_the_timeout() -> None:
    ledger = ledger_on(outcome_timeout_ticks=3)
    ledger.command(0, Outbox("executor"), step())
    quiet = Outbox("executor")
    ledger.poll_outcome(seen(3), quiet, NORMAL)
    assert quiet.events == []
    out = Outbox("executor")
    ledger.poll_outcome(seen(4), out, NORMAL)
    assert events(out, "action_failed") == [
        {
            "action": "pick",
            "task": "t1",
            "step": "pick-1",
            "attempt": 1,
            "reason": "no_outcome",
            "final": False,
        }
    ]
    assert "no_outcome" in RETRYABLE_REASONS and not ledger.waiting


def test_spent_attempts_hold_until_a_newer_plan_revision_starts_afresh() -> None:
    ledger, out = ledger_on(), Outbox("executor")
    key = step().key
    for attempt in (1, 2):
        ledger.command(2 * attempt, out, step())
        failed = seen(2 * attempt + 1, outcome=answer(attempt, False))
        ledger.poll_outcome(failed, out, CONSERVATIVE)
    assert [e["final"] for e in events(out, "action_failed")] == [False, True]
    assert ledger.spent(key)
    ledger.follow_plan(PlanReading(2, "t1", None))
    assert not ledger.spent(key) and not ledger.backing_off(key, 100, CONSERVATIVE)


def test_a_failure_is_backed_off_for_the_policy_ticks_and_at_least_one() -> None:
    ledger, out = ledger_on(), Outbox("executor")
    ledger.command(0, out, step())
    ledger.poll_outcome(seen(5, outcome=answer(1, False)), out, NORMAL)
    key = step().key
    assert ledger.backing_off(key, 5, NORMAL) and not ledger.backing_off(key, 6, NORMAL)
    assert ledger.backing_off(key, 24, CONSERVATIVE)
    assert not ledger.backing_off(key, 25, CONSERVATIVE)


def test_a_done_step_is_reported_again_only_after_a_while_and_forgotten_by_a_newer_plan() -> None:
    ledger, out = ledger_on(), Outbox("executor")
    go = step("go_to")
    ledger.succeed(10, out, go.key, 1)
    assert ledger.reported_done(10 + REANNOUNCE_TICKS - 1, out, go, 1)
    assert len(events(out, "action_done")) == 1
    assert ledger.reported_done(10 + REANNOUNCE_TICKS, out, go, 1)
    assert len(events(out, "action_done")) == 2
    assert not ledger.reported_done(200, out, go, 2)  # a newer plan wants it again
    assert not ledger.reported_done(201, out, go, 1)


def test_a_new_task_drops_the_records_of_the_others() -> None:
    ledger, out = ledger_on(), Outbox("executor")
    go = step("go_to")
    ledger.succeed(0, out, go.key, 1)
    ledger.follow_plan(PlanReading(2, "t2", None))
    ledger.follow_plan(PlanReading(1, "t1", None))
    assert not ledger.reported_done(1, out, go, 1)


def test_charging_counts_one_attempt_per_charge_and_a_refused_charge_fails_it() -> None:
    ledger, out = ledger_on(), Outbox("executor")
    charge = step("charge", step_id="charge-1")
    for tick in range(3):
        ledger.command(tick, out, charge)
    assert [c.name for c in out.commands] == ["charge"] * 3 and not ledger.waiting
    refused = Outbox("executor")
    ledger.poll_outcome(
        seen(3, outcome=answer(1, False, "not_at_charger", action="charge")), refused, NORMAL
    )
    (event,) = events(refused, "action_failed")
    assert (event["step"], event["attempt"], event["final"]) == ("charge-1", 1, False)
    again = Outbox("executor")  # charging anew, the old refusal is not taken again
    ledger.command(4, again, charge)
    ledger.poll_outcome(
        seen(5, outcome=answer(1, False, "not_at_charger", action="charge")), again, NORMAL
    )
    assert again.events == []


def test_a_step_already_brought_about_is_reported_done_without_a_command() -> None:
    ledger, out = ledger_on(charge_until=0.9), Outbox("executor")
    assert ledger.finish_if_done(seen(cargo="t1"), out, step("pick"))
    assert not ledger.finish_if_done(seen(cargo=None), out, step("pick"))
    assert ledger.finish_if_done(seen(battery=0.95), out, step("charge", step_id="c"))
    assert not ledger.finish_if_done(seen(battery=0.5), out, step("charge", step_id="c"))
    ledger.command(0, out, step("drop"))  # a drop is done once the world said so
    assert not ledger.finish_if_done(seen(), out, step("drop"))
    ledger.poll_outcome(seen(1, outcome=answer(1, True, "ok", action="drop")), out, NORMAL)
    assert ledger.finish_if_done(seen(), out, step("drop"))
    assert out.commands[0].name == "drop" and len(out.commands) == 1


def test_a_ledger_pickles_and_goes_on_as_before() -> None:
    ledger, out = ledger_on(), Outbox("executor")
    ledger.command(0, out, step())
    copy = pickle.loads(pickle.dumps(ledger))
    answers = []
    for each in (ledger, copy):
        done = Outbox("executor")
        each.poll_outcome(seen(1, outcome=answer(1, True, "ok")), done, NORMAL)
        answers.append(events(done, "action_done"))
    assert answers[0] == answers[1] != []


@given(
    attempts=st.integers(1, 5),
    reasons=st.lists(st.sampled_from(sorted(RETRYABLE_REASONS - {"no_outcome"})), min_size=5),
)
def test_retryable_failures_are_final_exactly_when_the_policy_runs_out(
    attempts: int, reasons: list[str]
) -> None:
    policy = RetryPolicy("p", max_attempts=attempts, approach_speed_factor=1.0, backoff_ticks=0)
    ledger, out = ledger_on(), Outbox("executor")
    for n, reason in enumerate(reasons[:attempts], start=1):
        ledger.command(2 * n, out, step())
        ledger.poll_outcome(seen(2 * n + 1, outcome=answer(n, False, reason)), out, policy)
    finals = [(e["attempt"], e["final"]) for e in events(out, "action_failed")]
    assert finals == [(n, n == attempts) for n in range(1, attempts + 1)]
