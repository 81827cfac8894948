"""Local Sphinx extension for the pmsim docs.

- ``{cli-help} pmsim`` (or ``crashfuzz``): the ``--help`` text of a CLI and of each of its
  subcommands, generated at build time from the CLI's own argparse parser, so the reference
  cannot drift from the code.
- The measured-row tables that ``pmsim reproduce`` writes beside docs/results.md
  (``reproduce/<experiment>.md``, no title of their own) become pages that results.md links
  to: a title and ``orphan`` front matter are added as they are read, the files stay as
  generated.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive

HELP_WIDTH = 100
"""Column width of the generated help text (argparse otherwise follows the terminal)."""

CLIS = {"pmsim": "pmsim.cli", "crashfuzz": "crashfuzz.cli"}


def build_parser(cli: str) -> argparse.ArgumentParser:
    """The argparse parser of ``cli`` (``pmsim`` or ``crashfuzz``), built by the CLI itself."""
    parser: argparse.ArgumentParser = importlib.import_module(CLIS[cli]).build_parser()
    return parser


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of ``parser``, by name, in the order the CLI declares them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def help_text(parser: argparse.ArgumentParser) -> str:
    """``parser``'s ``--help`` output at a fixed width."""
    parser.formatter_class = functools.partial(parser.formatter_class, width=HELP_WIDTH)
    return parser.format_help().rstrip()


class CliHelp(Directive):
    """Sections with the ``--help`` text of a CLI and each of its subcommands."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        cli = self.arguments[0]
        if cli not in CLIS:
            raise self.error(f"unknown CLI {cli!r}; known: {', '.join(CLIS)}")
        parser = build_parser(cli)
        document = self.state.document
        out: list[nodes.Node] = [nodes.literal_block(text=help_text(parser), language="text")]
        for name, sub in subcommands(parser).items():
            title = f"{cli} {name}"
            section = nodes.section(ids=[nodes.make_id(title)], names=[nodes.fully_normalize_name(title)])
            section += nodes.title(text=title)
            section += nodes.literal_block(text=help_text(sub), language="text")
            document.note_implicit_target(section, section)
            out.append(section)
        return out


PAGES = {"reproduce": "results.md", "reproduce-full": "results-full.md"}
"""Each directory of saved rows and the results page (quick, full scale) that links into it."""


@functools.cache
def _experiment_titles(results: Path, folder: str) -> dict[str, str]:
    """Experiment stem -> its title, read from the experiments tables of a results page."""
    row = re.compile(r"^\| (?P<title>[^|]+) \| (?P<source>[^|]*) \| \d+ \| \[md\]\("
                     + re.escape(folder) + r"/(?P<stem>[^)]+)\.md\)")
    titles = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        if m := row.match(line):
            titles[m["stem"]] = m["title"].strip()
    return titles


def _title_reproduce_tables(app: Any, docname: str, source: list[str]) -> None:
    folder = docname.split("/", 1)[0]
    if folder not in PAGES or "/" not in docname:
        return
    page = PAGES[folder]
    stem = docname.removeprefix(folder + "/")
    if stem.startswith("scoreboard-"):
        paper = stem.removeprefix("scoreboard-")
        title, what = f"Scoreboard: {paper}", f"The claims scoreboard of paper `{paper}`"
    elif stem == "unified":
        title, what = "Unified comparison", "The unified comparison of every protocol"
    else:
        title = _experiment_titles(Path(app.srcdir) / page, folder).get(stem, stem)
        what = f"Measured rows of experiment `{stem}`"
    source[0] = (f"---\norphan: true\n---\n# {title}\n\n{what}, as written by `pmsim reproduce` "
                 f"(see [the results](../{page})).\n\n{source[0]}")


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("cli-help", CliHelp)
    app.connect("source-read", _title_reproduce_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
