"""Mnemosyne-like durable transactions (Volos et al., ASPLOS'11), DUDETx's redo-logging baseline
(papers/dudetx-decoupled.md §8 "Systems", §10 item 10): TinySTM write-back with read
redirection, a per-thread redo log in PM written at commit with CLFLUSH and one synchronous
persist per transaction, then in-place write-back to PM and log truncation; and its recovery.

**Transactions** run under the STM (:mod:`pmsim.tm.stm`, design ``write-back``) directly on
the data's homes in PM; its clock and lock table are in DRAM. Writes are buffered in the STM's
redo write set, and a read of a word the transaction wrote is redirected to it (TinySTM's
write-set lookup, charged ``lookup_ns``): the read redirection of card §2.2. Allocation bits
are set and cleared through the STM like any data word, so they travel in the redo record.

**Commit** (in the STM's ``on_commit``: validation passed, commit locks held, nothing written
back yet), for an update transaction with commit timestamp ``ts``:

1. ``mnemosyne.log.append``: store the write set as ``(home, value)`` slots at the head of the
   thread's log, then ``END = [ts << 24 | n << 1 | 1][checksum]`` (the record format of
   :mod:`.dudetx`: the checksum covers the epoch, ts, n and the entries);
2. ``mnemosyne.log.flush``: CLFLUSH every log line (synchronous, so each one misses);
3. ``mnemosyne.log.order``: the one persist ordering of the transaction; it costs the emulated
   ``max(persist_latency_ns, bytes / persist_bw)`` of card §8 (1,000 cycles, 1 GB/s, the
   bandwidth shared by every thread). The transaction is durable here (the commit point);
4. ``mnemosyne.commit.write-back``: TinySTM's write-back, done by the runtime (it takes the
   STM's write set, so the STM stores nothing after the hook): store every value at its home,
   line by line, each line followed by its ``mnemosyne.commit.flush`` (CLFLUSH);
5. ``mnemosyne.commit.order``;
6. ``mnemosyne.truncate``: zero the END word (CLFLUSH), ``mnemosyne.truncate.order``.

Then the STM releases the commit locks. Read-only transactions write and flush nothing.

**Recovery** scans each thread's log from its head (entries are homes, even words; END is
odd), keeps a record whose END names its position and whose checksum verifies with the
persisted epoch, replays the records in ``ts`` order (store, CLFLUSH), orders, then bumps the
epoch (which invalidates every record: the logs are truncated) and orders again.

**Fidelity and departures.** Mnemosyne's own log is a torn-bit word log and it truncates
asynchronously, in a log manager; pmsim truncates synchronously while the commit locks are
held. That keeps recovery a per-thread scan: a record still valid at a crash cannot overlap a
newer transaction's writes, because a conflicting transaction takes the locks only after the
truncation is persistent (an asynchronous truncation would need a global, timestamp-ordered
truncation point, which Mnemosyne's log manager provides). So a transaction issues three
orderings, but only the log's carries the emulated persist latency: the "synchronous persist
per transaction" of card §10. With CLFLUSH a line is in the WPQ when the flush returns, so in
PDOM-1/2 the orderings are cheap fences and only PDOM-0 pays a barrier for each. The Intel
STM compiler's instrumentation is TinySTM's ``access_ns`` per access here.
docs/protocols/dudetx/baselines.md describes the protocol.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ...config import LINE
from ...errors import ConfigError
from ...tm.stm import Stm, StmConfig, StmTx
from ...trace import Mark
from ..alloclog import ALLOC_STEPS
from ..appdata import AppData
from ..base import RuntimeCosts, Tx
from ..descriptor import G_EPOCH
from ..layout import Layout, PMSpec
from ..mutation import Mutant, drop, skip_check
from ..registry import register_mutant, register_runtime
from ..volatile.stm import StmLoggedBitmap
from .dudetx import ID_SHIFT, N_MASK, SLOT, Bandwidth, end_word, record_checksum


@register_runtime
class MnemosyneRuntime(AppData, StmLoggedBitmap):
    """Mnemosyne-like: TinySTM write-back on PM, a redo log persisted at commit, then
    write-back in place and synchronous truncation."""

    name = "mnemosyne"
    family = "mnemosyne"
    durable = True
    stm_config: ClassVar[StmConfig] = StmConfig(design="write-back")
    """TinySTM write-back / encounter-time locking, the STM Mnemosyne's compiler targets."""
    persist_latency_ns: ClassVar[float] = 1000 / 3.4
    """Emulated latency of the log's persist ordering (card §8: 1,000 cycles at 3.4 GHz)."""
    persist_bw: ClassVar[float] = 1.0
    """Emulated NVM write bandwidth in bytes/ns = GB/s (card §8: 1 GB/s); 0 = unlimited."""

    STEPS = {
        "mnemosyne.log.append": ("group", "store the write set (home, value) and END (ts, n, "
                                 "checksum) at the head of the thread's log"),
        "mnemosyne.log.flush": ("flush", "CLFLUSH every line of the record"),
        "mnemosyne.log.order": ("order", "the record is persistent before any home store: the "
                                "commit point (the emulated persist latency)"),
        "mnemosyne.commit.write-back": ("group", "store the write set at its homes in PM"),
        "mnemosyne.commit.flush": ("flush", "CLFLUSH the written home lines"),
        "mnemosyne.commit.order": ("order", "the home data is persistent before the truncation"),
        "mnemosyne.truncate": ("group", "zero the record's END word; CLFLUSH it"),
        "mnemosyne.truncate.order": ("order", "the truncation is persistent before the commit "
                                     "locks are released (a conflicting transaction may then "
                                     "write the same words)"),
        "mnemosyne.recover.replay": ("group", "store every valid record at its homes in ts order; "
                                     "CLFLUSH"),
        "mnemosyne.recover.order": ("order", "the replayed data is persistent before truncation"),
        "mnemosyne.recover.truncate": ("group", "bump the log epoch (every record written before "
                                       "it is invalid); CLFLUSH"),
        "mnemosyne.recover.order-t": ("order", "the truncation is persistent before new "
                                      "transactions"),
    }
    OMIT_STEPS = frozenset(ALLOC_STEPS)
    CHECKS = {
        "mnemosyne.recover.checksum": "a record counts only if its END's checksum (epoch, ts, "
                                      "count, entries) verifies",
        "mnemosyne.recover.bounds": "every entry of a record names a word of application data",
    }

    # -- layout ----------------------------------------------------------------------------------
    @classmethod
    def record_slots(cls, spec: PMSpec) -> int:
        """Slots of the largest record: every word written (those of the objects it allocated
        too: the STM logs every write), every alloc/free bit, the END."""
        obj_words = max((hi for _, hi, _ in spec.heap), default=0)
        return spec.max_tx_words + spec.max_tx_allocs * (1 + obj_words) + 1

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return SLOT * cls.record_slots(spec)

    @classmethod
    def alloc_cap(cls, spec: PMSpec) -> int:
        return 0  # allocation bits travel inside the redo record

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        self.stm = Stm(machine, self.stm_config, on_commit=self._on_commit)
        self.bandwidth = Bandwidth(self.persist_latency_ns, self.persist_bw)
        self._data_lo = -(-(layout.log[-1] + layout.log_bytes) // LINE) * LINE
        self._data_hi = layout.end
        self._lslots = layout.log_bytes // SLOT

    # -- transactions ----------------------------------------------------------------------------
    def _committed(self, cpu: Any, tx: Tx, stx: StmTx) -> None:
        """Allocations were logged in ``on_commit``; a read-only attempt has no commit record,
        so it is marked committed here."""
        for b in tx.frees:
            self.heap.push(b)
        if stx.read_only:
            cpu.mark(Mark.TX_COMMIT, tx.txid)

    def _on_commit(self, stx: StmTx, ts: int) -> None:
        """Log, persist (the commit point), write back in place, truncate; locks held."""
        cpu, t = stx.cpu, stx.tid
        entries = list(stx.write_set.items())
        n = len(entries)
        if n + 1 > self._lslots:
            raise ConfigError(f"{self.name}: a transaction of thread {t} wrote {n} words but its "
                              f"log holds {self._lslots - 1}: raise PMSpec.max_tx_words")
        base = self.layout.log[t]
        end = base + SLOT * n
        tx = self.active[t]
        assert tx is not None
        with self.step(cpu, "mnemosyne.log.append") as c:
            st = c.store
            for i, (a, v) in enumerate(entries):
                st(base + SLOT * i, a)
                st(base + SLOT * i + 8, v)
            c.work(self.costs.checksum_ns_per_byte * SLOT * (n + 1))
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            st(end, end_word(ts, n))
            st(end + 8, record_checksum(self.epoch, ts, n, tuple(entries)))
        self._clflush(cpu, "mnemosyne.log.flush", range(base, end + SLOT, LINE))
        self.order(cpu, "mnemosyne.log.order")
        cpu.work(self.bandwidth.cost(cpu.clock, SLOT * (n + 1)))
        by_line: dict[int, list[tuple[int, int]]] = {}
        for a, v in entries:
            by_line.setdefault(a & ~(LINE - 1), []).append((a, v))
        for line, words in by_line.items():
            with self.step(cpu, "mnemosyne.commit.write-back") as c:
                for a, v in words:
                    c.store(a, v)
            self._clflush(cpu, "mnemosyne.commit.flush", (line,))
        stx.write_set.clear()  # written back: the STM's own write-back has nothing left
        self.order(cpu, "mnemosyne.commit.order")
        with self.step(cpu, "mnemosyne.truncate") as c:
            c.store(end, 0)
            c.clflush(end)
        self.order(cpu, "mnemosyne.truncate.order")

    def _clflush(self, cpu: Any, name: str, lines: Iterable[int]) -> None:
        """CLFLUSH every line of ``lines`` as one named flush step."""
        with self.step(cpu, name) as c:
            for line in lines:
                c.clflush(line)

    # -- recovery ----------------------------------------------------------------------------------
    def _scan(self, t: int, epoch: int) -> tuple[int, list[tuple[int, int]]] | None:
        """Thread ``t``'s valid record ``(ts, entries)``, if its log holds one."""
        words = self.m.pm_words(self.layout.log[t], 2 * self._lslots)
        chk = self.check("mnemosyne.recover.checksum")
        bounds = self.check("mnemosyne.recover.bounds")
        for s in range(self._lslots):
            w = int(words[2 * s])
            if w & 1:
                ts, n = w >> ID_SHIFT, (w >> 1) & N_MASK
                body = [(int(words[2 * i]), int(words[2 * i + 1])) for i in range(s)]
                if n != s:
                    return None
                if chk and int(words[2 * s + 1]) != record_checksum(epoch, ts, n, tuple(body)):
                    return None
                return ts, body
            if bounds and not self._is_home(w):
                return None
        return None

    def _recover(self, cpu: Any) -> None:
        """Replay every valid record in ts order; order; bump the epoch (truncate); order."""
        lay = self.layout
        epoch = int(self.m.peek(lay.base + 8 * G_EPOCH))
        found = [r for r in (self._scan(t, epoch) for t in range(lay.threads)) if r is not None]
        cpu.work(self.costs.checksum_ns_per_byte * lay.threads * lay.log_bytes)
        if found:
            lines: dict[int, None] = {}
            with self.step(cpu, "mnemosyne.recover.replay") as c:
                for _, body in sorted(found):
                    for a, v in body:
                        c.store(a, v)
                        lines[a & ~(LINE - 1)] = None
                for line in lines:
                    c.clflush(line)
            self.order(cpu, "mnemosyne.recover.order")
        with self.step(cpu, "mnemosyne.recover.truncate") as c:
            a = lay.base + 8 * G_EPOCH
            c.store(a, epoch + 1)
            c.clflush(a)
        self.order(cpu, "mnemosyne.recover.order-t")


__all__ = ["MnemosyneRuntime"]

for _m in (
    Mutant("mnemosyne:no-log-flush", MnemosyneRuntime, (drop("mnemosyne.log.flush"),),
           ("pdom0", "pdom1"), "the redo record is never flushed: the home write-back (flushed) "
           "persists while the record is lost, and a crash before the truncation leaves a "
           "torn transaction; and an acknowledged transaction's record can be lost"),
    Mutant("mnemosyne:no-data-flush", MnemosyneRuntime, (drop("mnemosyne.commit.flush"),),
           ("pdom0", "pdom1"), "the written-back home lines are not flushed before the "
           "truncation: a crash after it loses a committed transaction's data"),
    Mutant("mnemosyne:no-checksum", MnemosyneRuntime, (skip_check("mnemosyne.recover.checksum"),),
           why="recovery trusts an END without its checksum (which also carries the epoch): a "
               "record whose END persisted before its entries replays stale log slots (PDOM-0/1), "
               "and a record written before the last recovery is replayed again after a second "
               "crash (any domain)"),
):
    register_mutant(_m)
