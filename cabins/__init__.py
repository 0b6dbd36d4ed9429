"""Decision components (cabins): planner, executor, monitor and their helpers."""
