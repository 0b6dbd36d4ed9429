"""Unit tests of the ``PeopleWatch`` cabin on hand-built views: no world, no loop.

Run them beside the cabin with ``python -m pytest test_people_watch.py``.
"""

from pathlib import Path

from people_watch import PeopleWatch
from shapely.geometry import Point

from runtime import Feature, load_spec
from runtime.testing import Stale, make_view, run_step

SPEC = load_spec(Path(__file__).with_name("people_watch.toml"))


def test_a_stale_pose_is_said_not_guessed() -> None:
    out = run_step(PeopleWatch(SPEC), make_view(SPEC, board={"pose": Stale((0, 0, 0))}))
    assert out.reactions[0].reaction == "idle:cannot_see"
    assert not out.events


def test_a_person_who_comes_close_raises_one_alarm() -> None:
    cabin = PeopleWatch(SPEC)
    person = Feature(
        "obstacle:worker1", Point(1.0, 0.0), "obstacle", tags=frozenset({"moving", "person"})
    )
    view = make_view(SPEC, board={"pose": (0.0, 0.0, 0.0)}, features=[person])
    first = run_step(cabin, view)
    assert [(e.kind, e.data["who"]) for e in first.events] == [("alarm", "obstacle:worker1")]
    assert not run_step(cabin, view).events  # still near: no second alarm
