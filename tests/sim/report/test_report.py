"""HTML reports without a browser: self-contained, the expected SVG elements, bounded data,
everything escaped, and a campaign matrix with one coloured row per fault."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import ContextSpec, configure_logging
from runtime.cabin import Outbox
from runtime.pack import CabinView
from runtime.recording.format import BOARD
from runtime.recording.reader import Recording
from sim import cli
from sim.faults.model import parse_fault
from sim.report.campaign import campaign_page, write_campaign_report
from sim.report.charts import Axis
from sim.report.collect import Notable, RunData, collect, stride
from sim.report.html import TEMPLATES, ReportError, check_output, temporary_recording
from sim.report.pages import MAX_POINTS, MAX_TICKS, choose, run_page, write_run_report
from sim.run import campaign as cp
from sim.run.harness import ExtraCabin, Simulation
from sim.world.scenario import load_scenario

TICKS = 1200  # longer than MAX_POINTS and MAX_TICKS, so both bounds bite
FAULTS = ("missing:executor:event:action_failed*@50-150", "crash:planner@120")
EVIL = "</script><script>window.__pwned = 1</script><img src=x onerror=alert(1)>"


# -- an HTML page as elements ----------------------------------------------------------------


_SELECTOR = re.compile(r"(?P<tag>[\w-]+)(?:#(?P<id>[^.\s]+))?(?P<classes>(?:\.[\w-]+)*)")


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parents: tuple[Element, ...]  # outermost first

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def matches(self, selector: str) -> bool:
        """``tag``, ``tag#id`` (``#prefix*`` for an id prefix) and ``.class`` parts."""
        found = _SELECTOR.fullmatch(selector)
        assert found is not None, selector
        wanted_id = found["id"]
        own_id = self.attrs.get("id", "")
        if wanted_id is not None and not (
            own_id.startswith(wanted_id[:-1]) if wanted_id.endswith("*") else own_id == wanted_id
        ):
            return False
        return found["tag"] == self.tag and set(found["classes"].split(".")[1:]) <= self.classes

    def inside(self, selector: str) -> bool:
        return any(p.matches(selector) for p in self.parents)


_VOID = {
    "meta",
    "link",
    "input",
    "br",
    "img",
    "hr",
    "area",
    "base",
    "col",
    "embed",
    "source",
    "track",
    "wbr",
}


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.stack: list[Element] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self._script: dict[str, str] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        element = Element(tag, values, tuple(self.stack))
        self.elements.append(element)
        if tag == "script":
            self._script = values
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.elements.append(Element(tag, values, tuple(self.stack)))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
            self._script = None
        else:
            self.text.append(data)


def parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser


def select(
    doc: _Elements, tag: str, cls: str | None = None, *, inside: str | None = None
) -> list[Element]:
    return [
        e
        for e in doc.elements
        if e.tag == tag
        and (cls is None or cls in e.classes)
        and (inside is None or e.inside(inside))
    ]


def report_data(doc: _Elements) -> dict[str, Any]:
    found = [text for attrs, text in doc.scripts if attrs.get("id") == "report-data"]
    assert len(found) == 1
    data: dict[str, Any] = json.loads(found[0])
    return data


def path_points(d: str) -> int:
    return len(re.findall(r"[MLH]", d))  # V only moves up or down: no new point


# -- recordings ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    configure_logging(level="critical")
    path = tmp_path_factory.mktemp("report") / "run.mcap"
    sim = Simulation("warehouse", seed=0, faults=[parse_fault(f) for f in FAULTS], record=path)
    try:
        summary = sim.run(TICKS, until_done=False)
    finally:
        sim.close()
    yield path, summary


@pytest.fixture(scope="module")
def page(recorded: tuple[Path, dict[str, Any]]) -> str:
    text, _ = run_page(recorded[0], summary=recorded[1])
    return text


@pytest.fixture(scope="module")
def doc(page: str) -> _Elements:
    return parse(page)


class Evil:
    """A cabin that writes, emits and raises alarms with HTML and script in them."""

    name = "evil"

    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec
        self.ticks = 0

    def step(self, view: CabinView, out: Outbox) -> None:
        self.ticks += 1
        if self.ticks == 5:
            out.emit("alarm", {"kind": EVIL, "level": "alarm"}, tags=("alarm",))
            out.write("evil:</script><b>k</b>", EVIL)  # keys cannot hold spaces


@pytest.fixture(scope="module")
def evil_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    configure_logging(level="critical")
    path = tmp_path_factory.mktemp("evil") / "evil.mcap"
    spec = ContextSpec(
        name="evil",
        description=EVIL,
        board_keys=("pose", "evil:*"),
        required=("pose", "x<script>*"),
        weights={"evil:*": 0.9},
    )
    scenario = load_scenario("warehouse").model_copy(update={"description": EVIL})
    sim = Simulation(
        scenario,
        seed=0,
        extra=[ExtraCabin(spec=spec, factory=Evil)],
        faults=[parse_fault("missing:evil:x<script>*@2-30")],
        record=path,
    )
    try:
        sim.run(40, until_done=False)
    finally:
        sim.close()
    text, _ = run_page(path, max_ticks=40)
    return text


# -- self-contained --------------------------------------------------------------------------


@pytest.mark.slow
def test_the_page_is_self_contained(page: str, doc: _Elements) -> None:
    for e in doc.elements:
        for name, value in e.attrs.items():
            if name in ("src", "href", "xlink:href", "action", "poster", "data"):
                assert not re.match(r"\s*(https?:|//|ftp:)", value, re.I), (e.tag, name, value)
            if re.match(r"\s*https?:", value, re.I):
                assert name == "xmlns", f"<{e.tag} {name}={value!r}> points at the network"
    assert all(
        e.attrs.get("rel") == "icon" and e.attrs["href"].startswith("data:")
        for e in select(doc, "link")
    )
    assert not [
        e
        for e in doc.elements
        if e.tag in ("img", "iframe", "object", "embed", "audio", "video", "source")
    ]
    assert all("src" not in e.attrs for e in select(doc, "script"))
    assert "@import" not in page and "url(" not in page
    csp = [e for e in select(doc, "meta") if e.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert len(csp) == 1 and "default-src 'none'" in csp[0].attrs["content"]


# -- the map ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_map_has_one_trajectory_and_every_shelf(doc: _Elements) -> None:
    scenario = load_scenario("warehouse")
    assert len(select(doc, "g", "trajectory", inside="svg#map")) == 1
    assert len(select(doc, "g", "trajectory")) == 1
    assert len(select(doc, "polyline", "traj-band", inside="g.trajectory")) >= 2
    shelves = [e for e in doc.elements if "shelf" in e.classes]
    assert len(shelves) == len(scenario.shelves)
    assert {e.attrs["data-id"] for e in shelves} == {s.id for s in scenario.shelves}
    assert len(select(doc, "polygon", "forbidden-zone")) == len(scenario.forbidden_zones)
    assert len(select(doc, "polygon", "speed-zone")) == len(scenario.speed_zones)
    assert len(select(doc, "rect", "dock")) == len(scenario.docks)
    assert len(select(doc, "circle", "charger")) == len(scenario.chargers)


def _floor_mapping(doc: _Elements) -> Any:
    """Metres → map pixels, read off the floor rectangle the page drew."""
    floor = load_scenario("warehouse").floor
    (rect,) = select(doc, "rect", "floor")
    x0, y0 = float(rect.attrs["x"]), float(rect.attrs["y"])
    sx = float(rect.attrs["width"]) / (floor.max_x - floor.min_x)
    sy = float(rect.attrs["height"]) / (floor.max_y - floor.min_y)
    return lambda x, y: (x0 + (x - floor.min_x) * sx, y0 + (floor.max_y - y) * sy)


@pytest.mark.slow
def test_markers_sit_where_the_robot_was_when_a_fault_started(
    recorded: tuple[Path, dict[str, Any]], doc: _Elements
) -> None:
    recording = Recording.open(recorded[0])
    poses = [
        (t, m["value"])
        for t, m in recording.records(BOARD)
        if m["key"] == "pose" and not m["deleted"]
    ]
    to_px = _floor_mapping(doc)
    faults = select(doc, "g", "m-fault", inside="svg#map")
    assert sorted(int(e.attrs["data-tick"]) for e in faults) == [50, 120]
    for marker in faults:
        tick = int(marker.attrs["data-tick"])
        x, y = [v for t, v in poses if t <= tick][-1][:2]
        found = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", marker.attrs["transform"])
        assert found is not None
        ex, ey = to_px(x, y)
        assert abs(float(found[1]) - ex) < 0.2 and abs(float(found[2]) - ey) < 0.2
    # the crash is seen by the monitor: an alarm marker right after it
    alarms = [int(e.attrs["data-tick"]) for e in select(doc, "g", "m-alarm")]
    assert any(120 <= t <= 125 for t in alarms)


@pytest.mark.slow
def test_routes_are_distinct(doc: _Elements) -> None:
    routes = [e.attrs["points"] for e in select(doc, "polyline", "route")]
    assert routes and len(routes) == len(set(routes))


# -- timelines and bounds --------------------------------------------------------------------


@pytest.mark.slow
def test_timelines_are_there_and_bounded(
    recorded: tuple[Path, dict[str, Any]], doc: _Elements
) -> None:
    charts = {e.attrs["id"] for e in select(doc, "svg", "chart")}
    assert {
        "chart-working-set",
        "chart-evictions",
        "chart-deliveries",
        "chart-compute",
        "chart-missing-planner",
        "chart-missing-executor",
        "chart-missing-monitor",
    } <= charts
    for e in doc.elements:
        if e.tag == "path" and e.inside("svg#chart-*") and "series" in e.classes:
            assert path_points(e.attrs["d"]) <= MAX_POINTS
    # the executor's missing-item timeline shows the injected fault
    fault_line = [e for e in select(doc, "path", "s-fault", inside="svg#chart-missing-executor")]
    assert len(fault_line) == 1 and path_points(fault_line[0].attrs["d"]) > 1
    # deliveries: one mark per goal the dispatcher deleted (a delivery done)
    recording = Recording.open(recorded[0])
    done = {
        m["key"]
        for _, m in recording.records(BOARD)
        if m["key"].startswith("goal:deliver:") and m["deleted"]
    }
    assert done and len(select(doc, "line", "k-delivery")) == len(done)


@pytest.mark.slow
def test_the_tick_selector_data_is_bounded(
    recorded: tuple[Path, dict[str, Any]], doc: _Elements, page: str
) -> None:
    data = report_data(doc)
    assert len(data["snapshots"]) == MAX_TICKS < TICKS
    assert len(data["path"]) <= MAX_POINTS
    worth = [w["tick"] for w in data["worth"]]
    assert {50, 120, 150} <= set(worth)  # fault starts and ends are worth a look
    assert set(worth) | set(data["sample"]) == {int(t) for t in data["snapshots"]}
    assert not set(worth) & set(data["sample"])
    # smaller budgets are kept exactly
    small, info = run_page(recorded[0], max_ticks=12, max_points=40)
    tiny = report_data(parse(small))
    assert len(tiny["snapshots"]) == info.embedded_ticks <= 12
    assert len(tiny["path"]) <= 40 and info.trajectory_points <= 40
    assert len(small) < len(page)
    for e in parse(small).elements:
        if e.tag == "path" and "series" in e.classes:
            assert path_points(e.attrs["d"]) <= 40


@pytest.mark.slow
def test_a_snapshot_shows_what_inspect_shows(
    recorded: tuple[Path, dict[str, Any]], doc: _Elements
) -> None:
    from runtime.recording.inspect import tick_report

    data = report_data(doc)
    snap = data["snapshots"]["120"]
    report = tick_report(Recording.open(recorded[0]), 120)
    assert snap["size"] == report["working_set_size"]
    for name, view in report["cabins"].items():
        text = data["values"]
        rows = snap["cabins"][name]["items"]
        assert [text[row[0]] for row in rows] == sorted(view["items"])
        assert [text[row[1]] for row in rows] == [
            view["items"][k]["via"] for k in sorted(view["items"])
        ]
        assert {p: r for p, r, _ in snap["cabins"][name]["missing"]} == {
            p: m["reason"] for p, m in view["missing"].items()
        }
    assert snap["cabins"]["planner"]["decision"]["failed"].startswith("InjectedCrash")
    executor = data["snapshots"]["50"]["cabins"]["executor"]
    assert ["event:action_failed*", "fault", ""] in executor["missing"]


# -- escaping --------------------------------------------------------------------------------


@pytest.mark.slow
def test_nothing_inserted_can_inject_markup(evil_page: str) -> None:
    doc = parse(evil_page)
    assert len(select(doc, "script")) == 2  # the JSON data and the page's own script
    assert not select(doc, "img")
    data_text = next(text for attrs, text in doc.scripts if attrs.get("id") == "report-data")
    code = next(text for attrs, text in doc.scripts if "id" not in attrs)
    assert "<" not in data_text  # no value can close the data's script element
    assert code.strip() == (TEMPLATES / "report.js").read_text(encoding="utf-8").strip()
    assert EVIL in "".join(doc.text)  # shown as text: the alarm, the spec, the scenario
    data = report_data(doc)
    flat = json.dumps(data)
    assert json.dumps(EVIL)[1:-1] in flat  # the JSON round-trips the exact string
    assert any(
        "x<script>*" in json.dumps(s["cabins"]["evil"]["missing"])
        for s in data["snapshots"].values()
    )


# -- properties of the reductions ------------------------------------------------------------


@given(st.lists(st.integers(), max_size=300), st.integers(min_value=2, max_value=50))
def test_stride_keeps_ends_and_order(items: list[int], limit: int) -> None:
    kept = stride(items, limit)
    assert len(kept) <= max(limit, 0)
    if items:
        assert kept[0] == items[0] and kept[-1] == items[-1]
    positions = [items.index(k) for k in kept]
    assert positions == sorted(positions) or len(set(items)) < len(items)


@given(
    st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=400),
    st.integers(min_value=1, max_value=60),
)
def test_buckets_keep_the_peak_and_the_total(values: list[float], bucket: int) -> None:
    import numpy as np

    axis = Axis(10, 10 + len(values) - 1, bucket)
    array = np.array(values)
    assert len(axis.centres()) == len(axis.reduce(array, "max")) <= len(values)
    assert axis.reduce(array, "max").max() == max(values)
    assert axis.reduce(array, "sum").sum() == pytest.approx(sum(values))
    assert all(10 <= c <= 10 + len(values) - 1 for c in axis.centres())


@given(st.data())
def test_chosen_ticks_are_recorded_bounded_and_serious_first(data: st.DataObject) -> None:

    ticks = sorted(data.draw(st.sets(st.integers(0, 2000), min_size=1, max_size=300)))
    kinds = st.sampled_from(["collision", "alarm", "delivery", "fault", "replan"])
    notable = data.draw(
        st.lists(st.builds(Notable, st.integers(0, 2100), kinds, st.just("x")), max_size=80)
    )
    budget = data.draw(st.integers(0, 60))
    run = RunData.__new__(RunData)
    run.ticks, run.notable = ticks, notable
    worth, sample = choose(run, budget)
    chosen = [t for t, _ in worth] + sample
    assert len(chosen) == len(set(chosen)) <= budget
    assert set(chosen) <= set(ticks)
    collisions = {
        max([t for t in ticks if t <= n.tick] or [ticks[0]])
        for n in notable
        if n.kind == "collision"
    }
    if budget >= 4 and len(collisions) <= budget // 2:
        assert collisions <= {t for t, _ in worth}


# -- writing, the command, errors ------------------------------------------------------------


@pytest.mark.slow
def test_write_run_report_writes_what_it_says(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    info = write_run_report(recorded[0], out, summary=recorded[1])
    assert out.stat().st_size == info.bytes and info.ticks == TICKS
    assert info.embedded_ticks == MAX_TICKS and info.markers >= 3
    assert out.stat().st_mode & 0o044  # readable by others: a report is for sharing
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


@pytest.mark.slow
def test_a_damaged_recording_is_reported_up_to_its_break(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    cut = tmp_path / "cut.mcap"
    data = recorded[0].read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    notices: list[str] = []
    info = write_run_report(cut, tmp_path / "cut.html", warn=notices.append)
    assert info.damaged and 0 < info.ticks < TICKS and len(notices) == 1
    assert "damaged at byte" in (tmp_path / "cut.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_bad_targets_and_inputs_are_refused(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    with pytest.raises(ReportError, match="does not exist"):
        check_output(tmp_path / "nowhere" / "r.html")
    with pytest.raises(ReportError, match="is a folder"):
        check_output(tmp_path)
    with pytest.raises(ReportError, match="max_points"):
        run_page(recorded[0], max_points=3)
    fresh = temporary_recording(tmp_path)
    assert fresh.exists() and fresh.suffix == ".mcap" and fresh.parent == tmp_path


def _main(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    return cli.main(argv)


@pytest.mark.slow
def test_the_report_command(
    recorded: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy = tmp_path / "run.mcap"
    shutil.copy(recorded[0], copy)
    assert _main(["report", str(copy), "--json", "--max-ticks", "30"], monkeypatch) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["path"] == str(tmp_path / "run.html") and info["embedded_ticks"] == 30
    assert (tmp_path / "run.html").stat().st_size == info["bytes"]

    assert _main(["report", str(copy), "-o", str(tmp_path / "r.html")], monkeypatch) == 0
    assert "wrote" in capsys.readouterr().out

    garbage = tmp_path / "garbage.mcap"
    garbage.write_bytes(b"not a recording at all")
    for argv in (
        ["report", str(garbage)],
        ["report", str(copy), "-o", str(tmp_path / "no" / "r.html")],
        ["report", str(copy), "-o", str(copy)],
        ["report", str(tmp_path / "missing.mcap")],
    ):
        assert _main(argv, monkeypatch) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "Traceback" not in err


def test_a_recording_without_ticks_is_refused(tmp_path: Path) -> None:
    configure_logging(level="critical")
    path = tmp_path / "empty.mcap"
    Simulation("warehouse", seed=0, record=path).close()
    with pytest.raises(ReportError, match="holds no ticks"):
        collect(Recording.open(path))


# -- campaigns -------------------------------------------------------------------------------


def _result(
    fault: str,
    seed: int,
    *,
    ok: bool = True,
    unsafe: int = 0,
    error: str | None = None,
    delivered: int = 5,
) -> dict[str, Any]:
    checks = (
        []
        if fault == "(none)"
        else [
            {
                "cabin": "executor",
                "reaction": "retry:conservative",
                "because": "hidden",
                "seen_at": 105 if ok else None,
                "ok": ok,
            }
        ]
    )
    return {
        "scenario": "warehouse",
        "seed": seed,
        "fault": fault,
        "fault_kind": None,
        "expected": checks,
        "reactions_ok": ok,
        "safe": unsafe == 0,
        "passed": ok and unsafe == 0 and error is None,
        "deliveries_done": delivered,
        "tasks_total": 5,
        "safety_violations": unsafe,
        "collisions": 0,
        "ticks": 900,
        "board_digest": "abc",
        "error": error,
    }


@pytest.fixture
def campaign_report() -> dict[str, Any]:
    runs = [
        _result("(none)", 0),
        _result("(none)", 1),
        _result("missing:executor:event:action_failed*@100-400", 0),
        _result("missing:executor:event:action_failed*@100-400", 1, ok=False, delivered=3),
        _result("stale:pose@200-600", 0, unsafe=1),
        _result("stale:pose@200-600", 1),
        _result(f"missing:planner:{EVIL}@1-2", 0, error="its worker died"),
        _result(f"missing:planner:{EVIL}@1-2", 1),
    ]
    return {
        "scenarios": ["warehouse"],
        "seeds": [0, 1],
        "within": 40,
        "backend": "local",
        "passed": cp.passed(runs),
        "table": cp.table(runs),
        "runs": runs,
    }


def test_the_campaign_matrix_has_one_coloured_row_per_fault(
    campaign_report: dict[str, Any],
) -> None:
    page, info = campaign_page(campaign_report)
    doc = parse(page)
    rows = select(doc, "tr", "fault-row")
    table = campaign_report["table"]
    assert [r.attrs["data-fault"] for r in rows] == [t["fault"] for t in table]
    states = [
        ("pass" if "pass" in r.classes else "fail" if "fail" in r.classes else "?") for r in rows
    ]
    assert states == ["pass", "fail", "fail", "fail"]
    cells = select(doc, "td", "cell")
    verdicts = Counter("".join(sorted(c.classes & {"pass", "fail", "lost"})) for c in cells)
    assert verdicts == {"pass": 5, "fail": 2, "lost": 1}
    anchors = {e.attrs["id"] for e in select(doc, "section", "run")}
    assert anchors == {f"run-{i}" for i in range(len(campaign_report["runs"]))}
    links = [e.attrs["href"] for e in select(doc, "a") if e.inside("tr.fault-row")]
    assert links and all(h[1:] in anchors for h in links)
    # the row of the missed reaction links its summary to the failing run (run 3)
    missed = [
        e.attrs["href"] for e in select(doc, "a", inside="td.summary") if e.inside("tr#fault-1")
    ]
    assert set(missed) == {"#run-3"}
    assert info.runs == 8 and "<img" not in page and EVIL not in page
    assert select(doc, "script") == []  # the campaign page needs no script at all


def test_write_campaign_report(campaign_report: dict[str, Any], tmp_path: Path) -> None:
    info = write_campaign_report(campaign_report, tmp_path / "campaign.html")
    assert (tmp_path / "campaign.html").stat().st_size == info.bytes > 0
    with pytest.raises(ReportError, match="'runs' and 'table'"):
        campaign_page({"runs": None})


def test_capacity_alarms_are_drawn_and_worth_a_look(tmp_path: Path) -> None:
    configure_logging(level="critical")
    path = tmp_path / "tight.mcap"
    sim = Simulation("warehouse", seed=0, capacity=1, record=path)  # two pinned items: alarm
    try:
        sim.run(30, until_done=False)
    finally:
        sim.close()
    page, _ = run_page(path)
    doc = parse(page)
    assert len(select(doc, "rect", "alarm-span", inside="svg#chart-working-set")) >= 1
    assert any("capacity alarm" in w["why"] for w in report_data(doc)["worth"])
    assert report_data(doc)["snapshots"]["0"]["alarm"] is True


def test_a_finished_recording_carries_the_runs_own_summary(tmp_path: Path) -> None:
    from runtime.recording.reader import Recording
    from sim.run.harness import Simulation
    from sim.run.summary import recorded_summary

    sim = Simulation("warehouse", seed=0, record=tmp_path / "run.mcap")
    summary = sim.run(120, until_done=False)
    sim.close()
    saved = recorded_summary(Recording.open(tmp_path / "run.mcap"))
    assert saved is not None
    assert saved["ticks"] == summary["ticks"] == 120
    assert saved["board_digest"] == summary["board_digest"]


def test_the_run_page_badge_is_the_verdict(tmp_path: Path) -> None:
    from tests.support.worlds import TOO_SHORT, write_world

    configure_logging(level="critical")
    world = load_scenario(write_world(tmp_path, TOO_SHORT))
    badges = {}
    for name, ticks in (("short", None), ("cut", 10)):
        sim = Simulation(world, seed=0, record=tmp_path / f"{name}.mcap")
        try:
            sim.run(ticks)
        finally:
            sim.close()
        page = run_page(tmp_path / f"{name}.mcap")[0]
        badges[name] = re.findall(r'<span class="badge (\w+)">([^<]*)</span>', page)
    ((style, line),) = badges["short"]
    assert style == "bad" and line.startswith("FAILED: 1 reachable task undelivered (t1: ")
    ((style, line),) = badges["cut"]
    assert style == "cut" and line.startswith("cut short: 0 of 1 delivered")


def test_a_campaign_run_shows_its_verdict(campaign_report: dict[str, Any]) -> None:
    line = "FAILED: 1 reachable task undelivered (t1)"
    campaign_report["runs"][1]["verdict"] = {"status": "failed", "line": line}
    page, _ = campaign_page(campaign_report)
    section = re.search(r'<section class="run [a-z]+" id="run-1">.*?</section>', page, re.S)
    assert section is not None and f"<th>verdict</th><td>{line}</td>" in section.group(0)
    other = re.search(r'<section class="run [a-z]+" id="run-0">.*?</section>', page, re.S)
    assert other is not None and "<th>verdict</th><td>-</td>" in other.group(0)


@pytest.mark.slow
def test_a_report_replaces_its_own_page_but_no_other_file(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r.html"
    assert cli.main(["report", str(recorded[0]), "-o", str(page)]) == 0
    assert cli.main(["report", str(recorded[0]), "-o", str(page)]) == 0  # its own: replaced
    notes = tmp_path / "notes.html"
    notes.write_text("<p>my notes</p>")
    capsys.readouterr()
    assert cli.main(["report", str(recorded[0]), "-o", str(notes)]) == 2
    assert "not a tickwork report" in capsys.readouterr().err
    assert notes.read_text() == "<p>my notes</p>"
    assert cli.main(["run", "--ticks", "5", "--report", str(notes)]) == 2  # before the run
    assert notes.read_text() == "<p>my notes</p>"


class Busy:
    """A cabin that does a bit of everything its row counts: a declared write and delete,
    an undeclared write at every tick and an undeclared event (refused), a command, and a
    failure at tick 7."""

    name = "busy"

    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec

    def step(self, view: CabinView, out: Outbox) -> None:
        if view.tick == 7:
            raise RuntimeError("tick 7")
        out.write("busy:mark", view.tick)
        if view.tick % 5 == 4:
            out.delete("busy:mark")
        out.write("scribble", view.tick)  # refused at every tick: one write_refused event
        if view.tick % 3 == 0:
            out.emit("shout", {"tick": view.tick})  # refused
        out.command("noop")


def _kv_rows(page: str, heading: str) -> dict[str, str]:
    """The rows of the table that follows ``heading`` (an ``<h3>``), unescaped."""
    import html

    table = page.split(f"<h3>{heading}</h3>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", table)
    return {html.unescape(k): html.unescape(v) for k, v in rows}


def test_the_report_shows_each_cabins_row_as_the_run_counted_it(tmp_path: Path) -> None:
    from sim.run.missing_text import cabin_text

    configure_logging(level="critical")
    path = tmp_path / "busy.mcap"
    spec = ContextSpec(
        name="busy",
        board_keys=("pose", "busy:*"),
        required=("pose", "ghost:*"),
        writes={"board": ["busy:*"], "delete": ["busy:*"]},  # type: ignore[arg-type]
    )
    sim = Simulation("warehouse", seed=0, extra=[ExtraCabin(spec=spec, factory=Busy)], record=path)
    try:
        summary = sim.run(60, until_done=False)
    finally:
        sim.close()
    busy = summary["cabins"]["busy"]
    assert busy["writes_refused"] == 59 + 20 and busy["failures"] == 1 and busy["deletes"] == 12
    assert busy["missing"]  # ghost:* matched nothing
    page, _ = run_page(path)  # no summary handed over: the rows come from the recording
    rows = _kv_rows(page, "From the recording")
    assert not any(k.startswith("missing items") for k in rows)
    assert list(summary["cabins"]) == ["planner", "executor", "monitor", "busy"]
    for cabin, row in summary["cabins"].items():
        assert rows[f"cabin · {cabin}"] == cabin_text(row), cabin
    page, _ = run_page(path, summary=summary)
    assert _kv_rows(page, "From the run")["cabin · busy"] == cabin_text(busy)
