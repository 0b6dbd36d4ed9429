"""Faults: what the simulator does to a run on purpose (the model, its grammar, the injector)."""
