"""Reports in a real browser: Debian's headless Chromium, driven by the playwright package.

The page loads from a file:// URL with no console error and no request but its own;
the map holds one trajectory and every shelf; choosing another tick changes what is
shown; nothing a run wrote runs as script. Screenshots go to ``tests/artifacts/``.
Skipped, with the reason, where playwright or ``/usr/bin/chromium`` is missing
(``.ci/run`` installs Debian's chromium; never ``playwright install``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runtime import ContextSpec, configure_logging
from runtime.cabin import Outbox
from runtime.pack import CabinView
from sim.faults.model import parse_fault
from sim.report.campaign import write_campaign_report
from sim.report.pages import write_run_report
from sim.run import campaign as cp
from sim.run.harness import ExtraCabin, Simulation
from sim.world.scenario import load_scenario
from tests.support.paths import ARTIFACTS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path(os.environ.get("TICKWORK_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

FAULTS = ("missing:executor:event:action_failed*@50-150", "crash:planner@120")

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the browser tests need the playwright package (pip install playwright)",
)
if not CHROMIUM.is_file():
    pytest.skip(
        f"the browser tests need Chromium at {CHROMIUM} (Debian: apt-get install chromium)",
        allow_module_level=True,
    )


@dataclass
class Loaded:
    """A page opened from disk, with everything the browser said while loading it."""

    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        except sync_api.Error as exc:
            pytest.skip(
                f"Chromium at {CHROMIUM} does not start under playwright: "
                f"{str(exc).splitlines()[0]}"
            )
        yield chromium
        chromium.close()


@contextmanager
def open_page(browser: Any, path: Path) -> Iterator[Loaded]:
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    loaded = Loaded(page, path.resolve().as_uri())
    page.on("request", lambda r: loaded.requests.append(r.url))
    page.on("requestfailed", lambda r: loaded.failed.append(r.url))
    page.on("console", lambda m: loaded.console.append((m.type, m.text)))
    page.on("pageerror", lambda e: loaded.errors.append(str(e)))

    def dialog(d: Any) -> None:
        loaded.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.goto(loaded.url, wait_until="load")
    try:
        yield loaded
    finally:
        context.close()


def _record(path: Path, *, ticks: int = 400, **kwargs: Any) -> None:
    configure_logging(level="critical")
    sim = Simulation("warehouse", seed=0, record=path, **kwargs)
    try:
        sim.run(ticks, until_done=False)
    finally:
        sim.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("browser")
    _record(folder / "run.mcap", faults=[parse_fault(f) for f in FAULTS])
    out = folder / "run.html"
    write_run_report(folder / "run.mcap", out)
    return out


@pytest.fixture
def loaded(browser: Any, report: Path) -> Iterator[Loaded]:
    with open_page(browser, report) as page:
        yield page


def test_the_page_loads_with_no_error_and_no_request(loaded: Loaded) -> None:
    assert loaded.requests == [loaded.url]
    assert loaded.failed == []
    assert [m for m in loaded.console if m[0] in ("error", "warning")] == []
    assert loaded.errors == []
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "run-report.png"
    loaded.page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    loaded.page.locator("#map-section").screenshot(path=str(ARTIFACTS / "run-report-map.png"))


def test_the_map_shows_one_trajectory_and_every_shelf(loaded: Loaded) -> None:
    page = loaded.page
    assert page.locator("svg#map g.trajectory").count() == 1
    assert page.locator("svg#map g.trajectory polyline.traj-band").count() >= 2
    assert page.locator("svg#map .shelf").count() == len(load_scenario("warehouse").shelves)
    assert page.locator("svg#map g.marker.m-fault").count() == 2
    box = page.locator("svg#map").bounding_box()
    assert box is not None and box["width"] > 400  # drawn, not collapsed


def test_choosing_another_tick_changes_what_is_shown(loaded: Loaded) -> None:
    page = loaded.page
    first = page.locator("#tick-title").inner_text()
    assert first.startswith("tick 50 ")  # the first tick worth a look: a fault starts
    robot = page.locator("#robot-now").get_attribute("transform")
    cursor = page.locator("#chart-working-set .cursor").get_attribute("x1")
    assert "event:action_failed*" in page.locator("#tick-view").inner_text()

    page.select_option("#tick-select", "120")
    assert page.locator("#tick-title").inner_text().startswith("tick 120 ")
    assert "failed: InjectedCrash" in page.locator("#tick-view").inner_text()
    assert page.locator("#robot-now").get_attribute("transform") != robot
    assert page.locator("#chart-working-set .cursor").get_attribute("x1") != cursor

    page.click("#tick-next")
    assert not page.locator("#tick-title").inner_text().startswith("tick 120 ")
    page.locator("svg#map g.marker.m-fault").first.dispatch_event("click")
    assert page.locator("#tick-select").input_value() == "50"
    page.fill("#tick-filter", "pose")
    visible = [r for r in page.locator("#tick-view tbody tr").all() if r.is_visible()]
    assert visible and all("pose" in r.locator("td").first.inner_text() for r in visible)
    assert loaded.errors == []


class Evil:
    """Writes and emits markup and script, to check that none of it runs."""

    name = "evil"

    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec

    def step(self, view: CabinView, out: Outbox) -> None:
        out.emit(
            "alarm",
            {
                "kind": "</script><script>alert('kind')</script>",
                "note": "<img src=x onerror=alert('note')>",
            },
            tags=("alarm",),
        )


def test_what_a_run_wrote_never_runs(browser: Any, tmp_path: Path) -> None:
    spec = ContextSpec(
        name="evil",
        description="<script>alert('spec')</script>",
        board_keys=("pose",),
        required=("<b>x</b>*",),
    )
    _record(tmp_path / "evil.mcap", ticks=30, extra=[ExtraCabin(spec=spec, factory=Evil)])
    write_run_report(tmp_path / "evil.mcap", tmp_path / "evil.html")
    with open_page(browser, tmp_path / "evil.html") as loaded:
        page = loaded.page
        page.select_option("#tick-select", index=3)
        assert loaded.dialogs == [] and loaded.errors == []
        assert loaded.requests == [loaded.url]  # the <img src=x> never became an image
        assert page.locator("img").count() == 0
        assert "<b>x</b>*" in page.locator("#tick-view").inner_text()


def test_the_campaign_page(browser: Any, tmp_path: Path) -> None:
    runs = [
        {
            "scenario": "warehouse",
            "seed": seed,
            "fault": fault,
            "fault_kind": None,
            "expected": [
                {
                    "cabin": "executor",
                    "reaction": "retry:conservative",
                    "because": "hidden",
                    "seen_at": None if bad else 104,
                    "ok": not bad,
                }
            ],
            "reactions_ok": not bad,
            "safe": True,
            "passed": not bad,
            "deliveries_done": 5,
            "tasks_total": 5,
            "safety_violations": 0,
            "collisions": 0,
            "ticks": 900,
            "board_digest": "abc",
            "error": None,
        }
        for fault in ("missing:executor:event:action_failed*@100-400", "stale:pose@200-600")
        for seed in (0, 1)
        for bad in [fault.startswith("stale") and seed == 1]
    ]
    report = {
        "scenarios": ["warehouse"],
        "seeds": [0, 1],
        "within": 40,
        "backend": "local",
        "passed": cp.passed(runs),
        "table": cp.table(runs),
        "runs": runs,
    }
    write_campaign_report(report, tmp_path / "campaign.html")
    with open_page(browser, tmp_path / "campaign.html") as loaded:
        page = loaded.page
        assert loaded.requests == [loaded.url] and loaded.errors == []
        assert [m for m in loaded.console if m[0] == "error"] == []
        assert page.locator("tr.fault-row").count() == 2
        assert page.locator("tr.fault-row.fail td.cell.fail a").count() == 1
        colours = {
            page.locator(f"td.cell.{s}").first.evaluate("e => getComputedStyle(e).backgroundColor")
            for s in ("pass", "fail")
        }
        assert len(colours) == 2  # pass and fail look different
        page.locator("tr.fault-row.fail td.cell.fail a").click()
        assert page.evaluate("location.hash") == "#run-3"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "campaign-report.png"), full_page=True)
