"""The headless warehouse simulator: scenarios, the world and the `python -m sim` CLI."""
