"""The task protocol: a cabin refuses or defers a delivery with a reason, and the planner
honours it (and says so once), on hand-built views."""

from __future__ import annotations

import math
from typing import Any

import pytest

from cabins.warehouse.tasks import TaskRequest, defer_task, deferred_key, refuse_task, refused_key
from runtime.cabin import Outbox
from runtime.errors import SettingError
from tests.cabins.planner.test_planner import Bench, events_of, goal, world


def refusal(task: str, reason: str = "the drop dock is closed") -> dict[str, Any]:
    return {"task": task, "reason": reason, "cabin": "triage"}


def two_goals(**changes: Any) -> dict[str, Any]:
    return world(goal__deliver__t2=goal("t2", "b", "a", released=1.0), **changes)


# -- the values --------------------------------------------------------------------------------


def test_a_request_is_read_with_its_cabin_and_refused_without_a_reason() -> None:
    read = TaskRequest.read
    assert read("task:refused:t1", refusal("t1")) == TaskRequest(
        "t1", "refused", "the drop dock is closed", "triage"
    )
    deferred = read("task:deferred:t1", {"reason": "later", "until": 12, "cabin": "triage"})
    assert deferred == TaskRequest("t1", "deferred", "later", "triage", 12.0)
    assert deferred.holds(11.9) and not deferred.holds(12.0)
    unnamed = read("task:deferred:t1", {"reason": "later"})
    assert unnamed is not None and unnamed.cabin == "?" and unnamed.holds(1e9)
    for key, value in (
        ("task:refused:t1", {"task": "t1"}),  # no reason
        ("task:refused:t1", {"task": "t1", "reason": "  "}),
        ("task:refused:t1", {"task": "t2", "reason": "r"}),  # not the key's task
        ("task:refused:", {"reason": "r"}),
        ("task:refused:t1", "busy"),
        ("task:deferred:t1", {"reason": "r", "until": math.nan}),
        ("task:deferred:t1", {"reason": "r", "until": True}),
        ("task:other:t1", {"reason": "r"}),
    ):
        assert read(key, value) is None, (key, value)


def test_refuse_and_defer_write_the_protocols_keys_and_need_a_reason() -> None:
    out = Outbox("triage")
    refuse_task(out, "t1", "no")
    defer_task(out, "t2", "later", until=30)
    assert [(w.key, dict(w.value)) for w in out.writes] == [
        (refused_key("t1"), {"task": "t1", "reason": "no", "cabin": "triage"}),
        (deferred_key("t2"), {"task": "t2", "reason": "later", "cabin": "triage", "until": 30.0}),
    ]
    with pytest.raises(SettingError, match="needs a reason"):
        refuse_task(out, "t1", "")
    with pytest.raises(SettingError, match="task id"):
        refuse_task(out, "t*", "no")
    with pytest.raises(SettingError, match="finite time"):
        defer_task(out, "t1", "later", until=math.inf)


# -- the planner -------------------------------------------------------------------------------


def test_a_refused_task_is_not_served_and_the_refusal_is_said_once() -> None:
    bench = Bench(board=two_goals(task__refused__t1=refusal("t1")))
    out = bench.step()
    assert bench.plan["task"] == "t2"  # t1 was released first, but it is refused
    assert events_of(out, "task_refused") == [
        {"task": "t1", "cabin": "triage", "reason": "the drop dock is closed"}
    ]
    assert events_of(bench.step(), "task_refused") == []


def test_the_active_task_is_set_aside_when_refused_unless_its_item_is_carried() -> None:
    bench = Bench(board=two_goals())
    bench.step()
    assert bench.plan["task"] == "t1"
    bench.board["task:refused:t1"] = refusal("t1")
    out = bench.step()
    assert bench.plan["task"] == "t2" and len(events_of(out, "task_refused")) == 1

    carried = Bench(board=two_goals())
    carried.step()
    carried.board["cargo"] = "t1"  # the robot holds t1's item: it can serve no other task
    carried.board["task:refused:t1"] = refusal("t1")
    carried.step()
    assert carried.plan["task"] == "t1"


def test_a_deferred_task_waits_for_its_time_then_resumes() -> None:
    bench = Bench(now=10.0)
    bench.board["task:deferred:t1"] = {
        "task": "t1",
        "reason": "aisle closed",
        "until": 10.2,
        "cabin": "triage",
    }
    out = bench.step()
    assert bench.board.get("plan") is None or bench.plan["task"] is None
    assert events_of(out, "task_deferred") == [
        {"task": "t1", "reason": "aisle closed", "until": 10.2, "cabin": "triage"}
    ]
    outs = [bench.step() for _ in range(5)]  # 0.25 s later
    assert bench.plan["task"] == "t1"
    assert sum(len(events_of(o, "task_resumed")) for o in outs) == 1


def test_a_withdrawn_refusal_gives_the_task_back() -> None:
    bench = Bench(board=world(task__refused__t1=refusal("t1")))
    bench.step()
    assert bench.board.get("plan") is None or bench.plan["task"] is None
    del bench.board["task:refused:t1"]
    out = bench.step()
    assert bench.plan["task"] == "t1" and events_of(out, "task_resumed") == [{"task": "t1"}]


def test_a_request_without_a_reason_is_ignored_and_the_task_served() -> None:
    bench = Bench(board=world(task__refused__t1={"task": "t1"}))
    out = bench.step()
    assert bench.plan["task"] == "t1" and events_of(out, "task_refused") == []
