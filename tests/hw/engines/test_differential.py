"""Differential tests: the C engine must match the pure-Python reference bit for bit.

Hypothesis generates operation sequences over a few threads on a tiny machine (every domain,
both barrier modes, one to three cores) and runs them through ``PyEngine`` and ``CEngine`` (as
individual calls and as batches). Statistics (floats compared bitwise), traces, returned values,
memory and clocks must be identical, and bad addresses must raise the same errors.
``PMSIM_DIFF_EXAMPLES`` sets the number of examples (the sanitizer run uses a small one).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsim.cache import native
from pmsim.config import (
    DOMAINS,
    CacheConfig,
    CacheLevel,
    CoreConfig,
    CostConfig,
    DIMMConfig,
    MachineConfig,
    PMConfig,
    PrefetchConfig,
    Region,
)
from pmsim.errors import ConfigError
from pmsim.hw.engines import reference as ref
from pmsim.hw.engines.reference import BATCH_DTYPE, PyEngine
from pmsim.machine import Machine
from pmsim.presets import PRESETS, preset
from pmsim.stats import STATS_DTYPE

pytestmark = [pytest.mark.ccore,
              pytest.mark.skipif(not native.available(), reason="the C core is not built")]

EXAMPLES = int(os.environ.get("PMSIM_DIFF_EXAMPLES", "150"))

PM_BASE, PM_LINES = 0x4000, 128          # 8 KiB of PM: twice the LLC
DRAM_BASE, DRAM_LINES = 0x100000, 32     # 2 KiB of DRAM
UNMAPPED = (0x0, PM_BASE + PM_LINES * 64, 0x200000)

# pseudo-ops of the individual-call path (not batch op codes)
RESET_VOLATILE, RESET_TRACE, SET_CLOCK, LOAD_MANY, RUN_AHEAD = 100, 101, 102, 103, 104
STORE_WORDS, CLWB_MANY, LOAD_WORDS = 105, 106, 107
VALUE_OPS = (ref.OP_LOAD, ref.OP_CAS, ref.OP_XCHG)


TIMING = {"plain": {}, "ooo": {"ooo": True}, "stream": {"stream": True},
          "adjacent": {"adjacent": True}, "dimm": {"dimms": 1}, "dimms": {"dimms": 2},
          "dimms-reads-first": {"dimms": 2, "read_priority": True},
          "dimms-contended": {"dimms": 2, "contend": True},
          "all": {"ooo": True, "stream": True, "adjacent": True, "dimms": 2, "contend": True}}
"""Timing mechanisms a scenario switches on: the out-of-order core, the prefetchers, the DIMM
model (one DIMM, or two interleaved per KiB, with reads first or one queue, with the write and
read streams' contention reachable by two threads), all of them."""


def tiny(cores: int = 3, domain: str = "pdom1", barrier: str = "modelled",
         merge: bool = False, ooo: bool = False, stream: bool = False, adjacent: bool = False,
         dimms: int = 0, read_priority: bool = False, contend: bool = False,
         seed: int = 0) -> MachineConfig:
    """A machine small enough that every eviction path and the full WPQ are exercised (and,
    when switched on, a full store buffer, miss slots, stream table and on-DIMM buffer)."""
    return MachineConfig(
        core=CoreConfig("ooo" if ooo else "inorder", store_buffer=3, fill_buffers=2,
                        load_issue_ns=0.7),
        prefetch=PrefetchConfig(stream=stream, adjacent=adjacent, distance=3, degree=2, streams=2),
        seed=seed,
        cores=cores,
        cache=CacheConfig(CacheLevel(1, 2, 1.1), CacheLevel(2, 2, 4.7), CacheLevel(4, 4, 13.3)),
        pm=PMConfig(read_ns=97.3, write_ns=151.7, banks=3, wpq_entries=4, to_wpq_ns=7.9,
                    merge_writes=merge,
                    dimm=DIMMConfig(dimms, interleave_kib=1, buffer_lines=3, media_read_ns=61.3,
                                    media_read_occ_ns=17.9, media_write_ns=93.1,
                                    read_priority=read_priority,
                                    combine_writers=1 if contend else 5,
                                    contention=0.37 if contend else 0.2,
                                    read_contention=0.29 if contend else 0.009)),
        costs=CostConfig(store_ns=0.3, flush_ns=1.7, fence_ns=2.9, rmw_ns=11.1, pcommit_ns=3.3,
                         lock_ns=20.0, snoop_ns=6.1),
        regions=(Region("dram", DRAM_BASE, DRAM_LINES * 64, "dram"),
                 Region("pm", PM_BASE, PM_LINES * 64, "pm")),
        domain=domain,  # type: ignore[arg-type]
        barrier=barrier,  # type: ignore[arg-type]
        barrier_ns=47.9,
    )


def smt(draw: Any, cfg: MachineConfig) -> MachineConfig:
    """``cfg`` with its threads a core each, or two to some cores (Hyper-Threading)."""
    phys = draw(st.sampled_from([0, *range((cfg.cores + 1) // 2, cfg.cores)]))
    return cfg.replace(**{"core.physical_cores": phys, "core.smt_speed": 0.61})


def c_engine(cfg: MachineConfig) -> Any:
    from pmsim.hw.engines.native_engine import CEngine

    return CEngine(cfg)


# -- strategies --------------------------------------------------------------------------------
@st.composite
def addresses(draw: Any, aligned: bool = True) -> int:
    base, lines = (DRAM_BASE, DRAM_LINES) if draw(st.integers(0, 7)) == 0 else (PM_BASE, PM_LINES)
    line = draw(st.one_of(st.integers(0, 5), st.integers(0, lines - 1)))
    off = draw(st.integers(0, 7)) * 8 if aligned else draw(st.integers(0, 63))
    return base + line * 64 + off


@st.composite
def bad_addresses(draw: Any) -> int:
    if draw(st.booleans()):
        return draw(addresses()) + draw(st.integers(1, 7))
    return draw(st.sampled_from(UNMAPPED)) + 8 * draw(st.integers(0, 3))


values = st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1))
work_ns = st.one_of(st.floats(0, 500, allow_nan=False), st.sampled_from([0.1, 1e-9, 3.7]))
KINDS = ([ref.OP_LOAD] * 6 + [ref.OP_STORE] * 6 + [ref.OP_NTSTORE, ref.OP_CAS, ref.OP_XCHG]
         + [ref.OP_CLFLUSH, ref.OP_CLFLUSHOPT, ref.OP_CLWB] * 2
         + [ref.OP_SFENCE, ref.OP_MFENCE, ref.OP_PCOMMIT, ref.OP_WORK, ref.OP_MARK, ref.OP_PB] * 2)


@st.composite
def ops(draw: Any, cores: int, errors: bool = False, pseudo: bool = False) -> tuple:
    """One operation ``(code, tid, addr, value, arg)``; arg is CAS's new value or work's ns."""
    tid = draw(st.integers(0, cores - 1))
    if draw(st.integers(0, 12)) == 0:  # a 256 B media line read whole: misses, then hits
        first = PM_BASE + 256 * draw(st.one_of(st.integers(0, 3), st.integers(0, PM_LINES // 4 - 1)))
        return (LOAD_MANY, tid, tuple(first + 64 * i for i in range(4)), 0, 0)
    if draw(st.integers(0, 12)) == 0:
        group = draw(st.lists(addresses(), min_size=0, max_size=6))
        if errors and group and draw(st.integers(0, 4)) == 0:
            group[draw(st.integers(0, len(group) - 1))] = draw(bad_addresses())
        return (draw(st.sampled_from([LOAD_MANY, RUN_AHEAD])), tid, tuple(group), 0, 0)
    if draw(st.integers(0, 12)) == 0:  # the wide instructions: one call for many
        if draw(st.booleans()):
            addr = draw(addresses())
            if errors and draw(st.integers(0, 4)) == 0:
                addr = draw(bad_addresses())
            return (LOAD_WORDS, tid, addr, draw(st.integers(0, 12)), 0)
        if draw(st.booleans()):
            addr = draw(addresses())
            words = draw(st.lists(values, max_size=10))
            if errors and words and draw(st.integers(0, 4)) == 0:
                addr = draw(bad_addresses())
            return (STORE_WORDS, tid, addr, tuple(words), 0)
        lines = draw(st.lists(addresses(aligned=False), max_size=6))
        if errors and lines and draw(st.integers(0, 4)) == 0:
            lines[draw(st.integers(0, len(lines) - 1))] = draw(st.sampled_from(UNMAPPED))
        return (CLWB_MANY, tid, tuple(lines), 0, 0)
    if pseudo and draw(st.integers(0, 40)) == 0:
        kind = draw(st.sampled_from([RESET_VOLATILE, RESET_TRACE, SET_CLOCK]))
        return (kind, tid, 0, 0, draw(work_ns))
    kind = draw(st.sampled_from(KINDS))
    if kind in (ref.OP_CLFLUSH, ref.OP_CLFLUSHOPT, ref.OP_CLWB):
        addr = draw(addresses(aligned=False))
    else:
        addr = draw(addresses())
    if errors and kind in (*VALUE_OPS, ref.OP_STORE, ref.OP_NTSTORE) and draw(st.integers(0, 9)) == 0:
        addr = draw(bad_addresses())
    if errors and kind in (ref.OP_CLWB, ref.OP_CLFLUSH) and draw(st.integers(0, 9)) == 0:
        addr = draw(st.sampled_from(UNMAPPED)) + draw(st.integers(0, 63))
    arg: Any = draw(values)
    if kind == ref.OP_WORK:
        arg = draw(work_ns)
    value = draw(st.integers(1, 40)) if kind == ref.OP_MARK else draw(values)
    return (kind, tid, addr, value, arg)


@st.composite
def scenarios(draw: Any, max_ops: int = 60, errors: bool = False, pseudo: bool = False) -> tuple:
    cores = draw(st.integers(1, 3))
    timing = TIMING[draw(st.sampled_from(sorted(TIMING)))]
    cfg = tiny(cores, draw(st.sampled_from(DOMAINS)), draw(st.sampled_from(["modelled", "fixed"])),
               draw(st.booleans()), seed=draw(st.integers(0, 2**64 - 1)), **timing)
    cfg = smt(draw, cfg)
    pokes = draw(st.lists(st.tuples(addresses(), values), max_size=4))
    seq = draw(st.lists(ops(cores, errors, pseudo), max_size=max_ops))
    return cfg, pokes, seq


# -- running -----------------------------------------------------------------------------------
def call(e: Any, o: tuple) -> Any:
    """Issue one operation as an individual call; return its result or the error's text."""
    kind, tid, addr, value, arg = o
    try:
        if kind == RESET_VOLATILE:
            return e.reset_volatile()
        if kind == RESET_TRACE:
            return e.reset_trace()
        if kind == SET_CLOCK:
            return e.set_clock(tid, arg)
        if kind == LOAD_MANY:
            return [int(v) for v in e.load_many(tid, list(addr))]
        if kind == RUN_AHEAD:
            return e.run_ahead(tid, list(addr))
        if kind == STORE_WORDS:
            return e.store_words(tid, addr, list(value))
        if kind == CLWB_MANY:
            return e.clwb_many(tid, list(addr))
        if kind == LOAD_WORDS:
            return [int(v) for v in e.load_words(tid, addr, value)]
        if kind == ref.OP_CAS:
            return e.cas(tid, addr, value, arg)
        if kind == ref.OP_XCHG:
            return e.xchg(tid, addr, value)
        if kind == ref.OP_WORK:
            return e.work(tid, arg)
        if kind == ref.OP_MARK:
            return e.mark(tid, value & 0xFF, value)
        name = {ref.OP_LOAD: "load", ref.OP_STORE: "store", ref.OP_NTSTORE: "ntstore",
                ref.OP_CLFLUSH: "clflush", ref.OP_CLFLUSHOPT: "clflushopt", ref.OP_CLWB: "clwb",
                ref.OP_SFENCE: "sfence", ref.OP_MFENCE: "mfence", ref.OP_PCOMMIT: "pcommit",
                ref.OP_PB: "persist_barrier"}[kind]
        if kind in (ref.OP_STORE, ref.OP_NTSTORE):
            return getattr(e, name)(tid, addr, value)
        if kind in (ref.OP_SFENCE, ref.OP_MFENCE, ref.OP_PCOMMIT, ref.OP_PB):
            return getattr(e, name)(tid)
        return getattr(e, name)(tid, addr)
    except ConfigError as err:
        return ("error", str(err))


def to_batch(seq: list[tuple]) -> np.ndarray:
    b = np.zeros(len(seq), dtype=BATCH_DTYPE)
    for i, (kind, tid, addr, value, arg) in enumerate(seq):
        if kind == ref.OP_WORK:
            arg = int(np.array(arg, np.float64).view(np.uint64))
        aux = value & 0xFF if kind == ref.OP_MARK else 0
        b[i] = (kind, 0, tid, aux, addr, value, arg)
    return b


def run_batches(e: Any, seq: list[tuple]) -> list[Any]:
    """Run ``seq`` through ``run_batch``: pseudo-ops and failing ops split it into batches.

    The values of a batch that failed are lost ("lost"); its error is recorded in place.
    """
    results: list[Any] = []
    i = 0
    while i < len(seq):
        if seq[i][0] >= RESET_VOLATILE:
            results.append(call(e, seq[i]))
            i += 1
            continue
        j = i
        while j < len(seq) and seq[j][0] < RESET_VOLATILE:
            j += 1
        try:
            out = e.run_batch(to_batch(seq[i:j]))
        except ConfigError as err:
            note = err.__notes__[0]
            k = int(note.split("batch op ")[1].split()[0])
            results += ["lost"] * k + [("error", str(err))]
            i += k + 1
            continue
        results += [int(v) if o[0] in VALUE_OPS else None for o, v in zip(seq[i:j], out.tolist(),
                                                                          strict=True)]
        i = j
    return results


def snapshot(e: Any) -> dict[str, Any]:
    return {"stats": e.get_stats(), "trace": e.trace(), "trace_len": e.trace_len(),
            "mem": [a.copy() for a in e.mem.arrays],
            "clocks": [e.get_clock(t) for t in range(e.cfg.cores)]}


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Bitwise equality of two snapshots, naming the first difference."""
    for name in STATS_DTYPE.names:
        x, y = a["stats"][name], b["stats"][name]
        assert x.tobytes() == y.tobytes(), f"stat {name}: {x.tolist()} != {y.tolist()}"
    ta, tb = a["trace"], b["trace"]
    assert len(ta) == len(tb) == a["trace_len"] == b["trace_len"], (len(ta), len(tb))
    if ta.tobytes() != tb.tobytes():
        i = next(k for k in range(len(ta)) if ta[k].tobytes() != tb[k].tobytes())
        raise AssertionError(f"trace record {i}: {ta[i]} != {tb[i]}")
    for x, y in zip(a["mem"], b["mem"], strict=True):
        assert np.array_equal(x, y), "memory differs"
    assert np.array(a["clocks"]).tobytes() == np.array(b["clocks"]).tobytes(), (a["clocks"], b["clocks"])


def engines_agree(cfg: MachineConfig, seq: list[tuple]) -> None:
    """Both engines give the same results call by call, and the C engine the same in a batch."""
    py, c = PyEngine(cfg), c_engine(cfg)
    assert [call(c, o) for o in seq] == [call(py, o) for o in seq]
    assert_same(snapshot(c), snapshot(py))
    cb = c_engine(cfg)
    cb.run_batch(to_batch(seq))
    assert_same(snapshot(cb), snapshot(py))


def prepare(cfg: MachineConfig, pokes: list[tuple[int, int]]) -> tuple[Any, Any]:
    engines = PyEngine(cfg), c_engine(cfg)
    for e in engines:
        for addr, value in pokes:
            r, w = e.mem.locate(addr)
            e.mem.arrays[r][w] = value
    return engines


def check_scenario(cfg: MachineConfig, pokes: list, seq: list[tuple]) -> None:
    py, c = prepare(cfg, pokes)
    expect = [call(py, o) for o in seq]
    got = [call(c, o) for o in seq]
    assert got == expect
    want = snapshot(py)
    assert_same(snapshot(c), want)

    cb = prepare(cfg, pokes)[1]
    batched = run_batches(cb, seq)
    assert len(batched) == len(expect)
    for g, x in zip(batched, expect, strict=True):
        if g != "lost":
            assert g == x
    assert_same(snapshot(cb), want)


# -- the differential properties ---------------------------------------------------------------
@settings(max_examples=EXAMPLES)
@given(scenarios())
def test_same_results_stats_trace_memory(scenario: tuple) -> None:
    check_scenario(*scenario)


@settings(max_examples=max(EXAMPLES // 3, 10))
@given(scenarios(errors=True, pseudo=True))
def test_same_errors_resets_and_clocks(scenario: tuple) -> None:
    check_scenario(*scenario)


@pytest.mark.slow
@settings(max_examples=3000)
@given(scenarios(max_ops=400, errors=True, pseudo=True))
def test_differential_long(scenario: tuple) -> None:
    check_scenario(*scenario)


def random_stream(rng: np.random.Generator, n: int, cores: int, pm: tuple[int, int],
                  dram: tuple[int, int], hot_lines: int) -> list[tuple]:
    """A mixed stream: mostly loads and stores over hot and cold lines, some of everything."""
    kinds = rng.choice(np.array(KINDS), size=n)
    out = []
    for k in kinds.tolist():
        base, lines = dram if rng.random() < 0.1 else pm
        hot = rng.random() < 0.6
        line = int(rng.integers(0, min(hot_lines, lines) if hot else lines))
        addr = base + line * 64 + 8 * int(rng.integers(0, 8))
        value = int(rng.integers(0, 4))
        arg: Any = int(rng.integers(0, 4))
        if k == ref.OP_WORK:
            arg = float(rng.random() * 50)
        out.append((int(k), int(rng.integers(0, cores)), addr, value + 1 if k == ref.OP_MARK else value,
                    arg))
    return out


def sweeps(lines: int) -> list[tuple]:
    """Sequential loads and stores over PM, ascending and descending, by two threads: streams
    for the streamer to follow (and cross a page boundary)."""
    up = [(ref.OP_LOAD, 0, PM_BASE + 64 * i, 0, 0) for i in range(lines)]
    down = [(ref.OP_STORE, 1, PM_BASE + 64 * i + 8, i, 0) for i in reversed(range(lines))]
    return [o for pair in zip(up, down, strict=True) for o in pair]


def grouped(seq: list[tuple], rng: np.random.Generator) -> np.ndarray:
    """``seq`` as a batch in which some runs of a thread's loads form independent groups
    (``aux`` bit 0)."""
    b = to_batch(seq)
    loads = b["op"] == ref.OP_LOAD
    b["aux"][loads & (rng.random(len(b)) < 0.5)] |= 1
    b["aux"][loads & (rng.random(len(b)) < 0.2)] |= 3  # run-ahead groups
    return b


@pytest.mark.parametrize("timing", sorted(TIMING))
def test_timing_mechanisms_long_stream(timing: str) -> None:
    """Each timing mechanism over thousands of ops, with independent load groups in batches:
    store-buffer and miss-slot rings wrapping, streams trained and replaced, the on-DIMM buffer
    evicting partly written lines."""
    for domain in DOMAINS:
        cfg = tiny(3, domain, "modelled", False, seed=11, **TIMING[timing])
        seq = random_stream(np.random.default_rng(5), 3000, 3, (PM_BASE, PM_LINES),
                            (DRAM_BASE, DRAM_LINES), 12)
        seq = sweeps(PM_LINES) + seq[:1500] + sweeps(PM_LINES) + seq[1500:]
        py, c = PyEngine(cfg), c_engine(cfg)
        assert [call(c, o) for o in seq] == [call(py, o) for o in seq]
        assert_same(snapshot(c), snapshot(py))
        b = grouped(seq, np.random.default_rng(9))
        py, c = PyEngine(cfg), c_engine(cfg)
        assert py.run_batch(b).tolist() == c.run_batch(b).tolist()
        assert_same(snapshot(c), snapshot(py))


def media_line_writers(rng: np.random.Generator, cores: int, rounds: int) -> list[tuple]:
    """Every thread writes whole 256 B media lines (four ntstores, or four stores and clwbs,
    then an sfence) at random places of PM, the threads interleaved line by line: many write
    streams at each DIMM, so lines complete while the contention rule has writers to count."""
    out = []
    for _ in range(rounds):
        for tid in rng.permutation(cores).tolist():
            first = PM_BASE + 256 * int(rng.integers(0, PM_LINES // 4))
            lines = [first + 64 * i for i in range(4)]
            if rng.random() < 0.5:
                out += [(ref.OP_NTSTORE, tid, a, tid, 0) for a in lines]
            else:
                out += [(ref.OP_STORE, tid, a, tid, 0) for a in lines]
                out += [(ref.OP_CLWB, tid, a, 0, 0) for a in lines]
            out.append((ref.OP_SFENCE, tid, 0, 0, 0))
    return out


@pytest.mark.parametrize("cores", [8, 64])
def test_write_streams_contention(cores: int) -> None:
    """The write streams' contention (DIMMConfig.combine_writers, contention) with up to 64
    writers on two DIMMs: both engines agree, the rule fires, and with contention 0 it does not
    change a thing."""
    base = tiny(cores, "pdom1", "modelled", False, ooo=True, dimms=2, seed=3)
    seq = media_line_writers(np.random.default_rng(cores), cores, 40)
    rmw = {}
    for q in (0.0, 0.37):
        cfg = base.replace(**{"pm.dimm.combine_writers": 2, "pm.dimm.contention": q,
                              "pm.dimm.buffer_lines": 16})
        py, c = PyEngine(cfg), c_engine(cfg)
        assert [call(c, o) for o in seq] == [call(py, o) for o in seq]
        assert_same(snapshot(c), snapshot(py))
        rmw[q] = int(py.get_stats()["xpb_rmw"].sum())
        b = to_batch(seq)
        cb = c_engine(cfg)
        cb.run_batch(b)
        assert_same(snapshot(cb), snapshot(py))
    assert rmw[0.37] > rmw[0.0]


def media_line_readers(rng: np.random.Generator, cores: int, rounds: int) -> list[tuple]:
    """Every thread reads the four cache lines of a random 256 B media line, the threads
    interleaved line by line: a line's later reads hit the buffer while the other threads'
    reads are in flight, so the read streams' contention has readers to count."""
    out = []
    for _ in range(rounds):
        firsts = {tid: PM_BASE + 256 * int(rng.integers(0, PM_LINES // 4))
                  for tid in range(cores)}
        for i in range(4):
            for tid in rng.permutation(cores).tolist():
                out.append((ref.OP_LOAD, tid, firsts[tid] + 64 * i, 0, 0))
    return out


@pytest.mark.parametrize("cores", [8, 64])
@pytest.mark.parametrize("read_priority", [False, True])
def test_read_streams_contention(cores: int, read_priority: bool) -> None:
    """The read streams' contention (DIMMConfig.read_contention) with up to 64 readers on two
    DIMMs: both engines agree, the rule fires (more media reads), and with a chance of 0 a run
    is the run of a machine where it cannot fire (more streams needed than there are
    threads)."""
    base = tiny(cores, "pdom1", "modelled", False, ooo=True, dimms=2, seed=5,
                read_priority=read_priority)
    seq = media_line_readers(np.random.default_rng(cores), cores, 30)
    media = {}
    for q in (0.0, 0.29):
        cfg = base.replace(**{"pm.dimm.combine_writers": 2, "pm.dimm.read_contention": q,
                              "pm.dimm.buffer_lines": 64, "cache.llc.size_kib": 1})
        py, c = PyEngine(cfg), c_engine(cfg)
        assert [call(c, o) for o in seq] == [call(py, o) for o in seq]
        assert_same(snapshot(c), snapshot(py))
        media[q] = int(py.get_stats()["media_read_bytes"].sum())
        cb = c_engine(cfg)
        cb.run_batch(to_batch(seq))
        assert_same(snapshot(cb), snapshot(py))
    assert media[0.29] > media[0.0]
    never = base.replace(**{"pm.dimm.combine_writers": 64, "pm.dimm.read_contention": 0.29,
                            "pm.dimm.buffer_lines": 64, "cache.llc.size_kib": 1})
    off = base.replace(**{"pm.dimm.combine_writers": 2, "pm.dimm.read_contention": 0.0,
                          "pm.dimm.buffer_lines": 64, "cache.llc.size_kib": 1})
    a, b = PyEngine(never), PyEngine(off)
    assert [call(a, o) for o in seq] == [call(b, o) for o in seq]
    assert_same(snapshot(a), snapshot(b))


@settings(max_examples=max(EXAMPLES // 3, 10))
@given(st.data())
def test_streams_contention_drawn(data: st.DataObject) -> None:
    """Many threads reading and writing whole media lines, in drawn blocks, on a drawn DIMM
    model (one or two DIMMs, reads first or one queue, streams combined 0-3, the write and
    read chances 0, 0.37 or 1): both engines agree call by call and in a batch."""
    cores = data.draw(st.integers(2, 8))
    cfg = tiny(cores, data.draw(st.sampled_from(DOMAINS)), "modelled", False,
               ooo=data.draw(st.booleans()), dimms=data.draw(st.integers(1, 2)),
               read_priority=data.draw(st.booleans()), seed=data.draw(st.integers(0, 2**32)))
    cfg = cfg.replace(**{"pm.dimm.combine_writers": data.draw(st.integers(0, 3)),
                         "pm.dimm.contention": data.draw(st.sampled_from([0.0, 0.37, 1.0])),
                         "pm.dimm.read_contention": data.draw(st.sampled_from([0.0, 0.37, 1.0])),
                         "pm.dimm.buffer_lines": data.draw(st.sampled_from([4, 16, 64])),
                         "cache.llc.size_kib": 1})
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    seq: list[tuple] = []
    for reads in data.draw(st.lists(st.booleans(), min_size=1, max_size=4)):
        rounds = data.draw(st.integers(1, 6))
        seq += (media_line_readers if reads else media_line_writers)(rng, cores, rounds)
    engines_agree(cfg, seq)


def writers_a_quantum_apart(rng: np.random.Generator, cores: int, quanta: int,
                            per: int) -> list[tuple]:
    """Threads streaming PM writes a quantum at a time, in a random order each quantum: a
    thread simulated later writes at earlier times than the writes already queued, so the WPQ
    takes them out of order, and enough of them to outrun the WPQ's look-back and the banks'
    rings (each thread cycles over its own lines; a random few rewrite a line, for merges)."""
    out: list[tuple] = []
    share = PM_LINES // cores
    nxt = [0] * cores
    for _ in range(quanta):
        for tid in rng.permutation(cores).tolist():
            for _ in range(per):
                k = nxt[tid] - 1 if nxt[tid] and rng.random() < 0.1 else nxt[tid]
                nxt[tid] = k + 1
                a = PM_BASE + 64 * (tid * share + k % share)
                if rng.random() < 0.5:
                    out.append((ref.OP_NTSTORE, tid, a, tid, 0))
                else:
                    out += [(ref.OP_STORE, tid, a, tid, 0), (ref.OP_CLWB, tid, a, 0, 0)]
                if rng.random() < 0.2:
                    out.append((ref.OP_SFENCE, tid, 0, 0, 0))
                if rng.random() < 0.3:
                    out.append((ref.OP_WORK, tid, 0, 0, float(rng.integers(0, 400))))
    return out


@pytest.mark.parametrize("dimms", [0, 2])
@pytest.mark.parametrize("merge", [False, True])
def test_writes_simulated_out_of_order(dimms: int, merge: bool) -> None:
    """The WPQ orders its slots by arrival and the banks fill their idle gaps, whatever order
    the writes were simulated in: both engines agree call by call and in a batch, past the
    look-back of every WPQ (reference.WPQ_LOOKBACK) and the ring of every bank."""
    cfg = tiny(4, "pdom1", "modelled", merge, dimms=dimms, seed=11)
    seq = writers_a_quantum_apart(np.random.default_rng(dimms + merge), 4, 1400, 12)
    writes = sum(o[0] in (ref.OP_NTSTORE, ref.OP_CLWB) for o in seq)
    assert writes > 1.5 * (cfg.pm.wpq_entries + ref.WPQ_LOOKBACK) * max(1, dimms)
    assert dimms or writes > 2 * ref.BANK_RING * cfg.pm.banks
    engines_agree(cfg, seq)


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("barrier", ["modelled", "fixed"])
def test_long_random_stream(domain: str, barrier: str, merge: bool) -> None:
    """Thousands of ops: LRU stamps, WPQ ring wrap-around (and merges) and deep eviction chains."""
    cfg = tiny(3, domain, barrier, merge)
    seq = random_stream(np.random.default_rng(7), 6000, 3, (PM_BASE, PM_LINES),
                        (DRAM_BASE, DRAM_LINES), 12)
    py, c = PyEngine(cfg), c_engine(cfg)
    assert [call(c, o) for o in seq] == [call(py, o) for o in seq]
    want = snapshot(py)
    assert_same(snapshot(c), want)
    cb = c_engine(cfg)
    cb.run_batch(to_batch(seq))
    assert_same(snapshot(cb), want)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets(name: str) -> None:
    """Every preset's geometry and costs, with a working set bigger than its L1."""
    cfg = preset(name)
    pm, dram = cfg.pm_region, cfg.dram_region
    assert dram is not None
    seq = random_stream(np.random.default_rng(3), 3000, cfg.cores, (pm.base, 4096),
                        (dram.base, 256), 600)
    py, c = PyEngine(cfg), c_engine(cfg)
    b = to_batch(seq)
    assert py.run_batch(b).tolist() == c.run_batch(b).tolist()
    assert_same(snapshot(c), snapshot(py))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_long_random_stream_slow(seed: int) -> None:
    cfg = tiny(3, DOMAINS[seed % 3], "fixed" if seed % 2 else "modelled", seed >= 2)
    seq = random_stream(np.random.default_rng(seed), 200_000, 3, (PM_BASE, PM_LINES),
                        (DRAM_BASE, DRAM_LINES), 40)
    py, c = PyEngine(cfg), c_engine(cfg)
    b = to_batch(seq)
    assert py.run_batch(b).tolist() == c.run_batch(b).tolist()
    assert_same(snapshot(c), snapshot(py))


# -- errors ------------------------------------------------------------------------------------
def test_bad_addresses_raise_the_reference_error_and_change_nothing() -> None:
    py, c = PyEngine(tiny()), c_engine(tiny())
    for e in (py, c):
        e.store(0, PM_BASE, 5)
        e.clwb(1, PM_BASE)
    before = snapshot(c)
    cases = [("load", (0, PM_BASE + 3)), ("store", (1, PM_BASE + 4, 1)), ("ntstore", (2, 0x0, 1)),
             ("cas", (0, 0x200000, 0, 1)), ("xchg", (0, -8, 1)), ("clwb", (0, 0x200010)),
             ("clflush", (0, -1)), ("clflushopt", (1, PM_BASE - 1)), ("load", (0, 1 << 70))]
    for name, args in cases:
        with pytest.raises(ConfigError) as want:
            getattr(py, name)(*args)
        with pytest.raises(ConfigError) as got:
            getattr(c, name)(*args)
        assert str(got.value) == str(want.value), name
        assert_same(snapshot(c), before)


@pytest.mark.parametrize("t", [-5e6, -1e-9, float("inf"), float("nan")])
def test_a_clock_before_0_or_not_finite_is_refused(t: float) -> None:
    """A clock is a time at or after 0: both engines raise the same error and change nothing
    (a negative clock reached the DIMM calendars' buckets with a negative index in C)."""
    cfg = tiny(dimms=2)
    py, c = PyEngine(cfg), c_engine(cfg)
    before = snapshot(c)
    with pytest.raises(ConfigError) as want:
        py.set_clock(0, t)
    with pytest.raises(ConfigError) as got:
        c.set_clock(0, t)
    assert str(got.value) == str(want.value) and "at least 0" in str(got.value)
    assert_same(snapshot(c), before)


@pytest.mark.parametrize("tid", [3, 64, 1000, -1])
def test_bad_thread_raises_config_error_and_changes_nothing(tid: int) -> None:
    c = c_engine(tiny())
    c.store(0, PM_BASE, 5)
    before = snapshot(c)
    calls = [("load", (PM_BASE,)), ("store", (PM_BASE, 1)), ("ntstore", (PM_BASE, 1)),
             ("clflush", (PM_BASE,)), ("clflushopt", (PM_BASE,)), ("clwb", (PM_BASE,)),
             ("sfence", ()), ("mfence", ()), ("pcommit", ()), ("cas", (PM_BASE, 5, 6)),
             ("xchg", (PM_BASE, 1)), ("work", (3.0,)), ("mark", (1, 2)), ("persist_barrier", ()),
             ("get_clock", ()), ("set_clock", (5.0,))]
    for name, args in calls:
        with pytest.raises(ConfigError, match=f"thread {tid} does not exist: the machine has 3 cores"):
            getattr(c, name)(tid, *args)
        assert_same(snapshot(c), before)
    if tid >= 0:
        b = to_batch([(ref.OP_STORE, 0, PM_BASE + 8, 9, 0), (ref.OP_SFENCE, tid, 0, 0, 0)])
        with pytest.raises(ConfigError, match="does not exist") as err:
            c.run_batch(b)
        assert "batch op 1" in err.value.__notes__[0]
        assert c.mem.arrays[c.mem.pm_index][1] == 9  # the op before the bad one ran


def test_batch_unknown_op_raises_after_the_ops_before_it() -> None:
    seq = [(ref.OP_STORE, 0, PM_BASE, 7, 0), (ref.OP_CLWB, 0, PM_BASE, 0, 0),
           (ref.OP_LOAD, 1, PM_BASE, 0, 0)]
    b = to_batch(seq + [(ref.OP_STORE, 0, PM_BASE + 64, 1, 0)] + seq)
    b[3]["op"] = 99
    py, c = PyEngine(tiny()), c_engine(tiny())
    for e in (py, c):
        with pytest.raises(ConfigError, match="^batch op 3: unknown op code 99$"):
            e.run_batch(b)
    assert_same(snapshot(c), snapshot(py))
    assert c.trace_len() == 3


def test_batch_bad_address_same_message_with_index_note() -> None:
    b = to_batch([(ref.OP_STORE, 0, PM_BASE, 7, 0), (ref.OP_LOAD, 1, PM_BASE + 2, 0, 0)])
    py, c = PyEngine(tiny()), c_engine(tiny())
    with pytest.raises(ConfigError) as want:
        py.run_batch(b)
    with pytest.raises(ConfigError) as got:
        c.run_batch(b)
    assert str(got.value) == str(want.value)
    assert got.value.__notes__ == ["raised by batch op 1 (op code 0)"]
    assert_same(snapshot(c), snapshot(py))


def test_run_batch_rejects_other_dtypes() -> None:
    c = c_engine(tiny())
    with pytest.raises(ConfigError, match="BATCH_DTYPE"):
        c.run_batch(np.zeros(3, dtype=np.uint64))
    assert c.run_batch(np.zeros(0, dtype=BATCH_DTYPE)).shape == (0,)


def test_out_of_range_values_raise_before_any_change() -> None:
    py, c = PyEngine(tiny()), c_engine(tiny())
    before = snapshot(c)
    for bad in (-1, 1 << 64, 1.5, "5"):
        with pytest.raises(ConfigError) as want:
            py.store(0, PM_BASE, bad)
        with pytest.raises(ConfigError) as got:
            c.store(0, PM_BASE, bad)
        assert str(got.value) == str(want.value)
    assert_same(snapshot(c), before)


# -- the engine's surface ----------------------------------------------------------------------
def test_same_methods_and_attributes() -> None:
    c = c_engine(tiny())
    public = {n for n in dir(PyEngine) if not n.startswith("_")}
    missing = public - set(dir(c))
    assert not missing
    assert c.backend == "c" and c.cfg == tiny() and isinstance(c.mem, ref.Memory)


def test_machine_memory_views_work_with_the_c_engine() -> None:
    """Machine.peek/poke/pm_image/load_pm_image act on the arrays the C code uses."""
    m = Machine(tiny(), backend="c")
    cpu = m.cpu(1)
    m.poke(PM_BASE + 16, 77)
    assert cpu.load(PM_BASE + 16) == 77
    cpu.store(PM_BASE + 24, 99)
    assert m.peek(PM_BASE + 24) == 99
    img = m.pm_image()
    img[:8] = 0xAB
    m.load_pm_image(img)
    assert cpu.load(PM_BASE) == 0xABABABABABABABAB
    m.poke(DRAM_BASE, 5)
    m.engine.reset_volatile()
    assert m.peek(DRAM_BASE) == 0 and m.peek(PM_BASE + 24) == 99
    assert m.engine.trace_len() == 0 and m.stats()["time_ns"].tolist() == [0.0, 0.0, 0.0]


def test_struct_layouts_match_dtypes() -> None:
    from pmsim.hw.engines.native_engine import check_layouts

    check_layouts(native.ffi)


def test_write_back_times_round_half_to_even() -> None:
    """WB events carry round(done * 1000) with Python's rounding; exact halves must agree."""
    sixteenths = {"pm.write_ns": 0.0625, "pm.to_wpq_ns": 0.0, "pm.banks": 1, "pm.read_ns": 0.25,
                  "costs.flush_ns": 0.0625, "costs.store_ns": 0.0625, "costs.snoop_ns": 0.125,
                  "cache.l1.latency_ns": 0.5, "cache.l2.latency_ns": 1.0, "cache.llc.latency_ns": 2.0}
    cfg = tiny(2).replace(**sixteenths)
    seq = [(ref.OP_STORE, t % 2, PM_BASE + 64 * (t % 5), t, 0) for t in range(40)]
    seq = [x for o in seq for x in (o, (ref.OP_CLWB, o[1], o[2], 0, 0))]
    py, c = PyEngine(cfg), c_engine(cfg)
    assert py.run_batch(to_batch(seq)).tolist() == c.run_batch(to_batch(seq)).tolist()
    wb = py.trace()
    wb = wb[wb["kind"] == 10]["value"]
    assert any(v % 1000 == 62 for v in wb.tolist())  # x.0625 ns = x062.5 ps, rounded to even
    assert_same(snapshot(c), snapshot(py))
