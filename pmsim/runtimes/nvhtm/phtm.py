"""PHTM-like durable transactions, NV-HTM's hardware baseline (Avni et al.; papers/nv-htm.md §7,
§10 item 7): HTM with a redo log, per-line write locks taken inside the hardware transaction
and held after the commit until the data is flushed, and its recovery.

PHTM assumes hardware that flushes inside a hardware transaction without aborting it and
persists a commit marker atomically with the commit. pmsim's HTM aborts a transaction that
flushes a line it wrote (card H1), so this model keeps PHTM's costs and conflict window and
gets its atomicity the one way the simulator allows:

**Inside the hardware transaction** (:class:`~pmsim.tm.htm.HtmRunner`: retries, then the single
global lock) each first write of a data line loads the line's lock (one DRAM word on a line of
its own, ``lock_lines`` of them indexed by line address: the "≈1 extra line per write" of card
H8); a lock held by another thread aborts the attempt (``xabort(LOCKED)``; under the SGL the
writer waits), else the transaction stores its id into the lock. Every write stores the home's
current value back (the line joins the write set as PHTM's in-place store would: its capacity
and its conflicts with readers) and the entry ``(home, value)`` into the thread's redo log in
PM (a word written twice reuses its entry: PHTM deduplicates within a transaction). The new
value stays in a per-transaction buffer that the transaction's reads consult. With flush
emulation (``flush_ns``) the in-transaction log flush of the paper is a spin per log line
before ``xend``.

**Commit** (right after ``xend``, or under the SGL before its release, with no yield until the
data is in place: the hardware's atomic commit-and-marker): clwb the entries' lines
(``phtm.commit.flush-log``), order (``phtm.commit.fence-log``), store the marker ``(hash(tag,
slot) << 1 | 1, tag)`` after the entries, clwb, order (``phtm.commit.fence-marker``: the
durable commit point), then store the buffered values in place (``phtm.commit.write-back``).
Readers never check locks: whatever they can see in place is durable. **After the commit**
(other threads run): clwb every written line once (``phtm.commit.flush-data``, a spin each
with emulation), order, truncate the log (the header = the tag), clwb, order, and only then
release the locks. A writer of a locked line aborts until then: the long conflict window of
card §7.

**Recovery**: for each thread, a marker right after its entries with the tag one more than the
header's and a verifying hash means a committed transaction whose write-back may not be
persistent: its entries are stored again, flushed, ordered, and the header advanced (flushed,
ordered). Logs holding committed transactions at a crash wrote disjoint lines (each held its
lines' locks until its truncation was persistent), so they are replayed in any order.

Serialization order = the HTM commit order (TX_COMMIT right after ``xend`` or under the SGL);
TX_DURABLE when the transaction returns. docs/protocols/nvhtm/nvhtm.md describes the protocol beside
NV-HTM.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ...config import LINE
from ...errors import ConfigError, PmsimError
from ...tm.htm import HtmAbort, HtmRunner, HtmRunStats, check
from ...trace import Mark
from ..alloclog import ALLOC_STEPS, FreeListAlloc
from ..appdata import AppData
from ..base import PB_DOMAINS, Body, OptimisticRuntime, RuntimeCosts, Tx
from ..layout import Layout, PMSpec
from ..mutation import Mutant, delay, drop, patch
from ..registry import register_mutant, register_runtime, variant

SLOT = 16
"""Bytes of a log slot: an entry ``(home, value)`` or the marker."""
PER_LINE = LINE // SLOT
MASK64 = (1 << 64) - 1
LOCKED = 0x11
"""xabort code: a write found its line locked by another thread's unfinished commit."""


def marker_word(tag: int, slot: int) -> int:
    """The marker's first word: a 63-bit FNV-1a hash of the tag and the marker's slot, over
    the odd tag bit (entries hold even home addresses)."""
    h = 0xCBF29CE484222325
    for w in (tag, slot):
        h = ((h ^ w) * 0x100000001B3) & MASK64
    return (h << 1 | 1) & MASK64


@dataclass
class PhtmCounts:
    """PM traffic of the workers in card §3's two counting modes."""

    updates: int = 0
    read_only: int = 0
    entries: int = 0
    """Log entries of committed updates (distinct words written)."""
    data_lines: int = 0
    """Distinct data lines written back (and flushed) by committed updates."""
    literal_words: int = 0
    """8-byte words the workers store in PM: entries (2 per write, repeats and the SGL path's
    undone attempts included), marker (2), the write-back, the header, and the in-transaction
    stores of the current value (one per distinct word)."""
    literal_flushes: int = 0
    """clwb's the workers issue: the entries' lines, the marker's, the data lines, the header."""
    paper_writes: int = 0
    """Paper-calibrated (Table 1): entries, marker, written-back words, the truncation."""
    paper_flushes: int = 0
    """Paper-calibrated: the log lines of entries and marker, the data lines, the header."""
    lock_waits: int = 0
    """SGL-path writes that waited for a line's lock."""

    def per_tx(self) -> dict[str, float]:
        n = max(self.updates + self.read_only, 1)
        return {"literal_words_per_tx": self.literal_words / n,
                "literal_flushes_per_tx": self.literal_flushes / n,
                "paper_writes_per_tx": self.paper_writes / n,
                "paper_flushes_per_tx": self.paper_flushes / n}


class PhtmTx(Tx):
    """The object API over one attempt: reads see the transaction's own buffered writes."""

    def __init__(self, rt: PhtmRuntime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.prt = rt
        self.hw = False
        self.buf: dict[int, int] = {}  # home -> newest value
        self.slot_of: dict[int, int] = {}  # home -> its log slot
        self.locked: dict[int, int] = {}  # lock address -> data line that took it
        self.log_words = 0  # log words this attempt stored (2 per write, repeats included)

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        cpu.work(self.prt.costs.call_ns)
        a = obj + 8 * field
        buf = self.buf
        ld = cpu.load
        vals = []
        for i in range(n):
            w = a + 8 * i
            v = buf.get(w)
            vals.append(ld(w) if v is None else v)
        if self.hw:
            check(cpu)
        return vals

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> Any:
        self.prt._write(self, obj + 8 * field, values)
        self.writes += 1

    def pause(self) -> Iterable[Any]:
        return self.cpu.maybe_yield(self.prt._q)

    def reset(self) -> None:
        """Forget an aborted attempt: its blocks go back to the free lists."""
        for b in self.allocs:
            self.prt.heap.push(b)
        self.allocs.clear()
        self.frees.clear()
        self.fresh.clear()
        self.buf.clear()
        self.slot_of.clear()
        self.locked.clear()
        self.writes = 0
        self.log_words = 0


class _LockWait(PmsimError):
    """An SGL-path write met a locked line: the body is undone and run again once it is free."""

    def __init__(self, lock: int) -> None:
        super().__init__(f"lock {lock:#x} is held")
        self.lock = lock


@register_runtime
class PhtmRuntime(AppData, FreeListAlloc, OptimisticRuntime):
    """PHTM-like: a redo log written inside HTM, per-line locks held from the write to the
    data flush, the data written and flushed in place after the commit."""

    name = "phtm"
    family = "phtm"
    lock_lines: ClassVar[int] = 256
    """Write locks (each on a DRAM line of its own); a data line takes lock (line / 64) mod
    lock_lines."""
    flush_ns: ClassVar[float] = 0.0
    """Flush emulation (card §8): every flushed line also costs this spin (paper: 500 ns)."""
    htm_budget: ClassVar[int] = 5
    spin_ns: ClassVar[float] = 20.0
    unlock_before_truncate: ClassVar[bool] = False
    """(mutant) release the locks right after the write-back instead of once the data is flushed
    and the log truncated."""

    STEPS = {
        "phtm.write.log": ("group", "store the entry (home, value) into the transaction's log "
                           "slot, inside the hardware transaction (not flushed)"),
        "phtm.commit.flush-log": ("flush", "clwb the entries' lines (PHTM flushes them inside "
                                  "the transaction)"),
        "phtm.commit.fence-log": ("order", "the entries are persistent before the marker"),
        "phtm.commit.marker": ("group", "store the marker (hash(tag, slot), tag) after the "
                               "entries"),
        "phtm.commit.flush-marker": ("flush", "clwb the marker's line"),
        "phtm.commit.fence-marker": ("order", "the durable commit point (atomic with the commit "
                                     "in PHTM's hardware), before the write-back"),
        "phtm.commit.write-back": ("group", "store every buffered value at its home"),
        "phtm.commit.flush-data": ("flush", "clwb every written data line once"),
        "phtm.commit.fence-data": ("order", "the data is persistent before the truncation"),
        "phtm.commit.truncate": ("store", "the header = the tag: the log is empty"),
        "phtm.commit.flush-truncate": ("flush", "clwb the header"),
        "phtm.commit.fence-truncate": ("order", "the truncation is persistent before the locks "
                                       "are released (a later writer's value must not be "
                                       "replayed over)"),
        "phtm.commit.unlock": ("group", "release the transaction's line locks (DRAM)"),
        "phtm.recover.replay": ("group", "store every committed log's entries at their homes; "
                                "clwb"),
        "phtm.recover.order": ("order", "the replayed data is persistent before the truncation"),
        "phtm.recover.truncate": ("group", "advance each replayed log's header; clwb"),
        "phtm.recover.order-truncate": ("order", "the truncation is persistent before new "
                                        "transactions"),
    }
    OMIT_STEPS = frozenset(ALLOC_STEPS)
    CHECKS = {
        "phtm.recover.marker": "a log counts only if a marker whose hash encodes its tag (the "
                               "header's plus one) and its slot follows the entries",
    }

    # -- layout ----------------------------------------------------------------------------------
    @classmethod
    def record_slots(cls, spec: PMSpec) -> int:
        """Slots of the largest transaction: every word it may write (the objects it allocates
        too), every alloc/free bit, the marker."""
        obj_words = max((hi for _, hi, _ in spec.heap), default=0)
        return spec.max_tx_words + spec.max_tx_allocs * (1 + obj_words) + 1

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return LINE + SLOT * cls.record_slots(spec)

    @classmethod
    def alloc_cap(cls, spec: PMSpec) -> int:
        return 0  # allocation bits travel in the redo log

    @classmethod
    def dram_bytes(cls) -> int:
        """DRAM from the region's start: the SGL's line and the lock lines."""
        return LINE * (1 + cls.lock_lines)

    @classmethod
    def fit_config(cls, cfg: Any, layout: Layout) -> Any:
        """``cfg`` with its DRAM region grown (to a power of two) to hold the locks."""
        dram = cfg.dram_region
        if dram is None:
            raise ConfigError(f"{cls.name} keeps its write locks in DRAM, but the machine config "
                              "has no 'dram' region: add one")
        need = cls.dram_bytes()
        if dram.size < need:
            size = 1 << (need - 1).bit_length()
            cfg = cfg.replace(regions=tuple(dataclasses.replace(r, size=size) if r is dram else r
                                            for r in cfg.regions))
        return cfg

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        dram = machine.config.dram_region
        need = self.dram_bytes()
        if dram is None or dram.size < need:
            raise ConfigError(f"{self.name} needs {need} bytes of DRAM for its locks: build the "
                              f"machine with {type(self).__name__}.fit_config(cfg, layout) "
                              "(Session.create does)")
        if self.lock_lines < 1:
            raise ConfigError(f"{self.name}: lock_lines must be >= 1, got {self.lock_lines}")
        self._locks = dram.base + LINE
        self.runner = HtmRunner(machine, dram.base, self.htm_budget, self.spin_ns)
        self._q = self.runner.quantum
        self._data_lo = -(-(layout.log[-1] + layout.log_bytes) // LINE) * LINE
        self._data_hi = layout.end
        self._slots = (layout.log_bytes - LINE) // SLOT
        self.counts = PhtmCounts()
        self._reset_volatile()

    def _reset_volatile(self) -> None:
        t = self.layout.threads
        self._done = [int(self.m.peek(self.layout.log[u])) for u in range(t)]
        for i in range(self.lock_lines):
            self.m.poke(self._locks + LINE * i, 0)

    def _load(self) -> None:
        super()._load()
        self._reset_volatile()

    def _slot(self, t: int, i: int) -> int:
        return self.layout.log[t] + LINE + SLOT * i

    def lock_of(self, line: int) -> int:
        """The DRAM address of the lock of data line ``line``."""
        return self._locks + LINE * ((line // LINE) % self.lock_lines)

    def _spin(self, cpu: Any, lines: int) -> None:
        if self.flush_ns > 0 and lines:
            cpu.spin(self.flush_ns * lines)

    # -- statistics --------------------------------------------------------------------------------
    def htm_stats(self) -> HtmRunStats:
        return self.runner.total()

    def counters(self) -> dict[str, float]:
        """The runner's attempts, commits, fallbacks and aborts by cause (``htm.*``) and the
        PM traffic of both counting modes (``phtm.*``)."""
        out = {f"htm.{k}": float(v) for k, v in dataclasses.asdict(self.runner.total()).items()}
        c = self.counts
        for f in dataclasses.fields(c):
            out[f"phtm.{f.name}"] = float(getattr(c, f.name))
        return out

    # -- transactions -------------------------------------------------------------------------------
    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Run ``body`` in hardware transactions (then under the SGL); return once its data is
        persistent in place and its locks are released (or once the body aborted)."""
        start = cpu.clock
        txid = self._next_txid(cpu)
        t = cpu.tid
        tx = PhtmTx(self, cpu, txid)
        tx.start = start
        self.active[t] = tx
        cpu.mark(Mark.TX_BEGIN, txid)
        if on_begin is not None:
            on_begin(tx)

        def attempt(hw: bool) -> Generator[Any, Any, Any]:
            tx.hw = hw
            while True:
                try:
                    res = body(tx)
                    if isinstance(res, Generator):
                        res = yield from res
                    break
                except _LockWait as e:  # SGL path only: undo nothing (nothing is in place)
                    self._unlock(cpu, tx, "phtm.commit.unlock")
                    self.counts.literal_words += tx.log_words
                    tx.reset()
                    self.counts.lock_waits += 1
                    while cpu.load(e.lock):
                        cpu.work(self.spin_ns)
                        yield from cpu.maybe_yield(self._q)
            if res is not False and hw and tx.slot_of:
                self._spin(cpu, self._log_lines(len(tx.slot_of) + 1))
                check(cpu)
            return res

        ok = yield from self.runner.run(cpu, attempt, lambda: self._on_commit(tx),
                                        lambda: self._on_abort(tx), lambda _s: tx.reset())
        if ok:
            self.commits += 1
            if tx.slot_of:
                yield from self._after_commit(cpu, tx)
            else:
                self.counts.read_only += 1
            cpu.mark(Mark.TX_DURABLE, txid)
            for b in tx.frees:
                self.heap.push(b)
        else:
            self.aborts += 1
        yield from self._finish(tx)
        return tx

    def _log_lines(self, slots: int) -> int:
        """Lines of log slots ``[0, slots)``."""
        return -(-slots // PER_LINE)

    def _write(self, tx: PhtmTx, home: int, values: Sequence[int]) -> None:
        """Per word: the line's lock (first write of the line), the in-place store of the
        current value (hardware path), the log entry and the buffer."""
        cpu = tx.cpu
        t = tx.tid
        cpu.work(self.costs.call_ns)
        if home & 7 or home < self._data_lo or home + 8 * len(values) > self._data_hi:
            raise PmsimError(f"{self.name}: [{home:#x}, {home + 8 * len(values):#x}) is not "
                             "application data of this layout")
        me = t + 1
        for i, v in enumerate(values):
            a = home + 8 * i
            lk = self.lock_of(a & ~(LINE - 1))
            if lk not in tx.locked:
                held = int(cpu.load(lk))
                if held and held != me:
                    if tx.hw:
                        cpu.xabort(LOCKED)
                        raise HtmAbort(cpu.xstatus())
                    raise _LockWait(lk)
                cpu.store(lk, me)
                tx.locked[lk] = a & ~(LINE - 1)
            if tx.hw and a not in tx.buf:
                cpu.store(a, cpu.load(a))  # PHTM's in-place store: the line joins the write set
            s = tx.slot_of.get(a)
            if s is None:
                s = tx.slot_of[a] = len(tx.slot_of)
                if s + 1 >= self._slots:
                    raise ConfigError(f"{self.name}: a transaction of thread {t} writes more "
                                      f"than the {self._slots - 1} words its log holds: raise "
                                      "PMSpec.max_tx_words")
            with self.step(cpu, "phtm.write.log") as c:
                sa = self._slot(t, s)
                c.store(sa, a)
                c.store(sa + 8, v)
            tx.log_words += 2
            tx.buf[a] = v
        if tx.hw:
            check(cpu)

    def _on_commit(self, tx: PhtmTx) -> None:
        """Right after xend (or under the SGL): the serialization point; an update persists its
        log and marker and stores its data in place, with no yield in between."""
        cpu = tx.cpu
        t = tx.tid
        self.commit_order.append(tx.txid)
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        n = len(tx.slot_of)
        if not n:
            return
        base = self._slot(t, 0)
        self.flush(cpu, "phtm.commit.flush-log",
                   [base + LINE * k for k in range(self._log_lines(n))])
        self.order(cpu, "phtm.commit.fence-log")
        tag = self._done[t] + 1
        m = self._slot(t, n)
        with self.step(cpu, "phtm.commit.marker") as c:
            c.store(m, marker_word(tag, n))
            c.store(m + 8, tag)
        self.flush(cpu, "phtm.commit.flush-marker", (m & ~(LINE - 1),))
        self.order(cpu, "phtm.commit.fence-marker")
        with self.step(cpu, "phtm.commit.write-back") as c:
            for a, v in tx.buf.items():
                c.store(a, v)
        c_ = self.counts
        c_.updates += 1
        c_.entries += n
        lines = list(dict.fromkeys(a & ~(LINE - 1) for a in tx.buf))
        c_.data_lines += len(lines)
        log_lines = len({(base + SLOT * k) & ~(LINE - 1) for k in range(n)})
        mline_new = (m & ~(LINE - 1)) != ((base + SLOT * (n - 1)) & ~(LINE - 1))
        # a hardware commit emits each buffered word once: the entries and the current values
        logged = 3 * n if tx.hw else tx.log_words
        c_.literal_words += logged + 2 + len(tx.buf) + 1
        c_.literal_flushes += log_lines + 1 + len(lines) + 1
        c_.paper_writes += n + 1 + len(tx.buf) + 1
        c_.paper_flushes += log_lines + int(mline_new) + len(lines) + 1

    def _after_commit(self, cpu: Any, tx: PhtmTx) -> Generator[Any, Any, None]:
        """Flush the data lines, truncate the log, release the locks (others run meanwhile)."""
        t = tx.tid
        if self.unlock_before_truncate:
            self._unlock(cpu, tx, "phtm.commit.unlock")
        yield from cpu.maybe_yield(self._q)
        lines = list(dict.fromkeys(a & ~(LINE - 1) for a in tx.buf))
        self.flush(cpu, "phtm.commit.flush-data", lines)
        for _ in lines:
            self._spin(cpu, 1)
            yield from cpu.maybe_yield(self._q)
        self.order(cpu, "phtm.commit.fence-data")
        tag = self._done[t] + 1
        h = self.layout.log[t]
        self.st(cpu, "phtm.commit.truncate", h, tag)
        self.flush(cpu, "phtm.commit.flush-truncate", (h,))
        self._spin(cpu, 1)
        yield from cpu.maybe_yield(self._q)
        self.order(cpu, "phtm.commit.fence-truncate")
        self._done[t] = tag
        if not self.unlock_before_truncate:
            self._unlock(cpu, tx, "phtm.commit.unlock")
        yield from cpu.maybe_yield(self._q)

    def _unlock(self, cpu: Any, tx: PhtmTx, step: str) -> None:
        if not tx.locked:
            return
        with self.step(cpu, step) as c:
            for lk in tx.locked:
                c.store(lk, 0)
        tx.locked.clear()

    def _on_abort(self, tx: PhtmTx) -> None:
        """A user abort: under the SGL release the locks it took (nothing is in place)."""
        if not tx.hw:
            self._unlock(tx.cpu, tx, "phtm.commit.unlock")
            self.counts.literal_words += tx.log_words
        tx.reset()
        tx.cpu.mark(Mark.TX_ABORT, tx.txid)

    # -- allocation: bits in the bitmap, logged like any write --------------------------------------
    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        assert isinstance(tx, PhtmTx)
        word, mask = self.heap.bit_of(block)
        old = tx.read_words(word, 0, 1)[0]
        self._write(tx, word, [old | mask if allocated else old & ~mask])

    # -- recovery ----------------------------------------------------------------------------------
    def _committed(self, ld: Callable[[int], int], t: int, done: int) -> list[tuple[int, int]]:
        """The entries of thread ``t``'s log if they end in a valid marker, else none."""
        tag = done + 1
        strict = self.check("phtm.recover.marker")
        out = []
        for i in range(self._slots):
            a = self._slot(t, i)
            w = int(ld(a))
            if w & 1:
                if int(ld(a + 8)) != tag or (strict and w != marker_word(tag, i)):
                    return []
                return out
            if not self._is_home(w):
                return []
            out.append((w, int(ld(a + 8))))
        return []

    def _recover(self, cpu: Any) -> None:
        """Replay every committed log, then truncate it."""
        ld = cpu.load
        lay = self.layout
        todo = []
        for t in range(lay.threads):
            done = int(ld(lay.log[t]))
            ents = self._committed(ld, t, done)
            if ents:
                todo.append((t, done + 1, ents))
        if not todo:
            return
        with self.step(cpu, "phtm.recover.replay") as c:
            lines: dict[int, None] = {}
            for _, _, ents in todo:
                for a, v in ents:
                    c.store(a, v)
                    lines[a & ~(LINE - 1)] = None
            for line in lines:
                c.clwb(line)
        self.order(cpu, "phtm.recover.order")
        with self.step(cpu, "phtm.recover.truncate") as c:
            for t, tag, _ in todo:
                c.store(lay.log[t], tag)
                c.clwb(lay.log[t])
        self.order(cpu, "phtm.recover.order-truncate")

    def _check_logs(self) -> list[str]:
        """After recovery no log holds a committed transaction."""
        peek = self.m.peek
        return [f"log {t} still holds a committed transaction" for t in range(self.layout.threads)
                if self._committed(peek, t, int(peek(self.layout.log[t])))]


PHTM_EMUL = variant(PhtmRuntime, "phtm-emul", flush_ns=500.0)
"""The paper's flush emulation (card §8): every flushed line also spins 500 ns."""

__all__ = ["LOCKED", "PHTM_EMUL", "PhtmCounts", "PhtmRuntime", "PhtmTx", "marker_word"]


def _const(value: Any) -> Callable[[Any], Any]:
    def _patch(orig: Any) -> Any:
        return value
    return _patch


MUTANTS = (
    Mutant("phtm:no-log-flush", PhtmRuntime, (drop("phtm.commit.flush-log"),), PB_DOMAINS,
           "the entries are never flushed: the marker persists, the entries do not, and "
           "recovery replays stale slots over the data", "entries and marker on different "
           "lines", workload="array"),
    Mutant("phtm:no-log-fence", PhtmRuntime, (drop("phtm.commit.fence-log"),), PB_DOMAINS,
           "the marker is not ordered after the entries: it may persist first",
           "entries and marker on different lines", workload="array"),
    Mutant("phtm:no-data-flush", PhtmRuntime, (drop("phtm.commit.flush-data"),), PB_DOMAINS,
           "the data lines are not flushed before the truncation: a committed transaction's "
           "writes are lost"),
    Mutant("phtm:truncate-early", PhtmRuntime,
           (delay("phtm.commit.flush-data", after="phtm.commit.truncate"),), PB_DOMAINS,
           "the truncation is issued before the data flush: the log may be gone while the data "
           "is still in the cache"),
    Mutant("phtm:early-unlock", PHTM_EMUL,
           (patch("unlock_before_truncate", _const(True), "unlock after the write-back"),),
           ("pdom0", "pdom1", "pdom2"),
           "the locks are released right after the write-back, not once the data is flushed and "
           "the log truncated: a later writer of the line commits and truncates first, and "
           "recovery replays the older log over its value", "two threads writing the same "
           "lines, inside the emulated data flush", 2, "bank"),
)
"""Card-derived PHTM mutants (card §7: the log flushed before the commit marker, the data
flushed after the commit, the locks held until then)."""

for _m in MUTANTS:
    register_mutant(_m)
