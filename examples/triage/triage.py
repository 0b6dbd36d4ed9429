"""A cabin that says which deliveries it will not have done, with a reason: the task
protocol of ``cabins.warehouse.tasks``."""

from cabins.warehouse.tasks import defer_task, refuse_task
from runtime import CabinView, ContextSpec, Outbox


class Triage:
    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.answered: set[str] = set()  # one answer per task: a request stays on the board

    def step(self, view: CabinView, out: Outbox) -> None:
        if "battery" in view.missing:
            out.react("battery", "idle:cannot_see", reason=view.missing["battery"])
            return
        for goal in view.matching("goal:deliver:*").values():
            task = goal["task"]
            if task in self.answered:
                continue
            self.answered.add(task)
            if goal["drop"] == "returns":
                refuse_task(out, task, "returns are another robot's")  # task:refused:<task>
            elif view["battery"] < 0.5:
                defer_task(out, task, "battery low", until=view.time + 30)  # task:deferred:<task>
