"""PSTM-like durable transactions, NV-HTM's software baseline (papers/nv-htm.md §7, §10 item 7):
Mnemosyne-style persistence on TinySTM with in-place updates and an undo log, and its recovery.

**Transactions** run under the STM (:mod:`pmsim.tm.stm`, design ``write-through``: encounter-time
locking, each write stored in place at once, the old value kept for a rollback) directly on the
data's homes in PM; the STM's clock and lock table are in DRAM. Allocation bits are set and
cleared through the STM like any data word, so they are undo-logged too.

**Each write** (the STM's ``on_write`` hook: the stripe's lock is held, the value is not yet
stored), for the first write of a word in the transaction: ``pstm.write.log`` stores the undo
entry ``(home, old, tag, check)`` into the next 32-byte slot of the thread's log,
``pstm.write.flush`` clwb's its line and ``pstm.write.order`` orders it before the in-place
store the STM then makes (card §7: "each write flushes one undo entry before the in-place
store"). ``tag`` is the transaction's sequence number on its thread (one more than the log
header's), ``check`` a hash of the entry, its slot and its tag, so that recovery tells the
current transaction's entries from an older one's and from a torn one.

**Commit** (``on_commit``: validation passed, the locks still held): ``pstm.commit.flush``
clwb's every line the transaction wrote, ``pstm.commit.order``; the commit marker
(``pstm.commit.marker``: the header's word = the transaction's tag, which also discards the
log), ``pstm.commit.flush-marker``, ``pstm.commit.order-marker``: the durable commit point.
Then the STM releases the locks.

**Abort** (``on_abort``: the STM has restored the old values in place, the locks still held):
the restored lines are flushed and ordered, then the log is discarded the same way
(``pstm.abort.*``), before any other transaction may take the stripes: "aborts still cause PM
traffic" (card §7).

**Recovery**: for each thread, the entries at the head of its log whose tag is one more than
the header's and whose check verifies belong to a transaction that neither committed nor
finished aborting: their old values are stored back newest first and flushed, ordered, and the
header is advanced past it (flushed, ordered). Uncommitted transactions of different threads
wrote disjoint words (their stripes were locked), so the logs are undone in any order. A crash
during recovery repeats it: undoing is idempotent until the header moves.

**Flush cost modes** (card §8, §10 item 4): realistic (clwb + an ordering point through the
WPQ) by default; ``flush_ns`` (the ``pstm-emul`` variant: 500 ns) adds a spin per flushed line,
charged again for every repeat, as the paper's emulation does. docs/protocols/nvhtm/nvhtm.md
describes the protocol beside NV-HTM.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ...config import LINE
from ...errors import ConfigError
from ...tm.stm import AbortCause, Stm, StmConfig, StmTx
from ...trace import Mark
from ..alloclog import ALLOC_STEPS
from ..appdata import AppData
from ..base import PB_DOMAINS, RuntimeCosts, Tx
from ..layout import Layout, PMSpec
from ..mutation import Mutant, drop
from ..registry import register_mutant, register_runtime, variant
from ..volatile.stm import StmLoggedBitmap

SLOT = 32
"""Bytes of an undo entry: home, old value, tag, check."""
MASK64 = (1 << 64) - 1


def entry_check(home: int, old: int, tag: int, slot: int) -> int:
    """The check word of an undo entry: a 64-bit FNV-1a hash of its fields and its slot."""
    h = 0xCBF29CE484222325
    for w in (home, old, tag, slot):
        h = ((h ^ w) * 0x100000001B3) & MASK64
    return h


@dataclass
class PstmCounts:
    """PM traffic of the workers (card §3's two counting modes, per transaction in
    :meth:`per_tx`)."""

    updates: int = 0
    read_only: int = 0
    aborts_logged: int = 0
    """Aborted attempts that had logged entries (their rollback wrote PM)."""
    entries: int = 0
    """Undo entries logged (committed and aborted attempts)."""
    data_words: int = 0
    """In-place stores of the STM (every write, repeats included)."""
    restored_words: int = 0
    """Words the rollbacks stored back."""
    literal_words: int = 0
    """8-byte words the workers store in PM (4 per entry, in-place, restores, markers)."""
    literal_flushes: int = 0
    """clwb's the workers issue (one per entry, the written or restored lines, the marker)."""
    paper_writes: int = 0
    """Paper-calibrated: entries, in-place and restored words, markers."""

    def per_tx(self) -> dict[str, float]:
        n = max(self.updates + self.read_only, 1)
        return {"literal_words_per_tx": self.literal_words / n,
                "literal_flushes_per_tx": self.literal_flushes / n,
                "paper_writes_per_tx": self.paper_writes / n,
                "paper_flushes_per_tx": self.literal_flushes / n}


@register_runtime
class PstmRuntime(AppData, StmLoggedBitmap):
    """PSTM-like: TinySTM write-through on PM, a flushed undo entry before each first write,
    the data flushed at commit, then a marker that discards the log."""

    name = "pstm"
    family = "pstm"
    durable = True
    stm_config: ClassVar[StmConfig] = StmConfig(design="write-through")
    """TinySTM write-through / encounter-time locking: updates in place with an undo set."""
    flush_ns: ClassVar[float] = 0.0
    """Flush emulation (card §8): each flushed line also spins this long (paper: 500 ns)."""

    STEPS = {
        "pstm.write.log": ("group", "store the undo entry (home, old, tag, check) into the next "
                           "log slot"),
        "pstm.write.flush": ("flush", "clwb the entry's line"),
        "pstm.write.order": ("order", "the entry is persistent before the in-place store"),
        "pstm.commit.flush": ("flush", "clwb every line the transaction wrote in place"),
        "pstm.commit.order": ("order", "the data is persistent before the marker"),
        "pstm.commit.marker": ("store", "the header = the transaction's tag: committed, the log "
                               "discarded"),
        "pstm.commit.flush-marker": ("flush", "clwb the header"),
        "pstm.commit.order-marker": ("order", "the durable commit point, before the locks are "
                                     "released"),
        "pstm.abort.flush": ("flush", "clwb every line the rollback restored"),
        "pstm.abort.order": ("order", "the restored data is persistent before the discard"),
        "pstm.abort.discard": ("store", "the header = the attempt's tag: the log discarded"),
        "pstm.abort.flush-discard": ("flush", "clwb the header"),
        "pstm.abort.order-discard": ("order", "the discard is persistent before the locks are "
                                     "released (a later writer's value must not be undone)"),
        "pstm.recover.undo": ("group", "store every valid entry's old value back, newest first; "
                              "clwb"),
        "pstm.recover.order": ("order", "the restored data is persistent before the discard"),
        "pstm.recover.discard": ("group", "advance each header past the undone transaction; clwb"),
        "pstm.recover.order-discard": ("order", "the discard is persistent before new "
                                       "transactions"),
    }
    OMIT_STEPS = frozenset(ALLOC_STEPS)
    CHECKS = {
        "pstm.recover.check": "an entry counts only if its tag is the header's plus one and its "
                              "check word verifies",
        "pstm.recover.bounds": "an entry's home is a word of application data",
    }

    # -- layout ----------------------------------------------------------------------------------
    @classmethod
    def record_slots(cls, spec: PMSpec) -> int:
        """Entries of the largest transaction: every word written (those of the objects it
        allocated too: the STM logs every first write) and every alloc/free bit."""
        obj_words = max((hi for _, hi, _ in spec.heap), default=0)
        return spec.max_tx_words + spec.max_tx_allocs * (1 + obj_words)

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return LINE + SLOT * max(cls.record_slots(spec), 1)

    @classmethod
    def alloc_cap(cls, spec: PMSpec) -> int:
        return 0  # allocation bits are undo-logged through the STM

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        self.stm = Stm(machine, self.stm_config, on_write=self._on_write,
                       on_commit=self._on_commit, on_abort=self._on_abort)
        self._data_lo = -(-(layout.log[-1] + layout.log_bytes) // LINE) * LINE
        self._data_hi = layout.end
        self._slots = (layout.log_bytes - LINE) // SLOT
        self.counts = PstmCounts()
        self._reset_volatile()

    def _reset_volatile(self) -> None:
        t = self.layout.threads
        self._done = [int(self.m.peek(self.layout.log[u])) for u in range(t)]
        self._n = [0] * t

    def _load(self) -> None:
        super()._load()
        self._reset_volatile()

    def _slot(self, t: int, i: int) -> int:
        return self.layout.log[t] + LINE + SLOT * i

    def _spin(self, cpu: Any, lines: int) -> None:
        if self.flush_ns > 0 and lines:
            cpu.spin(self.flush_ns * lines)

    # -- statistics --------------------------------------------------------------------------------
    def counters(self) -> dict[str, float]:
        """The STM's counters (``stm.*``) and the PM traffic of both counting modes
        (``pstm.*``)."""
        out = super().counters()
        c = self.counts
        for f in dataclasses.fields(c):
            out[f"pstm.{f.name}"] = float(getattr(c, f.name))
        return out

    # -- transactions ----------------------------------------------------------------------------
    def _committed(self, cpu: Any, tx: Tx, stx: StmTx) -> None:
        """Allocations were logged in ``on_commit``; a read-only attempt has no commit record,
        so it is marked committed here."""
        for b in tx.frees:
            self.heap.push(b)
        if stx.read_only:
            self.counts.read_only += 1
            cpu.mark(Mark.TX_COMMIT, tx.txid)

    def _on_write(self, stx: StmTx, addr: int, value: int, old: int | None) -> None:
        """Before a write takes effect (its stripe locked): the first write of a word logs
        and persists its undo entry."""
        t = stx.tid
        c = self.counts
        c.data_words += 1
        c.literal_words += 1
        c.paper_writes += 1
        if old is None:
            return
        cpu = stx.cpu
        i = self._n[t]
        if i >= self._slots:
            raise ConfigError(f"{self.name}: a transaction of thread {t} wrote more than the "
                              f"{self._slots} words its log holds: raise PMSpec.max_tx_words")
        tag = self._done[t] + 1
        a = self._slot(t, i)
        with self.step(cpu, "pstm.write.log") as s:
            s.store(a, addr)
            s.store(a + 8, old)
            s.store(a + 16, tag)
            s.store(a + 24, entry_check(addr, old, tag, i))
        self.flush(cpu, "pstm.write.flush", (a & ~(LINE - 1),))
        self._spin(cpu, 1)
        self.order(cpu, "pstm.write.order")
        self._n[t] = i + 1
        c.entries += 1
        c.literal_words += 4
        c.paper_writes += 1
        c.literal_flushes += 1

    def _finish_log(self, cpu: Any, t: int, lines: list[int], kind: str) -> None:
        """Flush ``lines``, order, store and flush the header (the marker or the discard),
        order: the log of thread ``t`` is empty."""
        c = self.counts
        self.flush(cpu, f"pstm.{kind}.flush", lines)
        self._spin(cpu, len(lines))
        self.order(cpu, f"pstm.{kind}.order")
        tag = self._done[t] + 1
        h = self.layout.log[t]
        if kind == "commit":
            tx = self.active[t]
            assert tx is not None
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            self.st(cpu, "pstm.commit.marker", h, tag)
            self.flush(cpu, "pstm.commit.flush-marker", (h,))
            self._spin(cpu, 1)
            self.order(cpu, "pstm.commit.order-marker")
        else:
            self.st(cpu, "pstm.abort.discard", h, tag)
            self.flush(cpu, "pstm.abort.flush-discard", (h,))
            self._spin(cpu, 1)
            self.order(cpu, "pstm.abort.order-discard")
        self._done[t] = tag
        self._n[t] = 0
        c.literal_words += 1
        c.paper_writes += 1
        c.literal_flushes += len(lines) + 1

    def _on_commit(self, stx: StmTx, ts: int) -> None:
        """Validation passed, locks held: flush the data, then the marker (the commit point)."""
        lines = list(dict.fromkeys(a & ~(LINE - 1) for a in stx.write_set))
        self.counts.updates += 1
        self._finish_log(stx.cpu, stx.tid, lines, "commit")

    def _on_abort(self, stx: StmTx, cause: AbortCause) -> None:
        """The old values are back in place, locks held: persist them, discard the log."""
        t = stx.tid
        c = self.counts
        c.restored_words += len(stx.undo)
        c.literal_words += len(stx.undo)
        c.paper_writes += len(stx.undo)
        if not self._n[t]:
            return
        c.aborts_logged += 1
        lines = list(dict.fromkeys(a & ~(LINE - 1) for a, _ in stx.undo))
        self._finish_log(stx.cpu, t, lines, "abort")

    # -- recovery ----------------------------------------------------------------------------------
    def _valid_entries(self, ld: Callable[[int], int], t: int, done: int
                       ) -> list[tuple[int, int]]:
        """``(home, old)`` of the valid entries at the head of thread ``t``'s log, in order."""
        out = []
        tag = done + 1
        chk = self.check("pstm.recover.check")
        bounds = self.check("pstm.recover.bounds")
        for i in range(self._slots):
            a = self._slot(t, i)
            home, old, tg, ck = (int(ld(a + 8 * k)) for k in range(4))
            if chk and (tg != tag or ck != entry_check(home, old, tg, i)):
                break
            if not chk and tg != tag:
                break
            if bounds and not self._is_home(home):
                break
            out.append((home, old))
        return out

    def _recover(self, cpu: Any) -> None:
        """Undo every thread's unfinished transaction, then advance the headers past it."""
        ld = cpu.load
        lay = self.layout
        todo = []
        for t in range(lay.threads):
            done = int(ld(lay.log[t]))
            ents = self._valid_entries(ld, t, done)
            if ents:
                todo.append((t, done + 1, ents))
        if not todo:
            return
        with self.step(cpu, "pstm.recover.undo") as c:
            lines: dict[int, None] = {}
            for _, _, ents in todo:
                for home, old in reversed(ents):
                    c.store(home, old)
                    lines[home & ~(LINE - 1)] = None
            for line in lines:
                c.clwb(line)
        self.order(cpu, "pstm.recover.order")
        with self.step(cpu, "pstm.recover.discard") as c:
            for t, tag, _ in todo:
                c.store(lay.log[t], tag)
                c.clwb(lay.log[t])
        self.order(cpu, "pstm.recover.order-discard")

    def _check_logs(self) -> list[str]:
        """After recovery no log holds a valid entry."""
        peek = self.m.peek
        return [f"log {t} still holds {len(e)} valid undo entries"
                for t in range(self.layout.threads)
                for e in (self._valid_entries(peek, t, int(peek(self.layout.log[t]))),) if e]


PSTM_EMUL = variant(PstmRuntime, "pstm-emul", flush_ns=500.0)
"""The paper's flush emulation (card §8): every flushed line also spins 500 ns."""

__all__ = ["PSTM_EMUL", "PstmCounts", "PstmRuntime", "SLOT", "entry_check"]

MUTANTS = (
    Mutant("pstm:no-entry-flush", PstmRuntime, (drop("pstm.write.flush"),), PB_DOMAINS,
           "the undo entry is never flushed: the in-place store (flushed at commit or evicted) "
           "may persist while its entry is lost, and a crash before the marker leaves a torn "
           "transaction"),
    Mutant("pstm:no-entry-order", PstmRuntime, (drop("pstm.write.order"),), PB_DOMAINS,
           "the undo entry is not ordered before the in-place store: the store may persist "
           "first"),
    Mutant("pstm:no-data-flush", PstmRuntime, (drop("pstm.commit.flush"),), PB_DOMAINS,
           "the data is not flushed before the marker: a committed transaction's writes are "
           "lost once the marker discards the log"),
    Mutant("pstm:no-abort-flush", PstmRuntime, (drop("pstm.abort.flush"),), PB_DOMAINS,
           "a rollback's restored values are not flushed before the discard: an evicted "
           "in-place value of the aborted attempt survives with no entry to undo it",
           "user aborts (bank transfers that overdraw)"),
)
"""Card-derived PSTM mutants (card §7: a flushed undo entry before each in-place store, the
data flushed at commit, aborts that write PM)."""

for _m in MUTANTS:
    register_mutant(_m)
