"""ATOM, the hardware undo-logging baseline of Proteus (papers/proteus.md §8): runs match the
reference model and recover a clean image; one transaction, event by event (log at retirement,
the store after the acknowledgement, END after the data fence, truncation with the END entry
last); the write counts (data + two log lines per entry + END + one truncation write per entry,
as media writes the engine counts); exhaustive crash fuzzing in both order modes and PDOM-1/2;
the card's mutants A1 and A2, and the orderings they and the truncation rely on.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz import Campaign, FuzzConfig, fuzz
from crashfuzz.mutants import kill_one
from pmsim import Machine, preset
from pmsim.cache import native
from pmsim.errors import ConfigError
from pmsim.hw.proteus.atom import FMT, META, ROB_WINDOW_NS
from pmsim.hw.proteus.proteus import END, VALID, trace_entries
from pmsim.runtimes import PMSpec, StaticArray, create_runtime, fit_pm, get_runtime
from pmsim.runtimes.mutation import Mutant, drop, patch
from pmsim.runtimes.registry import MUTANTS
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

get_runtime("atom")  # registers the built-in runtimes and their mutants
SMALL: dict[str, dict[str, Any]] = {
    "btree": {"trees": 2, "node_keys": 3, "keys": 40, "initial": 15},
    "rbtree": {"trees": 2, "keys": 40, "initial": 15},
    "avl": {"trees": 2, "keys": 40, "initial": 15},
    "hashmap": {"maps": 2, "buckets": 8, "keys": 40, "initial": 10},
    "queue": {"queues": 2, "capacity": 6, "prefill": 2},
    "swap": {"entries": 16, "string_words": 8},
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("workload", sorted(SMALL))
def test_matches_reference_and_recovers_a_clean_image(workload: str, threads: int) -> None:
    cfg = preset("proteus-marss").replace(cores=threads)
    s = Session.create("atom", workload, cfg, threads=threads, seed=1, txs=15,
                       params=SMALL[workload])
    s.run(15)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 15 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order) != wl.expected([])
    k = rt.counters()
    assert k["log_entries"] > 0
    assert k["log_writes"] == 2 * k["log_entries"]
    assert k["truncation_writes"] == k["retire_stalls"] == k["log_entries"]
    assert 0 < k["end_marks"] <= rt.commits + rt.aborts
    assert k["tracking_overflows"] == k["truncation_reads"] == 0
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


def test_user_aborts_leave_no_trace() -> None:
    s = Session.create("atom", "bank", preset("proteus-marss").replace(cores=2), threads=2,
                       seed=3, txs=40)
    s.run(40)
    assert s.runtime.aborts > 0 and s.check()
    assert s.recover(s.machine.pm_image()).errors == []


@pytest.mark.ccore
def test_c_and_python_engines_agree() -> None:
    if not native.available():
        pytest.skip("C core not built")
    runs = []
    for backend in ("c", "python"):
        s = Session.create("atom", "hashmap", preset("proteus-marss").replace(cores=2),
                           threads=2, seed=5, txs=12, backend=backend)
        s.run(12)
        runs.append(s)
    a, b = runs
    assert np.array_equal(a.machine.trace().events, b.machine.trace().events)
    assert np.array_equal(a.machine.stats(), b.machine.stats())
    assert a.runtime.counters() == b.runtime.counters()


# -- one transaction, event by event ----------------------------------------------------------------
SPEC = PMSpec(statics=(StaticArray("a", 16, 8),), heap=((2, 2, 8),), max_tx_words=64)
SLOTS = (0, 5, 9)


def setup(runtime: Any = "atom", domain: str = "pdom1") -> tuple[Machine, Any]:
    cfg = preset("proteus-marss").replace(cores=1, domain=domain)
    cfg = fit_pm(cfg, get_runtime(runtime).plan(SPEC, 1).size, shrink=True)
    m = Machine(cfg)
    rt = create_runtime(runtime, m, SPEC)
    m.reset_trace()
    return m, rt


def add_one(tx: Any, slots: tuple[int, ...] = SLOTS) -> None:
    """Add 1 to the first two words of every slot (one line each: two stores per line)."""
    for s in slots:
        obj = tx.rt.static("a", s)
        tx.write(obj, 0, tx.read(obj, 0) + 1)
        tx.write(obj, 1, tx.read(obj, 1) + 1)


def run_body(m: Machine, rt: Any, body: Any) -> None:
    def proc(cpu: Any) -> Any:
        yield from rt.run(cpu, body)

    m.spawn(proc, 0)
    m.run()


def slot_words(rt: Any, slots: tuple[int, ...] = SLOTS) -> list[int]:
    return [rt.peek(rt.static("a", s), 0) for s in slots]


def test_one_transaction_event_by_event() -> None:
    m, rt = setup()
    before = m.count("pm_write_bytes")
    run_body(m, rt, add_one)
    assert slot_words(rt) == [1, 1, 1]
    ev = m.trace().events
    kind, addr, aux = ev["kind"], ev["addr"].astype(np.int64), ev["aux"]
    log, nbytes = rt.layout.log[0], FMT.nbytes
    k = FMT.end_word([])
    homes = [rt.static("a", s) for s in SLOTS]
    # one entry per line, in slot order, found in flight and acknowledged
    ents = trace_entries(SimpleNamespace(trace=m.trace()), rt.layout.log, rt.layout.log_bytes,
                         FMT)
    assert [(t.src, t.seq, t.addr) for t in ents] == [
        (h, i, log + i * nbytes) for i, h in enumerate(homes)]
    stores = np.flatnonzero(kind == Ev.STORE)
    for t, h in zip(ents, homes, strict=True):
        mine = stores[(addr[stores] >= h) & (addr[stores] < h + 64)]
        assert len(mine) == 2
        assert t.first < t.ack < mine.min()  # the store retires after the acknowledgement
        assert t.ack == t.first + 1  # nothing between: the core waits
    # commit: clwb the three lines, sfence, END on the last entry, then invalidations
    fence = int(np.flatnonzero(kind == Ev.SFENCE)[0])
    assert (kind == Ev.SFENCE).sum() == 1 and (kind == Ev.CLWB).sum() == 3
    drained = np.flatnonzero((kind == Ev.NTSTORE) & (aux == 1))
    end_ev = [int(i) for i in drained if addr[i] == log + 2 * nbytes + 8 * k
              and int(ev["value"][i]) & END]
    assert len(end_ev) == 1 and end_ev[0] > fence
    inval = [int(i) for i in drained if (addr[i] - log) % nbytes == 8 * META
             and not int(ev["value"][i]) & VALID]
    assert len(inval) == 3 and min(inval) > end_ev[0]
    assert [(int(addr[i]) - log) // nbytes for i in inval] == [0, 1, 2]  # END entry last
    commit = np.flatnonzero((kind == Ev.MARK) & (aux == Mark.TX_COMMIT))
    durable = np.flatnonzero((kind == Ev.MARK) & (aux == Mark.TX_DURABLE))
    assert commit[0] < fence and max(inval) < durable[0]
    # the log is empty again; writes: 3 data + 2 x 3 log lines + END + 3 invalidations
    assert rt._entries(0) == []
    assert rt.counters() == {
        "log_entries": 3, "log_writes": 6, "source_logs": 0, "logged_hits": 3, "end_marks": 1,
        "truncation_writes": 3, "truncation_reads": 0, "tracking_overflows": 0,
        "wpq_merged": 0, "retire_stalls": 3, "retire_stall_ns": rt.counters()["retire_stall_ns"]}
    assert m.count("pm_write_bytes") - before == 64 * (3 + 6 + 1 + 3)


def blind_add(tx: Any) -> None:
    """Write the first word of every slot without reading it first (a store that may miss)."""
    for s in SLOTS:
        tx.write(tx.rt.static("a", s), 0, 7)


def test_source_log_on_a_miss_waits_less() -> None:
    """A store that misses is logged by the MC from the line it reads for the fill (no extra
    read; acknowledged with the fill, ``mc_ns`` after it); a store that hits waits a round trip
    after its log is sent."""
    m, rt = setup()
    run_body(m, rt, blind_add)
    cold = rt.counters()
    run_body(m, rt, blind_add)
    warm = rt.counters()
    assert cold["source_logs"] == 3 and warm["source_logs"] == 3
    per_cold = cold["retire_stall_ns"] / 3
    per_warm = (warm["retire_stall_ns"] - cold["retire_stall_ns"]) / 3
    assert per_cold <= rt.unit.mc_ns + 1e-9 < per_warm <= rt.unit.rtt + 1e-9
    assert slot_words(rt) == [7, 7, 7]


def test_the_reorder_window_overlaps_work_with_a_log_round_trip_but_not_two_logs() -> None:
    """A store held at retirement lets the core go on for the reorder window (ROB_WINDOW_NS):
    work placed there costs (almost) nothing, while the round trips of two logged stores never
    overlap (the second, and tx-end, wait for the acknowledgement)."""
    def timed(gap: float) -> tuple[float, float, float]:
        m, rt = setup()
        run_body(m, rt, blind_add)  # warm: every later store hits, a round trip each

        def body(tx: Any) -> None:
            tx.write(tx.rt.static("a", 0), 0, 1)
            tx.cpu.work(gap)
            tx.write(tx.rt.static("a", 5), 0, 1)

        before, t0 = rt.counters()["retire_stall_ns"], m.cpu(0).clock
        run_body(m, rt, body)
        return (rt.counters()["retire_stall_ns"] - before, m.cpu(0).clock - t0, rt.unit.rtt)
    stall, took, rtt = timed(0.0)
    assert 2 * rtt - ROB_WINDOW_NS <= stall <= 2 * rtt  # both round trips are waited out
    stall_w, took_w, _ = timed(ROB_WINDOW_NS / 2)
    assert took_w == pytest.approx(took)  # the work hid in the first store's window
    assert stall_w == pytest.approx(stall - ROB_WINDOW_NS / 2)


def test_one_line_transaction_merges_end_and_its_invalidation() -> None:
    m, rt = setup()
    before = m.count("pm_write_bytes")
    run_body(m, rt, lambda tx: add_one(tx, (3,)))
    k = rt.counters()
    assert (k["log_entries"], k["end_marks"], k["truncation_writes"], k["wpq_merged"]) == (
        1, 1, 1, 1)
    assert m.count("pm_write_bytes") - before == 64 * (1 + 2 + 1 + 1 - 1)


def test_abort_restores_and_truncates() -> None:
    m, rt = setup()

    def body(tx: Any) -> bool:
        add_one(tx)
        return False

    run_body(m, rt, body)
    assert slot_words(rt) == [0, 0, 0] and rt.aborts == 1
    assert rt._entries(0) == [] and rt.check_invariants() == []


def test_pdom0_is_refused_and_objects_are_whole_lines() -> None:
    with pytest.raises(ConfigError, match="persistence domain"):
        setup(domain="pdom0")
    cls = get_runtime("atom")
    assert [cls.obj_bytes(w) for w in (1, 8, 9)] == [64, 64, 128]
    assert [cls.static_stride(w) for w in (1, 8, 9)] == [64, 64, 128]
    assert FMT.words == 16 and FMT.block == 64


# -- recovery ----------------------------------------------------------------------------------
def recover(rt: Any, img: np.ndarray) -> Any:
    m2 = Machine(rt.m.config, backend=rt.m.backend)
    m2.load_pm_image(img)
    rt2 = rt.reattach(m2)
    rt2.recover(m2.cpu(0))
    return rt2


def _commit_image(stage: str) -> tuple[Any, np.ndarray]:
    """The PM image of the add_one transaction (three lines, data durable) at ``stage`` of the
    MC's commit: "end" (just before END), "trunc" (END set, the first entry invalidated)."""
    m, rt = setup()
    shots: dict[str, np.ndarray] = {}
    unit = rt.unit
    orig_commit, orig_write = unit._mc_commit, unit._mc_write

    def mc_commit(cpu: Any, c: Any) -> None:
        shots["end"] = m.pm_image()
        orig_commit(cpu, c)

    def mc_write(cpu: Any, c: Any, a: int, value: int) -> None:
        orig_write(cpu, c, a, value)
        if not value & VALID and "trunc" not in shots:
            shots["trunc"] = m.pm_image()

    unit._mc_commit, unit._mc_write = mc_commit, mc_write
    run_body(m, rt, add_one)
    return rt, shots[stage]


def test_recovery_undoes_an_unfinished_transaction_and_empties_the_log() -> None:
    rt, img = _commit_image("end")
    rt2 = recover(rt, img)
    assert slot_words(rt2) == [0, 0, 0] and rt2.check_invariants() == []
    again = recover(rt2, rt2.m.pm_image())
    assert slot_words(again) == [0, 0, 0] and again.check_invariants() == []


def test_recovery_keeps_a_transaction_with_end_during_truncation() -> None:
    rt, img = _commit_image("trunc")
    rt2 = recover(rt, img)
    assert slot_words(rt2) == [1, 1, 1] and rt2.check_invariants() == []


def test_txids_continue_after_a_restart() -> None:
    m, rt = setup()
    run_body(m, rt, add_one)
    rt2 = recover(rt, m.pm_image())
    assert rt2.unit.cores[0].txid == rt.unit.cores[0].txid
    assert rt2.unit.cores[0].cur == rt.unit.cores[0].cur


# -- write counts ------------------------------------------------------------------------------
@pytest.mark.parametrize("string_words", [8, 32])
def test_writes_per_transaction(string_words: int) -> None:
    """Swap (Proteus SS) writes two strings of L = string_words / 8 lines each, so 2L lines per
    transaction: ATOM's media writes are 2L data + 2 x 2L log lines + END + 2L truncation
    writes, against 2L for PMEM+nolog."""
    lines = 2 * string_words // 8
    txs = 10
    got = {}
    for runtime in ("atom", "pmem-nolog"):
        s = Session.create(runtime, "swap", preset("proteus-marss").replace(cores=1), seed=2,
                           params={"entries": 32, "string_words": string_words})
        before = s.machine.count("pm_write_bytes")
        s.run(txs)
        got[runtime] = (s.machine.count("pm_write_bytes") - before) / 64 / txs, s.runtime
    atom, rt = got["atom"]
    k = {n: v / txs for n, v in rt.counters().items()}
    assert (k["log_entries"], k["log_writes"], k["end_marks"], k["truncation_writes"],
            k["wpq_merged"]) == (lines, 2 * lines, 1, lines, 0)
    assert atom == lines + 2 * lines + 1 + lines
    assert got["pmem-nolog"][0] == lines


def test_tracking_table_overflow_costs_a_read_per_extra_entry() -> None:
    m, rt = setup()
    spec = PMSpec(statics=(StaticArray("a", 80, 8),), max_tx_words=200)
    cfg = fit_pm(m.config, get_runtime("atom").plan(spec, 1).size, shrink=True)
    m = Machine(cfg)
    rt = create_runtime("atom", m, spec)
    run_body(m, rt, lambda tx: add_one(tx, tuple(range(80))))
    k = rt.counters()
    assert (k["log_entries"], k["tracking_overflows"], k["truncation_reads"],
            k["truncation_writes"]) == (80, 16, 16, 80)
    assert rt._entries(0) == []


# -- steps -------------------------------------------------------------------------------------
def test_every_declared_step_is_issued() -> None:
    declared = {s.name for s in get_runtime("atom").persist_steps()}
    issued: set[str] = set()
    for name, params in (("btree", ()), ("alloc-x", (("abort_pct", 30.0),))):
        camp = Campaign(FuzzConfig(runtime="atom", workload=name, params=params, txs=12,
                                   depth=1))
        issued |= {n for _, _, n in camp.step_log}
    assert issued <= declared, issued - declared
    assert {s for s in declared - issued if ".recover." not in s} == {"atom.mc.lock"}  # an edge


# -- crash fuzzing -------------------------------------------------------------------------------
FUZZ = (
    [(w, o, d, 2) for w in ("hashmap", "queue", "swap") for o in ("line", "px86")
     for d in ("pdom1", "pdom2")]
    + [(w, "line", "pdom1", 1) for w in ("rbtree", "btree", "alloc-x")]
    + [("avl", "px86", "pdom2", 1), ("bank", "px86", "pdom1", 2)]
)


@pytest.mark.parametrize(("workload", "order", "domain", "threads"), FUZZ)
def test_crash_fuzzing_is_exhaustive_and_passes(workload: str, order: str, domain: str,
                                                threads: int) -> None:
    """Crashes in the run, in recovery (idempotence) and in the run after recovery (depth 2)."""
    params = (("abort_pct", 30.0),) if workload == "alloc-x" else ()
    rep = fuzz(FuzzConfig(runtime="atom", workload=workload, params=params, domain=domain,
                          order=order, threads=threads, txs=3, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.points_sampled == 0 and rep.exhaustive
    assert rep.states_checked > 0 and rep.recoveries > 0 and rep.deep_runs > 0


@pytest.mark.slow
@pytest.mark.parametrize("order", ["line", "px86"])
@pytest.mark.parametrize("domain", ["pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["btree", "rbtree", "avl", "hashmap", "queue", "swap",
                                      "alloc-x", "array", "bank", "kv", "sps"])
@pytest.mark.parametrize("threads", [1, 2])
def test_crash_fuzzing_sweep(workload: str, domain: str, order: str, threads: int) -> None:
    params = (("abort_pct", 30.0),) if workload == "alloc-x" else ()
    rep = fuzz(FuzzConfig(runtime="atom", workload=workload, params=params, domain=domain,
                          order=order, threads=threads, txs=6))
    assert rep.ok, crashfuzz.format_report(rep)


# -- mutants -------------------------------------------------------------------------------------
BASE = FuzzConfig(txs=8, idempotence=2, reduce=False, budget=4096, new_tx=3,
                  new_tx_every_image=True)


@pytest.mark.parametrize(("name", "domain"), [("atom:A1", "pdom1"), ("atom:A1", "pdom2"),
                                              ("atom:A2", "pdom1")])
def test_card_mutants_are_killed_on_their_workload(name: str, domain: str) -> None:
    m = MUTANTS[name]
    row = kill_one(m, domain, BASE, name, check_base=False)
    assert row.killed and row.workload == m.workload, row


def _survives(mutations: tuple[Any, ...], domain: str = "pdom1") -> bool:
    mut = Mutant("atom:test", "atom", mutations, ("pdom1",))
    for wl in ("queue", "sps"):
        rep = fuzz(FuzzConfig(runtime="atom", workload=wl, domain=domain, txs=3,
                              reduce=False, stop_at_first=True), runtime=mut.build())
        if not rep.ok:
            return False
    return True


def _set(value: Any) -> Any:
    return lambda _orig: value


@pytest.mark.parametrize("domain", ["pdom1", "pdom2"])
def test_the_wait_or_the_line_lock_alone_keeps_the_log_first(domain: str) -> None:
    """A1 needs both gone: without the retirement wait the MC's line lock (the edge) orders the
    data after its log; without the lock the wait does."""
    assert _survives((drop("atom.log.stall"),), domain)
    assert _survives((drop("atom.mc.lock"),), domain)
    no_wait = Mutant("atom:test", "atom", (drop("atom.log.stall"),), ("pdom1",)).build()
    for runtime, edges in ((no_wait, True), (None, False)):
        camp = Campaign(FuzzConfig(runtime="atom", workload="queue", domain=domain, txs=3,
                                   depth=1), runtime=runtime)
        n = sum(len(p(camp.model.index, domain)) for p in camp.edges)
        assert (n > 0) == edges  # with the wait, no store of a line precedes its log's ack


@pytest.mark.parametrize("mutations", [
    (drop("atom.mc.end-mark"),),
    (patch("end_entry_last", _set(False), "END entry first"),),
    (drop("atom.log.bits-clear"),),
], ids=["no-end", "end-entry-first", "bits-kept"])
def test_truncation_and_logging_orderings_matter(mutations: tuple[Any, ...]) -> None:
    """Truncation without END, or with the END entry invalidated first, lets a crash during it
    undo part of a committed transaction; logged bits kept past tx-end leave the next
    transaction's first store to such a line unlogged."""
    assert not _survives(mutations)


def test_truncation_itself_is_not_needed_for_recovery() -> None:
    """Without invalidations the circular log overwrites a committed transaction's END entry
    only after its other entries (Proteus's argument, card M6): truncation costs writes, not
    correctness."""
    assert _survives((drop("atom.mc.truncate"),))
