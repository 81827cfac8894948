"""Checks shared by the command lines: output paths (checked before any work, not after it),
the number of worker processes, and lists of names.

Every check raises a :class:`~pmsim.errors.ConfigError` saying what is wrong and how to fix it,
so a command exits with status 2 before it computes anything.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import ConfigError

MAX_JOBS = 256
"""Most worker processes of a command (``--jobs``): more only add start-up time and memory on
any machine pmsim runs on."""


def _probe(d: Path, option: str, value: str) -> None:
    """ConfigError unless a file can be created in the existing directory ``d``."""
    try:
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as e:
        raise ConfigError(f"{option} {value!r}: cannot write in directory '{d}' "
                          f"({e.strerror or e}); choose a writable location") from None


def _existing_ancestor(p: Path) -> Path:
    anc = p
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    return anc


def check_output_file(option: str, path: str | os.PathLike[str] | None,
                      create_parents: bool = False) -> None:
    """ConfigError unless the file ``path`` (given as ``option``) can be written: it is not a
    directory, its directory exists (or, with ``create_parents``, can be created) and is
    writable, and an existing file is writable. Nothing when ``path`` is empty."""
    if not path:
        return
    text = str(path)
    p = Path(text)
    if p.is_dir():
        example = p / ("result" + p.suffix if p.suffix else "result.txt")
        raise ConfigError(f"{option} {text!r} is a directory; give a file path, e.g. "
                          f"{str(example)!r}")
    parent = p.parent
    if not parent.is_dir():
        if parent.exists():
            raise ConfigError(f"{option} {text!r}: '{parent}' is not a directory; give a file in "
                              "an existing directory")
        if not create_parents:
            raise ConfigError(f"{option} {text!r}: directory '{parent}' does not exist; create "
                              "it or choose another path")
        anc = _existing_ancestor(parent)
        if not anc.is_dir():
            raise ConfigError(f"{option} {text!r}: '{anc}' is a file, so directory '{parent}' "
                              "cannot be created; choose another path")
        _probe(anc, option, text)
        return
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"{option} {text!r}: the file is not writable; choose another path")
    _probe(parent, option, text)


def check_output_dir(option: str, path: str | os.PathLike[str] | None) -> None:
    """ConfigError unless ``path`` is a writable directory or can be created as one. Nothing
    when ``path`` is empty."""
    if not path:
        return
    text = str(path)
    d = Path(text)
    if d.exists() and not d.is_dir():
        raise ConfigError(f"{option} {text!r} is a file, not a directory; give a directory "
                          "(created if missing)")
    anc = _existing_ancestor(d)
    if not anc.is_dir():
        raise ConfigError(f"{option} {text!r}: '{anc}' is a file, so the directory cannot be "
                          "created; choose another path")
    _probe(anc, option, text)


def jobs_arg(text: str) -> int:
    """argparse type of ``--jobs``: worker processes, 1..:data:`MAX_JOBS`."""
    cpus = os.cpu_count() or 1
    valid = (f"an integer in 1..{MAX_JOBS} (worker processes; this machine has {cpus} CPUs, "
             "more workers than CPUs only add overhead)")
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; use {valid}") from None
    if not 1 <= v <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"must be {valid}, got {v}")
    return v


jobs_arg.__name__ = "int"


def check_jobs(jobs: object, name: str = "jobs") -> None:
    """ConfigError unless ``jobs`` is None or an int in 1..:data:`MAX_JOBS` (the API's check
    of what ``--jobs`` checks)."""
    if jobs is None:
        return
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        raise ConfigError(f"{name}={jobs!r}: use at least 1 and at most {MAX_JOBS} worker "
                          f"processes, an integer in 1..{MAX_JOBS} (or None for one per CPU)")


def name_list(option: str, values: Sequence[str] | None, example: str = "") -> list[str] | None:
    """Names from a repeated or ``nargs`` option, each value comma- or space-separated; None
    when the option was not given. Given but naming nothing (``--runtimes ''``) is an error,
    not "everything": leave the option out for that."""
    if values is None:
        return None
    out: list[str] = []
    for v in values:
        out += [x for x in v.replace(",", " ").split() if x]
    if not out:
        hint = f", e.g. {option} {example}" if example else ""
        raise ConfigError(f"{option} {' '.join(repr(v) for v in values)} names nothing; list at "
                          f"least one name{hint}, or leave {option} out for the default")
    return out

