"""NV-HTM: runs match the reference model, the commit protocol's invariants hold (markers durable
in timestamp order, workers never write the PS, aborts leave no PM traffic), the per-transaction
counts match the card's Table 1 formulas in both counting modes, crash fuzzing passes in every
domain (crashes inside checkpoints and inside recovery included), and the card's mutants are
killed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from crashfuzz.campaign import fuzz_machine
from pmsim import preset
from pmsim.errors import ConfigError, PmsimError
from pmsim.runtimes import get_mutant, get_runtime
from pmsim.runtimes.nvhtm.mutants import MUTANTS, UNREGISTERED
from pmsim.runtimes.nvhtm.nvhtm import NVHTM_FINE, NvHtmRuntime, lines_of_slots
from pmsim.runtimes.registry import MUTANTS as REGISTERED
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

SMALL = {
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
    "hashmap": {"maps": 2, "buckets": 2, "keys": 6, "initial": 2},
}


def session(workload: str, threads: int, runtime: Any = "nvhtm", seed: int = 1, txs: int = 30,
            params: dict[str, Any] | None = None, cfg: Any = None) -> Session:
    return Session.create(runtime, workload, cfg or preset("marathe-pdom1"), threads=threads,
                          seed=seed, txs=txs, params=SMALL.get(workload) if params is None
                          else params)


def _marks(s: Session, code: Mark) -> list[tuple[int, int]]:
    """(trace index, txid) of every marker ``code`` of the session's trace."""
    ev = s.machine.trace().events
    idx = np.nonzero((ev["kind"] == Ev.MARK) & (ev["aux"] == int(code)))[0]
    return [(int(i), int(ev["value"][i])) for i in idx]


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("workload", sorted(SMALL))
def test_matches_reference(workload: str, threads: int) -> None:
    s = session(workload, threads, txs=20)
    s.run(20)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 20 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order)  # the PS, after the final drain
    assert wl.app_data(rt) != wl.expected([])
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)
    assert all(rt.active[t] is None for t in range(threads))


@pytest.mark.parametrize("runtime", ["nvhtm-fine", "nvhtm-race", "nvhtm-skew", "nvhtm-emul",
                                     "nvhtm-nlp", "nvhtm-lc", "nvhtm-fff", "nvhtm-fnf"])
def test_variants_match_reference(runtime: str) -> None:
    s = session("bank", 2, runtime=runtime, txs=25)
    s.run(25)
    assert s.check()
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == [] and rec.data == s.workload.expected(s.runtime.commit_order)


def test_every_commit_is_acknowledged_once_and_markers_persist_in_timestamp_order() -> None:
    s = session("bank", 3, runtime="nvhtm-race", txs=25,
                params={"accounts": 6, "initial": 50, "max_amount": 40, "u": 0.7})
    s.run(25)
    rt = s.runtime
    commits = _marks(s, Mark.TX_COMMIT)
    durable = _marks(s, Mark.TX_DURABLE)
    assert [t for _, t in commits] == rt.commit_order
    assert sorted(t for _, t in durable) == sorted(rt.commit_order)
    at = {t: i for i, t in commits}
    assert all(i > at[t] for i, t in durable)
    ro = set(rt.read_only_txids)
    assert ro and len(ro) < len(durable)
    updates = [(rt.commit_ts[t], t >> 32) for _, t in durable if t not in ro]
    assert updates == sorted(updates)  # I2: durable in (ts, tid) order


def test_read_only_waits_for_every_smaller_timestamp() -> None:
    """R5: a read-only transaction is acknowledged only once every update with a timestamp at
    most its own is durable (what it read is then recoverable)."""
    s = session("bank", 2, runtime="nvhtm-race", txs=30,
                params={"accounts": 4, "initial": 50, "max_amount": 40, "u": 0.5})
    s.run(30)
    assert _r5_violations(s) == []


def _r5_violations(s: Session) -> list[tuple[int, int]]:
    rt = s.runtime
    pos = {t: i for i, t in _marks(s, Mark.TX_DURABLE)}
    ro = set(rt.read_only_txids)
    out = []
    for r in ro:
        for w, ts in rt.commit_ts.items():
            if w not in ro and w >> 32 != r >> 32 and ts <= rt.commit_ts[r] and pos[w] > pos[r]:
                out.append((r, w))
    return out


def test_m4_read_only_skipping_the_wait_is_caught_by_the_r5_check() -> None:
    """M4 leaves the recovered data a correct prefix (the crash oracle cannot see it): the R5
    check of the crash-free trace does."""
    m = next(u for u in UNREGISTERED if u.name == "nvhtm:M4")
    s = session("bank", 2, runtime=m.build(), txs=30,
                params={"accounts": 4, "initial": 50, "max_amount": 40, "u": 0.5})
    s.run(30)
    assert _r5_violations(s)


def test_m20_no_marker_reservation_is_a_liveness_error() -> None:
    m = next(u for u in UNREGISTERED if u.name == "nvhtm:M20")
    s = session("bank", 1, runtime=m.build(), txs=20)
    with pytest.raises(PmsimError, match="no room for the commit marker"):
        s.run(20)


def test_workers_never_write_the_persistent_snapshot() -> None:
    """I5: worker cores store only to their logs; the PS is the checkpointer's (core 2)."""
    s = session("hashmap", 2, runtime="nvhtm-fine", txs=20)
    s.run(20)
    rt = s.runtime
    ev = s.machine.trace().events
    st = ev[ev["kind"] == Ev.STORE]
    data = (st["addr"] >= rt._data_lo) & (st["addr"] < rt._data_hi)
    assert data.any()
    assert set(st["tid"][data].tolist()) == {2}
    assert rt.counts.cp_runs > 5


def test_aborted_attempts_leave_no_pm_traffic_and_counts_match_the_instructions() -> None:
    """H7 and the literal count: the workers' PM stores and clwb's are exactly the literal A1
    words and flushes of the committed updates (none for aborted attempts)."""
    s = session("bank", 4, runtime="nvhtm", txs=40,
                params={"accounts": 8, "initial": 1000, "max_amount": 10, "u": 0.8})
    s.run(40)
    rt = s.runtime
    assert rt.htm_stats().aborts > 10
    ev = s.machine.trace().events
    workers = ev["tid"] < 4
    stores = int(((ev["kind"] == Ev.STORE) & workers).sum())
    clwbs = int(((ev["kind"] == Ev.CLWB) & workers).sum())
    assert stores == rt.counts.literal_words
    assert clwbs == rt.counts.literal_flushes


def test_counts_match_table1_formulas_in_both_modes() -> None:
    """Table 1 (Bank, u = 90%, two transfers: W = 4): paper-calibrated 0.9 (W + 1) = 4.5 writes
    and 0.9 ceil((W + 1) / 4) = 1.8 flushes per transaction; literal A1 2W + 3 words and L + 2
    flushes per update (L = the data entries' lines)."""
    s = session("bank", 1, runtime="nvhtm-nlp", txs=400,
                params={"accounts": 64, "initial": 1 << 30, "max_amount": 10, "u": 0.9,
                        "w": 2, "r": 8})
    s.run(400)
    rt = s.runtime
    c = rt.counts
    n = c.updates + c.read_only
    assert n == 400 and c.entries == 4 * c.updates
    f = c.updates / n
    per = c.per_tx()
    assert per["paper_writes_per_tx"] == pytest.approx(f * 5)
    assert per["paper_flushes_per_tx"] == pytest.approx(f * 2)  # 5 slots span 2 lines at any offset
    assert per["paper_writes_per_tx"] == pytest.approx(4.5, abs=0.2)
    assert per["paper_flushes_per_tx"] == pytest.approx(1.8, abs=0.08)
    assert per["literal_words_per_tx"] == pytest.approx(f * 11)
    # data entries at offsets 0..3 of a line: 1 line at offset 0, else 2; positions advance by 5
    lit = sum(len(lines_of_slots(5 * k, 5 * k + 4, 1 << 16)) + 2 for k in range(c.updates))
    assert c.literal_flushes == lit
    assert c.cp_words == 0 or c.cp_runs  # NLP: the checkpointer only drains at the end


def test_flush_emulation_charges_500ns_per_flush() -> None:
    fast = session("bank", 1, runtime="nvhtm", txs=30, seed=3)
    slow = session("bank", 1, runtime="nvhtm-emul", txs=30, seed=3)
    fast.run(30)
    slow.run(30)
    assert fast.runtime.commit_order == slow.runtime.commit_order
    extra = np.mean(slow.runtime.ack_latencies) - np.mean(fast.runtime.ack_latencies)
    flushes = fast.runtime.counts.literal_flushes / fast.runtime.commits
    assert extra == pytest.approx(500 * flushes, rel=0.1)


def test_full_logs_abort_and_wait_for_the_checkpointer() -> None:
    s = session("bank", 2, runtime="nvhtm-fine", txs=30)
    s.run(30)
    rt = s.runtime
    assert rt.counts.log_full > 0 and rt.counts.log_waits > 0 and rt.counts.cp_runs > 10
    assert rt.htm_stats().explicit >= rt.counts.log_full
    assert s.check()


def test_sgl_body_restarts_when_the_log_fills_under_the_lock() -> None:
    """alloc-x logs more entries than its PMSpec declares words (its writes to fresh blocks):
    under the SGL the body is undone and rerun once the log is empty."""

    class OneAttempt(NVHTM_FINE):  # type: ignore[misc, valid-type]
        name = "nvhtm-fine-one-attempt"
        htm_budget = 1

    s = Session.create(OneAttempt, "alloc-x", fuzz_machine("pdom1", 2, 1), threads=2, seed=1,
                       txs=40, params={"x": 2, "groups": 2, "max_bytes": 64, "abort_pct": 30})
    s.run(40)
    rt = s.runtime
    assert rt.counts.sgl_restarts > 0 and rt.htm_stats().fallbacks > 10
    assert s.check()
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == [] and rec.data == s.workload.expected(rt.commit_order)


def test_skewed_clocks_spin_delta() -> None:
    s = session("bank", 2, runtime="nvhtm-skew", txs=5)
    assert s.machine.config.htm.tsc_skew_ns[:2] == (0.0, 200.0)
    assert s.runtime._delta == 200.0
    assert session("bank", 2, txs=5).runtime._delta == 0.0


def test_recovery_truncates_and_is_idempotent() -> None:
    s = session("bank", 2, runtime="nvhtm-nlp", txs=20)
    rt = s.runtime
    images: list[np.ndarray] = []
    orig = rt._durable_commit

    def grab(cpu: Any, tx: Any) -> Any:
        yield from orig(cpu, tx)
        if tx.txid & 0xFFFFFFFF == 12 and not images:
            images.append(s.machine.pm_image())

    rt._durable_commit = grab  # type: ignore[method-assign]
    s.run(20)
    first = s.recover(images[0])
    assert first.errors == []  # every log truncated, no CPLog left
    again = s.recover(s.machine.pm_image())
    assert again.errors == [] and again.data == first.data


def test_direct_begin_is_refused_and_steps_are_declared() -> None:
    s = session("bank", 1)
    with pytest.raises(ConfigError, match="optimistic"):
        next(s.runtime.begin(s.machine.cpu(0)))
    names = [st.name for st in get_runtime("nvhtm").persist_steps()]
    assert names and all(n.startswith("nvhtm.") for n in names)
    assert {"nvhtm.commit.fence-entries", "nvhtm.commit.fence-marker", "nvhtm.cp.fence",
            "nvhtm.recover.fence-destroy"} <= set(names)


def test_a_log_smaller_than_a_transaction_is_refused() -> None:
    class Tiny(NvHtmRuntime):
        name = "nvhtm-tiny-log"

        @classmethod
        def slots_for(cls, spec: Any) -> int:
            return 2

    with pytest.raises(ConfigError, match="log_slots"):
        session("bank", 1, runtime=Tiny)


SMALL_LOG = "nvhtm[log_slots=16,largest_tx_slots=8]"
"""A log of 16 slots kept below two of the hash map's declared largest transaction (11 slots,
which its transactions do reach: 24 slots in whole lines) by a smaller ``largest_tx_slots``:
its larger transactions abort on LOG_FULL and wait for the checkpointer."""


def test_largest_tx_slots_keeps_a_small_log_and_reports_it() -> None:
    raised = session("hashmap", 2, runtime="nvhtm[log_slots=16]", txs=20)
    kept = session("hashmap", 2, runtime=SMALL_LOG, txs=20)
    for s in (raised, kept):
        s.run(20)
        assert s.check()
    assert raised.runtime.facts() == {"nvhtm.log_slots": 24.0}
    assert kept.runtime.facts() == {"nvhtm.log_slots": 16.0}
    assert kept.runtime.counters()["nvhtm.cp_runs"] > raised.runtime.counters()["nvhtm.cp_runs"]


def test_a_transaction_larger_than_the_kept_log_stops_the_run() -> None:
    s = session("hashmap", 1, runtime="nvhtm[log_slots=8,largest_tx_slots=4]", txs=20)
    with pytest.raises(ConfigError, match="largest_tx_slots"):
        s.run(20)


def test_crash_fuzzing_a_kept_small_log() -> None:
    rep = fuzz(FuzzConfig(runtime=SMALL_LOG, workload="hashmap", threads=2, txs=8,
                          idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


def test_counters_report_aborts_by_cause() -> None:
    s = session("bank", 4, runtime="nvhtm-fine", txs=20)
    s.run(20)
    k = s.runtime.counters()
    assert k["htm.conflict"] > 0 and k["nvhtm.log_full"] > 0
    assert k["htm.attempts"] >= k["htm.commits"] > 0
    rep = s.runtime.report()
    assert rep["htm_aborts"] == k["htm.conflict"] + k["htm.capacity"] + k["htm.explicit"] + \
        k["htm.flush"] + k["htm.lock"]


# -- crash fuzzing -------------------------------------------------------------------------------

def test_checkpoints_fall_inside_the_fuzzed_trace() -> None:
    """The fine variant's checkpointer fences (crash points: every fence is one) interleave with
    the workers' commits, so crashes land inside checkpoints and their truncation."""
    cfg = fuzz_machine("pdom1", 2, 0)
    s = session("bank", 2, runtime="nvhtm-fine", txs=10, cfg=cfg, params={"accounts": 4})
    log: list[tuple[int, int, str]] = []
    s.runtime.log_steps(log)
    s.run(10)
    steps = [n for _, _, n in log]
    assert steps.count("nvhtm.cp.fence-completed") > 5
    ev = s.machine.trace().events
    cp_fences = np.nonzero((ev["kind"] == Ev.SFENCE) & (ev["tid"] == 2))[0]
    commits = np.nonzero((ev["kind"] == Ev.MARK) & (ev["aux"] == int(Mark.TX_DURABLE)))[0]
    assert cp_fences.size and cp_fences[0] < commits[-1]


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["bank", "hashmap"])
def test_crash_fuzzing_two_threads_is_exhaustive_and_passes(workload: str, domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="nvhtm-fine", workload=workload, domain=domain, threads=2,
                          txs=10, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


@pytest.mark.parametrize("runtime", ["nvhtm-race", "nvhtm-skew", "nvhtm-lc", "nvhtm"])
def test_crash_fuzzing_other_variants(runtime: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload="bank", threads=2, txs=10, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


LONG_TXS = {"bank": 12, "hashmap": 8, "tpcc": 2}
"""Transactions per thread in the long campaigns (TPC-C's New-Order writes ~100 words)."""
@pytest.mark.slow
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("order", ["line", "px86"])
@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("workload", ["bank", "hashmap", "tpcc"])
def test_long_campaign(workload: str, threads: int, order: str, domain: str) -> None:
    """Issue 13's matrix: Bank, the hash map and TPC-C, 2-4 threads, both order modes, every
    domain, with crashes during checkpoints, recovery and after it; exhaustive at every crash
    point. TPC-C with 3-4 threads in PDOM-0/1 has points of up to 10^19 states (the
    checkpointer's replay leaves tens of PS lines in flight under one fence), but recovery
    rewrites those lines before it reads them, so they fall into a few read-set classes."""
    rep = fuzz(FuzzConfig(runtime="nvhtm-fine", workload=workload, domain=domain,
                          threads=threads, txs=LONG_TXS[workload], idempotence=2, order=order,
                          budget=1 << 18))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and not rep.deep_points_sampled and not rep.read_log_misses, rep.summary()


def test_crash_fuzzing_allocation() -> None:
    """alloc-x logs the allocation bits and the writes to fresh blocks (more entries than its
    PMSpec declares words: the SGL path waits for an empty log)."""
    rep = fuzz(FuzzConfig(runtime="nvhtm-race", workload="alloc-x", domain="pdom2", threads=2,
                          txs=8, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["pdom0", "pdom1"])
def test_long_campaign_allocation(domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="nvhtm-race", workload="alloc-x", domain=domain, threads=2,
                          txs=8, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)


# -- mutants -------------------------------------------------------------------------------------

CARD = ("M1", "M2", "M3", "M5", "M6", "M7", "M8", "M9", "M10", "M11", "M12", "M13", "M14",
        "M15", "M16", "M17", "M18", "M19", "M21")


def test_every_card_mutation_is_registered() -> None:
    """Each is killed where it is a bug by tests/crashfuzz/test_mutants.py (the kill matrix)."""
    assert {f"nvhtm:{m}" for m in CARD} == {m.name for m in MUTANTS}
    assert {m.name for m in MUTANTS} <= set(REGISTERED)
    assert not {m.name for m in UNREGISTERED} & set(REGISTERED)


@pytest.mark.parametrize("mutation", ["M1", "M2", "M5", "M10", "M12"])
def test_persist_ordering_mutants_survive_in_pdom2(mutation: str) -> None:
    m = get_mutant(f"nvhtm:{mutation}")
    assert m.domains == ("pdom0", "pdom1")
    rep = fuzz(FuzzConfig(runtime=m.name, workload=m.workload or "bank", domain="pdom2",
                          threads=2, txs=8, idempotence=1, reduce=False, budget=4096))
    assert rep.ok, crashfuzz.format_report(rep)
