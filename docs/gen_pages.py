"""mkdocs-gen-files script: writes the reference pages generated from the code
(``docs/reference_pages.py``) into the site at build time."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import reference_pages  # noqa: E402

for path, text in reference_pages.all_pages().items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(text)
