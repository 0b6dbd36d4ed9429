"""Measured comparisons of tickwork: tick cost against the seed's naive design and py_trees.

``python -m benchmarks [--quick]`` builds synthetic worlds of several sizes from a
seeded generator, times the runtime's freeze plus three views beside a faithful
reference of the seed's algorithm, a null-tick control and a py_trees tree, runs
the default simulator scenario, and writes ``benchmarks/results/latest.json`` and
``latest.md``. Nothing here is imported by ``runtime``, ``cabins`` or ``sim``, and
no test asserts a time.
"""
