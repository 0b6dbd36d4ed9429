"""What the tests share: paths, the edit loop's split of property tests, crashy runs and
Foxglove's reader script."""
