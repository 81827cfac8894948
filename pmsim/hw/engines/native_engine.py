"""The C machine engine: the same instructions, rules and results as :class:`PyEngine`, in C.

``CEngine(cfg, timed=False)`` is the functional twin of
:class:`~pmsim.hw.engines.reference.FunctionalEngine` instead: the same memory, values, instruction
counts and trace (minus WB events and times) without simulating caches, the WPQ or clocks.

``CEngine`` wraps ``csrc/machine.c``. It keeps the functional memory in the NumPy arrays of a
:class:`~pmsim.hw.engines.reference.Memory` (``engine.mem``), which the C code reads and writes through
pointers, so ``Machine.peek``/``poke``/``pm_image``/``load_pm_image`` work unchanged. Modify
those arrays in place only; replacing one would detach it from the engine.

Instruction methods are plain closures over the cffi functions (one Python frame per
instruction); errors are detected in C before any state changes and turned into the same
:class:`~pmsim.errors.ConfigError` the reference raises. ``run_batch`` runs a whole
``BATCH_DTYPE`` array in one C call. Hardware transactions (``xbegin`` .. ``rdtsc``) follow
:mod:`pmsim.hw.htm`, as in the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NoReturn

import numpy as np

from ...cache import native
from ...config import MachineConfig
from ...errors import BuildError, ConfigError
from ...stats import STATS_DTYPE
from ...trace import TRACE_DTYPE
from ..htm import EXEMPT_MAX, nested_error, outside_error
from .reference import (
    ADDRESS,
    BATCH_DTYPE,
    OP_CAS,
    OP_CLFLUSH,
    OP_CLFLUSHOPT,
    OP_CLWB,
    OP_LOAD,
    OP_NTSTORE,
    OP_STORE,
    OP_WORK,
    OP_XABORT,
    OP_XBEGIN,
    OP_XCHG,
    Memory,
    WideOps,
    as_code,
    as_int,
    as_ns,
    as_word,
    check_clock,
    check_counter,
    devwrite_aux,
)

_DOMAINS = {"pdom0": 0, "pdom1": 1, "pdom2": 2}
_FLUSH_OPS = (OP_CLFLUSH, OP_CLFLUSHOPT, OP_CLWB)
_ADDR_OPS = (OP_LOAD, OP_STORE, OP_NTSTORE, OP_CAS, OP_XCHG, *_FLUSH_OPS)
_U64_MAX = (1 << 64) - 1


def _lib() -> tuple[Any, Any]:
    """The cffi ffi and lib of the C core, or a BuildError saying how to get them."""
    if native.lib is None or not hasattr(native.lib, "pm_machine_new"):
        raise BuildError("the C machine engine is not built. Run `python setup.py build_ext "
                         "--inplace` (or `make test`) in the pmsim checkout, or use "
                         "backend='python'.")
    return native.ffi, native.lib


def check_layouts(ffi: Any) -> None:
    """Fail loudly if a C record and its NumPy dtype disagree (field names, offsets, size)."""
    for ctype, dtype in (("pm_stats", STATS_DTYPE), ("pm_event", TRACE_DTYPE),
                         ("pm_op", BATCH_DTYPE)):
        c_fields = [(name, f.offset) for name, f in ffi.typeof(ctype).fields]
        np_fields = [(name, dtype.fields[name][1]) for name in dtype.names]
        if c_fields != np_fields or ffi.sizeof(ctype) != dtype.itemsize:
            raise BuildError(f"C struct {ctype} does not match its NumPy dtype: {c_fields} vs "
                             f"{np_fields}. Rebuild the C core from matching sources.")


def _config(ffi: Any, cfg: MachineConfig, mem: Memory, timed: bool = True) -> Any:
    c = ffi.new("pm_config *")
    cc = cfg.cache
    c.cores = cfg.cores
    c.l1_sets, c.l1_ways, c.l1_ns = cc.l1.sets, cc.l1.ways, float(cc.l1.latency_ns)
    c.l2_sets, c.l2_ways, c.l2_ns = cc.l2.sets, cc.l2.ways, float(cc.l2.latency_ns)
    c.llc_sets, c.llc_ways, c.llc_ns = cc.llc.sets, cc.llc.ways, float(cc.llc.latency_ns)
    c.pm_read_ns, c.pm_write_ns = float(cfg.pm.read_ns), float(cfg.pm.write_ns)
    c.to_wpq_ns, c.banks, c.wpq_entries = float(cfg.pm.to_wpq_ns), cfg.pm.banks, cfg.pm.wpq_entries
    c.merge_writes = 1 if cfg.pm.merge_writes else 0
    c.dram_ns = float(cfg.dram.latency_ns)
    k = cfg.costs
    c.store_ns, c.flush_ns, c.fence_ns = float(k.store_ns), float(k.flush_ns), float(k.fence_ns)
    c.rmw_ns, c.pcommit_ns, c.snoop_ns = float(k.rmw_ns), float(k.pcommit_ns), float(k.snoop_ns)
    c.domain = _DOMAINS[cfg.domain]
    c.fixed_barrier = 1 if cfg.barrier == "fixed" else 0
    c.barrier_ns = float(cfg.barrier_ns)
    c.nregions = len(mem.regions)
    c.pm_index = mem.pm_index
    c.timed = 1 if timed else 0
    h = cfg.htm
    c.htm_read_lines, c.htm_write_lines = h.read_set_lines, h.write_set_lines
    c.htm_any_flush = 1 if h.abort_on_any_flush else 0
    c.xbegin_ns, c.xend_ns, c.xabort_ns = float(h.xbegin_ns), float(h.xend_ns), float(h.abort_ns)
    c.rdtsc_ns, c.tsc_ghz = float(h.rdtsc_ns), float(h.tsc_ghz)
    for core in range(cfg.cores):
        c.tsc_skew[core] = h.skew(core)
    k = cfg.core
    c.ooo = 1 if k.model == "ooo" else 0
    c.sb_entries, c.lf_entries = k.store_buffer, k.fill_buffers
    c.load_issue_ns = float(k.load_issue_ns)
    core_of, sib = k.placement(cfg.cores)
    c.ncaches, c.smt_speed = max(core_of) + 1, float(k.smt_speed)
    for t in range(cfg.cores):
        c.core_of[t], c.sib[t] = core_of[t], sib[t]
    p = cfg.prefetch
    c.pf_stream, c.pf_adjacent = int(p.stream), int(p.adjacent)
    c.pf_distance, c.pf_degree, c.pf_streams = p.distance, p.degree, p.streams
    d = cfg.pm.dimm
    c.dimms, c.xpb_lines = d.dimms, d.buffer_lines
    c.il_shift = (d.interleave_kib * 1024 // 64).bit_length() - 1
    c.media_read_ns, c.media_read_occ_ns = float(d.media_read_ns), float(d.media_read_occ_ns)
    c.media_write_ns = float(d.media_write_ns)
    c.read_priority = int(d.read_priority)
    c.combine_writers, c.contention = d.combine_writers, float(d.contention)
    c.read_contention = float(d.read_contention)
    c.contention_window_ns = float(d.contention_window_ns)
    c.seed = cfg.seed
    return c


class CEngine(WideOps):
    """The C engine. Every instruction takes the thread id first, exactly like PyEngine. Its
    wide instructions run in one C call each; what that call cannot take goes the reference's
    way (:class:`~.reference.WideOps`), one instruction at a time, for the same effect and
    error."""

    backend = "c"

    load: Callable[[int, int], int]
    load_many: Callable[[int, list[int]], list[int]]
    run_ahead: Callable[[int, list[int]], None]
    store: Callable[[int, int, int], None]
    store_words: Callable[[int, int, Any], None]
    load_words: Callable[[int, int, int], list[int]]
    clwb_many: Callable[[int, Any], None]
    ntstore: Callable[[int, int, int], None]
    clflush: Callable[[int, int], None]
    clflushopt: Callable[[int, int], None]
    clwb: Callable[[int, int], None]
    sfence: Callable[[int], None]
    mfence: Callable[[int], None]
    pcommit: Callable[[int], None]
    cas: Callable[[int, int, int, int], int]
    xchg: Callable[[int, int, int], int]
    work: Callable[[int, float], None]
    mark: Callable[[int, int, int], None]
    persist_barrier: Callable[[int], None]
    get_clock: Callable[[int], float]
    set_clock: Callable[[int, float], None]
    xbegin: Callable[[int], None]
    xend: Callable[[int], int]
    xabort: Callable[[int, int], None]
    xstatus: Callable[[int], int]
    rdtsc: Callable[[int], int]

    def __init__(self, cfg: MachineConfig, timed: bool = True) -> None:
        ffi, lib = _lib()
        check_layouts(ffi)
        self.cfg = cfg
        self.timed = timed
        self.mem = Memory(cfg)
        self._ffi, self._lib = ffi, lib
        self._words = [ffi.from_buffer("uint64_t[]", a) for a in self.mem.arrays]
        bases = ffi.new("uint64_t[]", [r.base for r in self.mem.regions])
        sizes = ffi.new("uint64_t[]", [r.size for r in self.mem.regions])
        raw = lib.pm_machine_new(_config(ffi, cfg, self.mem, timed), bases, sizes,
                                 ffi.new("uint64_t *[]", self._words))
        if raw == ffi.NULL:
            raise MemoryError("not enough memory for the machine's caches; use smaller caches "
                              "or fewer cores")
        self._m = ffi.gc(raw, lib.pm_machine_free)
        self._bind()

    # -- errors ----------------------------------------------------------------------------------
    def _diagnose(self, tid: int, addr: Any, flush: bool = False, *words: tuple[str, Any]) -> None:
        """Raise the reference engine's error for a bad address, then for a bad thread, then
        for a bad ``(what, value)`` word, in that order."""
        if addr is not None:
            if addr.__class__ is not int:
                addr = as_int(addr, "address", valid=ADDRESS)
            self.mem.locate(addr & ~7 if flush else addr)
        n = self.cfg.cores
        if not isinstance(tid, int) or not 0 <= tid < n:
            raise ConfigError(f"thread {tid} does not exist: the machine has {n} cores "
                              f"(threads 0..{n - 1})")
        for what, v in words:
            if what == "marker code":
                as_int(v, what, 0xFFFFFFFF, "an int in 0..2**32-1")
            else:
                as_word(v, what)

    def _fail(self, code: int, tid: int, addr: int | None, flush: bool = False) -> NoReturn:
        if code == self._lib.PM_ERR_NOMEM:
            raise MemoryError("out of memory: the persistence trace (or a hardware "
                              "transaction's read/write set) cannot grow; call reset_trace() (or "
                              "Machine.reset_trace) between phases of a long run")
        self._diagnose(tid, addr, flush)
        raise AssertionError(f"C engine error {code} for thread {tid}, address {addr!r} "
                             "that the checks accept")

    # -- instructions: closures over the cffi functions (the per-instruction hot path) -----------
    def _bind(self) -> None:
        m, lib = self._m, self._lib
        fail, diagnose = self._fail, self._diagnose
        err = lib.pm_error

        def with_addr(f: Any, flush: bool = False) -> Any:
            def op(tid: int, addr: int) -> None:
                if addr.__class__ is not int:
                    diagnose(tid, addr, flush)
                    addr = int(addr)
                try:
                    code = f(m, tid, addr)
                except (OverflowError, TypeError):
                    diagnose(tid, addr, flush)
                    raise
                if code:
                    fail(code, tid, addr, flush)
            return op

        def with_value(f: Any) -> Any:
            def op(tid: int, addr: int, value: int) -> None:
                if addr.__class__ is not int or value.__class__ is not int:
                    diagnose(tid, addr, False, ("value", value))
                    addr, value = int(addr), int(value)
                try:
                    code = f(m, tid, addr, value)
                except (OverflowError, TypeError):
                    diagnose(tid, addr, False, ("value", value))
                    raise
                if code:
                    fail(code, tid, addr)
            return op

        f_load, f_cas, f_xchg = lib.pm_load, lib.pm_cas, lib.pm_xchg
        f_many, f_ahead = lib.pm_load_many, lib.pm_run_ahead
        ffi = self._ffi

        def grouped(tid: int, addrs: list[int], values: bool) -> Any:
            """One call of pm_load_many (values) or pm_run_ahead, errors as the reference's."""
            n = len(addrs)
            out = ffi.new("uint64_t[]", n) if values else None
            try:
                arr = ffi.new("uint64_t[]", addrs)
                code = f_many(m, tid, arr, n, out) if values else f_ahead(m, tid, arr, n)
            except (OverflowError, TypeError):
                for a in addrs:
                    diagnose(tid, a)
                raise
            if code:
                if code != lib.PM_ERR_NOMEM:
                    for a in addrs:
                        diagnose(tid, a)
                fail(code, tid, None)
            return out

        def load_many(tid: int, addrs: list[int]) -> list[int]:
            """Independent loads (see PyEngine.load_many)."""
            return list(grouped(tid, addrs, True))

        f_words_ld, unpack = lib.pm_load_words, ffi.unpack
        buf = [ffi.new("uint64_t[]", 64), 64]  # the values' buffer, grown as needed

        def load_words(tid: int, addr: int, n: int) -> list[int]:
            """PyEngine.load_words in one call without an address list; anything the call
            cannot take goes the reference's way (load_many), for the same errors."""
            if addr.__class__ is int and n.__class__ is int and n >= 0:
                if n > buf[1]:
                    buf[0], buf[1] = ffi.new("uint64_t[]", n), n
                out = buf[0]
                try:
                    code = f_words_ld(m, tid, addr, n, out)
                except (OverflowError, TypeError):
                    code = -1
                if not code:
                    return unpack(out, n)
                if code == lib.PM_ERR_NOMEM:
                    fail(code, tid, None)
            return WideOps.load_words(self, tid, addr, n)

        def run_ahead(tid: int, addrs: list[int]) -> None:
            """The misses of ``load_many`` without values (see PyEngine.run_ahead)."""
            grouped(tid, addrs, False)

        def load(tid: int, addr: int) -> int:
            if addr.__class__ is not int:
                diagnose(tid, addr)
                addr = int(addr)
            try:
                v = f_load(m, tid, addr)
            except (OverflowError, TypeError):
                diagnose(tid, addr)
                raise
            if v == _U64_MAX and err(m):
                fail(err(m), tid, addr)
            return v

        def cas(tid: int, addr: int, expected: int, new: int) -> int:
            """Compare-and-swap; returns the old value (the swap happened iff it equals expected)."""
            words = (("expected value", expected), ("value", new))
            if addr.__class__ is not int or expected.__class__ is not int or \
                    new.__class__ is not int:
                diagnose(tid, addr, False, *words)
                addr, expected, new = int(addr), int(expected), int(new)
            try:
                v = f_cas(m, tid, addr, expected, new)
            except (OverflowError, TypeError):
                diagnose(tid, addr, False, *words)
                raise
            if v == _U64_MAX and err(m):
                fail(err(m), tid, addr)
            return v

        def xchg(tid: int, addr: int, value: int) -> int:
            if addr.__class__ is not int or value.__class__ is not int:
                diagnose(tid, addr, False, ("value", value))
                addr, value = int(addr), int(value)
            try:
                v = f_xchg(m, tid, addr, value)
            except (OverflowError, TypeError):
                diagnose(tid, addr, False, ("value", value))
                raise
            if v == _U64_MAX and err(m):
                fail(err(m), tid, addr)
            return v

        def no_addr(f: Any) -> Any:
            def op(tid: int) -> None:
                try:
                    code = f(m, tid)
                except (OverflowError, TypeError):
                    diagnose(tid, None)
                    raise
                if code:
                    fail(code, tid, None)
            return op

        f_work, f_mark, f_get, f_set = lib.pm_work, lib.pm_mark, lib.pm_get_clock, lib.pm_set_clock
        bad_value = lib.PM_ERR_VALUE

        def work(tid: int, ns: float) -> None:
            if ns.__class__ is not float and ns.__class__ is not int:
                diagnose(tid, None)
                ns = as_ns(ns)
            try:
                code = f_work(m, tid, ns)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                as_ns(ns)
                raise
            if code:
                if code == bad_value:
                    diagnose(tid, None)
                    as_ns(ns)
                fail(code, tid, None)

        def mark(tid: int, code: int, value: int) -> None:
            words = (("marker code", code), ("marker value", value))
            if value.__class__ is not int or not isinstance(code, int):  # codes are IntEnums
                diagnose(tid, None, False, *words)
                code, value = int(code), int(value)
            try:
                rc = f_mark(m, tid, code, value)
            except (OverflowError, TypeError):
                diagnose(tid, None, False, *words)
                raise
            if rc:
                fail(rc, tid, None)

        f_dev = lib.pm_devwrite

        def devwrite(tid: int, addr: int, value: int, drained: int = 0) -> None:
            """A device write beside the caches: PM and the trace only (see the reference)."""
            try:
                code = f_dev(m, tid, addr, value, devwrite_aux(drained))
            except (OverflowError, TypeError):
                diagnose(tid, addr, False, ("value", value))
                raise
            if code:
                diagnose(tid, addr, False, ("value", value))
                if code == lib.PM_ERR_ADDR:
                    raise ConfigError(f"devwrite: address {addr:#x} is not in PM; a device "
                                      "write goes to the persistent log area")
                fail(code, tid, addr)

        def get_clock(tid: int) -> float:
            try:
                t = f_get(m, tid)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                raise
            if t != t:  # NaN: a bad thread id, or a clock made NaN by the caller
                diagnose(tid, None)
            return t

        def set_clock(tid: int, t: float) -> None:
            try:
                code = f_set(m, tid, t)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                check_clock(t)
                raise
            if code:
                if code == bad_value:
                    diagnose(tid, None)
                    check_clock(t)
                fail(code, tid, None)

        f_xbegin, f_xend, f_xabort = lib.pm_xbegin, lib.pm_xend, lib.pm_xabort
        f_xstatus, f_rdtsc = lib.pm_xstatus, lib.pm_rdtsc
        htm_state = lib.PM_ERR_HTM

        def xbegin(tid: int) -> None:
            """Start a hardware transaction on thread ``tid``."""
            try:
                code = f_xbegin(m, tid)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                raise
            if code:
                if code == htm_state:
                    raise nested_error(tid)
                fail(code, tid, None)

        def xend(tid: int) -> int:
            """Commit (0) or end an aborted transaction (its abort status)."""
            try:
                r = f_xend(m, tid)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                raise
            if r < 0:
                if -r == htm_state:
                    raise outside_error(tid)
                fail(-r, tid, None)
            return r

        def xabort(tid: int, code: int) -> None:
            """Abort a live transaction with an 8-bit code (nothing outside one)."""
            if code.__class__ is not int or not 0 <= code <= 0xFF:
                diagnose(tid, None)
                code = as_code(code)
            try:
                rc = f_xabort(m, tid, code)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                raise
            if rc:
                fail(rc, tid, None)

        def xstatus(tid: int) -> int:
            """0 while live or outside a transaction, else a doomed transaction's status."""
            try:
                r = f_xstatus(m, tid)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                raise
            if r < 0:
                fail(-r, tid, None)
            return r

        def rdtsc(tid: int) -> int:
            """The thread's TSC (never conflicts)."""
            try:
                v = f_rdtsc(m, tid)
            except (OverflowError, TypeError):
                diagnose(tid, None)
                raise
            if v == _U64_MAX and err(m):
                fail(err(m), tid, None)
            return v

        f_words, f_clwbs = lib.pm_store_words, lib.pm_clwb_many
        done = ffi.new("size_t *")
        store1 = with_value(lib.pm_store)
        clwb1 = with_addr(lib.pm_clwb, True)

        def store_words(tid: int, addr: int, values: Any) -> None:
            """PyEngine.store_words in one call; anything the call cannot take (a non-int
            word or address, a bad thread) runs word by word, for the same effect and error."""
            if values.__class__ is not list:
                values = list(values)
            if addr.__class__ is int:
                try:
                    code = f_words(m, tid, addr, values, len(values), done)
                except (OverflowError, TypeError):
                    code = -1
                if not code:
                    return
                if code > 0:
                    a = addr + 8 * done[0]
                    diagnose(tid, a, False, ("value", values[done[0]]))
                    fail(code, tid, a)
            WideOps.store_words(self, tid, addr, values)

        def clwb_many(tid: int, addrs: Any) -> None:
            """PyEngine.clwb_many in one call (fallback and errors as store_words)."""
            if addrs.__class__ is not list:
                addrs = list(addrs)
            try:
                code = f_clwbs(m, tid, addrs, len(addrs), done)
            except (OverflowError, TypeError):
                code = -1
            if not code:
                return
            if code > 0:
                a = addrs[done[0]]
                diagnose(tid, a, True)
                fail(code, tid, a, True)
            WideOps.clwb_many(self, tid, addrs)

        self.store_words, self.clwb_many, self.load_words = store_words, clwb_many, load_words
        self.xbegin, self.xend, self.xabort, self.xstatus, self.rdtsc = (
            xbegin, xend, xabort, xstatus, rdtsc)
        self.load, self.cas, self.xchg, self.load_many = load, cas, xchg, load_many
        self.run_ahead = run_ahead
        self.store, self.ntstore = store1, with_value(lib.pm_ntstore)
        self.clflush = with_addr(lib.pm_clflush, True)
        self.clflushopt = with_addr(lib.pm_clflushopt, True)
        self.clwb = clwb1
        self.sfence, self.mfence = no_addr(lib.pm_sfence), no_addr(lib.pm_mfence)
        self.pcommit, self.persist_barrier = no_addr(lib.pm_pcommit), no_addr(lib.pm_persist_barrier)
        self.work, self.mark, self.devwrite = work, mark, devwrite
        self.get_clock, self.set_clock = get_clock, set_clock

    def clock_reader(self, tid: int) -> Callable[[], float]:
        """``get_clock`` of a thread known to exist, as one C call (the Cpu's hot path: every
        yield check reads it); a bad ``tid`` gets the usual error here, once."""
        self._diagnose(tid, None)
        return partial(self._lib.pm_get_clock, self._m, tid)

    def htm_exempt(self, addr: int) -> None:
        """Make the line of ``addr`` conflict-exempt for hardware transactions (pmsim.hw.htm)."""
        self.mem.locate(int(addr) & ~7)
        if self._lib.pm_htm_exempt(self._m, int(addr)):
            raise ConfigError(f"htm_exempt: at most {EXEMPT_MAX} lines can be conflict-exempt; "
                              "put the exempt words on fewer lines")

    # -- state -----------------------------------------------------------------------------------
    def reset_volatile(self) -> None:
        """Power cycle: empty caches and WPQ, zero clocks, stats, trace and DRAM; keep PM."""
        self._lib.pm_reset_volatile(self._m)

    def get_stats(self) -> np.ndarray:
        """Per-thread statistics (STATS_DTYPE), ``time_ns`` holding each thread's clock."""
        out = np.zeros(self.cfg.cores, dtype=STATS_DTYPE)
        self._lib.pm_get_stats(self._m, self._ffi.cast("pm_stats *", self._ffi.from_buffer(out)))
        return out

    def count(self, name: str) -> int:
        """The sum over threads of the counter ``name`` (e.g. ``"stores"``), in one C call."""
        check_counter(name)
        return int(self._lib.pm_stat_sum(self._m, STATS_DTYPE.fields[name][1]))

    def trace(self) -> np.ndarray:
        """A copy of the persistence trace (TRACE_DTYPE)."""
        n = self._lib.pm_trace_len(self._m)
        out = np.zeros(n, dtype=TRACE_DTYPE)
        if n:
            self._lib.pm_trace_copy(self._m, self._ffi.cast("pm_event *", self._ffi.from_buffer(out)),
                                    n)
        return out

    def reset_trace(self) -> None:
        self._lib.pm_trace_reset(self._m)

    def trace_len(self) -> int:
        return int(self._lib.pm_trace_len(self._m))

    # -- batches ---------------------------------------------------------------------------------
    def run_batch(self, ops: np.ndarray) -> np.ndarray:
        """Run a batch of BATCH_DTYPE operations in one C call; return the loaded/old values.

        A failing op raises the reference's error after the ops before it have run; the
        error carries a note naming the op's index.
        """
        if not isinstance(ops, np.ndarray) or ops.dtype != BATCH_DTYPE or ops.ndim != 1:
            got = ops.dtype if isinstance(ops, np.ndarray) else type(ops).__name__
            raise ConfigError(f"run_batch needs a 1-D NumPy array of BATCH_DTYPE, got {got}; "
                              "build it with np.zeros(n, dtype=BATCH_DTYPE)")
        n = len(ops)
        out = np.zeros(n, dtype=np.uint64)
        if n == 0:
            return out
        ops = np.ascontiguousarray(ops)
        ffi = self._ffi
        i = self._lib.pm_run_batch(self._m, ffi.cast("pm_op *", ffi.from_buffer(ops)), n,
                                   ffi.cast("uint64_t *", ffi.from_buffer(out)))
        if i >= 0:
            self._batch_error(int(i), ops[i])
        return out

    def _batch_error(self, i: int, o: np.void) -> NoReturn:
        code = self._lib.pm_error(self._m)
        op = int(o["op"])
        if code == self._lib.PM_ERR_OP:
            raise ConfigError(f"batch op {i}: unknown op code {op}")
        if code == self._lib.PM_ERR_VALUE and op in (OP_WORK, OP_XABORT):
            try:
                if op == OP_WORK:
                    as_ns(float(np.array(o["arg"], np.uint64).view(np.float64)))
                else:
                    as_code(int(o["aux"]))
            except ConfigError as e:
                e.add_note(f"raised by batch op {i} (op code {op})")
                raise
        if code == self._lib.PM_ERR_HTM:
            tid = int(o["tid"])
            e = nested_error(tid) if op == OP_XBEGIN else outside_error(tid)
            e.add_note(f"raised by batch op {i} (op code {op})")
            raise e
        addr = int(o["addr"]) if op in _ADDR_OPS else None
        try:
            self._fail(code, int(o["tid"]), addr, op in _FLUSH_OPS)
        except (ConfigError, MemoryError) as e:
            e.add_note(f"raised by batch op {i} (op code {op})")
            raise
