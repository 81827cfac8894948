"""Hardware transactional memory in the engines (pmsim.hw.htm): conflicts, false sharing,
capacity, flushes, explicit aborts, lock subscription, and aborted stores leaving no trace.

Every test runs on each backend (the ``backend`` fixture); the timed and functional engines
make the same decisions.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from pmsim.config import CacheConfig, CacheLevel, MachineConfig, Region
from pmsim.errors import ConfigError
from pmsim.hw import htm as H
from pmsim.hw.engines.reference import (
    BATCH_DTYPE,
    OP_LOAD,
    OP_RDTSC,
    OP_STORE,
    OP_XABORT,
    OP_XBEGIN,
    OP_XEND,
    OP_XSTATUS,
)
from pmsim.machine import Machine, make_engine
from pmsim.trace import Ev

pytestmark = pytest.mark.ccore

PM, DRAM = 0, 1 << 30
CFG = MachineConfig(cores=4, regions=(Region("pm", PM, 1 << 16, "pm"),
                                      Region("dram", DRAM, 1 << 16, "dram")))
L1_SETS, L1_WAYS = CFG.cache.l1.sets, CFG.cache.l1.ways
CONFLICT = H.XABORT_CONFLICT | H.XABORT_RETRY


def engine(backend: str, timed: bool = True, **changes: Any) -> Any:
    if backend == "c" and importlib.util.find_spec("pmsim.hw.engines.native_engine") is None:
        pytest.skip("the C engine is not built")
    return make_engine(CFG.replace(**changes) if changes else CFG, backend, timed)


def htm_stats(e: Any, tid: int) -> dict[str, int]:
    s = e.get_stats()[tid]
    return {n[4:]: int(s[n]) for n in s.dtype.names if n.startswith("htm_")}


def stores(e: Any) -> list[tuple[int, int, int]]:
    t = e.trace()
    t = t[t["kind"] == Ev.STORE]
    return list(zip(t["tid"].tolist(), t["addr"].tolist(), t["value"].tolist(), strict=True))


@pytest.fixture(params=[True, False], ids=["timed", "functional"])
def timed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_conflict_between_two_writers_aborts_the_first(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    e.xbegin(0)
    e.store(0, PM + 64, 1)
    e.xbegin(1)
    e.store(1, PM + 64, 2)  # the requester wins: thread 0 aborts
    assert e.xstatus(0) == CONFLICT and e.xstatus(1) == 0
    assert e.xend(1) == 0
    assert e.xend(0) == CONFLICT
    assert e.mem.pm[8] == 2
    assert htm_stats(e, 0) == {**htm_stats(e, 0), "begins": 1, "commits": 0, "aborts_conflict": 1,
                               "false_sharing": 0}
    assert htm_stats(e, 1)["commits"] == 1 and htm_stats(e, 1)["aborts_conflict"] == 0
    assert stores(e) == [(1, PM + 64, 2)]


def test_disjoint_lines_do_not_conflict(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    for t in range(4):
        e.xbegin(t)
    for t in range(4):
        e.store(t, PM + 64 * t, t + 10)
        assert e.load(t, PM + 512 + 64 * t) == 0
    assert [e.xend(t) for t in range(4)] == [0, 0, 0, 0]
    assert [int(e.mem.pm[8 * t]) for t in range(4)] == [10, 11, 12, 13]
    assert sum(htm_stats(e, t)["aborts_conflict"] for t in range(4)) == 0


def test_readers_share_a_line(backend: str) -> None:
    e = engine(backend)
    e.xbegin(0)
    e.xbegin(1)
    e.load(0, PM)
    e.load(1, PM)
    e.load(2, PM)  # a non-transactional reader too
    assert e.xend(0) == 0 and e.xend(1) == 0


def test_false_sharing_aborts_and_is_counted(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    e.xbegin(0)
    e.store(0, PM + 128, 1)  # word 0
    e.xbegin(1)
    e.store(1, PM + 136, 2)  # word 1 of the same line: a conflict, but false sharing
    assert e.xend(0) == CONFLICT and e.xend(1) == 0
    assert htm_stats(e, 0)["false_sharing"] == 1
    e.xbegin(0)
    e.load(0, PM + 192 + 16)  # reads word 2
    e.store(1, PM + 192 + 24, 5)  # a plain write of word 3
    assert e.xend(0) == CONFLICT
    e.xbegin(0)
    e.load(0, PM + 256 + 8)
    e.store(1, PM + 256 + 8, 5)  # the word it read: true sharing
    assert e.xend(0) == CONFLICT
    s = htm_stats(e, 0)
    assert s["aborts_conflict"] == 3 and s["false_sharing"] == 2


def test_capacity_abort_at_the_l1_set_bound(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    stride = 64 * L1_SETS  # lines of one L1 set
    e.xbegin(0)
    for i in range(L1_WAYS):
        e.store(0, PM + stride * i, i + 1)
    assert e.xend(0) == 0  # exactly the ways of one set fit
    e.xbegin(0)
    for i in range(L1_WAYS):
        e.store(0, PM + 8 + stride * i, 7)
        assert e.xstatus(0) == 0
    e.store(0, PM + 8 + stride * L1_WAYS, 7)
    assert e.xend(0) == H.XABORT_CAPACITY
    assert htm_stats(e, 0)["aborts_capacity"] == 1
    assert int(e.mem.pm[1]) == 0  # nothing of the aborted transaction


def test_capacity_abort_at_the_write_and_read_set_bounds(backend: str) -> None:
    e = engine(backend, **{"htm.write_set_lines": 4, "htm.read_set_lines": 6})
    e.xbegin(0)
    for i in range(4):
        e.store(0, PM + 64 * i, 1)  # four different sets
    e.store(0, PM, 2)  # a line already written costs nothing
    assert e.xstatus(0) == 0
    e.store(0, PM + 64 * 4, 1)
    assert e.xend(0) == H.XABORT_CAPACITY
    e.xbegin(1)
    for i in range(6):
        e.load(1, PM + 64 * i)
    assert e.xstatus(1) == 0
    e.load(1, PM + 64 * 6)
    assert e.xend(1) == H.XABORT_CAPACITY


def test_default_write_set_bound_is_512_lines(backend: str) -> None:
    cfg = CFG.replace(cache=CacheConfig(CacheLevel(256, 8, 1.5), CacheLevel(512, 8, 5.0),
                                        CacheLevel(1024, 16, 15.0)))
    assert cfg.htm.write_set_lines == 512 and cfg.cache.l1.sets * cfg.cache.l1.ways > 512
    e = make_engine(cfg, backend)
    e.xbegin(0)
    for i in range(512):
        e.store(0, PM + 64 * i, 1)
    assert e.xstatus(0) == 0
    e.store(0, PM + 64 * 512, 1)
    assert e.xend(0) == H.XABORT_CAPACITY


@pytest.mark.parametrize("flush", ["clwb", "clflushopt", "clflush"])
def test_flush_of_a_written_line_aborts(backend: str, flush: str) -> None:
    e = engine(backend)
    e.xbegin(0)
    e.store(0, PM + 64, 3)
    getattr(e, flush)(0, PM + 64 + 5)
    assert e.xend(0) == H.XABORT_FLUSH
    assert htm_stats(e, 0)["aborts_flush"] == 1
    assert int(e.mem.pm[8]) == 0
    kinds = e.trace()["kind"].tolist()
    assert Ev.STORE not in kinds and getattr(Ev, flush.upper()) not in kinds


def test_other_flushes_run_unless_any_flush_aborts(backend: str) -> None:
    e = engine(backend)
    e.store(0, PM + 128, 1)
    e.xbegin(0)
    e.store(0, PM + 64, 3)
    e.clwb(0, PM + 128)  # a line it did not write: flushed, no abort
    assert e.xstatus(0) == 0
    assert e.xend(0) == 0
    assert e.get_stats()[0]["clwb"] == 1
    strict = engine(backend, **{"htm.abort_on_any_flush": True})
    strict.xbegin(0)
    strict.clwb(0, PM + 128)
    assert strict.xend(0) == H.XABORT_FLUSH
    assert strict.get_stats()[0]["clwb"] == 0


def test_explicit_abort_carries_its_code(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    e.xbegin(2)
    e.store(2, PM, 9)
    e.xabort(2, 0x42)
    status = e.xend(2)
    assert status == H.XABORT_EXPLICIT | 0x42 << 24
    assert H.xabort_code(status) == 0x42 and H.describe_status(status) == "explicit(0x42)"
    e.xbegin(2)
    e.xabort(2, H.XABORT_LOCK_BUSY)
    assert H.xabort_code(e.xend(2)) == 0xFF
    e.xabort(2, 3)  # outside a transaction: nothing happens
    s = htm_stats(e, 2)
    assert (s["aborts_explicit"], s["aborts_lock"], s["begins"]) == (1, 1, 2)
    assert int(e.mem.pm[0]) == 0
    for bad in (256, -1, 1.0):
        with pytest.raises(ConfigError, match="xabort code .* use an int in 0..255"):
            e.xabort(0, bad)


def test_lock_subscription_taking_the_lock_aborts_live_transactions(backend: str) -> None:
    e = engine(backend)
    lock = DRAM
    for t in range(3):
        e.xbegin(t)
        assert e.load(t, lock) == 0  # subscribe
        e.store(t, PM + 64 * t, t + 1)
    assert e.cas(3, lock, 0, 1) == 0  # thread 3 takes the lock (non-transactionally)
    assert [e.xend(t) for t in range(3)] == [CONFLICT] * 3
    assert list(e.mem.pm[:24:8]) == [0, 0, 0]
    e.xbegin(0)
    assert e.load(0, lock) == 1  # a new attempt sees the lock taken
    e.xabort(0, H.XABORT_LOCK_BUSY)
    assert e.xend(0) & H.XABORT_EXPLICIT
    assert htm_stats(e, 0)["aborts_lock"] == 1


def test_aborted_stores_never_reach_caches_pm_or_trace(backend: str) -> None:
    m = Machine(CFG, backend=backend)
    before = m.pm_image()
    cpu, other = m.cpu(0), m.cpu(1)
    cpu.xbegin()
    for i in range(6):
        cpu.store(PM + 64 * i, 100 + i)
        cpu.ntstore(PM + 64 * i + 8, 200 + i)
    other.load(PM + 64 * 5)  # a reader aborts the writer
    assert cpu.xend() == CONFLICT
    for i in range(6):
        cpu.clwb(PM + 64 * i)
    cpu.sfence()
    assert np.array_equal(m.pm_image(), before)
    tr = m.trace()
    assert not set(tr.events["kind"].tolist()) & {Ev.STORE, Ev.NTSTORE, Ev.WB}
    st = m.stats()
    assert st["pm_write_bytes"].sum() == 0 and st["writebacks"].sum() == 0


def test_committed_stores_reach_the_trace_at_commit(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    e.xbegin(1)
    e.store(1, PM + 128 + 24, 1)
    e.store(1, PM + 64 + 8, 2)
    e.store(1, PM + 128 + 8, 3)
    e.store(1, PM + 128 + 24, 4)  # overwrites the first store
    assert e.load(1, PM + 128 + 24) == 4  # loads see the transaction's own stores
    assert stores(e) == []
    clock = e.get_clock(1)
    assert e.xend(1) == 0
    # lines in order of first write, words in address order, each word once
    assert stores(e) == [(1, PM + 128 + 8, 3), (1, PM + 128 + 24, 4), (1, PM + 64 + 8, 2)]
    times = e.trace()["time"].tolist()
    assert len(set(times)) == 1
    if timed:
        assert times[0] == clock + CFG.htm.xend_ns
        e.clwb(1, PM + 128)
        e.clwb(1, PM + 64)
        e.sfence(1)
        assert [int(a) for a in e.trace()[e.trace()["kind"] == Ev.WB]["addr"]] == [PM + 128, PM + 64]


def test_non_transactional_read_aborts_the_writer(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    e.store(0, PM + 64, 5)
    e.xbegin(0)
    e.store(0, PM + 64, 6)
    assert e.load(1, PM + 64) == 5  # a background thread reads the committed value
    assert e.xstatus(0) == CONFLICT
    loads = e.get_stats()[0]["loads"]
    assert e.load(0, PM + 64) == 0  # a doomed transaction's accesses are not applied
    e.store(0, PM + 128, 1)
    assert e.get_stats()[0]["loads"] == loads
    assert e.xend(0) == CONFLICT
    assert int(e.mem.pm[8]) == 5 and int(e.mem.pm[16]) == 0


def test_reader_aborted_by_a_later_writer(backend: str) -> None:
    e = engine(backend)
    e.xbegin(0)
    e.load(0, PM + 64)
    e.xbegin(1)
    e.cas(1, PM + 64, 0, 1)  # a transactional CAS writes: the reader aborts
    assert e.xend(0) == CONFLICT and e.xend(1) == 0
    assert int(e.mem.pm[8]) == 1


def test_cas_and_xchg_inside_a_transaction(backend: str, timed: bool) -> None:
    e = engine(backend, timed)
    e.store(0, PM, 7)
    e.xbegin(0)
    assert e.cas(0, PM, 5, 9) == 7  # fails: nothing buffered
    assert e.load(0, PM) == 7
    assert e.cas(0, PM, 7, 8) == 7
    assert e.xchg(0, PM, 10) == 8
    assert e.load(0, PM) == 10 and e.mem.pm[0] == 7
    assert e.xend(0) == 0
    assert e.mem.pm[0] == 10


def test_nesting_and_xend_outside_are_errors(backend: str) -> None:
    e = engine(backend)
    with pytest.raises(ConfigError, match="xend: thread 0 is not in a hardware transaction"):
        e.xend(0)
    e.xbegin(0)
    with pytest.raises(ConfigError, match="thread 0 is already in a hardware transaction"):
        e.xbegin(0)
    e.xabort(0, 1)
    with pytest.raises(ConfigError, match="already in a hardware transaction"):
        e.xbegin(0)  # an aborted transaction still needs its xend
    assert e.xend(0) == H.XABORT_EXPLICIT | 1 << 24
    for op in ("xbegin", "xend", "xstatus", "rdtsc"):
        with pytest.raises(ConfigError, match="thread 4 does not exist"):
            getattr(e, op)(4)


def test_costs_and_time_not_rolled_back(backend: str) -> None:
    h = CFG.htm
    e = engine(backend)
    e.xbegin(0)
    assert e.get_clock(0) == h.xbegin_ns
    e.work(0, 100.0)
    e.xabort(0, 1)
    assert e.xend(0) != 0
    assert e.get_clock(0) == h.xbegin_ns + 100.0 + h.abort_ns
    e.xbegin(1)
    e.xend(1)
    assert e.get_clock(1) == h.xbegin_ns + h.xend_ns


def test_rdtsc_skew_and_frequency(backend: str, timed: bool) -> None:
    e = engine(backend, timed, **{"htm.tsc_skew_ns": (0.0, 250.0), "htm.tsc_ghz": 2.0})
    e.set_clock(0, 1000.25)
    e.set_clock(1, 1000.25)
    cost = CFG.htm.rdtsc_ns if timed else 0.0
    assert e.rdtsc(0) == int((1000.25 + cost) * 2.0)
    assert e.rdtsc(1) == int((1000.25 + cost + 250.0) * 2.0)
    assert e.rdtsc(2) == int(cost * 2.0)
    e.xbegin(0)
    e.store(0, PM, 1)
    e.rdtsc(1)  # reading the TSC never conflicts
    assert e.xend(0) == 0


def test_batch_ops_match_single_calls(backend: str) -> None:
    ops = [(OP_XBEGIN, 0, 0, 0), (OP_STORE, 0, PM, 5), (OP_XSTATUS, 0, 0, 0),
           (OP_XBEGIN, 1, 0, 0), (OP_LOAD, 1, PM, 0), (OP_XSTATUS, 0, 0, 0),
           (OP_XEND, 0, 0, 0), (OP_STORE, 1, PM + 64, 1), (OP_XABORT, 1, 0x17, 0),
           (OP_XEND, 1, 0, 0), (OP_RDTSC, 2, 0, 0)]
    b = np.zeros(len(ops), dtype=BATCH_DTYPE)
    for i, (op, tid, x, v) in enumerate(ops):
        aux, addr = (x, 0) if op == OP_XABORT else (0, x)
        b[i] = (op, 0, tid, aux, addr, v, 0)
    e = engine(backend)
    out = e.run_batch(b).tolist()
    assert out[2] == 0 and out[5] == CONFLICT and out[6] == CONFLICT
    assert out[9] == H.XABORT_EXPLICIT | 0x17 << 24 and out[10] == e.get_clock(2)
    assert e.mem.pm[0] == 0 and e.mem.pm[8] == 0
    b[0]["op"] = OP_XEND
    with pytest.raises(ConfigError, match="xend: thread 0 is not in a hardware transaction"):
        engine(backend).run_batch(b[:1])
    bad = b[8:9].copy()
    bad[0]["aux"] = 300
    with pytest.raises(ConfigError, match="xabort code 300"):
        engine(backend).run_batch(bad)


def test_reset_volatile_ends_every_transaction(backend: str) -> None:
    e = engine(backend)
    e.xbegin(0)
    e.store(0, PM, 1)
    e.xbegin(1)
    e.xabort(1, 2)
    e.reset_volatile()
    assert e.xstatus(1) == 0
    with pytest.raises(ConfigError, match="not in a hardware transaction"):
        e.xend(0)
    e.xbegin(0)
    e.store(1, PM, 3)  # no stale set of the old transaction
    assert e.xend(0) == 0 and e.mem.pm[0] == 3


def test_cpu_instructions(backend: str) -> None:
    m = Machine(CFG, backend=backend)
    a, b = m.cpu(0), m.cpu(1)
    a.xbegin()
    a.store(PM, 1)
    b.xbegin()
    b.store(PM + 8, 2)
    assert a.xstatus() == CONFLICT and b.xstatus() == 0
    assert a.xend() == CONFLICT and b.xend() == 0
    a.xbegin()
    a.xabort(9)
    assert H.xabort_code(a.xend()) == 9
    assert b.rdtsc() == int(b.clock)
    assert m.stats()["htm_false_sharing"].tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("changes,msg", [
    ({"htm.write_set_lines": 0}, "HTMConfig.write_set_lines: must be a positive integer"),
    ({"htm.read_set_lines": 1 << 23}, "HTMConfig.read_set_lines: 8388608 is more than"),
    ({"htm.abort_on_any_flush": 1}, "HTMConfig.abort_on_any_flush: expected true or false"),
    ({"htm.xend_ns": -1.0}, "HTMConfig.xend_ns: must be a number >= 0"),
    ({"htm.tsc_ghz": 0.0}, r"HTMConfig.tsc_ghz: must be a number in \(0, 1000\]"),
    ({"htm.tsc_skew_ns": (0.0, -5.0)}, r"HTMConfig.tsc_skew_ns\[1\]: must be a number in"),
    ({"htm.tsc_skew_ns": "fast"}, r"tsc_skew_ns: expected a list, got 'fast'.* numbers"),
    ({"htm.quantum_ns": 0.0}, "HTMConfig.quantum_ns: must be > 0"),
])
def test_bad_htm_config_says_what_to_fix(changes: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        CFG.replace(**changes)


def test_htm_config_round_trips() -> None:
    cfg = CFG.replace(**{"htm.tsc_skew_ns": [0, 12.5], "htm.abort_on_any_flush": True})
    assert cfg.htm.tsc_skew_ns == (0.0, 12.5) and cfg.htm.skew(1) == 12.5 and cfg.htm.skew(3) == 0
    assert MachineConfig.from_json(cfg.to_json()) == cfg
    assert MachineConfig.from_yaml(cfg.to_yaml()) == cfg
