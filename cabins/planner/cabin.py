"""The planner cabin: the goal stack, the plan DAG of the active delivery and its route.

Each tick the planner reads its view once (``seen``) and, through its outbox only:

- reports each episode of a missing required item once (``missing``);
- remembers the static layout it sees, so an item evicted from working memory is still
  avoided, and builds the route planner from it (``layout``);
- keeps a stack of the ``goal:deliver:*`` goals (oldest released first, unless a
  dispatcher's ``dispatch:order`` ranks them; deferred ones after the others) and works
  on one at a time; a goal that leaves the board was delivered (``goals``);
- plans the active task as a chain of steps (go to the pick-up dock, pick, go to the
  drop dock, drop), with go-to-charger and charge first when the battery is low or, by
  its drain model, does not cover the rest of the task and the way to a charger after it
  (``delivery``, ``energy``: checked when a task starts, before each go-to step and on
  re-plans; a ``reserve_waived`` event says when, fresh from a full charge, it went on
  only because the reserve was not asked for); follows the executor's
  ``action_done``/``action_failed`` reports to mark steps done or failed, and re-plans
  (keeping done steps, with a ``replan`` event) when a step failed, when an obstacle
  enters the route corridor ahead, when the same action failed twice in a row without
  progress, when the robot made no progress along its route for ``stall_ticks``
  (``stall``), or when a step runs too long (``steps``);
- routes the robot to the current go-to step's target, keeping the robot radius clear
  of shelves and never crossing a forbidden zone, passing moving obstacles or waiting
  for them (``route``), and giving way in a stand-off (``standoff``, ``give_way``);
- watches the active task's progress: ``watchdog_s`` without it raises a ``stalled``
  alarm with its cause, and the task is re-routed, then deferred (the next task is
  served, and it comes back), then abandoned with a reason (``watchdog``,
  ``recovery``); a task cornered in a stand-off, with no spot to give way, is deferred
  when another can be served;
- honours the task protocol (``cabins.warehouse.tasks``): a task another cabin refused
  (``task:refused:<task>``) is not served, one it deferred (``task:deferred:<task>``) not
  before its time, each with a reason and said once in an event (``recovery``);
- writes ``plan`` and ``route`` to the board when they change.

Missing items (``view.missing``, reason other than "absent"; one reaction per episode
of missingness, on the tick the item goes missing):

- ``constraint:*``: ``alarm:constraint_check`` and an ``alarm`` event; the zones last
  seen are routed around as if blocked, and with none ever seen it holds;
- ``safety:*`` and ``pose``: ``hold:no_plan``: no new route (the route is cleared), the
  plan is kept; a missing pose of any reason holds;
- ``goal:*``: ``idle:no_goal``: the route is cleared, the plan and the goal stack kept.

Long-term memory (optional: ``long_term``, a ``runtime.agent.memory.LongTermMemory``, with
a ``memory_scope`` such as ``{"scenario": "warehouse"}``) carries what one run learned
into the next: where the way was blocked (``blocked_spots``). It asks for each fact
through its outbox (``out.remember``); the loop that runs it writes it to the loop's
``long_term`` store (give the loop the same memory, or a ``MemoryWriter`` of it). A
``remembered`` event reports each fact asked for and a ``recalled`` event each route
that memory changed. Without long-term memory the planner behaves exactly as before.

The planner's tuning values are one ``PlannerSettings`` object (``settings``, read-only):
each part that is tuned takes that object, first, and reads its values from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shapely.geometry import LineString

from cabins.planner.blocked_spots import BlockedSpot, BlockedSpots
from cabins.planner.energy import Energy, Stage
from cabins.planner.goals import Goals
from cabins.planner.hold import hold_reason
from cabins.planner.layout import Layout
from cabins.planner.missing import MissingItems
from cabins.planner.recovery import Recovery
from cabins.planner.route import RouteKeeper
from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from cabins.planner.standoff import StandOff
from cabins.planner.steps import Steps, board_plan
from cabins.planner.tracks import Tracks
from cabins.planner.watchdog import Situation, Watchdog
from cabins.warehouse.routing import Route
from runtime.agent.memory import LongTermMemory
from runtime.agent.plan import Plan, ReplanTrigger
from runtime.cabin import Outbox
from runtime.pack import CabinView
from runtime.position import read_xy
from runtime.spec import ContextSpec

__all__ = ["Planner"]


class Planner:
    """Plans deliveries and routes; see the module docstring for what it does each tick.

    ``settings`` tunes it (the defaults when None); ``long_term`` is the memory it
    remembers blocked spots in, within ``memory_scope`` (``{"cabin": spec.name}`` when
    None).
    """

    Settings = PlannerSettings
    """What ``[params]`` in its spec may set (``runtime.settings.settings_from_spec``)."""

    def __init__(
        self,
        spec: ContextSpec,
        settings: PlannerSettings | None = None,
        *,
        long_term: LongTermMemory | None = None,
        memory_scope: Mapping[str, str] | None = None,
    ) -> None:
        settings = PlannerSettings() if settings is None else settings
        if not isinstance(settings, PlannerSettings):
            raise TypeError(f"settings must be PlannerSettings, got {type(settings).__name__}")
        self.spec = spec
        self._settings = settings
        self._spots = BlockedSpots(
            settings, long_term, {"cabin": spec.name} if memory_scope is None else memory_scope
        )
        self._reader = ViewReader(settings)
        self._missing = MissingItems()
        self._layout = Layout(settings)
        self._goals = Goals()
        self._energy = Energy(settings, self._layout, stage=self._stage)
        self._steps = Steps(settings, event_window=spec.event_window, energy=self._energy.short)
        self._tracks = Tracks()
        self._standoff = StandOff(settings, self._tracks)
        self._route = RouteKeeper(
            settings,
            layout=self._layout,
            spots=self._spots,
            standoff=self._standoff,
            energy=self._energy,
            tracks=self._tracks,
        )
        self._watchdog = Watchdog(settings)
        self._recovery = Recovery(settings)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settings(self) -> PlannerSettings:
        """The planner's tuning values (its parts read them from this one object)."""
        return self._settings

    @property
    def long_term(self) -> LongTermMemory | None:
        """The long-term memory the planner remembers blocked spots in, if any."""
        return self._spots.long_term

    @property
    def memory_scope(self) -> Mapping[str, str]:
        """The scope of the facts it recalls and remembers."""
        return self._spots.scope

    @property
    def blocked_spots(self) -> tuple[BlockedSpot, ...]:
        """The blocked spots known: remembered from earlier runs, then learned in this one."""
        return self._spots.spots

    @property
    def plan(self) -> Plan | None:
        """The plan of the active task (None when idle)."""
        return self._steps.plan

    @property
    def task(self) -> str | None:
        """The active task, or None."""
        return self._goals.task

    def board_plan(self) -> dict[str, Any]:
        """The ``plan`` board value (see the contract): task, revision, current, steps."""
        return board_plan(self._steps.plan, self._goals.task)

    def _stage(self) -> Stage:
        """The active task and how many steps were done, across plans and tasks."""
        return self._goals.task, self._steps.progress

    # -- the tick -----------------------------------------------------------------------

    def step(self, view: CabinView, out: Outbox) -> None:
        seen = self._reader.read(view)
        layout, goals, steps, keeper = self._layout, self._goals, self._steps, self._route
        self._standoff.watch(seen)
        self._tracks.observe(seen)
        self._missing.react(seen, len(layout.constraints), out)
        layout.learn(seen)
        current = None if steps.plan is None else steps.plan.current
        self._energy.observe(seen, charging=current is not None and current.action == "charge")
        goals_visible = "goal:*" not in seen.missing
        if goals_visible:
            goals.update(seen)
            self._recovery.observe(seen.requests, goals.pending, out)
        steps.read_events(seen)

        hold = hold_reason(seen, layout)
        if goals_visible:
            self._honour_requests(seen)
            self._choose_task(seen, out)
        replan = self._replan
        if steps.plan is not None and hold is None:
            # waiting at a single lane is no stall; the way up to its entry is watched
            held = keeper.lane_held(seen)
            route, line = (None, None) if held else (keeper.route, keeper.line)
            steps.advance(seen, out, route=route, line=line, replan=replan)

        task = goals.task
        self._standoff.retreat = task is not None and self._must_stay(seen, task)
        route = keeper.desired(
            seen,
            hold,
            plan=steps.plan,
            task=task,
            progress=steps.progress,
            replan=replan,
            out=out,
        )
        route = self._watch(seen, hold, route, out)
        keeper.publish(route, out)
        steps.publish(task, out)
        self._spots.clear(seen, layout.reach, out)
        self._report_waiver(out)

    def _report_waiver(self, out: Outbox) -> None:
        """A ``reserve_waived`` event when the energy check let the robot go on this tick
        only because, fresh from a full charge, the reserve was not asked for (once per
        departure: ``Energy.take_waived``); a robot that runs flat after it shows why."""
        waived = self._energy.take_waived()
        if waived is None:
            return
        out.emit(
            "reserve_waived",
            {
                "task": waived.task,
                "battery": round(waived.battery, 3),
                "need": round(waived.need, 3),
                "need_without_reserve": round(waived.need_without, 3),
                "metres": round(waived.metres, 3),
            },
            tags=("plan",),
        )

    def _honour_requests(self, seen: Seen) -> None:
        """Set the active task aside when another cabin refused or deferred it (the task
        protocol), unless the robot carries its item: it can serve no other task."""
        task = self._goals.task
        if (
            task is not None
            and self._recovery.held(task, seen.time) is not None
            and not self._carried(seen, task)
        ):
            self._set_aside()

    def _choose_task(self, seen: Seen, out: Outbox) -> None:
        before = self._goals.task
        finished, started = self._goals.choose(seen, out, self._recovery)
        if finished:
            self._steps.finish()
            self._watchdog.stop()
            if before is not None:
                self._recovery.forget(before)
        if started is not None:
            self._steps.start(started, seen, out)
            self._watchdog.start(started.task, seen, self._steps.failures)

    def _replan(self, trigger: ReplanTrigger, seen: Seen, out: Outbox) -> Plan | None:
        """Re-plan the active task for ``trigger``, and tell the parts that care: a step
        that made no progress may be a stand-off, the route is planned afresh, and
        long-term memory keeps where an obstacle blocked the way. The plan after it."""
        goal = self._goals.active
        if self._steps.plan is None or goal is None:
            return self._steps.plan
        if trigger.reason == "no_progress":
            current = self._steps.plan.current
            self._standoff.begin(
                seen,
                progress=self._steps.progress,
                waiting=self._route.waiting,
                reach=self._layout.reach,
                target=None if current is None else read_xy(current.data.get("target_xy")),
            )
        if self._steps.replan(trigger, goal, seen, out):
            self._route.forget()
            self._spots.remember(trigger, seen, goal.task, self._layout.reach, out)
        return self._steps.plan

    # -- liveness: the watchdog and its recovery ----------------------------------------

    def _watch(self, seen: Seen, hold: str | None, route: Route, out: Outbox) -> Route:
        """Watch the active task's progress and recover it when it stalls (``watchdog``,
        ``recovery``); the route for this tick after it (none once the task is set
        aside)."""
        task, plan, recovery = self._goals.task, self._steps.plan, self._recovery
        if task is None or plan is None:
            return route
        carried = self._carried(seen, task)
        if self._stuck_aside(seen, task, carried=carried, out=out):
            return self._set_aside()
        keeper = self._route
        if keeper.take_rerouted():  # the other way round a lane, on purpose
            self._watchdog.rebase()
        if self._layout.take_learned():  # more of the floor known: a way may have grown
            self._watchdog.remeasure()
        line = keeper.line if route == keeper.route else None
        if line is None and len(route) >= 2:
            line = LineString(route)
        stalled = self._watchdog.watch(
            seen,
            plan,
            line=line,
            route=route,
            situation=self._situation(hold, plan, route),
            failures=self._steps.failures,
        )
        if stalled is None:
            return route
        remedy = recovery.remedy(task, carried=carried)
        out.emit(
            "alarm",
            {
                "kind": "stalled",
                "level": "alarm",
                "task": task,
                "step": stalled.step,
                "cause": stalled.cause,
                "seconds": stalled.seconds,
                "recovery": remedy,
            },
            tags=("alarm",),
        )
        if remedy == "reroute":
            self._standoff.go_round(self._steps.progress)
            self._replan(ReplanTrigger("stalled", stalled.step, stalled.cause), seen, out)
            self._watchdog.rebase()
            return route
        reason = f"stalled: {stalled.cause}"
        if remedy == "defer":
            recovery.defer(task, reason, seen.time, out)
        else:
            recovery.abandon(task, reason, out)
        return self._set_aside()

    def _stuck_aside(self, seen: Seen, task: str, *, carried: bool, out: Outbox) -> bool:
        """Defer ``task`` (True) when the robot is cornered in a stand-off, or has waited
        ``lane_wait_s`` for a dead end, and another task can be served (not while it
        carries this one's item)."""
        recovery = self._recovery
        cornered, blocked = self._standoff.take_cornered(), self._route.take_lane_blocked()
        if (
            (cornered is None and blocked is None)
            or carried
            or not recovery.can_defer(task)
            or not self._goals.others_ready(recovery, seen.time)
        ):
            return False
        why = (
            f"stand_off: no spot to give way to {cornered}"
            if cornered is not None
            else f"single_lane: a dead end {', '.join(blocked or ())} did not leave"
        )
        recovery.defer(task, why, seen.time, out)
        return True

    def _situation(self, hold: str | None, plan: Plan, route: Route) -> Situation | None:
        """What the planner does this tick, for the watchdog (None while it holds)."""
        if hold is not None or self._route.lane_excused:
            return None  # holding, or waiting for a single lane (within its excuse)
        current = plan.current
        if self._standoff.in_stand_off(self._steps.progress):
            return "stand_off"
        if self._route.waiting:  # for a mover on the way, or at a single lane's entry
            return "waiting_for_mover"
        if current is not None and current.action == "go_to" and not route:
            return "no_route"
        if current is not None and current.action == "charge":
            return "charging"
        return "moving"

    def _must_stay(self, seen: Seen, task: str) -> bool:
        """Whether ``task`` cannot be set aside if the robot is cornered on it: it carries
        the item, or no other task could be served (so it retreats out of the lane)."""
        recovery = self._recovery
        if self._carried(seen, task):
            return True
        return not (recovery.can_defer(task) and self._goals.others_ready(recovery, seen.time))

    def _carried(self, seen: Seen, task: str) -> bool:
        """Whether the robot carries ``task``'s item (by its cargo, else by the plan)."""
        if seen.cargo_known:
            return seen.cargo == task
        plan = self._steps.plan
        done = {s.action for s in plan if s.status == "done"} if plan is not None else set()
        return "pick" in done and "drop" not in done

    def _set_aside(self) -> Route:
        """Stop working on the active task (deferred or abandoned): no plan, no route."""
        self._goals.put_aside()
        self._steps.finish()
        self._watchdog.stop()
        self._standoff.reset()
        self._route.forget()
        return ()
