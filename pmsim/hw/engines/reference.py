"""The pure-Python machine engines: timed (caches, coherence, WPQ, media) and functional.

``PyEngine`` is the executable specification of the timed machine. The C core (``pmsim/cache/csrc``)
implements exactly the same rules, operation for operation and in the same floating-point
order, so that both backends produce identical statistics and traces (tests/hw/engines/test_differential.py).

Rules, in brief (times in ns, each thread has its own clock):

* Caches: per-core L1 and L2 and a shared LLC; write-back, write-allocate, LRU; not inclusive.
  A miss fills the line into every level above the one that hit (LLC, then L2, then L1), each
  fill possibly evicting that level's LRU line; a dirty victim is written to the next level
  (L1 -> L2 -> LLC -> memory). A write invalidates the line in other cores' private caches; a
  read that misses the private caches downgrades dirty copies in other cores (to the LLC).
* Latency of an access: the hit level's latency, or LLC latency + media read latency; plus
  ``snoop_ns`` when another core's copy was involved. Loads cost their latency. Stores cost
  ``store_ns`` on an L1 hit and the access latency on a miss (read-for-ownership).
* A dirty PM line written back (evicted from the LLC, flushed, or displaced by movnt) arrives
  at the WPQ ``to_wpq_ns`` later. The WPQ has ``wpq_entries`` FIFO slots taken in order of
  arrival (not of simulation: threads run up to a quantum apart): a write waits for the one
  that arrived ``wpq_entries`` writes before it to drain. Draining takes ``write_ns`` on bank
  ``line % banks``, in the bank's first idle gap. An eviction that finds the WPQ full stalls
  its thread.
* clwb/clflushopt write a dirty line back asynchronously: the next fence of the thread waits
  until the WPQ accepted it. clflush waits for it at once. movnt bypasses the caches like a
  flushed store. pcommit (PDOM-0 only) makes the next fence wait until the WPQ has drained.
* ``persist_barrier``: PDOM-0 ``sfence; pcommit; sfence``, PDOM-1 ``sfence``, PDOM-2 nothing.
  In 'fixed' barrier mode its fences cost nothing and the barrier costs ``barrier_ns``.

Hardware transactions (``xbegin``, ``xend``, ``xabort``, ``xstatus``, ``rdtsc``) follow
:mod:`pmsim.hw.htm` in both engines: the same abort decisions, values and trace, timed or not.

``FunctionalEngine`` is the untimed specification (the C core's functional mode): memory
contents, loaded values and CAS results are the timed engine's (caches hold no data here, only
timing state), and so are the instruction counters and the trace without its WB events; no
cache, WPQ or time statistics are kept and clocks move only by ``set_clock``. Crash recovery
and its oracle need nothing more.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...cache.lru import CacheArray
from ...config import LINE, XPLINE, MachineConfig
from ...errors import ConfigError
from ...stats import STATS_DTYPE
from ...trace import TRACE_DTYPE, Ev
from .. import htm as H

# op codes of the batch interface (shared with the C core)
OP_LOAD, OP_STORE, OP_NTSTORE, OP_CLFLUSH, OP_CLFLUSHOPT, OP_CLWB = 0, 1, 2, 3, 4, 5
OP_SFENCE, OP_MFENCE, OP_PCOMMIT, OP_CAS, OP_XCHG, OP_WORK, OP_MARK, OP_PB = (
    6, 7, 8, 9, 10, 11, 12, 13)
OP_XBEGIN, OP_XEND, OP_XABORT, OP_XSTATUS, OP_RDTSC = 14, 15, 16, 17, 18
"""HTM op codes: xend, xstatus and rdtsc return their result; xabort's code is ``aux``."""

BATCH_DTYPE = np.dtype([("op", "u1"), ("pad", "u1"), ("tid", "u2"), ("aux", "u4"),
                        ("addr", "u8"), ("value", "u8"), ("arg", "u8")])
"""One operation of a batch: ``arg`` is CAS's new value, work's ns (float bits) or unused;
``aux`` is a marker's or xabort's code; a run of loads of one thread with ``aux`` bit 0 set is
one independent group (``load_many``; with bit 1 set too, ``run_ahead``: no values)."""

_WB_EVICT, _WB_FLUSH, _WB_NT = 0, 1, 2


CAL_BUCKETS = 4096
"""Buckets of each DIMM calendar (reference.PyEngine._book; the C core's PM_CAL_BUCKETS): at
2 x 116 ns per bucket on the Optane presets, about a millisecond ahead, far more than any
queue of the model holds."""
ALLOC_RING = 256
"""Allocations of each on-DIMM buffer remembered (their times), to find those that fell while
a line was half written (PyEngine._xpb_survives; the C core's PM_ALLOC_RING)."""
WRITE_RING = 256
"""Writes remembered per thread (their starts and DIMMs), and reads (their arrivals, ends and
DIMMs), to weigh the threads writing to or reading from a DIMM (PyEngine._contended; the C
core's PM_WRITE_RING): at one DIMM's full rate, about the buffer's turnover time on the Optane
presets; a thread accessing faster (over several DIMMs) has its share taken over its last
WRITE_RING accesses of that kind in that time."""


WPQ_LOOKBACK = 16384
"""Writes each WPQ remembers beyond its own ``wpq_entries``, sorted by arrival (the C core's
PM_WPQ_LOOKBACK): a write simulated late, behind the threads' writes that arrive after it,
takes its place among them by arrival time (PyEngine._wpq_insert). Threads run up to a quantum
apart, or a whole transaction where a runtime does not yield inside one (Proteus's 8,192-element
transactions write about 2,300 lines each, so four threads' bursts meet in about 9,000)."""
BANK_RING = 4096
"""Busy intervals remembered per bank of the bank model (the C core's PM_BANK_RING): a write
simulated late fills an idle gap among them (PyEngine._bank_fit)."""
TRIM = 8
"""When a WPQ's or a bank's memory is full, the oldest 1 / TRIM of it is forgotten at once
(both engines), so that forgetting costs little per write."""


def pf_slots(distance: int) -> int:
    """Entries of a core's table of in-flight prefetches: the power of two at or above
    2 x distance + 2 (the C core's the same)."""
    n = 1
    while n < 2 * distance + 2:
        n <<= 1
    return n


def dimm_seed(seed: int, dimm: int) -> int:
    """The initial state of DIMM ``dimm``'s replacement generator (a 64-bit LCG; the C core's
    the same): the machine's seed mixed with the DIMM's index, never 0."""
    x = (seed ^ (0x9E3779B97F4A7C15 * (dimm + 1))) & U64
    return x or 1

COUNTERS = tuple(n for n in STATS_DTYPE.names if STATS_DTYPE.fields[n][0] == np.uint64)
"""The integer statistics (instruction and event counts, bytes)."""


U64 = (1 << 64) - 1
MAX_WORK_NS = 1e12
"""The most one ``work`` may charge, in ns (1000 simulated seconds; the C core's
PM_MAX_WORK_NS)."""


def as_int(value: Any, what: str, hi: int = U64, valid: str = "an int in 0..2**64-1") -> int:
    """``value`` as a Python int in ``0..hi``, or the ConfigError both engines raise
    (``valid`` says what to use instead).

    Integers, bools, NumPy integers and objects with ``__index__`` are accepted; floats
    (even integral ones), strings, None, Fractions and Decimals are not: nothing is truncated.
    """
    if value.__class__ is not int:
        if isinstance(value, (float, complex, str, bytes, np.floating)) or not hasattr(
                type(value), "__index__"):
            raise ConfigError(f"{what} {value!r} is not an integer ({type(value).__name__}); "
                              f"use {valid} (convert with int() where truncation is meant)")
        value = operator.index(value)
    if not 0 <= value <= hi:
        raise ConfigError(f"{what} {value} is out of range; use {valid}"
                          + (" (mask negative values with & (2**64 - 1))"
                             if value < 0 and hi == U64 else ""))
    return value


ADDRESS = "an 8-byte aligned int address inside a region of the machine"


def as_word(value: Any, what: str = "value") -> int:
    """A value stored to memory: an integer in 0..2**64-1."""
    return as_int(value, what)


def as_ns(ns: Any) -> float:
    """A ``work`` duration: a real number in [0, MAX_WORK_NS], or the ConfigError both engines
    raise."""
    ok = isinstance(ns, (int, float, np.integer, np.floating)) and not isinstance(ns, bool)
    if not ok:
        raise ConfigError(f"work({ns!r}): the duration must be a number of ns, got "
                          f"{type(ns).__name__}")
    try:
        f = float(ns)
    except OverflowError:
        f = math.inf
    if not (0.0 <= f <= MAX_WORK_NS) or math.isnan(f):
        raise ConfigError(f"work({ns!r}): the duration must be in [0, {MAX_WORK_NS:g}] ns "
                          "(clocks never move backwards, and must stay finite)")
    return f


def check_clock(t: Any) -> float:
    """``t`` if it is a clock (a finite number of ns, at least 0), else the ConfigError both
    engines raise."""
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= t < math.inf:
        raise ConfigError(f"a thread's clock must be a finite time in ns, at least 0, got {t!r}")
    return float(t)


def check_tid(cfg: MachineConfig, tid: Any) -> int:
    """``tid`` if it names a thread of the machine, else the ConfigError both engines raise."""
    n = cfg.cores
    if not isinstance(tid, int) or not 0 <= tid < n:
        raise ConfigError(f"thread {tid} does not exist: the machine has {n} cores "
                          f"(threads 0..{n - 1})")
    return tid


def as_code(code: Any) -> int:
    """An xabort code: an int in 0..255."""
    return as_int(code, "xabort code", 0xFF, "an int in 0..255 (an 8-bit abort code)")


def tsc(cfg: MachineConfig, tid: int, clock: float) -> int:
    """What rdtsc reads at ``clock`` on core ``tid``: int((clock + skew) * tsc_ghz), clamped
    to 0..2**64-1 (the C core computes the same in the same order)."""
    t = (clock + cfg.htm.skew(tid)) * cfg.htm.tsc_ghz
    if not t >= 0.0:
        return 0
    if t >= 18446744073709551616.0:
        return U64
    return int(t)


def devwrite_aux(drained: Any) -> int:
    """A device write's trace ``aux``: 0 issued, 1 drained, 2 persisted (True counts as 1)."""
    if drained.__class__ is not bool and drained not in (0, 1, 2):
        raise ConfigError(f"devwrite: drained={drained!r}; use 0 (issued), 1 (drained: accepted "
                          "by the memory controller) or 2 (persisted: acknowledged by the media)")
    return int(drained)


def check_counter(name: str) -> None:
    """Raise a ConfigError unless ``name`` is an integer statistic."""
    if name not in COUNTERS:
        raise ConfigError(f"{name!r} is not a counter of the machine's statistics; use one of "
                          f"{', '.join(COUNTERS)}")


class Memory:
    """The functional contents of every region: 8-byte words in NumPy arrays."""

    def __init__(self, cfg: MachineConfig) -> None:
        self.regions = sorted(cfg.regions, key=lambda r: r.base)
        self.arrays = [np.zeros(r.size // 8, dtype=np.uint64) for r in self.regions]
        pm = cfg.pm_region
        self.pm_index = self.regions.index(pm)
        self.pm_base, self.pm_end = pm.base, pm.end

    def locate(self, addr: int) -> tuple[int, int]:
        """(region index, word index) of an 8-byte aligned address, or a clear error."""
        if addr.__class__ is not int:
            addr = as_int(addr, "address", valid=ADDRESS)
        if addr & 7:
            raise ConfigError(f"address {addr:#x} is not 8-byte aligned; pmsim accesses "
                              "8-byte atoms (use store_bytes for other sizes)")
        for i, r in enumerate(self.regions):
            if r.base <= addr < r.end:
                return i, (addr - r.base) >> 3
        raise ConfigError(f"address {addr:#x} is outside every region of the address map "
                          f"({', '.join(f'{r.name}=[{r.base:#x},{r.end:#x})' for r in self.regions)})")

    def is_pm(self, addr: int) -> bool:
        return self.pm_base <= addr < self.pm_end

    @property
    def pm(self) -> np.ndarray:
        return self.arrays[self.pm_index]


class WideOps:
    """Instructions over many words or lines in one call, defined by the single ones: the C
    engine runs each in one call across the boundary, with exactly the same effect and the same
    error at the same element (the earlier elements have run)."""

    def store_words(self, tid: int, addr: int, values: Sequence[int]) -> None:
        """``store`` of ``values[i]`` at ``addr + 8 * i``, in order."""
        st = self.store  # type: ignore[attr-defined]
        for i, v in enumerate(values):
            st(tid, addr + 8 * i, v)

    def load_words(self, tid: int, addr: int, n: int) -> list[int]:
        """``load_many`` of the ``n`` consecutive words from ``addr``."""
        n = as_int(n, "load_words: n", valid="an int >= 0")
        return self.load_many(tid, [addr + 8 * i for i in range(n)])  # type: ignore[attr-defined]

    def clock_reader(self, tid: int) -> Any:
        """A callable returning thread ``tid``'s clock (the C engine's is one C call)."""
        get = self.get_clock  # type: ignore[attr-defined]
        get(tid)
        return lambda: get(tid)

    def clwb_many(self, tid: int, addrs: Sequence[int]) -> None:
        """``clwb`` of each address, in order."""
        fl = self.clwb  # type: ignore[attr-defined]
        for a in addrs:
            fl(tid, a)


class PyEngine(WideOps):
    """The reference engine. Every method takes the thread id first."""

    backend = "python"
    timed = True

    def __init__(self, cfg: MachineConfig) -> None:
        self.cfg = cfg
        c = cfg.cache
        # hardware threads on one physical core (CoreConfig.physical_cores) share its L1 and
        # L2: self.l1[tid] is the core's cache, the same object for both threads
        self.core_of, self.sib = cfg.core.placement(cfg.cores)
        ncores = max(self.core_of) + 1
        l1s = [CacheArray(c.l1.sets, c.l1.ways) for _ in range(ncores)]
        l2s = [CacheArray(c.l2.sets, c.l2.ways) for _ in range(ncores)]
        self.l1 = [l1s[k] for k in self.core_of]
        self.l2 = [l2s[k] for k in self.core_of]
        self.peers = [[(l1s[k], l2s[k]) for k in range(ncores) if k != self.core_of[t]]
                      for t in range(cfg.cores)]  # the other cores' private caches
        self.llc = CacheArray(c.llc.sets, c.llc.ways)
        self.caches = [*l1s, *l2s, self.llc]
        # a thread beside its sibling computes at smt_speed: its work takes 1 / smt_speed longer
        self.work_scale = [1.0 / cfg.core.smt_speed if s >= 0 else 1.0 for s in self.sib]
        self.mem = Memory(cfg)
        self.stats = np.zeros(cfg.cores, dtype=STATS_DTYPE)
        self.clock = [0.0] * cfg.cores
        self.pending = [0.0] * cfg.cores  # latest WPQ acceptance a fence must wait for
        self.pcommit_wait = [0.0] * cfg.cores  # drain time a fence must wait for (PDOM-0)
        self.in_fixed_pb = [False] * cfg.cores
        self.wc = [0] * cfg.cores  # line + 1 of the thread's open write-combining buffer, 0: none
        nq = max(1, cfg.pm.dimm.dimms)  # one WPQ per DIMM
        # each WPQ's last writes in order of arrival: arrival, completion, media write's start,
        # line; and the completion of the last one forgotten
        self.wpq_arr: list[list[float]] = [[] for _ in range(nq)]
        self.wpq_done: list[list[float]] = [[] for _ in range(nq)]
        self.wpq_start: list[list[float]] = [[] for _ in range(nq)]
        self.wpq_line: list[list[int]] = [[] for _ in range(nq)]
        self.wpq_gone = [0.0] * nq
        # each bank's last busy intervals in time order (starts, ends), the latest end of those
        # forgotten, and the latest end of all (what a pcommit drains)
        self.bank_s: list[list[float]] = [[] for _ in range(cfg.pm.banks)]
        self.bank_e: list[list[float]] = [[] for _ in range(cfg.pm.banks)]
        self.bank_gone = [0.0] * cfg.pm.banks
        self.bank_free = [0.0] * cfg.pm.banks
        self._init_core(cfg)
        self._init_prefetch(cfg)
        self._init_dimms(cfg)
        self._trace: list[tuple] = []
        self.htm = H.HtmState(cfg, self._bump)

    def _bump(self, tid: int, name: str) -> None:
        self.stats[tid][name] += 1

    # -- out-of-order core, prefetchers, DIMMs (see CoreConfig, PrefetchConfig, DIMMConfig) ---
    def _init_core(self, cfg: MachineConfig) -> None:
        c = cfg.core
        self.ooo = c.model == "ooo"
        self.sb_ring = [[0.0] * c.store_buffer for _ in range(cfg.cores)]  # drain times
        self.sb_idx = [0] * cfg.cores
        self.sb_last = [0.0] * cfg.cores  # when the youngest buffered store reaches L1
        # how long before it retires the next store is dispatched: the last sfence's stall,
        # until the thread serializes (a store after a stalled sfence issues its read for
        # ownership from the window while the fence waits)
        self.lag = [0.0] * cfg.cores
        self.lf_ring = [[0.0] * c.fill_buffers for _ in range(cfg.cores)]  # miss completions
        self.lf_idx = [0] * cfg.cores

    def _init_prefetch(self, cfg: MachineConfig) -> None:
        p = cfg.prefetch
        self.pf_on = p.on
        # per core: streams [page, last line, direction, frontier], one per page (direct-mapped
        # by page number); in-flight prefetches, direct-mapped by line number
        self.pf_streams = [[[-1, 0, 0, 0] for _ in range(p.streams)] for _ in range(cfg.cores)]
        self.pf_mask = pf_slots(p.distance) - 1
        self.pf_line = [[-1] * (self.pf_mask + 1) for _ in range(cfg.cores)]
        self.pf_ready = [[0.0] * (self.pf_mask + 1) for _ in range(cfg.cores)]

    def _init_dimms(self, cfg: MachineConfig) -> None:
        dm = cfg.pm.dimm
        self.dimm_on = dm.on
        n = max(1, dm.dimms)
        self.il_shift = (dm.interleave_kib * 1024 // LINE).bit_length() - 1
        self.xpb_line = [[-1] * dm.buffer_lines for _ in range(n)]  # media line held
        self.xpb_mask = [[0] * dm.buffer_lines for _ in range(n)]  # cache lines written
        self.xpb_busy = [[0.0] * dm.buffer_lines for _ in range(n)]  # its media write's end
        # when the entry's last fill began and ended (its first cache line written since it
        # was clean, and the write that completed it): the interval in which it was partly
        # written, whatever order the threads' writes were simulated in
        self.xpb_open = [[0.0] * dm.buffer_lines for _ in range(n)]
        self.xpb_shut = [[0.0] * dm.buffer_lines for _ in range(n)]
        self.xpb_seq = [[0] * dm.buffer_lines for _ in range(n)]  # its allocation's number
        self.xpb_from = [[0] * dm.buffer_lines for _ in range(n)]  # allocations before its fill
        self.xpb_tid = [[-1] * dm.buffer_lines for _ in range(n)]  # the thread that filled it
        self.alloc_t = [[-1.0] * ALLOC_RING for _ in range(n)]  # the buffer's last allocations
        self.alloc_n = [0] * n  # allocations so far
        self.dimm_last = [[0.0] * cfg.cores for _ in range(n)]  # each thread's last write start
        self.xpb_fill = [0] * n  # entries in use (filled in order, then random victims)
        self.tw_t = [[-1.0] * WRITE_RING for _ in range(cfg.cores)]  # each thread's last writes
        self.tw_d = [[0] * WRITE_RING for _ in range(cfg.cores)]  # ... and their DIMMs
        self.tw_n = [0] * cfg.cores
        self.tr_a = [[-1.0] * WRITE_RING for _ in range(cfg.cores)]  # each thread's last reads
        self.tr_c = [[-1.0] * WRITE_RING for _ in range(cfg.cores)]  # ... when each ended
        self.tr_d = [[0] * WRITE_RING for _ in range(cfg.cores)]  # ... and their DIMMs
        self.tr_n = [0] * cfg.cores
        # streams' contention: only when more threads than combine_writers can access a DIMM
        self.cw_on = dm.contention > 0 and cfg.cores > dm.combine_writers
        self.cr_on = dm.read_contention > 0 and cfg.cores > dm.combine_writers
        self.rng = [dimm_seed(cfg.seed, d) for d in range(n)]
        self.chan_free = [0.0] * n  # when the DIMM has accepted every write given to it
        # calendars of the DIMMs' channel (64 B writes accepted) and media (256 B reads and
        # writes), then of each DIMM's reads alone (with read_priority): per DIMM, CAL_BUCKETS
        # buckets of cal_w ns, each the bucket number it holds and the ns of work booked in it
        self.cal_w = 2.0 * max(dm.media_read_occ_ns, dm.media_write_ns, cfg.pm.write_ns, 1.0)
        self.cal_tag = [[-1] * CAL_BUCKETS for _ in range(3 * dm.dimms)]
        self.cal_used = [[0.0] * CAL_BUCKETS for _ in range(3 * dm.dimms)]

    def _book(self, cal: int, t: float, occ: float) -> float:
        """Book ``occ`` ns of calendar ``cal`` (2d: DIMM d's channel, 2d+1: its media, 2 *
        dimms + d: its media's reads when they go first) at or after ``t``; return when the
        work starts. The calendar takes requests in any time
        order (threads' clocks run apart by up to a quantum): a request takes the first bucket
        from its own with room left, starts after the work booked there before it, and what
        does not fit runs on into the next buckets (so the calendar's capacity is the media's
        own: 39 ns reads in 232 ns buckets lose no time to packing)."""
        w = self.cal_w
        tags, used = self.cal_tag[cal], self.cal_used[cal]
        b = math.floor(t / w)
        while True:
            i = b % CAL_BUCKETS
            if tags[i] != b:
                tags[i] = b
                used[i] = 0.0
            if used[i] < w or occ <= 0.0:
                break
            b += 1
        s = b * w + used[i]
        rest = occ
        while used[i] + rest > w:
            rest -= w - used[i]
            used[i] = w
            b += 1
            i = b % CAL_BUCKETS
            if tags[i] != b:
                tags[i] = b
                used[i] = 0.0
        used[i] += rest
        return t if t > s else s

    def _dimm_of(self, line: int) -> int:
        return (line >> self.il_shift) % self.cfg.pm.dimm.dimms

    def _xpb_find(self, d: int, xpl: int) -> int:
        lines = self.xpb_line[d]
        for k in range(self.xpb_fill[d]):
            if lines[k] == xpl:
                return k
        return -1

    def _xpb_alloc(self, tid: int, d: int, xpl: int, t: float) -> tuple[int, float]:
        """An entry for media line ``xpl`` of DIMM ``d`` at time ``t``; returns it and when it
        is free: an empty one, else a random victim, written back first if partly written."""
        dm = self.cfg.pm.dimm
        st = self.stats[tid]
        if self.xpb_fill[d] < dm.buffer_lines:
            k = self.xpb_fill[d]
            self.xpb_fill[d] = k + 1
            ready = t
        else:
            k = self._rand(d) % dm.buffer_lines
            ready = t if t >= self.xpb_busy[d][k] else self.xpb_busy[d][k]
            if self.xpb_mask[d][k]:  # partly written: read, merge, write the media line
                st["xpb_rmw"] += 1
                st["media_read_bytes"] += XPLINE
                st["media_write_bytes"] += XPLINE
                ready = self._book(2 * d + 1, ready, dm.media_write_ns) + dm.media_write_ns
            elif self.xpb_tid[d][k] != tid and self.xpb_open[d][k] < t < self.xpb_shut[d][k]:
                # complete now, but another thread's line half written at t
                end = self._half_evicted(tid, d, ready)
                ready = end if end > ready else ready
        self.xpb_line[d][k] = xpl
        self.xpb_mask[d][k] = 0
        self.xpb_busy[d][k] = ready
        self.xpb_shut[d][k] = 0.0
        i = self.alloc_n[d]
        self.alloc_t[d][i % ALLOC_RING] = t
        self.xpb_seq[d][k] = i
        self.alloc_n[d] = i + 1
        return k, ready

    def _rand(self, d: int) -> int:
        """The next draw of DIMM ``d``'s replacement generator."""
        x = (self.rng[d] * 6364136223846793005 + 1442695040888963407) & U64
        self.rng[d] = x
        return x >> 33

    def _xpb_survives(self, d: int, k: int, shut: float) -> bool:
        """Whether entry ``k``, whose media line was written from ``xpb_open`` to ``shut``,
        survived the allocations of other lines that fell in that interval but were simulated
        before its first write (threads are simulated a quantum at a time, so a line's writes
        and other threads' concurrent allocations are not simulated in time order): each evicts
        it with probability 1 / buffer_lines, as random replacement does. The allocations
        simulated while it was being written drew their victims for real."""
        lo, n = self.xpb_open[d][k], self.xpb_from[d][k]
        own, times, lines = self.xpb_seq[d][k], self.alloc_t[d], self.cfg.pm.dimm.buffer_lines
        for i in range(max(0, self.alloc_n[d] - ALLOC_RING), n):  # those the ring still holds
            if i != own and lo < times[i % ALLOC_RING] < shut and self._rand(d) % lines == 0:
                return False
        return True

    def _contended(self, d: int, t: float, reads: bool) -> bool:
        """Whether the streams DIMM ``d`` serves at ``t`` cost an access its buffer entry:
        every thread with an access of the kind to it in the buffer's turnover time before
        ``t`` (a write that started then; a read that arrived by ``t`` and ended then),
        weighted by the share of its accesses in that time that went to this DIMM (1 on one
        DIMM; about 1/6 for random accesses over six). Streams beyond ``combine_writers`` each
        cost it with chance ``contention`` (writes: the media line completed at ``t`` was
        first written out half done) or ``read_contention`` (reads: the line a read hits was
        evicted by the other streams and is read from the media again). Phenomenological:
        FAST'20's DIMM counters show the extra media accesses growing with the streams, not
        which rule causes them."""
        dm = self.cfg.pm.dimm
        lo = t - dm.contention_window_ns
        if reads:
            starts, ends, dimms, counts = self.tr_a, self.tr_c, self.tr_d, self.tr_n
            q = float(dm.read_contention)
        else:
            starts, dimms, counts = self.tw_t, self.tw_d, self.tw_n
            ends = starts
            q = float(dm.contention)
        threads, streams = 0, 0.0
        for u in range(self.cfg.cores):
            here = total = 0
            ta, tc, td, m = starts[u], ends[u], dimms[u], counts[u]
            for i in range(max(0, m - WRITE_RING), m):
                j = i % WRITE_RING
                if ta[j] <= t and lo < tc[j]:
                    total += 1
                    if td[j] == d:
                        here += 1
            if here:
                threads += 1
                streams += here / total
        extra = streams - dm.combine_writers
        if threads <= dm.combine_writers or extra <= 0.0:
            return False
        return self._rand(d) < (1.0 - (1.0 - q) ** extra) * 2147483648.0

    def _half_evicted(self, tid: int, d: int, t: float) -> float:
        """A media line written in two parts because it was evicted half written at ``t``: its
        first part is a read-modify-write then, its rest another when it is evicted in turn.
        Returns when the extra media write ends."""
        st = self.stats[tid]
        st["xpb_rmw"] += 2
        st["media_read_bytes"] += 2 * XPLINE
        st["media_write_bytes"] += XPLINE
        w = self.cfg.pm.dimm.media_write_ns
        return self._book(2 * d + 1, t, w) + w

    def _dimm_write(self, tid: int, d: int, line: int, accept: float,
                    arrive: float) -> tuple[float, float]:
        """The DIMM takes one 64 B write from its WPQ: (when it starts, when it is accepted)."""
        cfg = self.cfg
        st = self.stats[tid]
        start = self._book(2 * d, accept, cfg.pm.write_ns)
        xpl = line >> 2
        k = self._xpb_find(d, xpl)
        if k < 0:
            st["xpb_misses"] += 1
            k, ready = self._xpb_alloc(tid, d, xpl, start)
            if ready > start:
                start = ready
        else:
            st["xpb_hits"] += 1
        done = start + cfg.pm.write_ns
        if done > self.chan_free[d]:
            self.chan_free[d] = done
        if not self.xpb_mask[d][k]:
            # its writes wait from their arrival, among the other threads' (the controller
            # serves the threads queued at a DIMM in turn), but never before the thread's own
            # previous write: one thread's writes reach the DIMM in order
            last = self.dimm_last[d][tid]
            self.xpb_open[d][k] = arrive if arrive > last else last
            self.xpb_from[d][k] = self.alloc_n[d]
            self.xpb_tid[d][k] = tid
        self.dimm_last[d][tid] = start
        i = self.tw_n[tid]
        self.tw_t[tid][i % WRITE_RING] = start
        self.tw_d[tid][i % WRITE_RING] = d
        self.tw_n[tid] = i + 1
        mask = self.xpb_mask[d][k] | (1 << (line & 3))
        if mask == 15:  # the whole media line written: write it back, keep it (clean)
            mask = 0
            self.xpb_shut[d][k] = start
            if not self._xpb_survives(d, k, start) or (self.cw_on
                                                        and self._contended(d, start, False)):
                self._half_evicted(tid, d, start)
            st["media_write_bytes"] += XPLINE
            w = cfg.pm.dimm.media_write_ns
            self.xpb_busy[d][k] = self._book(2 * d + 1, done, w) + w
        self.xpb_mask[d][k] = mask
        return start, done

    def _dimm_read(self, tid: int, line: int, t: float) -> float:
        """Latency of a PM read arriving at its DIMM at ``t`` (beyond the LLC's)."""
        dm = self.cfg.pm.dimm
        st = self.stats[tid]
        d = self._dimm_of(line)
        xpl = line >> 2
        held = self._xpb_find(d, xpl) >= 0
        if held and not (self.cr_on and self._contended(d, t, True)):
            st["xpb_hits"] += 1
            if self.cr_on:
                self._read_done(tid, d, t, t)
            return self.cfg.pm.read_ns
        st["xpb_misses"] += 1
        st["media_read_bytes"] += XPLINE
        if dm.read_priority:  # a read waits for reads only; writes booked later wait for it
            ms = self._book(2 * dm.dimms + d, t, dm.media_read_occ_ns)
            self._book(2 * d + 1, ms, dm.media_read_occ_ns)
        else:
            ms = self._book(2 * d + 1, t, dm.media_read_occ_ns)
        if not held:  # (a line read again is still the buffer's entry)
            self._xpb_alloc(tid, d, xpl, ms)
        if self.cr_on:
            self._read_done(tid, d, t, ms + dm.media_read_occ_ns)
        return (ms - t) + self.cfg.pm.read_ns + dm.media_read_ns

    def _read_done(self, tid: int, d: int, arrive: float, end: float) -> None:
        """Remember a read of DIMM ``d`` (when it arrived, when it left the DIMM's buffer or
        media) among the thread's reads, for the read streams' contention (only read while it
        is on, so only kept then)."""
        i = self.tr_n[tid] % WRITE_RING
        self.tr_a[tid][i] = arrive
        self.tr_c[tid][i] = end
        self.tr_d[tid][i] = d
        self.tr_n[tid] += 1

    def _memory_read(self, tid: int, line: int, t: float) -> float:
        """Latency of a line read from memory at ``t`` (beyond the LLC's), with its bytes."""
        st = self.stats[tid]
        if self.mem.is_pm(line * LINE):
            st["pm_read_bytes"] += LINE
            if self.dimm_on:
                return self._dimm_read(tid, line, t)
            return self.cfg.pm.read_ns
        st["dram_read_bytes"] += LINE
        return self.cfg.dram.latency_ns

    def _pf_take(self, tid: int, line: int) -> float:
        """Remove ``line`` from the in-flight prefetches; its arrival time, or -1.0."""
        i = line & self.pf_mask
        lines = self.pf_line[tid]
        if lines[i] == line:
            lines[i] = -1
            return self.pf_ready[tid][i]
        return -1.0

    def _prefetch(self, tid: int, line: int, t: float) -> None:
        """Fetch ``line`` into this core's L2 (and the LLC) at ``t``, unless a private cache
        already holds it."""
        if self.l1[tid].lookup(line) is not None or self.l2[tid].lookup(line) is not None:
            return
        for l1, l2 in self.peers[tid]:
            if l1.lookup(line) is not None or l2.lookup(line) is not None:
                return
        lat = self.cfg.cache.llc.latency_ns
        e = self.llc.lookup(line)
        if e is not None:
            self.llc.touch(e)
        else:
            lat += self._memory_read(tid, line, t + lat)
            self._fill(tid, 3, line)
        self._fill(tid, 2, line)
        self.stats[tid]["pf_issued"] += 1
        i = line & self.pf_mask
        self.pf_line[tid][i] = line
        self.pf_ready[tid][i] = t + lat

    def _pf_train(self, tid: int, line: int, t: float) -> None:
        """The L2 streamer sees a demand miss (or a hit on a prefetched line) at ``line``."""
        p = self.cfg.prefetch
        if not p.stream:
            return
        page = line >> 6
        e = self.pf_streams[tid][page % p.streams]
        if e[0] != page:
            e[0], e[1], e[2], e[3] = page, line, 0, line
            return
        delta = line - e[1]
        e[1] = line
        if delta != 1 and delta != -1:
            return
        if e[2] != delta:
            e[2] = delta
            e[3] = line
            return
        f = e[3]
        if (f - line) * delta < 0:
            f = line
        n = 0
        x = f + delta
        while n < p.degree and (x - line) * delta <= p.distance and x >> 6 == page:
            self._prefetch(tid, x, t)
            f = x
            x += delta
            n += 1
        e[3] = f

    def _sb_store(self, tid: int, line: int, dirty: bool) -> int:
        """A store on the ooo core: it retires into the store buffer at the thread's clock
        (stalling only while the buffer is full) and reaches L1 after the older stores, when
        its read for ownership is done. That read issues when the store was dispatched: at
        retirement, or earlier after a stalled sfence (``lag``), once its buffer entry is free;
        a miss takes a fill buffer. Returns the level that served it."""
        t = self.clock[tid]
        ring = self.sb_ring[tid]
        i = self.sb_idx[tid]
        if ring[i] > t:
            self.stats[tid]["sb_stall_ns"] += ring[i] - t
            t = ring[i]
            self.clock[tid] = t
        issue = t - self.lag[tid]
        if ring[i] > issue:
            issue = ring[i]
        lat, level = self._access(tid, line, True, dirty, issue)
        if level > 1:
            lf = self.lf_ring[tid]
            j = self.lf_idx[tid]
            if lf[j] > issue:
                issue = lf[j]
            lf[j] = issue + lat
            self.lf_idx[tid] = (j + 1) % len(lf)
        done = issue + lat
        if done < t:
            done = t
        if done < self.sb_last[tid]:
            done = self.sb_last[tid]
        ring[i] = done
        self.sb_idx[tid] = (i + 1) % len(ring)
        self.sb_last[tid] = done
        self.clock[tid] = t + self.cfg.costs.store_ns
        return level

    def _sb_drain(self, tid: int) -> None:
        """Wait until every buffered store of the thread reached L1 (ooo core only)."""
        if self.ooo and self.sb_last[tid] > self.clock[tid]:
            self.stats[tid]["sb_stall_ns"] += self.sb_last[tid] - self.clock[tid]
            self.clock[tid] = self.sb_last[tid]

    def _sb_after(self, tid: int) -> float:
        """The time a flush can write back: after the older stores reached L1."""
        t = self.clock[tid]
        if self.ooo and self.sb_last[tid] > t:
            return self.sb_last[tid]
        return t

    def reset_volatile(self) -> None:
        """Power cycle: empty caches and WPQ, zero clocks, stats, trace, DRAM and transactions;
        keep PM."""
        mem = self.mem
        exempt = self.htm.exempt
        self.__init__(self.cfg)  # type: ignore[misc]
        for i, arr in enumerate(mem.arrays):
            if i != mem.pm_index:
                arr[:] = 0
        self.mem = mem
        self.htm.exempt = exempt

    def htm_exempt(self, addr: int) -> None:
        """Make the line of ``addr`` conflict-exempt for hardware transactions (pmsim.hw.htm)."""
        self.mem.locate(int(addr) & ~7)
        self.htm.exempt_line(addr)

    # -- trace ---------------------------------------------------------------------------------
    def _emit(self, kind: int, tid: int, aux: int, addr: int, value: int) -> None:
        self._trace.append((kind, 0, tid, aux, addr, value, self.clock[tid]))

    def trace(self) -> np.ndarray:
        return np.array(self._trace, dtype=TRACE_DTYPE)

    def reset_trace(self) -> None:
        self._trace.clear()

    def trace_len(self) -> int:
        return len(self._trace)

    # -- memory system -------------------------------------------------------------------------
    def _wpq_insert(self, tid: int, arrive: float, line: int) -> tuple[float, float]:
        """Insert a line write into the WPQ; return when it was accepted and when its media
        write is done. The WPQ's ``wpq_entries`` slots are taken in order of arrival: a write
        waits for the one that arrived ``wpq_entries`` writes before it to be done, whatever
        order the threads were simulated in. With ``pm.merge_writes``, a write to a line whose
        queued write has not begun its media write merges into it (as gem5's memory controller
        merges a burst already in its write queue): no entry, no media write, accepted on
        arrival, done with that write. With the DIMM model the WPQ is per DIMM and 'done' is
        the DIMM's acceptance."""
        pm = self.cfg.pm
        n = pm.wpq_entries
        st = self.stats[tid]
        d = self._dimm_of(line) if self.dimm_on else 0
        arr, dn = self.wpq_arr[d], self.wpq_done[d]
        sts, lns = self.wpq_start[d], self.wpq_line[d]
        p = bisect_right(arr, arrive)
        lo = p - n if p > n else 0
        for i in range(lo, p) if pm.merge_writes else ():
            if lns[i] == line and sts[i] > arrive:
                st["wpq_merged"] += 1
                return arrive, dn[i]
        oldest = dn[p - n] if p >= n else self.wpq_gone[d]
        accept = arrive if arrive >= oldest else oldest
        if self.dimm_on:
            start, done = self._dimm_write(tid, d, line, accept, arrive)
        else:
            start = self._bank_fit(line % pm.banks, accept)
            done = start + pm.write_ns
        arr.insert(p, arrive)
        dn.insert(p, done)
        sts.insert(p, start)
        lns.insert(p, line)
        occ = 0
        for i in range(p + 1 - n if p + 1 > n else 0, p + 1):
            if dn[i] > accept:
                occ += 1
        if len(arr) > n + WPQ_LOOKBACK:
            k = len(arr) - (n + WPQ_LOOKBACK) + WPQ_LOOKBACK // TRIM
            self.wpq_gone[d] = dn[k - 1]
            del arr[:k], dn[:k], sts[:k], lns[:k]
        st["wpq_inserts"] += 1
        st["wpq_occ_sum"] += occ
        if occ > st["wpq_occ_max"]:
            st["wpq_occ_max"] = occ
        st["pm_write_bytes"] += LINE
        return accept, done

    def _bank_fit(self, bank: int, t: float) -> float:
        """Book ``write_ns`` of bank ``bank`` in its first idle gap at or after ``t``; return
        when the write starts. Writes simulated late fill the gaps the others left."""
        w = self.cfg.pm.write_ns
        bs, be = self.bank_s[bank], self.bank_e[bank]
        gone = self.bank_gone[bank]
        s = t if t >= gone else gone
        i = bisect_right(be, s)
        while i < len(bs) and s + w > bs[i]:
            if be[i] > s:
                s = be[i]
            i += 1
        e = s + w
        bs.insert(i, s)
        be.insert(i, e)
        if len(bs) > BANK_RING:
            k = len(bs) - BANK_RING + BANK_RING // TRIM
            if be[k - 1] > gone:
                self.bank_gone[bank] = be[k - 1]
            del bs[:k], be[:k]
        if e > self.bank_free[bank]:
            self.bank_free[bank] = e
        return s

    def _write_back_memory(self, tid: int, line: int, cause: int, t: float) -> float:
        """A dirty line leaves the caches at ``t``; return the WPQ acceptance time (0 for
        DRAM)."""
        addr = line * LINE
        st = self.stats[tid]
        if self.mem.is_pm(addr):
            arrive = t + self.cfg.pm.to_wpq_ns
            accept, done = self._wpq_insert(tid, arrive, line)
            self._emit(Ev.WB, tid, cause, addr, int(round(done * 1000)))
            return accept
        st["dram_write_bytes"] += LINE
        return 0.0

    def _evict_to(self, tid: int, level: int, line: int) -> None:
        """Write a dirty victim of level ``level`` (1 L1, 2 L2, 3 LLC) to the next level."""
        core = tid
        if level == 3:
            self.stats[tid]["writebacks"] += 1
            accept = self._write_back_memory(tid, line, _WB_EVICT, self.clock[tid])
            arrive = self.clock[tid] + self.cfg.pm.to_wpq_ns
            if accept > arrive:
                stall = accept - arrive
                self.stats[tid]["wpq_stall_ns"] += stall
                self.clock[tid] += stall
            return
        nxt = self.l2[core] if level == 1 else self.llc
        e = nxt.lookup(line)
        if e is not None:
            e[0] = 1
            return
        victim = nxt.insert(line, True)
        if victim is not None and victim[1]:
            self._evict_to(tid, level + 1, victim[0])

    def _fill(self, tid: int, level: int, line: int) -> None:
        """Insert a clean copy of ``line`` into level ``level`` (1, 2 or 3)."""
        cache = self.l1[tid] if level == 1 else self.l2[tid] if level == 2 else self.llc
        victim = cache.insert(line, False)
        if victim is not None and victim[1]:
            self._evict_to(tid, level, victim[0])

    def _access(self, tid: int, line: int, write: bool, dirty: bool, t: float) -> tuple[float, int]:
        """Run one access issued at ``t`` through the hierarchy; return (latency, level that
        hit: 1-4).

        A write takes the line for writing (other copies invalidated) and, when ``dirty``,
        marks it dirty in L1 (a transactional store does not: its data is buffered). A miss in
        L2, or a hit on a prefetched line, trains the prefetchers."""
        cfg = self.cfg
        st = self.stats[tid]
        l1, l2 = self.l1[tid], self.l2[tid]
        lat = 0.0
        e = l1.lookup(line)
        if e is not None:
            l1.touch(e)
            st["l1_hits"] += 1
            level = 1
            lat = cfg.cache.l1.latency_ns
        else:
            st["l1_misses"] += 1
            e = l2.lookup(line)
            if e is not None:
                l2.touch(e)
                st["l2_hits"] += 1
                level = 2
                lat = cfg.cache.l2.latency_ns
                if self.pf_on:
                    ready = self._pf_take(tid, line)
                    if ready >= 0.0:
                        st["pf_useful"] += 1
                        if ready - t > lat:
                            st["pf_late"] += 1
                            lat = ready - t
                        self._pf_train(tid, line, t)
            else:
                st["l2_misses"] += 1
                # a read missing the private caches downgrades dirty copies elsewhere
                if not write and self._snoop_downgrade(tid, line):
                    st["snoops"] += 1
                    lat += cfg.costs.snoop_ns
                e = self.llc.lookup(line)
                if e is not None:
                    self.llc.touch(e)
                    st["llc_hits"] += 1
                    level = 3
                    lat += cfg.cache.llc.latency_ns
                else:
                    st["llc_misses"] += 1
                    level = 4
                    llc = cfg.cache.llc.latency_ns
                    lat += llc + self._memory_read(tid, line, t + lat + llc)
                    self._fill(tid, 3, line)
                self._fill(tid, 2, line)
                if self.pf_on:
                    self._pf_take(tid, line)
                    if cfg.prefetch.adjacent:
                        self._prefetch(tid, line ^ 1, t)
                    self._pf_train(tid, line, t)
            self._fill(tid, 1, line)
        if write:
            if self._snoop_invalidate(tid, line):
                st["snoops"] += 1
                lat += cfg.costs.snoop_ns
            if dirty:
                self.l1[tid].lookup(line)[0] = 1  # type: ignore[index]
        return lat, level

    def _snoop_downgrade(self, tid: int, line: int) -> bool:
        hit = False
        for pair in self.peers[tid]:
            for cache in pair:
                e = cache.lookup(line)
                if e is not None and e[0]:
                    e[0] = 0
                    hit = True
        if hit:
            e = self.llc.lookup(line)
            if e is not None:
                e[0] = 1
            else:
                victim = self.llc.insert(line, True)
                if victim is not None and victim[1]:
                    self._evict_to(tid, 3, victim[0])
        return hit

    def _snoop_invalidate(self, tid: int, line: int) -> bool:
        hit = False
        for pair in self.peers[tid]:
            for cache in pair:
                if cache.remove(line) is not None:
                    hit = True
        return hit

    def _flush_line(self, tid: int, line: int, invalidate: bool, cause: int, t: float) -> float:
        """Clean (and optionally drop) every copy; write back once, at ``t``, if any copy was
        dirty.

        Returns the WPQ acceptance time, or -1.0 when nothing was written back.
        """
        dirty = False
        for cache in self.caches:
            e = cache.lookup(line)
            if e is not None:
                if e[0]:
                    dirty = True
                    e[0] = 0
                if invalidate:
                    cache.remove(line)
        if not dirty:
            return -1.0
        return self._write_back_memory(tid, line, cause, t)

    # -- instructions --------------------------------------------------------------------------
    def load(self, tid: int, addr: int) -> int:
        r, w = self.mem.locate(addr)
        mode = self.htm.access(tid, int(addr), H.READ) if self.htm.active else H.PLAIN
        if mode == H.SKIP:
            return 0
        lat, _ = self._access(tid, addr >> 6, False, True, self.clock[tid])
        self.clock[tid] += lat
        self.lag[tid] = 0.0
        self.stats[tid]["loads"] += 1
        if mode == H.TX:
            v = self.htm.buffered(tid, int(addr))
            if v is not None:
                return v
        return int(self.mem.arrays[r][w])

    def load_many(self, tid: int, addrs: list[int]) -> list[int]:
        """Loads that do not depend on each other (the words of one read). On the ooo core
        their misses overlap, at most ``core.fill_buffers`` in flight (a miss goes to memory
        when the oldest fill buffer is free), one issued every ``core.load_issue_ns``; the
        thread continues when the last one completes. On the in-order core they are as many
        loads. Every address is checked first: on an error nothing has run."""
        where = [self.mem.locate(a) for a in addrs]
        check_tid(self.cfg, tid)
        if not self.ooo:
            return [self.load(tid, a) for a in addrs]
        return self._overlapped(tid, addrs, where, True)

    def run_ahead(self, tid: int, addrs: list[int]) -> None:
        """The lines an out-of-order core fetches while it runs ahead through a loop whose
        iterations do not depend on each other's data (an STM's read barrier over the words of
        one read): timed as the misses of ``load_many``, with no value, no load counted and no
        transactional tracking; the loop's own loads then hit. Nothing on the in-order core."""
        where = [self.mem.locate(a) for a in addrs]
        check_tid(self.cfg, tid)
        if self.ooo:
            self._overlapped(tid, addrs, where, False)

    def _overlapped(self, tid: int, addrs: list[int], where: list[tuple[int, int]],
                    values: bool) -> list[int]:
        issue = self.cfg.core.load_issue_ns
        ring = self.lf_ring[tid]
        t = self.clock[tid]
        end = t
        out = []
        for addr, (r, w) in zip(addrs, where, strict=True):
            mode = H.PLAIN
            if values and self.htm.active:
                mode = self.htm.access(tid, int(addr), H.READ)
                if mode == H.SKIP:
                    out.append(0)
                    continue
            i = self.lf_idx[tid]
            start = ring[i] if ring[i] > t else t  # a miss waits for the oldest fill buffer
            lat, level = self._access(tid, addr >> 6, False, True, start)
            if level == 1:
                done = t + lat
            else:
                done = start + lat
                ring[i] = done
                self.lf_idx[tid] = (i + 1) % len(ring)
            if done > end:
                end = done
            t += issue
            if values:
                self.stats[tid]["loads"] += 1
                v = self.htm.buffered(tid, int(addr)) if mode == H.TX else None
                out.append(int(self.mem.arrays[r][w]) if v is None else v)
        if t > end:
            end = t
        if end > self.clock[tid]:
            self.clock[tid] = end
        self.lag[tid] = 0.0
        return out

    def _tx_store(self, tid: int, addr: int, value: int, counter: str) -> None:
        """A transactional store (or movnt): timed like a store, the value buffered."""
        if self.ooo:
            self._sb_store(tid, addr >> 6, False)
        else:
            lat, level = self._access(tid, addr >> 6, True, False, self.clock[tid])
            self.clock[tid] += self.cfg.costs.store_ns if level == 1 else lat
        self.stats[tid][counter] += 1
        self.htm.buffer(tid, addr, value)

    def store(self, tid: int, addr: int, value: int) -> None:
        r, w = self.mem.locate(addr)
        if value.__class__ is not int or not 0 <= value <= U64:
            value = as_word(value)
        addr = int(addr)
        if self.htm.active:
            mode = self.htm.access(tid, addr, H.WRITE)
            if mode != H.PLAIN:
                if mode == H.TX:
                    self._tx_store(tid, addr, value, "stores")
                return
        self.wc[tid] = 0
        if self.ooo:
            self._sb_store(tid, addr >> 6, True)
        else:
            lat, level = self._access(tid, addr >> 6, True, True, self.clock[tid])
            self.clock[tid] += self.cfg.costs.store_ns if level == 1 else lat
        self.stats[tid]["stores"] += 1
        self.mem.arrays[r][w] = value
        if r == self.mem.pm_index:
            self._emit(Ev.STORE, tid, 0, addr, value)

    def ntstore(self, tid: int, addr: int, value: int) -> None:
        r, w = self.mem.locate(addr)
        if value.__class__ is not int or not 0 <= value <= U64:
            value = as_word(value)
        addr = int(addr)
        if self.htm.active:
            mode = self.htm.access(tid, addr, H.WRITE)
            if mode != H.PLAIN:
                if mode == H.TX:  # movnt inside a transaction is a transactional store
                    self._tx_store(tid, addr, value, "ntstores")
                return
        line = addr >> 6
        is_pm = r == self.mem.pm_index
        combined = is_pm and self.wc[tid] == line + 1  # joins the open write-combining buffer
        if not combined:
            self._flush_line(tid, line, True, _WB_NT, self.clock[tid])
        self.clock[tid] += self.cfg.costs.store_ns
        self.stats[tid]["ntstores"] += 1
        self.mem.arrays[r][w] = value
        if is_pm:
            self._emit(Ev.NTSTORE, tid, 0, addr, value)
            if not combined:
                arrive = self.clock[tid] + self.cfg.pm.to_wpq_ns
                accept, _ = self._wpq_insert(tid, arrive, line)
                if accept > self.pending[tid]:
                    self.pending[tid] = accept
                self.wc[tid] = line + 1
        else:
            self.stats[tid]["dram_write_bytes"] += 8

    def devwrite(self, tid: int, addr: int, value: int, drained: int = 0) -> None:
        """A write by a device beside the caches (the memory controller's log pending queue of
        Proteus/ATOM): PM takes the value and the trace an NTSTORE (aux ``drained``: 0 issued,
        1 drained, 2 persisted; see :mod:`crashfuzz.model`); no time, no cache or WPQ work, no
        counters (the device's model keeps its own)."""
        aux = devwrite_aux(drained)
        r, w = self.mem.locate(addr)
        check_tid(self.cfg, tid)
        if r != self.mem.pm_index:
            raise ConfigError(f"devwrite: address {addr:#x} is not in PM; a device write goes to "
                              "the persistent log area")
        if value.__class__ is not int or not 0 <= value <= U64:
            value = as_word(value)
        self.mem.arrays[r][w] = value
        self._emit(Ev.NTSTORE, tid, aux, int(addr), value)

    def _flush(self, tid: int, addr: int, kind: Ev) -> None:
        if addr.__class__ is not int:
            addr = as_int(addr, "address", valid=ADDRESS)
        r, _ = self.mem.locate(addr & ~7)
        if self.htm.active and self.htm.access(
                tid, addr, H.CLEAN if kind == Ev.CLWB else H.INVAL) == H.SKIP:
            return
        self.wc[tid] = 0
        line = addr >> 6
        self.clock[tid] += self.cfg.costs.flush_ns
        st = self.stats[tid]
        st[kind.name.lower()] += 1
        is_pm = r == self.mem.pm_index
        if is_pm:
            self._emit(kind, tid, 0, line * LINE, 0)
        accept = self._flush_line(tid, line, kind != Ev.CLWB, _WB_FLUSH, self._sb_after(tid))
        if accept < 0.0:
            return
        if kind == Ev.CLFLUSH:
            if accept > self.clock[tid]:
                self.clock[tid] = accept
        elif accept > self.pending[tid]:
            self.pending[tid] = accept

    def clflush(self, tid: int, addr: int) -> None:
        self._flush(tid, addr, Ev.CLFLUSH)

    def clflushopt(self, tid: int, addr: int) -> None:
        self._flush(tid, addr, Ev.CLFLUSHOPT)

    def clwb(self, tid: int, addr: int) -> None:
        self._flush(tid, addr, Ev.CLWB)

    def _fence_wait(self, tid: int) -> None:
        """Wait for this thread's store buffer (ooo), outstanding flushes and a pending
        pcommit (in a 'fixed' persist barrier the barrier's cost stands for all of it)."""
        target = self.pending[tid]
        if self.pcommit_wait[tid] > target:
            target = self.pcommit_wait[tid]
        self.wc[tid] = 0
        self.pending[tid] = 0.0
        self.pcommit_wait[tid] = 0.0
        if self.in_fixed_pb[tid]:
            return
        self._sb_drain(tid)
        wait = target - self.clock[tid]
        if wait > 0.0:
            self.clock[tid] += wait
            self.stats[tid]["barrier_stall_ns"] += wait

    def sfence(self, tid: int) -> None:
        if not self.in_fixed_pb[tid]:
            self.clock[tid] += self.cfg.costs.fence_ns
        before = self.clock[tid]
        self._fence_wait(tid)
        if self.ooo:  # the window fills behind the fence while it waits
            self.lag[tid] = self.clock[tid] - before
        self.stats[tid]["sfence"] += 1
        self._emit(Ev.SFENCE, tid, 0, 0, 0)

    def mfence(self, tid: int) -> None:
        if not self.in_fixed_pb[tid]:
            self.clock[tid] += self.cfg.costs.fence_ns
        self._fence_wait(tid)
        self.lag[tid] = 0.0
        self.stats[tid]["mfence"] += 1
        self._emit(Ev.MFENCE, tid, 0, 0, 0)

    def pcommit(self, tid: int) -> None:
        self.wc[tid] = 0
        if not self.in_fixed_pb[tid]:
            self.clock[tid] += self.cfg.costs.pcommit_ns
        self.stats[tid]["pcommit"] += 1
        if self.cfg.domain == "pdom0":
            drain = max(self.chan_free) if self.dimm_on else max(self.bank_free)
            if drain > self.pcommit_wait[tid]:
                self.pcommit_wait[tid] = drain
        self._emit(Ev.PCOMMIT, tid, 0, 0, 0)

    def _rmw(self, tid: int, addr: int, expected: int | None, value: int) -> int:
        r, w = self.mem.locate(addr)
        if expected is not None:
            expected = as_word(expected, "expected value")
        value = as_word(value)
        addr = int(addr)
        mode = self.htm.access(tid, addr, H.RMW) if self.htm.active else H.PLAIN
        if mode == H.SKIP:
            return 0
        self.clock[tid] += self.cfg.costs.rmw_ns
        self._fence_wait(tid)
        self.lag[tid] = 0.0
        lat, level = self._access(tid, addr >> 6, True, mode == H.PLAIN, self.clock[tid])
        self.clock[tid] += lat
        self.stats[tid]["rmws"] += 1
        if mode == H.TX:
            buffered = self.htm.buffered(tid, addr)
            old = int(self.mem.arrays[r][w]) if buffered is None else buffered
            if expected is None or old == expected:
                self.htm.buffer(tid, addr, value)
            return old
        old = int(self.mem.arrays[r][w])
        stored = expected is None or old == expected
        if stored:
            self.mem.arrays[r][w] = value
        if r == self.mem.pm_index:
            self._emit(Ev.RMW, tid, 1 if stored else 0, addr, value if stored else old)
        else:
            self._emit(Ev.RMW, tid, 0, 0, 0)
        return old

    def cas(self, tid: int, addr: int, expected: int, new: int) -> int:
        """Compare-and-swap; returns the old value (the swap happened iff it equals expected)."""
        return self._rmw(tid, addr, expected, new)

    def xchg(self, tid: int, addr: int, value: int) -> int:
        return self._rmw(tid, addr, None, value)

    def work(self, tid: int, ns: float) -> None:
        if (ns.__class__ is not float and ns.__class__ is not int) or not 0 <= ns <= MAX_WORK_NS:
            ns = as_ns(ns)
        ns *= self.work_scale[tid]
        self.clock[tid] += ns
        self.lag[tid] = 0.0
        self.stats[tid]["work_ns"] += ns

    def mark(self, tid: int, code: int, value: int) -> None:
        if not isinstance(code, int) or not 0 <= code <= 0xFFFFFFFF:
            code = as_int(code, "marker code", 0xFFFFFFFF, "an int in 0..2**32-1")
        if value.__class__ is not int or not 0 <= value <= U64:
            value = as_word(value, "marker value")
        self._emit(Ev.MARK, tid, code, 0, value)

    def persist_barrier(self, tid: int) -> None:
        cfg = self.cfg
        self.stats[tid]["persist_barriers"] += 1
        fixed = cfg.barrier == "fixed"
        if fixed:
            self.in_fixed_pb[tid] = True
        if cfg.domain == "pdom0":
            self.sfence(tid)
            self.pcommit(tid)
            self.sfence(tid)
        elif cfg.domain == "pdom1":
            self.sfence(tid)
        if fixed:
            self.in_fixed_pb[tid] = False
            self.clock[tid] += cfg.barrier_ns
            self.stats[tid]["barrier_stall_ns"] += cfg.barrier_ns

    # -- hardware transactions (see pmsim.hw.htm) -----------------------------------------------
    def xbegin(self, tid: int) -> None:
        """Start a hardware transaction on thread ``tid``."""
        check_tid(self.cfg, tid)
        self.htm.begin(tid)
        self._sb_drain(tid)
        self.lag[tid] = 0.0
        self.clock[tid] += self.cfg.htm.xbegin_ns

    def xend(self, tid: int) -> int:
        """Commit thread ``tid``'s transaction (0), or end an aborted one (its abort status)."""
        check_tid(self.cfg, tid)
        h = self.htm
        s = h.state[tid]
        if s == H.NONE:
            raise H.outside_error(tid)
        self._sb_drain(tid)
        self.lag[tid] = 0.0
        if s == H.DOOMED:
            self.clock[tid] += self.cfg.htm.abort_ns
            return h.end_doomed(tid)
        self.clock[tid] += self.cfg.htm.xend_ns
        words, lines = h.commit(tid)
        mem = self.mem
        for addr, value in words:
            r, w = mem.locate(addr)
            mem.arrays[r][w] = value
            if r == mem.pm_index:
                self._emit(Ev.STORE, tid, 0, addr, value)
        l1 = self.l1[tid]
        for line in lines:
            e = l1.lookup(line)
            if e is not None:
                e[0] = 1
            else:  # evicted from L1 during the transaction: take it again
                lat, _ = self._access(tid, line, True, True, self.clock[tid])
                self.clock[tid] += lat
        return 0

    def xabort(self, tid: int, code: int) -> None:
        """Abort thread ``tid``'s live transaction with an 8-bit code (nothing outside one)."""
        check_tid(self.cfg, tid)
        if code.__class__ is not int or not 0 <= code <= 0xFF:
            code = as_code(code)
        self.htm.abort(tid, code)

    def xstatus(self, tid: int) -> int:
        """0 while live or outside a transaction, else the abort status of a doomed one."""
        check_tid(self.cfg, tid)
        return self.htm.xstatus(tid)

    def rdtsc(self, tid: int) -> int:
        """The thread's TSC (its clock plus its core's skew, in TSC ticks); never conflicts."""
        check_tid(self.cfg, tid)
        self.clock[tid] += self.cfg.htm.rdtsc_ns
        return tsc(self.cfg, tid, self.clock[tid])

    # -- clocks, stats, batches ----------------------------------------------------------------
    def get_clock(self, tid: int) -> float:
        return self.clock[tid]

    def set_clock(self, tid: int, t: float) -> None:
        check_tid(self.cfg, tid)
        self.clock[tid] = check_clock(t)
        self.lag[tid] = 0.0

    def get_stats(self) -> np.ndarray:
        out = self.stats.copy()
        out["time_ns"] = self.clock
        return out

    def count(self, name: str) -> int:
        """The sum over threads of the counter ``name`` (e.g. ``"stores"``)."""
        check_counter(name)
        return int(self.stats[name].sum())

    def run_batch(self, ops: np.ndarray) -> np.ndarray:
        """Run a batch of BATCH_DTYPE operations; return the loaded/old values (0 otherwise)."""
        return run_batch(self, ops)


def run_batch(e: PyEngine | FunctionalEngine, ops: np.ndarray) -> np.ndarray:
    """Run BATCH_DTYPE operations one by one on a Python engine; the loaded/old values."""
    out = np.zeros(len(ops), dtype=np.uint64)
    rows = ops.tolist()
    group = 0  # index after the last load of the current independent group
    for i, o in enumerate(rows):
        op, _, tid, aux, addr, value, arg = o
        if i < group:
            continue
        if op == OP_LOAD and aux & 1:
            j = i + 1
            while j < len(rows) and rows[j][0] == OP_LOAD and rows[j][3] & 3 == aux & 3 \
                    and rows[j][2] == tid:
                j += 1
            addrs = [rows[k][4] for k in range(i, j)]
            if aux & 2:
                e.run_ahead(tid, addrs)
            else:
                out[i:j] = e.load_many(tid, addrs)
            group = j
        elif op == OP_LOAD:
            out[i] = e.load(tid, addr)
        elif op == OP_STORE:
            e.store(tid, addr, value)
        elif op == OP_NTSTORE:
            e.ntstore(tid, addr, value)
        elif op == OP_CLFLUSH:
            e.clflush(tid, addr)
        elif op == OP_CLFLUSHOPT:
            e.clflushopt(tid, addr)
        elif op == OP_CLWB:
            e.clwb(tid, addr)
        elif op == OP_SFENCE:
            e.sfence(tid)
        elif op == OP_MFENCE:
            e.mfence(tid)
        elif op == OP_PCOMMIT:
            e.pcommit(tid)
        elif op == OP_CAS:
            out[i] = e.cas(tid, addr, value, arg)
        elif op == OP_XCHG:
            out[i] = e.xchg(tid, addr, value)
        elif op == OP_WORK:
            e.work(tid, float(np.array(arg, np.uint64).view(np.float64)))
        elif op == OP_MARK:
            e.mark(tid, aux, value)
        elif op == OP_PB:
            e.persist_barrier(tid)
        elif op == OP_XBEGIN:
            e.xbegin(tid)
        elif op == OP_XEND:
            out[i] = e.xend(tid)
        elif op == OP_XABORT:
            e.xabort(tid, aux)
        elif op == OP_XSTATUS:
            out[i] = e.xstatus(tid)
        elif op == OP_RDTSC:
            out[i] = e.rdtsc(tid)
        else:
            raise ConfigError(f"batch op {i}: unknown op code {op}")
    return out


FUNCTIONAL_COUNTERS = ("loads", "stores", "ntstores", "rmws", "clflush", "clflushopt", "clwb",
                       "sfence", "mfence", "pcommit", "persist_barriers", "htm_begins",
                       "htm_commits", "htm_aborts_conflict", "htm_aborts_capacity",
                       "htm_aborts_explicit", "htm_aborts_flush", "htm_aborts_lock",
                       "htm_false_sharing")
"""The statistics the functional engines keep (the rest stay zero)."""


class FunctionalEngine(WideOps):
    """The untimed reference engine: memory, values, counters and trace without the memory
    system (see the module docstring). Every method takes the thread id first."""

    backend = "python"
    timed = False

    def __init__(self, cfg: MachineConfig) -> None:
        self.cfg = cfg
        self.mem = Memory(cfg)
        self._pm = self.mem.pm_index
        self._reset_counts()

    def _reset_counts(self) -> None:
        n = self.cfg.cores
        self.clock = [0.0] * n
        self.counts = [dict.fromkeys(FUNCTIONAL_COUNTERS, 0) for _ in range(n)]
        self._trace: list[tuple] = []
        exempt = self.htm.exempt if hasattr(self, "htm") else set()
        self.htm = H.HtmState(self.cfg, self._bump)
        self.htm.exempt = exempt

    def htm_exempt(self, addr: int) -> None:
        """Make the line of ``addr`` conflict-exempt for hardware transactions (pmsim.hw.htm)."""
        self.mem.locate(int(addr) & ~7)
        self.htm.exempt_line(addr)

    def _bump(self, tid: int, name: str) -> None:
        self.counts[tid][name] += 1

    def _check_tid(self, tid: int) -> dict[str, int]:
        """The counters of thread ``tid``, or the ConfigError the C engine raises."""
        n = self.cfg.cores
        if not isinstance(tid, int) or not 0 <= tid < n:
            raise ConfigError(f"thread {tid} does not exist: the machine has {n} cores "
                              f"(threads 0..{n - 1})")
        return self.counts[tid]

    def reset_volatile(self) -> None:
        """Power cycle: zero clocks, counters, trace, DRAM and transactions; keep PM."""
        for i, arr in enumerate(self.mem.arrays):
            if i != self._pm:
                arr[:] = 0
        self._reset_counts()

    # -- trace ---------------------------------------------------------------------------------
    def _emit(self, kind: int, tid: int, aux: int, addr: int, value: int) -> None:
        self._trace.append((kind, 0, tid, aux, addr, value, self.clock[tid]))

    def trace(self) -> np.ndarray:
        return np.array(self._trace, dtype=TRACE_DTYPE)

    def reset_trace(self) -> None:
        self._trace.clear()

    def trace_len(self) -> int:
        return len(self._trace)

    # -- instructions --------------------------------------------------------------------------
    def load(self, tid: int, addr: int) -> int:
        r, w = self.mem.locate(addr)
        c = self._check_tid(tid)
        if self.htm.active:
            mode = self.htm.access(tid, int(addr), H.READ)
            if mode == H.SKIP:
                return 0
            if mode == H.TX:
                c["loads"] += 1
                v = self.htm.buffered(tid, int(addr))
                return int(self.mem.arrays[r][w]) if v is None else v
        c["loads"] += 1
        return int(self.mem.arrays[r][w])

    def load_many(self, tid: int, addrs: list[int]) -> list[int]:
        for a in addrs:
            self.mem.locate(a)
        self._check_tid(tid)
        return [self.load(tid, a) for a in addrs]

    def run_ahead(self, tid: int, addrs: list[int]) -> None:
        for a in addrs:
            self.mem.locate(a)
        self._check_tid(tid)

    def _write(self, tid: int, addr: int, value: int, kind: Ev, counter: str) -> None:
        r, w = self.mem.locate(addr)
        c = self._check_tid(tid)
        if value.__class__ is not int or not 0 <= value <= U64:
            value = as_word(value)
        addr = int(addr)
        if self.htm.active:
            mode = self.htm.access(tid, addr, H.WRITE)
            if mode != H.PLAIN:
                if mode == H.TX:
                    c[counter] += 1
                    self.htm.buffer(tid, addr, value)
                return
        self.mem.arrays[r][w] = value
        c[counter] += 1
        if r == self._pm:
            self._emit(kind, tid, 0, addr, value)

    def store(self, tid: int, addr: int, value: int) -> None:
        self._write(tid, addr, value, Ev.STORE, "stores")

    def ntstore(self, tid: int, addr: int, value: int) -> None:
        self._write(tid, addr, value, Ev.NTSTORE, "ntstores")

    devwrite = PyEngine.devwrite  # PM and the trace only: the same in both engines

    def _flush(self, tid: int, addr: int, kind: Ev) -> None:
        if addr.__class__ is not int:
            addr = as_int(addr, "address", valid=ADDRESS)
        r, _ = self.mem.locate(addr & ~7)
        c = self._check_tid(tid)
        if self.htm.active and self.htm.access(
                tid, addr, H.CLEAN if kind == Ev.CLWB else H.INVAL) == H.SKIP:
            return
        c[kind.name.lower()] += 1
        if r == self._pm:
            self._emit(kind, tid, 0, addr >> 6 << 6, 0)

    def clflush(self, tid: int, addr: int) -> None:
        self._flush(tid, addr, Ev.CLFLUSH)

    def clflushopt(self, tid: int, addr: int) -> None:
        self._flush(tid, addr, Ev.CLFLUSHOPT)

    def clwb(self, tid: int, addr: int) -> None:
        self._flush(tid, addr, Ev.CLWB)

    def sfence(self, tid: int) -> None:
        self._check_tid(tid)["sfence"] += 1
        self._emit(Ev.SFENCE, tid, 0, 0, 0)

    def mfence(self, tid: int) -> None:
        self._check_tid(tid)["mfence"] += 1
        self._emit(Ev.MFENCE, tid, 0, 0, 0)

    def pcommit(self, tid: int) -> None:
        self._check_tid(tid)["pcommit"] += 1
        self._emit(Ev.PCOMMIT, tid, 0, 0, 0)

    def _rmw(self, tid: int, addr: int, expected: int | None, value: int) -> int:
        r, w = self.mem.locate(addr)
        c = self._check_tid(tid)
        if expected is not None:
            expected = as_word(expected, "expected value")
        value = as_word(value)
        addr = int(addr)
        arr = self.mem.arrays[r]
        if self.htm.active:
            mode = self.htm.access(tid, addr, H.RMW)
            if mode == H.SKIP:
                return 0
            if mode == H.TX:
                c["rmws"] += 1
                buffered = self.htm.buffered(tid, addr)
                old = int(arr[w]) if buffered is None else buffered
                if expected is None or old == expected:
                    self.htm.buffer(tid, addr, value)
                return old
        old = int(arr[w])
        stored = expected is None or old == expected
        if stored:
            arr[w] = value
        c["rmws"] += 1
        if r == self._pm:
            self._emit(Ev.RMW, tid, 1 if stored else 0, addr, value if stored else old)
        else:
            self._emit(Ev.RMW, tid, 0, 0, 0)
        return old

    def cas(self, tid: int, addr: int, expected: int, new: int) -> int:
        """Compare-and-swap; returns the old value (the swap happened iff it equals expected)."""
        return self._rmw(tid, addr, expected, new)

    def xchg(self, tid: int, addr: int, value: int) -> int:
        return self._rmw(tid, addr, None, value)

    def work(self, tid: int, ns: float) -> None:
        self._check_tid(tid)
        if (ns.__class__ is not float and ns.__class__ is not int) or not 0 <= ns <= MAX_WORK_NS:
            as_ns(ns)

    def mark(self, tid: int, code: int, value: int) -> None:
        self._check_tid(tid)
        if not isinstance(code, int) or not 0 <= code <= 0xFFFFFFFF:
            code = as_int(code, "marker code", 0xFFFFFFFF, "an int in 0..2**32-1")
        if value.__class__ is not int or not 0 <= value <= U64:
            value = as_word(value, "marker value")
        self._emit(Ev.MARK, tid, code, 0, value)

    def persist_barrier(self, tid: int) -> None:
        self._check_tid(tid)["persist_barriers"] += 1
        domain = self.cfg.domain
        if domain == "pdom0":
            self.sfence(tid)
            self.pcommit(tid)
            self.sfence(tid)
        elif domain == "pdom1":
            self.sfence(tid)

    # -- hardware transactions (untimed: the same decisions, values and trace) ------------------
    def xbegin(self, tid: int) -> None:
        self._check_tid(tid)
        self.htm.begin(tid)

    def xend(self, tid: int) -> int:
        self._check_tid(tid)
        h = self.htm
        s = h.state[tid]
        if s == H.NONE:
            raise H.outside_error(tid)
        if s == H.DOOMED:
            return h.end_doomed(tid)
        words, _ = h.commit(tid)
        mem = self.mem
        for addr, value in words:
            r, w = mem.locate(addr)
            mem.arrays[r][w] = value
            if r == self._pm:
                self._emit(Ev.STORE, tid, 0, addr, value)
        return 0

    def xabort(self, tid: int, code: int) -> None:
        self._check_tid(tid)
        if code.__class__ is not int or not 0 <= code <= 0xFF:
            code = as_code(code)
        self.htm.abort(tid, code)

    def xstatus(self, tid: int) -> int:
        self._check_tid(tid)
        return self.htm.xstatus(tid)

    def rdtsc(self, tid: int) -> int:
        self._check_tid(tid)
        return tsc(self.cfg, tid, self.clock[tid])

    # -- clocks, stats, batches ----------------------------------------------------------------
    def get_clock(self, tid: int) -> float:
        self._check_tid(tid)
        return self.clock[tid]

    def set_clock(self, tid: int, t: float) -> None:
        self._check_tid(tid)
        self.clock[tid] = check_clock(t)

    def get_stats(self) -> np.ndarray:
        out = np.zeros(self.cfg.cores, dtype=STATS_DTYPE)
        for t, c in enumerate(self.counts):
            for name, v in c.items():
                out[t][name] = v
        out["time_ns"] = self.clock
        return out

    def count(self, name: str) -> int:
        """The sum over threads of the counter ``name`` (e.g. ``"stores"``)."""
        check_counter(name)
        return sum(c.get(name, 0) for c in self.counts)

    def run_batch(self, ops: np.ndarray) -> np.ndarray:
        """Run a batch of BATCH_DTYPE operations; return the loaded/old values (0 otherwise)."""
        return run_batch(self, ops)
