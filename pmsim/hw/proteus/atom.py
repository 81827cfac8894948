"""ATOM (Joshi et al., HPCA 2017) in the simulated hardware, as the Proteus card models it
(``proteus.md`` §8 and §11): undo logging created by the hardware at store retirement, written
to NVM through the memory controller (MC), truncated by the MC at commit.

Reused from :mod:`pmsim.hw.proteus.proteus`: the entry format (:class:`EntryFormat` with eight data
words: 64-byte granularity, so an entry of 12 words is padded to two lines), recovery's reading
of a log (:func:`decode_log`, :func:`undo_plan`) and the edge provider of "the entry persists
before the store it covers" (:class:`LogBeforeData`, which finds entries in flight with
:func:`trace_entries`).

Per core (hardware thread):

* **Logged bits.** One entry per updated line per transaction: a line's first store in a
  transaction creates its entry and sets its bit; later stores to it log nothing. The bits are
  cleared at tx-end (they are never lost inside a transaction; an evicted line keeps its bit).
* **Log creation at retirement, serialised.** The store's access to its line (one timed load,
  the line's old value taken untimed: the cache controller reads the line once), then the entry
  goes to the MC and the store waits at the ROB head for the acknowledgement: one outstanding
  log per core. *Posted log*: the entry is complete when it arrives at the MC, which holds it
  in its persistent write queue (ADR) and locks the data line so that no write-back of it
  persists before the log. *Source log*: when the store misses, the MC builds the entry from
  the line it reads from NVM for the fill, so there is no extra read and the acknowledgement
  returns with the fill (``mc_ns`` after it); on a hit the entry is sent with the line and
  acknowledged a round trip ``rtt = to_wpq_ns + mc_ns`` after it issues. While the store waits
  at the head, the core keeps dispatching until its reorder buffer is full
  (:data:`ROB_WINDOW_NS`), so the thread stalls for the rest of the round trip only; the next
  logged store, and tx-end, wait for the acknowledgement.
* **Commit** (tx-end): the software's ``clwb`` of every modified line and ``sfence`` (card §8
  [D], as Proteus), then TX_END to the MC (``2 * mc_ns``, as Proteus): the MC sets END on the
  transaction's last entry (the commit point), then **truncates**: it invalidates the entries
  one by one (clears VALID), the END entry last. A 64-entry tracking table holds the addresses
  of a transaction's entries; an entry beyond it must be found by reading the log: one read
  more at truncation (counted; not timed).

**Log writes are media traffic.** Every line the MC writes (an entry's two lines, END,
each invalidation) is an engine non-temporal store (``Cpu.ntstore``): it takes a WPQ slot and
a bank like any write-back, counts as ``ntstores`` and ``pm_write_bytes``, and a later
``sfence`` of the core waits for its acceptance (so WPQ back-pressure on the log reaches the
core at commit). One ntstore per line suffices: the engines count a WPQ write per line a
thread's write-combining buffer opens, not per word. The engine's store costs the core
``store_ns`` (one cycle), charged within the log's wait. The crash model then sees the same
line through *device writes* (``Engine.devwrite``), encoded as for Proteus (see
:mod:`pmsim.hw.proteus.proteus`):

* **entry issued**: line 0 as one ntstore of its first word, then every other word (data,
  from-address, txID, seq|VALID, padding) as *drained* device writes, which force that
  ntstore; then line 1 as one ntstore of the checksum word (with END): *issued*, so the entry
  may or may not be whole until it is acknowledged, two states per entry in either order mode.
  The checksum word follows the other 15 words at once, as :func:`trace_entries` expects;
* **acknowledged**: the checksum word again, drained (durable, in the persistent WPQ);
* **MC writes** (END, invalidations): an ntstore of the word followed at once by the same
  word drained: accepted in order, each durable when the next is issued. END's ntstore goes to
  the seq|VALID word of the last entry's line 1 (unchanged) so that no second issued checksum
  word looks like a log-flush to :func:`trace_entries`. When the END entry is the first to be
  invalidated (a one-entry transaction) its invalidation joins END's line in the write queue:
  one media write for the two (counted as ``wpq_merged``).

The MC's line lock is a persist-order edge (:class:`LogBeforeData`): with the retirement wait
no store of the line enters the trace before the acknowledgement, so it yields no edge; it
matters when the wait is dropped (the ``atom.log.stall`` step; mutant A1 drops both).

Recovery is card §6, as Proteus's (:func:`undo_plan`): per thread the highest txID among the
whole VALID entries; nothing is undone if one carries END, else each line is restored from its
entry. Then every remaining entry is invalidated, END entries last, so a crash during
recovery repeats it. END must be durable before any entry is invalidated: with END gone and
some entries invalidated, recovery would undo a committed transaction partially; and the END
entry goes last, since without it the remaining entries of a committed transaction would be
undone. Once every entry of a transaction is invalid, no entry of it is left to decide on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...config import LINE
from .proteus import END, VALID, EntryFormat, LogOverflow

LINE_WORDS = LINE // 8
FMT = EntryFormat(LINE_WORDS)
"""ATOM's entry: a 64-byte line of old data and its metadata, two lines (card §8: 64-byte
granularity)."""
META = FMT.data_words + 2
"""Index of the ``seq | VALID | core`` word (line 1 of the entry): truncation clears VALID."""
TXID = FMT.data_words + 1
TRACKING = 64
"""Entries of a transaction the MC's tracking table holds (card §11 [D])."""
ROB_WINDOW_NS = 224 / 5 / 3.4
"""How long the core keeps dispatching behind a store held at retirement before its reorder
buffer is full: 224 entries filled 5 a cycle at 3.4 GHz (Proteus's Table 1 MarssX86 core, card
§9.1 "model ROB 224, 5-wide"), 13.2 ns. Independent work in that window overlaps the store's
log round trip; the next logged store still waits for it (one outstanding log per core)."""


@dataclass
class AtomEntry:
    """One log entry: where it went, its words, and when it is acknowledged."""

    tid: int
    txid: int
    seq: int
    slot: int
    addr: int
    src: int
    words: list[int]
    ack: float
    acked: bool = False


@dataclass
class AtomCounts:
    """What the unit counts (cumulative)."""

    log_entries: int = 0  # entries created (one per line per transaction)
    log_writes: int = 0  # log lines written to NVM (two per entry)
    source_logs: int = 0  # entries the MC built from a miss's fill (no extra read)
    logged_hits: int = 0  # stores to a line already logged in the transaction
    end_marks: int = 0
    truncation_writes: int = 0  # invalidations, one per entry
    truncation_reads: int = 0  # log reads to find entries beyond the tracking table
    tracking_overflows: int = 0  # entries beyond the tracking table
    wpq_merged: int = 0  # MC writes joining the line of the MC's previous write
    retire_stalls: int = 0
    retire_stall_ns: float = 0.0
    overflows: int = 0


@dataclass
class AtomCore:
    """Per hardware thread: txID, the log cursor, the logged bits and the transaction."""

    tid: int
    base: int
    slots: int
    txid: int = 0
    cur: int = 0
    seq: int = 0
    in_tx: bool = False
    logged: dict[int, None] = field(default_factory=dict)  # the per-line logged bits
    entries: list[AtomEntry] = field(default_factory=list)  # this transaction's entries
    unacked: list[AtomEntry] = field(default_factory=list)  # only without the retirement wait
    data_lines: dict[int, None] = field(default_factory=dict)
    old: dict[int, list[int]] = field(default_factory=dict)  # line -> logged old words
    mc_line: int = -1  # the line the MC's last write of this core went to (WPQ merging)
    last_ack: float = 0.0  # when the last log waited for at retirement was acknowledged


class AtomUnit:
    """ATOM's per-core logging hardware and its memory-controller side.

    ``owner`` is the runtime: its named steps (``step`` for the groups that issue writes,
    ``hw_step`` for the wait and the bits, ``dropped`` for what a mutation leaves out), and the
    switches ``overflow_check`` and ``end_entry_last``; ``machine`` the machine; ``logs[tid]``
    the byte address of thread ``tid``'s log area of ``slots`` entries.
    """

    def __init__(self, owner: Any, machine: Any, logs: Sequence[int], slots: int,
                 fmt: EntryFormat = FMT, tracking: int = TRACKING,
                 mc_ns: float | None = None) -> None:
        cfg = machine.config
        self.owner = owner
        self.m = machine
        self.dev = machine.engine.devwrite
        self.fmt = fmt
        self.tracking = tracking
        self.mc_ns = 10 / 3.4 if mc_ns is None else mc_ns
        self.rtt = cfg.pm.to_wpq_ns + self.mc_ns
        self.rob_ns = ROB_WINDOW_NS
        self.miss_ns = cfg.cache.llc.latency_ns + cfg.pm.read_ns
        self.cores = [AtomCore(t, b, slots) for t, b in enumerate(logs)]
        self.counts = AtomCounts()

    # -- restart -----------------------------------------------------------------------------
    def load(self) -> None:
        """Rebuild the volatile state from PM after a restart or format: txIDs continue after
        the largest any slot holds (valid or truncated), the cursor after its entry."""
        n = self.fmt.words
        for c in self.cores:
            words = self.m.pm_words(c.base, c.slots * n).tolist()
            keys = [(words[s * n + TXID], words[s * n + META] & 0xFFFFFFFF)
                    for s in range(c.slots)]
            best = max(range(c.slots), key=keys.__getitem__)
            c.txid = keys[best][0]
            c.cur = (best + 1) % c.slots if c.txid else 0
            c.in_tx, c.entries, c.unacked, c.mc_line = False, [], [], -1
            c.logged.clear()

    # -- log creation --------------------------------------------------------------------------
    def tx_begin(self, cpu: Any) -> None:
        c = self.cores[cpu.tid]
        c.txid += 1
        c.seq = 0
        c.in_tx = True
        c.entries = []
        c.data_lines = {}
        c.old = {}

    def _ack(self, c: AtomCore, e: AtomEntry) -> None:
        """The acknowledgement: the entry is durable in the MC's persistent queue."""
        k = self.fmt.end_word(e.words)
        self.dev(c.tid, e.addr + 8 * k, e.words[k], 1)
        e.acked = True

    def _acks(self, c: AtomCore, upto: float) -> None:
        """Emit the acknowledgements received by ``upto`` (only without the retirement wait)."""
        if c.unacked:
            keep = []
            for e in c.unacked:
                if e.ack <= upto:
                    self._ack(c, e)
                else:
                    keep.append(e)
            c.unacked = keep

    def log_line(self, cpu: Any, line: int) -> None:
        """At a store's retirement: log its line unless its logged bit is set, and wait for
        the MC's acknowledgement (unless the ``atom.log.stall`` step is dropped)."""
        c = self.cores[cpu.tid]
        if line in c.logged:
            self.counts.logged_hits += 1
            return
        owner = self.owner
        self._retired(cpu, c)  # one outstanding log per core: the previous store retires first
        self._acks(c, cpu.clock)
        if c.seq >= c.slots - 1 and owner.overflow_check:
            self.counts.overflows += 1
            raise LogOverflow(f"thread {c.tid}: transaction {c.txid} needs more than "
                              f"{c.slots - 1} log entries; enlarge the log")
        fmt = self.fmt
        with owner.step(cpu, "atom.log.create"):
            t0 = cpu.clock
            cpu.load(line)  # the store's own access to its line
            fill = cpu.clock
            source = fill - t0 >= self.miss_ns - 1e-9
            data = self.m.pm_words(line, fmt.data_words).tolist()
            slot = c.cur
            addr = c.base + slot * fmt.nbytes
            words = fmt.pack(data, line, c.txid, c.seq, c.tid)
            k = fmt.end_word(words)
            tid = c.tid
            dev = self.dev
            cpu.ntstore(addr, words[0])  # line 0 into the WPQ
            for i, w in enumerate(words):
                if i != k:
                    dev(tid, addr + 8 * i, w, 1)
            issue = cpu.clock
            cpu.ntstore(addr + 8 * k, words[k])  # line 1: the entry in flight until the ack
            c.mc_line = -1
        e = AtomEntry(tid, c.txid, c.seq, slot, addr, line, words,
                      fill + self.mc_ns if source else issue + self.rtt)
        cnt = self.counts
        cnt.log_entries += 1
        cnt.log_writes += 2
        cnt.source_logs += source
        c.entries.append(e)
        c.old[line] = data
        c.logged[line] = None
        c.seq += 1
        c.cur = (c.cur + 1) % c.slots
        if not owner.hw_step(tid, "atom.log.stall"):
            c.unacked.append(e)
            return
        wait = e.ack - cpu.clock - self.rob_ns  # the window fills behind the store first
        if wait > 0:
            cpu.work(wait)
            cnt.retire_stall_ns += wait
        cnt.retire_stalls += 1
        c.last_ack = e.ack
        self._ack(c, e)

    def _retired(self, cpu: Any, c: AtomCore) -> None:
        """Wait until the last store held at retirement has its acknowledgement: the core ran
        ahead of it only as far as its reorder window."""
        if cpu.clock < c.last_ack:
            wait = c.last_ack - cpu.clock
            cpu.work(wait)
            self.counts.retire_stall_ns += wait

    def store(self, cpu: Any, addr: int, value: int) -> None:
        """The store itself (after :meth:`log_line`)."""
        c = self.cores[cpu.tid]
        cpu.store(addr, value)
        c.data_lines[addr & ~(LINE - 1)] = None
        c.mc_line = -1

    # -- commit ----------------------------------------------------------------------------------
    def tx_end(self, cpu: Any, flush: Callable[[Sequence[int]], None],
               fence: Callable[[], None]) -> None:
        """Persist the data (``flush``, ``fence``), send TX_END: END on the last entry (the
        commit point), then the MC truncates; the logged bits are cleared."""
        c = self.cores[cpu.tid]
        self._retired(cpu, c)
        for e in c.unacked:  # without the retirement wait: every ack is in by now
            self._ack(c, e)
        c.unacked = []
        flush(list(c.data_lines))
        fence()
        c.mc_line = -1
        cpu.work(2 * self.mc_ns)
        self._mc_commit(cpu, c)
        if self.owner.hw_step(c.tid, "atom.log.bits-clear"):
            c.logged.clear()
        c.in_tx = False

    def _mc_write(self, cpu: Any, c: AtomCore, addr: int, value: int) -> None:
        """One MC write: a media write through the WPQ, durable once accepted."""
        line = addr & ~(LINE - 1)
        if line == c.mc_line:
            self.counts.wpq_merged += 1
        c.mc_line = line
        cpu.ntstore(addr, value)
        self.dev(c.tid, addr, value, 1)

    def _mc_commit(self, cpu: Any, c: AtomCore) -> None:
        """TX_END at the MC: END on the last entry, then invalidate the entries one by one,
        the END entry last (``end_entry_last``)."""
        if not c.entries:
            return
        owner = self.owner
        fmt = self.fmt
        k = fmt.end_word([])
        last = c.entries[-1]
        with owner.step(cpu, "atom.mc.end-mark"):
            if not owner.dropped("atom.mc.end-mark"):
                self._mc_write(cpu, c, last.addr + 8 * META, last.words[META])
                last.words[k] |= END
                self.dev(c.tid, last.addr + 8 * k, last.words[k], 1)
                self.counts.end_marks += 1
        with owner.step(cpu, "atom.mc.truncate"):
            if not owner.dropped("atom.mc.truncate"):
                rest = c.entries[:-1]
                order = rest + [last] if owner.end_entry_last else [last] + rest
                for e in order:
                    if e.seq >= self.tracking:
                        self.counts.tracking_overflows += 1
                        self.counts.truncation_reads += 1
                    e.words[META] &= ~VALID
                    self._mc_write(cpu, c, e.addr + 8 * META, e.words[META])
                    self.counts.truncation_writes += 1

    def abort_restore(self, cpu: Any) -> None:
        """A user abort: store the logged old data back (inside the transaction)."""
        c = self.cores[cpu.tid]
        for line, data in c.old.items():
            for i, w in enumerate(data):
                self.store(cpu, line + 8 * i, w)


__all__ = ["FMT", "LINE_WORDS", "META", "ROB_WINDOW_NS", "TRACKING", "AtomCore", "AtomCounts", "AtomEntry",
           "AtomUnit"]
