"""The command-line grammar of faults, kept light so that ``--help`` imports nothing heavy."""

GRAMMAR = """\
fault grammar (--fault, repeatable; ticks count from 0, END is exclusive):
  missing:CABIN:PATTERN@START-END   hide items matching PATTERN from CABIN's view (* = all)
  stale:KEY@START-END               board keys matching KEY stop updating
  dropout[:SENSOR]@START-END        a sensor is silent: pose, velocity, battery, obstacles,
                                    scanner or all (the default)
  map-loss:FEATURE@START-END        map features matching FEATURE vanish from the map
  event-loss:KIND@START-END         events of kinds matching KIND are not written
  crash:CABIN@START[-END]           CABIN raises at START (or every tick of START-END)
  ranges: START-END, START- (to the end), START (one tick)
  e.g. --fault missing:executor:event:action_failed*@100-400 --fault crash:planner@250
"""
