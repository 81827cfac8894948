"""The volatile ``stm`` runtime: workloads match their reference model under conflicts."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest

from crashfuzz import FuzzConfig, fuzz
from pmsim import preset
from pmsim.errors import ConfigError
from pmsim.runtimes import get_runtime
from pmsim.runtimes.volatile.stm import StmRuntime
from pmsim.tm.stm import AbortCause, StmConfig
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session
from pmsim.workloads.bank import Bank

SMALL = {
    "array": {"slots": 24, "per_tx": 4, "write_pct": 50},
    "bank": {"accounts": 5, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 2, "keys": 8},
    "alloc-x": {"x": 3, "groups": 2, "abort_pct": 25},
}


class StmWriteThrough(StmRuntime):
    """The same runtime over the write-through STM (not registered)."""

    name = "stm-wt"
    stm_config = StmConfig(design="write-through")


def session(workload: str, threads: int, seed: int = 1, txs: int = 25, runtime: Any = "stm",
            quantum: float = 150.0) -> Session:
    cfg = preset("marathe-pdom1").replace(cores=threads, quantum_ns=quantum)
    return Session.create(runtime, workload, cfg, threads=threads, seed=seed, txs=txs,
                          params=SMALL[workload])


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("workload", sorted(SMALL))
def test_matches_reference(workload: str, threads: int) -> None:
    s = session(workload, threads)
    s.run(25)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 25 * threads
    assert len(rt.commit_order) == rt.commits
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert wl.app_data(rt) != wl.expected([])
    tot = rt.stm.totals()
    assert tot.commits == rt.commits and tot.aborts[AbortCause.USER] == rt.aborts
    assert all(rt.active[t] is None and rt.stm.active(t) is None for t in range(threads))


@pytest.mark.parametrize("workload", ["kv", "alloc-x"])
def test_aborted_allocations_are_undone(workload: str) -> None:
    s = session(workload, 4, seed=2, txs=30)
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    live = set(wl.live_objects(rt))
    free = rt.heap.volatile_free()
    every = {c.base + c.block * i for c in rt.layout.heap for i in range(c.nblocks)}
    assert not live & free  # nothing live is handed out again
    assert live | free == every  # and nothing leaked
    assert rt.check_invariants(live) == []  # the bitmaps agree
    assert rt.stm.totals().aborts[AbortCause.LOCKED] + \
        rt.stm.totals().aborts[AbortCause.READ_VALIDATION] + \
        rt.stm.totals().aborts[AbortCause.COMMIT_VALIDATION] > 0


def test_threads_conflict_and_retry() -> None:
    conflicts = 0
    for seed in range(3):
        for workload in ("array", "bank", "kv"):
            s = session(workload, 4, seed=seed, txs=20)
            s.run(20)
            assert s.workload.app_data(s.runtime) == s.workload.expected(s.runtime.commit_order)
            tot = s.runtime.stm.totals()
            conflicts += tot.attempts - tot.commits - tot.aborts[AbortCause.USER]
    assert conflicts > 0


@pytest.mark.parametrize("workload", sorted(SMALL))
def test_write_through_design(workload: str) -> None:
    s = session(workload, 3, seed=4, runtime=StmWriteThrough)
    s.run(25)
    assert s.workload.app_data(s.runtime) == s.workload.expected(s.runtime.commit_order)
    assert s.runtime.stm.config.design == "write-through"


@pytest.mark.parametrize("workload", sorted(SMALL))
def test_same_data_as_a_lock_based_runtime(workload: str) -> None:
    snaps = []
    for runtime in ("undo", "stm"):
        s = session(workload, 1, seed=7, runtime=runtime)
        s.run(30)
        snaps.append(s.workload.app_data(s.runtime))
    assert snaps[0] == snaps[1]


def test_deterministic() -> None:
    runs = []
    for _ in range(2):
        s = session("kv", 3, seed=3)
        s.run(20)
        runs.append((s.workload.app_data(s.runtime), s.runtime.commit_order,
                     s.machine.stats().tobytes(), s.runtime.stm.totals()))
    assert runs[0] == runs[1]


def test_volatile_no_flushes_and_markers() -> None:
    s = session("bank", 2, seed=5, txs=30)
    s.run(30)
    rt, m = s.runtime, s.machine
    assert (type(rt).durable, type(rt).optimistic, get_runtime("stm")) == (False, True, StmRuntime)
    assert m.count("clwb") == m.count("sfence") == m.count("persist_barriers") == 0
    ev = m.trace().events
    marks = ev[ev["kind"] == Ev.MARK]
    count = {c: int(np.sum(marks["aux"] == c)) for c in Mark}
    assert count[Mark.TX_BEGIN] == 60  # once per transaction, however often it retried
    assert count[Mark.TX_COMMIT] == count[Mark.TX_DURABLE] == rt.commits
    assert count[Mark.TX_ABORT] == rt.aborts > 0
    assert sorted(rt.commit_order) == sorted(int(v) for v in marks["value"][marks["aux"]
                                                                            == Mark.TX_COMMIT])
    assert len(rt.latencies) == 60


class OldBank(Bank):
    """A workload in the old form: it calls rt.begin itself."""

    name = "old-bank"

    def transaction(self, cpu: Any, rt: Any, op: Any) -> Generator[Any, Any, None]:
        tx = yield from rt.begin(cpu)
        self.record(tx, op)
        yield from rt.commit(tx)


def test_old_style_workload_is_refused() -> None:
    cfg = preset("marathe-pdom1").replace(cores=1)
    s = Session.create("stm", OldBank, cfg, threads=1, txs=2)
    with pytest.raises(ConfigError, match="optimistic.*body"):
        s.run(2)


def test_crashfuzz_and_recovery_refuse_it() -> None:
    with pytest.raises(ConfigError, match="volatile baseline"):
        fuzz(FuzzConfig(runtime="stm", workload="bank", txs=2))
    s = session("bank", 1, txs=3)
    s.run(3)
    with pytest.raises(ConfigError, match="volatile baseline"):
        s.recover(s.machine.pm_image())


def test_read_only_transactions_are_ordered_by_their_snapshot() -> None:
    """A read-only transaction that read x before a writer committed x is serialized before
    the writer, although its commit (and TX_COMMIT marker) comes after."""
    s = session("bank", 2)
    rt, m = s.runtime, s.machine
    acct = rt.static("accounts", 0)
    seen: dict[str, int] = {}

    def reader(cpu: Any) -> Generator[Any, Any, None]:
        def body(tx: Any) -> Generator[Any, Any, None]:
            seen["read"] = tx.read(acct, 0)
            yield cpu.machine.env.timeout(5000)
        seen["reader"] = (yield from rt.run(cpu, body)).txid

    def writer(cpu: Any) -> Generator[Any, Any, None]:
        seen["writer"] = (yield from rt.run(cpu, lambda tx: tx.write(acct, 0, 7))).txid

    m.spawn(reader, 0)
    m.spawn(writer, 1)
    m.run()
    assert seen["read"] == 50 and rt.peek(acct, 0) == 7
    assert rt.commit_order == [seen["reader"], seen["writer"]]


def test_a_body_cannot_commit_itself() -> None:
    s = session("bank", 1)
    rt = s.runtime

    def body(tx: Any) -> Generator[Any, Any, None]:
        yield from tx.rt.commit(tx)

    def thread(cpu: Any) -> Generator[Any, Any, None]:
        yield from rt.run(cpu, body)

    s.machine.spawn(thread, 0)
    with pytest.raises(ConfigError, match="return False to abort"):
        s.machine.run()
    assert rt.active[0] is None and rt.stm.active(0) is None
