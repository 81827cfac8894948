"""The empty workload: transactions commit, nothing changes, recovery finds nothing to do."""

from __future__ import annotations

import pytest

from crashfuzz import FuzzConfig, format_report, fuzz
from pmsim import preset
from pmsim.workloads import Session

RUNTIMES = ["undo", "redo", "cow", "stm", "htm", "dudetx"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_empty_transactions_commit_and_change_nothing(runtime: str) -> None:
    s = Session.create(runtime, "empty", preset("optane-adr"), threads=2, seed=3, txs=20)
    s.run(20)
    rt, wl = s.runtime, s.workload
    assert (rt.commits, rt.aborts) == (40, 0)
    assert wl.app_data(rt) == wl.expected(rt.commit_order) == wl.expected([])
    wl.check(rt)
    assert s.machine.now > 0


@pytest.mark.parametrize("runtime", ["undo", "redo", "cow", "dudetx-fine"])
def test_empty_is_crash_consistent(runtime: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload="empty", threads=2, txs=3))
    assert rep.ok, format_report(rep)
    assert rep.states_checked > 0 and rep.points_sampled == 0
