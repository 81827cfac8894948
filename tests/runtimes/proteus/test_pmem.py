"""PMEM, PMEM+pcommit and PMEM+nolog, Proteus's software baselines (papers/proteus.md §8): runs
match the reference model, a transaction issues the card's four steps (log, flag, data, clear)
with one sfence each (pmem-pcommit: a persist barrier each, sfence; pcommit; sfence in PDOM-0),
the write counts follow the card's formula, recovery restores the log exactly when the flag is
set, exhaustive crash fuzzing passes in each runtime's domains (crashes in the run, during
recovery and in the run after recovery), and the card's mutants S1-S3 are killed.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz import Campaign, FuzzConfig, fuzz
from crashfuzz.mutants import kill_one
from pmsim import Machine, preset
from pmsim.errors import ConfigError, UnsupportedDomainError
from pmsim.runtimes import PMSpec, StaticArray, create_runtime, fit_pm, get_runtime
from pmsim.runtimes.base import H_STATE, IDLE, RUNNING
from pmsim.runtimes.labels import Labeller
from pmsim.runtimes.proteus.pmem import PmemDiscoveryTx, PmemRuntime, header_lines
from pmsim.runtimes.registry import all_mutants
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session
from pmsim.workloads.alloc_x import AllocX
from pmsim.workloads.array import Array

RUNTIMES = ("pmem", "pmem-pcommit", "pmem-nolog")
SMALL: dict[str, dict[str, Any]] = {
    "btree": {"trees": 2, "node_keys": 3, "keys": 40, "initial": 15},
    "rbtree": {"trees": 2, "keys": 40, "initial": 15},
    "avl": {"trees": 2, "keys": 40, "initial": 15},
    "hashmap": {"maps": 2, "buckets": 8, "keys": 40, "initial": 10},
    "queue": {"queues": 2, "capacity": 6, "prefill": 2},
    "swap": {"entries": 16, "string_words": 8},
    "alloc-x": {"abort_pct": 30.0},
}


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("workload", sorted(SMALL))
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_matches_reference_and_recovers_a_clean_image(runtime: str, workload: str,
                                                      threads: int) -> None:
    cfg = preset("proteus-marss").replace(cores=threads)
    s = Session.create(runtime, workload, cfg, threads=threads, seed=1, txs=15,
                       params=SMALL[workload])
    s.run(15)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 15 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order) != wl.expected([])
    k = rt.counters()
    if runtime == "pmem-nolog":
        assert k["log_lines"] == k["flag_writes"] == k["discovery_passes"] == 0
    else:
        assert k["discovery_passes"] == 15 * threads and k["fallback_lines"] == 0
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


# -- one transaction, instruction by instruction ---------------------------------------------------
SPEC = PMSpec(statics=(StaticArray("a", 16, 8),), heap=((2, 2, 8),), max_tx_words=64)
SLOTS = (0, 5, 9)


def setup(runtime: str = "pmem", domain: str = "pdom1") -> tuple[Machine, Any]:
    cfg = preset("proteus-marss").replace(cores=1, domain=domain)
    cfg = fit_pm(cfg, get_runtime(runtime).plan(SPEC, 1).size, shrink=True)
    m = Machine(cfg)
    rt = create_runtime(runtime, m, SPEC)
    m.reset_trace()
    return m, rt


def add_one(tx: Any) -> None:
    """Add 1 to the first word of every slot of SLOTS (one line each)."""
    for s in SLOTS:
        obj = tx.rt.static("a", s)
        tx.write(obj, 0, tx.read(obj, 0) + 1)


def run_body(m: Machine, rt: Any, body: Any) -> None:
    def proc(cpu: Any) -> Any:
        yield from rt.run(cpu, body)

    m.spawn(proc, 0)
    m.run()


def run_direct(m: Machine, rt: Any, body: Any, abort: bool = False) -> None:
    """begin / body / commit (or abort) without Runtime.run: no discovery pass."""
    def proc(cpu: Any) -> Any:
        tx = yield from rt.begin(cpu)
        body(tx)
        yield from (rt.abort(tx) if abort else rt.commit(tx))

    m.spawn(proc, 0)
    m.run()


def events(m: Machine) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ev = m.trace().events
    return ev["kind"], ev["addr"], ev["aux"]


def slot_words(rt: Any) -> list[int]:
    return [rt.peek(rt.static("a", s), 0) for s in SLOTS]


@pytest.mark.parametrize("domain", ["pdom1", "pdom2"])
def test_four_steps_each_ended_by_one_sfence(domain: str) -> None:
    m, rt = setup(domain=domain)
    run_body(m, rt, add_one)
    kind, addr, aux = events(m)
    assert slot_words(rt) == [1, 1, 1]
    desc, log = rt.layout.desc[0], rt.layout.log[0]
    fences = np.flatnonzero(kind == Ev.SFENCE)
    assert len(fences) == 4 and (kind == Ev.PCOMMIT).sum() == 0
    stores = np.flatnonzero(kind == Ev.STORE)
    flag = stores[addr[stores] == desc + 8 * H_STATE]
    data = stores[np.array([rt.layout.is_data(int(a), 8) for a in addr[stores]])]
    logw = stores[(addr[stores] >= log) & (addr[stores] < log + rt.layout.log_bytes)]
    assert len(logw) == 3 * 8 + 1 + 3 and len(data) == 3 and len(flag) == 2
    # 1: log, sfence; 2: flag, sfence; 3: data, sfence; 4: clear, sfence
    assert logw.max() < fences[0] < flag[0] < fences[1] < data.min()
    assert data.max() < fences[2] < flag[1] < fences[3]
    commit = np.flatnonzero((kind == Ev.MARK) & (aux == Mark.TX_COMMIT))
    durable = np.flatnonzero((kind == Ev.MARK) & (aux == Mark.TX_DURABLE))
    assert fences[2] < commit[0] < flag[1] and fences[3] < durable[0]
    # clwb: 3 entries + 1 header line, the flag twice, 3 data lines
    assert (kind == Ev.CLWB).sum() == 3 + 1 + 2 + 3
    assert rt.counters() == {"log_lines": 3.0, "log_header_lines": 1.0, "flag_writes": 2.0,
                             "data_lines": 3.0, "alloc_lines": 0.0, "fallback_lines": 0.0,
                             "discovery_passes": 1.0}
    assert rt.m.peek(desc + 8 * H_STATE) & 0xFF == IDLE


@pytest.mark.parametrize("workload", ["btree", "rbtree", "avl", "hashmap"])
def test_trees_are_logged_conservatively(workload: str) -> None:
    """A tree's layout asks for a conservative log: PMEM logs every line an update reads (the
    search path, the nodes rebalancing looks at), more than it writes; a hash map logs exactly
    the lines it writes. Either way the run matches the reference."""
    def logged(conservative: bool) -> tuple[float, float]:
        s = Session.create("pmem", workload, preset("proteus-marss"), seed=2, txs=30,
                           params=SMALL[workload])
        spec = s.runtime.layout.spec
        assert spec.conservative_log == (workload != "hashmap")
        if not conservative:
            object.__setattr__(spec, "conservative_log", False)
        s.run(30)
        assert s.workload.app_data(s.runtime) == s.workload.expected(s.runtime.commit_order)
        k = s.runtime.counters()
        return k["log_lines"], k["fallback_lines"]
    as_run, exact = logged(True), logged(False)
    assert as_run[1] == exact[1] == 0
    if workload == "hashmap":
        assert as_run == exact
    else:
        assert as_run[0] > 1.5 * exact[0]


def test_pcommit_makes_every_sfence_a_persist_barrier_in_pdom0() -> None:
    m, rt = setup("pmem-pcommit", "pdom0")
    run_body(m, rt, add_one)
    kind, _, _ = events(m)
    assert (kind == Ev.PCOMMIT).sum() == 4 and (kind == Ev.SFENCE).sum() == 8
    assert slot_words(rt) == [1, 1, 1]


def test_nolog_is_step_3_alone() -> None:
    m, rt = setup("pmem-nolog")
    run_body(m, rt, add_one)
    kind, addr, _ = events(m)
    assert slot_words(rt) == [1, 1, 1]
    assert (kind == Ev.SFENCE).sum() == 1 and (kind == Ev.CLWB).sum() == 3
    assert all(rt.layout.is_data(int(a), 8) for a in addr[kind == Ev.STORE])
    assert not get_runtime("pmem-nolog").durable
    with pytest.raises(ConfigError, match="volatile baseline"):
        fuzz(FuzzConfig(runtime="pmem-nolog", workload="array"))


def test_discovery_pass_buffers_writes_and_touches_no_pm() -> None:
    m, rt = setup()
    seen: list[tuple[str, int, int]] = []

    def body(tx: Any) -> None:
        obj = rt.static("a", 3)
        tx.write(obj, 2, 7)
        seen.append((type(tx).__name__, tx.read(obj, 2), rt.peek(obj, 2)))
        if isinstance(tx, PmemDiscoveryTx):
            kind, _, _ = events(m)
            assert not np.isin(kind, (Ev.STORE, Ev.CLWB, Ev.SFENCE)).any()

    run_body(m, rt, body)
    assert seen == [("PmemDiscoveryTx", 7, 0), ("PmemTx", 7, 7)]


def test_a_read_only_or_aborting_body_runs_once_and_writes_nothing() -> None:
    m, rt = setup()
    calls: list[str] = []

    def read_only(tx: Any) -> None:
        calls.append(type(tx).__name__)
        tx.read(rt.static("a", 1), 0)

    def aborts(tx: Any) -> bool:
        calls.append(type(tx).__name__)
        add_one(tx)
        tx.alloc(2)
        return False

    run_body(m, rt, read_only)
    run_body(m, rt, aborts)
    kind, _, _ = events(m)
    assert calls == ["PmemDiscoveryTx", "PmemDiscoveryTx"]
    assert not np.isin(kind, (Ev.STORE, Ev.CLWB, Ev.SFENCE)).any()
    assert (rt.commits, rt.aborts) == (1, 1) and slot_words(rt) == [0, 0, 0]
    assert rt.check_invariants() == []  # the discovery pass's block went back


def test_discovered_allocations_are_the_real_pass_s() -> None:
    m, rt = setup()
    blocks: list[int] = []

    def body(tx: Any) -> None:
        b = tx.alloc(2)
        blocks.append(b)
        tx.write_words(b, 0, [5, 6])
        tx.write(rt.static("a", 0), 0, b)

    run_body(m, rt, body)
    assert blocks[0] == blocks[1] and rt.heap.is_allocated(blocks[0])
    assert recover(rt, m.pm_image()).check_invariants([blocks[0]]) == []
    assert rt.counters()["alloc_lines"] == 1 + 1 + 1  # alloc log, descriptor, bitmap


def test_objects_and_static_elements_are_whole_lines() -> None:
    cls = get_runtime("pmem")
    assert [cls.obj_bytes(w) for w in (1, 8, 9)] == [64, 64, 128]
    assert [cls.static_stride(w) for w in (1, 8, 9)] == [64, 64, 128]


# -- write counts: the card's formula ----------------------------------------------------------------
@pytest.mark.parametrize("string_words", [8, 32])
def test_writes_per_transaction_follow_the_card_formula(string_words: int) -> None:
    """Swap (Proteus SS) writes exactly two strings of L = string_words / 8 lines each: PMEM
    writes logged + header + 2 flag + modified lines, PMEM+nolog only the modified lines."""
    lines = 2 * string_words // 8
    txs = 10
    got = {}
    for runtime in ("pmem", "pmem-nolog"):
        s = Session.create(runtime, "swap", preset("proteus-marss").replace(cores=1), seed=2,
                           params={"entries": 32, "string_words": string_words})
        s.run(txs)
        k = {n: v / txs for n, v in s.runtime.counters().items()}
        clwb = (s.machine.trace().events["kind"] == Ev.CLWB).sum() / txs
        got[runtime] = (k, clwb)
    k, clwb = got["pmem"]
    header = header_lines(lines)
    assert (k["log_lines"], k["log_header_lines"], k["flag_writes"], k["data_lines"]) == (
        lines, header, 2, lines)
    assert clwb == lines + header + 2 + lines
    k, clwb = got["pmem-nolog"]
    assert (k["log_lines"], k["log_header_lines"], k["flag_writes"], k["data_lines"]) == (
        0, 0, 0, lines)
    assert clwb == lines


# -- recovery ----------------------------------------------------------------------------------
def image_before_clear() -> tuple[Any, np.ndarray]:
    """The PM image after step 3 (data durable), just before the flag is cleared."""
    m, rt = setup()
    captured: list[np.ndarray] = []
    orig = rt.st

    def st(cpu: Any, name: str, addr: int, value: int) -> None:
        if name == "pmem.flag.clear":
            captured.append(m.pm_image())
        orig(cpu, name, addr, value)

    rt.st = st
    run_body(m, rt, add_one)
    return rt, captured[0]


def recover(rt: Any, img: np.ndarray) -> Any:
    m2 = Machine(rt.m.config, backend=rt.m.backend)
    m2.load_pm_image(img)
    rt2 = rt.reattach(m2)
    rt2.recover(m2.cpu(0))
    return rt2


def test_recovery_restores_the_log_when_the_flag_is_set_and_is_idempotent() -> None:
    rt, img = image_before_clear()
    words = img.view(np.uint64)
    flag = (rt.layout.desc[0] + 8 * H_STATE - rt.m.pm.base) // 8
    assert words[flag] & 0xFF == RUNNING
    assert [int(words[(rt.static("a", s) - rt.m.pm.base) // 8]) for s in SLOTS] == [1, 1, 1]
    rt2 = recover(rt, img)
    assert slot_words(rt2) == [0, 0, 0] and rt2.check_invariants() == []
    again = recover(rt2, rt2.m.pm_image())
    assert slot_words(again) == [0, 0, 0] and again.check_invariants() == []


def test_recovery_ignores_the_log_when_the_flag_is_clear() -> None:
    rt, img = image_before_clear()
    words = img.view(np.uint64)
    flag = (rt.layout.desc[0] + 8 * H_STATE - rt.m.pm.base) // 8
    words[flag] = (int(words[flag]) & ~0xFF) | IDLE
    rt2 = recover(rt, img)
    assert slot_words(rt2) == [1, 1, 1] and rt2.check_invariants() == []


def test_log_words_are_labelled() -> None:
    m, rt = setup()
    run_body(m, rt, add_one)
    lab = Labeller.of(rt, m.peek)
    log = rt.layout.log[0]
    first = log + 64 * rt.hdr_lines
    assert lab.word(log) == "PMEM log T0 header word 0 (version|count)"
    assert lab.word(log + 16) == "PMEM log T0 header slot 1 (home line)"
    assert lab.word(first + 64 + 24) == "PMEM log T0 entry 1 word 3"


# -- transactions driven with begin/commit: each line logged at its first write -----------------------
def test_direct_transactions_log_each_line_at_its_first_write() -> None:
    m, rt = setup()
    run_direct(m, rt, add_one)
    kind, _, _ = events(m)
    assert slot_words(rt) == [1, 1, 1]
    # per line: entry fence and count fence; then the data fence and the clear fence
    assert (kind == Ev.SFENCE).sum() == 2 * 3 + 2
    k = rt.counters()
    assert (k["fallback_lines"], k["log_lines"], k["flag_writes"]) == (3, 3, 2)
    m, rt = setup()
    run_direct(m, rt, add_one, abort=True)
    assert slot_words(rt) == [0, 0, 0]
    assert rt.m.peek(rt.layout.desc[0] + 8 * H_STATE) & 0xFF == IDLE


def _direct(self: Any, cpu: Any, rt: Any, op: Any) -> Generator[Any, Any, None]:
    """The older, lock-only transaction form: begin, the body, commit or abort."""
    tx = yield from rt.begin(cpu, self.held(*self.locks_of(op)))
    self.record(tx, op)
    tx.lock_table = self.locks if self.threads > 1 else []
    res = self.body(tx, op)
    if isinstance(res, Generator):
        res = yield from res
    yield from (rt.abort(tx) if res is False else rt.commit(tx))


class DirectArray(Array):
    transaction = _direct


class DirectAllocX(AllocX):
    transaction = _direct


@pytest.mark.parametrize("order", ["line", "px86"])
@pytest.mark.parametrize("wl", [DirectArray, DirectAllocX])
def test_crash_fuzzing_direct_transactions(wl: type, order: str) -> None:
    params = (("abort_pct", 30.0), ("x", 1)) if wl is DirectAllocX else ()
    rep = fuzz(FuzzConfig(runtime="pmem", workload="array", params=params, order=order,
                          threads=2, txs=3, idempotence=2), workload=wl)
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.deep_runs > 0


def test_every_declared_step_is_issued() -> None:
    declared = {s.name for s in get_runtime("pmem").persist_steps()}
    issued: set[str] = set()
    for cls, name, params in ((None, "btree", ()), (None, "alloc-x", (("abort_pct", 30.0),)),
                              (DirectAllocX, "alloc-x", (("abort_pct", 50.0),))):
        camp = Campaign(FuzzConfig(runtime="pmem", workload=name, params=params, txs=12,
                                   depth=1), workload=cls)
        issued |= {n for _, _, n in camp.step_log}
    assert issued <= declared, issued - declared
    assert {s for s in declared - issued if ".recover." not in s} == set()


# -- crash fuzzing -------------------------------------------------------------------------------
FUZZ = (
    [("pmem", w, o, d) for w in ("hashmap", "kv") for o in ("line", "px86")
     for d in ("pdom1", "pdom2")]
    + [("pmem", w, "line", "pdom1") for w in ("btree", "swap", "queue", "alloc-x", "avl")]
    + [("pmem", w, "px86", "pdom1") for w in ("swap", "avl")]  # exhaustive by read-set classes
    + [("pmem-pcommit", w, o, d) for w in ("hashmap", "kv") for o in ("line", "px86")
       for d in ("pdom0", "pdom1", "pdom2")]
    + [("pmem-pcommit", w, "line", "pdom0") for w in ("swap", "queue", "alloc-x")]
)


@pytest.mark.parametrize(("runtime", "workload", "order", "domain"), FUZZ)
def test_crash_fuzzing_is_exhaustive_and_passes(runtime: str, workload: str, order: str,
                                                domain: str) -> None:
    """Two threads, three transactions each; crashes in the run, in recovery (idempotence) and
    in the run after recovery (depth 2)."""
    params = (("abort_pct", 30.0),) if workload == "alloc-x" else ()
    rep = fuzz(FuzzConfig(runtime=runtime, workload=workload, params=params, domain=domain,
                          order=order, threads=2, txs=3, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.recoveries > 0
    assert rep.transactions > 0 and rep.deep_runs > 0 and rep.idempotence_images > 0


@pytest.mark.slow
@pytest.mark.parametrize("order", ["line", "px86"])
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["btree", "rbtree", "avl", "hashmap", "queue", "swap",
                                      "alloc-x", "array", "bank", "kv", "list"])
@pytest.mark.parametrize("runtime", ["pmem", "pmem-pcommit"])
def test_crash_fuzzing_sweep(runtime: str, workload: str, domain: str, order: str) -> None:
    """Every structure, 1 and 2 threads, exhaustive at every crash point: in px86 order each
    logged line is 8 independent atoms until the step-1 fence (2^16 states per two lines), but
    recovery reads a clear flag there and never the log, so such a point is one read-set
    class."""
    if runtime == "pmem" and domain == "pdom0":
        pytest.skip("pmem needs the WPQ in the persistence domain (pmem-pcommit for PDOM-0)")
    params = (("abort_pct", 30.0),) if workload == "alloc-x" else ()
    for threads in (1, 2):
        rep = fuzz(FuzzConfig(runtime=runtime, workload=workload, params=params, domain=domain,
                              order=order, threads=threads, txs=4, idempotence=2))
        assert rep.ok, crashfuzz.format_report(rep)
        assert rep.exhaustive and not rep.deep_points_sampled and not rep.read_log_misses, \
            rep.summary()


class _PmemAnyDomain(PmemRuntime):
    """pmem with PDOM-0 declared supported: what the refusal protects a user from."""

    supported_domains = ("pdom0", "pdom1", "pdom2")


def test_pmem_is_not_failure_safe_with_a_volatile_wpq() -> None:
    """PDOM-0 needs pmem-pcommit: a plain sfence orders nothing into the media, so pmem
    refuses it (naming pmem-pcommit); run there anyway, it tears transactions."""
    with pytest.raises(UnsupportedDomainError, match="pmem-pcommit"):
        fuzz(FuzzConfig(runtime="pmem", workload="swap", domain="pdom0", txs=3))
    rep = fuzz(FuzzConfig(workload="swap", domain="pdom0", txs=3, stop_at_first=True),
               runtime=_PmemAnyDomain)
    assert not rep.ok


# -- mutants -------------------------------------------------------------------------------------
MUTANTS = sorted(n for n in all_mutants() if n.startswith("pmem:"))
BASE = FuzzConfig(txs=8, idempotence=2, reduce=False, budget=4096, new_tx=3,
                  new_tx_every_image=True)


def test_the_mutants_are_registered() -> None:
    assert MUTANTS == ["pmem:S1", "pmem:S2", "pmem:S3"]
    assert all_mutants()["pmem:S3"].domains == ("pdom1", "pdom2")
    assert all_mutants()["pmem:S1"].domains == all_mutants()["pmem:S2"].domains == ("pdom1",)
    assert get_runtime("pmem").supported_domains == ("pdom1", "pdom2")
    assert get_runtime("pmem-pcommit").supported_domains == ("pdom0", "pdom1", "pdom2")


@pytest.mark.parametrize(("mutant", "domain"),
                         [(n, d) for n in MUTANTS for d in all_mutants()[n].domains])
def test_mutant_killed_where_it_is_a_bug(mutant: str, domain: str) -> None:
    row = kill_one(all_mutants()[mutant], domain, BASE, mutant, check_base=False)
    assert row.killed, f"{mutant} survived in {domain}"


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["pmem:S1", "pmem:S2"])
def test_a_dropped_sfence_is_harmless_in_pdom2(mutant: str) -> None:
    row = kill_one(all_mutants()[mutant], "pdom2", BASE, mutant, check_base=False)
    assert not row.killed, row.failure
