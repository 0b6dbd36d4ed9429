"""Running simulations: one run (the harness), checkpoints of it, and campaigns of many."""
