"""A cabin that keeps state between ticks, and says what it keeps so that a checkpoint can
hold it (``get_state``) and a resumed run can take it back (``set_state``)."""

from runtime import CabinView, ContextSpec, Outbox


class Greeter:
    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.greeted = 0

    def step(self, view: CabinView, out: Outbox) -> None:
        if view.tick % 100 == 0:  # every 5 s at 20 Hz
            self.greeted += 1
            out.emit("hello", {"n": self.greeted})

    def get_state(self) -> dict:  # plain data: JSON values, tuples, numeric arrays
        return {"greeted": self.greeted}

    def set_state(self, data: dict) -> None:  # check it: a checkpoint is input
        if type(data.get("greeted")) is not int:
            raise ValueError(f"not a greeter's state: {data!r}")
        self.greeted = data["greeted"]
