"""The engine interface and the exact timing rules of the reference (PyEngine).

The engine fixture runs each test on every available backend: the C engine must follow the
same rules, so these double as its conformance tests.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmsim.config import MachineConfig, Region
from pmsim.errors import ConfigError
from pmsim.hw.engines.reference import (
    BATCH_DTYPE,
    OP_CAS,
    OP_CLFLUSH,
    OP_CLFLUSHOPT,
    OP_CLWB,
    OP_LOAD,
    OP_MARK,
    OP_MFENCE,
    OP_NTSTORE,
    OP_PB,
    OP_PCOMMIT,
    OP_SFENCE,
    OP_STORE,
    OP_WORK,
    OP_XCHG,
    Memory,
    PyEngine,
)
from pmsim.machine import make_engine
from pmsim.stats import STATS_DTYPE
from pmsim.trace import TRACE_DTYPE, Ev

PM = 0
DRAM = 1 << 30
CFG = MachineConfig(regions=(Region("pm", PM, 1 << 16, "pm"), Region("dram", DRAM, 1 << 16, "dram")))


def engine_for(backend: str, cfg: MachineConfig = CFG, **changes: Any) -> Any:
    if backend == "c" and importlib.util.find_spec("pmsim.hw.engines.native_engine") is None:
        pytest.skip("the C engine module pmsim.hw.engines.native_engine does not exist yet")
    return make_engine(cfg.replace(**changes) if changes else cfg, backend)


def wb_done_ns(eng: Any) -> list[float]:
    ev = eng.trace()
    return [int(v) / 1000 for v in ev[ev["kind"] == Ev.WB]["value"]]


# -- memory map --------------------------------------------------------------------------------

def test_memory_locates_words_in_sorted_regions() -> None:
    cfg = MachineConfig(regions=(Region("dram", 8192, 4096, "dram"), Region("pm", 0, 4096, "pm")))
    mem = Memory(cfg)
    assert [r.name for r in mem.regions] == ["pm", "dram"]
    assert mem.pm_index == 0 and (mem.pm_base, mem.pm_end) == (0, 4096)
    assert mem.locate(0) == (0, 0)
    assert mem.locate(4088) == (0, 511)
    assert mem.locate(8192 + 16) == (1, 2)
    assert mem.is_pm(4095) and not mem.is_pm(4096) and not mem.is_pm(8192)
    assert mem.pm.shape == (512,) and mem.pm.dtype == np.uint64
    with pytest.raises(ConfigError, match=r"0x1000 is outside every region.*pm=\[0x0,0x1000\)"):
        mem.locate(4096)
    with pytest.raises(ConfigError, match="0x4 is not 8-byte aligned"):
        mem.locate(4)


# -- the engine interface ----------------------------------------------------------------------

def test_engine_reports_its_backend(backend: str) -> None:
    assert engine_for(backend).backend == backend


def test_stats_and_trace_dtypes(backend: str) -> None:
    eng = engine_for(backend)
    eng.store(0, PM, 1)
    s = eng.get_stats()
    assert s.dtype == STATS_DTYPE and s.shape == (CFG.cores,)
    assert eng.trace().dtype == TRACE_DTYPE
    assert eng.trace_len() == len(eng.trace()) == 1


def test_get_stats_is_a_snapshot_with_clocks(backend: str) -> None:
    eng = engine_for(backend)
    eng.work(1, 12.5)
    s = eng.get_stats()
    assert s["time_ns"].tolist() == [0.0, 12.5]
    s["work_ns"][1] = 999.0
    assert eng.get_stats()["work_ns"][1] == 12.5


def test_clocks_can_be_set(backend: str) -> None:
    eng = engine_for(backend)
    eng.set_clock(0, 500.0)
    eng.work(0, 1.0)
    assert eng.get_clock(0) == 501.0 and eng.get_clock(1) == 0.0


def test_reset_trace_keeps_state(backend: str) -> None:
    eng = engine_for(backend)
    eng.store(0, PM, 1)
    eng.sfence(0)
    eng.reset_trace()
    assert eng.trace_len() == 0 and len(eng.trace()) == 0
    assert eng.get_stats()["stores"][0] == 1
    eng.sfence(0)
    assert eng.trace()["kind"].tolist() == [Ev.SFENCE]


def test_reset_volatile_keeps_pm_only(backend: str) -> None:
    eng = engine_for(backend, **{"pm.wpq_entries": 1, "pm.banks": 1, "pm.write_ns": 10_000.0})
    eng.store(0, PM, 11)
    eng.store(1, DRAM, 22)
    eng.clwb(0, PM)  # fills the one-entry WPQ for 10 us
    eng.reset_volatile()
    assert int(eng.mem.pm[0]) == 11
    assert int(eng.mem.arrays[1][0]) == 0
    s = eng.get_stats()
    assert not any(s[n].any() for n in STATS_DTYPE.names)
    assert eng.trace_len() == 0
    assert eng.load(0, PM) == 11
    c = CFG
    assert eng.get_clock(0) == c.cache.llc.latency_ns + c.pm.read_ns  # the caches are empty
    eng.store(0, PM + 64, 1)
    t = eng.get_clock(0)
    eng.clwb(0, PM + 64)
    eng.sfence(0)  # the WPQ is empty: accepted on arrival
    assert eng.get_clock(0) == t + c.costs.flush_ns + c.pm.to_wpq_ns


# -- exact WPQ rules ---------------------------------------------------------------------------

def test_wpq_slots_and_banks(backend: str) -> None:
    # two slots, two banks (bank = line % 2), writes take 100 ns and arrive 10 ns after a flush
    eng = engine_for(backend, **{"pm.wpq_entries": 2, "pm.banks": 2, "pm.write_ns": 100.0,
                                 "pm.to_wpq_ns": 10.0})
    f = CFG.costs.flush_ns
    for i in range(3):
        eng.store(0, PM + 64 * i, i + 1)
    t = eng.get_clock(0)
    for i in range(3):
        eng.clwb(0, PM + 64 * i)
    a0, a1 = t + f + 10.0, t + 2 * f + 10.0
    d0 = a0 + 100.0  # line 0, bank 0
    d1 = a1 + 100.0  # line 1, bank 1
    d2 = d0 + 100.0  # line 2: waits for slot 0 (line 0 drained at d0), then bank 0
    assert wb_done_ns(eng) == [d0, d1, d2]
    s = eng.get_stats()[0]
    assert (s["wpq_inserts"], s["wpq_occ_sum"], s["wpq_occ_max"]) == (3, 1 + 2 + 2, 2)
    eng.sfence(0)  # waits for the last acceptance, d0
    assert eng.get_clock(0) == d0
    assert eng.get_stats()[0]["barrier_stall_ns"] == d0 - (t + 3 * f + CFG.costs.fence_ns)


def test_banks_drain_in_parallel(backend: str) -> None:
    s, first = CFG.costs.store_ns, CFG.pm.to_wpq_ns
    for banks, drained in ((1, s + first + 400.0), (4, 4 * s + first + 100.0)):
        eng = engine_for(backend, domain="pdom0", **{"pm.banks": banks, "pm.write_ns": 100.0})
        for i in range(4):
            eng.ntstore(0, PM + 64 * i, i)  # line i uses bank i % banks
        assert eng.get_stats()[0]["wpq_occ_max"] == 4
        eng.pcommit(1)  # PDOM-0: the next fence waits until every bank has drained
        eng.sfence(1)
        assert eng.get_clock(1) == drained


def test_pcommit_drains_every_threads_writes(backend: str) -> None:
    eng = engine_for(backend, domain="pdom0", **{"pm.write_ns": 1000.0})
    eng.store(1, PM, 1)
    eng.clwb(1, PM)
    done = wb_done_ns(eng)[0]
    eng.pcommit(0)  # thread 0 wrote nothing, yet its pcommit waits for the whole WPQ
    eng.sfence(0)
    assert eng.get_clock(0) == done


def test_pending_flushes_are_per_thread(backend: str) -> None:
    eng = engine_for(backend, **{"pm.to_wpq_ns": 500.0})
    eng.store(0, PM, 1)
    eng.clwb(0, PM)
    eng.sfence(1)
    assert eng.get_clock(1) == CFG.costs.fence_ns
    eng.sfence(0)
    assert eng.get_stats()[0]["barrier_stall_ns"] > 0


def test_eviction_stall_is_charged_to_the_evicting_thread(backend: str) -> None:
    from pmsim.config import CacheConfig, CacheLevel

    cfg = CFG.replace(cache=CacheConfig(CacheLevel(1, 1, 1.0), CacheLevel(1, 1, 4.0),
                                        CacheLevel(1, 1, 10.0)),
                      **{"pm.wpq_entries": 1, "pm.banks": 1, "pm.write_ns": 1000.0})
    eng = engine_for(backend, cfg)
    # every level is direct-mapped with 16 sets: lines 16 apart evict each other
    for i in range(12):
        eng.store(0, PM + 1024 * i, i)
    s = eng.get_stats()
    assert s[0]["writebacks"] >= 3
    assert s[0]["wpq_stall_ns"] > 0 and s[1]["wpq_stall_ns"] == 0
    done = wb_done_ns(eng)
    assert len(done) == s[0]["writebacks"]
    # one slot, one bank: each write-back waits for the previous one to drain
    assert all(b - a == 1000.0 for a, b in zip(done, done[1:], strict=False))


# -- batches -----------------------------------------------------------------------------------

def _batch(rows: list[tuple[int, int, int, int, int, int]]) -> np.ndarray:
    ops = np.zeros(len(rows), dtype=BATCH_DTYPE)
    for i, (op, tid, aux, addr, value, arg) in enumerate(rows):
        ops[i] = (op, 0, tid, aux, addr, value, arg)
    return ops


def _f64_bits(x: float) -> int:
    return int(np.array(x, np.float64).view(np.uint64))


def _direct(eng: Any, rows: list[tuple[int, int, int, int, int, int]]) -> list[int]:
    out = []
    for op, tid, aux, addr, value, arg in rows:
        r = 0
        if op == OP_LOAD:
            r = eng.load(tid, addr)
        elif op == OP_STORE:
            eng.store(tid, addr, value)
        elif op == OP_NTSTORE:
            eng.ntstore(tid, addr, value)
        elif op == OP_CLFLUSH:
            eng.clflush(tid, addr)
        elif op == OP_CLFLUSHOPT:
            eng.clflushopt(tid, addr)
        elif op == OP_CLWB:
            eng.clwb(tid, addr)
        elif op == OP_SFENCE:
            eng.sfence(tid)
        elif op == OP_MFENCE:
            eng.mfence(tid)
        elif op == OP_PCOMMIT:
            eng.pcommit(tid)
        elif op == OP_CAS:
            r = eng.cas(tid, addr, value, arg)
        elif op == OP_XCHG:
            r = eng.xchg(tid, addr, value)
        elif op == OP_WORK:
            eng.work(tid, float(np.array(arg, np.uint64).view(np.float64)))
        elif op == OP_MARK:
            eng.mark(tid, aux, value)
        elif op == OP_PB:
            eng.persist_barrier(tid)
        out.append(r)
    return out


ADDRS = [PM + 8 * i for i in range(0, 64, 3)] + [DRAM + 8 * i for i in range(0, 24, 5)]
op_rows = st.lists(st.one_of(
    st.tuples(st.sampled_from([OP_LOAD, OP_STORE, OP_NTSTORE, OP_CLFLUSH, OP_CLFLUSHOPT, OP_CLWB,
                               OP_SFENCE, OP_MFENCE, OP_PCOMMIT, OP_XCHG, OP_PB]),
              st.integers(0, 1), st.just(0), st.sampled_from(ADDRS), st.integers(0, 5), st.just(0)),
    st.tuples(st.just(OP_CAS), st.integers(0, 1), st.just(0), st.sampled_from(ADDRS),
              st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just(OP_WORK), st.integers(0, 1), st.just(0), st.just(0), st.just(0),
              st.sampled_from([0.0, 0.5, 12.25, 300.0]).map(_f64_bits)),
    st.tuples(st.just(OP_MARK), st.integers(0, 1), st.integers(1, 20), st.just(0),
              st.integers(0, 2**64 - 1), st.just(0)),
), max_size=60)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op_rows, st.sampled_from(["pdom0", "pdom1", "pdom2"]), st.sampled_from(["modelled", "fixed"]))
def test_run_batch_equals_direct_calls(backend: str, rows: list[tuple[int, ...]], domain: str,
                                       barrier: str) -> None:
    batched = engine_for(backend, domain=domain, barrier=barrier)
    direct = engine_for(backend, domain=domain, barrier=barrier)
    got = batched.run_batch(_batch(rows))  # type: ignore[arg-type]
    want = _direct(direct, rows)  # type: ignore[arg-type]
    assert got.tolist() == want
    assert np.array_equal(batched.trace(), direct.trace())
    assert np.array_equal(batched.get_stats(), direct.get_stats())
    for a, b in zip(batched.mem.arrays, direct.mem.arrays, strict=True):
        assert np.array_equal(a, b)


def test_run_batch_returns_loaded_and_old_values(backend: str) -> None:
    eng = engine_for(backend)
    out = eng.run_batch(_batch([
        (OP_STORE, 0, 0, PM, 41, 0),
        (OP_LOAD, 0, 0, PM, 0, 0),
        (OP_CAS, 1, 0, PM, 41, 42),
        (OP_XCHG, 0, 0, PM, 43, 0),
        (OP_WORK, 1, 0, 0, 0, _f64_bits(2.5)),
        (OP_MARK, 1, 3, 0, 77, 0),
    ]))
    assert out.tolist() == [0, 41, 41, 42, 0, 0]
    assert int(eng.mem.pm[0]) == 43
    assert eng.get_stats()["work_ns"][1] == 2.5
    ev = eng.trace()
    mark = ev[ev["kind"] == Ev.MARK]
    assert (int(mark["aux"][0]), int(mark["value"][0]), int(mark["tid"][0])) == (3, 77, 1)


def test_run_batch_rejects_an_unknown_op(backend: str) -> None:
    eng = engine_for(backend)
    ops = _batch([(OP_STORE, 0, 0, PM, 1, 0), (99, 0, 0, 0, 0, 0)])
    with pytest.raises(ConfigError, match="batch op 1: unknown op code 99"):
        eng.run_batch(ops)
    assert int(eng.mem.pm[0]) == 1  # the ops before it ran


def test_empty_batch(backend: str) -> None:
    eng = engine_for(backend)
    assert eng.run_batch(np.zeros(0, dtype=BATCH_DTYPE)).shape == (0,)
    assert eng.trace_len() == 0


def test_python_engine_is_the_reference() -> None:
    assert PyEngine.backend == "python"
    assert isinstance(make_engine(CFG, "python"), PyEngine)


def test_an_entry_draining_at_acceptance_time_is_not_occupied(backend: str) -> None:
    eng = engine_for(backend, **{"pm.to_wpq_ns": 0.0, "pm.write_ns": 1.0, "costs.store_ns": 1.0})
    eng.ntstore(0, PM, 1)  # accepted at 1, drained at 2
    eng.ntstore(0, PM + 64, 2)  # accepted at 2: the first entry has just left
    s = eng.get_stats()[0]
    assert (s["wpq_occ_sum"], s["wpq_occ_max"]) == (2, 1)


def test_ntstores_to_one_line_combine_until_a_fence(backend: str) -> None:
    """Non-temporal stores to the line of the thread's open write-combining buffer join it: one
    WPQ insert per line, not per word; a fence, flush, store or pcommit closes the buffer."""
    eng = engine_for(backend)
    for i in range(8):
        eng.ntstore(0, PM + 8 * i, i + 1)
    assert eng.get_stats()[0]["wpq_inserts"] == 1
    eng.ntstore(0, PM + 64, 9)  # another line opens a new buffer
    eng.ntstore(0, PM + 72, 9)
    assert eng.get_stats()[0]["wpq_inserts"] == 2
    eng.sfence(0)
    eng.ntstore(0, PM + 80, 9)  # same line, but the fence closed the buffer
    eng.store(0, PM + 200, 1)
    eng.ntstore(0, PM + 88, 9)  # closed by the plain store
    assert eng.get_stats()[0]["wpq_inserts"] == 4
    eng.ntstore(1, PM + 96, 9)  # buffers are per thread
    assert eng.get_stats()[1]["wpq_inserts"] == 1
    assert len(eng.trace()) == 15  # every word is still a traced store (and the fence)


@pytest.mark.parametrize("merge", [True, False])
def test_a_write_to_a_line_still_queued_merges_into_it(backend: str, merge: bool) -> None:
    """With ``pm.merge_writes`` (as gem5's memory controller merges a burst already in its write
    queue): a write of a line whose queued media write has not begun takes no entry and no
    media time; once that write has begun, the line is queued again. Off: every write queues."""
    eng = engine_for(backend, **{"pm.to_wpq_ns": 0.0, "pm.write_ns": 100.0, "pm.banks": 1,
                                 "costs.store_ns": 1.0, "pm.merge_writes": merge})
    eng.ntstore(0, PM, 1)  # line 0 begins at once (bank free), done at 101
    eng.ntstore(0, PM + 64, 2)  # line 1 waits for the bank: begins at 101
    eng.sfence(0)  # closes the write-combining buffer
    eng.ntstore(0, PM + 72, 3)  # line 1 again, before 101: merges
    s = eng.get_stats()[0]
    want = (2, 1, 128) if merge else (3, 0, 192)
    assert (s["wpq_inserts"], s["wpq_merged"], s["pm_write_bytes"]) == want
    eng.ntstore(0, PM + 8, 4)  # line 0, whose media write has begun: a new write
    s = eng.get_stats()[0]
    assert s["wpq_inserts"] == want[0] + 1 and s["wpq_merged"] == want[1]
