"""Bit identity: the pinned runs of tests/experiments/golden.py give exactly their recorded
figures (every machine statistic, clock, commit, abort, counter, latency and the PM image).

A speed change must leave every simulated number alone; a failure here names the run and the
first figures that moved. A change meant to move results regenerates the file
(``python -m tests.experiments.golden --write``) and says so in its commit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pmsim.machine import default_backend

from .golden import GOLDEN, RUNS, GoldenRun, measure

EXPECTED: dict[str, Any] = json.loads(GOLDEN.read_text())
PYTHON_SUBSET = RUNS[::6]
"""Runs repeated on the pure-Python engine (slower): one in six, every family represented."""


def _diff(want: Any, got: Any, path: str = "") -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}/{k}: missing" for k in want if k not in got]
        out += [f"{path}/{k}: not in the golden file" for k in got if k not in want]
        for k in want:
            if k in got:
                out += _diff(want[k], got[k], f"{path}/{k}")
        return out
    if want != got:
        return [f"{path}: {want!r} -> {got!r}"]
    return []


def _check(run: GoldenRun, backend: str | None) -> None:
    got = json.loads(json.dumps(measure(run, backend)))
    diffs = _diff(EXPECTED[run.key], got)
    assert not diffs, (f"{run.key} on the {backend or default_backend()} engine moved "
                       f"({len(diffs)} figures):\n" + "\n".join(diffs[:20]))


def test_golden_file_covers_every_run() -> None:
    assert sorted(EXPECTED) == sorted(r.key for r in RUNS)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.key)
def test_bit_identical(run: GoldenRun) -> None:
    _check(run, None)


@pytest.mark.parametrize("run", PYTHON_SUBSET, ids=lambda r: r.key)
def test_bit_identical_python_engine(run: GoldenRun) -> None:
    _check(run, "python")
