"""The agent side of tickwork: memory tiers, the plan DAG and tools for LLM-backed cabins.

Not part of the tick's core: the loop needs only the small ``runtime.longterm``
protocol to write what a cabin asks to remember.
"""
