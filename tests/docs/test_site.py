"""The documentation site builds with no Sphinx warning, and the README points at it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BUILT_INDEX = "docs/_build/html/index.html"
"""Where `make docs` puts the entry page (not in git: README links it for local readers)."""

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")


def test_the_site_builds_without_warnings(tmp_path: Path) -> None:
    """Built as `make docs` builds it (warnings as errors), into a temporary directory; one
    test, so that parallel workers do not build it twice."""
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"sphinx-build failed or warned:\n{done.stderr[-8000:]}"
    site = tmp_path / "html"
    for page in ("index", "model", "results", "workloads", "reference/cli", "reference/api-crashfuzz"):
        assert (site / f"{page}.html").is_file(), page
    check_cli_reference(site)
    check_api_reference(site)


def check_cli_reference(site: Path) -> None:
    """Every subcommand of both CLIs has a section with each of its flags (the text is generated
    from the parsers at build time)."""
    from crashfuzz.cli import build_parser as crashfuzz_parser
    from pmsim.cli import build_parser as pmsim_parser

    html = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for cli, build in (("pmsim", pmsim_parser), ("crashfuzz", crashfuzz_parser)):
        parser = build()
        (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        for name, command in sub.choices.items():
            assert f'id="{cli}-{name}"' in html, f"{cli} {name} has no section"
            for action in command._actions:
                for flag in action.option_strings:
                    assert flag in html, f"{cli} {name} {flag} is missing"


def check_api_reference(site: Path) -> None:
    api = "".join(p.read_text(encoding="utf-8") for p in (site / "reference").glob("api-*.html"))
    for name in ("pmsim.Machine", "pmsim.runtimes.mutation.Mutant", "pmsim.runtimes.registry.get_runtime",
                 "pmsim.workloads.base.Workload", "pmsim.experiments.sweep.run_sweep",
                 "crashfuzz.campaign.fuzz", "crashfuzz.campaign.FuzzConfig", "crashfuzz.ablation.ablate"):
        assert f'id="{name}"' in api, name


def test_the_readme_links_the_docs_and_the_notebooks() -> None:
    text = README.read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(([^)#\s]+)\)", text))
    local = {link for link in links if "://" not in link}
    assert {"docs/index.md", BUILT_INDEX} <= local
    assert not [link for link in local - {BUILT_INDEX} if not (ROOT / link).exists()], "dead links"
    notebooks = {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks <= local, f"notebooks the README does not list: {sorted(notebooks - local)}"
