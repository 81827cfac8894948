"""Machine semantics, observed through values, clocks, the trace and the statistics.

Every test runs on each available engine backend; expected times are computed from the
config, following the rules in pmsim/hw/engines/reference.py.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmsim import Machine, MachineConfig
from pmsim.config import CacheConfig, CacheLevel, Region
from pmsim.errors import ConfigError
from pmsim.trace import Ev, Mark

PM = 0
DRAM = 1 << 30
BASE = MachineConfig(regions=(Region("pm", PM, 1 << 20, "pm"), Region("dram", DRAM, 1 << 16, "dram")))
# L1 and L2: 16 direct-mapped sets; LLC: 4 sets of 4 ways. Addresses 4096 apart share every set.
TINY = BASE.replace(cache=CacheConfig(CacheLevel(1, 1, 1.0), CacheLevel(1, 1, 4.0),
                                      CacheLevel(1, 4, 10.0)))
STRIDE = 4096


def _need(backend: str) -> None:
    if backend == "c" and importlib.util.find_spec("pmsim.hw.engines.native_engine") is None:
        pytest.skip("the C engine module pmsim.hw.engines.native_engine does not exist yet")


def mk(backend: str, cfg: MachineConfig = BASE, **changes: Any) -> Machine:
    _need(backend)
    return Machine(cfg.replace(**changes) if changes else cfg, backend=backend)


def kinds(m: Machine) -> list[Ev]:
    return [Ev(int(k)) for k in m.trace().events["kind"]]


def stat(m: Machine, name: str, tid: int = 0) -> Any:
    return m.stats()[tid][name].item()


def events_of(m: Machine, kind: Ev) -> np.ndarray:
    ev = m.trace().events
    return ev[ev["kind"] == kind]


# -- loads and stores ---------------------------------------------------------------------------

def test_cold_accesses_cost_their_latency(backend: str) -> None:
    m = mk(backend)
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 5)
    t = c.cache.llc.latency_ns + c.pm.read_ns
    assert cpu.clock == t
    assert cpu.load(PM) == 5
    t += c.cache.l1.latency_ns
    assert cpu.clock == t
    cpu.store(PM + 8, 6)  # same line: an L1 hit costs store_ns
    t += c.costs.store_ns
    assert cpu.clock == t
    assert cpu.load(DRAM) == 0
    t += c.cache.llc.latency_ns + c.dram.latency_ns
    assert cpu.clock == t
    s = m.stats()[0]
    assert (s["loads"], s["stores"]) == (2, 2)
    assert (s["l1_hits"], s["l1_misses"], s["l2_misses"], s["llc_misses"]) == (2, 2, 2, 2)
    assert (s["pm_read_bytes"], s["dram_read_bytes"]) == (64, 64)
    assert s["time_ns"] == t
    assert m.now == t


def test_values_are_full_64_bit_words(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    vals = [0, 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF]
    for i, v in enumerate(vals):
        cpu.store(PM + 8 * i, v)
        cpu.store(DRAM + 8 * i, v)
    assert cpu.load_words(PM, len(vals)) == vals
    assert [cpu.load(DRAM + 8 * i) for i in range(len(vals))] == vals
    assert [m.peek(PM + 8 * i) for i in range(len(vals))] == vals


def test_bad_addresses_raise_clear_errors(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    with pytest.raises(ConfigError, match="not 8-byte aligned"):
        cpu.load(PM + 3)
    with pytest.raises(ConfigError, match="not 8-byte aligned"):
        cpu.store(PM + 12, 1)
    with pytest.raises(ConfigError, match="outside every region"):
        cpu.store(1 << 40, 1)
    with pytest.raises(ConfigError, match="outside every region"):
        cpu.load((1 << 20) + 64)


def test_store_bytes_splits_into_atoms_and_merges_partial_ones(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    for w in range(4):
        m.poke(PM + 8 * w, 0x1111111111111111)
    m.reset_trace()
    data = bytes(range(1, 15))  # bytes 5..18: touches the atoms at 0, 8 and 16
    cpu.store_bytes(PM + 5, data)
    st = events_of(m, Ev.STORE)
    assert st["addr"].tolist() == [PM, PM + 8, PM + 16]
    assert stat(m, "stores") == 3
    img = m.peek_bytes(PM, 32)
    assert img[:5] == b"\x11" * 5
    assert img[5:19] == data
    assert img[19:] == b"\x11" * 13
    # each traced value is the whole merged little-endian atom
    for e in st:
        off = int(e["addr"]) - PM
        assert int(e["value"]) == int.from_bytes(img[off:off + 8], "little")
    assert cpu.load_bytes(PM + 5, len(data)) == data


def test_aligned_store_bytes_and_store_words(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    cpu.store_bytes(PM + 64, b"ABCDEFGH" * 3)
    cpu.store_words(PM + 128, [7, 8, 9, 10])
    st = events_of(m, Ev.STORE)
    assert st["addr"].tolist() == [PM + 64, PM + 72, PM + 80, PM + 128, PM + 136, PM + 144, PM + 152]
    assert st["value"].tolist()[3:] == [7, 8, 9, 10]
    assert cpu.load_words(PM + 128, 4) == [7, 8, 9, 10]
    assert cpu.load_bytes(PM + 64, 24) == b"ABCDEFGH" * 3


# -- cache levels and LRU -------------------------------------------------------------------------

def test_hits_at_each_level(backend: str) -> None:
    # a 2-way, 8-set L1: lines 512 bytes apart share a set
    m = mk(backend, BASE, **{"cache.l1": CacheLevel(1, 2, 1.0)})
    c = m.config.cache
    cpu, other = m.cpu(0), m.cpu(1)
    a, b, d = PM, PM + 512, PM + 1024
    for x in (a, b, a, d):  # the touch of a makes b the LRU way, evicted by d
        cpu.load(x)
    s0 = m.stats()[0].copy()
    t = cpu.clock
    cpu.load(a)
    assert cpu.clock - t == c.l1.latency_ns
    t = cpu.clock
    cpu.load(b)
    assert cpu.clock - t == c.l2.latency_ns
    s1 = m.stats()[0]
    assert s1["l1_hits"] - s0["l1_hits"] == 1
    assert s1["l1_misses"] - s0["l1_misses"] == 1
    assert s1["l2_hits"] - s0["l2_hits"] == 1
    # another core finds the (clean) line in the shared LLC
    other.load(a)
    assert other.clock == c.llc.latency_ns
    s = m.stats()[1]
    assert (s["llc_hits"], s["llc_misses"], s["snoops"]) == (1, 0, 0)


def test_llc_evicts_the_least_recently_used_line(backend: str) -> None:
    m = mk(backend, TINY)
    cpu = m.cpu(0)
    a, b, c, d, e = (PM + STRIDE * i for i in range(5))
    for x in (a, b, c, d):
        cpu.load(x)
    cpu.load(a)  # L1 and L2 hold only d: this hits the LLC and makes b its LRU line
    assert stat(m, "llc_hits") == 1
    cpu.load(e)  # evicts b
    before = stat(m, "llc_misses")
    cpu.load(c)
    assert stat(m, "llc_misses") == before
    assert stat(m, "llc_hits") == 2
    cpu.load(b)
    assert stat(m, "llc_misses") == before + 1


def test_dirty_llc_victim_is_written_back_to_the_wpq(backend: str) -> None:
    m = mk(backend, TINY)
    cpu = m.cpu(0)
    lines = [PM + STRIDE * i for i in range(5)]
    for i, x in enumerate(lines[:4]):
        cpu.store(x, i + 1)
    assert stat(m, "writebacks") == 0 and not len(events_of(m, Ev.WB))
    t = cpu.clock
    cpu.store(lines[4], 5)  # the LLC set is full: its LRU line (the first) goes to the WPQ
    wb = events_of(m, Ev.WB)
    assert wb["addr"].tolist() == [lines[0]]
    assert wb["aux"].tolist() == [0]
    assert wb["tid"].tolist() == [0]
    c = m.config
    # the value of a WB is its media completion time in picoseconds
    assert int(wb["value"][0]) == round((t + c.pm.to_wpq_ns + c.pm.write_ns) * 1000)
    s = m.stats()[0]
    assert (s["writebacks"], s["wpq_inserts"], s["pm_write_bytes"]) == (1, 1, 64)
    assert m.peek(lines[0]) == 1


def test_clean_lines_are_not_written_back(backend: str) -> None:
    m = mk(backend, TINY)
    cpu = m.cpu(0)
    for i in range(64):
        cpu.load(PM + 64 * i)
    s = m.stats()[0]
    assert s["llc_misses"] == 64
    assert (s["writebacks"], s["wpq_inserts"], s["pm_write_bytes"]) == (0, 0, 0)
    assert len(m.trace()) == 0


def test_dirty_dram_victims_are_counted_but_not_traced(backend: str) -> None:
    m = mk(backend, TINY)
    cpu = m.cpu(0)
    for i in range(5):
        cpu.store(DRAM + STRIDE * i, i)
    s = m.stats()[0]
    assert (s["writebacks"], s["dram_write_bytes"], s["wpq_inserts"]) == (1, 64, 0)
    assert len(m.trace()) == 0


def test_every_dirty_line_reaches_memory_exactly_once(backend: str) -> None:
    m = mk(backend, TINY)
    cpu = m.cpu(0)
    lines = [PM + 64 * i for i in range(48)] + [PM + STRIDE * i + 64 for i in range(1, 12)]
    for i, x in enumerate(lines):
        cpu.store(x, i + 100)
    evicted = events_of(m, Ev.WB)
    assert len(evicted) == stat(m, "writebacks") > 0
    for x in lines:
        cpu.clwb(x)
    cpu.sfence()
    wb = events_of(m, Ev.WB)
    assert Counter(wb["addr"].tolist()) == Counter(lines)
    assert Counter(wb["aux"].tolist()) == {0: len(evicted), 1: len(lines) - len(evicted)}
    assert stat(m, "wpq_inserts") == len(lines)


# -- coherence --------------------------------------------------------------------------------------

def test_a_read_downgrades_another_cores_dirty_copy(backend: str) -> None:
    m = mk(backend)
    c = m.config
    c0, c1 = m.cpu(0), m.cpu(1)
    c0.store(PM, 42)
    assert c1.load(PM) == 42
    assert c1.clock == c.costs.snoop_ns + c.cache.llc.latency_ns
    assert stat(m, "snoops", 1) == 1
    t = c0.clock
    c0.load(PM)  # core 0 kept its (now clean) copy
    assert c0.clock - t == c.cache.l1.latency_ns
    # the dirty data moved to the LLC: one flush writes it back once
    c1.clwb(PM)
    c0.clwb(PM)
    assert events_of(m, Ev.WB)["addr"].tolist() == [PM]


def test_a_store_invalidates_other_cores_copies(backend: str) -> None:
    m = mk(backend)
    c = m.config
    c0, c1 = m.cpu(0), m.cpu(1)
    c0.load(PM)
    c1.load(PM)
    c1.store(PM, 2)
    assert stat(m, "snoops", 1) == 1
    misses = stat(m, "l1_misses", 0)
    t = c0.clock
    assert c0.load(PM) == 2
    assert stat(m, "l1_misses", 0) == misses + 1
    assert stat(m, "l2_misses", 0) == 2
    assert stat(m, "snoops", 0) == 1  # core 1's dirty copy was downgraded
    assert c0.clock - t == c.costs.snoop_ns + c.cache.llc.latency_ns


def test_a_write_miss_takes_the_line_from_another_core(backend: str) -> None:
    m = mk(backend)
    c = m.config
    c0, c1 = m.cpu(0), m.cpu(1)
    c0.store(PM, 1)
    c1.store(PM, 2)
    assert c1.clock == c.cache.llc.latency_ns + c.costs.snoop_ns
    assert stat(m, "snoops", 1) == 1
    t = c0.clock
    assert c0.load(PM) == 2
    assert c0.clock - t > c.cache.l1.latency_ns  # core 0's copy was invalidated


# -- non-temporal stores and flushes ------------------------------------------------------------------

def test_ntstore_bypasses_the_caches(backend: str) -> None:
    m = mk(backend)
    c = m.config
    cpu = m.cpu(0)
    cpu.ntstore(PM, 7)
    assert cpu.clock == c.costs.store_ns
    s = m.stats()[0]
    assert (s["ntstores"], s["stores"], s["wpq_inserts"], s["pm_write_bytes"]) == (1, 0, 1, 64)
    assert (s["l1_misses"], s["l1_hits"], s["pm_read_bytes"]) == (0, 0, 0)
    assert kinds(m) == [Ev.NTSTORE]
    assert cpu.load(PM) == 7
    assert stat(m, "llc_misses") == 1  # the line was never allocated


def test_ntstore_displaces_a_dirty_cached_copy(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.ntstore(PM + 8, 2)
    assert kinds(m) == [Ev.STORE, Ev.WB, Ev.NTSTORE]
    wb = events_of(m, Ev.WB)
    assert (int(wb["addr"][0]), int(wb["aux"][0])) == (PM, 2)
    assert stat(m, "wpq_inserts") == 2
    assert cpu.load_words(PM, 2) == [1, 2]
    assert stat(m, "llc_misses") == 2  # the cached copy was invalidated


@pytest.mark.parametrize("to_wpq", [0.0, 30.0, 100.0])
def test_ntstore_is_waited_for_by_the_next_fence(backend: str, to_wpq: float) -> None:
    m = mk(backend, **{"pm.to_wpq_ns": to_wpq})
    c = m.config
    cpu = m.cpu(0)
    cpu.ntstore(PM, 1)
    cpu.sfence()
    assert stat(m, "barrier_stall_ns") == max(0.0, to_wpq - c.costs.fence_ns)
    assert cpu.clock == c.costs.store_ns + max(to_wpq, c.costs.fence_ns)


def test_clwb_keeps_the_line_cached_and_clean(backend: str) -> None:
    m = mk(backend)
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM + 16, 9)
    cpu.clwb(PM + 16)
    assert kinds(m) == [Ev.STORE, Ev.CLWB, Ev.WB]
    ev = m.trace().events
    assert int(ev["addr"][1]) == PM and int(ev["addr"][2]) == PM  # line addresses
    assert int(ev["aux"][2]) == 1  # written back by a flush
    t = cpu.clock
    assert cpu.load(PM + 16) == 9
    assert cpu.clock - t == c.cache.l1.latency_ns
    cpu.clwb(PM)  # clean now: a flush event, nothing written back
    assert kinds(m)[-1] == Ev.CLWB
    s = m.stats()[0]
    assert (s["clwb"], s["wpq_inserts"], s["pm_write_bytes"]) == (2, 1, 64)


@pytest.mark.parametrize("kind", ["clflushopt", "clflush"])
def test_clflushopt_and_clflush_invalidate(backend: str, kind: str) -> None:
    m = mk(backend)
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM + 64, 3)
    getattr(cpu, kind)(PM + 64)
    assert kinds(m) == [Ev.STORE, Ev[kind.upper()], Ev.WB]
    assert stat(m, kind) == 1
    t = cpu.clock
    assert cpu.load(PM + 64) == 3
    assert cpu.clock - t == c.cache.llc.latency_ns + c.pm.read_ns
    assert stat(m, "llc_misses") == 2
    getattr(cpu, kind)(PM + 64)  # clean: no second write-back
    assert len(events_of(m, Ev.WB)) == 1


@pytest.mark.parametrize("to_wpq", [0.0, 30.0, 100.0, 250.0])
def test_clwb_then_sfence_waits_for_wpq_acceptance(backend: str, to_wpq: float) -> None:
    m = mk(backend, **{"pm.to_wpq_ns": to_wpq})
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    t0 = cpu.clock
    cpu.clwb(PM)
    assert cpu.clock == t0 + c.costs.flush_ns
    cpu.sfence()
    stall = max(0.0, to_wpq - c.costs.fence_ns)
    assert stat(m, "barrier_stall_ns") == stall
    assert cpu.clock == t0 + c.costs.flush_ns + c.costs.fence_ns + stall


def test_barrier_stall_grows_with_to_wpq(backend: str) -> None:
    stalls = []
    for to_wpq in (10.0, 50.0, 200.0):
        m = mk(backend, **{"pm.to_wpq_ns": to_wpq})
        cpu = m.cpu(0)
        cpu.store(PM, 1)
        cpu.clwb(PM)
        cpu.sfence()
        stalls.append(stat(m, "barrier_stall_ns"))
    assert stalls[0] < stalls[1] < stalls[2]


def test_clwb_without_fence_leaves_the_wait_pending(backend: str) -> None:
    m = mk(backend, **{"pm.to_wpq_ns": 100.0})
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.clwb(PM)
    t = cpu.clock
    cpu.load(PM)  # unrelated work does not wait
    cpu.work(10.0)
    assert cpu.clock == t + c.cache.l1.latency_ns + 10.0
    assert stat(m, "barrier_stall_ns") == 0.0
    cpu.mfence()  # the first fence waits for acceptance
    assert cpu.clock == t + c.pm.to_wpq_ns
    assert stat(m, "barrier_stall_ns") > 0.0
    t = cpu.clock
    stall = stat(m, "barrier_stall_ns")
    cpu.sfence()  # nothing pending any more
    assert cpu.clock == t + c.costs.fence_ns
    assert stat(m, "barrier_stall_ns") == stall


def test_a_fence_long_after_the_clwb_does_not_wait(backend: str) -> None:
    m = mk(backend)
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.clwb(PM)
    cpu.work(1000.0)
    t = cpu.clock
    cpu.sfence()
    assert cpu.clock == t + c.costs.fence_ns
    assert stat(m, "barrier_stall_ns") == 0.0


def test_clflush_waits_at_once(backend: str) -> None:
    m = mk(backend, **{"pm.to_wpq_ns": 100.0})
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    t0 = cpu.clock
    cpu.clflush(PM)
    assert cpu.clock == t0 + c.costs.flush_ns + c.pm.to_wpq_ns
    t = cpu.clock
    cpu.sfence()
    assert cpu.clock == t + c.costs.fence_ns


def test_clflush_of_a_clean_line_does_not_wait(backend: str) -> None:
    m = mk(backend)
    c = m.config
    cpu = m.cpu(0)
    cpu.load(PM)
    t = cpu.clock
    cpu.clflush(PM)
    assert cpu.clock == t + c.costs.flush_ns
    assert kinds(m) == [Ev.CLFLUSH]


# -- pcommit, persist barriers, domains -----------------------------------------------------------

def _store_clwb_fence_pcommit_fence(m: Machine) -> tuple[float, float]:
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.clwb(PM)
    cpu.sfence()
    t1 = cpu.clock
    cpu.pcommit()
    cpu.sfence()
    return t1, cpu.clock


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
def test_pcommit_waits_for_the_drain_only_in_pdom0(backend: str, domain: str) -> None:
    m = mk(backend, domain=domain)
    c = m.config
    t1, t2 = _store_clwb_fence_pcommit_fence(m)
    if domain == "pdom0":
        # the first sfence waited until acceptance; the drain takes write_ns more
        assert t2 == t1 + c.pm.write_ns
    else:
        assert t2 == t1 + c.costs.pcommit_ns + c.costs.fence_ns
    assert stat(m, "pcommit") == 1
    assert kinds(m) == [Ev.STORE, Ev.CLWB, Ev.WB, Ev.SFENCE, Ev.PCOMMIT, Ev.SFENCE]


def test_pcommit_clocks_compare_across_domains(backend: str) -> None:
    ends = {d: _store_clwb_fence_pcommit_fence(mk(backend, domain=d))[1]
            for d in ("pdom0", "pdom1", "pdom2")}
    assert ends["pdom0"] > ends["pdom1"] == ends["pdom2"]


def test_pcommit_wait_is_taken_by_the_next_fence_only(backend: str) -> None:
    m = mk(backend, domain="pdom0")
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.clwb(PM)
    cpu.sfence()
    cpu.pcommit()
    t = cpu.clock
    cpu.load(PM)  # the pcommit itself does not block
    assert cpu.clock == t + c.cache.l1.latency_ns
    cpu.sfence()
    t = cpu.clock
    cpu.sfence()
    assert cpu.clock == t + c.costs.fence_ns


@pytest.mark.parametrize("domain, expected", [
    ("pdom0", [Ev.SFENCE, Ev.PCOMMIT, Ev.SFENCE]),
    ("pdom1", [Ev.SFENCE]),
    ("pdom2", []),
])
@pytest.mark.parametrize("mode", ["modelled", "fixed"])
def test_persist_barrier_instructions_per_domain(backend: str, domain: str, expected: list[Ev],
                                                 mode: str) -> None:
    m = mk(backend, domain=domain, barrier=mode)
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.clwb(PM)
    cpu.persist_barrier()
    assert kinds(m) == [Ev.STORE, Ev.CLWB, Ev.WB, *expected]
    s = m.stats()[0]
    assert s["persist_barriers"] == 1
    assert s["sfence"] == expected.count(Ev.SFENCE)
    assert s["pcommit"] == expected.count(Ev.PCOMMIT)
    assert s["mfence"] == 0


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
def test_modelled_persist_barrier_waits_per_domain(backend: str, domain: str) -> None:
    m = mk(backend, domain=domain)
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    t0 = cpu.clock
    cpu.clwb(PM)
    cpu.persist_barrier()
    accept = t0 + c.costs.flush_ns + c.pm.to_wpq_ns
    want = {"pdom0": accept + c.pm.write_ns, "pdom1": accept, "pdom2": t0 + c.costs.flush_ns}
    assert cpu.clock == want[domain]


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("barrier_ns", [0.0, 100.0, 777.5])
def test_fixed_persist_barrier_costs_exactly_barrier_ns(backend: str, domain: str,
                                                        barrier_ns: float) -> None:
    m = mk(backend, domain=domain, barrier="fixed", barrier_ns=barrier_ns,
           **{"pm.to_wpq_ns": 400.0})
    cpu = m.cpu(0)
    for i in range(3):
        cpu.store(PM + 64 * i, 1)
        cpu.clwb(PM + 64 * i)
    t = cpu.clock
    cpu.persist_barrier()
    assert cpu.clock == t + barrier_ns
    assert stat(m, "barrier_stall_ns") == barrier_ns
    t = cpu.clock
    cpu.persist_barrier()
    assert cpu.clock == t + barrier_ns


@pytest.mark.parametrize("domain", ["pdom0", "pdom1"])
def test_fixed_persist_barrier_consumes_the_pending_flushes(backend: str, domain: str) -> None:
    m = mk(backend, domain=domain, barrier="fixed", **{"pm.to_wpq_ns": 400.0})
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.clwb(PM)
    cpu.persist_barrier()
    t = cpu.clock
    cpu.sfence()
    assert cpu.clock == t + c.costs.fence_ns


def test_explicit_fences_are_not_free_in_fixed_mode(backend: str) -> None:
    m = mk(backend, barrier="fixed", **{"pm.to_wpq_ns": 100.0})
    c = m.config
    cpu = m.cpu(0)
    cpu.store(PM, 1)
    cpu.clwb(PM)
    t = cpu.clock
    cpu.sfence()  # outside a persist barrier a fence costs fence_ns and waits as modelled
    assert cpu.clock == t + c.pm.to_wpq_ns
    assert stat(m, "barrier_stall_ns") == c.pm.to_wpq_ns - c.costs.fence_ns


# -- read-modify-writes, work, markers ------------------------------------------------------------

def test_cas_and_xchg_return_old_values(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    m.poke(PM, 5)
    assert cpu.cas(PM, 5, 9) == 5
    assert m.peek(PM) == 9
    assert cpu.cas(PM, 5, 11) == 9  # fails: the value stays
    assert m.peek(PM) == 9
    assert cpu.xchg(PM, 3) == 9
    assert cpu.load(PM) == 3
    rmw = events_of(m, Ev.RMW)
    assert rmw["aux"].tolist() == [1, 0, 1]  # whether it stored
    assert rmw["value"].tolist() == [9, 9, 3]  # stored value, or the old one when it did not
    assert rmw["addr"].tolist() == [PM] * 3
    assert stat(m, "rmws") == 3 and stat(m, "stores") == 0


def test_cas_on_dram_is_a_fence_but_not_a_traced_store(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    assert cpu.cas(DRAM, 0, 4) == 0
    assert cpu.xchg(DRAM, 5) == 4
    ev = m.trace().events
    assert kinds(m) == [Ev.RMW, Ev.RMW]
    assert ev["aux"].tolist() == [0, 0]


def test_cold_cas_cost(backend: str) -> None:
    m = mk(backend)
    c = m.config
    cpu = m.cpu(0)
    cpu.cas(PM, 0, 1)
    assert cpu.clock == c.costs.rmw_ns + c.cache.llc.latency_ns + c.pm.read_ns


@pytest.mark.parametrize("op", ["cas", "xchg"])
def test_rmw_waits_for_pending_flushes_like_a_fence(backend: str, op: str) -> None:
    m = mk(backend, **{"pm.to_wpq_ns": 100.0})
    c = m.config
    cpu = m.cpu(0)
    cpu.load(PM + 64)  # the RMW target is cached
    cpu.store(PM, 1)
    cpu.clwb(PM)
    t0 = cpu.clock
    if op == "cas":
        cpu.cas(PM + 64, 0, 1)
    else:
        cpu.xchg(PM + 64, 1)
    assert stat(m, "barrier_stall_ns") == c.pm.to_wpq_ns - c.costs.rmw_ns
    assert cpu.clock == t0 + c.pm.to_wpq_ns + c.cache.l1.latency_ns
    t = cpu.clock
    cpu.sfence()  # the RMW consumed the wait
    assert cpu.clock == t + c.costs.fence_ns


def test_work_adds_time(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(1)
    cpu.work(123.5)
    cpu.work(0.0)
    cpu.work(6.5)
    assert cpu.clock == 130.0
    assert stat(m, "work_ns", 1) == 130.0
    assert m.cpu(0).clock == 0.0
    assert len(m.trace()) == 0


def test_mark_emits_marker_events(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(1)
    cpu.work(10.0)
    cpu.mark(Mark.TX_BEGIN, 7)
    cpu.mark(Mark.USER + 2, 99)
    assert cpu.clock == 10.0
    ev = m.trace().events
    assert kinds(m) == [Ev.MARK, Ev.MARK]
    assert ev["aux"].tolist() == [int(Mark.TX_BEGIN), int(Mark.USER) + 2]
    assert ev["value"].tolist() == [7, 99]
    assert ev["tid"].tolist() == [1, 1]
    assert ev["time"].tolist() == [10.0, 10.0]


def test_only_pm_accesses_are_traced(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    cpu.store(DRAM, 1)
    cpu.load(DRAM)
    cpu.ntstore(DRAM + 64, 2)
    cpu.clwb(DRAM)
    cpu.clflushopt(DRAM + 64)
    cpu.clflush(DRAM + 128)
    assert len(m.trace()) == 0
    assert stat(m, "wpq_inserts") == 0
    assert stat(m, "dram_write_bytes") > 0
    cpu.sfence()
    cpu.mfence()
    cpu.pcommit()
    cpu.store(PM, 1)
    cpu.load(PM)
    assert kinds(m) == [Ev.SFENCE, Ev.MFENCE, Ev.PCOMMIT, Ev.STORE]


def test_trace_records_tid_time_and_order(backend: str) -> None:
    m = mk(backend)
    c0, c1 = m.cpu(0), m.cpu(1)
    c0.store(PM, 1)
    t_a = c0.clock
    c1.store(PM + 64, 2)
    t_b = c1.clock
    c0.clwb(PM)
    t_c = c0.clock
    ev = m.trace().events
    assert ev["tid"].tolist() == [0, 1, 0, 0]
    assert ev["time"].tolist()[:3] == [t_a, t_b, t_c]
    assert kinds(m) == [Ev.STORE, Ev.STORE, Ev.CLWB, Ev.WB]


# -- WPQ back-pressure -------------------------------------------------------------------------------

def _burst(m: Machine, n: int) -> None:
    cpu = m.cpu(0)
    for i in range(n):
        cpu.store(PM + 64 * i, i)
    for i in range(n):
        cpu.clwb(PM + 64 * i)
    cpu.sfence()


def test_a_fence_waits_behind_a_full_wpq(backend: str) -> None:
    n, write_ns = 8, 1000.0
    m = mk(backend, **{"pm.wpq_entries": 2, "pm.banks": 1, "pm.write_ns": write_ns})
    _burst(m, n)
    s = m.stats()[0]
    assert s["wpq_inserts"] == n
    assert s["wpq_occ_max"] == 2
    assert s["barrier_stall_ns"] >= (n - 2) * write_ns


def test_a_large_wpq_absorbs_the_burst(backend: str) -> None:
    n = 8
    m = mk(backend, **{"pm.wpq_entries": 64, "pm.banks": 16, "pm.write_ns": 1000.0})
    c = m.config
    _burst(m, n)
    s = m.stats()[0]
    assert s["wpq_inserts"] == n
    assert s["wpq_occ_max"] == n  # all still draining, none waited
    assert s["barrier_stall_ns"] == c.pm.to_wpq_ns - c.costs.fence_ns
    assert s["wpq_stall_ns"] == 0.0


def test_evictions_stall_on_a_full_wpq(backend: str) -> None:
    slow = {"pm.banks": 1, "pm.write_ns": 1000.0}
    small = mk(backend, TINY, **{"pm.wpq_entries": 2}, **slow)
    large = mk(backend, TINY, **{"pm.wpq_entries": 4096}, **slow)
    for m in (small, large):
        cpu = m.cpu(0)
        for i in range(200):
            cpu.store(PM + 64 * i, i)
    s, big = small.stats()[0], large.stats()[0]
    assert s["writebacks"] == big["writebacks"] > 100
    assert s["wpq_inserts"] == s["writebacks"]
    assert s["wpq_stall_ns"] > 0.0
    assert s["wpq_occ_max"] == 2
    assert big["wpq_stall_ns"] == 0.0
    assert 2 < big["wpq_occ_max"] <= 4096
    assert s["time_ns"] - big["time_ns"] == pytest.approx(s["wpq_stall_ns"])


# -- threads, locks, machine API ------------------------------------------------------------------

def _locked_worker(cpu: Any, lock: Any, log: list[tuple[int, float, float]],
                   rounds: int) -> Generator[Any, Any, None]:
    for k in range(rounds):
        req = None
        if lock is not None:
            req = yield from cpu.acquire(lock)
        start = cpu.clock
        cpu.work(100.0)
        cpu.store(PM + 64 * cpu.tid, k)
        end = cpu.clock
        log.append((cpu.tid, start, end))
        if lock is not None:
            yield from cpu.release(lock, req)
        else:
            yield from cpu.sync()


def _overlaps(log: list[tuple[int, float, float]]) -> bool:
    spans = sorted((s, e) for _, s, e in log)
    return any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))


def test_locks_serialise_critical_sections(backend: str) -> None:
    m = mk(backend)
    lock = m.lock()
    log: list[tuple[int, float, float]] = []
    for t in range(2):
        m.spawn(_locked_worker, t, lock, log, 3)
    m.run()
    assert sorted(t for t, _, _ in log) == [0, 0, 0, 1, 1, 1]
    assert not _overlaps(log)
    assert m.now >= 6 * 100.0
    assert m.cpu(0).load(PM) == 2 and m.cpu(0).load(PM + 64) == 2


def test_without_a_lock_the_same_sections_overlap(backend: str) -> None:
    m = mk(backend)
    log: list[tuple[int, float, float]] = []
    for t in range(2):
        m.spawn(_locked_worker, t, None, log, 3)
    m.run()
    assert _overlaps(log)


def test_lock_cost_is_charged_on_acquire_and_release(backend: str) -> None:
    m = mk(backend, cores=1)
    c = m.config
    lock = m.lock()

    def body(cpu: Any) -> Generator[Any, Any, None]:
        req = yield from cpu.acquire(lock)
        yield from cpu.release(lock, req)

    m.spawn(body, 0)
    m.run()
    assert m.cpu(0).clock == 2 * c.costs.lock_ns
    assert stat(m, "work_ns") == 2 * c.costs.lock_ns


def test_cpu_out_of_range(backend: str) -> None:
    m = mk(backend)
    with pytest.raises(ConfigError, match="thread 2 does not exist"):
        m.cpu(2)
    with pytest.raises(ConfigError):
        m.cpu(-1)


def test_pm_image_round_trip_and_trace_base(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    m.poke(PM + 8, 0xFF)
    cpu.store(PM, 1)
    tr = m.trace()
    assert not tr.base.any()  # the image when the machine started
    assert tr.pm_base == PM and tr.meta["domain"] == "pdom1"
    img = m.pm_image()
    assert img.size == m.pm.size and img[0] == 1 and img[8] == 0xFF
    m.reset_trace()
    assert len(m.trace()) == 0
    assert np.array_equal(m.trace().base, img)
    img2 = np.zeros_like(img)
    img2[16] = 7
    m.load_pm_image(img2)
    assert m.peek(PM + 16) == 7 and m.peek(PM) == 0
    with pytest.raises(ConfigError, match="bytes"):
        m.load_pm_image(np.zeros(64, np.uint8))


def test_stats_records_and_table(backend: str) -> None:
    m = mk(backend)
    m.cpu(0).store(PM, 1)
    m.cpu(1).store(PM + 64, 1)
    m.cpu(1).work(50.0)
    rows = m.stats_records()
    assert [r["thread"] for r in rows] == [0, 1, "total"]
    assert rows[2]["stores"] == 2
    assert rows[2]["time_ns"] == max(rows[0]["time_ns"], rows[1]["time_ns"]) == m.now
    table = m.stats_table()
    for name in ("stores", "barrier_stall_ns", "wpq_occ_mean", "total"):
        assert name in table


def test_flush_range_flushes_every_touched_line(backend: str) -> None:
    m = mk(backend)
    cpu = m.cpu(0)
    cpu.store_words(PM + 56, [1, 2, 3])  # lines 0 and 64
    cpu.flush_range(PM + 60, 10, "clflushopt")
    fl = events_of(m, Ev.CLFLUSHOPT)
    assert fl["addr"].tolist() == [PM, PM + 64]
    assert sorted(events_of(m, Ev.WB)["addr"].tolist()) == [PM, PM + 64]
    m.cpu(0).flush_range(PM + 128, 64)  # default kind clwb, exactly one line
    assert events_of(m, Ev.CLWB)["addr"].tolist() == [PM + 128]


def test_unknown_backend_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="unknown backend 'fortran'"):
        Machine(BASE, backend="fortran")
    monkeypatch.setenv("PMSIM_BACKEND", "fortran")
    with pytest.raises(ConfigError, match="PMSIM_BACKEND='fortran'"):
        Machine(BASE)


def test_machine_reports_its_backend(backend: str) -> None:
    assert mk(backend).backend == backend


def test_peek_bytes_reads_aligned_ranges(backend: str) -> None:
    m = mk(backend)
    m.poke(PM, 0x0807060504030201)
    m.poke(PM + 8, 0x100F0E0D0C0B0A09)
    assert m.peek_bytes(PM, 16) == bytes(range(1, 17))


def test_peek_bytes_accepts_unaligned_addresses(backend: str) -> None:
    m = mk(backend)
    m.poke(PM, 0x0807060504030201)
    assert m.peek_bytes(PM + 5, 3) == bytes([6, 7, 8])


def test_locked_runs_are_deterministic(backend: str) -> None:
    runs = []
    for _ in range(2):
        m = mk(backend)
        lock = m.lock()
        log: list[tuple[int, float, float]] = []
        for t in range(2):
            m.spawn(_locked_worker, t, lock, log, 4)
        m.run()
        runs.append((log, m.trace().events, m.stats()))
    assert runs[0][0] == runs[1][0]
    assert np.array_equal(runs[0][1], runs[1][1]) and np.array_equal(runs[0][2], runs[1][2])


WORDS = [PM + 8 * i for i in (0, 1, 8, 9, 64, 512, 513)] + [DRAM + 8 * i for i in (0, 8, 64)]
mem_ops = st.lists(st.tuples(
    st.sampled_from(["store", "ntstore", "load", "cas", "xchg", "clwb", "clflush", "clflushopt",
                     "sfence", "persist_barrier"]),
    st.integers(0, 1), st.sampled_from(WORDS), st.integers(0, 3), st.integers(0, 2**64 - 1)),
    max_size=80)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mem_ops, st.sampled_from(["pdom0", "pdom1", "pdom2"]))
def test_memory_contents_match_a_flat_model(backend: str, program: list[tuple[str, int, int, int, int]],
                                            domain: str) -> None:
    m = mk(backend, TINY, domain=domain)
    model: dict[int, int] = {}
    pm_stores = 0
    for op, tid, addr, small, big in program:
        cpu = m.cpu(tid)
        old = model.get(addr, 0)
        if op in ("store", "ntstore"):
            getattr(cpu, op)(addr, big)
            model[addr] = big
            pm_stores += addr < DRAM
        elif op == "load":
            assert cpu.load(addr) == old
        elif op == "cas":
            assert cpu.cas(addr, small, big) == old
            if old == small:
                model[addr] = big
        elif op == "xchg":
            assert cpu.xchg(addr, small) == old
            model[addr] = small
        elif op in ("clwb", "clflush", "clflushopt"):
            getattr(cpu, op)(addr)
        else:
            getattr(cpu, op)()
    for addr in WORDS:
        assert m.peek(addr) == model.get(addr, 0)
    ev = m.trace().events
    assert int(np.isin(ev["kind"], [Ev.STORE, Ev.NTSTORE]).sum()) == pm_stores
    times = {t: ev[ev["tid"] == t]["time"] for t in (0, 1)}
    assert all((np.diff(x) >= 0).all() for x in times.values())


# -- the functional machine ------------------------------------------------------------------
def _workers(cpu: Any, lock: Any, log: list[int]) -> Generator[Any, Any, None]:
    for i in range(3):
        req = yield from cpu.acquire(lock)
        v = cpu.load(PM)
        cpu.store(PM, v + 1)
        cpu.clwb(PM)
        cpu.persist_barrier()
        log.append(cpu.tid)
        yield from cpu.release(lock, req)
        cpu.work(5.0 * (i + 1))


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
def test_functional_machine_has_the_timed_results_without_timing(backend: str, domain: str) -> None:
    """Same memory, values and trace events (WB aside, all at time 0); no caches, no clock."""
    runs = {}
    for timed in (True, False):
        _need(backend)
        m = Machine(TINY.replace(domain=domain), backend=backend, timed=timed)
        assert m.timed is timed
        lock, log = m.lock(), []
        for t in range(2):
            m.spawn(_workers, t, lock, log)
        m.run()
        for i in range(6):
            m.cpu(0).store(PM + STRIDE * i, i)  # evictions in the timed machine
        assert m.cpu(1).cas(PM + STRIDE, 1, 9) == 1
        runs[timed] = (m.pm_image(), m.trace().events, m.stats(), log)
    (img_t, ev_t, st_t, log_t), (img_f, ev_f, st_f, log_f) = runs[True], runs[False]
    assert np.array_equal(img_t, img_f) and log_t == log_f == [0, 1] * 3
    assert ev_t["time"].max() > 0 and not ev_f["time"].any()
    kept = ev_t[ev_t["kind"] != Ev.WB]
    for f in ("kind", "tid", "aux", "addr", "value"):
        assert kept[f].tolist() == ev_f[f].tolist(), f
    for f in ("stores", "loads", "rmws", "clwb", "sfence", "pcommit", "persist_barriers"):
        assert st_t[f].tolist() == st_f[f].tolist(), f
    for f in ("l1_hits", "l1_misses", "writebacks", "wpq_inserts", "pm_write_bytes"):
        assert not st_f[f].any(), f
    assert not st_f["time_ns"].any() and not st_f["work_ns"].any()


@pytest.mark.parametrize("timed", [True, False])
def test_power_cycle_keeps_pm_and_loads_an_image(backend: str, timed: bool) -> None:
    _need(backend)
    m = Machine(BASE, backend=backend, timed=timed)
    cpu = m.cpu(0)
    cpu.store(PM, 7)
    cpu.store(DRAM, 8)
    m.power_cycle()
    assert m.peek(PM) == 7 and m.peek(DRAM) == 0
    assert len(m.trace()) == 0 and m.count("stores") == 0 and cpu.clock == 0.0
    img = m.pm_image()
    img[8:16] = 3
    m.power_cycle(img)
    assert cpu.load(PM + 8) == 0x0303030303030303 and m.peek(PM) == 7


def test_power_cycle_replaces_only_a_used_scheduler(backend: str) -> None:
    m = mk(backend)
    env = m.env
    m.power_cycle()
    assert m.env is env  # unused: kept
    m.spawn(_workers, 0, m.lock(), [])
    m.run()
    assert m.env.now > 0
    m.power_cycle()
    assert m.env is not env and m.env.now == 0


def test_pm_words_copies_aligned_pm_words(backend: str) -> None:
    m = mk(backend)
    m.poke(PM + 8, 5)
    m.poke(PM + 16, 6)
    words = m.pm_words(PM + 8, 2)
    assert words.tolist() == [5, 6]
    words[0] = 1
    assert m.peek(PM + 8) == 5
    for addr, n in ((PM + 4, 1), (PM - 8, 1), (PM + (1 << 20) - 8, 2), (DRAM, 1)):
        with pytest.raises(ConfigError, match="PM words"):
            m.pm_words(addr, n)


def _stepper(cpu: Any, ns: float, rounds: int,
             seen: list[tuple[int, float, float]]) -> Generator[Any, Any, None]:
    for _ in range(rounds):
        cpu.work(ns)
        yield from cpu.sync()
        seen.append((cpu.tid, cpu.clock, cpu.machine.env.now))


def test_sync_skips_the_scheduler_only_when_no_other_thread_is_due(backend: str) -> None:
    """A thread that is the next one due carries on without a SimPy step, with time moved as
    the timeout would have moved it; otherwise the threads still interleave in time order."""
    m = mk(backend)
    seen: list[tuple[int, float, float]] = []
    m.spawn(_stepper, 0, 10.0, 3, seen)
    steps = [0]
    env = m.env
    orig = env.step

    def counted() -> None:
        steps[0] += 1
        orig()

    env.step = counted  # type: ignore[method-assign]
    m.run()
    assert [(c, n) for _, c, n in seen] == [(10.0, 10.0), (20.0, 20.0), (30.0, 30.0)]
    assert steps[0] <= 3  # the process's start and end and run()'s stop: no timeout per sync
    m2 = mk(backend)
    seen2: list[tuple[int, float, float]] = []
    m2.spawn(_stepper, 0, 10.0, 3, seen2)
    m2.spawn(_stepper, 1, 15.0, 2, seen2)
    m2.run()
    # at 30 both are due: thread 1 scheduled its wake-up first, so it runs first
    assert [(t, n) for t, _, n in seen2] == [(0, 10.0), (1, 15.0), (0, 20.0), (1, 30.0),
                                             (0, 30.0)]
