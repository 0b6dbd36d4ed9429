"""A cabin with settings: its tuning values in one frozen, checked ``Settings`` object,
which a spec's ``[params]`` table fills in."""

from runtime import CabinView, ContextSpec, Outbox, Settings
from runtime.settings import Count, Positive


class CrowdSettings(Settings):
    crowd: Count = 3
    """People within the spec's map window at once that make a crowd."""
    gap_s: Positive = 10.0
    """Seconds between two warnings, s."""


class CrowdWatch:
    Settings = CrowdSettings  # the class that reads the spec's [params]

    def __init__(self, spec: ContextSpec, settings: CrowdSettings | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.settings = settings or CrowdSettings()
        self.last_warned = float("-inf")

    def step(self, view: CabinView, out: Outbox) -> None:
        if "pose" in view.missing:
            out.react("pose", "idle:cannot_see", reason=view.missing["pose"])
            return
        people = len(view.nearby_map)
        if people >= self.settings.crowd and view.time - self.last_warned >= self.settings.gap_s:
            out.emit("alarm", {"kind": "crowd", "people": people})
            self.last_warned = view.time
