"""The volatile HTM runtime (``htm``): the workloads' reference data with 1-4 threads on both
backends, allocation undone on abort, the SGL path's undo, and its registration."""

from __future__ import annotations

import pytest

from pmsim import preset
from pmsim.runtimes import get_runtime
from pmsim.runtimes.volatile.htm import HtmRuntime
from pmsim.trace import Ev
from pmsim.workloads import Session

SMALL = {
    "array": {"slots": 128, "per_tx": 6, "write_pct": 50},
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
}


def session(workload: str, threads: int, backend: str | None = None, seed: int = 1,
            txs: int = 25, **changes: object) -> Session:
    cfg = preset("optane-adr").replace(cores=threads, **changes)
    return Session.create("htm", workload, cfg, threads=threads, seed=seed, txs=txs,
                          params=SMALL[workload], backend=backend)


@pytest.mark.parametrize("workload", sorted(SMALL))
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_matches_reference(workload: str, threads: int, backend: str) -> None:
    s = session(workload, threads, backend)
    s.run(25)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 25 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert wl.app_data(rt) != wl.expected([])
    assert rt.check_invariants(wl.live_objects(rt)) == []
    tot = rt.runner.total()
    assert rt.aborts == tot.user_aborts
    assert tot.commits + tot.fallbacks <= 25 * threads <= tot.commits + tot.fallbacks + rt.aborts
    if threads > 1 and workload != "array":
        assert tot.conflict + tot.lock > 0


def test_backends_agree_op_for_op() -> None:
    runs = []
    for backend in ("python", "c"):
        s = session("kv", 3, backend, seed=4, txs=30)
        s.run(30)
        runs.append((s.runtime.commit_order, s.machine.stats().tobytes(),
                     s.runtime.runner.total().as_dict(), s.machine.trace().events.tobytes()))
    assert runs[0] == runs[1]


def test_every_transaction_through_the_lock() -> None:
    """With a read set of one line every hardware attempt overflows: all bodies run under the
    SGL, bank's user aborts are undone there, and the data is still the reference's."""
    s = session("bank", 3, seed=2, txs=30, **{"htm.read_set_lines": 1})
    s.run(30)
    rt, wl = s.runtime, s.workload
    tot = rt.runner.total()
    assert tot.fallbacks == 90 and tot.commits == 0 and tot.capacity > 0
    assert tot.capacity + tot.lock == tot.attempts  # the SGL, taken by others, aborts the rest
    assert rt.aborts > 0  # user aborts (insufficient funds), undone under the lock
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert sum(wl.app_data(rt)) == 6 * 50


def test_aborted_allocations_return_their_blocks() -> None:
    s = session("kv", 4, seed=3, txs=40, **{"htm.write_set_lines": 1})
    s.run(40)
    rt, wl = s.runtime, s.workload
    tot = rt.runner.total()
    assert tot.aborts > 0 and tot.capacity > 0
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    live = wl.live_objects(rt)
    assert rt.check_invariants(live) == []
    # every block is either live or on a volatile free list: nothing leaked by an abort
    blocks = {c.base + c.block * i for c in rt.layout.heap for i in range(c.nblocks)}
    assert set(live) == rt.heap.allocated()
    assert not set(live) & rt.heap.volatile_free()
    assert set(live) | rt.heap.volatile_free() == blocks


def test_volatile_no_flushes_no_fences_and_no_aborted_stores_in_the_trace() -> None:
    s = session("bank", 4, seed=5, txs=30)
    s.run(30)
    st = s.machine.stats()
    assert st["clwb"].sum() + st["clflushopt"].sum() + st["clflush"].sum() == 0
    assert st["sfence"].sum() + st["persist_barriers"].sum() == 0
    assert st["htm_aborts_conflict"].sum() > 0
    ev = s.machine.trace().events
    stores = ev[ev["kind"] == Ev.STORE]
    # two stores per committed transfer; none for an aborted hardware attempt; a user abort
    # under the SGL stores the debit and its undo
    sgl_user_aborts = s.runtime.aborts - int(st["htm_aborts_explicit"].sum())
    assert len(stores) == 2 * s.runtime.commits + 2 * sgl_user_aborts


def test_registered() -> None:
    cls = get_runtime("htm")
    assert cls is HtmRuntime and cls.family == "htm"
    assert not cls.durable and cls.optimistic
