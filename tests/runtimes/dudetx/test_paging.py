"""DUDETx shadow paging: runs match the reference, paging changes timing only, paging never
writes PM, the touching-ID wait is needed (M10) and evicted pages are never written back (M9),
crash fuzzing of the tiny-frames variants passes, and a property over random access traces."""

from __future__ import annotations

from collections.abc import Generator, Hashable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from crashfuzz.campaign import fuzz_machine
from pmsim import preset
from pmsim.errors import ConfigError
from pmsim.runtimes import PMSpec, StaticArray, get_mutant, get_runtime
from pmsim.runtimes.dudetx.paging import DudeTxPagingRuntime
from pmsim.runtimes.registry import MUTANTS
from pmsim.runtimes.steps import step_at
from pmsim.trace import Ev
from pmsim.workloads import Session
from pmsim.workloads.base import Model, Workload

PAGED = ("dudetx-paging", "dudetx-paging-sw", "dudetx-paging-tiny", "dudetx-paging-sw-tiny")
TINY = ("dudetx-paging-tiny", "dudetx-paging-sw-tiny")
PARAMS = {
    "bank": {"accounts": 16, "initial": 50, "max_amount": 40},  # 4 pages of 32 B, 3 frames
    "kv": {"buckets": 4, "keys": 24},
    "ycsb": {"records": 64, "value_words": 2, "ops_per_tx": 2, "read_pct": 25.0},
}
FUZZ = {"bank": (("accounts", 16),), "kv": ()}
"""Fuzz parameters: bank with 16 accounts has 4 tiny pages (the fuzzer's 4 would fit one)."""


def session(runtime: Any, workload: str, threads: int = 2, seed: int = 1, txs: int = 30,
            fuzzer: bool = False) -> Session:
    cfg = fuzz_machine("pdom1", threads, 0) if fuzzer else preset("marathe-pdom1")
    return Session.create(runtime, workload, cfg, threads=threads, seed=seed, txs=txs,
                          params=PARAMS[workload])


def resident(rt: DudeTxPagingRuntime) -> dict[int, int]:
    """page -> frame of every mapped page, after checking the two maps agree."""
    out = {p: f for p, f in enumerate(rt._frame_of) if f >= 0}
    assert all(rt._page_of[f] == p for p, f in out.items())
    assert sorted(p for p in rt._page_of if p >= 0) == sorted(out)
    return out


# -- runs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("runtime", PAGED)
@pytest.mark.parametrize("workload", sorted(PARAMS))
def test_matches_reference(runtime: str, workload: str) -> None:
    s = session(runtime, workload)
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert isinstance(rt, DudeTxPagingRuntime)
    assert wl.app_data(rt) == wl.expected(rt.commit_order) != wl.expected([])
    assert rt.R == rt.D == s.machine.peek(rt._ctr)
    assert len(resident(rt)) <= rt._nframes and not any(rt._ref) and not any(rt._pins)
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == [] and rec.data == wl.expected(rt.commit_order)
    assert not any(rec.runtime._frame_of[p] >= 0 for p in range(rec.runtime._npages))


@pytest.mark.parametrize("runtime", TINY)
def test_tiny_frames_fault_evict_and_wait(runtime: str) -> None:
    s = session(runtime, "bank", fuzzer=True, txs=8)
    s.run(8)
    rt = s.runtime
    assert isinstance(rt, DudeTxPagingRuntime)
    assert (rt._npages, rt._nframes) == (4, 3)
    assert rt.evictions > 0 and rt.faults == rt.evictions + rt._nframes
    assert rt.touch_waits > 0 and rt.touch_wait_ns > 0 and rt.page_aborts >= rt.touch_waits
    c = rt.counters()
    assert c["faults"] == rt.faults and c["touch_wait_ns"] == rt.touch_wait_ns
    assert rt.shootdowns == (0 if rt.software else rt.evictions)
    assert s.check()


@pytest.mark.parametrize("workload", sorted(PARAMS))
def test_paging_changes_timing_only(workload: str) -> None:
    """One thread: the same data as plain dudetx for the seed, in more simulated time. Two
    threads: the same operations, each run serializable in its own commit order."""
    plain, paged = session("dudetx", workload, 1), session("dudetx-paging-tiny", workload, 1)
    plain.run(30)
    paged.run(30)
    assert paged.workload.app_data(paged.runtime) == plain.workload.app_data(plain.runtime)
    assert paged.runtime.faults > 0
    assert sum(paged.runtime.latencies) > sum(plain.runtime.latencies)
    two = [session(r, workload, 2) for r in ("dudetx", "dudetx-paging-sw-tiny")]
    for s in two:
        s.run(30)
        assert s.check()
    assert sorted(map(repr, two[0].workload.executed.values())) == sorted(
        map(repr, two[1].workload.executed.values()))


def test_software_translation_costs_loads_and_a_cas_per_word() -> None:
    runs = {}
    for name in ("dudetx-paging", "dudetx-paging-sw"):
        cls = type("Full", (get_runtime(name),), {"shadow_fraction": 1.0})
        s = session(cls, "ycsb", 1)
        s.run(20)
        runs[name] = (s.machine.count("loads"), s.machine.count("rmws"), sum(s.runtime.latencies))
    hw, sw = runs["dudetx-paging"], runs["dudetx-paging-sw"]
    words = 20 * PARAMS["ycsb"]["ops_per_tx"] * PARAMS["ycsb"]["value_words"]
    assert sw[1] - hw[1] >= words  # a CAS on ref per word (and one release per page)
    assert sw[0] - hw[0] >= words  # the entry and ref loads
    assert sw[2] > hw[2]


def test_no_pm_store_from_paging() -> None:
    """Workers (Perform, faults, evictions) issue no PM store, flush or fence; only the
    persist and reproduce threads do. The paging M9 mutant breaks exactly this."""
    for name, clean in (("dudetx-paging-tiny", True), ("dudetx-paging:M9", False)):
        s = session(name, "bank", fuzzer=True, txs=8)
        log: list[tuple[int, int, str]] = []
        s.runtime.log_steps(log)
        s.run(8)
        ev = s.machine.trace().events
        pm = np.isin(ev["kind"], [int(Ev.STORE), int(Ev.NTSTORE), int(Ev.CLWB), int(Ev.SFENCE)])
        idx = np.flatnonzero(pm & (ev["tid"] < 2))
        steps = {step_at(log, int(i), int(ev["tid"][i])) for i in idx}
        assert any(n == "dudetx.page.evict" for _, _, n in log)
        if clean:
            assert idx.size == 0
        else:
            assert idx.size > 0 and steps == {"dudetx.page.evict"}


# -- errors -------------------------------------------------------------------------------------

def test_bad_geometry_is_refused() -> None:
    odd = type("Odd", (DudeTxPagingRuntime,), {"name": "odd", "page_bytes": 48})
    with pytest.raises(ConfigError, match="page_bytes"):
        session(odd, "bank")
    few = type("Few", (DudeTxPagingRuntime,), {"name": "few", "page_bytes": 32, "frames": 1,
                                                "min_frames": 1})
    with pytest.raises(ConfigError, match="frames"):
        session(few, "kv", 1).run(30)


# -- crash fuzzing ------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", sorted(FUZZ))
def test_crash_fuzzing_tiny_frames_is_exhaustive_and_passes(workload: str, domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-paging-tiny", workload=workload, domain=domain,
                          threads=2, txs=10, idempotence=2, params=FUZZ[workload]))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


@pytest.mark.parametrize("workload", sorted(FUZZ))
def test_crash_fuzzing_software_tiny_frames(workload: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-paging-sw-tiny", workload=workload, threads=2, txs=10,
                          idempotence=2, params=FUZZ[workload]))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive


# -- mutants ------------------------------------------------------------------------------------

def test_mutants_are_registered() -> None:
    assert {"dudetx-paging:M9", "dudetx-paging:M10"} <= set(MUTANTS)
    m10 = get_mutant("dudetx-paging:M10")
    assert (m10.workload, m10.threads) == ("array", 2)  # killed by the kill matrix there


def test_m10_is_caught_without_a_crash() -> None:
    """Without the touching-ID wait a page is loaded before Reproduce replayed its last
    writer: the crash-free run's data differ from the serial oracle."""
    for seed in range(2):
        good = session("dudetx-paging-tiny", "bank", seed=seed, txs=8, fuzzer=True)
        bad = session("dudetx-paging:M10", "bank", seed=seed, txs=8, fuzzer=True)
        good.run(8)
        bad.run(8)
        assert good.check() and good.runtime.touch_waits > 0
        assert not bad.check() and bad.runtime.touch_waits == 0


@pytest.mark.parametrize("mutation", ["M9", "M10"])
def test_mutant_killed(mutation: str) -> None:
    rep = fuzz(FuzzConfig(runtime=f"dudetx-paging:{mutation}", workload="bank", domain="pdom1",
                          threads=2, txs=8, idempotence=2, reduce=False, budget=4096, new_tx=3,
                          stop_at_first=True, params=FUZZ["bank"]))
    assert not rep.ok, f"dudetx-paging:{mutation} survived"


# -- property: random access traces ---------------------------------------------------------------

class Words(Workload):
    """Transactions of reads and writes of single words, taken from a given trace per thread."""

    name = "paging-words"
    WORDS = 48

    def __init__(self, ops: list[list[tuple[tuple[int, int], ...]]], **kw: Any) -> None:
        super().__init__(threads=len(ops), txs=max(len(o) for o in ops), **kw)
        self.ops = ops
        self.next = [0] * len(ops)

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("w", self.WORDS, 1),), max_tx_writes=4,
                      max_tx_words=4, max_tx_allocs=0, max_tx_objects=4)

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[tuple[int, int], ...]:
        op = self.ops[tid][self.next[tid]]
        self.next[tid] += 1
        return op

    def body(self, tx: Any, op: tuple[tuple[int, int], ...]) -> Generator[Any, Any, None]:
        for i, v in op:
            obj = tx.rt.static("w", i)
            if v:
                tx.write(obj, 0, tx.read(obj, 0) + v)
            else:
                tx.read(obj, 0)
            yield from tx.pause()

    def model(self) -> Model:
        return WordsModel(self.WORDS)

    def read_data(self, rt: Any) -> Hashable:
        return tuple(int(x) for x in rt.peek_static("w")[:, 0])


class WordsModel(Model):
    def __init__(self, n: int) -> None:
        self.w = [0] * n

    def apply(self, op: tuple[tuple[int, int], ...]) -> None:
        for i, v in op:
            self.w[i] += v

    def snapshot(self) -> Hashable:
        return tuple(self.w)


class Checked(DudeTxPagingRuntime):
    """Tiny frames, checked at every fault: the page table is a partial injection of pages into
    frames, and the loaded frame holds the latest committed value of every word of the page."""

    name = "dudetx-paging-checked"
    page_bytes = 32
    frames = 3
    min_frames = 3
    hw_fault_ns = shootdown_ns = shootdown_remote_ns = sw_fault_ns = 20.0
    reproduce_batch = 2
    persist_batch_bytes = 1

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.committed: dict[int, int] = {}
        self.checked = 0

    def _on_commit(self, stx: Any, ts: int) -> None:
        entries = list(self._cur[stx.tid])
        super()._on_commit(stx, ts)
        self.committed.update(entries)

    def _load_page(self, cpu: Any, page: int, f: int) -> None:
        super()._load_page(cpu, page, f)
        maps = resident(self)
        assert len(set(maps.values())) == len(maps) <= self._nframes
        home = self._data_lo + page * self.page_bytes
        fa = self._frame_base + f * self.page_bytes
        for i in range(min(self.page_bytes, self._data_hi - home) // 8):
            want = self.committed.get(home + 8 * i, self.m.peek(home + 8 * i))
            assert self.m.peek(fa + 8 * i) == want, f"page {page} word {i} is stale"
        self.checked += 1


OPS = st.lists(st.tuples(st.integers(0, Words.WORDS - 1), st.sampled_from([0, 0, 1, 2, 5])),
               min_size=1, max_size=3).map(tuple)


TRACES = st.integers(1, 10).flatmap(
    lambda n: st.lists(st.lists(OPS, min_size=n, max_size=n), min_size=1, max_size=2))
"""One to two threads, each with the same number of transactions."""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces=TRACES, software=st.booleans())
def test_page_table_and_loads_over_random_traces(traces: list[list[tuple[tuple[int, int], ...]]],
                                                 software: bool) -> None:
    cls = type("CheckedMode", (Checked,), {"software": software})
    wl = Words(traces)
    s = Session.create(cls, wl, fuzz_machine("pdom1", len(traces), 0), threads=len(traces),
                       txs=wl.txs)
    s.run(len(traces[0]))
    rt = s.runtime
    assert isinstance(rt, Checked)
    assert s.check()
    assert rt.checked == rt.faults > 0
