"""The step budget: requests per task across decisions, started again by an answer, a task
given up once spent (or after a permanent error) and forgotten once out of sight."""

from __future__ import annotations

import pytest

from runtime.agent.budget import StepBudget
from runtime.errors import SettingError


def test_requests_are_counted_per_task_until_an_answer() -> None:
    budget = StepBudget(5)
    budget.spend("goal:a", 3)
    budget.spend("goal:b")
    assert (budget.left("goal:a"), budget.left("goal:b"), budget.left(None)) == (2, 4, 5)
    budget.answered("goal:a")
    assert budget.left("goal:a") == 5


def test_a_task_given_up_has_nothing_left_until_it_is_out_of_sight() -> None:
    budget = StepBudget(2)
    budget.spend("goal:a", 2)
    budget.give_up("goal:a", "step_budget")
    budget.give_up("goal:b", "permanent_error")
    assert budget.left("goal:a") == budget.left("goal:b") == 0
    assert budget.reason("goal:b") == "permanent_error"
    budget.keep_only(["goal:b", "goal:c"])
    assert budget.reason("goal:a") is None and budget.left("goal:a") == 2
    assert budget.reason("goal:b") == "permanent_error"
    assert budget.spent == {} and list(budget.given_up) == ["goal:b"]


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_a_budget_is_a_whole_number_of_requests(limit: object) -> None:
    with pytest.raises(SettingError):
        StepBudget(limit)  # type: ignore[arg-type]
