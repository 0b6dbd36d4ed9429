"""The warehouse's registry: every board key and event kind the simulator and the built-in
cabins write, with its type, unit and writer, so ``check-spec`` catches a misspelt key or
kind (``robot:limit``, ``safety:scaner``, ``giveway``) and the reference tables come from
one place.

``tests/cabins/warehouse/test_registry.py`` runs the simulator (with faults, deferrals and
an LLM dispatcher) and checks that everything written is registered here, so this list
cannot drift from the code.
"""

from __future__ import annotations

from typing import Final

from runtime.registry import BoardEntry, EventEntry, Registry

__all__ = ["BOARD", "CHARGE_REPLANS", "EVENTS", "MAP_KINDS", "WAREHOUSE"]

CHARGE_REPLANS: Final = frozenset({"low_battery", "lane_wait_drained", "give_way_drained"})
"""The ``replan`` reasons with which the planner sends the robot to charge first: the
battery is low or does not cover the rest of the task (``low_battery``), a wait for a
single lane (``lane_wait_drained``) or a give-way and the way back (``give_way_drained``).
The run summary and the doctor count them."""

_W, _P, _E, _M, _D = "world", "planner", "executor", "monitor", "dispatcher cabin"
_T = "any cabin (task protocol)"
_A = "agent cabins"

BOARD: tuple[BoardEntry, ...] = (
    BoardEntry("pose", "(x, y, theta)", "m, m, rad", _W, "the sensed pose, with a ttl"),
    BoardEntry("velocity", "(v, w)", "m/s, rad/s", _W, "forward speed and turn rate, with a ttl"),
    BoardEntry("battery", "float", "fraction [0, 1]", _W, "the charge left"),
    BoardEntry("battery:low", "float", "fraction [0, 1]", _W, "charge below which to charge"),
    BoardEntry("cargo", "str | None", "task id", _W, "the task whose load the robot carries"),
    BoardEntry("action:last", "ActionOutcome", "-", _W, "the latest pick/drop/charge outcome"),
    BoardEntry("world:bounds", "(x0, y0, x1, y1)", "m", _W, "the floor's bounds"),
    BoardEntry("robot:radius", "float", "m", _W, "the robot's disc"),
    BoardEntry(
        "robot:limits", "RobotLimits", "m/s, m/s², ...", _W, "speed, braking, battery figures"
    ),
    BoardEntry("acceptance", "Acceptance", "m, rad", _W, "the pick/drop/charge predicate"),
    BoardEntry("docks", "{id: (x, y)}", "m", _W, "dock positions"),
    BoardEntry("chargers", "{id: (x, y)}", "m", _W, "charger positions"),
    BoardEntry("goal:deliver:*", "DeliverGoal", "-", "world (dispatch)", "a delivery to make"),
    BoardEntry("safety:scanner", "Scanner", "m", _W, "people and vehicles near, with a ttl"),
    BoardEntry("safety:forbidden:*", "Zone", "m", _W, "ground the robot must never touch"),
    BoardEntry("constraint:speed:*", "Zone", "m/s", _W, "a speed limit within a polygon"),
    BoardEntry("plan", "Plan", "-", _P, "the active task's steps"),
    BoardEntry("route", "((x, y), ...)", "m", _P, "the route to the current step's target"),
    BoardEntry("retry:mode", "str", "-", _E, "normal or conservative retries"),
    BoardEntry("monitor:status", "{deviation, level, estop, reacting}", "-", _M, "its state"),
    BoardEntry(
        "dispatch:order", "(task, ...)", "-", f"{_D}, {_A}", "the order to make deliveries in"
    ),
    BoardEntry("late:*", "LateNotice", "-", "runtime", "an asynchronous cabin is late"),
    BoardEntry(
        "task:refused:*", "{task, reason, cabin}", "-", _T, "a cabin will not have the task done"
    ),
    BoardEntry(
        "task:deferred:*",
        "{task, reason, cabin, until}",
        "s (until)",
        _T,
        "a cabin wants the task later (until: none = while the key stays)",
    ),
)

_PLAN = ("task", "step")
_ALARM_FIELDS: tuple[str, ...] = ("kind", "level", "cabin", "key", "reason", "battery")
_ALARM_FIELDS += ("threshold", *_PLAN, "error_type", "seq", "tick", "cause")
_ALARM_FIELDS += ("target", "movers", "seconds", "dead_end")  # long_lane_wait
_LLM_OUTCOME_FIELDS = (
    *("cabin", "stopped", "answer", "refusal", "rounds", "tool_calls", "tool_errors"),
    *("finish_reason", "notes_written", "task", "truncated", "repeated_actions", "error"),
    *("queued", "lost"),
)
EVENTS: tuple[EventEntry, ...] = (
    EventEntry("action_done", ("action", "attempt", "step", "task"), _E, "an action succeeded"),
    EventEntry(
        "action_failed",
        ("action", "attempt", "final", "reason", "step", "task"),
        _E,
        "an action failed (final: no retry left)",
    ),
    EventEntry(
        "alarm",
        _ALARM_FIELDS,
        "monitor, planner, LLM and agent cabins",
        "an alarm; kind names it (deviation, bad_reading, stalled, long_lane_wait, "
        "low_battery, ...; an LLM "
        "cabin's llm_refusal, llm_permanent_error with its cause, llm_step_budget; an agent "
        "cabin's agent_turn_failed, its reason the turn's outcome)",
    ),
    EventEntry(
        "emergency_stop", ("reason", "obstacle", "distance", "missing", "pattern"), _M, "a stop"
    ),
    EventEntry(
        "reaction",
        (
            *("cabin", "pattern", "condition", "reaction", "reason", "tick"),
            *("with", "gap", "speed", "stopping"),
        ),
        "cabins",
        "a cabin reacted to a missing item or a condition (for contact_predicted, what it "
        "would touch, the gap, the speed and the braking path's length)",
    ),
    EventEntry(
        "reaction_lifted", ("condition", "reaction", "since", "lasted"), _M, "a reaction ended"
    ),
    EventEntry("task_started", ("task", "steps", "revision"), _P, "a delivery's plan began"),
    EventEntry("plan_done", ("tasks_done",), _P, "every task it could serve is done"),
    EventEntry(
        "replan",
        ("reason", "detail", "revision", *_PLAN),
        f"{_P}, {_A}",
        "the route or plan changed (an agent's model revised its plan)",
    ),
    EventEntry(
        "wait_for_obstacles",
        ("obstacles", "reason", "around", "lane", "way", *_PLAN),
        _P,
        "it holds for a mover",
    ),
    EventEntry(
        "let_pass",
        ("mover", "lane", "waited", "movers", *_PLAN),
        _P,
        "out of patience at a through lane's entry (waited seconds), it lets a mover coming "
        "at the way in pass first, 10 s more at most (the lane's movers are those it waited for)",
    ),
    EventEntry("give_way", ("obstacle", "to", *_PLAN), _P, "it backs off to a give-way spot"),
    EventEntry(
        "single_lane",
        ("obstacles", "choice", "way", "other", *_PLAN),
        _P,
        "it takes the other way round a single lane a mover contests",
    ),
    EventEntry(
        "reserve_waived",
        ("task", "battery", "need", "need_without_reserve", "metres"),
        _P,
        "fresh from a full charge, it goes on without the energy reserve it would charge for",
    ),
    EventEntry(
        "task_deferred",
        ("task", "reason", "until", "cabin"),
        _P,
        "a task set aside: blocked, or deferred by a cabin (named)",
    ),
    EventEntry("task_resumed", ("task",), _P, "a deferred or refused task taken up again"),
    EventEntry(
        "task_refused", ("task", "cabin", "reason"), _P, "a cabin refused a task; it is not served"
    ),
    EventEntry("task_abandoned", ("task", "reason"), _P, "a task given up, with why"),
    EventEntry("recalled", ("task", "step"), _P, "long-term memory steered a route"),
    EventEntry("memory_written", ("content", "stored"), "simulator", "a memory was stored"),
    EventEntry("fault", ("fault", "kind", "phase", "start", "end", "tick"), "simulator", "fault"),
    EventEntry("collision", ("total", "tick", "obstacle"), "simulator", "the robot hit something"),
    EventEntry("safety_violation", ("tick", "total"), "simulator", "it touched forbidden ground"),
    EventEntry(
        "llm_outcome",
        _LLM_OUTCOME_FIELDS,
        "LLM cabins",
        "a model decision; stopped: answer, refusal, error, max_steps, step_budget, ...",
    ),
    EventEntry(
        "agent_step",
        ("cabin", "task", "step", "status", "revision", "iterations", "reason", "detail"),
        _A,
        "a step of an agent turn ran: done, or failed (tool_failed, same_action_twice, ...)",
    ),
    EventEntry(
        "agent_turn",
        (
            *("cabin", "task", "goal", "outcome", "answer", "refusal", "detail", "error"),
            *("steps", "revisions", "calls", "remembered"),
        ),
        _A,
        "an agent turn ended; outcome: answer, refusal, permanent_error, budget_spent, ...",
    ),
    EventEntry(
        "llm_max_steps",
        ("cabin", "max_steps", "tool_calls", "last_tools"),
        "LLM cabins",
        "a decision ran out of rounds",
    ),
)

MAP_KINDS = ("shelf", "forbidden", "speed_zone", "dock", "charger", "obstacle")
"""Feature kinds on the warehouse map (ids ``shelf:*``, ``zone:*``, ``dock:*``, ...)."""

WAREHOUSE = Registry(
    board=BOARD,
    map_kinds=MAP_KINDS,
    map_prefixes=("shelf", "zone", "dock", "charger", "obstacle"),
).extended(events=EVENTS)
"""The runtime's event kinds and the warehouse's keys, kinds and map features."""
