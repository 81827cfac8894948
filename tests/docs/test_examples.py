"""Every code example in the docs runs, and every command line in them parses.

The convention (docs/**/*.md and README.md):

* every ```python block runs; the blocks of one page run in order in one namespace, in a fresh
  temporary working directory, each page in a process of its own. A block that must not run
  (an illustrative fragment) is preceded by the line ``<!-- no-run: <reason> -->``;
* every command line of a ```console block (``$ pmsim ...``, ``$ crashfuzz ...``) and every line
  of a plain ``` or shell block that starts with ``pmsim`` or ``crashfuzz`` is parsed by that
  CLI's own argparse parser, without running it: a renamed or removed flag fails here.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

PYTHON = {"python", "py", "python3"}
SHELL = {"", "console", "shell-session", "bash", "sh", "shell"}
CLIS = {"pmsim": "pmsim.cli", "crashfuzz": "crashfuzz.cli"}

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
NO_RUN = re.compile(r"^\s*<!--\s*no-run:(?P<reason>.*?)-->\s*$")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PAGE_TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    """1-based line of the block's first content line in the page."""
    lang: str
    text: str
    no_run: str | None
    """The reason given by a ``<!-- no-run: ... -->`` marker before the block, if any."""


def pages() -> list[Path]:
    """The Markdown pages whose examples are checked: docs/ (not the built site) and README."""
    found = [p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts]
    return sorted(found) + [ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        info = m["info"].strip()
        lang = info.split()[0].lower() if info else ""
        before = i - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        marker = NO_RUN.match(lines[before]) if before >= 0 else None
        body: list[str] = []
        end = i + 1
        while end < len(lines):
            close = lines[end].strip()
            if close.startswith(fence) and set(close) == {fence[0]}:
                break
            body.append(re.sub(f"^ {{0,{indent}}}", "", lines[end]))
            end += 1
        out.append(Block(page, i + 2, lang, "\n".join(body) + "\n",
                         marker["reason"].strip() if marker else None))
        i = end + 1
    return out


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in PYTHON and b.no_run is None]


def example_pages() -> list[Path]:
    return [p for p in pages() if python_blocks(p)]


RUNNER = """
import json, sys, types
main = types.ModuleType("__main__")
sys.modules["__main__"] = main
for path, line, text in json.load(sys.stdin):
    exec(compile("\\n" * (line - 1) + text, path, "exec"), main.__dict__)
"""
"""Runs a page's blocks in order in one module namespace; tracebacks name the page and line."""


def test_the_pages_have_examples() -> None:
    assert python_blocks(ROOT / "README.md"), "the README's examples are found"
    assert len(example_pages()) >= 2


def test_no_run_markers_give_a_reason() -> None:
    bare = [f"{name(b.page)}:{b.line - 1}" for p in pages() for b in blocks(p) if b.no_run == ""]
    assert not bare, f"`<!-- no-run: -->` without a reason before the code fences at {bare}"


@pytest.mark.parametrize("page", example_pages(), ids=name)
def test_python_examples_run(page: Path, tmp_path: Path) -> None:
    todo = [(str(b.page), b.line, b.text) for b in python_blocks(page)]
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(todo), cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=PAGE_TIMEOUT_S)
    assert done.returncode == 0, (
        f"an example of {name(page)} failed (the traceback names the page's line):\n"
        f"{done.stderr[-6000:]}")


def command_lines(block: Block) -> Iterator[tuple[int, str]]:
    """(page line, command) of each pmsim/crashfuzz command line in a shell or plain block."""
    if block.lang not in SHELL:
        return
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        start, text = block.line + i, lines[i].strip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        i += 1
        if block.lang == "console" or text.startswith("$ "):
            if not text.startswith("$ "):
                continue  # output
            text = text[2:].strip()
        words = text.split()
        while words and ENV_ASSIGNMENT.match(words[0]):
            words.pop(0)
        if words[:2] in (["python", "-m"], ["python3", "-m"]):
            words = words[2:]
        if words and words[0] in CLIS:
            yield start, " ".join(words)


def argv_of(command: str) -> list[str]:
    """The arguments of ``command`` up to its first pipe, redirection or separator."""
    command = re.sub(r"(?<=\s)\d+(?=[<>])", "", command)  # 2>&1 is a redirection, not an argument
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    for i, w in enumerate(words):
        if set(w) <= set(lexer.punctuation_chars):
            return words[:i]
    return words


@functools.cache
def parser(cli: str) -> object:
    import importlib

    return importlib.import_module(CLIS[cli]).build_parser()


def parse_error(argv: list[str]) -> str | None:
    """None if the CLI's parser accepts ``argv`` (``--help`` included), else its message."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser(argv[0]).parse_args(argv[1:])  # type: ignore[attr-defined]
    except SystemExit as e:
        if e.code not in (0, None):
            return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else str(e)
    return None


def command_pages() -> list[Path]:
    return [p for p in pages() if any(True for b in blocks(p) for _ in command_lines(b))]


@pytest.mark.parametrize("page", command_pages(), ids=name)
def test_command_lines_parse(page: Path) -> None:
    bad = []
    for block in blocks(page):
        for line, command in command_lines(block):
            if error := parse_error(argv_of(command)):
                bad.append(f"{name(page)}:{line}: `{command}`: {error}")
    assert not bad, "\n".join(bad)


def test_a_removed_flag_is_caught() -> None:
    assert parse_error(argv_of("crashfuzz run --runtime redo --no-such-flag 2>&1 | head")) is not None
    assert parse_error(argv_of("pmsim run --runtime 'dudetx[persist_bw=4]' --txs 10 > out.txt")) is None
    page = Block(ROOT / "x.md", 1, "console", "$ crashfuzz ablate \\\n    --runtime undo\nout\n", None)
    assert list(command_lines(page)) == [(1, "crashfuzz ablate --runtime undo")]
