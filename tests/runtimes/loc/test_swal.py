"""S-WAL, LOC's software WAL baseline (papers/loc.md §2, §8, §10): runs match the reference model,
each writing transaction issues the four phases with CLFLUSH and one MFENCE each (a persist
barrier in PDOM-0), the acknowledgment follows the durable commit record, recovery replays a
whole commit record and discards a torn one, exhaustive crash fuzzing passes on LOC's
structures in both order modes and every domain, and every mutant is killed where it is a bug.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz import Campaign, FuzzConfig, fuzz
from crashfuzz.mutants import kill_one
from pmsim import Machine, preset
from pmsim.runtimes import Mutant, PMSpec, StaticArray, create_runtime, drop, fit_pm, get_runtime
from pmsim.runtimes.base import COMMITTED, H_STATE, H_TAIL
from pmsim.runtimes.labels import Labeller
from pmsim.runtimes.registry import all_mutants
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

SMALL: dict[str, dict[str, Any]] = {
    "btree": {"trees": 2, "node_keys": 3, "keys": 40, "initial": 15, "ops_per_tx": 2},
    "rbtree": {"trees": 2, "keys": 40, "initial": 15, "ops_per_tx": 2},
    "hashtable": {"slots": 32, "keys": 60, "initial": 10, "probe_limit": 6, "ops_per_tx": 2},
    "sps": {"entries": 64, "string_words": 4},
    "alloc-x": {"abort_pct": 30.0},
}
SPEC = PMSpec(statics=(StaticArray("a", 32, 4),), heap=((3, 3, 8),))
SLOTS = (0, 9, 17)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("workload", sorted(SMALL))
def test_matches_reference_and_recovers_a_clean_image(workload: str, threads: int) -> None:
    cfg = preset("marathe-pdom1").replace(cores=threads)
    s = Session.create("swal", workload, cfg, threads=threads, seed=1, txs=20,
                       params=SMALL[workload])
    s.run(20)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 20 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order) != wl.expected([])
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


# -- one transaction, instruction by instruction ---------------------------------------------------
def setup(domain: str = "pdom1") -> tuple[Machine, Any]:
    cfg = preset(f"marathe-{domain}").replace(cores=1)
    cfg = fit_pm(cfg, get_runtime("swal").plan(SPEC, 1).size, shrink=True)
    m = Machine(cfg)
    rt = create_runtime("swal", m, SPEC)
    m.reset_trace()
    return m, rt


def run_tx(m: Machine, rt: Any, check: Any = None) -> None:
    """One transaction adding 1 to every word of SLOTS; ``check(tx)`` runs before the commit."""

    def body(cpu: Any) -> Any:
        tx = yield from rt.begin(cpu)
        for s in SLOTS:
            obj = rt.static("a", s)
            tx.write_words(obj, 0, [v + 1 for v in tx.read_words(obj, 0, 4)])
        if check is not None:
            check(tx)
        yield from rt.commit(tx)

    m.spawn(body, 0)
    m.run()


def kinds(m: Machine) -> list[int]:
    return m.trace().events["kind"].tolist()


def test_reads_see_the_transaction_s_writes_and_homes_change_only_after_commit() -> None:
    m, rt = setup()

    def check(tx: Any) -> None:
        obj = rt.static("a", 9)
        assert tx.read_words(obj, 0, 4) == [1] * 4
        assert rt.peek_words(obj, 0, 4) == [0] * 4  # the home is not written in the transaction

    run_tx(m, rt, check)
    assert [rt.peek_words(rt.static("a", s), 0, 4) for s in SLOTS] == [[1] * 4] * 3
    assert rt.check_invariants() == []


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
def test_four_phases_with_clflush_and_an_mfence_each(domain: str) -> None:
    m, rt = setup(domain)
    run_tx(m, rt)
    k = kinds(m)
    # 3 records of [home][n][4 values] = 3 log lines, the record's line, 3 home lines, the
    # truncation's line; no CLWB anywhere
    assert k.count(Ev.CLFLUSH) == 8 and k.count(Ev.CLWB) == k.count(Ev.CLFLUSHOPT) == 0
    if domain == "pdom0":  # a persist barrier: sfence, pcommit, sfence
        assert k.count(Ev.PCOMMIT) == 4 and k.count(Ev.MFENCE) == 0
    else:
        assert k.count(Ev.MFENCE) == 4 and k.count(Ev.SFENCE) == 0


def test_read_only_transactions_issue_nothing() -> None:
    m, rt = setup()

    def body(cpu: Any) -> Any:
        tx = yield from rt.begin(cpu)
        tx.read_words(rt.static("a", 3), 0, 4)
        yield from rt.commit(tx)

    m.spawn(body, 0)
    m.run()
    k = kinds(m)
    assert k.count(Ev.STORE) == k.count(Ev.CLFLUSH) == k.count(Ev.MFENCE) == 0


def test_acknowledgment_follows_the_commit_record_and_precedes_the_home_writes() -> None:
    m, rt = setup()
    run_tx(m, rt)
    ev = m.trace().events
    kind, aux, addr = ev["kind"], ev["aux"], ev["addr"]
    hdr = rt.layout.desc[0]
    mark = np.flatnonzero(kind == Ev.MARK)
    commit = int(mark[aux[mark] == Mark.TX_COMMIT][0])
    durable = int(mark[aux[mark] == Mark.TX_DURABLE][0])
    stores = np.flatnonzero(kind == Ev.STORE)
    record = int(stores[addr[stores] == hdr + 8 * H_STATE][0])
    homes = stores[np.array([rt.layout.is_data(int(a), 8) for a in addr[stores]])]
    fences = np.flatnonzero(kind == Ev.MFENCE)
    assert commit < record < int(fences[1]) < durable < int(homes[0])


def recover(rt: Any, img: np.ndarray) -> Any:
    m2 = Machine(rt.m.config, backend=rt.m.backend)
    m2.load_pm_image(img)
    rt2 = rt.reattach(m2)
    rt2.recover(m2.cpu(0))
    return rt2


def image_at_ack() -> tuple[Any, np.ndarray]:
    """The PM image right after the acknowledgment: the commit record durable, no home write."""
    m, rt = setup()
    captured: list[np.ndarray] = []
    orig = rt._checkpoint

    def checkpoint(tx: Any) -> None:
        captured.append(m.pm_image())
        orig(tx)

    rt._checkpoint = checkpoint
    run_tx(m, rt)
    return rt, captured[0]


def test_recovery_replays_a_whole_commit_record_idempotently() -> None:
    rt, img = image_at_ack()
    assert rt.committed(0) is None  # truncated by the end of the run
    rt2 = recover(rt, img)
    assert [rt2.peek_words(rt2.static("a", s), 0, 4) for s in SLOTS] == [[1] * 4] * 3
    assert rt2.check_invariants() == []
    again = recover(rt2, rt2.m.pm_image())
    assert [again.peek_words(again.static("a", s), 0, 4) for s in SLOTS] == [[1] * 4] * 3


@pytest.mark.parametrize("word", [H_STATE, H_TAIL])
def test_a_torn_commit_record_is_discarded(word: int) -> None:
    """PX86: the record's two words persist independently; either alone commits nothing."""
    rt, img = image_at_ack()
    words = img.view(np.uint64)
    hdr = (rt.layout.desc[0] - rt.m.pm.base) // 8
    assert words[hdr + H_STATE] & 0xFF == COMMITTED
    words[hdr + word] = 0
    rt2 = recover(rt, img)
    assert [rt2.peek_words(rt2.static("a", s), 0, 4) for s in SLOTS] == [[0] * 4] * 3
    assert rt2.check_invariants() == []


def test_log_records_are_labelled() -> None:
    m, rt = setup()
    run_tx(m, rt)
    lab = Labeller.of(rt, m.peek)
    head = rt.layout.log[0]
    assert lab.word(head) == "S-WAL log T0 record 0 word 0 (home)"
    assert lab.word(head + 8 * 7) == "S-WAL log T0 record 1 word 1 (length)"
    assert lab.word(head + 8 * 17) == "S-WAL log T0 record 2 word 5 (new value 3)"


def test_every_declared_step_is_issued() -> None:
    declared = {s.name for s in get_runtime("swal").persist_steps()}
    issued: set[str] = set()
    for wl, params in (("btree", ()), ("alloc-x", (("abort_pct", 30.0),))):
        camp = Campaign(FuzzConfig(runtime="swal", workload=wl, params=params, txs=12, depth=1))
        issued |= {name for _, _, name in camp.step_log}
    assert issued <= declared, issued - declared
    assert {s for s in declared - issued if "recover" not in s} == set()


# -- crash fuzzing -------------------------------------------------------------------------------
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("order", ["line", "px86"])
@pytest.mark.parametrize("workload", ["btree", "hashtable", "rbtree", "sps"])
def test_crash_fuzzing_is_exhaustive_and_passes(workload: str, order: str, domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="swal", workload=workload, domain=domain, order=order,
                          threads=2, txs=4, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.recoveries > 0
    assert rep.transactions == 8 and rep.deep_runs > 0


@pytest.mark.parametrize("domain", ["pdom0", "pdom1"])
def test_crash_fuzzing_with_allocation_and_aborts(domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="swal", workload="alloc-x", params=(("abort_pct", 30.0),),
                          domain=domain, threads=2, txs=4, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)


# -- mutants -------------------------------------------------------------------------------------
MUTANTS = sorted(n for n in all_mutants() if n.startswith("swal:"))
BASE = FuzzConfig(txs=8, idempotence=2, reduce=False, budget=4096, new_tx=3,
                  new_tx_every_image=True)


def test_the_mutants_are_registered() -> None:
    assert MUTANTS == [f"swal:S{i}" for i in range(1, 6)]


@pytest.mark.parametrize(("mutant", "domain"),
                         [(n, d) for n in MUTANTS for d in all_mutants()[n].domains])
def test_mutant_killed_where_it_is_a_bug(mutant: str, domain: str) -> None:
    row = kill_one(all_mutants()[mutant], domain, BASE, mutant, check_base=False)
    assert row.killed, f"{mutant} survived in {domain}"


@pytest.mark.parametrize("phase", ["log", "commit", "update", "truncate"])
def test_a_lone_mfence_matters_only_where_the_wpq_is_volatile(phase: str) -> None:
    """A CLFLUSHed line is persistent before any later store of its thread (PDOM-1, Px86), so
    dropping only the MFENCE of a phase is a bug in PDOM-0 alone."""
    cls = Mutant(f"swal:no-{phase}-fence", "swal", (drop(f"swal.{phase}.fence"),)).build()
    found = {}
    for domain in ("pdom0", "pdom1"):
        rep = fuzz(FuzzConfig(runtime="swal", workload="rbtree", domain=domain, threads=2,
                              txs=4, idempotence=2, reduce=False, new_tx=3, stop_at_first=True),
                   runtime=cls)
        found[domain] = rep.ok
    assert found == {"pdom0": False, "pdom1": True}
