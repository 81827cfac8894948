"""Differential tests of hardware transactions: the C engine must make the reference's abort
decisions, with the same statistics, traces, memory and clocks, op for op.

Hypothesis writes random programs of transactions (xbegin, loads, stores, movnt, CAS, flushes,
fences, xstatus, rdtsc, sometimes xabort, xend) and plain code for two to four threads, and
interleaves them op by op at random, on a tiny machine
(an L1 of a few sets, small read/write-set bounds) so that conflicts, false sharing and every
capacity rule occur. Each program runs as individual calls and as batches, timed and
functional; the functional engines must also agree with the timed ones on everything
functional (values, memory, counters, the trace without WB events).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsim.cache import native
from pmsim.config import DOMAINS, MachineConfig
from pmsim.errors import ConfigError
from pmsim.hw.engines import reference as ref
from pmsim.hw.engines.reference import BATCH_DTYPE, FUNCTIONAL_COUNTERS, FunctionalEngine, PyEngine
from pmsim.trace import Ev

from .engines.test_differential import (
    DRAM_BASE,
    EXAMPLES,
    PM_BASE,
    assert_same,
    call,
    smt,
    snapshot,
    tiny,
)

pytestmark = [pytest.mark.ccore,
              pytest.mark.skipif(not native.available(), reason="the C core is not built")]

HTM_OPS = (ref.OP_XBEGIN, ref.OP_XEND, ref.OP_XABORT, ref.OP_XSTATUS, ref.OP_RDTSC)
RESULT_OPS = (ref.OP_LOAD, ref.OP_CAS, ref.OP_XCHG, ref.OP_XEND, ref.OP_XSTATUS, ref.OP_RDTSC)
BODY = ([ref.OP_LOAD] * 8 + [ref.OP_STORE] * 8
        + [ref.OP_NTSTORE, ref.OP_CAS, ref.OP_XCHG, ref.OP_CLWB, ref.OP_CLFLUSHOPT, ref.OP_CLFLUSH,
           ref.OP_SFENCE, ref.OP_MFENCE, ref.OP_WORK, ref.OP_PB, ref.OP_XSTATUS, ref.OP_RDTSC])
"""What threads do inside and between transactions (rarely also a misplaced xbegin/xend)."""
HOT = 6  # lines most accesses go to (conflicts and false sharing)


def machine(draw: Any, cores: int) -> MachineConfig:
    cfg = smt(draw, tiny(cores, draw(st.sampled_from(DOMAINS)),
                         draw(st.sampled_from(["modelled", "fixed"]))))
    return cfg.replace(**{
        "htm.read_set_lines": draw(st.sampled_from([3, 8, 65536])),
        "htm.write_set_lines": draw(st.sampled_from([2, 5, 512])),
        "htm.abort_on_any_flush": draw(st.booleans()),
        "htm.xbegin_ns": draw(st.sampled_from([0.0, 13.7])),
        "htm.abort_ns": draw(st.sampled_from([0.0, 41.3])),
        "htm.tsc_ghz": draw(st.sampled_from([1.0, 2.9])),
        "htm.tsc_skew_ns": tuple(draw(st.lists(st.floats(0, 500, allow_nan=False),
                                               max_size=cores))),
    })


@st.composite
def address(draw: Any, flush: bool = False) -> int:
    if draw(st.integers(0, 9)) == 0:
        base, line = DRAM_BASE, draw(st.integers(0, 3))
    else:
        base = PM_BASE
        # hot lines, lines of one L1 set (tiny's L1 has 8 sets of 2 ways), and the rest
        line = draw(st.one_of(st.integers(0, HOT - 1), st.sampled_from([8, 16, 24, 32]),
                              st.integers(0, 127)))
    off = draw(st.integers(0, 63)) if flush else 8 * draw(st.integers(0, 7))
    return base + 64 * line + off


@st.composite
def op(draw: Any, tid: int) -> tuple:
    """``(code, tid, addr, value, arg)`` as in test_differential; xabort's code is ``value``."""
    kind = draw(st.sampled_from(BODY))
    if draw(st.integers(0, 40)) == 0:
        kind = draw(st.sampled_from([ref.OP_XBEGIN, ref.OP_XEND]))  # nested / outside: errors
    addr = draw(address(kind in (ref.OP_CLWB, ref.OP_CLFLUSHOPT, ref.OP_CLFLUSH)))
    value: int = draw(st.integers(0, 3) | st.integers(0, 2**64 - 1))
    arg: Any = draw(st.integers(0, 3))
    if kind == ref.OP_WORK:
        arg = draw(st.floats(0, 200, allow_nan=False))
    return (kind, tid, addr, value, arg)


@st.composite
def thread_program(draw: Any, tid: int, max_blocks: int) -> list[tuple]:
    """Transactions (xbegin, accesses, sometimes xabort, xend) and plain code between them."""
    out: list[tuple] = []
    for _ in range(draw(st.integers(1, max_blocks))):
        if draw(st.integers(0, 3)):
            out.append((ref.OP_XBEGIN, tid, 0, 0, 0))
            out += draw(st.lists(op(tid), max_size=8))
            if draw(st.integers(0, 7)) == 0:
                code = draw(st.integers(0, 255) | st.sampled_from([0xFF, 256]))
                out.append((ref.OP_XABORT, tid, 0, code, 0))
            out.append((ref.OP_XEND, tid, 0, 0, 0))
        else:
            out += draw(st.lists(op(tid), max_size=4))
    return out


@st.composite
def programs(draw: Any, max_blocks: int = 4) -> tuple[MachineConfig, list[tuple]]:
    """A machine and 2-4 threads' programs interleaved op by op at random."""
    cores = draw(st.integers(2, 4))
    per = [draw(thread_program(t, max_blocks)) for t in range(cores)]
    total = sum(map(len, per))
    picks = draw(st.lists(st.integers(0, cores - 1), min_size=total, max_size=total))
    seq: list[tuple] = []
    pos = [0] * cores
    for p in picks:
        while pos[p] == len(per[p]):
            p = (p + 1) % cores
        seq.append(per[p][pos[p]])
        pos[p] += 1
    return machine(draw, cores), seq


def run(e: Any, o: tuple) -> Any:
    """One op as an individual call: its result, or the error's text."""
    kind, tid, _, value, _ = o
    if kind not in HTM_OPS:
        return call(e, o)
    try:
        if kind == ref.OP_XBEGIN:
            return e.xbegin(tid)
        if kind == ref.OP_XEND:
            return e.xend(tid)
        if kind == ref.OP_XABORT:
            return e.xabort(tid, value)
        if kind == ref.OP_XSTATUS:
            return e.xstatus(tid)
        return e.rdtsc(tid)
    except ConfigError as err:
        return ("error", str(err))


def batch(seq: list[tuple]) -> np.ndarray:
    b = np.zeros(len(seq), dtype=BATCH_DTYPE)
    for i, (kind, tid, addr, value, arg) in enumerate(seq):
        if kind == ref.OP_WORK:
            arg = int(np.array(arg, np.float64).view(np.uint64))
        aux = value if kind == ref.OP_XABORT else 0
        b[i] = (kind, 0, tid, aux, addr, value, arg)
    return b


def run_batches(e: Any, seq: list[tuple]) -> list[Any]:
    """``seq`` through ``run_batch``, restarting after each failing op (recorded in place;
    the results of the ops before it in that batch are lost)."""
    out: list[Any] = []
    i = 0
    while i < len(seq):
        try:
            res = e.run_batch(batch(seq[i:]))
        except ConfigError as err:
            k = int(err.__notes__[0].split("batch op ")[1].split()[0]) if err.__notes__ else 0
            out += ["lost"] * k + [("error", str(err))]
            i += k + 1
            continue
        out += [int(v) if o[0] in RESULT_OPS else None for o, v in zip(seq[i:], res.tolist(),
                                                                       strict=True)]
        break
    return out


def c_engine(cfg: MachineConfig, timed: bool = True) -> Any:
    from pmsim.hw.engines.native_engine import CEngine

    return CEngine(cfg, timed)


def functional_view(trace: np.ndarray) -> np.ndarray:
    out = trace[trace["kind"] != Ev.WB].copy()
    out["time"] = 0.0
    return out


def check(cfg: MachineConfig, seq: list[tuple]) -> None:
    py, c = PyEngine(cfg), c_engine(cfg)
    want = [run(py, o) for o in seq]
    assert [run(c, o) for o in seq] == want
    ref_state = snapshot(py)
    assert_same(snapshot(c), ref_state)
    cb = c_engine(cfg)
    for g, x in zip(run_batches(cb, seq), want, strict=True):
        assert g == "lost" or g == x
    assert_same(snapshot(cb), ref_state)

    fpy, fc = FunctionalEngine(cfg), c_engine(cfg, timed=False)
    fwant = [run(fpy, o) for o in seq]
    assert [run(fc, o) for o in seq] == fwant
    assert_same(snapshot(fc), snapshot(fpy))
    # untimed: the same values (rdtsc reads other clocks), memory, counters and stores
    for (kind, *_), t, f in zip(seq, want, fwant, strict=True):
        if kind != ref.OP_RDTSC:
            assert t == f
    for x, y in zip(py.mem.arrays, fpy.mem.arrays, strict=True):
        assert np.array_equal(x, y)
    ts, fs = py.get_stats(), fpy.get_stats()
    for name in FUNCTIONAL_COUNTERS:
        assert ts[name].tolist() == fs[name].tolist(), name
    assert np.array_equal(functional_view(py.trace()), functional_view(fpy.trace()))


@settings(max_examples=max(EXAMPLES // 2, 10))
@given(programs())
def test_same_abort_decisions_stats_traces(program: tuple) -> None:
    check(*program)


@pytest.mark.slow
@settings(max_examples=2000)
@given(programs(max_blocks=12))
def test_htm_differential_long(program: tuple) -> None:
    check(*program)


def transactional_stream(rng: np.random.Generator, n: int, cores: int) -> list[tuple]:
    """Threads that mostly run short transactions over a few shared lines."""
    out: list[tuple] = []
    inside = [False] * cores
    for _ in range(n):
        tid = int(rng.integers(0, cores))
        if not inside[tid] and rng.random() < 0.5:
            out.append((ref.OP_XBEGIN, tid, 0, 0, 0))
            inside[tid] = True
            continue
        if inside[tid] and rng.random() < 0.15:
            out.append((ref.OP_XEND, tid, 0, 0, 0))
            inside[tid] = False
            continue
        r = rng.random()
        kind = ref.OP_LOAD if r < 0.5 else ref.OP_STORE if r < 0.9 else ref.OP_CLWB \
            if r < 0.95 else ref.OP_CAS
        line = int(rng.integers(0, 10)) if rng.random() < 0.8 else int(rng.integers(0, 128))
        out.append((kind, tid, PM_BASE + 64 * line + 8 * int(rng.integers(0, 8)),
                    int(rng.integers(0, 4)), int(rng.integers(0, 4))))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_long_transactional_stream(seed: int) -> None:
    """Thousands of ops: sets grow and are reused, many conflicts, every counter moves."""
    cfg = tiny(4, DOMAINS[seed]).replace(**{"htm.write_set_lines": 6})
    seq = transactional_stream(np.random.default_rng(seed), 5000, 4)
    py, c = PyEngine(cfg), c_engine(cfg)
    assert [run(c, o) for o in seq] == [run(py, o) for o in seq]
    want = snapshot(py)
    assert_same(snapshot(c), want)
    cb = c_engine(cfg)
    cb.run_batch(batch(seq))
    assert_same(snapshot(cb), want)
    s = want["stats"]
    for name in ("htm_commits", "htm_aborts_conflict", "htm_aborts_capacity", "htm_aborts_flush",
                 "htm_false_sharing"):
        assert s[name].sum() > 0, name
