"""Undo: a transaction's first record must not overwrite the previous transaction's COMMIT
before the new header is persistent (found by crash-fuzzing the B+-tree workload).

Transactions alternately write one word and six words of one object. The six-word record is
longer than the one-word transaction's first record, so it reaches that transaction's COMMIT
record; had it persisted before the new header (V + 1), recovery would see V's first record
intact, no COMMIT, and roll back a committed transaction.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

import crashfuzz
from pmsim.runtimes import PMSpec, StaticArray, get_runtime
from pmsim.runtimes.mutation import Mutant, drop
from pmsim.workloads import Model, Workload


class Alternating(Model):
    def __init__(self) -> None:
        self.n = 0

    def apply(self, op: int) -> None:
        self.n += 1

    def snapshot(self) -> Hashable:
        even = self.n - self.n % 2
        return (even,) * 5 + (self.n,)


class ShortLong(Workload):
    """Odd transactions write field 7 (the count), even ones fields 2..7."""

    name = "short-long"

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("a", 1, 8),), max_tx_writes=1, max_tx_words=6,
                      max_tx_allocs=0, max_tx_objects=1)

    def next_op(self, tid: int, rng: Any) -> int:
        return 0

    def body(self, tx: Any, op: int) -> None:
        obj = tx.rt.static("a", 0)
        n = tx.read(obj, 7)
        if n % 2 == 0:
            tx.write(obj, 7, n + 1)
        else:
            tx.write_words(obj, 2, [n + 1] * 6)

    def model(self) -> Model:
        return Alternating()

    def read_data(self, rt: Any) -> Hashable:
        return tuple(rt.peek_words(rt.static("a", 0), 2, 6))


@pytest.mark.parametrize("domain", ["pdom0", "pdom1"])
@pytest.mark.parametrize("runtime", ["undo", "undo-2pb", "undo-eager"])
def test_first_record_after_header(runtime: str, domain: str) -> None:
    rep = crashfuzz.fuzz(runtime=runtime, workload=ShortLong, domain=domain, txs=4, seed=1)
    assert rep.ok, rep.failures[0].summary()


@pytest.mark.parametrize("domain", ["pdom0", "pdom1"])
def test_dropping_the_ordering_point_is_caught(domain: str) -> None:
    m = Mutant("undo:no-order-header", "undo", (drop("undo.append.order-header"),),
               why="the first record may overwrite COMMIT before the new header persists")
    rep = crashfuzz.fuzz(runtime=m.build(), workload=ShortLong, domain=domain, txs=4, seed=1,
                         stop_at_first=True)
    assert not rep.ok


@pytest.mark.parametrize("domain,pbs", [("pdom1", 0), ("pdom0", 2)])
def test_ordering_point_is_paid_only_when_the_record_grows(domain: str, pbs: int) -> None:
    """Short, long, short, long: an ordering point comes with each long first record only
    (an sfence in PDOM-1, a PB in PDOM-0)."""
    from pmsim import preset
    from pmsim.workloads import Session

    def stats(rt: Any) -> Any:
        s = Session.create(rt, ShortLong, preset("optane-adr").replace(domain=domain), txs=4)
        s.run(4)
        assert s.check()
        return s.machine.stats()[0]

    m = Mutant("undo:no-order-header", "undo", (drop("undo.append.order-header"),))
    got, without = stats(get_runtime("undo")), stats(m.build())
    assert without["persist_barriers"] == 4 * (1 + 2)  # 1 per record, 2 for the commit
    assert got["persist_barriers"] - without["persist_barriers"] == pbs
    assert got["sfence"] - without["sfence"] == 2 * (2 if pbs else 1)  # PDOM-0 PB: 2 sfences
