"""The peer anchor: a py_trees tree of 10 behaviours, each reading 2 blackboard keys.

py_trees is the common Python behaviour-tree library for robots; one tick of a
small tree that reads the blackboard is a fair sense of what a tick "should"
cost in Python. The tree is a ``Sequence`` (without memory) of 10 leaves; each
leaf has its own blackboard client with read access to 2 of 20 keys, reads both
and succeeds. The tree is ticked through ``BehaviourTree.tick()``, as an
application would. py_trees is an optional dependency (the ``bench`` extra).
"""

from __future__ import annotations

import time
from importlib import metadata
from typing import Any

from benchmarks.timing import busy, calibrate_busy, summarize

LEAVES = 10
KEYS_PER_LEAF = 2
NAMESPACE = "/tickwork_bench"


def available() -> bool:
    try:
        import py_trees  # noqa: F401
    except ImportError:
        return False
    return True


class Anchor:
    """The anchor tree, set up and ready to tick; ``close`` tears it down."""

    def __init__(self) -> None:
        import py_trees

        class ReadTwo(py_trees.behaviour.Behaviour):
            def __init__(self, name: str, keys: tuple[str, ...]) -> None:
                super().__init__(name)
                self.keys = keys
                self.board = self.attach_blackboard_client(name=name, namespace=NAMESPACE)
                for key in keys:
                    self.board.register_key(key=key, access=py_trees.common.Access.READ)

            def update(self) -> py_trees.common.Status:
                for key in self.keys:
                    self.board.get(key)
                return py_trees.common.Status.SUCCESS

        self._py_trees = py_trees
        writer = py_trees.blackboard.Client(name="writer", namespace=NAMESPACE)
        keys = [f"k{i:02d}" for i in range(LEAVES * KEYS_PER_LEAF)]
        for i, key in enumerate(keys):
            writer.register_key(key=key, access=py_trees.common.Access.WRITE)
            writer.set(key, (float(i), float(i) * 2.0))
        leaves = [
            ReadTwo(f"leaf{j}", tuple(keys[j * KEYS_PER_LEAF : (j + 1) * KEYS_PER_LEAF]))
            for j in range(LEAVES)
        ]
        self.root = py_trees.composites.Sequence("root", memory=False, children=leaves)
        self.tree = py_trees.trees.BehaviourTree(self.root)
        self.tree.setup()
        self.tick = self.tree.tick

    def close(self) -> None:
        self.tree.shutdown()
        self._py_trees.blackboard.Blackboard.clear()


def measure_py_trees(ticks: int, warmup: int = 200) -> dict[str, Any]:
    """Tick the anchor tree ``ticks`` times; its percentiles and a busy control beside it."""
    anchor = Anchor()
    clock = time.perf_counter_ns
    try:
        warm = []
        for _ in range(warmup):
            t0 = clock()
            anchor.tick()
            warm.append(clock() - t0)
        steps = calibrate_busy(float(sorted(warm)[len(warm) // 2]))
        run_ns: list[int] = []
        busy_ns: list[int] = []
        for _ in range(ticks):
            t0 = clock()
            anchor.tick()
            t1 = clock()
            busy(steps)
            busy_ns.append(clock() - t1)
            run_ns.append(t1 - t0)
        status = str(anchor.root.status)
    finally:
        anchor.close()
    return {
        "py_trees_version": metadata.version("py_trees"),
        "tree": f"Sequence of {LEAVES} behaviours, each reading {KEYS_PER_LEAF} blackboard keys",
        "root_status": status,
        "tick": summarize(run_ns).as_dict(),
        "busy_control": summarize(busy_ns).as_dict(),
    }
