"""The warehouse floor as ROS 2 sees it: an occupancy grid and markers, in the ``map`` frame.

``occupancy_grid`` rasterises the floor into a ``nav_msgs/OccupancyGrid``: a ring of
one cell around the floor is its walls, and each cell holds ``OCCUPIED`` (100: a wall, or
a cell that shares any point, its edge included, with a shelf), ``FORBIDDEN`` (90: its
centre in a forbidden zone; a planner that reads 65 and up as occupied keeps out), ``SLOW``
(20: its centre in a speed zone; still free) or ``FREE`` (0). Row 0 is the southern edge,
column 0 the western.

``layout_markers`` is the static floor as a ``visualization_msgs/MarkerArray`` (shelves,
zones, docks, chargers, their names, and the robot's disc locked to ``base_link``);
``mover_markers`` the people and forklifts where they are now, one marker each with a
stable id, so that each tick's array replaces the last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import shapely
from shapely.geometry import Polygon

from sim.run.ros2_defs import MARKER_TYPES
from sim.run.view import CHARGER, DOCK, FORBIDDEN, FORKLIFT, PERSON, ROBOT, SHELF, SPEED_ZONE
from sim.world.scenario import Scenario
from sim.world.world import ObstacleState

FREE, SLOW, FORBIDDEN_CELL, OCCUPIED = 0, 20, 90, 100
MAP_FRAME, ODOM_FRAME, BASE_FRAME = "map", "odom", "base_link"
SHELF_HEIGHT = 1.0
HEIGHTS = {"person": 1.7, "forklift": 2.0}


def grid_shape(scenario: Scenario, resolution: float) -> tuple[int, int, float, float]:
    """(width, height, origin x, origin y) of the grid: the floor and its ring of walls."""
    f = scenario.floor
    width = math.ceil((f.max_x - f.min_x) / resolution - 1e-9) + 2
    height = math.ceil((f.max_y - f.min_y) / resolution - 1e-9) + 2
    return width, height, f.min_x - resolution, f.min_y - resolution


def _cells(
    grid: np.ndarray[Any, np.dtype[np.int8]],
    shape: Polygon,
    value: int,
    origin: tuple[float, float],
    resolution: float,
    *,
    touching: bool = False,
) -> None:
    """Set ``value`` in the cells whose centre is in ``shape``, or with ``touching`` that
    share any point with it (only where it is higher)."""
    x0, y0, x1, y1 = shape.bounds
    c0 = max(0, math.floor((x0 - origin[0]) / resolution))
    c1 = min(grid.shape[1], math.ceil((x1 - origin[0]) / resolution) + 1)
    r0 = max(0, math.floor((y0 - origin[1]) / resolution))
    r1 = min(grid.shape[0], math.ceil((y1 - origin[1]) / resolution) + 1)
    if c0 >= c1 or r0 >= r1:
        return
    xs = origin[0] + (np.arange(c0, c1) + 0.5) * resolution
    ys = origin[1] + (np.arange(r0, r1) + 0.5) * resolution
    gx, gy = np.meshgrid(xs, ys)
    if touching:
        half = resolution / 2
        inside = shapely.intersects(shape, shapely.box(gx - half, gy - half, gx + half, gy + half))
    else:
        inside = shapely.contains_xy(shape, gx, gy)
    block = grid[r0:r1, c0:c1]
    block[inside] = np.maximum(block[inside], value)


def occupancy_grid(
    scenario: Scenario, *, resolution: float, header: dict[str, Any], load_time: dict[str, int]
) -> Any:
    """The ``nav_msgs/OccupancyGrid`` of the floor (see the module's docstring)."""
    width, height, ox, oy = grid_shape(scenario, resolution)
    grid = np.full((height, width), FREE, dtype=np.int8)
    grid[0, :] = grid[-1, :] = grid[:, 0] = grid[:, -1] = OCCUPIED
    origin = (ox, oy)
    for speed in scenario.speed_zones:
        _cells(grid, speed.shape, SLOW, origin, resolution)
    for zone in scenario.forbidden_zones:
        _cells(grid, zone.shape, FORBIDDEN_CELL, origin, resolution)
    for shelf in scenario.shelves:
        _cells(grid, shelf.shape, OCCUPIED, origin, resolution, touching=True)
    return {
        "header": header,
        "info": {
            "map_load_time": load_time,
            "resolution": resolution,
            "width": width,
            "height": height,
            "origin": _pose(ox, oy),
        },
        "data": grid.ravel().tolist(),
    }


def _pose(x: float, y: float, z: float = 0.0, theta: float = 0.0) -> dict[str, Any]:
    return {
        "position": {"x": float(x), "y": float(y), "z": float(z)},
        "orientation": {"x": 0.0, "y": 0.0, "z": math.sin(theta / 2), "w": math.cos(theta / 2)},
    }


def _marker(
    header: dict[str, Any], ns: str, marker_id: int, kind: str, colour: Any, **fields: Any
) -> dict[str, Any]:
    marker: dict[str, Any] = {
        "header": header,
        "ns": ns,
        "id": marker_id,
        "type": MARKER_TYPES[kind],
        "action": 0,
        "pose": _pose(0.0, 0.0),
        "scale": {"x": 1.0, "y": 1.0, "z": 1.0},
        "color": dict(colour),
        "lifetime": {"sec": 0, "nanosec": 0},
        "frame_locked": False,
        "points": [],
        "colors": [],
        "text": "",
    }
    marker.update(fields)
    return marker


def _triangles(shape: Polygon, z: float) -> list[dict[str, float]]:
    points: list[dict[str, float]] = []
    for tri in shapely.get_parts(shapely.constrained_delaunay_triangles(shape)):
        points.extend({"x": x, "y": y, "z": z} for x, y in list(tri.exterior.coords)[:3])
    return points


def _disc(
    header: dict[str, Any], ns: str, marker_id: int, colour: Any, xy: Sequence[float], **size: float
) -> dict[str, Any]:
    radius, height = size["radius"], size["height"]
    return _marker(
        header,
        ns,
        marker_id,
        "CYLINDER",
        colour,
        pose=_pose(xy[0], xy[1], height / 2),
        scale={"x": 2 * radius, "y": 2 * radius, "z": height},
    )


def _label(header: dict[str, Any], marker_id: int, text: str, x: float, y: float, z: float) -> Any:
    return _marker(
        header,
        "labels",
        marker_id,
        "TEXT_VIEW_FACING",
        {"r": 0.1, "g": 0.1, "b": 0.1, "a": 1.0},
        pose=_pose(x, y, z),
        scale={"x": 0.0, "y": 0.0, "z": 0.35},
        text=text,
    )


def layout_markers(scenario: Scenario, *, header: dict[str, Any], robot: dict[str, Any]) -> Any:
    """The static floor as one ``visualization_msgs/MarkerArray`` in ``header``'s frame;
    ``robot`` is the header of the robot's disc (``base_link``, locked to its frame)."""
    markers: list[dict[str, Any]] = []
    labels: list[tuple[str, float, float, float]] = []
    areas = [
        ("shelves", [(s.id, s.shape) for s in scenario.shelves], SHELF, SHELF_HEIGHT),
        ("forbidden_zones", [(z.id, z.shape) for z in scenario.forbidden_zones], FORBIDDEN, 0.01),
        ("speed_zones", [(z.id, z.shape) for z in scenario.speed_zones], SPEED_ZONE, 0.01),
    ]
    for ns, shapes, colour, z in areas:
        for index, (name, shape) in enumerate(shapes):
            markers.append(
                _marker(header, ns, index, "TRIANGLE_LIST", colour, points=_triangles(shape, z))
            )
            centre = shape.representative_point()
            labels.append((name, centre.x, centre.y, z + 0.3))
    spots = [
        ("docks", [(d.id, d.x, d.y) for d in scenario.docks], DOCK),
        ("chargers", [(c.id, c.x, c.y) for c in scenario.chargers], CHARGER),
    ]
    for ns, places, colour in spots:
        for index, (name, x, y) in enumerate(places):
            markers.append(_disc(header, ns, index, colour, (x, y), radius=0.3, height=0.05))
            labels.append((name, x, y, 0.6))
    markers.extend(_label(header, i, *label) for i, label in enumerate(labels))
    body = _disc(robot, "robot", 0, ROBOT, (0.0, 0.0), radius=scenario.robot.radius, height=0.4)
    body["frame_locked"] = True
    markers.append(body)
    return {"markers": markers}


def mover_markers(
    scenario: Scenario, obstacles: Sequence[ObstacleState], *, header: dict[str, Any]
) -> Any:
    """The people and forklifts where they are, one disc each (namespace ``people`` or
    ``forklifts``, id their index in the scenario)."""
    markers = []
    for index, (spec, state) in enumerate(zip(scenario.moving_obstacles, obstacles, strict=True)):
        person = spec.kind == "person"
        markers.append(
            _disc(
                header,
                "people" if person else "forklifts",
                index,
                PERSON if person else FORKLIFT,
                (state.x, state.y),
                radius=spec.radius,
                height=HEIGHTS[spec.kind],
            )
        )
    return {"markers": markers}
