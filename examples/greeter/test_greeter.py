"""The greeter's state goes through a checkpoint and comes back whole."""

from pathlib import Path

from greeter import Greeter

from runtime import load_spec
from runtime.testing import round_trip_state

SPEC = load_spec(Path(__file__).with_name("greeter.toml"))


def test_its_state_survives_a_checkpoint() -> None:
    cabin = Greeter(SPEC)
    cabin.greeted = 41
    assert round_trip_state(cabin, Greeter(SPEC)).greeted == 41
