"""The executor's missing-item reactions: one report per episode, holding, refusals."""

from __future__ import annotations

import pickle

import pytest

from cabins.executor import EPISODE_QUIET_TICKS, REACTIONS
from cabins.executor.missing import HOLD, MissingItems
from runtime import ContextSpec, Outbox, load_spec
from runtime.errors import SettingError
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "executor.toml")


def reported(items: MissingItems, missing: dict[str, str], tick: int) -> list[tuple[str, str, str]]:
    out = Outbox("executor")
    items.report(missing, tick, tick * 0.05, out)
    return [(r.pattern, r.reaction, r.detail["reason"]) for r in out.reactions]


def test_a_missing_item_is_reported_once_per_episode() -> None:
    items = MissingItems(SPEC)
    assert reported(items, {"pose": "stale"}, 0) == [("pose", HOLD, "stale")]
    assert reported(items, {"pose": "stale"}, 1) == []
    # back for EPISODE_QUIET_TICKS ticks only: the same episode
    for tick in range(2, 2 + EPISODE_QUIET_TICKS):
        assert reported(items, {}, tick) == []
    assert reported(items, {"pose": "stale"}, 2 + EPISODE_QUIET_TICKS) == []
    # back for more: a new one
    last = 2 + EPISODE_QUIET_TICKS
    for tick in range(last + 1, last + EPISODE_QUIET_TICKS + 2):
        assert reported(items, {}, tick) == []
    assert reported(items, {"pose": "stale"}, last + EPISODE_QUIET_TICKS + 2) == [
        ("pose", HOLD, "stale")
    ]


def test_a_new_reason_is_a_new_episode_and_absence_is_none() -> None:
    items = MissingItems(SPEC)
    assert reported(items, {"plan": "absent", "route": "absent"}, 0) == []
    assert reported(items, {"plan": "stale"}, 1) == [("plan", HOLD, "stale")]
    assert reported(items, {"plan": "fault"}, 2) == [("plan", HOLD, "fault")]


def test_reports_come_in_the_order_of_the_reactions() -> None:
    items = MissingItems(SPEC)
    hidden = {pattern: "fault" for pattern in reversed(list(REACTIONS))}
    assert [p for p, _, _ in reported(items, hidden, 0)] == list(REACTIONS)


def test_it_holds_only_for_an_item_whose_reaction_is_to_hold() -> None:
    items = MissingItems(SPEC)
    assert items.hold({"velocity": "evicted"})
    assert not items.hold({"velocity": "absent"})
    assert not items.hold({"constraint:*": "fault", "event:action_failed*": "fault"})
    assert items.slow_when_blind
    data = SPEC.model_dump()
    data["on_missing"] = {**data["on_missing"], "constraint:*": HOLD}
    careful = MissingItems(ContextSpec.model_validate(data))
    assert careful.hold({"constraint:*": "fault"}) and not careful.slow_when_blind


def test_a_spec_without_reactions_gets_the_first_of_each() -> None:
    chosen = MissingItems(ContextSpec(name="e")).reactions
    assert chosen == {pattern: allowed[0] for pattern, allowed in REACTIONS.items()}


@pytest.mark.parametrize(
    ("on_missing", "message"),
    [
        ({"battery": HOLD}, "has no reaction for 'battery'"),
        ({"pose": "slow:speed_limits_unknown"}, "for 'pose' it can do 'stop:hold'"),
    ],
)
def test_a_reaction_it_cannot_carry_out_is_refused(
    on_missing: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingError, match=message):
        MissingItems(ContextSpec(name="e", required=tuple(on_missing), on_missing=on_missing))


def test_open_episodes_survive_a_pickle() -> None:
    items = MissingItems(SPEC)
    reported(items, {"pose": "stale"}, 0)
    copy = pickle.loads(pickle.dumps(items))
    assert reported(copy, {"pose": "stale"}, 1) == []


def test_every_reaction_refused_is_named_in_one_error() -> None:
    on_missing = {"battery": HOLD, "pose": "slow:speed_limits_unknown", "plan": HOLD}
    with pytest.raises(SettingError) as caught:
        MissingItems(ContextSpec(name="e", required=tuple(on_missing), on_missing=on_missing))
    message = str(caught.value)
    assert message.startswith("spec 'e' declares reactions the executor does not have: ")
    assert "'battery' = 'stop:hold'" in message and "'pose' = 'slow:" in message
    assert "'plan' = " not in message  # a reaction it can carry out
