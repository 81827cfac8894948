"""DUDETx: runs match the reference model, acknowledgement is D passing the ID, crash fuzzing
passes in every domain with two threads, and every card mutant is killed."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim import Machine, preset
from pmsim.errors import ConfigError
from pmsim.runtimes import PMSpec, StaticArray, get_mutant, get_runtime
from pmsim.runtimes.dudetx.dudetx import Bandwidth, DudeTxRuntime, Record
from pmsim.runtimes.dudetx.mutants import Claim
from pmsim.runtimes.registry import MUTANTS
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

SMALL = {
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
    "array": {"slots": 64, "per_tx": 4, "write_pct": 50},
}


def session(workload: str, threads: int, runtime: Any = "dudetx", seed: int = 1,
            txs: int = 30) -> Session:
    cfg = preset("marathe-pdom1")
    return Session.create(runtime, workload, cfg, threads=threads, seed=seed, txs=txs,
                          params=SMALL[workload])


def _marks(s: Session, code: Mark) -> list[tuple[int, int]]:
    """(trace index, txid) of every marker ``code`` of the session's trace."""
    ev = s.machine.trace().events
    idx = np.nonzero((ev["kind"] == Ev.MARK) & (ev["aux"] == int(code)))[0]
    return [(int(i), int(ev["value"][i])) for i in idx]


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("workload", sorted(SMALL))
def test_matches_reference(workload: str, threads: int) -> None:
    s = session(workload, threads)
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 30 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert wl.app_data(rt) != wl.expected([])
    assert rt.R == rt.D == s.machine.peek(rt._ctr)  # everything persisted and reproduced
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)
    assert all(rt.active[t] is None for t in range(threads))


def test_a_read_only_transaction_is_serialized_at_its_snapshot() -> None:
    """A delete finds its key absent (read-only, no ID), and a put of that key commits before
    the delete ends. The delete comes before the put in ``commit_order`` although its
    TX_COMMIT marker comes after; the final data and the crash oracle, given the runtime's
    order, accept them. Hypothesis found the case (seed 203); which seed shows it depends on
    the machine's timing, so the test takes the first of 400 seeds that does."""
    for seed in range(1, 401):
        s = session("kv", 2, seed=seed, txs=15)
        s.run(15)
        rt, wl = s.runtime, s.workload
        marker_order = [x for _, x in _marks(s, Mark.TX_COMMIT)]
        assert sorted(marker_order) == sorted(rt.commit_order)
        assert wl.app_data(rt) == wl.expected(rt.commit_order)
        if wl.app_data(rt) != wl.expected(marker_order):  # the case this test is about
            break
    else:
        pytest.fail("no seed in 1..400 commits a put inside a read-only delete's window")
    assert marker_order != rt.commit_order
    trace = s.machine.trace()
    end = len(trace.events)
    assert not crashfuzz.Oracle(crashfuzz.TxHistory.from_trace(trace), wl.expected).check(
        end, wl.app_data(rt))[0]  # marker order: a false finding
    history = crashfuzz.TxHistory.from_trace(trace, rt.commit_order)
    assert history.commit_order == rt.commit_order
    assert crashfuzz.Oracle(history, wl.expected).check(end, wl.app_data(rt))[0]


@pytest.mark.parametrize("workload", sorted(SMALL))
def test_every_commit_is_acknowledged_once_in_program_order(workload: str) -> None:
    s = session(workload, 3, txs=25)
    s.run(25)
    rt = s.runtime
    commits = _marks(s, Mark.TX_COMMIT)
    durable = _marks(s, Mark.TX_DURABLE)
    assert sorted(t for _, t in durable) == sorted(rt.commit_order) == sorted(t for _, t in commits)
    at = {t: i for i, t in commits}
    assert all(i > at[t] for i, t in durable)
    for tid in range(3):
        mine = [t for _, t in durable if t >> 32 == tid]
        assert mine == sorted(mine)
    updates = {t for t, key in zip(rt.commit_order, rt._serial, strict=True) if key[1] == 0}
    # update transactions' markers in ID (serialization) order; a read-only one's may be later
    assert [t for _, t in commits if t in updates] == [t for t in rt.commit_order if t in updates]
    assert len(rt.ack_latencies) == rt.commits


def test_update_transactions_are_acknowledged_by_the_persist_thread() -> None:
    s = session("bank", 2)
    s.run(20)
    ev = s.machine.trace().events
    dur = (ev["kind"] == Ev.MARK) & (ev["aux"] == int(Mark.TX_DURABLE))
    assert set(ev["tid"][dur].tolist()) == {2}  # core 2: the persist thread of 2 workers


def test_durable_frontier_never_passes_an_unpersisted_id() -> None:
    s = session("bank", 2, runtime="dudetx-fine")
    rt = s.runtime
    seen: list[tuple[int, int]] = []
    orig = rt._persist_batch

    def batch(cpu: Any) -> bool:
        out = orig(cpu)
        pending = [q[0].id for q in rt._vq if q]
        seen.append((rt.D, min(pending, default=1 << 62)))
        return out

    rt._persist_batch = batch  # type: ignore[method-assign]
    s.run(20)
    assert seen and all(d < first for d, first in seen)
    assert any(d > 0 for d, _ in seen)


def test_no_pm_store_on_the_critical_path() -> None:
    """Perform writes only DRAM: the workers' cores issue no PM store, flush or fence."""
    s = session("array", 2)
    s.run(20)
    ev = s.machine.trace().events
    pm = np.isin(ev["kind"], [int(Ev.STORE), int(Ev.CLWB), int(Ev.SFENCE)])
    assert set(ev["tid"][pm].tolist()) <= {2, 3}


def test_full_vlog_blocks_perform() -> None:
    class Tiny(DudeTxRuntime):
        name = "dudetx-tiny-vlog"
        vlog_entries = 12

    s = session("array", 2, runtime=Tiny)
    s.run(20)
    rt, wl = s.runtime, s.workload
    assert rt.vlog_stalls > 0 and rt.vlog_stall_ns > 0
    assert wl.app_data(rt) == wl.expected(rt.commit_order)


def test_a_vlog_smaller_than_a_record_is_refused() -> None:
    class TooSmall(DudeTxRuntime):
        name = "dudetx-too-small"
        vlog_entries = 2

    with pytest.raises(ConfigError, match="vlog_entries"):
        session("array", 1, runtime=TooSmall)


def test_dram_is_sized_to_the_layout() -> None:
    cfg = preset("marathe-pdom1")
    layout = DudeTxRuntime.plan(PMSpec(statics=(StaticArray("a", 1 << 17, 4),)), 2)
    need = DudeTxRuntime.dram_bytes(layout)
    assert need > cfg.dram_region.size
    fitted = DudeTxRuntime.fit_config(cfg, layout)
    assert fitted.dram_region.size >= need
    with pytest.raises(ConfigError, match="fit_config"):
        DudeTxRuntime(Machine(cfg.replace(cores=4)), layout)


def test_bandwidth_cost_model() -> None:
    bw = Bandwidth(latency_ns=300.0, bw=1.0)
    assert bw.cost(0.0, 100) == 300.0  # latency-bound
    assert bw.cost(1000.0, 1000) == 1000.0  # bandwidth-bound
    assert bw.cost(1000.0, 500) == 1500.0  # queued behind the previous transfer
    assert Bandwidth(0.0, 0.0).cost(5.0, 1 << 20) == 0.0


def test_begin_is_refused_and_steps_are_declared() -> None:
    s = session("bank", 1)
    with pytest.raises(ConfigError, match="optimistic"):
        next(s.runtime.begin(s.machine.cpu(0)))
    names = [st.name for st in get_runtime("dudetx").persist_steps()]
    assert names and all(n.startswith("dudetx.") for n in names)


# -- crash fuzzing -------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["bank", "kv", "array"])
def test_crash_fuzzing_two_threads_is_exhaustive_and_passes(workload: str, domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-fine", workload=workload, domain=domain, threads=2,
                          txs=10, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


def test_crash_fuzzing_default_batches() -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx", workload="bank", threads=2, txs=3, idempotence=1,
                          budget=1 << 16))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


@pytest.mark.parametrize(("workload", "threads", "order", "domain"), [
    ("bank", 3, "px86", "pdom0"), ("kv", 4, "line", "pdom1"), ("bank", 4, "px86", "pdom2")])
def test_crash_fuzzing_more_threads_and_px86(workload: str, threads: int, order: str,
                                            domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-fine", workload=workload, domain=domain, order=order,
                          threads=threads, txs=6))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("order", ["line", "px86"])
@pytest.mark.parametrize("threads", [3, 4])
@pytest.mark.parametrize("workload", ["bank", "kv"])
def test_three_and_four_threads_both_orders(workload: str, threads: int, order: str,
                                            domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-fine", workload=workload, domain=domain, order=order,
                          threads=threads, txs=6))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["bank", "kv", "array", "alloc-x"])
def test_long_campaign(workload: str, domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-fine", workload=workload, domain=domain, threads=2,
                          txs=30, idempotence=8))
    assert rep.ok, crashfuzz.format_report(rep)


# -- mutants -------------------------------------------------------------------------------------

KILLER = {"M16": "alloc-x"}
"""The workload each mutant is fuzzed with: its own (``Mutant.workload``), else array unless
named here."""
CARD = ("M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8", "M9", "M11", "M16", "M18", "M19", "M20")


def test_every_card_mutation_is_registered() -> None:
    get_mutant("dudetx:M1")
    assert {f"dudetx:{m}" for m in CARD} <= set(MUTANTS)


@pytest.mark.parametrize("mutation", CARD)
def test_mutant_killed(mutation: str) -> None:
    m = get_mutant(f"dudetx:{mutation}")
    domain = "pdom1"
    workload = m.workload or KILLER.get(mutation, "array")
    rep = fuzz(FuzzConfig(runtime=m.name, domain=domain,
                          threads=max(2, m.threads), txs=8, idempotence=2, reduce=False,
                          budget=4096, new_tx=3, stop_at_first=True, workload=workload))
    assert not rep.ok, f"{m.name} survived"


def test_claim_workload_passes_on_the_correct_runtime() -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-fine", domain="pdom1", threads=2, txs=8,
                          idempotence=1), workload=Claim)
    assert rep.ok, crashfuzz.format_report(rep)
    s = Session.create("dudetx-fine", Claim, preset("marathe-pdom1"), threads=2, txs=20)
    s.run(20)
    assert s.runtime.stm.totals().aborts  # the workload does conflict


@pytest.mark.parametrize("mutation", ["M2", "M18"])
def test_barrier_mutants_survive_in_pdom2(mutation: str) -> None:
    rep = fuzz(FuzzConfig(runtime=f"dudetx:{mutation}", workload="array", domain="pdom2",
                          threads=2, txs=8, idempotence=1, reduce=False, budget=4096))
    assert rep.ok, crashfuzz.format_report(rep)


@pytest.mark.parametrize(("fair", "ids"), [(True, [1, 3, 2]), (False, [1, 3, 5])])
def test_a_persist_that_falls_behind_serves_the_oldest_records(fair: bool, ids: list[int]) -> None:
    """With a batch room for three records, the fair Persist takes tids 1-3 from both vlogs (in
    thread order for writing); the ``-fine`` variants' adversarial order drains thread 0 first."""
    vq = [deque(Record(i, 0, i, [(0, 0)], 2 * k) for k, i in enumerate((1, 3, 5, 7))),
          deque(Record(i, 1, i, [(0, 0)], 2 * k) for k, i in enumerate((2, 4, 6)))]
    rt = SimpleNamespace(persist_fair=fair, persist_batch_bytes=3 * 2 * 16, _ptail=[0, 0],
                         _persist_queues=lambda cpu: enumerate(vq),
                         _plog_room=lambda t, need: True)
    batch, nbytes = DudeTxRuntime._take_batch(rt, None)  # type: ignore[arg-type]
    assert [r.id for r in batch] == ids and nbytes == 96
    assert [len(q) for q in vq] == ([2, 2] if fair else [1, 3])
    assert [r.pos for r in batch] == ([0, 2, 0] if fair else [0, 2, 4])
    assert get_runtime("dudetx").persist_fair and not get_runtime("dudetx-fine").persist_fair
