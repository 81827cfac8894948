"""DUDETx's baselines (papers/dudetx-decoupled.md §8): DUDETx-Inf, DUDETx-Sync, Mnemosyne-like
and NVML-like runs match the reference model, pass exhaustive crash fuzzing with two threads
in every domain, their card-derived mutants are killed, and each has the property that defines
it (Sync acknowledges before the next transaction, Inf never waits on its vlog, NVML's empty
transactions run at the card's 1.14 M/s per thread, Mnemosyne and NVML flush with CLFLUSH)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim import preset
from pmsim.errors import ConfigError
from pmsim.experiments.run import run_experiment
from pmsim.runtimes import Mutant, drop, get_mutant, get_runtime
from pmsim.runtimes.dudetx.nvml import NvmlRuntime
from pmsim.runtimes.dudetx.variants import DudeTxInfRuntime
from pmsim.runtimes.registry import all_mutants
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

SMALL = {
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
    "array": {"slots": 64, "per_tx": 4, "write_pct": 50},
}
BASELINES = ("dudetx-inf", "dudetx-sync", "mnemosyne", "nvml")
FUZZED = {"dudetx-inf": "dudetx-inf-fine", "dudetx-sync": "dudetx-sync-fine",
          "mnemosyne": "mnemosyne", "nvml": "nvml"}
"""The runtime each baseline is fuzzed as: DUDETx's fine-batch variants, so every crash point's
states can be enumerated."""


def session(runtime: Any, workload: str, threads: int, txs: int = 30, seed: int = 1) -> Session:
    return Session.create(runtime, workload, preset("marathe-pdom1"), threads=threads, seed=seed,
                          txs=txs, params=SMALL[workload])


def _marks(s: Session, code: Mark) -> list[tuple[int, int]]:
    """(trace index, txid) of every marker ``code`` of the session's trace."""
    ev = s.machine.trace().events
    idx = np.nonzero((ev["kind"] == Ev.MARK) & (ev["aux"] == int(code)))[0]
    return [(int(i), int(ev["value"][i])) for i in idx]


@pytest.mark.parametrize("workload", sorted(SMALL))
@pytest.mark.parametrize("runtime", BASELINES)
def test_matches_reference_and_recovers_a_clean_image(runtime: str, workload: str) -> None:
    s = session(runtime, workload, 3)
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 90
    assert wl.app_data(rt) == wl.expected(rt.commit_order) != wl.expected([])
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


# -- crash fuzzing -------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["bank", "kv"])
@pytest.mark.parametrize("runtime", BASELINES)
def test_crash_fuzzing_two_threads_is_exhaustive_and_passes(runtime: str, workload: str,
                                                            domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime=FUZZED[runtime], workload=workload, domain=domain, threads=2,
                          txs=6, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


@pytest.mark.parametrize("runtime", ["mnemosyne", "nvml"])
def test_crash_fuzzing_with_allocation(runtime: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload="alloc-x", threads=2, txs=3, idempotence=1))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


# -- mutants -------------------------------------------------------------------------------------

NEW_MUTANTS = sorted(n for n in all_mutants() if n.split(":")[0] in {"dudetx-inf", "dudetx-sync",
                                                               "mnemosyne", "nvml"})
KILLS = [(n, d) for n in NEW_MUTANTS for d in get_mutant(n).domains]


def test_every_baseline_has_a_dropped_flush_or_fence_mutant() -> None:
    for rt in BASELINES:
        mine = [get_mutant(n) for n in NEW_MUTANTS if n.startswith(rt + ":")]
        assert any(any(type(m).__name__ == "Drop" for m in mu.mutations) for mu in mine), rt


@pytest.mark.parametrize(("mutant", "domain"), KILLS)
def test_mutant_killed(mutant: str, domain: str) -> None:
    m = get_mutant(mutant)
    rep = fuzz(FuzzConfig(runtime=m.name, workload="bank", domain=domain, threads=2, txs=8,
                          idempotence=2, reduce=False, budget=4096, new_tx=3, stop_at_first=True))
    assert not rep.ok, f"{m.name} survived in {domain}"


ORDER_ONLY = {"nvml": "nvml.log.pb", "mnemosyne": "mnemosyne.log.order"}


@pytest.mark.parametrize("runtime", sorted(ORDER_ONLY))
def test_clflush_makes_the_log_ordering_redundant_in_pdom1(runtime: str) -> None:
    """A CLFLUSHed line is in the WPQ when the flush returns: in PDOM-1 the ordering after the
    log's flushes changes nothing, in PDOM-0 (no pcommit, the WPQ is volatile) it is a bug."""
    cls = Mutant(f"{runtime}~no-log-order", runtime, (drop(ORDER_ONLY[runtime]),),
                 ("pdom0",)).build()
    base = FuzzConfig(runtime=runtime, workload="bank", threads=2, txs=6, idempotence=1,
                      reduce=False)
    assert not fuzz(replace(base, domain="pdom0", stop_at_first=True), runtime=cls).ok
    rep = fuzz(replace(base, domain="pdom1"), runtime=cls)
    assert rep.ok, crashfuzz.format_report(rep)


# -- what defines each baseline ------------------------------------------------------------------

@pytest.mark.parametrize("runtime", ["dudetx-sync", "dudetx-sync-3500"])
def test_sync_acknowledges_before_the_next_transaction_begins(runtime: str) -> None:
    s = session(runtime, "bank", 3, txs=20)
    s.run(20)
    begin = dict((t, i) for i, t in _marks(s, Mark.TX_BEGIN))
    durable = dict((t, i) for i, t in _marks(s, Mark.TX_DURABLE))
    rt = s.runtime
    assert sorted(durable) == sorted(rt.commit_order)
    for txid, i in durable.items():
        nxt = txid + 1  # the same thread's next transaction
        if nxt in begin:
            assert i < begin[nxt]
    ev = s.machine.trace().events
    pm = np.isin(ev["kind"], [int(Ev.CLWB), int(Ev.SFENCE)])
    assert {0, 1, 2} <= set(ev["tid"][pm].tolist())  # the workers persist their own logs


def test_sync_waits_for_persistence_and_dudetx_does_not() -> None:
    """Sync's transaction latency includes the emulated persist (3,500 cycles for -3500) and
    its acknowledgement comes before ``run`` returns; DUDETx acknowledges later."""
    runs = {rt: run_experiment(rt, "tatp", config="dudetx-xeon", threads=2, txs=60)
            for rt in ("dudetx", "dudetx-sync", "dudetx-sync-3500")}
    dude = runs["dudetx"]
    assert dude.ack_p50 > dude.lat_p50
    for rt in ("dudetx-sync", "dudetx-sync-3500"):
        r = runs[rt]
        assert r.lat_p50 - dude.lat_p50 >= get_runtime(rt).persist_latency_ns
        assert r.ack_p50 <= r.lat_p50


def test_inf_never_waits_on_its_vlog() -> None:
    s = session("dudetx-inf", "array", 4, txs=60)
    s.run(60)
    rt = s.runtime
    assert rt.vlog_stalls == 0 and rt.vlog_stall_ns == 0
    assert 0 < rt.vlog_peak_slots < rt._vslots
    assert rt.counters()["vlog_stalls"] == 0


def test_an_inf_vlog_that_would_block_raises() -> None:
    class Tiny(DudeTxInfRuntime):
        name = "dudetx-inf-tiny"
        vlog_entries = 12

    with pytest.raises(ConfigError, match="vlog_entries"):
        session(Tiny, "array", 2, txs=20).run(20)


def test_nvml_empty_transactions_run_at_the_card_cap() -> None:
    """Card D7: NVML manages at most 1.14 M empty transactions/s per thread; tx_overhead_ns
    is derived so that the modelled empty transaction takes that period."""
    period = NvmlRuntime.tx_overhead_ns + NvmlRuntime.empty_tx_model_ns
    assert 1e9 / period == pytest.approx(1.14e6)
    r = run_experiment("nvml", "empty", threads=2, txs=400, warmup=20)
    per_thread = r.throughput / 2
    assert 0.95 * 1e9 / period <= per_thread <= 1.05 * 1e9 / period
    m = run_experiment("mnemosyne", "empty", threads=2, txs=400, warmup=20)
    assert m.throughput / 2 > 20 * per_thread  # card D7: Mnemosyne and DUDETx above 30 M/s


@pytest.mark.parametrize("runtime", ["mnemosyne", "nvml"])
def test_flushes_are_clflush(runtime: str) -> None:
    s = session(runtime, "array", 2, txs=20)
    s.run(20)
    st = s.machine.stats()
    assert int(st["clwb"].sum()) == 0 and int(st["clflushopt"].sum()) == 0
    assert int(st["clflush"].sum()) > 0


def test_nvml_logs_the_write_set_with_one_ordering() -> None:
    """NVML: one ordering for the whole log, then the commit's two (undo: one per write)."""
    params = {"slots": 64, "per_tx": 4, "write_pct": 100}
    nv = run_experiment("nvml", "array", config="marathe-pdom1", txs=40, params=params)
    un = run_experiment("undo", "array", config="marathe-pdom1", txs=40, params=params)
    assert nv.pb_per_tx <= 4 < un.pb_per_tx


def test_mnemosyne_reads_its_own_writes() -> None:
    """Read redirection: bank re-reads the debited account inside the transaction."""
    s = session("mnemosyne", "bank", 1, txs=40)
    s.run(40)
    assert s.check()
