"""The planner's reactions to missing items: one per episode, an alarm for constraints."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from cabins.planner.missing import REACTIONS, MissingItems
from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from runtime.cabin import Outbox
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
BOARD = {
    "goal:deliver:t1": {"task": "t1"},
    "pose": (1.0, 1.0, 0.0),
    "constraint:speed:z": {"zone": "z"},
    "safety:scanner": {"discs": ()},
}


def seen(suppress: Iterable[str] = (), tick: int = 0) -> Seen:
    view = make_view(SPEC, board=BOARD, suppress=suppress, tick=tick, now=10.0 + tick)
    return ViewReader(PlannerSettings()).read(view)


def react(reactions: MissingItems, view: Seen, zones: int = 0) -> Outbox:
    out = Outbox("planner")
    reactions.react(view, zones, out)
    return out


def test_each_missing_item_is_reacted_to_once_per_episode_in_the_spec_order() -> None:
    reactions = MissingItems()
    out = react(reactions, seen(["safety:*", "goal:*"]))
    assert [(r.pattern, r.reaction, dict(r.detail)) for r in out.reactions] == [
        ("goal:*", "idle:no_goal", {"reason": "fault"}),
        ("safety:*", "hold:no_plan", {"reason": "fault"}),
    ]
    assert not react(reactions, seen(["safety:*", "goal:*"], 1)).reactions  # same episode
    react(reactions, seen(["safety:*"], 2))  # the goals came back: their episode ended
    again = react(reactions, seen(["safety:*", "goal:*"], 3))
    assert [r.pattern for r in again.reactions] == ["goal:*"]


def test_an_absent_item_is_no_episode() -> None:
    view = ViewReader(PlannerSettings()).read(make_view(SPEC, board={}))
    assert not react(MissingItems(), view).reactions


def test_missing_constraints_raise_an_alarm_that_counts_the_zones_known() -> None:
    out = react(MissingItems(), seen(["constraint:*"]), zones=2)
    assert [r.reaction for r in out.reactions] == ["alarm:constraint_check"]
    [alarm] = out.events
    assert (alarm.kind, set(alarm.tags)) == ("alarm", {"alarm"})
    assert alarm.data["kind"] == "constraint_check" and alarm.data["known_zones"] == 2


@given(st.lists(st.sets(st.sampled_from(sorted(REACTIONS))), max_size=12))
def test_a_reaction_comes_exactly_when_an_item_goes_missing(ticks: list[set[str]]) -> None:
    reactions = MissingItems()
    before: set[str] = set()
    for tick, missing in enumerate(ticks):
        out = react(reactions, seen(missing, tick))
        assert {r.pattern for r in out.reactions} == missing - before
        before = missing
