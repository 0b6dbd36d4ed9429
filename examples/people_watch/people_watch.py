"""A cabin that watches for people near the robot."""

from runtime import CabinView, ContextSpec, Outbox


class PeopleWatch:
    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.near: frozenset[str] = frozenset()

    def step(self, view: CabinView, out: Outbox) -> None:
        if "pose" in view.missing:  # stale, evicted or hidden: say so, do nothing
            out.react("pose", "idle:cannot_see", reason=view.missing["pose"])
            return
        near = frozenset(f.id for f in view.nearby_map)
        for person in sorted(near - self.near):  # only people who just came close
            out.emit("alarm", {"kind": "people_near", "who": person})
        self.near = near
