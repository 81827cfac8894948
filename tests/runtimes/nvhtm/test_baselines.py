"""NV-HTM's baselines (papers/nv-htm.md §7): PHTM-like and PSTM-like runs match the reference
model, pass exhaustive crash fuzzing with two threads in every domain, their card-derived
mutants are killed, and each has the property that defines it (PHTM: locks held after the
commit, the data line in the HTM write set, aborted attempts write no PM; PSTM: one flushed
undo entry per first write, aborts that write PM; both: the per-transaction counts of the
card's Table 1 formulas and the 500 ns flush emulation)."""

from __future__ import annotations

from typing import Any

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim import preset
from pmsim.runtimes import get_mutant
from pmsim.runtimes.nvhtm.phtm import MUTANTS as PHTM_MUTANTS
from pmsim.runtimes.nvhtm.pstm import MUTANTS as PSTM_MUTANTS
from pmsim.trace import Ev
from pmsim.workloads import Session

SMALL = {
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
    "hashmap": {"maps": 2, "buckets": 2, "keys": 6, "initial": 2},
}
RUNTIMES = ("phtm", "pstm")


def session(runtime: Any, workload: str, threads: int, txs: int = 30, seed: int = 1,
            params: dict[str, Any] | None = None) -> Session:
    return Session.create(runtime, workload, preset("marathe-pdom1"), threads=threads, seed=seed,
                          txs=txs, params=SMALL.get(workload) if params is None else params)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("workload", sorted(SMALL))
@pytest.mark.parametrize("runtime", RUNTIMES + ("phtm-emul", "pstm-emul"))
def test_matches_reference_and_recovers_a_clean_image(runtime: str, workload: str,
                                                      threads: int) -> None:
    s = session(runtime, workload, threads, txs=20)
    s.run(20)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 20 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order) != wl.expected([])
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


# -- crash fuzzing -------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["bank", "kv"])
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_crash_fuzzing_two_threads_is_exhaustive_and_passes(runtime: str, workload: str,
                                                            domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload=workload, domain=domain, threads=2, txs=6,
                          idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


@pytest.mark.parametrize("runtime", ["phtm-emul", "pstm-emul"])
def test_crash_fuzzing_with_allocation_and_emulation(runtime: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload="alloc-x", threads=2, txs=3, idempotence=1))
    assert rep.ok, crashfuzz.format_report(rep)


KILLS = [(m.name, d) for m in PHTM_MUTANTS + PSTM_MUTANTS for d in m.domains]


@pytest.mark.parametrize(("mutant", "domain"), KILLS)
def test_mutant_killed(mutant: str, domain: str) -> None:
    m = get_mutant(mutant)
    rep = fuzz(FuzzConfig(runtime=m.name, workload=m.workload or "bank", domain=domain,
                          threads=2, txs=8, idempotence=2, reduce=False, budget=4096, new_tx=3,
                          stop_at_first=True))
    assert not rep.ok, f"{m.name} survived in {domain}"


def test_every_baseline_has_a_dropped_flush_and_a_dropped_fence_mutant() -> None:
    for muts in (PHTM_MUTANTS, PSTM_MUTANTS):
        drops = [s for m in muts for s in m.mutations if type(s).__name__ == "Drop"]
        assert any("flush" in d.step for d in drops)
        assert any("fence" in d.step or "order" in d.step for d in drops)


# -- what defines each baseline ------------------------------------------------------------------

def _worker_instructions(s: Session, threads: int) -> tuple[int, int]:
    """PM stores and clwb's of the worker threads in the session's trace."""
    ev = s.machine.trace().events
    pm = s.machine.pm
    w = (ev["tid"] < threads) & (ev["addr"] >= pm.base) & (ev["addr"] < pm.end)
    return int(((ev["kind"] == Ev.STORE) & w).sum()), int(((ev["kind"] == Ev.CLWB) & w).sum())


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_literal_counts_equal_the_workers_instructions(runtime: str) -> None:
    """Aborted PHTM attempts leave no PM traffic; PSTM's do (their undo entries and
    restores)."""
    s = session(runtime, "bank", 3, txs=30,
                params={"accounts": 8, "initial": 30, "max_amount": 40, "u": 0.8, "w": 2})
    s.run(30)
    rt = s.runtime
    stores, clwbs = _worker_instructions(s, 3)
    assert stores == rt.counts.literal_words
    assert clwbs == rt.counts.literal_flushes
    if runtime == "pstm":
        assert rt.counts.aborts_logged > 0 and rt.counts.restored_words > 0


def test_table1_formulas_paper_calibrated() -> None:
    """Bank (u = 90%, two transfers, each account on its own line, W = 4 distinct words):
    PHTM writes W entries, the marker, W words in place and the truncation (0.9 x 10 = 9.0;
    Table 1: 9.1) and flushes 2 log lines, 4 data lines and the header (0.9 x 7 = 6.3; Table 1:
    6.3); PSTM without aborts writes W entries, W words and the marker (0.9 x 9) and flushes as
    many lines."""
    from pmsim.experiments.papers.nvhtm import LINE_BANK

    params = {"accounts": 4096, "initial": 1 << 30, "max_amount": 10, "u": 0.9, "w": 2, "r": 8}
    for runtime, writes, flushes in (("phtm", 10, 7), ("pstm", 9, 9)):
        s = Session.create(runtime, LINE_BANK, preset("marathe-pdom1"), threads=1, seed=2,
                           txs=300, params=params)
        s.run(300)
        c = s.runtime.counts
        per = c.per_tx()
        f = c.updates / (c.updates + c.read_only)
        assert per["paper_writes_per_tx"] == pytest.approx(f * writes, rel=0.02)
        assert per["paper_flushes_per_tx"] == pytest.approx(f * flushes, rel=0.02)


def test_phtm_holds_its_locks_until_the_data_is_flushed() -> None:
    """With emulated flushes the post-commit window is long: writers of a locked line abort
    (explicitly) far more than with realistic flushes. 32 accounts: with 8, four threads
    conflict on a locked line even in the short window (measured 0.56 of attempts aborting
    against 0.68 on the marathe-pdom1 machine, whose out-of-order core shortens transactions),
    and the window's effect drowns in them (32 accounts: 0.24 against 0.65)."""
    params = {"accounts": 32, "initial": 1 << 20, "max_amount": 10, "w": 2}
    rates = {}
    for rt in ("phtm", "phtm-emul"):
        s = session(rt, "bank", 4, txs=40, params=params)
        s.run(40)
        h = s.runtime.htm_stats()
        rates[rt] = h.explicit / max(h.attempts, 1)
    assert rates["phtm-emul"] > 1.3 * rates["phtm"] > 0


def test_phtm_write_footprint_is_data_lock_and_log() -> None:
    """A transaction writing W words on W consecutive lines holds about 2.25 W lines in its HTM
    write set (data, lock, a quarter line of log), NV-HTM about 1.25 W (card §3): with 8 ways
    per L1 set PHTM overflows near W = 192, NV-HTM near 384, plain HTM not before 512."""
    from pmsim.experiments.papers.nvhtm import capacity_fallbacks

    assert capacity_fallbacks("phtm", 176) == 0
    assert capacity_fallbacks("phtm", 256) > 0
    assert capacity_fallbacks("nvhtm-nlp", 256) == 0
    assert capacity_fallbacks("nvhtm-nlp", 448) > 0
    assert capacity_fallbacks("htm", 500) == 0


def test_flush_emulation_charges_500ns_per_flush() -> None:
    for base in RUNTIMES:
        fast = session(base, "kv", 1, txs=20, seed=3)
        slow = session(base + "-emul", "kv", 1, txs=20, seed=3)
        fast.run(20)
        slow.run(20)
        assert fast.runtime.commit_order == slow.runtime.commit_order
        extra = sum(slow.runtime.latencies) - sum(fast.runtime.latencies)
        flushes = fast.runtime.counts.per_tx()["paper_flushes_per_tx"] * fast.runtime.commits
        assert extra == pytest.approx(500 * flushes, rel=0.1), base
