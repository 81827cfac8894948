"""Sphinx configuration: the pmsim documentation site, built from the Markdown (MyST) pages."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))

import pmsim  # noqa: E402

project = "pmsim"
author = "the pmsim authors"
copyright = "the pmsim authors"
release = version = pmsim.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "pmsim_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "reproduce/results.md", "reproduce-full/results.md",
                    "**/.ipynb_checkpoints"]

myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}

html_theme = "alabaster"
html_title = f"pmsim {release}"
html_static_path: list[str] = []
