"""MissingItems: missing required readings reported once per episode (a new reason is a new
one), and the fail-safe stop while a safety item is missing."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from cabins.monitor.incidents import Incidents
from cabins.monitor.missing import MissingItems
from cabins.monitor.seen import Seen, ViewReader
from cabins.monitor.settings import MonitorSettings
from runtime import load_spec
from runtime.cabin import Outbox
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "monitor.toml")
BASE = ViewReader(SPEC.route_key).read(make_view(SPEC, board={"pose": (0.0, 0.0, 0.0)}))
REASONS = st.sampled_from([None, "absent", "stale", "fault", "evicted"])


def _seen(tick: int, missing: dict[str, str]) -> Seen:
    return replace(BASE, tick=tick, time=10.0 + 0.05 * tick, missing=missing)


def test_a_missing_reading_is_reported_when_it_starts_and_when_its_reason_changes() -> None:
    items = MissingItems(SPEC, Incidents(MonitorSettings(episode_gap=1.0)))
    reported = []
    for tick, reason in enumerate(["stale", "stale", "fault", None, "absent", "fault"]):
        out = Outbox("monitor")
        items.report_missing(_seen(tick, {} if reason is None else {"pose": reason}), out)
        assert len(out.events) == len(out.reactions)
        reported += [(tick, e.data["kind"], e.data["reason"]) for e in out.events]
        assert all(r.reaction == "alarm:missing_reading" for r in out.reactions)
    assert reported == [
        (0, "stale_reading", "stale"),
        (2, "missing_reading", "fault"),
        (5, "missing_reading", "fault"),
    ]


def test_the_safety_patterns_are_the_fail_safes_not_missing_readings() -> None:
    items = MissingItems(SPEC, Incidents(MonitorSettings(episode_gap=1.0)))
    out = Outbox("monitor")
    items.report_missing(_seen(0, {"safety:*": "fault", "safety:scanner": "stale"}), out)
    assert out.events == [] and out.reactions == []
    stops: list[str] = []
    items.fail_safe(_seen(0, {"safety:*": "fault", "safety:scanner": "stale"}), out, stops)
    assert stops == ["fail_safe"]
    assert [(r.pattern, r.reaction, dict(r.detail)) for r in out.reactions] == [
        ("safety:*", "stop:fail_safe", {"reason": "fault"})
    ]


@given(st.lists(st.tuples(REASONS, REASONS), max_size=30))
def test_the_fail_safe_reports_each_change_of_what_is_missing_and_stops_while_it_is(
    ticks: list[tuple[str | None, str | None]],
) -> None:
    """Against the rule as the monitor wrote it before: report when the first safety
    pattern missing (for a reason other than "absent"), with its reason, differs from the
    last tick's."""
    incidents = Incidents(MonitorSettings(episode_gap=1.0))
    items = MissingItems(SPEC, incidents)
    before: tuple[str, str] | None = None
    for tick, (zones, scanner) in enumerate(ticks):
        missing = {
            p: r for p, r in (("safety:*", zones), ("safety:scanner", scanner)) if r is not None
        }
        found = next(
            ((p, r) for p, r in missing.items() if r != "absent"),
            None,
        )
        out, stops = Outbox("monitor"), list[str]()
        items.fail_safe(_seen(tick, missing), out, stops)
        assert stops == ([] if found is None else ["fail_safe"])
        reported = [(e.data["pattern"], e.data["missing"]) for e in out.events]
        assert reported == ([found] if found is not None and found != before else [])
        assert [(r.pattern, r.detail["reason"]) for r in out.reactions] == reported
        assert incidents.estop or found is None
        before = found
