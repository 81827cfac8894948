"""A user defines a mutant of redo in a few lines with the public mutation API; crashfuzz kills it."""

from __future__ import annotations

from crashfuzz import fuzz
from pmsim.runtimes import Mutant, delay


def test_a_user_mutant_in_under_ten_lines() -> None:
    m = Mutant("redo:idle-first", "redo", [delay("redo.commit.write-back", after="redo.commit.store-idle")],
               domains=("pdom1",), why="IDLE is stored before the write-backs")
    report = fuzz(runtime=m.build(), workload="array", domain="pdom1", txs=6, reduce=False)
    assert not report.ok
