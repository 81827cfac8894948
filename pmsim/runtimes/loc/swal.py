"""S-WAL: the software write-ahead-logging baseline of LOC (papers/loc.md §2, §8, §10).

A strict-ordering redo WAL in software, in the paper's four phases, each ended by an ordering
point (card §2, O1-O4). Both copies are cached: each thread has its own log area in PM and the
homes are the application data; every flush is a CLFLUSH and every ordering point an MFENCE.

* **Log write**: each TXN_WRITE appends ``[home][n][values ...]`` to the thread's log with plain
  stores (``swal.write.log``) and keeps the new words in a volatile per-transaction map, which
  reads consult; homes are not written during the transaction. At commit every log line written
  is CLFLUSHed (``swal.log.flush``), then O1 (``swal.log.fence``).
* **Commit**: the commit record in the descriptor line (``swal.commit.record``: the state word
  ``txid << 8 | COMMITTED`` and the tail word ``seq << 32 | log bytes``, ``seq`` the low half
  of the txid), CLFLUSH (``swal.commit.flush``), O2 (``swal.commit.fence``). TX_COMMIT is
  marked at the record's store, TX_DURABLE right after O2: the paper's software
  acknowledgment (Fig. 1).
* **In-place update**: the new words stored home (``swal.update.store``), each home line
  CLFLUSHed (``swal.update.flush``), O3 (``swal.update.fence``).
* **Truncate**: state, tail and allocation-log count reset (``swal.truncate.reset``), CLFLUSH
  (``swal.truncate.flush``), O4 (``swal.truncate.fence``): the next transaction's log stores
  may then overwrite the log.

The locks are released after the truncation. Allocation goes through the allocation log
(:mod:`pmsim.runtimes.alloclog`), persisted before O1 and applied in phase 3, with CLFLUSH too.

An ordering point is an MFENCE where the WPQ is in the persistence domain (PDOM-1/2) and a
persist barrier in PDOM-0, where a fence orders no persistence (the paper's machine has no
volatile WPQ). Under this crash model a CLFLUSHed line is persistent (or accepted, PDOM-0)
before any later store of its thread, so a dropped MFENCE is a bug only in PDOM-0.

Recovery replays the log of each descriptor whose commit record is whole (both words name the
same transaction of that thread) and whose records parse within the tail and name application
data, CLFLUSHes the homes, orders, then resets every descriptor and orders again. Replay
stores values, so a crash during recovery only repeats it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from typing import Any

from ...config import LINE
from ...errors import ConfigError
from ...trace import Mark
from ..alloc import ALLOC
from ..base import (
    COMMITTED,
    H_NALLOC,
    H_STATE,
    H_TAIL,
    IDLE,
    PB_DOMAINS,
    Runtime,
    RuntimeCosts,
    Tx,
    lines_of,
)
from ..descriptor import COUNT_BITS, state_of
from ..labels import Label, Labeller, register_labels
from ..layout import Layout, PMSpec
from ..mutation import Mutant, drop, skip_check
from ..registry import register_mutant, register_runtime

REC_WORDS = 2  # home, n
SEQ_MASK = (1 << 32) - 1


class SWalTx(Tx):
    """A transaction's volatile state: the new words by address, and its log's extent."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.new: dict[int, int] = {}  # home word address -> newest value
        self.head = rt.layout.log[cpu.tid]
        self.tail = self.head
        self.log_lines: dict[int, None] = {}

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        cpu.work(self.rt.costs.call_ns)
        ld = cpu.load
        home = obj + 8 * field
        new = self.new
        if obj in self.fresh or not new:
            return cpu.load_words(home, n)
        cpu.work(self.rt.costs.hash_lookup_ns)
        out = []
        for i in range(n):
            a = home + 8 * i
            v = new.get(a)
            out.append(ld(a) if v is None else v)
        return out

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.rt._write(self, obj, field, values)  # type: ignore[attr-defined]


@register_runtime
class SWalRuntime(Runtime):
    """Software redo WAL with strict ordering: CLFLUSH per line and an MFENCE per phase."""

    name = "swal"
    family = "swal"

    STEPS = {
        "swal.write.log": ("group", "append a record [home][n][values] to the log (cached)"),
        "swal.commit.flush-fresh": ("flush", "CLFLUSH fields written in objects this tx allocated"),
        "swal.log.flush": ("flush", "CLFLUSH every log line the transaction wrote"),
        "swal.log.fence": ("order", "O1: log (and allocation log) durable before the commit "
                           "record"),
        "swal.commit.record": ("group", "store the commit record (txid, tail)"),
        "swal.commit.flush": ("flush", "CLFLUSH the commit record's line"),
        "swal.commit.fence": ("order", "O2: the commit record durable before the acknowledgment "
                              "and the home writes"),
        "swal.update.store": ("group", "store the new values at their homes (cached)"),
        "swal.update.flush": ("flush", "CLFLUSH every home line written"),
        "swal.update.fence": ("order", "O3: home writes durable before the truncation"),
        "swal.truncate.reset": ("group", "reset the commit record and the allocation-log count"),
        "swal.truncate.flush": ("flush", "CLFLUSH the descriptor line"),
        "swal.truncate.fence": ("order", "O4: the truncation durable before the next "
                                "transaction's log writes"),
        "swal.recover.replay": ("group", "replay a committed log to its homes; CLFLUSH"),
        "swal.recover.fence-replay": ("order", "replayed data durable before the reset"),
        "swal.recover.reset": ("group", "reset every descriptor; CLFLUSH"),
        "swal.recover.fence-reset": ("order", "the reset durable before recovery returns"),
    }
    CHECKS = {
        "swal.recover.record-bounds": "a record must end within the committed tail and name "
                                      "application data",
    }

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        self.ack_latencies: list[float] = []  # begin -> TX_DURABLE (after O2) of each commit

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return 8 * (spec.max_tx_writes * REC_WORDS + spec.max_tx_words)

    def format(self, cpu: Any = None) -> None:
        """The base format, with empty commit records (tail word 0)."""
        super().format(cpu)
        for d in self.layout.desc:
            self.m.poke(d + 8 * H_TAIL, 0)

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return SWalTx(self, cpu, txid)

    def _begin(self, tx: Tx) -> None:
        """Nothing persistent: the previous transaction's truncation left the record empty."""

    def _tag(self, tx: Tx) -> int:
        return tx.txid & SEQ_MASK

    # -- the paper's instructions ------------------------------------------------------------------
    def _clflush(self, cpu: Any, name: str, lines: Iterable[int]) -> None:
        """CLFLUSH every line of ``lines`` as one named flush step."""
        with self.step(cpu, name) as c:
            for line in lines:
                c.clflush(line)

    def _mfence(self, cpu: Any, name: str) -> None:
        """An ordering point: MFENCE, or a persist barrier in PDOM-0 (a volatile WPQ)."""
        op = "persist_barrier" if self._order_pb else "mfence"
        if self.hook is None:
            getattr(cpu, op)()
        else:
            self.hook.op(cpu, name, op)

    def _flush_alog(self, tx: Tx) -> None:
        """The allocation log and its count, CLFLUSHed (before O1)."""
        if not tx.alog:
            return
        lay = self.layout
        hdr = lay.desc[tx.tid]
        with self.step(tx.cpu, "alloc.flush-log") as c:
            c.store(hdr + 8 * H_NALLOC, self._tag(tx) << COUNT_BITS | len(tx.alog))
            for line in lines_of(lay.alloc_log[tx.tid], 8 * len(tx.alog)):
                c.clflush(line)
            c.clflush(hdr)

    def _apply_alog(self, cpu: Any, entries: Sequence[int], step: str = "alloc.apply") -> None:
        """Flip the logged bits (in order) and CLFLUSH their lines."""
        if not entries:
            return
        with self.step(cpu, step) as c:
            lines: dict[int, None] = {}
            for e in entries:
                lines[self.heap.flip(c, e & ~1, (e & 1) == ALLOC)] = None
            for line in lines:
                c.clflush(line)

    # -- transactions ------------------------------------------------------------------------------
    def _write(self, tx: SWalTx, obj: int, field: int, values: Sequence[int]) -> None:
        cpu = tx.cpu
        cpu.work(self.costs.call_ns)
        n = len(values)
        home = obj + 8 * field
        if obj in tx.fresh:
            cpu.store_words(home, values)
            tx.dirty.update(lines_of(home, 8 * n))
            return
        rec = tx.tail
        end = rec + 8 * (REC_WORDS + n)
        if end > tx.head + self.layout.log_bytes:
            raise ConfigError(f"transaction {tx.txid:#x} overflowed its S-WAL log "
                              f"({self.layout.log_bytes} bytes): raise PMSpec.max_tx_writes/words")
        with self.step(cpu, "swal.write.log") as c:
            c.store_words(rec, [home, n, *values])  # the REC_WORDS header, then the values
        tx.log_lines.update(dict.fromkeys(lines_of(rec, end - rec)))
        cpu.work(self.costs.hash_insert_ns)
        for i, v in enumerate(values):
            tx.new[home + 8 * i] = v
        tx.tail = end
        tx.writes += 1

    def commit(self, tx: Tx) -> Generator[Any, Any, None]:
        """Phases 1-2, the acknowledgment (TX_DURABLE), phases 3-4, then the lock release."""
        self._check_live(tx)
        self._commit(tx)
        self.commits += 1
        self.commit_order.append(tx.txid)
        tx.cpu.mark(Mark.TX_DURABLE, tx.txid)
        self.ack_latencies.append(tx.cpu.clock - tx.start)
        assert isinstance(tx, SWalTx)
        if tx.modified:
            self._checkpoint(tx)
        self.end_steps(tx.tid)
        yield from self._finish(tx)

    def _commit(self, tx: Tx) -> None:
        """Log write (flushes, O1) and commit (the record, O2)."""
        assert isinstance(tx, SWalTx)
        cpu = tx.cpu
        if not tx.modified:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            return
        hdr = self.layout.desc[tx.tid]
        self._clflush(cpu, "swal.commit.flush-fresh", tx.dirty)
        self._flush_alog(tx)
        self._clflush(cpu, "swal.log.flush", tx.log_lines)
        self._mfence(cpu, "swal.log.fence")
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        with self.step(cpu, "swal.commit.record") as c:
            c.store(hdr + 8 * H_TAIL, self._tag(tx) << 32 | (tx.tail - tx.head))
            c.store(hdr + 8 * H_STATE, tx.txid << 8 | COMMITTED)
        self._clflush(cpu, "swal.commit.flush", (hdr,))
        self._mfence(cpu, "swal.commit.fence")

    def _checkpoint(self, tx: SWalTx) -> None:
        """In-place update (flushes, O3) and truncation (O4); then frees become reusable."""
        cpu = tx.cpu
        self._apply_alog(cpu, tx.alog)
        self._store_home(cpu, tx.new.items(), "swal.update.store")
        self._clflush(cpu, "swal.update.flush", dict.fromkeys(a & ~(LINE - 1) for a in tx.new))
        self._mfence(cpu, "swal.update.fence")
        hdr = self.layout.desc[tx.tid]
        with self.step(cpu, "swal.truncate.reset") as c:
            c.store(hdr + 8 * H_STATE, IDLE)
            c.store(hdr + 8 * H_TAIL, 0)
            c.store(hdr + 8 * H_NALLOC, 0)
        self._clflush(cpu, "swal.truncate.flush", (hdr,))
        self._mfence(cpu, "swal.truncate.fence")
        self._release_frees(tx)

    def _store_home(self, cpu: Any, words: Iterable[tuple[int, int]], step: str) -> None:
        """Store ``(address, value)`` pairs in order, as one step."""
        with self.step(cpu, step) as c:
            st = c.store
            nbytes = 0
            for a, v in words:
                st(a, v)
                nbytes += 8
            c.work(self.costs.copy_ns_per_byte * nbytes)

    def _abort(self, tx: Tx) -> None:
        """Nothing persistent to undo: homes are untouched and no commit record was written."""
        self._return_allocs(tx)

    # -- recovery ----------------------------------------------------------------------------------
    def committed(self, tid: int) -> int | None:
        """The sequence number of the transaction thread ``tid``'s commit record names, if the
        record is whole: a torn record (PX86: its two words persist independently) is none."""
        m = self.m
        hdr = self.layout.desc[tid]
        state, tail = m.peek(hdr + 8 * H_STATE), m.peek(hdr + 8 * H_TAIL)
        txid = state >> 8
        if state_of(state) != COMMITTED or txid >> 32 != tid or tail >> 32 != txid & SEQ_MASK:
            return None
        return txid & SEQ_MASK

    def read_log(self, tid: int) -> list[tuple[int, list[int]]]:
        """The committed records of thread ``tid``'s log (untimed), oldest first."""
        m = self.m
        head = self.layout.log[tid]
        end = head + self.layout.log_bytes
        tail = head + (m.peek(self.layout.desc[tid] + 8 * H_TAIL) & SEQ_MASK)
        check = self.check("swal.recover.record-bounds")
        if not check:
            tail = end
        out = []
        pos = head
        while pos + 8 * REC_WORDS <= tail:
            home, n = m.peek(pos), m.peek(pos + 8)
            rend = pos + 8 * (REC_WORDS + n)
            if rend > end or check and (rend > tail or home % 8
                                        or not self.layout.is_data(home, 8 * n)):
                break
            out.append((home, [m.peek(pos + 8 * (REC_WORDS + i)) for i in range(n)]))
            pos = rend
        return out

    def _recover(self, cpu: Any) -> None:
        """Replay each whole commit record's log and allocation log; order; reset; order."""
        lay = self.layout
        acted = False
        for t in range(lay.threads):
            seq = self.committed(t)
            if seq is None:
                continue
            words = {home + 8 * i: v for home, vals in self.read_log(t) for i, v in enumerate(vals)}
            with self.step(cpu, "swal.recover.replay") as c:
                for a, v in words.items():
                    c.store(a, v)
                for line in dict.fromkeys(a & ~(LINE - 1) for a in words):
                    c.clflush(line)
            self._apply_alog(cpu, self._read_alog(t, seq), "alloc.recover-apply")
            acted = True
        if acted:
            self._mfence(cpu, "swal.recover.fence-replay")
        with self.step(cpu, "swal.recover.reset") as c:
            for hdr in lay.desc:
                c.store(hdr + 8 * H_STATE, IDLE)
                c.store(hdr + 8 * H_TAIL, 0)
                c.store(hdr + 8 * H_NALLOC, 0)
                c.clflush(hdr)
        self._mfence(cpu, "swal.recover.fence-reset")

    def _check_logs(self) -> list[str]:
        return [f"descriptor {t}: S-WAL commit record (tail word) not reset"
                for t, hdr in enumerate(self.layout.desc) if self.m.peek(hdr + 8 * H_TAIL)]


def _swal_log(lab: Labeller, tid: int, word: int) -> Label:
    """Records ``[home][n][values]`` walked from the log's head through the memory."""
    head = lab.layout.log[tid]
    left = lab.layout.log_bytes >> 3
    pos = rec = 0
    while lab.memory is not None and pos <= word:
        n = lab.read(head + 8 * pos + 8)
        if not n or REC_WORDS + n > left - pos or not lab.read(head + 8 * pos):
            break
        if word < pos + REC_WORDS + n:
            j = word - pos
            role = ("home", "length")[j] if j < REC_WORDS else f"new value {j - REC_WORDS}"
            return Label(f"S-WAL log T{tid} record {rec}", "word", j, role)
        pos += REC_WORDS + n
        rec += 1
    return Label(f"S-WAL log T{tid}", "word", word)


register_labels("swal", log=_swal_log)

for _m in (
    Mutant("swal:S1", SWalRuntime, (drop("swal.log.flush"), drop("swal.log.fence")), PB_DOMAINS,
           "drop O1 (the log's CLFLUSHes and MFENCE): the commit record may persist before the "
           "log lines, and a log of stale or missing records is replayed"),
    Mutant("swal:S2", SWalRuntime, (drop("swal.commit.flush"), drop("swal.commit.fence")),
           PB_DOMAINS, "drop O2: home writes may persist before the commit record (torn "
           "transaction), and the acknowledgment comes before the record is durable"),
    Mutant("swal:S3", SWalRuntime, (drop("swal.update.flush"), drop("swal.update.fence")),
           PB_DOMAINS, "drop O3: the truncation may persist before the home writes (committed "
           "writes lost)"),
    Mutant("swal:S4", SWalRuntime, (drop("swal.truncate.flush"), drop("swal.truncate.fence")),
           PB_DOMAINS, "drop O4: the next transaction's log records may persist while the "
           "previous commit record still does (its uncommitted values replayed)"),
    Mutant("swal:S5", SWalRuntime, (skip_check("swal.recover.record-bounds"),),
           why="recovery ignores the committed tail and the data bounds: records an earlier, "
               "longer transaction left beyond the tail are replayed over newer data",
           needs="transactions of different lengths on one thread", workload="rbtree"),
):
    register_mutant(_m)
