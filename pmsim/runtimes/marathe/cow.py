"""Copy-on-write (card §3.3, §4.3): objects are wrappers around heap payloads.

Wrapper (32 bytes, one line): ``[old][new][old_backup][writer_id]``; the object's initial
("home") payload follows the wrapper, and ``old == 0`` means the payload is the home one, so a
zero-initialised array is a valid array of objects. Opening an object read-write the first time
allocates a payload, copies the current one into it, and records ``new``, ``old_backup`` and the
writer; later accesses use ``new``. Reads go through the wrapper (one extra indirection) and
are redirected to ``new`` only for objects in the transaction's volatile write set. Writer ids
are ``epoch << 8 | tid + 1``; recovery bumps the persistent epoch so they stay unique across
restarts.

Commit: PB#1 (payloads, wrappers, write set, allocation log), COMMITTED + PB#2 (commit point),
``old := new``, free ``old_backup``, flip the allocation bits, PB#3, then ``new := 0`` and IDLE,
PB#4, then clear the writer ids. (The card resets ``new`` before PB#3, relying on the wrapper's
line persisting in store order; after PB#3 it is safe when atoms persist independently [A].)
4 PBs per committed writing transaction, 2 per abort, 0 read-only. The protocol is written as
the named steps of ``CowRuntime.STEPS``; the card's mutants (C1-C6, A1, A2) are data at the end.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...config import LINE
from ...errors import ConfigError
from ...trace import Mark
from ..alloclog import EAGER_STEPS
from ..allocmutants import register_alloc_mutants
from ..base import (
    COMMITTED,
    G_EPOCH,
    H_NALLOC,
    H_NWSET,
    H_STATE,
    IDLE,
    PB_DOMAINS,
    RUNNING,
    Runtime,
    Tx,
    lines_of,
)
from ..labels import Label, Labeller, register_labels
from ..layout import PMSpec, block_size
from ..mutation import Mutant, delay, drop, patch
from ..registry import register_mutant, register_runtime, variant

W_OLD, W_NEW, W_BACKUP, W_WRITER = 0, 8, 16, 24
WRAPPER = 32


def heap_payload_words(words: int) -> int:
    """Payload capacity (words) of a heap object of ``words`` fields: its block minus the wrapper."""
    return (block_size(WRAPPER + 8 * words) - WRAPPER) // 8


class CowTx(Tx):
    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.wset: dict[int, int] = {}  # obj -> new payload
        self.wold: dict[int, int] = {}  # obj -> payload before the transaction (0: home)

    def open(self, obj: int, write: bool = False) -> int:
        """TXN_OPEN: the address of the payload to access."""
        return self.rt._open(self, obj, write)  # type: ignore[attr-defined]

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        cpu.work(self.rt.costs.call_ns)
        p = self.open(obj, False) + 8 * field
        return cpu.load_words(p, n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        cpu = self.cpu
        cpu.work(self.rt.costs.call_ns)
        p = self.open(obj, True) + 8 * field
        cpu.store_words(p, values)
        if obj in self.fresh:
            self.dirty.update(lines_of(p, 8 * len(values)))
        else:
            self.writes += 1


@register_runtime
class CowRuntime(Runtime):
    """Copy-on-write objects with old/new/old_backup wrappers."""

    name = "cow"
    family = "cow"
    _field0_words = WRAPPER // 8

    STEPS = {
        "cow.begin.header": ("group", "reset write-set size, allocation-log count, state RUNNING"),
        "cow.open.writer": ("store", "first write: store the writer id in the wrapper"),
        "cow.open.copy": ("group", "copy the current payload into a new one"),
        "cow.open.store-new": ("store", "new := the new payload"),
        "cow.open.store-backup": ("store", "old_backup := old (what the commit will free)"),
        "cow.open.wset": ("store", "append the object to the persistent write set"),
        "cow.commit.wset-count": ("store", "store the write-set size"),
        "cow.commit.flush": ("flush", "flush payloads, wrappers, the write set, fresh objects"),
        "cow.commit.flush-header": ("flush", "flush the header"),
        "cow.commit.pb1": ("pb", "PB#1: payloads, wrappers, write set, allocation log before "
                           "COMMITTED"),
        "cow.commit.store-committed": ("group", "store COMMITTED (the commit point); flush"),
        "cow.commit.pb2": ("pb", "PB#2: COMMITTED durable before any swap"),
        "cow.commit.swap": ("group", "old := new, clear old_backup's bit; flush"),
        "cow.commit.pb3": ("pb", "PB#3: swaps and bit flips before new := 0 and IDLE"),
        "cow.commit.reset-new": ("group", "new := 0 in every written wrapper"),
        "cow.commit.store-idle": ("group", "store IDLE; flush the header"),
        "cow.commit.pb4": ("pb", "PB#4: IDLE before the next transaction"),
        "cow.commit.clear-writers": ("group", "writer id := 0 in every written wrapper"),
        "cow.abort.reset-wrappers": ("group", "new := 0, writer := 0; flush the wrappers"),
        "cow.abort.pb1": ("pb", "reset wrappers and allocator state before IDLE"),
        "cow.abort.store-idle": ("group", "store IDLE; flush the header"),
        "cow.abort.pb2": ("pb", "IDLE before the thread's next transaction"),
        "cow.recover.flip-backup": ("group", "swap already done: clear old_backup's bit; flush"),
        "cow.recover.swap": ("group", "finish a COMMITTED descriptor's swaps; flush"),
        "cow.recover.pb1": ("pb", "swaps and bit flips before new := 0 and the reset"),
        "cow.recover.reset-new": ("group", "new := 0 in the swapped wrappers; flush"),
        "cow.recover.reset": ("group", "bump the epoch; reset every header (IDLE)"),
        "cow.recover.pb2": ("pb", "the reset is persistent before recovery returns"),
    }
    CHECKS = {
        "cow.recover.valid-object": "a write-set entry must be a wrapper of this layout",
        "cow.recover.valid-backup": "old_backup must be a heap block (or 0) before it is freed",
    }

    def crash_irrelevant(self) -> list[int]:
        """The static wrappers' writer ids: reads redirect only for the running transaction's
        volatile write set, and recovery never consults them."""
        return self._static_words(W_WRITER)

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self._static_bases = [s.base for s in self.layout.statics]

    @classmethod
    def obj_bytes(cls, words: int) -> int:
        return WRAPPER + 8 * words

    @classmethod
    def static_stride(cls, words: int) -> int:
        return (WRAPPER + 8 * words + WRAPPER - 1) // WRAPPER * WRAPPER

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return 8 * spec.max_tx_objects

    @classmethod
    def alloc_cap(cls, spec: PMSpec) -> int:
        return spec.max_tx_allocs + 2 * spec.max_tx_objects

    @classmethod
    def extra_heap(cls, spec: PMSpec, threads: int) -> dict[int, int]:
        out: dict[int, int] = {}
        for s in spec.statics:
            b = block_size(8 * s.words)
            n = s.count if s.written is None else min(s.count, s.written)
            out[b] = out.get(b, 0) + n
        for lo, hi, live in spec.heap:
            for b in {block_size(8 * heap_payload_words(w)) for w in range(lo, hi + 1)}:
                out[b] = out.get(b, 0) + live
        return out

    # -- objects ---------------------------------------------------------------------------------
    def writer_id(self, tid: int) -> int:
        """Unique across restarts: recovery bumps the persistent epoch."""
        return (self.epoch << 8) | (tid + 1)

    def payload_words(self, obj: int) -> int:
        """Capacity of an object's payload: the static array's words, or what its block holds."""
        i = bisect.bisect_right(self._static_bases, obj) - 1
        if i >= 0:
            s = self.layout.statics[i]
            if obj < s.base + s.count * s.stride:
                return s.words
        ci, _ = self.heap.owner(obj)
        return (self.layout.heap[ci].block - WRAPPER) // 8

    def field_addr(self, obj: int, field: int) -> int:
        old = self.m.peek(obj + W_OLD)
        return (old or obj + WRAPPER) + 8 * field

    def blocks_of(self, obj: int) -> list[int]:
        old = self.m.peek(obj + W_OLD)
        return [obj, old] if old else [obj]

    def peek_static(self, name: str) -> np.ndarray:
        s = self.layout.static(name)
        pm = self.m.engine.mem.pm
        base = self.m.pm.base
        wrappers = (s.base - base) // 8 + np.arange(s.count, dtype=np.int64) * (s.stride // 8)
        self.m.note_reads(wrappers)
        old = pm[wrappers].astype(np.int64)
        payload = np.where(old == 0, wrappers + WRAPPER // 8, (old - base) // 8)
        idx = payload[:, None] + np.arange(s.words)[None, :]
        self.m.note_reads(idx.ravel())
        return pm[idx]

    def static_payloads(self) -> dict[int, int]:
        """Heap payload -> static object, for every static object whose payload moved."""
        out: dict[int, int] = {}
        pm = self.m.engine.mem.pm
        for s in self.layout.statics:
            wrappers = (s.base - self.m.pm.base) // 8 + np.arange(s.count, dtype=np.int64) * (s.stride // 8)
            self.m.note_reads(wrappers)
            old = pm[wrappers]
            for i in np.flatnonzero(old).tolist():
                out[int(old[i])] = s.base + i * s.stride
        return out

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return CowTx(self, cpu, txid)

    def _init_object(self, tx: Tx, obj: int, words: int) -> None:
        st = tx.cpu.store
        for off in (W_OLD, W_NEW, W_BACKUP, W_WRITER):
            st(obj + off, 0)
        tx.dirty.add(obj & ~(LINE - 1))

    def _open(self, tx: CowTx, obj: int, write: bool) -> int:
        cpu = tx.cpu
        cpu.work(self.costs.open_ns)
        if obj in tx.fresh:
            return obj + WRAPPER
        p = tx.wset.get(obj)
        if p is not None:
            return p
        if not write:
            return self._read_payload(tx, obj)
        me = self.writer_id(tx.tid)
        if len(tx.wset) >= self.layout.spec.max_tx_objects:
            raise ConfigError(f"transaction {tx.txid:#x} wrote more than "
                              f"{self.layout.spec.max_tx_objects} objects: raise PMSpec.max_tx_objects")
        old = cpu.load(obj + W_OLD)
        src = old or obj + WRAPPER
        n = self.payload_words(obj)
        self.st(cpu, "cow.open.writer", obj + W_WRITER, me)
        p = self.heap.pop(tx.tid, 8 * n)
        cpu.work(self.costs.alloc_ns)
        self._log_alloc(tx, p, 0)
        tx.allocs.append(p)
        with self.step(cpu, "cow.open.copy") as c:
            ld, st = c.load, c.store
            for i in range(n):
                st(p + 8 * i, ld(src + 8 * i))
        self.st(cpu, "cow.open.store-new", obj + W_NEW, p)
        self.st(cpu, "cow.open.store-backup", obj + W_BACKUP, old)
        self.st(cpu, "cow.open.wset", self.layout.log[tx.tid] + 8 * len(tx.wset), obj)
        tx.wset[obj] = p
        tx.wold[obj] = old
        return p

    def _read_payload(self, tx: CowTx, obj: int) -> int:
        """The payload a read of an object outside the write set goes to."""
        return tx.cpu.load(obj + W_OLD) or obj + WRAPPER

    def _blocks_to_free(self, tx: Tx, obj: int) -> list[int]:
        assert isinstance(tx, CowTx)
        if obj in tx.fresh:
            return [obj]
        if obj in tx.wset:
            return [obj, tx.wset[obj]]  # old_backup is freed by the write-set cleanup
        old = tx.cpu.load(obj + W_OLD)
        return [obj, old] if old else [obj]

    # -- commit and abort ------------------------------------------------------------------------
    def _begin(self, tx: Tx) -> None:
        hdr = self.layout.desc[tx.tid]
        with self.step(tx.cpu, "cow.begin.header") as c:
            c.store(hdr + 8 * H_NWSET, 0)
            c.store(hdr + 8 * H_NALLOC, 0)
            c.store(hdr + 8 * H_STATE, RUNNING)

    def _commit(self, tx: Tx) -> None:
        assert isinstance(tx, CowTx)
        cpu = tx.cpu
        if not tx.modified:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            return
        hdr = self.layout.desc[tx.tid]
        lines = dict.fromkeys(tx.dirty)
        for obj, p in tx.wset.items():
            lines.update(dict.fromkeys(lines_of(p, 8 * self.payload_words(obj))))
            lines[obj & ~(LINE - 1)] = None
        if tx.wset:
            self.st(cpu, "cow.commit.wset-count", hdr + 8 * H_NWSET, len(tx.wset))
            lines.update(dict.fromkeys(lines_of(self.layout.log[tx.tid], 8 * len(tx.wset))))
        self.flush(cpu, "cow.commit.flush", lines)
        self._flush_alog(tx)
        self.flush(cpu, "cow.commit.flush-header", (hdr,))
        self.pb(cpu, "cow.commit.pb1")
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        with self.step(cpu, "cow.commit.store-committed") as c:
            c.store(hdr + 8 * H_STATE, COMMITTED)
            c.clwb(hdr)
        self.pb(cpu, "cow.commit.pb2")  # the commit point is durable
        freed = self._swap(cpu, [(obj, p, tx.wold[obj]) for obj, p in tx.wset.items()],
                           "cow.commit.swap")
        self._apply_alog(cpu, tx.alog)
        self.pb(cpu, "cow.commit.pb3")
        with self.step(cpu, "cow.commit.reset-new") as c:  # (ii) only once old := new is durable
            for obj in tx.wset:
                c.store(obj + W_NEW, 0)
        with self.step(cpu, "cow.commit.store-idle") as c:
            c.store(hdr + 8 * H_STATE, IDLE)
            c.clwb(hdr)
        self.pb(cpu, "cow.commit.pb4")
        with self.step(cpu, "cow.commit.clear-writers") as c:
            for obj in tx.wset:
                c.store(obj + W_WRITER, 0)
        for b in freed:
            self.heap.push(b)
        self._release_frees(tx)

    def _swap(self, cpu: Any, items: Sequence[tuple[int, int, int]], step: str) -> list[int]:
        """(i) old := new and (iii) clear old_backup's bit; flush. Returns the freed payloads.
        ``items`` are (wrapper, new payload, payload to free or 0). (ii) new := 0 comes after
        the next PB: the wrapper's atoms may persist in any order (px86), and recovery must
        never see new == 0 before old == new is durable."""
        lines: dict[int, None] = {}
        freed = []
        with self.step(cpu, step) as c:
            for obj, p, ob in items:
                c.store(obj + W_OLD, p)
                lines[obj & ~(LINE - 1)] = None
                if ob:
                    lines[self.heap.flip(c, ob, False)] = None
                    freed.append(ob)
            for line in lines:
                c.clwb(line)
        return freed

    def _abort(self, tx: Tx) -> None:
        assert isinstance(tx, CowTx)
        cpu = tx.cpu
        with self.step(cpu, "cow.abort.reset-wrappers") as c:
            for obj in tx.wset:
                c.store(obj + W_NEW, 0)
                c.store(obj + W_WRITER, 0)
                c.clwb(obj)
        self._return_allocs(tx)
        if tx.modified:
            self.pb(cpu, "cow.abort.pb1")
        hdr = self.layout.desc[tx.tid]
        with self.step(cpu, "cow.abort.store-idle") as c:
            c.store(hdr + 8 * H_STATE, IDLE)
            c.clwb(hdr)
        if tx.modified:
            self.pb(cpu, "cow.abort.pb2")

    # -- recovery ------------------------------------------------------------------------------
    def _valid_obj(self, obj: int) -> bool:
        if obj % WRAPPER:
            return False
        i = bisect.bisect_right(self._static_bases, obj) - 1
        if i >= 0:
            s = self.layout.statics[i]
            if obj < s.base + s.count * s.stride:
                return (obj - s.base) % s.stride == 0
        try:
            self.heap.owner(obj)
        except Exception:
            return False
        return True

    def _recover(self, cpu: Any) -> None:
        """Finish COMMITTED descriptors' cleanup, bump the epoch, reset every header."""
        lay, m = self.layout, self.m
        acted = False
        swapped: list[int] = []
        check_obj = self.check("cow.recover.valid-object")
        check_backup = self.check("cow.recover.valid-backup")
        for t, hdr in enumerate(lay.desc):
            state = m.peek(hdr + 8 * H_STATE)
            alog = self._read_alog(t) if state != IDLE else []
            if state == COMMITTED:
                n = min(m.peek(hdr + 8 * H_NWSET), lay.spec.max_tx_objects)
                items = []
                done = []
                for i in range(n):
                    obj = m.peek(lay.log[t] + 8 * i)
                    if check_obj and not self._valid_obj(obj):
                        continue
                    new, backup = m.peek(obj + W_NEW), m.peek(obj + W_BACKUP)
                    if check_backup and not self._block_ok(backup):
                        continue
                    if new:
                        items.append((obj, new, backup))
                    elif backup:
                        done.append(backup)
                if done:
                    with self.step(cpu, "cow.recover.flip-backup") as c:
                        for ob in done:
                            c.clwb(self.heap.flip(c, ob, False))
                self._swap(cpu, items, "cow.recover.swap")
                self._apply_alog(cpu, alog, "alloc.recover-apply")
                swapped.extend(obj for obj, _, _ in items)
                acted = True
            elif self.eager_alloc and alog:
                self._revert_alog(cpu, alog)
                acted = True
        if acted:
            self.pb(cpu, "cow.recover.pb1")
        with self.step(cpu, "cow.recover.reset-new") as c:
            for obj in swapped:
                c.store(obj + W_NEW, 0)
                c.clwb(obj)
        with self.step(cpu, "cow.recover.reset") as c:
            c.store(lay.base + 8 * G_EPOCH, m.peek(lay.base + 8 * G_EPOCH) + 1)
            c.clwb(lay.base)
            for hdr in lay.desc:
                c.store(hdr + 8 * H_NWSET, 0)
                c.store(hdr + 8 * H_NALLOC, 0)
                c.store(hdr + 8 * H_STATE, IDLE)
                c.clwb(hdr)
        self.pb(cpu, "cow.recover.pb2")

    def _block_ok(self, addr: int) -> bool:
        if not addr:
            return True
        try:
            self.heap.owner(addr)
        except Exception:
            return False
        return True

    def _runtime_blocks(self) -> dict[int, int]:
        return self.static_payloads()

    def _check_logs(self) -> list[str]:
        return [f"descriptor {t}: write set not reset" for t, hdr in enumerate(self.layout.desc)
                if self.m.peek(hdr + 8 * H_NWSET)]


COW_EAGER = variant(CowRuntime, "cow-eager", eager_alloc=True, STEPS=EAGER_STEPS,
                      OMIT_STEPS=frozenset({"alloc.apply"}))
COW_EADR = variant(CowRuntime, "cow-eadr", elide_flushes=True)  # no flushes in PDOM-2


def _cow_log(lab: Labeller, tid: int, word: int) -> Label:
    return Label(f"write set T{tid}", "entry", word)


def _cow_static(lab: Labeller, owner: str, word: int, words: int) -> Label:
    roles = ("old", "new", "old_backup", "writer")
    if word < WRAPPER // 8:
        return Label(owner, role=f"wrapper {roles[word]}")
    return Label(owner, "home payload field", word - WRAPPER // 8)


register_labels("cow", log=_cow_log, static=_cow_static)

def _reads_trust_writer(orig: Any) -> Any:
    """C6: a read redirects to ``new`` whenever the wrapper's writer id is the thread's."""
    def _read_payload(self: CowRuntime, tx: CowTx, obj: int) -> int:
        cpu = tx.cpu
        if cpu.load(obj + W_WRITER) == self.writer_id(tx.tid):
            new = cpu.load(obj + W_NEW)
            if new:
                return new
        return orig(self, tx, obj)
    return _read_payload


for _m in (
    Mutant("cow:C1", CowRuntime, (drop("cow.commit.pb1"),), PB_DOMAINS,
           "drop PB#1: COMMITTED may persist before payloads, wrappers or the write set "
           "(garbage swapped in, torn)"),
    Mutant("cow:C2", CowRuntime, (drop("cow.commit.pb2"),), PB_DOMAINS,
           "drop PB#2: swaps may persist before COMMITTED (partly visible uncommitted "
           "transaction, live payload marked free)"),
    Mutant("cow:C3", CowRuntime, (drop("cow.commit.pb3"),), PB_DOMAINS,
           "drop PB#3: IDLE may persist before the swaps and bit flips (lost update, leaks)"),
    Mutant("cow:C4", CowRuntime, (drop("cow.open.store-backup"),), why=
           "no old_backup: the old payload is freed through a volatile pointer, so a crash after "
           "the swap leaks it"),
    Mutant("cow:C5", CowRuntime, (delay("cow.commit.swap", after="cow.commit.reset-new"),
                                   delay("cow.recover.swap", after="cow.recover.reset-new")), why=
           "store new := 0 before old := new: the committed payload can be lost (reversed "
           "program order, a bug in every domain)"),
    Mutant("cow:C6", CowRuntime, (
        patch("writer_id", lambda orig: lambda self, tid: tid + 1, "ids reused across restarts"),
        patch("_read_payload", _reads_trust_writer, "reads trust the writer id"),
        patch("crash_irrelevant", lambda orig: lambda self: [], "writer ids are relevant")),
        why="redirect reads on writer_id alone with ids reused across restarts: after recovery a "
            "read returns a stale payload (functional)",
        needs="transactions run after recovery on the recovered image"),
):
    register_mutant(_m)
register_alloc_mutants(CowRuntime)
