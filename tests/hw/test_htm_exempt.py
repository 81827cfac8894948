"""Conflict-exempt lines (dudetx-decoupled.md §5: "HTM ignores conflicts on designated
addresses"): their semantics on each engine, and the C engine against the reference on random
transactional programs in which some hot lines are exempt."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsim.cache import native
from pmsim.errors import ConfigError
from pmsim.hw.engines.reference import FunctionalEngine, PyEngine
from pmsim.hw.htm import EXEMPT_MAX, XABORT_CONFLICT

from . import test_htm_differential as d
from .engines.test_differential import EXAMPLES, PM_BASE, tiny
from .test_htm_differential import c_engine, check, programs

ENGINES = ["py", "fpy"] + (["c", "fc"] if native.available() else [])
CTR = PM_BASE + 64 * 2  # a hot line of the random programs


def engine(name: str, cfg: Any) -> Any:
    if name == "py":
        return PyEngine(cfg)
    if name == "fpy":
        return FunctionalEngine(cfg)
    return c_engine(cfg, timed=name == "c")


@pytest.mark.parametrize("name", ENGINES)
def test_fetch_and_add_on_an_exempt_line_never_conflicts(name: str) -> None:
    """Two live transactions both fetch-and-add an exempt counter: both commit, the adds are
    visible at once and stay when a transaction aborts later; a non-exempt word conflicts."""
    e = engine(name, tiny(3, "pdom1", "modelled"))
    e.htm_exempt(CTR)
    x = PM_BASE + 64 * 40
    e.xbegin(0)
    e.xbegin(1)
    for tid in (0, 1):
        old = e.load(tid, CTR)
        assert e.cas(tid, CTR, old, old + 1) == old
    assert e.load(2, CTR) == 2  # visible outside both transactions, not buffered
    e.store(2, CTR + 8, 7)  # a plain store to the exempt line aborts nobody
    assert e.xstatus(0) == e.xstatus(1) == 0
    e.store(0, x, 1)
    e.load(1, x)  # the requester wins: thread 0 aborts
    assert e.xstatus(0) & XABORT_CONFLICT
    assert e.xend(0) != 0
    assert e.xend(1) == 0
    assert e.load(2, CTR) == 2  # thread 0's add is not rolled back
    e.reset_volatile()
    e.xbegin(0)
    e.xbegin(1)
    e.store(0, CTR, 5)
    e.load(1, CTR)
    assert e.xend(0) == e.xend(1) == 0  # still exempt after a power cycle


@pytest.mark.parametrize("name", ENGINES)
def test_exempt_bounds(name: str) -> None:
    e = engine(name, tiny(2, "pdom1", "modelled"))
    for i in range(EXEMPT_MAX):
        e.htm_exempt(PM_BASE + 64 * i)
    e.htm_exempt(PM_BASE + 8)  # a line already exempt
    with pytest.raises(ConfigError, match="at most"):
        e.htm_exempt(PM_BASE + 64 * EXEMPT_MAX)
    with pytest.raises(ConfigError):
        e.htm_exempt(1 << 62)


class Exempting:
    """An engine factory for :func:`check` that marks ``lines`` exempt on every engine."""

    def __init__(self, lines: list[int]) -> None:
        self.lines = lines

    def __call__(self, e: Any) -> Any:
        for a in self.lines:
            e.htm_exempt(a)
        return e


@pytest.mark.skipif(not native.available(), reason="the C core is not built")
@settings(max_examples=max(EXAMPLES // 2, 10))
@given(programs(), st.lists(st.integers(0, 5), min_size=1, max_size=3))
def test_exempt_differential(program: tuple, hot: list[int]) -> None:
    """Random programs over hot lines, some of them exempt: same decisions, stats, traces."""
    cfg, seq = program
    mark = Exempting([PM_BASE + 64 * h for h in hot])
    saved = (d.PyEngine, d.FunctionalEngine, d.c_engine)
    d.PyEngine = lambda c: mark(PyEngine(c))  # type: ignore[assignment]
    d.FunctionalEngine = lambda c: mark(FunctionalEngine(c))  # type: ignore[assignment]
    d.c_engine = lambda c, timed=True: mark(c_engine(c, timed))  # type: ignore[assignment]
    try:
        check(cfg, seq)
    finally:
        d.PyEngine, d.FunctionalEngine, d.c_engine = saved
