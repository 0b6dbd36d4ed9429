"""The warehouse contract: what the simulated world and the cabins agree on.

The world (``sim.world``) writes the board values and lays out the floor; the cabins read
them and route over it. What both sides share lives here and nowhere else:

- ``values``: the board keys, the shapes of their values and one parser for each;
- ``shapes``: scalar shapely geometry made quickly (points, polylines, polygons);
- ``routing``: collision-free routes for a disc robot over a floor, and the narrowest
  aisle it can drive;
- ``clearance``: how far the robot's disc is, or would be, from everything solid;
- ``motion``: how the robot is driven, as the cabins that predict its motion assume it;
- ``energy``: the battery's capacity, drain and charge rate, as the world publishes them;
- ``tasks``: the task protocol, how a cabin refuses or defers a delivery with a reason;
- ``registry``: every board key and event kind the world and the built-in cabins write.

This package imports only ``runtime`` and libraries, never a cabin, so the ground truth
(``sim.world``) can use it without depending on the decision layer
(``tests/docs/test_layout.py`` checks both directions).
"""
