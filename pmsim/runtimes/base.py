"""The runtime interface: a transaction object and the base class every protocol extends.

A runtime is bound to a :class:`~pmsim.machine.Machine` and a :class:`~.layout.Layout`. The
application sees objects of N 8-byte fields, named by an integer handle (``obj``) and a field
index, the way the paper's API names ``(obj, field)``::

    tx = yield from rt.begin(cpu, locks=[lock])   # takes the locks (deferred release)
    v = tx.read(obj, 0); tx.write(obj, 0, v + 1)
    node = tx.alloc(3); tx.free(old)
    yield from rt.commit(tx)                      # releases the locks after durability

Every runtime emits markers: TX_BEGIN at begin, TX_COMMIT when the commit-point store is
issued, TX_DURABLE when commit returns, TX_ABORT; txid = (tid << 32) | per-thread sequence.
Its persistence protocol is written as named steps (:mod:`.steps`), so mutations
(:mod:`.mutation`) act on it without touching its code; allocation and the allocation log
live in :mod:`.alloclog`, the registries in :mod:`.registry`.

Writes to an object allocated by the same transaction go straight to its home location and
are flushed before the first commit barrier: the block is unreachable (its bit is clear) unless
the transaction commits, so they need no log [A].

Computation the results depend on (checksums, hash lookups, chain walks, copying) is charged
with ``cpu.work`` from :class:`~.costs.RuntimeCosts`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigError, PmsimError, UnsupportedDomainError
from ..trace import Mark
from .alloc import Allocator
from .alloclog import AllocLog
from .background import BackgroundThreads
from .costs import RuntimeCosts
from .descriptor import (
    ABORTED,
    COMMITTED,
    COUNT_BITS,
    G_EPOCH,
    G_FINGERPRINT,
    G_MAGIC,
    H_NALLOC,
    H_NWSET,
    H_STATE,
    H_TAIL,
    IDLE,
    MAGIC,
    RUNNING,
    count_of,
    lines_of,
    state_of,
)
from .layout import Layout, PMSpec, block_size, plan
from .steps import PersistSteps, StepHook

PB_DOMAINS = ("pdom0", "pdom1")
"""Domains in which dropping a persist barrier is a bug (under PDOM-2 a PB is a nop)."""


class Tx:
    """One running transaction. Runtime subclasses implement the data accesses."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        self.rt = rt
        self.cpu = cpu
        self.tid: int = cpu.tid
        self.txid = txid
        self.locks: list[tuple[Any, Any]] = []
        self.alog: list[int] = []  # allocation-log entries (addr | ALLOC/FREE), in order
        self.allocs: list[int] = []
        self.frees: list[int] = []
        self.fresh: set[int] = set()  # objects allocated by this transaction
        self.dirty: set[int] = set()  # lines to flush before the first commit barrier
        self.writes = 0  # TXN_WRITE calls that were logged (W)
        self.start = 0.0
        self.done = False
        self.lock_table: Sequence[Any] = ()  # the workload's locks, for tx.lock (set at begin)

    # -- the object API (implemented by each runtime) --------------------------------------------
    def read(self, obj: int, field: int) -> int:
        return self.read_words(obj, field, 1)[0]

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        raise NotImplementedError

    def read_plain(self, obj: int, field: int, n: int) -> list[int]:
        """``n`` words loaded without the runtime's instrumentation, as a program's plain
        ``memcpy`` inside a transaction (STAMP's Labyrinth copies its grid so): hardware TM
        tracks such loads like any other, a software TM does not (they may see other
        transactions' uncommitted writes), locks protect them as usual. By default the
        runtime's own read."""
        return self.read_words(obj, field, n)

    def write(self, obj: int, field: int, value: int) -> None:
        self.write_words(obj, field, [value])

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        """One TXN_WRITE of ``len(values)`` consecutive fields."""
        raise NotImplementedError

    # -- helpers on top of the word API ---------------------------------------------------------
    def read_bytes(self, obj: int, offset: int, n: int) -> bytes:
        first, last = offset // 8, (offset + n + 7) // 8
        raw = np.array(self.read_words(obj, first, last - first), dtype="<u8").tobytes()
        return raw[offset - 8 * first: offset - 8 * first + n]

    def write_bytes(self, obj: int, offset: int, data: bytes) -> None:
        first, last = offset // 8, (offset + len(data) + 7) // 8
        buf = bytearray(np.array(self.read_words(obj, first, last - first), dtype="<u8").tobytes())
        buf[offset - 8 * first: offset - 8 * first + len(data)] = data
        self.write_words(obj, first, np.frombuffer(bytes(buf), dtype="<u8").tolist())

    def memset(self, obj: int, field: int, n: int, value: int) -> None:
        self.write_words(obj, field, [value] * n)

    def memcpy(self, dst: int, dfield: int, src: int, sfield: int, n: int) -> None:
        self.write_words(dst, dfield, self.read_words(src, sfield, n))

    def alloc(self, words: int) -> int:
        """pm_alloc: a new object of ``words`` fields (contents undefined until written)."""
        return self.rt._alloc(self, words)

    def free(self, obj: int) -> None:
        """pm_free: takes effect when the transaction commits."""
        self.rt._free(self, obj)

    @property
    def modified(self) -> bool:
        return bool(self.writes or self.alog or self.dirty)

    def pause(self) -> Iterable[Any]:
        """A point where the body lets other threads run (``yield from tx.pause()``).

        Lock-based runtimes need none (the locks serialize conflicting bodies), so this is an
        empty iterable and changes nothing; optimistic runtimes (HTM, STM) yield there once the
        thread is a quantum ahead, so live transactions overlap and can conflict.
        """
        return ()

    def lock(self, i: int) -> Iterable[Any]:
        """Take application lock ``i`` inside the body (``yield from tx.lock(i)``), e.g. hand
        over hand. Lock-based runtimes take the real lock; optimistic ones do nothing (the TM
        detects conflicts); with one thread there are no locks. See :meth:`Runtime.lock_in_body`."""
        return self.rt.lock_in_body(self, i)

    def unlock(self, i: int) -> Iterable[Any]:
        """Release application lock ``i`` (``yield from tx.unlock(i)``): at once on a runtime
        with ``lock_coupling``, else at the end of the transaction (strict 2PL)."""
        return self.rt.unlock_in_body(self, i)


Body = Callable[[Tx], Generator[Any, Any, bool | None] | bool | None]
"""A transaction body: reads and writes through ``tx``; returns False to abort (a user abort,
never retried) and anything else to commit. It may run several times (an optimistic runtime
re-executes it after a conflict) so it must act only through ``tx``, and every attempt must
do the same for the same data. A generator body may ``yield from tx.pause()``."""


class Runtime(PersistSteps, AllocLog, BackgroundThreads):
    """Base class: layout, allocator, markers, locks, named steps, background threads and
    invariants."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    mutations: ClassVar[tuple[Any, ...]] = ()
    """Data mutations of a mutant class (:mod:`.mutation`); empty for a correct runtime."""

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        self.check_domain(machine.config.domain)
        if layout.family != self.family:
            raise ConfigError(f"layout was planned for {layout.family!r}, not {self.family!r}: plan "
                              f"it with {type(self).__name__}.plan(...)")
        pm = machine.pm
        if layout.base < pm.base or layout.end > pm.end:
            raise ConfigError(
                f"the layout needs PM [{layout.base:#x}, {layout.end:#x}) ({layout.size} bytes) but "
                f"the machine's PM is [{pm.base:#x}, {pm.end:#x}): enlarge the PM region (e.g. "
                f"pmsim.runtimes.fit_pm(cfg, {layout.end - pm.base})) or shrink the workload")
        if layout.threads > machine.config.cores:
            raise ConfigError(f"the layout has {layout.threads} descriptors but the machine has "
                              f"{machine.config.cores} cores; use threads <= cores")
        self.m = machine
        self.layout = layout
        self.costs = costs or RuntimeCosts()
        self.heap = Allocator(machine, layout)
        t = layout.threads
        self.seq = [0] * t
        self.active: list[Tx | None] = [None] * t
        self.latencies: list[float] = []
        self.commit_order: list[int] = []  # txids in the order of their commit points
        self.commits = 0
        self.aborts = 0
        self.epoch = 1
        self._elide_in(machine.config.domain)
        if self.mutations:
            self.hook = StepHook(self.mutations)

    # -- layout ------------------------------------------------------------------------------
    @classmethod
    def obj_bytes(cls, words: int) -> int:
        """Bytes of a heap object with ``words`` fields."""
        return 8 * words

    @classmethod
    def static_stride(cls, words: int) -> int:
        return 8 * words

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return 0

    @classmethod
    def extra_heap(cls, spec: PMSpec, threads: int) -> dict[int, int]:
        return {}

    @classmethod
    def alloc_cap(cls, spec: PMSpec) -> int:
        return spec.max_tx_allocs

    @classmethod
    def fit_config(cls, cfg: Any, layout: Layout) -> Any:
        """The machine config ``cfg`` adapted to what this runtime needs beside PM for
        ``layout`` (e.g. a DRAM region large enough for a shadow copy); default: unchanged."""
        return cfg

    @classmethod
    def plan(cls, spec: PMSpec, threads: int, base: int = 0) -> Layout:
        """The layout this runtime family needs for ``spec`` with ``threads`` descriptors."""
        return plan(cls.family, spec, threads, base, obj_bytes=cls.obj_bytes,
                    stride_of=cls.static_stride, log_bytes=cls.log_bytes(spec),
                    alloc_cap=cls.alloc_cap(spec), extra_heap=cls.extra_heap(spec, threads))

    def static(self, name: str, i: int) -> int:
        """The handle of static object ``i`` of array ``name``."""
        return self.layout.static(name).obj(i)

    def crash_irrelevant(self) -> list[int]:
        """Addresses of 8-byte PM words that recovery neither needs nor lets change what it
        recovers (hints such as stale writer marks, which it resets). The crash fuzzer leaves
        stores to them out of the crash-state enumeration. Default: none."""
        return []

    def edge_providers(self) -> list[Any]:
        """Persist-order edge providers for the crash-state model (``provider(index, domain)
        -> edges``, see :mod:`crashfuzz.model`): the ordering the simulated hardware adds
        without a wait (LOC's META after its data). Default: none."""
        return []

    def counters(self) -> dict[str, float]:
        """The runtime's own cumulative counters (aborts by cause, stalls, batches...) for
        result tables; :func:`~pmsim.experiments.run_experiment` reports their change over
        the measured period as columns. Default: none."""
        return {}

    def facts(self) -> dict[str, float]:
        """Figures of the run's configuration that the runtime settled itself (a log it had to
        enlarge, say), reported beside the counters as they are, not as a change. Default:
        none."""
        return {}

    def _static_words(self, offset: int) -> list[int]:
        """The word at byte ``offset`` of every static object."""
        return [s.obj(i) + offset for s in self.layout.statics for i in range(s.count)]

    def reattach(self, machine: Any) -> Runtime:
        """A new instance of this runtime over the same layout (e.g. for recovery). Its txids
        continue this instance's sequence numbers, so transactions run after recovery never
        reuse a txid of the crashed run."""
        rt = type(self)(machine, self.layout, self.costs)
        rt.seq = list(self.seq)
        return rt

    # -- format and recovery -------------------------------------------------------------------
    def format(self, cpu: Any = None) -> None:
        """Initialise the persistent structures on a fresh machine.

        Uses untimed writes (``Machine.poke``): call it before tracing starts.
        """
        lay = self.layout
        pm = self.m.engine.mem.pm
        lo = (lay.base - self.m.pm.base) // 8
        pm[lo: lo + lay.size // 8] = 0
        self.m.poke(lay.base + 8 * G_MAGIC, MAGIC)
        self.m.poke(lay.base + 8 * G_FINGERPRINT, lay.fingerprint())
        self.m.poke(lay.base + 8 * G_EPOCH, 1)
        for d, log in zip(lay.desc, lay.log, strict=True):
            self.m.poke(d + 8 * H_TAIL, log)
        self._load()

    def _check_header(self) -> None:
        lay = self.layout
        if self.m.peek(lay.base + 8 * G_MAGIC) != MAGIC:
            raise PmsimError(f"PM at {lay.base:#x} holds no formatted {self.family} region: "
                             "call format() on a fresh machine first")
        if self.m.peek(lay.base + 8 * G_FINGERPRINT) != lay.fingerprint():
            raise ConfigError("the PM image was formatted with a different layout: recover with "
                              "the runtime's own layout (Runtime.reattach)")

    def _load(self) -> None:
        """Rebuild volatile state from PM (allocator lists, versions, epoch)."""
        self._check_header()
        self.epoch = self.m.peek(self.layout.base + 8 * G_EPOCH)
        self.heap.rebuild()

    def recover(self, cpu: Any) -> None:
        """Recovery over the PM image the machine holds; rebuilds volatile state."""
        self._check_header()
        cpu.mark(Mark.RECOVERY_BEGIN, 0)
        self._recover(cpu)
        self.end_steps(cpu.tid)
        cpu.mark(Mark.RECOVERY_END, 0)
        self._load()

    def _recover(self, cpu: Any) -> None:
        """The protocol's recovery steps (between the RECOVERY_BEGIN and _END markers)."""
        raise NotImplementedError

    # -- transactions --------------------------------------------------------------------------
    supported_domains: ClassVar[tuple[str, ...]] = ("pdom0", "pdom1", "pdom2")
    """Persistence domains the protocol is defined for (a hardware design may need the memory
    controller's queues in the domain). The runtime refuses to be built on a machine in any
    other (:meth:`check_domain`), so every command refuses it there; comparisons, sweeps, the
    kill matrix and ablation leave such cells out with a note."""
    domain_reason: ClassVar[str] = ""
    """What the protocol needs of the persistence domain, said when it is refused in another
    ("the memory controller's write pending queue in the persistence domain ...")."""
    domain_alternatives: ClassVar[tuple[str, ...]] = ()
    """Runtimes to suggest where this one is refused (``pmem-pcommit`` for ``pmem``); the
    protocol's own switches that support the domain are suggested too."""

    @classmethod
    def domain_problem(cls, domain: str) -> str:
        """Why this runtime refuses to run in ``domain``, with what to use instead; empty if
        it supports ``domain``."""
        if domain in cls.supported_domains:
            return ""
        name = cls.name or cls.__name__
        why = f"it needs {cls.domain_reason}" if cls.domain_reason else (
            "its protocol is not defined there")
        alts = _alternatives(cls, domain)
        use = f"use {' or '.join(cls.supported_domains)}" if cls.supported_domains else ""
        if alts:
            use += (", or " if use else "use ") + f"runtime {alts[0]!r}" + "".join(
                f" or {a!r}" for a in alts[1:]) + f" in {domain}"
        return (f"runtime {name!r} does not support persistence domain {domain}: {why}. It "
                f"supports {', '.join(cls.supported_domains) or 'no domain'}; {use}")

    @classmethod
    def check_domain(cls, domain: str) -> None:
        """Raise :class:`~pmsim.errors.UnsupportedDomainError` unless the runtime supports
        ``domain``; every runtime calls it when built on a machine."""
        problem = cls.domain_problem(domain)
        if problem:
            raise UnsupportedDomainError(problem, cls.name or cls.__name__, domain)

    default_order: ClassVar[str] = "line"
    """The persist order mode campaigns use when told ``order='auto'`` (crashfuzz.FuzzConfig):
    ``line`` for protocols written against line-granular flushes, ``px86`` where only the
    architecture's 8-byte atoms may be assumed (PM programs)."""
    durable: ClassVar[bool] = True
    """False for a volatile baseline (an upper bound with no persistence): not crash-fuzzed."""
    optimistic: ClassVar[bool] = False
    """True if the runtime may abort and re-execute a body (HTM, STM): it runs only workloads
    that define ``body``, through :meth:`run`."""
    lock_coupling: ClassVar[bool] = False
    """True if ``tx.unlock`` releases the lock at once (lock coupling), which the runtime's
    durability tracks (lock-based DUDETx's hand-off graph). Otherwise a lock taken in a body is
    held to the end of the transaction (strict 2PL, which undo/redo/COW recovery needs), and a
    workload whose body locks (``Workload.body_locks``) gets its coarse ``locks_of`` fallback."""

    def lock_in_body(self, tx: Tx, i: int) -> Generator[Any, Any, None]:
        """``tx.lock(i)``: take the workload's lock ``i`` unless this transaction holds it. An
        optimistic runtime, or a run without locks (one thread), does nothing."""
        table = tx.lock_table
        if self.optimistic or not table:
            return
        lock = self._table_lock(tx, i)
        if any(held is lock for held, _ in tx.locks):
            return
        req = yield from tx.cpu.acquire(lock)
        tx.locks.append((lock, req))

    def unlock_in_body(self, tx: Tx, i: int) -> Generator[Any, Any, None]:
        """``tx.unlock(i)``: without lock coupling the release waits for the end of the
        transaction (its locks are released after commit or abort)."""
        if tx.lock_table and not self.optimistic:
            self._table_lock(tx, i)
        yield from ()

    @staticmethod
    def _table_lock(tx: Tx, i: int) -> Any:
        table = tx.lock_table
        if not 0 <= i < len(table):
            raise ConfigError(f"tx.lock({i}): the workload has {len(table)} locks (nlocks()); "
                              "use an index below it")
        return table[i]

    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Run one transaction of ``body``; how is the runtime's choice.

        The base (lock-based) version takes ``locks``, begins, calls ``on_begin(tx)``, runs the
        body once and commits, or aborts if it returned False. An optimistic runtime overrides
        this to retry the body; ``locks`` are then only a hint it may ignore.
        """
        tx = yield from self.begin(cpu, locks)
        if on_begin is not None:
            on_begin(tx)
        res = body(tx)
        if isinstance(res, Generator):
            res = yield from res
        if res is False:
            yield from self.abort(tx)
        else:
            yield from self.commit(tx)
        return tx

    def begin(self, cpu: Any, locks: Iterable[Any] = ()) -> Generator[Any, Any, Tx]:
        """Start a transaction on ``cpu``'s thread after taking ``locks`` (in the given order)."""
        tid = cpu.tid
        if tid >= self.layout.threads:
            raise ConfigError(f"thread {tid} has no descriptor: the layout has "
                              f"{self.layout.threads}; plan it with more threads")
        if self.active[tid] is not None:
            raise PmsimError(f"thread {tid} already runs transaction {self.active[tid].txid:#x}: "
                             "commit or abort it before beginning another")
        start = cpu.clock
        held = []
        for lock in locks:
            req = yield from cpu.acquire(lock)
            held.append((lock, req))
        self.seq[tid] += 1
        txid = (tid << 32) | self.seq[tid]
        tx = self._new_tx(cpu, txid)
        tx.locks = held
        tx.start = start
        self.active[tid] = tx
        cpu.mark(Mark.TX_BEGIN, txid)
        self._begin(tx)
        return tx

    def commit(self, tx: Tx) -> Generator[Any, Any, None]:
        """Make the transaction durable, then release its locks."""
        self._check_live(tx)
        self._commit(tx)
        self.end_steps(tx.tid)
        self.commits += 1
        self.commit_order.append(tx.txid)
        tx.cpu.mark(Mark.TX_DURABLE, tx.txid)
        yield from self._finish(tx)

    def abort(self, tx: Tx) -> Generator[Any, Any, None]:
        """Roll the transaction back, then release its locks."""
        self._check_live(tx)
        self._abort(tx)
        self.end_steps(tx.tid)
        self.aborts += 1
        tx.cpu.mark(Mark.TX_ABORT, tx.txid)
        yield from self._finish(tx)

    def _check_live(self, tx: Tx) -> None:
        if tx.done or self.active[tx.tid] is not tx:
            raise PmsimError(f"transaction {tx.txid:#x} already ended; begin a new one")

    def _finish(self, tx: Tx) -> Generator[Any, Any, None]:
        tx.done = True
        self.active[tx.tid] = None
        self.latencies.append(tx.cpu.clock - tx.start)
        for lock, req in reversed(tx.locks):
            yield from tx.cpu.release(lock, req)

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        raise NotImplementedError

    def _begin(self, tx: Tx) -> None:
        raise NotImplementedError

    def _commit(self, tx: Tx) -> None:
        raise NotImplementedError

    def _abort(self, tx: Tx) -> None:
        raise NotImplementedError

    # -- functional access (untimed) -----------------------------------------------------------
    def field_addr(self, obj: int, field: int) -> int:
        """Home address of a field (through the COW wrapper for COW)."""
        return obj + 8 * field

    def peek(self, obj: int, field: int) -> int:
        """The committed value of a field as recovery left it (untimed)."""
        return self.m.peek(self.field_addr(obj, field))

    def peek_words(self, obj: int, field: int, n: int) -> list[int]:
        return [self.peek(obj, field + i) for i in range(n)]

    def peek_static(self, name: str) -> np.ndarray:
        """All fields of a static array as a ``(count, words)`` uint64 array (untimed)."""
        s = self.layout.static(name)
        pm = self.m.engine.mem.pm
        lo = (s.base - self.m.pm.base) // 8 + self._field0_words
        st = s.stride // 8
        if lo + s.count * st <= pm.size:  # one strided view of the array's words
            self.m.note_reads(range(lo, lo + s.count * st))
            return pm[lo: lo + s.count * st].reshape(s.count, st)[:, :s.words].copy()
        idx = lo + np.arange(s.count, dtype=np.int64)[:, None] * st + np.arange(s.words)[None, :]
        self.m.note_reads(idx.ravel())
        return pm[idx]

    _field0_words: ClassVar[int] = 0

    def init_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        """Set initial application data before tracing (untimed; for workload setup)."""
        for i, v in enumerate(values):
            self.m.poke(self.field_addr(obj, field + i), v)

    def blocks_of(self, obj: int) -> list[int]:
        """Heap blocks a live heap object owns (for the allocator invariant)."""
        return [obj]

    # -- invariants ----------------------------------------------------------------------------
    def check_invariants(self, live: Iterable[int] = ()) -> list[str]:
        """The runtime's invariants after recovery; ``live`` lists the application's live heap
        objects. Returns human-readable violations (empty when all hold)."""
        errs: list[str] = []
        lay = self.layout
        for t, d in enumerate(lay.desc):
            st = state_of(self.m.peek(d + 8 * H_STATE))
            if st != IDLE:
                errs.append(f"descriptor {t} is in state {st}, not IDLE")
            if count_of(self.m.peek(d + 8 * H_NALLOC)):
                errs.append(f"descriptor {t}: allocation log not reset")
        errs.extend(self._check_logs())
        owned = self._runtime_blocks()
        for obj in live:
            try:
                self.heap.owner(obj)
                blocks = self.blocks_of(obj)
            except PmsimError:
                errs.append(f"live object {obj:#x} is not a heap block")
                continue
            for b in blocks:
                if b in owned:
                    errs.append(f"block {b:#x} is owned by objects {owned[b]:#x} and {obj:#x} "
                                "(double allocation)")
                owned[b] = obj
        bits = self.heap.allocated()
        for b in sorted(set(owned) - bits):
            errs.append(f"block {b:#x} of live object {owned[b]:#x} is marked free")
        for b in sorted(bits - set(owned)):
            errs.append(f"block {b:#x} is marked allocated but unreachable (leak)")
        vfree = self.heap.volatile_free() if bits and sum(c.nblocks for c in lay.heap) <= 1 << 16 \
            else set()
        for b in sorted(vfree & bits):
            errs.append(f"block {b:#x} is allocated but on a volatile free list")
        return errs

    def _check_logs(self) -> list[str]:
        return []

    def _runtime_blocks(self) -> dict[int, int]:
        """Heap blocks the runtime itself keeps reachable (block -> owning object)."""
        return {}


def _alternatives(cls: type[Runtime], domain: str) -> list[str]:
    """Registered runtimes to suggest for ``domain`` instead of ``cls``: its declared
    alternatives, then the switches of its protocol family (not mutants or fuzzing variants)
    that support ``domain`` and are durable if ``cls`` is."""
    from .registry import MUTANTS, RUNTIMES, get_runtime, is_fuzz_variant  # lazy: it imports us

    out = [n for n, c in RUNTIMES.items() if cls.family and c.family == cls.family
           and n not in MUTANTS and not is_fuzz_variant(n) and domain in c.supported_domains
           and (c.durable or not cls.durable)]
    out += [n for n in cls.domain_alternatives if domain in get_runtime(n).supported_domains]
    return list(dict.fromkeys(out))


__all__ = [
    "ABORTED", "COMMITTED", "COUNT_BITS", "G_EPOCH", "H_NALLOC", "H_NWSET", "H_STATE", "H_TAIL",
    "IDLE", "PB_DOMAINS", "RUNNING", "Runtime", "RuntimeCosts", "Tx", "block_size", "count_of",
    "lines_of", "state_of",
]


class OptimisticRuntime(Runtime):
    """Base of runtimes that may abort and re-execute a body (HTM, STM, DUDETx's Perform):
    they run transactions only through :meth:`Runtime.run`, so the direct calls are refused."""

    optimistic = True

    def begin(self, cpu: Any, locks: Iterable[Any] = ()) -> Generator[Any, Any, Tx]:
        """Refused: the runtime must be able to re-execute the transaction."""
        raise ConfigError(
            f"runtime {self.name!r} is optimistic: it re-executes a transaction after a "
            "conflict, so it runs only workloads that define body(tx, op) (and locks_of(op)), "
            "through Runtime.run; this workload overrides transaction() and calls rt.begin() "
            "itself. Define body() instead, or use a lock-based runtime (undo, redo, cow)")

    def commit(self, tx: Tx) -> Generator[Any, Any, None]:
        """Refused: :meth:`run` commits when the body returns."""
        raise ConfigError(f"runtime {self.name!r} commits a transaction when its body returns "
                          "(return False to abort); do not call rt.commit/rt.abort in a body")

    abort = commit

    def _next_txid(self, cpu: Any) -> int:
        """The txid of a new transaction on ``cpu``'s thread (refused if the layout has no
        per-thread state for it or it already runs one)."""
        tid = cpu.tid
        if tid >= self.layout.threads:
            raise ConfigError(f"thread {tid} has no per-thread descriptor or log: the layout "
                              f"has {self.layout.threads}; plan it with more threads")
        if self.active[tid] is not None:
            raise PmsimError(f"thread {tid} already runs transaction {self.active[tid].txid:#x}: "
                             "transactions do not nest")
        self.seq[tid] += 1
        return (tid << 32) | self.seq[tid]
