"""Proteus in the simulated hardware (card ``proteus.md`` §3-§6): log registers, the LogQ, the
log lookup table (LLT), the memory controller's log pending queue (LPQ) with log-write removal,
the log entry format, and the persist-order edges of ordering rule O1.

The unit sits beside the engine (either backend): the core's loads, stores and flushes are the
engine's; the log path bypasses the caches, so it is modelled here and reaches the persistence
trace as *device writes* (``Engine.devwrite``):

* **log-flush issued**: the entry's payload words (data, from-address, txID, seq) as
  *drained* non-temporal stores, and its checksum word (with END) as an *issued* one. Until the
  memory controller accepts it, the entry may or may not have arrived, whatever the timing ("an
  unacknowledged log-flush may be delayed arbitrarily"): the checksum word may or may not
  persist, and without it the slot holds no whole entry. Writing the payload at once is exact
  for recovery, which reads only whole entries: the slot's older entry (of an older transaction
  of the thread, never the newest one, which holds END) is no less ignored when destroyed early.
  It gives an in-flight entry two states, as the one 64-byte write it is, where eight issued
  words would give 9 (``line``) or 256 (``px86``).
* **acknowledged**: the checksum word again, as a *drained* store: persistent where it sits
  (the LPQ is in the persistence domain), forcing the earlier stores of its chain.
* **O1** (a store waits for the log-flush of its 32-byte block): the core's store enters the
  trace when the core executes it, possibly before the acknowledgement; the rule "the entry
  persists before that store" is a persist-order edge (:class:`LogBeforeData`), derived from
  the trace alone. Dropping it (mutants X1, X2) lets the data persist without its undo entry.
* **MC events**: setting END on a transaction's last entry, flash-clearing its other entries
  and discarding the END entry when the thread's next transaction's first entry arrives are
  drained device writes that restore a slot to what NVM holds under the LPQ copy. END is set
  before the others are cleared, so every point between the writes recovers as the one atomic
  MC step of card M5 does.

**Volatile queues** (``through``, the card's PMEM+pcommit machine, no ADR): the LPQ writes
every entry through to NVM (no log-write removal) and acknowledges a log-flush only once NVM
holds it. In PDOM-0 a drained write is only accepted by a volatile queue, so the payload words
are *persisted* device writes at issue (durable where they sit in every domain; early, as
drained ones are in PDOM-1, which recovery cannot tell apart: it reads whole entries only) and
the acknowledgement re-writes the checksum word as a persisted one; END is written through the
same way. Dropping ``proteus.ack.nvm`` (mutant X15) acknowledges from the volatile queue
instead: a drained re-write, which PDOM-0 does not make durable.

Timing: a log-flush is acknowledged ``rtt`` after it issues (at least; LPQ back-pressure delays
it); the core stalls only when the LogQ is full (O3) and at tx-end, which waits for every
acknowledgement (§3.4). The O1 wait of a store is absorbed by the StoreQ and not charged.
The LPQ spills its oldest entry to NVM when full (log-write removal) or drains every entry
(``lwr=False``, Proteus+NoLWR); NVM log writes occupy a modelled media port of ``banks``
parallel writes of ``write_ns`` each (with the DIMM model: ``dimms`` DIMMs), apart from the
engine's WPQ (an approximation: log and data writes do not contend for banks).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...config import LINE

BLOCK = 32
"""Bytes of data one Proteus log entry holds (card §3.5)."""
VALID = 1 << 32
END = 1 << 63
_M64 = (1 << 64) - 1
_SUM_MASK = END - 1


def _mix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


@dataclass(frozen=True)
class EntryFormat:
    """A log entry: ``data_words`` of old data, then from-address, txID, ``seq | VALID<<0 |
    core``, and a checksum word whose top bit is END (card §3.6, one 64-byte line for Proteus;
    ATOM's 64-byte data granularity takes two lines)."""

    data_words: int = BLOCK // 8

    @property
    def words(self) -> int:
        return -(-(self.data_words + 4) // 8) * 8

    @property
    def nbytes(self) -> int:
        return 8 * self.words

    @property
    def block(self) -> int:
        return 8 * self.data_words

    def pack(self, data: Sequence[int], src: int, txid: int, seq: int, core: int,
             end: bool = False) -> list[int]:
        d = self.data_words
        out = list(data) + [src, txid, (seq & 0xFFFFFFFF) | VALID | (core & 0xFF) << 40]
        out.append(self.checksum(out) | (END if end else 0))
        return out + [0] * (self.words - d - 4)

    def checksum(self, head: Sequence[int]) -> int:
        h = 0x243F6A8885A308D3
        for w in head[:self.data_words + 3]:
            h = _mix(h ^ w)
        return h & _SUM_MASK

    def unpack(self, words: Sequence[int], verify: bool = True) -> Entry | None:
        """The entry in ``words`` if it is whole: VALID set and (``verify``) the checksum
        matches."""
        d = self.data_words
        meta = words[d + 2]
        if not meta & VALID or verify and words[d + 3] & _SUM_MASK != self.checksum(words):
            return None
        return Entry(list(words[:d]), words[d], words[d + 1], meta & 0xFFFFFFFF,
                     (meta >> 40) & 0xFF, bool(words[d + 3] & END))

    def end_word(self, words: Sequence[int]) -> int:
        """Index of the checksum/END word."""
        return self.data_words + 3


@dataclass
class Entry:
    """A decoded log entry."""

    data: list[int]
    src: int
    txid: int
    seq: int
    core: int
    end: bool
    slot: int = -1


def decode_log(words: Sequence[int], fmt: EntryFormat, verify: bool = True) -> list[Entry]:
    """Every whole entry of one thread's log area (``words``: the area's 8-byte words)."""
    out = []
    n = fmt.words
    for s in range(len(words) // n):
        e = fmt.unpack(words[s * n:(s + 1) * n], verify)
        if e is not None:
            e.slot = s
            out.append(e)
    return out


def undo_plan(entries: Sequence[Entry], earliest: bool = True) -> tuple[int | None, list[Entry]]:
    """Recovery's decision for one thread (card §6): the highest txID ``T*`` and, unless one of
    its entries carries END, the entries to write back, one per block (the earliest in seq
    order; the latest with ``earliest=False``, mutant X5)."""
    if not entries:
        return None, []
    top = max(e.txid for e in entries)
    mine = [e for e in entries if e.txid == top]
    if any(e.end for e in mine):
        return top, []
    mine.sort(key=lambda e: e.seq, reverse=not earliest)
    first: dict[int, Entry] = {}
    for e in mine:
        first.setdefault(e.src, e)
    return top, list(first.values())


# -- the core's structures ---------------------------------------------------------------------
class Llt:
    """The log lookup table: set-associative, LRU, 32-byte-block addresses logged in the
    current transaction (card §3.2)."""

    def __init__(self, entries: int, ways: int) -> None:
        self.ways = max(1, min(ways, entries))
        self.sets = max(1, entries // self.ways)
        self._s: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(self.sets)]

    def hit(self, block: int) -> bool:
        s = self._s[(block // BLOCK) % self.sets]
        if block in s:
            s.move_to_end(block)
            return True
        return False

    def insert(self, block: int) -> None:
        s = self._s[(block // BLOCK) % self.sets]
        s[block] = None
        if len(s) > self.ways:
            s.popitem(last=False)

    def clear(self) -> None:
        for s in self._s:
            s.clear()


@dataclass
class LogLine:
    """One log-flush: where it went, its words, when it is acknowledged and its LPQ state."""

    tid: int
    txid: int
    seq: int
    slot: int
    addr: int
    words: list[int]
    ack: float
    acked: bool = False
    state: str = "flight"  # flight, lpq, nvm, gone
    leave: float = float("inf")
    durable_ack: bool = False  # acknowledged from NVM (volatile queues): persisted at the ack


@dataclass
class ProteusCounts:
    """What the unit counts (cumulative)."""

    log_flushes: int = 0  # log-flushes sent to the MC (LLT misses)
    llt_hits: int = 0
    log_writes: int = 0  # log lines written to NVM (spills, NoLWR drains, END lines)
    removed: int = 0  # log lines flash-cleared or discarded before reaching NVM
    end_marks: int = 0
    logq_stall_ns: float = 0.0
    end_stall_ns: float = 0.0
    o1_waits: int = 0  # stores issued before their log-flush was acknowledged
    lpq_max: int = 0
    lpq_occ_sum: int = 0
    lpq_samples: int = 0
    overflows: int = 0
    switches: int = 0


class LogOverflow(Exception):
    """A transaction's entries exceed its thread's log (card §5: an exception)."""


@dataclass
class CoreState:
    """Per hardware thread: txID, cur-log, the LLT, the LogQ and the current transaction."""

    tid: int
    base: int
    slots: int
    llt: Llt
    txid: int = 0
    cur: int = 0
    start: int = 0
    seq: int = 0
    in_tx: bool = False
    logq: list[LogLine] = field(default_factory=list)
    lines: list[LogLine] = field(default_factory=list)  # this transaction's entries
    end_line: LogLine | None = None  # the previous transaction's END entry, kept in the LPQ
    data_lines: dict[int, None] = field(default_factory=dict)
    old: dict[int, list[int]] = field(default_factory=dict)  # block -> first logged data


class ProteusUnit:
    """Log registers, LogQ and LLT per core, and the memory controller's LPQ.

    ``owner`` is the runtime (``dropped``/``check`` for mutations and its switches); ``m`` the
    machine; ``logs[tid]`` the byte address of thread ``tid``'s log area of ``slots`` entries.
    """

    def __init__(self, owner: Any, machine: Any, logs: Sequence[int], slots: int,
                 fmt: EntryFormat, logq: int = 16, llt_entries: int = 64, llt_ways: int = 8,
                 lpq: int = 256, lwr: bool = True, mc_ns: float | None = None,
                 through: bool = False) -> None:
        cfg = machine.config
        self.owner = owner
        self.m = machine
        self.dev = machine.engine.devwrite
        self.fmt = fmt
        self.logq_size = logq
        self.lpq_size = lpq
        self.lwr = lwr
        self.through = through
        self.mc_ns = 10 / 3.4 if mc_ns is None else mc_ns
        self.rtt = cfg.pm.to_wpq_ns + self.mc_ns
        # the media's write rate: banks in parallel, or with the DIMM model the DIMMs, each
        # accepting a 64 B write per pm.write_ns
        self.write_ns = cfg.pm.write_ns / (cfg.pm.dimm.dimms or max(1, cfg.pm.banks))
        self.cores = [CoreState(t, b, slots, Llt(llt_entries, llt_ways))
                      for t, b in enumerate(logs)]
        self.lpq: OrderedDict[int, LogLine] = OrderedDict()  # slot address -> resident line
        self.nvm: dict[int, list[int]] = {}  # log address -> words NVM holds under the LPQ
        self.port = 0.0
        self.counts = ProteusCounts()

    # -- restart -----------------------------------------------------------------------------
    def load(self) -> None:
        """Rebuild the volatile state from PM after a restart or format: every LPQ entry has
        drained to NVM; txID and cur-log continue after the newest entry of each thread."""
        self.lpq.clear()
        self.nvm.clear()
        n = self.fmt.words
        for c in self.cores:
            words = self.m.pm_words(c.base, c.slots * n).tolist()
            ents = decode_log(words, self.fmt)
            c.txid = max((e.txid for e in ents), default=0)
            newest = max(ents, key=lambda e: (e.txid, e.seq), default=None)
            c.cur = 0 if newest is None else (newest.slot + 1) % c.slots
            c.in_tx, c.logq, c.lines, c.end_line = False, [], [], None
            c.llt.clear()

    # -- the LPQ -------------------------------------------------------------------------------
    def _restore(self, tid: int, line: LogLine) -> None:
        """The LPQ copy leaves without reaching NVM: the slot shows what NVM holds again."""
        under = self.nvm[line.addr]
        cur = self.m.pm_words(line.addr, len(line.words)).tolist()
        k = self.fmt.end_word(under)
        for i in [k] + [i for i in range(len(under)) if i != k]:  # invalidate first
            if cur[i] != under[i]:
                self.dev(tid, line.addr + 8 * i, under[i], 1)
        line.state = "gone"
        if self.lpq.get(line.addr) is line:
            del self.lpq[line.addr]
        self.counts.removed += 1

    def _to_nvm(self, line: LogLine, t: float) -> float:
        """Write an LPQ entry to NVM through the log media port; returns its completion."""
        done = max(t, self.port) + self.write_ns
        self.port = done
        self.nvm[line.addr] = list(line.words)
        line.state = "nvm"
        self.counts.log_writes += 1
        return done

    def _accept(self, line: LogLine, arrive: float) -> float:
        """The MC takes a log-flush into the LPQ; returns when (back-pressure when full)."""
        c = self.counts
        if not self.lwr:
            while self.lpq and next(iter(self.lpq.values())).leave <= arrive:
                self.lpq.popitem(last=False)
        while len(self.lpq) >= self.lpq_size:
            _, old = self.lpq.popitem(last=False)
            if self.lwr:
                if not self.owner.hw_step(old.tid, "proteus.mc.spill"):
                    self._restore(old.tid, old)
                    continue
                arrive = max(arrive, self._to_nvm(old, arrive))
            else:
                arrive = max(arrive, old.leave)
        self.lpq[line.addr] = line
        line.state = "lpq"
        if not self.lwr:
            line.leave = self._to_nvm(line, arrive)
        n = len(self.lpq)
        c.lpq_max = max(c.lpq_max, n)
        c.lpq_occ_sum += n
        c.lpq_samples += 1
        return arrive

    # -- acknowledgements ----------------------------------------------------------------------
    def _ack(self, c: CoreState, line: LogLine) -> None:
        """The core sees the acknowledgement: the entry is durable (drained re-write of its
        checksum word; from NVM, with volatile queues, a persisted one)."""
        k = self.fmt.end_word(line.words)
        self.dev(c.tid, line.addr + 8 * k, line.words[k], 2 if line.durable_ack else 1)
        line.acked = True
        if c.end_line is not None and line.seq == 0 and c.end_line is not line:
            self._discard_end(c)

    def _discard_end(self, c: CoreState) -> None:
        """The previous transaction's END entry leaves the LPQ (M5: when this transaction's
        first entry arrives)."""
        e, c.end_line = c.end_line, None
        if e is not None and e.state == "lpq":
            self._restore(c.tid, e)

    def drain_acks(self, cpu: Any, upto: float | None = None) -> None:
        """Emit the acknowledgements the core has received by ``upto`` (default: its clock)."""
        c = self.cores[cpu.tid]
        t = cpu.clock if upto is None else upto
        keep = []
        for line in c.logq:
            if line.ack <= t:
                self._ack(c, line)
            else:
                keep.append(line)
        c.logq = keep

    # -- instructions ----------------------------------------------------------------------------
    def tx_begin(self, cpu: Any) -> None:
        c = self.cores[cpu.tid]
        c.txid += 1
        c.seq = 0
        c.start = c.cur
        c.in_tx = True
        c.lines = []
        c.data_lines = {}
        c.old = {}
        if self.owner.end_discard_at == "begin":
            self._discard_end(c)

    def log_block(self, cpu: Any, block: int) -> None:
        """log-load + log-flush of the 32-byte block at ``block`` unless the LLT has it."""
        c = self.cores[cpu.tid]
        if c.llt.hit(block):
            self.counts.llt_hits += 1
            return
        self.drain_acks(cpu)
        if len(c.logq) >= self.logq_size and self.owner.hw_step(c.tid, "proteus.logq.stall"):
            t0 = cpu.clock
            first = min(x.ack for x in c.logq)
            cpu.work(max(0.0, first - t0))
            self.counts.logq_stall_ns += max(0.0, first - t0)
            self.drain_acks(cpu)
        untracked = len(c.logq) >= self.logq_size
        # log-load: one 32-byte access (timed once), the block's words read with it
        data = [cpu.load(block)] + self.m.pm_words(block + 8, self.fmt.data_words - 1).tolist()
        if c.seq >= c.slots - 1 and self.owner.overflow_check:
            self.counts.overflows += 1
            raise LogOverflow(f"thread {c.tid}: transaction {c.txid} needs more than "
                              f"{c.slots - 1} log entries; enlarge the log (card §5: an "
                              "exception)")
        slot = c.cur
        addr = c.base + slot * self.fmt.nbytes
        words = self.fmt.pack(data, block, c.txid, c.seq, c.tid)
        if addr not in self.nvm:
            self.nvm[addr] = self.m.pm_words(addr, self.fmt.words).tolist()
        prev = self.lpq.pop(addr, None)
        if prev is not None:
            prev.state = "gone"  # M8: the newer LPQ entry overwrites the older one
        k = self.fmt.end_word(words)
        for i, w in enumerate(words):
            if i != k:
                self.dev(c.tid, addr + 8 * i, w, 2 if self.through else 1)
        self.dev(c.tid, addr + 8 * k, words[k], 0)
        cpu.work(self.m.config.costs.store_ns)
        line = LogLine(c.tid, c.txid, c.seq, slot, addr, words, 0.0)
        arrive = cpu.clock + self.rtt / 2
        line.ack = self._accept(line, arrive) + self.rtt / 2
        if self.through and self.owner.hw_step(c.tid, "proteus.ack.nvm"):
            line.ack = line.leave + self.rtt / 2
            line.durable_ack = True
        if not self.owner.hw_step(c.tid, "proteus.ack.at-accept"):
            line.ack = cpu.clock
        if untracked:
            self.owner.untracked.add((c.tid, c.txid, c.seq))
        else:
            c.logq.append(line)
        c.lines.append(line)
        c.old.setdefault(block, data)
        c.seq += 1
        c.cur = (c.cur + 1) % c.slots
        c.llt.insert(block)
        self.counts.log_flushes += 1

    def store(self, cpu: Any, addr: int, value: int) -> None:
        """A transactional store: logged block first (unless the LLT has it), then the store."""
        c = self.cores[cpu.tid]
        if any(x.ack > cpu.clock for x in c.logq):
            self.counts.o1_waits += 1
        cpu.store(addr, value)
        c.data_lines[addr & ~(LINE - 1)] = None

    def tx_end(self, cpu: Any, flush: Callable[[Sequence[int]], None],
               fence: Callable[[], None], end_wait: bool = True) -> None:
        """Wait for every acknowledgement, persist the data (``flush``, ``fence``), send
        TX_END: END on the last entry, flash-clear the others, clear the LLT (§3.4)."""
        c = self.cores[cpu.tid]
        if end_wait and c.logq and self.owner.hw_step(c.tid, "proteus.end.wait-acks"):
            t = max(x.ack for x in c.logq)
            if t > cpu.clock:
                self.counts.end_stall_ns += t - cpu.clock
                cpu.work(t - cpu.clock)
        self.drain_acks(cpu, float("inf"))
        if self.owner.end_before_data:
            self._mc_end(cpu, c)
            flush(list(c.data_lines))
            fence()
        else:
            flush(list(c.data_lines))
            fence()
            cpu.work(2 * self.mc_ns)
            self._mc_end(cpu, c)
        if self.owner.hw_step(c.tid, "proteus.llt.clear"):
            c.llt.clear()
        c.in_tx = False

    def _mc_end(self, cpu: Any, c: CoreState) -> None:
        """The MC's TX_END(core, txID): set END on the last entry, then flash-clear."""
        if not c.lines:
            return
        last = c.lines[-1]
        if self.owner.hw_step(c.tid, "proteus.mc.end-mark"):
            k = self.fmt.end_word(last.words)
            last.words[k] |= END
            self.dev(c.tid, last.addr + 8 * k, last.words[k], 2 if self.through else 1)
            self.counts.end_marks += 1
            if last.state == "nvm":
                self.nvm[last.addr] = list(last.words)
                self.counts.log_writes += 1
        if self.lwr and self.owner.hw_step(c.tid, "proteus.mc.flash-clear"):
            if self.owner.clear_by_core:
                victims = [x for x in c.lines if x.state == "lpq"]
            else:  # mutant X10: any core's entries with this txID
                victims = [x for x in self.lpq.values() if x.txid == c.txid]
            for line in victims:
                if line is not last:
                    self._restore(line.tid, line)
        if self.owner.end_discard_at == "never" and last.state == "lpq":
            self._restore(c.tid, last)
        else:
            c.end_line = last

    def context_switch(self, cpu: Any) -> None:
        """The OS deschedules the thread inside a transaction (card §5, ``log-save``): drain the
        LogQ, have the MC write this transaction's LPQ entries to NVM (the switch may be long),
        clear the LLT. The saved registers (txID, log bounds, cur-log) are the core state kept
        here; a rescheduled thread at worst logs duplicates, which recovery resolves (O6)."""
        c = self.cores[cpu.tid]
        self.counts.switches += 1
        if c.logq:
            t = max(x.ack for x in c.logq)
            if t > cpu.clock:
                cpu.work(t - cpu.clock)
        self.drain_acks(cpu, float("inf"))
        if self.owner.hw_step(c.tid, "proteus.switch.write-back"):
            done = cpu.clock
            for line in c.lines:
                if line.state == "lpq":
                    del self.lpq[line.addr]
                    done = max(done, self._to_nvm(line, cpu.clock))
            cpu.work(done - cpu.clock)
        if self.owner.hw_step(c.tid, "proteus.switch.llt-clear"):
            c.llt.clear()

    def abort_restore(self, cpu: Any) -> None:
        """A user abort: store the logged old data back (inside the transaction)."""
        c = self.cores[cpu.tid]
        for block, data in c.old.items():
            for i, w in enumerate(data):
                self.store(cpu, block + 8 * i, w)


# -- the persist-order edges -----------------------------------------------------------------
@dataclass(frozen=True)
class TraceEntry:
    """A log-flush found in a trace: thread, slot address, its issued stores' event range,
    the block it logs, its ids, and the event of its acknowledgement's last word."""

    tid: int
    addr: int
    first: int
    last: int
    src: int
    txid: int
    seq: int
    ack: int


def trace_entries(ix: Any, logs: Sequence[int], log_bytes: int, fmt: EntryFormat) -> list[TraceEntry]:
    """Every log-flush in ``ix``'s trace: an issued device store of a slot's checksum word right
    after the drained stores of its payload (decoded), with the event of its acknowledgement
    (the checksum word drained), or the trace's length if it never comes."""
    from pmsim.trace import Ev

    ev = ix.trace.events
    kind, aux, tid = ev["kind"], ev["aux"], ev["tid"]
    addr = ev["addr"].astype(np.int64)
    n = fmt.words
    k = fmt.end_word([])
    area = np.full(len(ev), -1, np.int64)
    for b in logs:
        area[(addr >= b) & (addr < b + log_bytes)] = b
    nt = (kind == Ev.NTSTORE) & (area >= 0)
    at_k = ((addr - area) // 8) % n == k
    issued = np.nonzero(nt & (aux == 0) & at_k)[0].tolist()
    drained = np.nonzero(nt & (aux == 1) & at_k)[0]
    dr_addr = addr[drained]
    val = ev["value"]
    out = []
    for e in issued:
        a0 = int(addr[e]) - 8 * k
        words = [0] * n
        words[k] = int(val[e])
        for j in range(e - n + 1, e):
            if 0 <= j and int(kind[j]) == Ev.NTSTORE and a0 <= int(addr[j]) < a0 + 8 * n:
                words[(int(addr[j]) - a0) // 8] = int(val[j])
        ent = fmt.unpack(words)
        if ent is None:
            continue
        later = drained[(drained > e) & (dr_addr == a0 + 8 * k)]
        ack = int(later[0]) if len(later) else len(ev)
        out.append(TraceEntry(int(tid[e]), a0, e, e, ent.src, ent.txid, ent.seq, ack))
    return out


def _store_ref(ix: Any, row_of: dict[int, int], event: int) -> tuple[int, int]:
    r = row_of[event]
    return int(ix.st_chain[r]), int(ix.st_pos[r]) + 1


@dataclass(frozen=True)
class LogBeforeData:
    """Edge provider of O1: a data store persists only after every not-yet-acknowledged
    log-flush of its thread for the same block issued before it (same transaction: a thread's
    next transaction begins after every acknowledgement).

    Derived from the trace (:func:`trace_entries`): ``STORE`` events of the entry's thread to
    its block between its issue and its acknowledgement get the edges. ``untracked``
    ``(tid, txid, seq)`` entries (a LogQ overflow, mutant X3) get none.
    """

    logs: tuple[int, ...]
    log_bytes: int
    fmt: EntryFormat
    untracked: frozenset[tuple[int, int, int]] = frozenset()
    __name__ = "proteus_log_before_data"

    def __call__(self, ix: Any, domain: str) -> list[Any]:
        from crashfuzz.model import Edge
        from pmsim.trace import Ev

        ents = [t for t in trace_entries(ix, self.logs, self.log_bytes, self.fmt)
                if (t.tid, t.txid, t.seq) not in self.untracked]
        if not ents:
            return []
        ev = ix.trace.events
        st = np.nonzero(ev["kind"] == Ev.STORE)[0]
        st_addr = ev["addr"][st].astype(np.int64)
        st_tid = ev["tid"][st]
        row_of = {int(e): r for r, e in enumerate(ix.st_event.tolist())}
        out = []
        blk = self.fmt.block
        for t in ents:
            sel = st[(st > t.last) & (st < t.ack) & (st_tid == t.tid) & (st_addr >= t.src)
                     & (st_addr < t.src + blk)]
            if not len(sel):
                continue
            xs = [_store_ref(ix, row_of, e) for e in range(t.first, t.last + 1)]
            if ix.order == "line":
                best: dict[int, int] = {}
                for ch, cnt in xs:
                    best[ch] = max(best.get(ch, 0), cnt)
                xs = list(best.items())
            for y in sel.tolist():
                yc, ycnt = _store_ref(ix, row_of, y)
                for ch, cnt in xs:
                    out.append(Edge(ch, cnt, yc, ycnt, t.ack + 1))
        return out
