"""Redo logging (card §3.2, §4.2): writes go to a log, home locations change after commit.

Objects carry a one-word header, the 64-bit writers bitmap (bit = thread id); fields follow it.
A write sets the writer's bit (a PM store, never flushed), appends ``[home][words][prev][new
words ...]`` to the descriptor's log (``prev``: the object's previous record, a per-object
stack) and updates a volatile hash object -> records. A read whose bit is clear is a plain
load; otherwise it looks the object up and walks its records newest -> oldest.

Commit: PB#1 (log, tail, allocation log), COMMITTED + PB#2 (the commit point), bit flips and
write-back oldest -> newest + PB#3, IDLE + PB#4, then clear the writer bits. 4 PBs per committed
writing transaction, 0 for read-only ones and for aborts. The protocol is written as the named
steps of ``RedoRuntime.STEPS``; the card's mutants (R1-R5, A1, A2) are data at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import ConfigError
from ...trace import Mark
from ..alloclog import EAGER_STEPS
from ..allocmutants import register_alloc_mutants
from ..base import (
    COMMITTED,
    H_NALLOC,
    H_STATE,
    H_TAIL,
    IDLE,
    PB_DOMAINS,
    RUNNING,
    Runtime,
    Tx,
    lines_of,
)
from ..labels import Label, Labeller, register_labels, walk_records
from ..layout import PMSpec
from ..mutation import Mutant, drop
from ..registry import register_mutant, register_runtime, variant

REC_WORDS = 3  # home, words, prev


class RedoTx(Tx):
    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.bit = 1 << cpu.tid
        self.hash: dict[int, list[tuple[int, list[int], int]]] = {}  # obj -> [(field, vals, rec)]
        self.records: list[tuple[int, list[int]]] = []  # (home addr, values) oldest first
        self.tail = rt.layout.log[cpu.tid]

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        rt = self.rt
        cpu.work(rt.costs.call_ns)
        ld = cpu.load
        home = obj + 8 + 8 * field
        if obj in self.fresh or not ld(obj) & self.bit:
            return cpu.load_words(home, n)
        c = rt.costs
        out: list[int | None] = [None] * n
        missing = n
        visited = 0
        for f, vals, _ in reversed(self.hash.get(obj, ())):
            visited += 1
            lo, hi = max(f, field), min(f + len(vals), field + n)
            for j in range(lo, hi):
                if out[j - field] is None:
                    out[j - field] = vals[j - f]
                    missing -= 1
            if not missing:
                break
        cpu.work(c.hash_lookup_ns + c.chain_node_ns * visited)
        return [ld(home + 8 * i) if v is None else v for i, v in enumerate(out)]

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.rt._write(self, obj, field, values)  # type: ignore[attr-defined]


@register_runtime
class RedoRuntime(Runtime):
    """Redo logging with a writers bitmap per object and a volatile lookup hash."""

    name = "redo"
    family = "redo"
    _field0_words = 1

    STEPS = {
        "redo.begin.header": ("group", "reset tail, allocation-log count and state (RUNNING)"),
        "redo.write.writer-bit": ("store", "set the thread's bit in the object's writers bitmap"),
        "redo.append.record": ("group", "store a record [home][words][prev][new words] at the tail"),
        "redo.append.flush": ("flush", "flush the record's lines"),
        "redo.commit.flush-fresh": ("flush", "flush fields written in objects this tx allocated"),
        "redo.commit.tail": ("group", "store the tail; flush the header"),
        "redo.commit.pb1": ("pb", "PB#1: records, tail and allocation log before COMMITTED"),
        "redo.commit.store-committed": ("group", "store COMMITTED (the commit point); flush"),
        "redo.commit.pb2": ("pb", "PB#2: COMMITTED durable before any write-back"),
        "redo.commit.write-back": ("group", "copy the records to their homes oldest first; flush"),
        "redo.commit.pb3": ("pb", "PB#3: write-backs and bit flips before IDLE"),
        "redo.commit.store-idle": ("group", "store IDLE; flush the header"),
        "redo.commit.pb4": ("pb", "PB#4: IDLE before the next transaction's records"),
        "redo.commit.clear-bits": ("group", "clear the thread's writers bits"),
        "redo.abort.clear-bits": ("group", "abort: clear the thread's writers bits"),
        "redo.recover.write-back": ("group", "replay a COMMITTED descriptor's log; flush"),
        "redo.recover.pb1": ("pb", "replayed data and bit flips before the reset"),
        "redo.recover.reset": ("group", "reset every header (IDLE, empty logs)"),
        "redo.recover.pb2": ("pb", "the reset is persistent before recovery returns"),
    }
    CHECKS = {
        "redo.recover.record-bounds": "a record must lie before the tail and name a data address",
    }

    def crash_irrelevant(self) -> list[int]:
        """Every object's writers bitmap (static objects and heap blocks): recovery never reads
        them, and a stale bit only makes a later read consult the (empty) log."""
        heap = [h.base + i * h.block for h in self.layout.heap for i in range(h.nblocks)]
        return self._static_words(0) + heap

    @classmethod
    def obj_bytes(cls, words: int) -> int:
        return 8 + 8 * words

    @classmethod
    def static_stride(cls, words: int) -> int:
        return 8 + 8 * words

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return 8 * (spec.max_tx_writes * REC_WORDS + spec.max_tx_words)

    def field_addr(self, obj: int, field: int) -> int:
        return obj + 8 + 8 * field

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return RedoTx(self, cpu, txid)

    def _init_object(self, tx: Tx, obj: int, words: int) -> None:
        tx.cpu.store(obj, 0)  # writers bitmap of a recycled block
        tx.dirty.add(obj & ~63)

    def _begin(self, tx: Tx) -> None:
        hdr = self.layout.desc[tx.tid]
        with self.step(tx.cpu, "redo.begin.header") as c:
            c.store(hdr + 8 * H_TAIL, self.layout.log[tx.tid])
            c.store(hdr + 8 * H_NALLOC, 0)
            c.store(hdr + 8 * H_STATE, RUNNING)

    def _write(self, tx: RedoTx, obj: int, field: int, values: Sequence[int]) -> None:
        cpu = tx.cpu
        c = self.costs
        cpu.work(c.call_ns)
        n = len(values)
        home = obj + 8 + 8 * field
        if obj in tx.fresh:
            cpu.store_words(home, values)
            tx.dirty.update(lines_of(home, 8 * n))
            return
        h = cpu.load(obj)
        if not h & tx.bit:
            self.st(cpu, "redo.write.writer-bit", obj, h | tx.bit)
        chain = tx.hash.setdefault(obj, [])
        rec = tx.tail
        end = rec + 8 * (REC_WORDS + n)
        if end > self.layout.log[tx.tid] + self.layout.log_bytes:
            raise ConfigError(f"transaction {tx.txid:#x} overflowed its redo log "
                              f"({self.layout.log_bytes} bytes): raise PMSpec.max_tx_writes/words")
        vals = list(values)
        words = [home, n, chain[-1][2] if chain else 0, *vals]
        with self.step(cpu, "redo.append.record") as s:
            s.store_words(rec, words)
        self.flush(cpu, "redo.append.flush", lines_of(rec, end - rec))
        cpu.work(c.hash_insert_ns)
        chain.append((field, vals, rec))
        tx.records.append((home, vals))
        tx.tail = end
        tx.writes += 1

    def _commit(self, tx: Tx) -> None:
        assert isinstance(tx, RedoTx)
        cpu = tx.cpu
        if not tx.modified:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            return
        hdr = self.layout.desc[tx.tid]
        self.flush(cpu, "redo.commit.flush-fresh", tx.dirty)
        self._flush_alog(tx)
        with self.step(cpu, "redo.commit.tail") as c:
            c.store(hdr + 8 * H_TAIL, tx.tail)
            c.clwb(hdr)
        self.pb(cpu, "redo.commit.pb1")
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        with self.step(cpu, "redo.commit.store-committed") as c:
            c.store(hdr + 8 * H_STATE, COMMITTED)
            c.clwb(hdr)
        self.pb(cpu, "redo.commit.pb2")  # the commit point is durable
        self._apply_alog(cpu, tx.alog)
        self._write_back(cpu, tx.records, "redo.commit.write-back")
        self.pb(cpu, "redo.commit.pb3")
        with self.step(cpu, "redo.commit.store-idle") as c:
            c.store(hdr + 8 * H_STATE, IDLE)
            c.clwb(hdr)
        self.pb(cpu, "redo.commit.pb4")
        self._clear_bits(tx, "redo.commit.clear-bits")
        self._release_frees(tx)

    def _write_back(self, cpu: Any, records: Sequence[tuple[int, Sequence[int]]], step: str) -> None:
        """Copy records to their home locations oldest -> newest and flush the home lines."""
        with self.step(cpu, step) as c:
            st = c.store_words
            lines: dict[int, None] = {}
            nbytes = 0
            for home, vals in records:
                st(home, vals)
                lines.update(dict.fromkeys(lines_of(home, 8 * len(vals))))
                nbytes += 8 * len(vals)
            c.work(self.costs.copy_ns_per_byte * nbytes)
            for line in lines:
                c.clwb(line)

    def _clear_bits(self, tx: RedoTx, step: str) -> None:
        with self.step(tx.cpu, step) as c:
            for obj in tx.hash:
                h = c.load(obj)
                if h & tx.bit:
                    c.store(obj, h & ~tx.bit)

    def _abort(self, tx: Tx) -> None:
        assert isinstance(tx, RedoTx)
        self._clear_bits(tx, "redo.abort.clear-bits")
        self._return_allocs(tx)

    # -- recovery ------------------------------------------------------------------------------
    def read_log(self, tid: int) -> list[tuple[int, list[int]]]:
        """The records up to the persisted tail (untimed), oldest first."""
        m = self.m
        head = self.layout.log[tid]
        end = head + self.layout.log_bytes
        tail = min(max(m.peek(self.layout.desc[tid] + 8 * H_TAIL), head), end)
        out = []
        pos = head
        check = self.check("redo.recover.record-bounds")
        if not check:
            tail = end
        while pos + 8 * REC_WORDS <= tail:
            home, n = m.peek(pos), m.peek(pos + 8)
            rend = pos + 8 * (REC_WORDS + n)
            if check and (rend > tail or home % 8 or not self.layout.is_data(home, 8 * n)):
                break
            out.append((home, [m.peek(pos + 8 * (REC_WORDS + i)) for i in range(n)]))
            pos = rend
        return out

    def _recover(self, cpu: Any) -> None:
        """Replay COMMITTED descriptors, discard the others, reset every header (2 PBs at most)."""
        lay = self.layout
        acted = False
        for t, hdr in enumerate(lay.desc):
            state = self.m.peek(hdr + 8 * H_STATE)
            if state == IDLE:
                continue
            alog = self._read_alog(t)
            if state == COMMITTED:
                self._write_back(cpu, self.read_log(t), "redo.recover.write-back")
                self._apply_alog(cpu, alog, "alloc.recover-apply")
                acted = True
            elif self.eager_alloc and alog:
                self._revert_alog(cpu, alog)
                acted = True
        if acted:
            self.pb(cpu, "redo.recover.pb1")
        with self.step(cpu, "redo.recover.reset") as c:
            for t, hdr in enumerate(lay.desc):
                c.store(hdr + 8 * H_TAIL, lay.log[t])
                c.store(hdr + 8 * H_NALLOC, 0)
                c.store(hdr + 8 * H_STATE, IDLE)
                c.clwb(hdr)
        self.pb(cpu, "redo.recover.pb2")

    def _check_logs(self) -> list[str]:
        return [f"descriptor {t}: redo log tail not reset"
                for t, hdr in enumerate(self.layout.desc)
                if self.m.peek(hdr + 8 * H_TAIL) != self.layout.log[t]]


REDO_EAGER = variant(RedoRuntime, "redo-eager", eager_alloc=True, STEPS=EAGER_STEPS,
                      OMIT_STEPS=frozenset({"alloc.apply"}))
REDO_EADR = variant(RedoRuntime, "redo-eadr", elide_flushes=True)  # no flushes in PDOM-2

def _redo_log(lab: Labeller, tid: int, word: int) -> Label:
    names = ("home", "length", "previous record")

    def step(addr: int, left: int) -> tuple[int, str, Callable[[int], str]] | None:
        n = lab.read(addr + 8)
        if not n or REC_WORDS + n > left or not lab.read(addr):
            return None
        return REC_WORDS + n, "", lambda j: names[j] if j < REC_WORDS else f"new value {j - REC_WORDS}"

    return walk_records(lab, tid, word, "redo log", step)


def _redo_object(lab: Labeller, owner: str, word: int, words: int) -> Label:
    """Redo objects (static and heap) start with the writers bitmap."""
    return Label(owner, role="writers") if word == 0 else Label(owner, "field", word - 1)


register_labels("redo", log=_redo_log, static=_redo_object, heap=_redo_object)

for _m in (
    Mutant("redo:R1", RedoRuntime, (drop("redo.commit.pb1"),), PB_DOMAINS,
           "drop PB#1: COMMITTED may persist before the records or the tail (replay of garbage)"),
    Mutant("redo:R2", RedoRuntime, (drop("redo.commit.pb2"),), PB_DOMAINS,
           "drop PB#2: write-backs may persist before COMMITTED (torn transaction)"),
    Mutant("redo:R3", RedoRuntime, (drop("redo.commit.pb3"),), PB_DOMAINS,
           "drop PB#3: IDLE may persist before the write-backs (committed writes lost)"),
    Mutant("redo:R4", RedoRuntime, (drop("redo.commit.pb4"),), PB_DOMAINS,
           "drop PB#4: the next transaction's records may persist while COMMITTED is still "
           "persistent (uncommitted records replayed)"),
    Mutant("redo:R5", RedoRuntime, (drop("redo.write.writer-bit"),), why=
           "skip setting the writers bit: a read after a write returns the stale home value "
           "(functional)", needs="a read of a field the same transaction wrote"),
):
    register_mutant(_m)
register_alloc_mutants(RedoRuntime)
