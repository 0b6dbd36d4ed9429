"""A spec's ``[params]`` reach its cabin through the cabin's settings object: the built-in
cabins' tuning settings from their spec files, a user cabin's from its own; a bad
parameter is refused with the spec and the setting named."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runtime import CabinView, ContextSpec, Outbox, load_spec
from runtime.errors import SettingError
from runtime.settings import Settings
from runtime.spec import load_specs
from sim.cli import main
from sim.run.harness import SPECS_DIR, ExtraCabin, build_extra, builtin_cabins


def _with_params(name: str, params: dict[str, object]) -> dict[str, ContextSpec]:
    specs = load_specs(SPECS_DIR)
    return {**specs, name: specs[name].model_copy(update={"params": params})}


def test_the_built_in_cabins_take_their_tuning_from_params() -> None:
    planner, _executor, _monitor = builtin_cabins(
        _with_params("planner", {"watchdog_s": 120.0, "max_deferrals": 3})
    )
    assert planner.settings.watchdog_s == 120.0 and planner.settings.max_deferrals == 3


def test_a_bad_parameter_names_the_spec_and_the_setting() -> None:
    with pytest.raises(SettingError, match=r"spec 'planner' \[params\].*watchdog_sec"):
        builtin_cabins(_with_params("planner", {"watchdog_sec": 120.0}))
    with pytest.raises(SettingError, match=r"spec 'monitor' \[params\]"):
        builtin_cabins(_with_params("monitor", {"episode_gap": "soon"}))


class GreeterSettings(Settings):
    words: str = "hello"
    """What it says."""


@dataclass
class Greeter:
    spec: ContextSpec
    settings: GreeterSettings = field(default_factory=GreeterSettings)
    Settings = GreeterSettings

    @property
    def name(self) -> str:
        return self.spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        out.emit("greeting", {"words": self.settings.words})


class Mute:
    def __init__(self, spec: ContextSpec) -> None:
        self.spec, self.name = spec, spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        pass


def test_a_user_cabin_gets_its_params_as_its_settings(tmp_path: Path) -> None:
    path = tmp_path / "greeter.toml"
    path.write_text('name = "greeter"\n[params]\nwords = "hi"\n', encoding="utf-8")
    spec = load_spec(path)
    built = build_extra(ExtraCabin(spec=spec, factory=Greeter))
    assert isinstance(built, Greeter) and built.settings.words == "hi"
    with pytest.raises(SettingError, match="declares no Settings class"):
        build_extra(ExtraCabin(spec=spec, factory=Mute))


def test_run_refuses_a_spec_with_a_bad_parameter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    specs = tmp_path / "specs"
    shutil.copytree(SPECS_DIR, specs)
    with (specs / "executor.toml").open("a", encoding="utf-8") as f:
        f.write("\n[params]\nno_such_setting = 1\n")
    assert main(["run", "--specs", str(specs), "--ticks", "2"]) == 2
    assert "no_such_setting" in capsys.readouterr().err
