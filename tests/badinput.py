"""Helpers of the bad-input suites: run a CLI in-process and check that it failed cleanly.

A case is a command line (or a call) and the fragments its error must contain: the bad value
(or option) and what would be valid. A clean failure is exit status 2 with exactly one line
``prog: error: ...`` on stderr (argparse may print its usage lines before it), and no traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

DIR = object()
"""A file content that makes a directory instead."""


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` (``{d}`` is the test's directory), files to create first, and
    the fragments the one error line must contain."""

    id: str
    argv: Sequence[str]
    needles: Sequence[str]
    files: Mapping[str, Any] = field(default_factory=dict)
    xfail: str = ""


def make_files(d: Path, files: Mapping[str, Any]) -> None:
    for name, content in files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if content is DIR:
            p.mkdir()
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def params(cases: Sequence[Case]) -> list[Any]:
    """pytest.param per case, with its id and (for a fix another owner makes) strict xfail."""
    out = []
    for c in cases:
        marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def run_cli(main: Callable[[Sequence[str]], int], argv: Sequence[str],
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``main(argv)`` (argparse errors exit via SystemExit)."""
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def assert_clean_error(rc: int, out: str, err: str, prog: str, needles: Sequence[str]) -> str:
    """Exit status 2, one ``prog...: error:`` line holding every needle, no traceback; returns
    the error line."""
    assert rc == 2, f"exit status {rc}\nstdout: {out}\nstderr: {err}"
    assert "Traceback" not in out + err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ": error: " in ln]
    assert len(errors) == 1, f"want one error line, got:\n{err}"
    line = errors[0]
    assert line.startswith(prog), line
    for ln in lines:
        assert ln is line or ln.startswith(("usage:", " ")), f"unexpected stderr line {ln!r}"
    for n in needles:
        assert n in line, f"{n!r} not in {line!r}"
    return line


def assert_error_names(err: BaseException, needles: Sequence[str]) -> None:
    msg = str(err)
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"
