"""JSON forms of frozen values: how working sets, events and board values leave the process.

``to_json`` turns a frozen value into plain JSON (tuples and lists become arrays,
mappings objects) and tags what plain JSON cannot say: map features, events,
shapely geometries (exact, as hex WKB), numpy arrays, non-finite floats and
mappings with non-string keys. ``from_json`` reads that back into the frozen
value: a recording can feed a cabin exactly what it saw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import shapely

from runtime.cabin_map import Feature
from runtime.freeze import FrozenDict, freeze
from runtime.log import Event
from runtime.scratchpad import Note

_TAGS = ("$feature", "$event", "$note", "$wkb", "$ndarray", "$float", "$pairs", "$set", "$repr")


def to_json(value: Any) -> Any:
    """A JSON-able form of a frozen value (mapping order kept)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value) and not any(k in _TAGS for k in value):
            return {k: to_json(v) for k, v in value.items()}  # keep order: cabins may rely on it
        return {"$pairs": [[to_json(k), to_json(v)] for k, v in value.items()]}
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, Feature):
        return {
            "$feature": {
                "id": value.id,
                "kind": value.kind,
                "tags": sorted(value.tags),
                "props": to_json(value.props),
                "wkb": value.geometry.wkb_hex,
            }
        }
    if isinstance(value, Event):
        return {
            "$event": {
                "seq": value.seq,
                "stamp": value.stamp,
                "kind": value.kind,
                "tags": sorted(value.tags),
                "data": to_json(value.data),
            }
        }
    if isinstance(value, Note):
        return {
            "$note": {
                "key": value.key,
                "value": to_json(value.value),
                "description": value.description,
                "task": value.task,
                "seq": value.seq,
            }
        }
    if isinstance(value, (set, frozenset)):
        return {"$set": sorted((to_json(v) for v in value), key=repr)}
    if isinstance(value, np.ndarray):
        return {"$ndarray": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return to_json(value.item())
    if hasattr(value, "wkb_hex") and type(value).__module__.startswith("shapely"):
        return {"$wkb": value.wkb_hex}
    if hasattr(value, "model_dump"):
        return to_json(value.model_dump())
    return {"$repr": repr(value)}


def from_json(data: Any) -> Any:
    """The frozen value ``to_json`` was given (models come back as mappings)."""
    return freeze(_decode(data))


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return tuple(_decode(v) for v in data)
    if not isinstance(data, dict):
        return data
    if len(data) >= 1:
        if "$feature" in data:
            f = data["$feature"]
            return Feature(
                f["id"],
                shapely.from_wkb(bytes.fromhex(f["wkb"])),
                f["kind"],
                frozenset(f["tags"]),
                _decode(f["props"]),
            )
        if "$event" in data:
            e = data["$event"]
            return Event(
                e["seq"], e["stamp"], e["kind"], frozenset(e["tags"]), freeze(_decode(e["data"]))
            )
        if "$note" in data:
            n = data["$note"]
            return Note(
                n["key"], freeze(_decode(n["value"])), n["description"], n["task"], n["seq"]
            )
        if "$wkb" in data:
            return shapely.from_wkb(bytes.fromhex(data["$wkb"]))
        if "$ndarray" in data:
            return np.asarray(data["$ndarray"], dtype=data["dtype"])
        if "$float" in data:
            return float(data["$float"])
        if "$pairs" in data:
            return FrozenDict({_decode(k): _decode(v) for k, v in data["$pairs"]})
        if "$set" in data:
            return frozenset(_decode(v) for v in data["$set"])
        if "$repr" in data:
            return data["$repr"]
    return FrozenDict({k: _decode(v) for k, v in data.items()})
