"""Fault strings and files: the grammar, and clear errors for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.faults.model import (
    CrashFault,
    DropoutFault,
    FaultError,
    FaultPlan,
    MissingFault,
    StaleFault,
    load_faults,
    parse_fault,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "missing:executor:event:action_failed*@100-400",
            MissingFault(cabin="executor", pattern="event:action_failed*", start=100, end=400),
        ),
        ("missing:*:safety:*@5-", MissingFault(cabin="*", pattern="safety:*", start=5, end=None)),
        ("stale:pose@10-20", StaleFault(key="pose", start=10, end=20)),
        ("dropout@3-9", DropoutFault(sensor="all", start=3, end=9)),
        ("dropout:pose@3", DropoutFault(sensor="pose", start=3, end=4)),
        ("crash:planner@250", CrashFault(cabin="planner", start=250, end=251)),
        ("crash:planner@250-260", CrashFault(cabin="planner", start=250, end=260)),
    ],
)
def test_fault_strings(text: str, expected: object) -> None:
    fault = parse_fault(text)
    assert fault == expected
    assert parse_fault(fault.label) == fault


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("missing:executor:event:x", "expected KIND...@START-END"),
        ("bogus:x@1-2", "unknown kind 'bogus'"),
        ("missing:executor@1-2", "expected missing:CABIN:PATTERN"),
        ("stale:pose@9-3", "end (3) must be after start (9)"),
        ("stale:pose@a-b", "tick range 'a-b'"),
        ("dropout:lidar@1-2", "sensor"),
        ("missing:executor:goal:[x@1-2", "unclosed '['"),
    ],
)
def test_bad_fault_strings_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(FaultError, match=None) as info:
        parse_fault(text)
    assert message in str(info.value)
    assert text in str(info.value)


def test_fault_file(tmp_path: Path) -> None:
    path = tmp_path / "faults.toml"
    path.write_text(
        '[[fault]]\nkind = "missing"\ncabin = "planner"\npattern = "constraint:*"\n'
        'start = 10\nend = 50\n\n[[fault]]\nkind = "crash"\ncabin = "executor"\nstart = 7\n'
    )
    assert load_faults(path) == [
        MissingFault(cabin="planner", pattern="constraint:*", start=10, end=50),
        CrashFault(cabin="executor", start=7),
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[fault]]\nkind = "missing"\ncabin = "planner"\nstart = 1\n', "fault[0].pattern"),
        ('[[fault]]\nkind = "teleport"\nstart = 1\n', "fault[0]"),
        ('[[fault]]\nkind = "stale"\nkey = "pose"\nstart = 1\nsmell = 2\n', "smell"),
        ("faults = 3\n", "unknown key(s) faults"),
        ("[[fault]\n", "invalid TOML"),
    ],
)
def test_bad_fault_files_name_the_file_and_key(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "faults.toml"
    path.write_text(body)
    with pytest.raises(FaultError) as info:
        load_faults(path)
    assert str(path) in str(info.value) and message in str(info.value)


@given(start=st.integers(0, 50), length=st.integers(1, 50), tick=st.integers(0, 120))
def test_plan_acts_exactly_in_its_range(start: int, length: int, tick: int) -> None:
    plan = FaultPlan(
        [
            MissingFault(cabin="executor", pattern="pose", start=start, end=start + length),
            CrashFault(cabin="planner", start=start, end=start + length),
        ]
    )
    inside = start <= tick < start + length
    assert plan.suppress(tick, "executor") == (["pose"] if inside else [])
    assert plan.suppress(tick, "monitor") == []
    assert plan.crashes(tick, "planner") == inside
    assert plan.crashes(tick, "executor") is False


def test_plan_gates() -> None:
    plan = FaultPlan([DropoutFault(start=0, end=5), StaleFault(key="battery", start=3, end=9)])
    assert sorted(plan.frozen_keys(4)) == [
        "battery",
        "battery",
        "pose",
        "safety:scanner",
        "velocity",
    ]
    assert plan.frozen_keys(6) == ["battery"]
    assert plan.hidden_features(1) == ["obstacle:*"]
    assert plan.hidden_features(6) == []
