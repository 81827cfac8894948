"""The README's promises a new user acts on: the notebooks open after its commands, and no
table of numbers is typed by hand (numbers come from a command the reader runs)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NUMBER = re.compile(r"^[-+]?\d[\d,.]*\s*(%|x|ns|s|B|tx/s|k?tx/s)?$")
"""A table cell that is a measured figure (a count or a number with a unit)."""


def table_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not re.fullmatch(r"\|[-:| ]+\|\s*", line):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_the_readme_has_no_hand_typed_table_of_numbers() -> None:
    numeric = [r for r in table_rows(README.read_text(encoding="utf-8"))
               if any(NUMBER.match(c) for c in r)]
    assert not numeric, f"README tables with measured figures (generate them or drop them): {numeric}"


def test_the_guides_have_no_hand_typed_table_of_numbers() -> None:
    pages = [*sorted((ROOT / "docs" / "guides").glob("*.md")), ROOT / "docs" / "workloads.md",
             ROOT / "docs" / "index.md"]
    bad = {p.name: r for p in pages for r in table_rows(p.read_text(encoding="utf-8"))
           if any(NUMBER.match(c) for c in r)}
    assert not bad, bad


def test_the_notebooks_open_after_the_readmes_commands() -> None:
    """The README names `make lab`; the target installs the notebooks extra, which brings
    JupyterLab, and opens notebooks/ in it."""
    text = README.read_text(encoding="utf-8")
    assert "make lab" in text and ".[notebooks]" in text
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^lab:.*?(?=^\S|\Z)", make, re.S | re.M)
    assert target and "jupyter lab notebooks/" in target.group(0)
    stamp = re.search(r"^lab: (\S+)", make, re.M)
    assert stamp and re.search(rf"^{re.escape(stamp.group(1))}:.*\n\t.*install.*\.\[notebooks\]",
                               make, re.M)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["notebooks"]
    assert any(d.startswith("jupyterlab") for d in extras)
