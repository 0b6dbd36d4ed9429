"""Energy: whether the battery covers the rest of a task and the way to a charger after it.

Charging used to be decided by a fixed threshold at the end of a step: a robot above it
drove to a far pick, found itself below it there, and ran flat on the way to the charger.
Now, before it sets off on a go-to step (and when a task is started or re-planned), the
planner asks ``Energy.short`` whether the charge covers the rest of the task (the go-to
targets still to reach, in order) and then the way from the last of them to the nearest
charger, and charges first when it does not.

**The drain model.** What a metre driven and a second passed cost, as shares of a full
battery (the unit of the ``battery`` reading). The world publishes its battery's figures
in ``robot:limits`` (``cabins.warehouse.energy.BatteryFigures``), and those are used; a
world that does not publish them is learnt from (``DrainLearner``: least squares of each
fall of the ``battery`` reading on the metres driven, from ``velocity``, and the seconds
passed; rises, a charge, are left out), once ``_LEARN_S`` seconds and ``_LEARN_M``
metres were seen. Before then there is no estimate, and only the low-battery level
counts.

**The estimate.** A leg's length is the route planner's, on the layout known (cached per
layout: only step boundaries and re-plans ask, never each tick); straight lines are
tried first, and the route planner is asked only when the battery covers the need at
their length but not at three times it (on a 120 x 80 m floor a route across costs half
a second). A leg's seconds are its length at ``energy_speed`` of the top speed. The
energy of the legs is multiplied by ``energy_factor`` (waits, detours and re-plans cost
more than the shortest route at a steady speed), and ``energy_reserve`` is added: the
share left on arrival at a charger.

**A way round.** Before the robot takes a long way round (the other way round a single
lane a mover contests, ``route``), ``Energy.covers`` checks that the battery covers it and
the way from its end to a charger; it waits for the lane instead when it does not. (On
hard:6 the robot, at half charge on a tight battery, turned from a 35 m way to a 94 m one
and ran flat 8 m short of the charger.) On its way to a charger, the way round the
movers after a stand-off is judged without the reserve (``keep_reserve``; the other way
round a lane, taken before any stand-off instead of waiting, keeps it): it is what the robot would
arrive with, and the stand-off showed that waiting gets it no nearer. (gen 116: at
0.125, 4.5 m from the only charger, up an aisle a forklift walked end to end, the robot
was sent back out of the aisle by the forklift again and again; the 21 m way round, in
at the aisle's far end, needed 0.11 with the factor and 0.16 with the reserve, and the
battery ran flat 1 m from the charger.) So too
before it gives way to a mover
(``Energy.covers_detour``: the way aside, back to the step's target, and a charger after
it); it charges first instead when that is not covered, since a give-way can be a retreat
of up to 25 m out of a bay and back. (hard:30 seeds 0 and 2: 2.6 m from its drop at a
bay's closed end, the robot retreated 10 m before the picker, came back, delivered, and ran
flat on its way to the charger.)

**The decision.** None (go on) when the battery covers that need, or when it is charged
already (at ``charge_until``: a charge would not add to it). When even a full charge
would not cover the whole task, it is done leg by leg: the robot goes on while the
battery covers the next leg and the way from its end to a charger, and charges first
when it does not. So too when a charge now would not bring the task within one charge
(from the charger, through the targets, to a charger is beyond ``charge_until``): the
robot that turned back for it came back as short as before (hard:86).

**Fresh from a full charge.** A robot that set off from a charge charged full (0.98 or
more) and is on the same task with no step done since is not asked for the reserve: a
charge now would bring it back to where it stands no better off, so it goes on while the
battery covers the rest at the factor, and charges first only below that. The factor,
which budgets waits and detours, is kept; the low-battery level still sends it to charge.
(hard:75: charged full, the robot crept 12 m behind traffic to a bay whose picker loops,
found itself 0.01 short of the bay, the way back and the reserve, and turned back to
charge, seven times over one delivery; when at last it went on, it delivered with 0.59
left.) The reserve is asked for first, and left out only when that falls short: left
out, the whole task can fit one charge and be judged whole where with it the task is
judged leg by leg, which needs less, and the waiver must never ask for more. It is never
silent: the first time after the robot set off from a full charge that it changes the
decision (the battery covers the way on without the reserve but not with it), ``short``
keeps a ``ReserveWaived`` (the task, the battery, what the way on needs with the
reserve, and what the way it goes on by needs without it, and its metres), which the
planner takes (``take_waived``) and reports in a ``reserve_waived`` event, once each
time it set off; a re-plan to charge says ``no reserve: fresh from a full charge`` in
its detail. A robot that runs flat after it shows that it went on without the reserve.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Final, NamedTuple

import structlog
from shapely.geometry import LineString

from cabins.planner.layout import Layout
from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.warehouse.routing import Point2

__all__ = ["Drain", "DrainLearner", "Energy", "ReserveWaived", "RouteLengths", "Stage"]

_log = structlog.get_logger(__name__)

_LEARN_S: Final = 20.0  # s of readings before a learnt drain is used
_LEARN_M: Final = 5.0  # m driven before a learnt drain is used
_GAP_S: Final = 1.0  # s: two readings further apart than this are not one interval
_FULL_SLACK: Final = 0.02  # a battery this close below charge_until counts as charged
_CELL: Final = 0.5  # m: robot positions within one cell share a cached route length
_CACHE: Final = 512  # route lengths kept per layout at most
_SURE_DETOUR: Final = 3.0  # a need covered at this many times the straight lines is covered


class Drain(NamedTuple):
    """What a metre driven (``per_m``) and a second passed (``per_s``) cost, as shares of
    a full battery, and where the figures came from (``published`` or ``learnt``)."""

    per_m: float
    per_s: float
    source: str


Stage = tuple[str | None, int]
"""The planner's stage: the active task (None when idle) and how many steps were done,
across plans and tasks."""


class ReserveWaived(NamedTuple):
    """A decision the reserve's waiver changed (see the module docstring): fresh from a
    full charge, the robot at ``battery`` goes on with ``task``, where with the reserve it
    would have charged first: short of ``need`` with ``energy_reserve``, it covers
    ``need_without``, what the way it goes on by needs without it (the rest of the task,
    or its next leg when it is done leg by leg, and a charger after it: ``metres`` long)."""

    task: str | None
    battery: float
    need: float
    need_without: float
    metres: float


class DrainLearner:
    """Learns the drain from the battery readings and the speeds seen (see the module
    docstring): sums of the least-squares fit, a handful of numbers per tick."""

    def __init__(self) -> None:
        self._last: tuple[float, float] | None = None  # (time, battery) of the last reading
        self._mm = self._ms = self._ss = self._my = self._sy = 0.0
        self._metres = self._seconds = 0.0

    def observe(self, time: float, battery: float | None, speed: float | None) -> None:
        """Take one tick's ``battery`` reading and forward ``speed`` (m/s) at ``time`` (s)."""
        last = self._last
        self._last = None if battery is None else (time, battery)
        if last is None or battery is None or speed is None:
            return
        seconds, fall = time - last[0], last[1] - battery
        if not 0.0 < seconds <= _GAP_S or fall < 0.0:
            return  # a gap in the readings, or charging
        metres = abs(speed) * seconds
        self._mm += metres * metres
        self._ms += metres * seconds
        self._ss += seconds * seconds
        self._my += metres * fall
        self._sy += seconds * fall
        self._metres += metres
        self._seconds += seconds

    def drain(self) -> Drain | None:
        """The drain learnt so far, or None before enough was seen."""
        if self._seconds < _LEARN_S or self._metres < _LEARN_M:
            return None
        mm, ms, ss, my, sy = self._mm, self._ms, self._ss, self._my, self._sy
        det = mm * ss - ms * ms
        per_m = per_s = -1.0
        if det > 1e-9 * mm * ss:
            per_m, per_s = (my * ss - sy * ms) / det, (sy * mm - my * ms) / det
        if per_m < 0.0 or per_s < 0.0:
            # metres and seconds in step (one steady speed), or a noisy split: all of the
            # fall on whichever of the two explains it alone, the other left at zero
            per_m, per_s = (my / mm, 0.0) if per_s < 0.0 else (0.0, sy / ss)
        return Drain(max(per_m, 0.0), max(per_s, 0.0), "learnt")


class RouteLengths:
    """Route lengths on the layout's route planner (moving obstacles left out), cached
    until the layout changes; the straight line where no route is found."""

    def __init__(self, layout: Layout) -> None:
        self._layout = layout
        self._key: object = None
        self._known: dict[tuple[Point2, Point2], float] = {}

    def __call__(self, a: Point2, b: Point2) -> float:
        router = self._layout.router()
        if router is None:
            return math.dist(a, b)
        key = self._layout.router_key
        if key != self._key or len(self._known) >= _CACHE:
            self._key, self._known = key, {}
        pair = (_cell(a), _cell(b))
        known = self._known.get(pair)
        if known is None:
            route = router.plan(a, b)
            known = float(LineString(route).length) if route else math.dist(a, b)
            self._known[pair] = known
        return known


def _cell(p: Point2) -> Point2:
    return (round(p[0] / _CELL) * _CELL, round(p[1] / _CELL) * _CELL)


class Energy:
    """Whether the battery covers the rest of a task (see the module docstring)."""

    def __init__(
        self,
        settings: PlannerSettings,
        layout: Layout,
        *,
        stage: Callable[[], Stage] | None = None,
    ) -> None:
        self._settings = settings
        self._learner = DrainLearner()
        self._lengths = RouteLengths(layout)
        self._stage = stage  # the active task and the steps done (None: not known)
        self._charging = False  # a charge step ran since the robot last set off
        self._charged_to: float | None = None  # the last reading while it ran
        self._departed: tuple[Stage, float] | None = None  # stage and level, set off
        self._waiver_kept = False  # a ReserveWaived was kept since the robot set off
        self._waived: ReserveWaived | None = None  # kept, not yet taken by the planner

    def observe(self, seen: Seen, *, charging: bool = False) -> None:
        """Learn from this tick's battery reading (each tick: a few sums), and note when
        the robot sets off after a charge (``charging``: a charge step is running)."""
        if seen.battery_figures is None:
            self._learner.observe(seen.time, seen.battery, seen.speed)
        if charging:
            self._charging = True
            if seen.battery is not None:
                self._charged_to = seen.battery
        elif self._charging:
            self._charging = False
            level, self._charged_to = self._charged_to, None
            if self._stage is not None and level is not None:
                self._departed = (self._stage(), level)
                self._waiver_kept = False

    def fresh_from_full_charge(self) -> bool:
        """Whether the robot set off from a charge charged full (to ``_FULL_SLACK`` below
        1) and its stage is as it was then (the same task, no step done since): a charge
        now would bring it back to where it stands no better off."""
        departed = self._departed
        if departed is None or self._stage is None or departed[0] != self._stage():
            return False
        return departed[1] >= 1.0 - _FULL_SLACK

    def take_waived(self) -> ReserveWaived | None:
        """The decision the reserve's waiver changed since the last call, if any (at most
        one per departure; see the module docstring), for the planner to report."""
        waived, self._waived = self._waived, None
        return waived

    def drain(self, seen: Seen) -> Drain | None:
        """The drain model: the published figures, else the learnt ones, else None."""
        figures = seen.battery_figures
        if figures is not None:
            return Drain(figures.share_per_m, figures.share_per_s, "published")
        return self._learner.drain()

    def short(self, seen: Seen, targets: Sequence[Point2]) -> str | None:
        """Why the robot should charge before it goes on to ``targets`` (the go-to targets
        of the rest of its task, in order), or None when it need not. When it need not
        only because the reserve was waived, that is kept for ``take_waived``."""
        battery, here, chargers = seen.battery, seen.pose, seen.charger_places()
        drain = self.drain(seen)
        if battery is None or here is None or drain is None or not chargers or not targets:
            return None
        if self.charged(seen):
            return None  # a charge would not add to it: go on, leg by leg
        places = [here, *targets]
        reserve = self._settings.energy_reserve
        short, metres, need = self._short_of(battery, drain, seen, places, chargers, reserve)
        fresh = short and self.fresh_from_full_charge()
        if fresh:  # see the module docstring: asked for the factor only
            kept = (metres, need)
            short, metres, need = self._short_of(battery, drain, seen, places, chargers, 0.0)
            if not short:
                self._keep_waiver(battery, kept, metres, need)
                return None
        if not short:
            return None
        _log.debug("planner.energy_short", battery=battery, need=need, metres=metres)
        return (
            f"battery {battery:.2f} < {need:.2f} needed for {metres:.0f} m and a charger "
            f"({drain.source} drain{', no reserve: fresh from a full charge' if fresh else ''})"
        )

    def _short_of(
        self,
        battery: float,
        drain: Drain,
        seen: Seen,
        places: list[Point2],
        chargers: dict[str, Point2],
        reserve: float,
    ) -> tuple[bool, float, float]:
        """Whether ``battery`` is short of going from the robot through ``places`` (the
        robot's position first) and to a charger after them, keeping ``reserve``; and the
        metres and the need the decision was made on."""
        need_of = partial(self._need, drain, seen=seen, reserve=reserve)
        # straight lines first: no route is shorter, and few are three times as long, so
        # the route planner is asked only when those two bounds disagree. The sure lower
        # bound is the next leg and a charger after it by straight lines, not the whole
        # task: a task within one charge by straight lines may be beyond it by its routes,
        # and is then done leg by leg, which needs less (hard:86: 7 m from its pick-up,
        # the robot turned back 40 m to charge after every re-plan, for the whole run)
        metres, need = self._metres_and_need(math.dist, places, chargers, need_of)
        floor = need_of(self._leg_metres(math.dist, places, chargers))
        if battery >= floor:
            if battery >= need_of(_SURE_DETOUR * metres):
                return False, metres, need
            metres, need = self._metres_and_need(self._lengths, places, chargers, need_of)
            if battery >= need or self._leg_covered(battery, places, chargers, need_of):
                return False, metres, need
        return True, metres, need

    def _keep_waiver(
        self, battery: float, kept: tuple[float, float], metres: float, need: float
    ) -> None:
        """Keep a ``ReserveWaived`` (once after each time the robot set off from a full
        charge): the battery, short of the way with the reserve (``kept``: its metres and
        need), covers ``metres`` at ``need`` without it."""
        departed = self._departed
        if self._waiver_kept or departed is None:
            return
        self._waiver_kept = True
        self._waived = ReserveWaived(
            task=departed[0][0],
            battery=battery,
            need=kept[1],
            need_without=need,
            metres=metres,
        )
        _log.debug("planner.reserve_waived", battery=battery, need=kept[1], metres=metres)

    def charged(self, seen: Seen) -> bool:
        """Whether the battery is charged already: a charge (to ``charge_until``) would not
        add to it."""
        battery = seen.battery
        return battery is not None and battery >= self._settings.charge_until - _FULL_SLACK

    def covers(self, seen: Seen, metres: float, end: Point2, *, keep_reserve: bool = True) -> bool:
        """Whether the battery covers ``metres`` of driving that end at ``end`` and then
        the way from there to the nearest charger (True without an estimate: no drain
        model, battery reading or charger), with ``energy_reserve`` left on arrival
        unless not ``keep_reserve``."""
        battery, chargers, drain = seen.battery, seen.charger_places(), self.drain(seen)
        if battery is None or drain is None or not chargers:
            return True
        home = min(self._lengths(end, c) for c in chargers.values())
        reserve = None if keep_reserve else 0.0
        return battery >= self._need(drain, metres + home, seen=seen, reserve=reserve)

    def covers_detour(self, seen: Seen, route: Sequence[Point2], end: Point2) -> bool:
        """Whether the battery covers driving ``route`` (a way off the task's, such as a
        give-way), from its end on to ``end`` by route, and from there to the nearest
        charger (``covers``)."""
        if len(route) < 2:
            return True  # no way off: the robot stays where it is
        metres = float(sum(math.dist(a, b) for a, b in itertools.pairwise(route)))
        return self.covers(seen, metres + self._lengths(route[-1], end), end)

    def _metres_and_need(
        self,
        length: Callable[[Point2, Point2], float],
        places: list[Point2],
        chargers: dict[str, Point2],
        need_of: Callable[[float], float],
    ) -> tuple[float, float]:
        """The metres from the robot through ``places`` to the nearest charger (by
        ``length``) and what they need; when no single charge covers that, the next leg
        and a charger after it (``need_of``: what metres need)."""
        full = self._settings.charge_until - _FULL_SLACK
        metres = sum(length(a, b) for a, b in itertools.pairwise(places))
        metres += min(length(places[-1], c) for c in chargers.values())
        need = need_of(metres)
        if need > full:  # not on one charge: the next leg and a charger after it
            metres = self._leg_metres(length, places, chargers)
            need = need_of(metres)
        return metres, need

    def _leg_covered(
        self,
        battery: float,
        places: list[Point2],
        chargers: dict[str, Point2],
        need_of: Callable[[float], float],
    ) -> bool:
        """Whether a charge now would not bring the whole task within one charge (from the
        charger the robot would go to, through the targets to a charger, is beyond
        ``charge_until``), and the battery covers the next leg and a charger after it (by
        the routes): then the task is done leg by leg from here too. (hard:86: 11 m from
        its pick-up at 0.63, short of the whole task at 0.67, the robot turned back 58 m
        to charge, came back at 0.58 and turned back again, for the rest of the run.)"""
        here = places[0]
        charger = min(chargers.values(), key=lambda c: math.dist(here, c))
        full = self._settings.charge_until - _FULL_SLACK
        lengths = self._lengths
        whole = sum(lengths(a, b) for a, b in itertools.pairwise([charger, *places[1:]]))
        whole += min(lengths(places[-1], c) for c in chargers.values())
        if need_of(whole) <= full:
            return False  # charged first, the task is within one charge: charge
        return battery >= need_of(self._leg_metres(lengths, places, chargers))

    @staticmethod
    def _leg_metres(
        length: Callable[[Point2, Point2], float],
        places: list[Point2],
        chargers: dict[str, Point2],
    ) -> float:
        """The metres from the robot to the next of ``places`` and from there to the
        nearest charger (by ``length``): never more than the whole task's, by the triangle
        inequality, so by straight lines a lower bound of what the decision needs."""
        return length(places[0], places[1]) + min(length(places[1], c) for c in chargers.values())

    def _need(
        self, drain: Drain, metres: float, *, seen: Seen, reserve: float | None = None
    ) -> float:
        """The share of a full battery ``metres`` of driving take, with the factor, and
        ``reserve`` (``energy_reserve`` by default)."""
        settings = self._settings
        seconds = metres / (settings.energy_speed * seen.limits.max_speed)
        energy = drain.per_m * metres + drain.per_s * seconds
        reserve = settings.energy_reserve if reserve is None else reserve
        return settings.energy_factor * energy + reserve
