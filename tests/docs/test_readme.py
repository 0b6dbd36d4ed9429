"""The README is a front page: short, with the two commands CI relies on, the example that
``examples/quickstart.py`` holds, and links that lead somewhere."""

from __future__ import annotations

import re

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 200


def test_the_two_commands_are_there_as_ci_runs_them() -> None:
    assert '```sh\npip install -e ".[dev]" && python -m sim run\n```' in README
    assert "```sh\npython -m pytest\n```" in README
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'python -m pip install --quiet -e ".[dev]"' in ci
    assert ci.rstrip().splitlines()[-1] == "python -m pytest"  # the README's test command


def test_the_example_is_the_quickstart_file() -> None:
    """What the README shows is what ``tests/docs/test_examples.py`` runs."""
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) == 1
    source = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    body = source.split('"""', 2)[2].lstrip("\n")
    assert blocks[0] == body


def test_every_link_leads_somewhere() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    for link in local:
        assert (ROOT / link).exists(), link
