"""DUDETx (Liu et al., ACM TOS 2018; papers/dudetx-decoupled.md): durable transactions in three
decoupled steps, and their recovery.

**Perform** runs the body under the write-through STM (:mod:`pmsim.tm.stm`) on a *shadow* of
the application data in the machine's DRAM, at a constant offset from its home in PM (card §2,
shadow size = PM size). Each transactional write also appends ``(home, value)`` to the thread's
volatile log (vlog), a DRAM ring of ``vlog_entries`` 16-byte slots; an abort pops the attempt's
entries. At commit (the STM's ``on_commit``, commit locks held) the transaction takes the next
*dense* ID from a DRAM counter and appends ``END(ID)``. Perform issues no PM store, flush or
fence: the shadow is outside the persistence domain, so nothing it holds, evicted or not, ever
reaches PM. A transaction waits before it starts until its vlog has room for the largest record.

**Persist** (a background thread on its own core) samples the ID counter, then moves every
committed vlog record that fits into the thread's persistent log (plog, a PM ring of
``plog_records`` largest records): entries, then ``END = [ID << 24 | n << 1 | 1][checksum]``
(the checksum covers the plog epoch, ID, n and entries), clwb of the touched lines and one
ordering point per batch (sfence; a persist barrier in PDOM-0). The batch then costs
``max(persist_latency_ns, bytes / persist_bw)`` on a bandwidth shared by the runtime's persist
threads. Then it frees the vlog slots and advances the durable ID ``D = min(sampled counter,
first unpersisted ID of any thread - 1)``, and acknowledges (``TX_DURABLE``) every transaction
with ID <= D, in each thread's program order. A read-only transaction takes no ID; it is
acknowledged once D reaches the counter it saw at commit.

**Reproduce** (a second background thread) replays records R+1..b (b <= D) in ID order from
the plog onto the data's homes in PM, clwb, ordering point, stores the watermark ``R = b``
(global header word 3), clwb, ordering point, and only then recycles the plog space.

**Recovery** scans every plog slot for END words whose checksum verifies with the persisted
epoch, drops IDs <= R, and replays from R+1 in ID order up to the first missing or incomplete ID
(later ones were never acknowledged); clwb, ordering point, ``R`` = the last replayed ID, then
it bumps the epoch (which invalidates every record written before it: the plogs are truncated
in O(1)) and IDs restart at R+1. The shadow is rebuilt from PM. Allocation bits travel inside
the transaction's record: pm_alloc/pm_free set/clear the block's bit in the shadow bitmap
through the STM, so the bitmap in PM changes only by Reproduce and recovery.

The serialization order is the ID order (``commit_order`` and the TX_COMMIT markers follow it);
a read-only transaction takes no ID and is serialized at its STM snapshot: ``commit_order``
places it right after the update it read last, though its TX_COMMIT marker comes when it
ends (later updates may have committed by then; the crash oracle reads ``commit_order``);
durability is D passing the ID (TX_DURABLE, emitted by the persist thread), so the crash oracle
needs nothing DUDETx-specific. The persistence protocol is the named steps of
``DudeTxRuntime.STEPS``; the card's mutants are data over them in :mod:`.mutants`.
docs/protocols/dudetx/dudetx.md describes the protocol and where it departs from the paper.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ...config import LINE
from ...errors import ConfigError, PmsimError, StallError
from ...tm.stm import AbortCause, Stm, StmConfig, StmTx, place_serial
from ...trace import Mark
from ..alloclog import ALLOC_STEPS, FreeListAlloc
from ..appdata import DramShadow
from ..base import Body, OptimisticRuntime, RuntimeCosts, Tx
from ..descriptor import G_EPOCH
from ..layout import Layout, PMSpec
from ..registry import register_runtime, variant

G_R = 3
"""Word of the global header line holding the persisted reproduce watermark R."""
ID_SHIFT = 24
N_MASK = (1 << 23) - 1
"""END word: ``ID << ID_SHIFT | n << 1 | 1`` (an entry's first word is a home address, even)."""
MASK64 = (1 << 64) - 1
SLOT = 16
"""Bytes of a log slot: an entry ``(home, value)`` or an END ``(tag, checksum)``."""


def end_word(ident: int, n: int) -> int:
    """The first word of the END of record ``ident`` with ``n`` entries."""
    return (ident << ID_SHIFT | n << 1 | 1) & MASK64


@functools.lru_cache(maxsize=1 << 14)
def record_checksum(epoch: int, ident: int, n: int, entries: tuple[tuple[int, int], ...]) -> int:
    """64-bit FNV-1a over the epoch, ID, entry count and entries (memoised: recovery verifies
    the same records in many crash images)."""
    h = 0xCBF29CE484222325
    for w in (epoch, ident, n):
        h = ((h ^ w) * 0x100000001B3) & MASK64
    for a, v in entries:
        h = ((h ^ a) * 0x100000001B3) & MASK64
        h = ((h ^ v) * 0x100000001B3) & MASK64
    return h


@dataclass(slots=True)
class Record:
    """One committed update transaction's redo record."""

    id: int
    thread: int
    txid: int
    entries: list[tuple[int, int]]
    vslot: int
    """First vlog slot (a running count; -1 for a record recovery read)."""
    pos: int = -1
    """First plog slot (a running count), once persisted."""

    @property
    def nslots(self) -> int:
        return len(self.entries) + 1


@dataclass
class Bandwidth:
    """The emulated persist cost of card §8: a batch of ``b`` bytes issued at ``t`` completes at
    ``max(t + latency, end of its transfer)``, transfers sharing ``bw`` bytes/ns in FIFO order."""

    latency_ns: float
    bw: float
    free: float = field(default=0.0)

    def cost(self, now: float, nbytes: int) -> float:
        """ns the issuing thread waits for a batch of ``nbytes`` issued at ``now``."""
        done = now + self.latency_ns
        if self.bw > 0:
            start = max(now, self.free)
            self.free = start + nbytes / self.bw
            done = max(done, self.free)
        return done - now


class DudeTxTx(Tx):
    """The object API over one STM attempt on the shadow."""

    def __init__(self, rt: DudeTxRuntime, cpu: Any, txid: int, stx: StmTx) -> None:
        super().__init__(rt, cpu, txid)
        self.stx = stx
        self.drt = rt

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        rt = self.drt
        self.cpu.work(rt.costs.call_ns)
        a = rt._shadow(obj + 8 * field, n)
        return self.stx.read_range(a, n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        rt = self.drt
        self.cpu.work(rt.costs.call_ns)
        a = rt._shadow(obj + 8 * field, len(values))
        wr = self.stx.write
        for i, v in enumerate(values):
            wr(a + 8 * i, v)
        self.writes += 1

    def pause(self) -> Iterable[Any]:
        return self.cpu.maybe_yield(self.drt._quantum)


@register_runtime
class DudeTxRuntime(FreeListAlloc, DramShadow, OptimisticRuntime):
    """DUDETx: Perform on a DRAM shadow under the STM; Persist and Reproduce in the background."""

    name = "dudetx"
    family = "dudetx"
    stm_config: ClassVar[StmConfig] = StmConfig(design="write-through", locks=1024)
    """The Perform STM: TinySTM write-through (card §2, fn. 5); 1024 locks fit small DRAM."""
    tx_class: ClassVar[type[DudeTxTx]] = DudeTxTx
    """The object API over one Perform attempt (shadow paging translates in its own)."""
    vlog_entries: ClassVar[int] = 1 << 14
    """Slots of each thread's volatile log (paper: 10**6; [F] 2**14 = 256 KiB of DRAM per
    thread, scaled down with the workloads; with 512, B+-tree inserts of ~20 words filled it
    in bursts and stalled Perform for more than half of its time). A transaction waits at
    begin while its vlog lacks room for the largest record."""
    plog_records: ClassVar[int] = 64
    """Each thread's plog holds this many of the workload's largest records."""
    persist_batch_bytes: ClassVar[int] = 64 << 10
    """Most bytes one Persist batch writes (card §10 default: 64 KiB)."""
    persist_fair: ClassVar[bool] = True
    """Whether a Persist that falls behind serves every worker alike (oldest record first;
    the locks variant, without a global order, starts each batch one thread later). The card
    allows any order ("logs need not be flushed in global order"); the ``-fine`` variants take
    thread 0's records first instead, an adversarial order that persists records out of tid
    order as often as it can, for the crash fuzzer to exercise."""
    reproduce_batch: ClassVar[int] = 64
    """Most transactions one Reproduce batch replays (one data fence and one R each)."""
    persist_latency_ns: ClassVar[float] = 1000 / 3.4
    """Emulated latency of one persist ordering (card §8: 1,000 cycles at 3.4 GHz); 0 = off."""
    persist_bw: ClassVar[float] = 1.0
    """Emulated NVM write bandwidth in bytes/ns = GB/s (card §8: 1 GB/s); 0 = unlimited."""
    pause_quantum_ns: ClassVar[float] = 1.0
    """A body yields at ``tx.pause()`` once this far ahead (or the machine's quantum, if
    smaller): below one L1 hit it yields at every pause, so live transactions overlap and
    conflict as in simulated time (the reasoning of :mod:`pmsim.tm.htm`)."""
    persist_idle_ns: ClassVar[float] = 500.0
    reproduce_idle_ns: ClassVar[float] = 1000.0
    vlog_wait_ns: ClassVar[float] = 200.0
    stall_ns: ClassVar[float] = 1e8
    """A thread that waits this long (simulated) without any background progress raises: the
    background threads are stuck, which is a bug (a hang otherwise)."""

    STEPS = {
        "dudetx.persist.append": ("group", "copy committed vlog records (entries, then END with "
                                  "its checksum) to the tail of each thread's plog"),
        "dudetx.persist.flush": ("flush", "clwb every plog line the batch wrote"),
        "dudetx.persist.fence": ("order", "the batch is persistent before D advances (one "
                                 "ordering per batch)"),
        "dudetx.persist.ack": ("group", "advance D; acknowledge (TX_DURABLE) every transaction "
                               "with ID <= D"),
        "dudetx.reproduce.apply": ("group", "store records R+1..b from the plog at their homes in "
                                   "ID order; clwb the home lines"),
        "dudetx.reproduce.fence": ("order", "the replayed data is persistent before R"),
        "dudetx.reproduce.watermark": ("group", "store R = b; clwb"),
        "dudetx.reproduce.fence-r": ("order", "R is persistent before the plog space is recycled"),
        "dudetx.recover.replay": ("group", "store the complete records R+1.. (up to the first gap) "
                                  "at their homes in ID order; clwb"),
        "dudetx.recover.fence": ("order", "the replayed data is persistent before R"),
        "dudetx.recover.watermark": ("group", "store R = the last replayed ID; clwb"),
        "dudetx.recover.fence-r": ("order", "R is persistent before the truncation"),
        "dudetx.recover.truncate": ("group", "bump the plog epoch (every record written before "
                                    "it is invalid; IDs restart at R+1); clwb"),
        "dudetx.recover.fence-t": ("order", "the truncation is persistent before new transactions"),
    }
    OMIT_STEPS = frozenset(ALLOC_STEPS)
    CHECKS = {
        "dudetx.recover.checksum": "a record counts only if its END's checksum (epoch, ID, count, "
                                   "entries) verifies",
        "dudetx.recover.gap": "replay stops at the first missing or incomplete ID",
        "dudetx.recover.bounds": "every entry of a record names a word of application data",
    }

    # -- layout ----------------------------------------------------------------------------------
    @classmethod
    def extra_cores(cls, threads: int) -> int:
        """One core for the persist thread, one for the reproduce thread."""
        return 2

    @classmethod
    def record_slots(cls, spec: PMSpec) -> int:
        """Slots of the largest record: every word written, every alloc/free bit, the END."""
        return spec.max_tx_words + spec.max_tx_allocs + 1

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return SLOT * cls.plog_records * cls.record_slots(spec)

    @classmethod
    def alloc_cap(cls, spec: PMSpec) -> int:
        return 0  # allocation records travel inside the redo record

    @staticmethod
    def data_start(layout: Layout) -> int:
        """The first byte of application data (statics, then the heap and its bitmaps)."""
        return -(-(layout.log[-1] + layout.log_bytes) // LINE) * LINE

    @classmethod
    def _vlog_bytes(cls) -> int:
        return -(-SLOT * int(cls.vlog_entries) // LINE) * LINE

    @classmethod
    def dram_bytes(cls, layout: Layout) -> int:
        """DRAM from the region's start: STM metadata, the ID counter's line, the vlogs and the
        shadow of the application data."""
        return (Stm.footprint(cls.stm_config) + LINE + layout.threads * cls._vlog_bytes()
                + layout.end - cls.data_start(layout))

    @classmethod
    def fit_config(cls, cfg: Any, layout: Layout) -> Any:
        """``cfg`` with its DRAM region grown (to a power of two) to hold :meth:`dram_bytes`."""
        dram = cfg.dram_region
        if dram is None:
            raise ConfigError(f"{cls.name} keeps its shadow, volatile logs and STM metadata in "
                              "DRAM, but the machine config has no 'dram' region: add one")
        need = cls.dram_bytes(layout)
        if dram.size >= need:
            return cfg
        size = 1 << (need - 1).bit_length()
        return cfg.replace(regions=tuple(dataclasses.replace(r, size=size) if r is dram else r
                                         for r in cfg.regions))

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        lay = layout
        t = lay.threads
        self._rec_slots = self.record_slots(lay.spec)
        self._pslots = lay.log_bytes // SLOT
        self._vslots = int(self.vlog_entries)
        if self._pslots < self._rec_slots or self._vslots < self._rec_slots:
            raise ConfigError(f"{self.name}: a record of the workload takes up to {self._rec_slots} "
                              f"slots but the plog holds {self._pslots} and the vlog "
                              f"{self._vslots}: raise plog_records or vlog_entries")
        self._data_lo = self.data_start(lay)
        self._data_hi = lay.end
        dram = machine.config.dram_region
        need = self.dram_bytes(lay)
        if dram is None or need > dram.size:
            have = "no 'dram' region" if dram is None else f"a DRAM region of {dram.size} bytes"
            raise ConfigError(
                f"{self.name} keeps its shadow, volatile logs and STM metadata in DRAM and needs "
                f"{need} bytes for this layout, but the machine has {have}: build the machine "
                f"with {type(self).__name__}.fit_config(cfg, layout) (Session.create does), or "
                f"e.g. --set regions.1.size={1 << (need - 1).bit_length()}")
        stm_bytes = Stm.footprint(self.stm_config)
        self._ctr = dram.base + stm_bytes
        vbytes = self._vlog_bytes()
        self._vlog = [self._ctr + LINE + i * vbytes for i in range(t)]
        sbase = self._shadow_base(self._ctr + LINE + t * vbytes)
        self._off = sbase - self._data_lo
        self.stm = Stm(machine, self.stm_config, base=dram.base, on_write=self._on_write,
                       on_commit=self._on_commit, on_abort=self._on_abort)
        self.bandwidth = Bandwidth(self.persist_latency_ns, self.persist_bw)
        self._quantum = min(machine.config.quantum_ns, self.pause_quantum_ns)
        self.ack_latencies: list[float] = []
        self._serial: list[tuple[int, int]] = []  # STM serial keys of commit_order's entries
        self.vlog_stalls = 0
        self.vlog_stall_ns = 0.0
        self.logged_entries = 0
        self.persist_batches = 0
        self.reproduce_batches = 0
        self._persist_done = True
        self._progress = 0
        self._reset_volatile()

    def counters(self) -> dict[str, float]:
        """The Perform STM's counters, vlog-full stalls (count and simulated ns) and the
        background threads' batches."""
        out = {f"stm.{k}": float(v) for k, v in self.stm.totals().as_dict().items()}
        out.update({"vlog_stalls": float(self.vlog_stalls), "vlog_stall_ns": self.vlog_stall_ns,
                    "logged_entries": float(self.logged_entries),
                    "persist_batches": float(self.persist_batches),
                    "reproduce_batches": float(self.reproduce_batches)})
        return out

    def _shadow_base(self, dram_next: int) -> int:
        """Where the shadow of the first data byte lives (the first free DRAM line)."""
        return dram_next

    def _reset_volatile(self) -> None:
        """Volatile state as after a restart: empty logs, D = R = the restart ID - 1."""
        t = self.layout.threads
        r = self._restart_id() - 1
        self.R = self.D = self._persisted_max = r
        self.m.poke(self._ctr, r)
        self._vq: list[deque[Record]] = [deque() for _ in range(t)]
        self._cur: list[list[tuple[int, int]]] = [[] for _ in range(t)]
        self._vhead = [0] * t
        self._vtail = [0] * t
        self._phead = [0] * t
        self._ptail = [0] * t
        self._ready: dict[int, Record] = {}
        self._acks: list[deque[tuple[int, int, float]]] = [deque() for _ in range(t)]
        self._unacked: set[int] = set()
        self._ended: dict[int, float] = {}  # txid -> end of a transaction not yet acknowledged
        self._early: dict[int, tuple[float, float]] = {}  # txid -> (ack clock, start) before its end

    def _load(self) -> None:
        """Rebuild volatile state from PM, then the shadow."""
        super()._load()
        self._reset_volatile()
        self._fill_shadow()

    # -- Perform ---------------------------------------------------------------------------------
    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Perform ``body`` under the STM on the shadow until an attempt commits or the body
        returns False; commit returns at once (durability comes when D passes the ID)."""
        start = cpu.clock
        txid = self._next_txid(cpu)
        tid = cpu.tid
        cpu.mark(Mark.TX_BEGIN, txid)
        yield from self._wait_vlog(cpu, tid)
        view: list[DudeTxTx] = []

        def attempt(stx: StmTx) -> Any:
            tx = self.tx_class(self, cpu, txid, stx)
            tx.start = start
            view[:] = [tx]
            self.active[tid] = tx
            if on_begin is not None:
                on_begin(tx)
            return body(tx)

        try:
            stx = yield from self.stm.atomic(cpu, attempt, lambda _: self._drop_allocs(view[0]))
        except BaseException:
            if view:
                self._drop_allocs(view[0])
                self.active[tid] = None
            self._vtail[tid] -= len(self._cur[tid])
            self._cur[tid] = []
            raise
        tx = view[0]
        if stx.committed:
            self._release_frees(tx)
            self.commits += 1
            if stx.read_only:
                self._commit_read_only(cpu, tx)
        else:
            self._drop_allocs(tx)
            self.aborts += 1
            cpu.mark(Mark.TX_ABORT, txid)
        yield from self._finish(tx)
        return tx

    def _wait_vlog(self, cpu: Any, tid: int) -> Generator[Any, Any, None]:
        """Block until the thread's vlog has room for the largest record (card: Perform blocks
        while the vlog is full)."""
        need = self._rec_slots
        if self._vslots - (self._vtail[tid] - self._vhead[tid]) >= need:
            return
        if not self.background:
            raise PmsimError(f"{self.name}: thread {tid}'s volatile log is full and no persist "
                             "thread runs; run workers with the runtime's background threads "
                             "(Session.run or pmsim.runtimes.background.run_threads)")
        self.vlog_stalls += 1
        t0 = cpu.clock
        while self._vslots - (self._vtail[tid] - self._vhead[tid]) < need:
            seen, since = self._progress, cpu.clock
            yield from self.idle(cpu, self.vlog_wait_ns)
            if self._progress == seen and cpu.clock - since > self.stall_ns:
                raise StallError(f"{self.name}: thread {tid} waited {self.stall_ns:,.0f} ns for vlog "
                                 "space with no background progress")
        self.vlog_stall_ns += cpu.clock - t0

    def _on_write(self, stx: StmTx, saddr: int, value: int, old: int | None) -> None:
        """dtmWrite: append ``(home, value)`` to the thread's vlog (lock held, before the store)."""
        t = stx.tid
        slot = self._vtail[t]
        if slot + 1 - self._vhead[t] >= self._vslots:
            raise ConfigError(f"{self.name}: a transaction of thread {t} wrote more words than its "
                              f"PMSpec declares (the vlog of {self._vslots} slots is full): raise "
                              "PMSpec.max_tx_words")
        va = self._vlog[t] + SLOT * (slot % self._vslots)
        home = self._home(saddr)
        stx.cpu.store_words(va, [home, value])
        self._vtail[t] = slot + 1
        self._cur[t].append((home, value))

    def _on_abort(self, stx: StmTx, cause: AbortCause | None) -> None:
        """dtmAbort and every conflict abort: pop the attempt's entries."""
        t = stx.tid
        self._vtail[t] -= len(self._cur[t])
        self._cur[t] = []

    def _on_commit(self, stx: StmTx, ts: int) -> None:
        """dtmEnd of an update transaction (commit locks held): take the next dense ID, append
        END(ID) to the vlog and queue the record for Persist."""
        t = stx.tid
        cpu = stx.cpu
        ident = self._take_id(cpu)
        entries = self._cur[t]
        self._cur[t] = []
        self.logged_entries += len(entries)
        slot = self._vtail[t]
        va = self._vlog[t] + SLOT * (slot % self._vslots)
        cpu.store(va, end_word(ident, len(entries)))
        cpu.store(va + 8, 0)
        self._vtail[t] = slot + 1
        tx = self.active[t]
        assert tx is not None
        self._vq[t].append(Record(ident, t, tx.txid, entries, slot - len(entries)))
        self.commit_order.append(tx.txid)
        self._serial.append(stx.serial)
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        self._queue_ack(t, ident, tx)

    def _queue_ack(self, t: int, key: int, tx: Tx) -> None:
        """Queue ``tx`` for acknowledgement once D reaches ``key``."""
        self._acks[t].append((key, tx.txid, tx.start))
        self._unacked.add(tx.txid)

    def _acked(self, txid: int, start: float, clock: float) -> None:
        """Record an acknowledgement's latency: the application learns of it at the later of the
        acknowledgement and the end of its transaction (a background thread's clock may trail
        the worker's)."""
        self._unacked.discard(txid)
        end = self._ended.pop(txid, None)
        if end is None:
            self._early[txid] = (clock, start)
        else:
            self.ack_latencies.append(max(clock, end) - start)

    def _finish(self, tx: Tx) -> Generator[Any, Any, None]:
        yield from super()._finish(tx)
        end = tx.cpu.clock
        early = self._early.pop(tx.txid, None)
        if early is not None:
            self.ack_latencies.append(max(early[0], end) - early[1])
        elif tx.txid in self._unacked:
            self._ended[tx.txid] = end

    def _take_id(self, cpu: Any) -> int:
        """Fetch-and-increment the dense ID counter (a CAS loop on its DRAM word)."""
        ca = self._ctr
        old = cpu.load(ca)
        while True:
            got = cpu.cas(ca, old, old + 1)
            if got == old:
                return int(old + 1)
            old = got

    def _commit_read_only(self, cpu: Any, tx: Tx) -> None:
        """A read-only transaction takes no ID; it is durable once D reaches the counter it saw.
        It is serialized at its snapshot under the STM (``_serial`` holds the STM's keys of
        ``commit_order``'s entries), at its commit under HTM."""
        key = cpu.load(self._ctr)
        t = tx.tid
        if isinstance(tx, DudeTxTx):  # under the STM: at its snapshot
            place_serial(self._serial, self.commit_order, tx.stx.serial, tx.txid)
        else:  # under HTM: at its commit, now
            self.commit_order.append(tx.txid)
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        if not self._acks[t] and key <= self.D:
            cpu.mark(Mark.TX_DURABLE, tx.txid)
            self._acked(tx.txid, tx.start, cpu.clock)
        else:
            self._queue_ack(t, key, tx)

    # -- allocation: bits in the shadow bitmap, through the STM ------------------------------------
    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        """Set or clear a block's bit in the shadow bitmap (logged like any write)."""
        assert isinstance(tx, DudeTxTx)
        word, mask = self.heap.bit_of(block)
        s = self._shadow(word, 1)
        old = tx.stx.read(s)
        tx.stx.write(s, old | mask if allocated else old & ~mask)

    def _drop_allocs(self, tx: Tx) -> None:
        """An attempt ended without committing: its blocks go back to the free lists."""
        for b in tx.allocs:
            self.heap.push(b)
        tx.allocs.clear()

    # -- background threads ----------------------------------------------------------------------
    def start_threads(self) -> None:
        t = self.layout.threads
        self._persist_done = False
        self.spawn_background("persist", t, self._persist_loop)
        self.spawn_background("reproduce", t + 1, self._reproduce_loop)

    def _persist_loop(self, cpu: Any) -> Generator[Any, Any, None]:
        idle_since = None
        while True:
            if self._persist_batch(cpu):
                idle_since = None
                yield from cpu.maybe_yield()
                continue
            if self.stopping and not any(self._vq):
                break
            if self.stopping:
                idle_since = cpu.clock if idle_since is None else idle_since
                if cpu.clock - idle_since > self.stall_ns:
                    raise PmsimError(f"{self.name}: the persist thread cannot place a record for "
                                     f"{self.stall_ns:,.0f} ns (plog full, Reproduce stuck)")
            yield from self.idle(cpu, self.persist_idle_ns)
        self._persist_done = True

    def _plog_room(self, t: int, need: int) -> bool:
        """Whether thread ``t``'s plog has ``need`` free slots."""
        return self._ptail[t] + need - self._phead[t] <= self._pslots

    def _persist_queues(self, cpu: Any) -> Iterable[tuple[int, deque[Record]]]:
        """The vlogs a Persist batch on ``cpu`` drains, as ``(thread, queue)``: every thread's
        (DUDETx-Sync's workers drain only their own)."""
        return enumerate(self._vq)

    def _take_batch(self, cpu: Any) -> tuple[list[Record], int]:
        """The records of one Persist batch and their bytes, taken oldest first across the
        vlogs it drains (``persist_fair``; else thread by thread): D and Reproduce advance in
        tid order, and a Persist that falls behind serves every worker alike (taking thread 0's
        records first made the last worker's vlog fill while the others never waited). Up to
        ``persist_batch_bytes`` (at least one record), each only while its thread's plog has
        room. Written thread by thread, in each vlog's order."""
        def key(t: int, q: deque[Record]) -> int:
            return q[0].id if self.persist_fair else t

        heads = [(key(t, q), t, q) for t, q in self._persist_queues(cpu) if q]
        heapq.heapify(heads)
        batch: list[Record] = []
        nbytes = 0
        while heads:
            _, t, q = heads[0]
            rec = q[0]
            need = rec.nslots
            if batch and nbytes + SLOT * need > self.persist_batch_bytes:
                break
            if not self._plog_room(t, need):
                heapq.heappop(heads)
                continue
            rec.pos = self._ptail[t]
            self._ptail[t] += need
            nbytes += SLOT * need
            batch.append(rec)
            q.popleft()
            if q:
                heapq.heapreplace(heads, (key(t, q), t, q))
            else:
                heapq.heappop(heads)
        batch.sort(key=lambda r: (r.thread, r.vslot))
        return batch, nbytes

    def _persist_batch(self, cpu: Any) -> bool:
        """One Persist batch; True if it persisted a record or advanced D."""
        sampled = int(cpu.load(self._ctr))
        batch, nbytes = self._take_batch(cpu)
        if batch:
            self._write_plog(cpu, batch, nbytes)
            self.order(cpu, "dudetx.persist.fence")
            cpu.work(self.bandwidth.cost(cpu.clock, nbytes))
            self.persist_batches += 1
            self._progress += 1
            for rec in batch:
                self._vhead[rec.thread] = rec.vslot + rec.nslots
                self._persisted_max = max(self._persisted_max, rec.id)
                if rec.id > self.R:
                    self._ready[rec.id] = rec
                else:  # already reproduced (only when Reproduce runs ahead of D)
                    self._phead[rec.thread] = rec.pos + rec.nslots
        pending = [q[0].id for q in self._vq if q]
        d = max(self.D, self._frontier(sampled, pending, self._persisted_max))
        advanced = d != self.D
        self.D = d
        with self.step(cpu, "dudetx.persist.ack") as c:
            self._acknowledge(c, cpu)
        return bool(batch) or advanced

    def _frontier(self, sampled: int, pending: list[int], persisted: int) -> int:
        """D: every ID up to it is persistent. IDs <= ``sampled`` were all in a vlog when the
        batch was chosen; ``pending`` holds each thread's first record still there."""
        return min([sampled, *(p - 1 for p in pending)])

    def _write_plog(self, cpu: Any, batch: list[Record], nbytes: int) -> None:
        """Store the batch's records at their plog slots; clwb their lines."""
        lines: dict[int, None] = {}
        ps, vs = self._pslots, self._vslots
        epoch = self.epoch
        with self.step(cpu, "dudetx.persist.append") as c:
            ld, st = c.load, c.store
            for rec in batch:
                base, vbase = self.layout.log[rec.thread], self._vlog[rec.thread]
                n = len(rec.entries)
                words = [*rec.entries, (end_word(rec.id, n),
                                        record_checksum(epoch, rec.id, n, tuple(rec.entries)))]
                for i, (a, v) in enumerate(words):
                    va = vbase + SLOT * ((rec.vslot + i) % vs)
                    ld(va)
                    ld(va + 8)
                    p = base + SLOT * ((rec.pos + i) % ps)
                    st(p, a)
                    st(p + 8, v)
                    lines[p & ~(LINE - 1)] = None
            c.work(self.costs.checksum_ns_per_byte * nbytes)
        self.flush(cpu, "dudetx.persist.flush", lines)

    def _acknowledge(self, c: Any, cpu: Any) -> None:
        """TX_DURABLE for every transaction whose key (ID, or the counter a read-only one saw)
        is <= D, in each thread's program order."""
        d = self.D
        for q in self._acks:
            while q and q[0][0] <= d:
                _, txid, start = q.popleft()
                c.mark(Mark.TX_DURABLE, txid)
                self._acked(txid, start, cpu.clock)

    def _reproduce_loop(self, cpu: Any) -> Generator[Any, Any, None]:
        while True:
            recs = self._next_batch()
            if recs:
                yield from self._reproduce_batch(cpu, recs)
                self.reproduce_batches += 1
                self._progress += 1
                yield from cpu.maybe_yield()
                continue
            if self.stopping and self._persist_done:
                break
            yield from self.idle(cpu, self.reproduce_idle_ns)

    def _reproduce_limit(self) -> int:
        """Reproduce replays IDs up to D only."""
        return self.D

    def _record(self, ident: int) -> Record | None:
        """The persisted record with this ID, if Persist has placed it."""
        return self._ready.get(ident)

    def _next_batch(self) -> list[Record]:
        limit = min(self._reproduce_limit(), self.R + self.reproduce_batch)
        out = []
        for i in range(self.R + 1, limit + 1):
            rec = self._record(i)
            if rec is None:
                break
            out.append(rec)
        return out

    def _reproduce_batch(self, cpu: Any, recs: list[Record]) -> Generator[Any, Any, None]:
        """Replay, data fence, R, fence, recycle (card §2 Reproduce steps 1-6)."""
        last = recs[-1].id
        self._apply(cpu, recs, "dudetx.reproduce.apply")
        self.order(cpu, "dudetx.reproduce.fence")
        with self.step(cpu, "dudetx.reproduce.watermark") as c:
            self._store_watermark(c, last, recs)
        self.order(cpu, "dudetx.reproduce.fence-r")
        self._recycle(recs)
        self.R = last
        yield from ()

    def _replay_order(self, recs: list[Record]) -> list[Record]:
        """Records in the order they are replayed: by ID."""
        return recs

    def _values(self, c: Any, rec: Record) -> list[tuple[int, int]]:
        """A record's entries: loaded from its plog slots (timed), or given (recovery)."""
        if rec.pos < 0:
            if rec.vslot >= 0:  # straight from the vlog (a mutant's Reproduce)
                vbase = self._vlog[rec.thread]
                for i in range(len(rec.entries)):
                    c.load(vbase + SLOT * ((rec.vslot + i) % self._vslots) + 8)
            return rec.entries
        base, ps = self.layout.log[rec.thread], self._pslots
        ld = c.load
        out = []
        for i in range(len(rec.entries)):
            p = base + SLOT * ((rec.pos + i) % ps)
            a = int(ld(p))
            v = int(ld(p + 8))
            if self._is_home(a):
                out.append((a, v))
        return out

    def _apply(self, cpu: Any, recs: list[Record], step: str) -> None:
        """Store the records' values at their homes in replay order; clwb the home lines."""
        with self.step(cpu, step) as c:
            st = c.store
            lines: dict[int, None] = {}
            n = 0
            for rec in self._replay_order(recs):
                for a, v in self._values(c, rec):
                    st(a, v)
                    lines[a & ~(LINE - 1)] = None
                    n += 1
            c.work(self.costs.copy_ns_per_byte * 8 * n)
            for line in lines:
                c.clwb(line)

    def _store_watermark(self, c: Any, last: int, recs: list[Record]) -> None:
        """Store R = ``last`` and clwb it."""
        a = self.layout.base + 8 * G_R
        c.store(a, last)
        c.clwb(a)

    def _recycle(self, recs: list[Record]) -> None:
        """Free the records' plog slots (only once R covers them)."""
        for rec in recs:
            self._ready.pop(rec.id, None)
            if rec.pos >= 0:
                self._phead[rec.thread] = max(self._phead[rec.thread], rec.pos + rec.nslots)

    # -- recovery ----------------------------------------------------------------------------------
    def _watermark(self) -> int:
        """The persisted R."""
        return int(self.m.peek(self.layout.base + 8 * G_R))

    def _restart_id(self) -> int:
        """The first ID after a restart."""
        return self._watermark() + 1

    def _scan(self, cpu: Any, epoch: int) -> dict[int, tuple[int, list[tuple[int, int]]]]:
        """Every record of the current epoch in every plog slot: ID -> (thread, entries)."""
        m, lay, ps = self.m, self.layout, self._pslots
        chk = self.check("dudetx.recover.checksum")
        bounds = self.check("dudetx.recover.bounds")
        out: dict[int, tuple[int, list[tuple[int, int]]]] = {}
        for t in range(lay.threads):
            words = m.pm_words(lay.log[t], 2 * ps)
            for s in np.flatnonzero(words[0::2] & np.uint64(1)).tolist():
                w = int(words[2 * s])
                ident, n = w >> ID_SHIFT, (w >> 1) & N_MASK
                if n >= ps or ident in out:
                    continue
                idx = [2 * ((s - n + i) % ps) for i in range(n)]
                body = [(int(words[j]), int(words[j + 1])) for j in idx]
                if chk and int(words[2 * s + 1]) != record_checksum(epoch, ident, n, tuple(body)):
                    continue
                if bounds and not all(self._is_home(a) for a, _ in body):
                    continue
                out[ident] = (t, body)
        cpu.work(self.costs.checksum_ns_per_byte * lay.threads * ps * SLOT)
        return out

    def _unprocessed(self, found: dict[int, tuple[int, list[tuple[int, int]]]],
                     r: int) -> dict[int, tuple[int, list[tuple[int, int]]]]:
        """The records Reproduce had not finished: IDs above R."""
        return {i: v for i, v in found.items() if i > r}

    def _replay_plan(self, todo: dict[int, Any], r: int) -> list[int]:
        """IDs to replay: R+1, R+2, ... up to the first missing or incomplete one."""
        if not self.check("dudetx.recover.gap"):
            return sorted(todo)
        out = []
        i = r + 1
        while i in todo:
            out.append(i)
            i += 1
        return out

    def _recover(self, cpu: Any) -> None:
        """Replay the complete records after R up to the first gap; persist R; truncate."""
        lay = self.layout
        epoch = int(self.m.peek(lay.base + 8 * G_EPOCH))
        r = self._watermark()
        todo = self._unprocessed(self._scan(cpu, epoch), r)
        plan = self._replay_plan(todo, r)
        if plan:
            recs = [Record(i, todo[i][0], 0, todo[i][1], -1) for i in plan]
            self._apply(cpu, recs, "dudetx.recover.replay")
            self.order(cpu, "dudetx.recover.fence")
            with self.step(cpu, "dudetx.recover.watermark") as c:
                self._store_watermark(c, plan[-1], recs)
            self.order(cpu, "dudetx.recover.fence-r")
        with self.step(cpu, "dudetx.recover.truncate") as c:
            a = lay.base + 8 * G_EPOCH
            c.store(a, epoch + 1)
            c.clwb(a)
        self.order(cpu, "dudetx.recover.fence-t")


DUDETX_FINE = variant(DudeTxRuntime, "dudetx-fine", persist_batch_bytes=1, reproduce_batch=2,
                      persist_fair=False)
"""Persist batches of one record and Reproduce batches of two transactions: the same protocol
with few lines per fenced epoch, so every crash point's states can be enumerated (the default
batches of up to 64 KiB give points with millions of states). Persist takes threads in order,
so a higher ID of thread 0 may persist before a lower one of thread 1 (a gap)."""

__all__ = ["DUDETX_FINE", "Bandwidth", "DudeTxRuntime", "DudeTxTx", "G_R", "Record", "end_word",
           "record_checksum"]
