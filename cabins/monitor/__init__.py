"""The monitor cabin: watches the robot and stops it when safety demands.

Each tick it reads only its view and, through its outbox:

- measures the cross-track error of ``pose`` from ``route``, keeps a bounded history of
  it and raises an ``alarm`` {"kind": "deviation"} when the error climbs into the warn
  or alarm band (with hysteresis, so noise on a band edge does not repeat it);
- raises an ``alarm`` when a required reading (``pose``, ``route``) is missing for a
  reason other than "absent": kind ``stale_reading`` when it is stale, else
  ``missing_reading``, and reports the reaction ``alarm:missing_reading``;
- commands ``stop`` while the robot's disc is within ``stop_margin`` of a forbidden zone
  (``safety:forbidden:*`` items, and forbidden zones on its map) and moving towards it,
  or within ``obstacle_margin`` of an obstacle and moving towards it (an obstacle on its
  map, or a disc in the safety scanner's ``safety:scanner`` reading that no obstacle on
  the map covers: a map that lost its people leaves the scanner). A robot moving
  away, alongside or turning on the spot is let go, so it cannot get stuck beside a
  zone; a robot at rest that faces a shape from close by is held, with a free tick now
  and then to start turning away (see ``cabins.monitor.holds``);
- fail-safe: while ``safety:*`` or ``safety:scanner`` is missing for a reason other
  than "absent" (fault, stale, evicted), or a safety item cannot be read, it commands
  ``stop`` every tick and reports the reaction ``stop:fail_safe`` ("absent" means the
  scenario has no forbidden zones, or the robot no scanner, so there is nothing to
  stop for);
- raises alarms on ``cabin_failed`` and ``tick_overrun`` events (one per event), on
  capacity alarms, on speeding inside a speed zone and on a low battery, and an
  ``alarm`` {"kind": "cabin_late"} while an asynchronous cabin is late (a ``late:<cabin>``
  item in view, see ``runtime.asynchronous``);
- acts on two conditions, with the reaction its spec's ``[on_condition]`` declares
  (``CONDITIONS`` lists what it can do for each; the first is the default):
  ``deviation_growing``, the cross-track error in the warn or alarm band and still
  growing (by ``growth`` metres within ``growth_window`` seconds), slows the robot down
  (``slow:deviation``: a ``slow`` command capping the speed at ``slow_speed``) or stops it;
  ``contact_predicted``, the robot's braking path (where it goes if it brakes now at its
  ``max_accel``, keeping its turn rate) bringing its disc within ``contact_margin`` of a
  shelf, a forbidden zone, a wall or a person (on the map or in the scan), commands a
  protective stop (``stop:protective``) or a slow-down. The reaction is reported (a
  ``reaction`` event) when the condition starts and a ``reaction_lifted`` event when it
  has stayed clear for ``clear_after`` seconds; a stop is commanded on the ticks the
  condition holds, a slow-down until it is lifted;
- writes ``monitor:status`` = {"deviation", "level", "estop", "reacting"} when it changes.

Missing readings and the fail-safe are reported on the tick they start (or their reason
changes). Other alarms and emergency stops are reported once per *episode*: an episode
lasts while its condition recurs within ``episode_gap`` seconds (a stopped robot that
creeps on is still the same episode). The ``stop`` command itself is sent every tick
the condition holds. The monitor never raises on bad data: an unreadable value gets an ``alarm``
{"kind": "bad_reading"} naming the key and the value, and unreadable safety data is
treated as missing (fail-safe).

The package, one part per module:

- ``cabin``: ``Monitor``, the facade: ``step`` and the public properties;
- ``settings``: ``MonitorSettings``, every tuning value, checked in one place (each part
  that is tuned takes that object, first, and reads its values from it);
- ``seen``: ``ViewReader`` reads the view once per tick into a ``Seen`` the parts take;
- ``incidents``: the episodes of trouble (bad readings, stops, alarms), one report each;
- ``missing``: missing required readings, and the fail-safe stop;
- ``deviation``: the cross-track error, its bands (``bands``) and history;
- ``guards``: stops for zones, obstacles and the scanner, by the rule in ``holds``;
- ``contact``: the braking-path forecast (``contact_predicted``);
- ``reactions``: starting, keeping and lifting each condition's reaction;
- ``alarms``: alarms on events, speeding, the battery and late cabins;
- ``status``: the ``monitor:status`` write;
- ``names`` and ``parsed``: the shared names, and the parse-once cache.
"""

from cabins.monitor.bands import DeviationBands, Level
from cabins.monitor.cabin import Monitor
from cabins.monitor.names import CONDITIONS, FAIL_SAFE, READING_REACTION, SAFETY, STATUS_KEY
from cabins.monitor.settings import MonitorSettings

__all__ = [
    "CONDITIONS",
    "FAIL_SAFE",
    "READING_REACTION",
    "SAFETY",
    "STATUS_KEY",
    "DeviationBands",
    "Level",
    "Monitor",
    "MonitorSettings",
]
