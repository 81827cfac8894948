"""The runtime interface shared by undo, redo and copy-on-write, and the runtime registry.

A runtime is bound to a :class:`~pmsim.machine.Machine` and a :class:`~.layout.Layout`. The
application sees objects of N 8-byte fields, named by an integer handle (``obj``) and a field
index, the way the paper's API names ``(obj, field)``::

    tx = yield from rt.begin(cpu, locks=[lock])   # takes the locks (deferred release)
    v = tx.read(obj, 0); tx.write(obj, 0, v + 1)
    node = tx.alloc(3); tx.free(old)
    yield from rt.commit(tx)                      # releases the locks after durability

Every runtime emits markers: TX_BEGIN at begin, TX_COMMIT when the commit-point store is
issued, TX_DURABLE when commit returns, TX_ABORT; txid = (tid << 32) | per-thread sequence.

Writes to an object allocated by the same transaction go straight to its home location and
are flushed before the first commit barrier: the block is unreachable (its bit is clear) unless
the transaction commits, so they need no log [A].

Computation the results depend on (checksums, hash lookups, chain walks, copying) is charged
with ``cpu.work`` from :class:`RuntimeCosts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from ..config import DOMAINS, LINE, param
from ..errors import ConfigError, PmsimError, unknown
from ..trace import Mark
from .alloc import ALLOC, FREE, Allocator
from .layout import Layout, PMSpec, block_size, plan

IDLE, RUNNING, COMMITTED, ABORTED = 0, 1, 2, 3
"""Persistent descriptor states."""

# word offsets in a descriptor's header line. A line need not persist as a prefix of its stores
# (px86 order: atoms persist independently), so words that must agree carry a version tag:
# the state word is ``tag << 8 | state`` and the allocation-log count ``tag << 20 | n``.
H_TAIL, H_NALLOC, H_NWSET, H_STATE = 1, 2, 3, 4  # word 0 is unused
COUNT_BITS = 20


def state_of(word: int) -> int:
    return word & 0xFF


def count_of(word: int) -> int:
    return word & ((1 << COUNT_BITS) - 1)
# word offsets in the global header line
G_MAGIC, G_FINGERPRINT, G_EPOCH = 0, 1, 2
MAGIC = 0x706D73696D5F5254  # "pmsim_RT"


@dataclass(frozen=True)
class RuntimeCosts:
    """Computation costs of the runtimes (card §9 defaults; calibrate against M4/M5)."""

    call_ns: float = param(2.0, "ns", "instrumentation of one TXN_READ/TXN_WRITE/TXN_OPEN call")
    checksum_ns_per_byte: float = param(0.25, "ns/B", "undo record checksum (Fletcher/xxHash-like)")
    hash_insert_ns: float = param(40.0, "ns", "redo: insert or update the per-transaction hash")
    hash_lookup_ns: float = param(30.0, "ns", "redo: look an object up in the hash on a read")
    chain_node_ns: float = param(5.0, "ns", "redo: visit one record of an object's chain")
    copy_ns_per_byte: float = param(0.0625, "ns/B", "copy cache-resident log data (redo write-back, "
                                    "undo rollback)")
    alloc_ns: float = param(20.0, "ns", "pm_alloc/pm_free volatile list work under the "
                            "superblock lock")
    open_ns: float = param(5.0, "ns", "COW: write-set check of TXN_OPEN")

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or v < 0:
                raise ConfigError(f"RuntimeCosts.{f.name} must be a number >= 0, got {v!r}")


def lines_of(addr: int, nbytes: int) -> range:
    """Line addresses covering ``[addr, addr + nbytes)``."""
    first = addr & ~(LINE - 1)
    return range(first, addr + nbytes, LINE)


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

    # -- the object API (implemented by each runtime) --------------------------------------------
    def read(self, obj: int, field: int) -> int:
        return self.read_words(obj, field, 1)[0]

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        raise NotImplementedError

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


class Runtime:
    """Base class: layout, allocator, markers, locks, the allocation log and invariants."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    mutations: ClassVar[frozenset[str]] = frozenset()
    eager_alloc: ClassVar[bool] = False
    """Eager allocator baseline (card §5): each alloc/free call persists its log entry and bit
    with 1 PB (and an ordering sfence); an abort reverts each flip with 1 PB."""

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
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
        raise NotImplementedError

    # -- transactions --------------------------------------------------------------------------
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
        self.commits += 1
        self.commit_order.append(tx.txid)
        tx.cpu.mark(Mark.TX_DURABLE, tx.txid)
        yield from self._finish(tx)

    def abort(self, tx: Tx) -> Generator[Any, Any, None]:
        """Roll the transaction back, then release its locks."""
        self._check_live(tx)
        self._abort(tx)
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

    # -- allocation ----------------------------------------------------------------------------
    def _alloc(self, tx: Tx, words: int) -> int:
        addr = self.heap.pop(tx.tid, self.obj_bytes(words))
        tx.cpu.work(self.costs.alloc_ns)
        self._log_alloc(tx, addr, ALLOC)
        tx.allocs.append(addr)
        tx.fresh.add(addr)
        self._init_object(tx, addr, words)
        return addr

    def _free(self, tx: Tx, obj: int) -> None:
        tx.cpu.work(self.costs.alloc_ns)
        for block in self._blocks_to_free(tx, obj):
            self._log_alloc(tx, block, FREE)
            tx.frees.append(block)
            if "A2" in self.mutations:
                self.heap.push(block)

    def _blocks_to_free(self, tx: Tx, obj: int) -> list[int]:
        return [obj]

    def _init_object(self, tx: Tx, obj: int, words: int) -> None:
        """Reset runtime metadata of a fresh block (redo header, COW wrapper)."""

    def _log_alloc(self, tx: Tx, addr: int, kind: int) -> None:
        """Append ALLOC/FREE to the allocation log (no flush, no PB: the first commit PB
        persists it), or persist it at once in the eager baseline."""
        i = len(tx.alog)
        if i >= self.layout.alloc_cap:
            raise ConfigError(f"transaction {tx.txid:#x} made more than {self.layout.alloc_cap} "
                              "alloc/free calls: raise PMSpec.max_tx_allocs")
        cpu = tx.cpu
        entry = addr | kind
        slot = self.layout.alloc_log[tx.tid] + 8 * i
        cpu.store(slot, entry)
        tx.alog.append(entry)
        if self.eager_alloc:
            # entry before count (sfence), count before the flip (the CAS is a fence): a
            # persisted count never covers a stale entry, a persisted flip is always logged.
            # Fences order persistence only with the WPQ in the persistence domain, so this
            # baseline is crash-consistent in PDOM-1/2; in PDOM-0 it is a timing model (M8).
            hdr = self.layout.desc[tx.tid]
            cpu.clwb(slot)
            cpu.sfence()
            cpu.store(hdr + 8 * H_NALLOC, self._tag(tx) << COUNT_BITS | (i + 1))
            cpu.clwb(hdr)
            cpu.clwb(self.heap.flip(cpu, addr, kind == ALLOC))
            cpu.persist_barrier()
        elif "A1" in self.mutations:
            cpu.clwb(self.heap.flip(cpu, addr, kind == ALLOC))

    def _flush_alog(self, tx: Tx) -> None:
        """Store the log length in the header and flush the log lines (before commit PB 1)."""
        if not tx.alog:
            return
        cpu = tx.cpu
        hdr = self.layout.desc[tx.tid]
        cpu.store(hdr + 8 * H_NALLOC, self._tag(tx) << COUNT_BITS | len(tx.alog))
        for line in lines_of(self.layout.alloc_log[tx.tid], 8 * len(tx.alog)):
            cpu.clwb(line)
        cpu.clwb(hdr)

    def _apply_alog(self, cpu: Any, entries: Sequence[int]) -> None:
        """Flip the bits of a committed allocation log (in order) and flush them."""
        if self.eager_alloc or "A1" in self.mutations:
            return
        lines: dict[int, None] = {}
        for e in entries:
            lines[self.heap.flip(cpu, e & ~1, (e & 1) == ALLOC)] = None
        for line in lines:
            cpu.clwb(line)

    def _revert_alog(self, cpu: Any, entries: Sequence[int]) -> None:
        """Undo the bit flips of an uncommitted log, newest first (eager baseline, A1)."""
        for e in reversed(entries):
            cpu.clwb(self.heap.flip(cpu, e & ~1, (e & 1) != ALLOC))

    def _release_frees(self, tx: Tx) -> None:
        """After IDLE is durable: freed blocks go back to the volatile lists."""
        if "A2" in self.mutations:
            return
        for b in tx.frees:
            self.heap.push(b)

    def _return_allocs(self, tx: Tx) -> None:
        """On abort: allocated blocks go back to the volatile lists; frees are dropped."""
        for b in tx.allocs:
            self.heap.push(b)
        if tx.alog and (self.eager_alloc or "A1" in self.mutations):
            self._revert_alog(tx.cpu, tx.alog)
            if self.eager_alloc:
                tx.cpu.persist_barrier()

    def _tag(self, tx: Tx) -> int:
        """The version tag of a transaction's header words (0: the runtime needs none)."""
        return 0

    def _read_alog(self, tid: int, tag: int = 0) -> list[int]:
        """The persisted allocation log of a descriptor (untimed read for recovery); empty when
        the count belongs to another transaction than ``tag``."""
        word = self.m.peek(self.layout.desc[tid] + 8 * H_NALLOC)
        if word >> COUNT_BITS != tag:
            return []
        n = min(count_of(word), self.layout.alloc_cap)
        base = self.layout.alloc_log[tid]
        entries = [self.m.peek(base + 8 * i) for i in range(n)]
        return [e for e in entries if self.heap.is_block(e & ~1)]  # unwritten slots hold no block

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
        idx = lo + np.arange(s.count, dtype=np.int64)[:, None] * st + np.arange(s.words)[None, :]
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
        vfree = self.heap.volatile_free() if sum(c.nblocks for c in lay.heap) <= 1 << 16 else set()
        for b in sorted(vfree & bits):
            errs.append(f"block {b:#x} is allocated but on a volatile free list")
        return errs

    def _check_logs(self) -> list[str]:
        return []

    def _runtime_blocks(self) -> dict[int, int]:
        """Heap blocks the runtime itself keeps reachable (block -> owning object)."""
        return {}


# -- registry ---------------------------------------------------------------------------------
RUNTIMES: dict[str, type[Runtime]] = {}
"""Registered runtimes by name (base protocols, switches like ``undo-2pb``, and mutants)."""


def register_runtime(cls: type[Runtime], name: str | None = None) -> type[Runtime]:
    """Register a runtime class under ``name`` (default ``cls.name``); usable as a decorator."""
    key = name or cls.name
    if not key:
        raise ConfigError(f"{cls.__name__} has no name; set the class attribute `name`")
    RUNTIMES[key] = cls
    return cls


def variant(base: type[Runtime], name: str, **attrs: Any) -> type[Runtime]:
    """Register a subclass of ``base`` with class attributes changed (a switch or a mutant)."""
    cls = type(base.__name__ + "_" + name.replace(":", "_").replace("-", "_"), (base,),
               {"name": name, **attrs})
    return register_runtime(cls)


def get_runtime(name: str) -> type[Runtime]:
    """The runtime class registered as ``name`` (e.g. ``"undo"``, ``"redo:R2"``)."""
    _load_builtin()
    try:
        return RUNTIMES[name]
    except KeyError:
        raise unknown("runtime", name, RUNTIMES) from None


@dataclass(frozen=True)
class Mutant:
    """A deliberately broken runtime variant from the spec card's mutation tables."""

    name: str
    runtime: str
    mutation: str
    description: str
    domains: tuple[str, ...]
    """Persistence domains in which the mutation is a bug (drop-PB mutants are harmless in pdom2)."""
    needs: str = ""
    """What a workload must do for the bug to show (e.g. allocate, read after write)."""


MUTANTS: dict[str, Mutant] = {}
"""Registered mutants by name (``undo:U1`` ...); each is also in RUNTIMES."""

PB_DOMAINS = ("pdom0", "pdom1")


def register_mutant(base: type[Runtime], mutation: str, description: str,
                    domains: Sequence[str] = DOMAINS, needs: str = "") -> Mutant:
    """Register ``<base.name>:<mutation>`` as a runtime variant and a mutant."""
    name = f"{base.name}:{mutation}"
    variant(base, name, mutations=base.mutations | {mutation})
    mut = Mutant(name, base.name, mutation, description, tuple(domains), needs)
    MUTANTS[name] = mut
    return mut


def register_alloc_mutants(base: type[Runtime]) -> None:
    """The allocator mutations of card §4.4, as variants of ``base``."""
    register_mutant(base, "A1", "flip allocation bits at pm_alloc/pm_free time, before the commit "
                    "point (leak or double allocation if the transaction does not commit)",
                    needs="a transaction that allocates or frees")
    register_mutant(base, "A2", "put a freed block on the volatile list at pm_free time, before "
                    "IDLE is durable (threads interleave only at lock waits here, so it shows as "
                    "reuse by the freeing transaction itself, e.g. when it then aborts)",
                    needs="a transaction that frees, then allocates, then aborts")


def get_mutant(name: str) -> Mutant:
    _load_builtin()
    try:
        return MUTANTS[name]
    except KeyError:
        raise unknown("mutant", name, MUTANTS) from None


def _load_builtin() -> None:
    from . import cow, redo, undo  # noqa: F401  (registration side effects)


def create_runtime(name: str, machine: Any, spec: PMSpec, threads: int | None = None,
                   costs: RuntimeCosts | None = None, base: int | None = None,
                   format: bool = True) -> Runtime:
    """Plan a layout for ``spec`` at the start of the machine's PM, build and format the runtime."""
    cls = get_runtime(name)
    threads = machine.config.cores if threads is None else threads
    layout = cls.plan(spec, threads, machine.pm.base if base is None else base)
    rt = cls(machine, layout, costs)
    if format:
        rt.format()
    return rt


def fit_pm(cfg: Any, nbytes: int, shrink: bool = False) -> Any:
    """``cfg`` with its PM region grown (if needed) to hold ``nbytes`` from its base; regions
    the larger PM would overlap move above it. ``shrink`` also cuts a larger PM region down to
    ``nbytes`` rounded up to 4 KiB (small crash images are cheap to copy)."""
    pm = cfg.pm_region
    if shrink:
        size = (nbytes + 4095) >> 12 << 12
        if size < pm.size:
            regions = tuple(dataclasses.replace(r, size=size) if r is pm else r for r in cfg.regions)
            return dataclasses.replace(cfg, regions=regions)
    if pm.size >= nbytes:
        return cfg
    size = (nbytes + (1 << 20) - 1) >> 20 << 20
    end = pm.base + size
    regions = []
    for r in cfg.regions:
        if r is pm:
            r = dataclasses.replace(r, size=size)
        elif r.base < end and r.end > pm.base:
            end = ((end + (1 << 30) - 1) >> 30) << 30
            r = dataclasses.replace(r, base=end)
            end += r.size
        regions.append(r)
    return dataclasses.replace(cfg, regions=tuple(regions))


__all__ = [
    "ABORTED", "COMMITTED", "IDLE", "MUTANTS", "RUNNING", "RUNTIMES", "Mutant", "Runtime",
    "RuntimeCosts", "Tx", "create_runtime", "fit_pm", "get_mutant", "get_runtime",
    "register_mutant", "register_runtime", "variant", "block_size", "lines_of",
]
