"""Undo logging (card §3.1, §4.1): one persist barrier per log append, checksummed records.

Record: ``[sentinel][V][addr][type << 56 | words][old words ...][checksum]``; the checksum
(FNV-1a over the record's words) is stored last. The tail pointer in the descriptor header is
stored after each record's PB without a PB of its own, so it lags at most one record; recovery does not
trust it and accepts records from the head while sentinel, version and checksum verify.

PBs: committed W + 2 (+2 when the transaction allocated or freed), read-only 0. ``undo-2pb``
is the two-PB-per-append variant (no checksum, recovery trusts the tail): 2W + 2 (+2).
``undo-eager`` (eager allocator baseline): W + 2 + one per alloc/free call + 1 for IDLE.

Deviations from the card, both [A]: abort persists IDLE with a second PB, because with one PB a
crash after another thread committed a newer value to a rolled-back address would let recovery
roll it back again; recovery persists V + 2 in every descriptor, so records of a transaction
whose header never persisted cannot pass as a later transaction's. V is kept in the state word
and tags the allocation-log count (``pmsim.runtimes.base``), so the header stays consistent even
when the atoms of its line persist independently (px86 order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..trace import Mark
from .base import (
    COUNT_BITS,
    H_NALLOC,
    H_STATE,
    H_TAIL,
    IDLE,
    PB_DOMAINS,
    RUNNING,
    Runtime,
    Tx,
    lines_of,
    register_alloc_mutants,
    register_mutant,
    register_runtime,
    variant,
)
from .layout import PMSpec

SENTINEL = 0x5EC0DE_0F_11F0_1065
DATA, COMMIT = 1, 2
HDR_WORDS = 4  # sentinel, V, addr, type|len
MASK64 = (1 << 64) - 1


def checksum(words: Sequence[int]) -> int:
    """64-bit FNV-1a over 8-byte words."""
    h = 0xCBF29CE484222325
    for w in words:
        h = ((h ^ w) * 0x100000001B3) & MASK64
    return h


class UndoTx(Tx):
    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.records: list[tuple[int, list[int]]] = []
        self.tail = 0
        self.version = 0

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        cpu.work(self.rt.costs.call_ns)
        ld = cpu.load
        a = obj + 8 * field
        return [ld(a + 8 * i) for i in range(n)]

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.rt._write(self, obj, obj + 8 * field, values)  # type: ignore[attr-defined]


@register_runtime
class UndoRuntime(Runtime):
    """Undo logging with in-place writes; reads are plain loads."""

    name = "undo"
    family = "undo"
    two_pb: ClassVar[bool] = False

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.version = [0] * self.layout.threads

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return 8 * (spec.max_tx_writes * (HDR_WORDS + 1) + spec.max_tx_words + 2 * (HDR_WORDS + 1))

    def _load(self) -> None:
        super()._load()
        self.version = [self.m.peek(d + 8 * H_STATE) >> 8 for d in self.layout.desc]

    def _tag(self, tx: Tx) -> int:
        assert isinstance(tx, UndoTx)
        return tx.version

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return UndoTx(self, cpu, txid)

    # -- normal operation ----------------------------------------------------------------------
    def _begin(self, tx: Tx) -> None:
        assert isinstance(tx, UndoTx)
        t = tx.tid
        self.version[t] += 1
        tx.version = self.version[t]
        tx.tail = self.layout.log[t]
        cpu, hdr = tx.cpu, self.layout.desc[t]
        # V lives in the state word and tags the allocation-log count, so no persisted mix of
        # these atoms pairs a new state with an old V or an old count with a new V
        cpu.store(hdr + 8 * H_NALLOC, tx.version << COUNT_BITS)
        cpu.store(hdr + 8 * H_TAIL, tx.tail)
        cpu.store(hdr + 8 * H_STATE, tx.version << 8 | RUNNING)
        cpu.clwb(hdr)

    def _append(self, tx: UndoTx, words: list[int], commit_point: bool = False) -> None:
        """Store a record at the tail, checksum last, flush it, PB, then move the tail."""
        cpu = tx.cpu
        rec = tx.tail
        end = rec + 8 * (len(words) + 1)
        if end > self.layout.log[tx.tid] + self.layout.log_bytes:
            from ..errors import ConfigError

            raise ConfigError(f"transaction {tx.txid:#x} overflowed its undo log "
                              f"({self.layout.log_bytes} bytes): raise PMSpec.max_tx_writes/words")
        st = cpu.store
        muts = self.mutations
        use_ck = not (self.two_pb or "U2" in muts or "U3" in muts)
        point_in_record = commit_point and "U2" in muts  # no checksum: the last word commits
        for i, w in enumerate(words):
            if point_in_record and i == len(words) - 1:
                cpu.mark(Mark.TX_COMMIT, tx.txid)
            st(rec + 8 * i, w)
        if use_ck:
            cpu.work(self.costs.checksum_ns_per_byte * 8 * len(words))
            if commit_point:
                cpu.mark(Mark.TX_COMMIT, tx.txid)
            st(rec + 8 * len(words), checksum(words))
        for line in lines_of(rec, end - rec):
            cpu.clwb(line)
        hdr = self.layout.desc[tx.tid]
        if "U3" in muts:  # the tail shares the record's PB
            if commit_point:
                cpu.mark(Mark.TX_COMMIT, tx.txid)
            st(hdr + 8 * H_TAIL, end)
            cpu.clwb(hdr)
            cpu.persist_barrier()
        elif self.two_pb:
            cpu.persist_barrier()
            if commit_point:
                cpu.mark(Mark.TX_COMMIT, tx.txid)
            st(hdr + 8 * H_TAIL, end)
            cpu.clwb(hdr)
            cpu.persist_barrier()
        else:
            if not ("U1" in muts and not commit_point) and not ("U6" in muts and commit_point):
                cpu.persist_barrier()
            st(hdr + 8 * H_TAIL, end)
            cpu.clwb(hdr)
        tx.tail = end

    def _write(self, tx: UndoTx, obj: int, addr: int, values: Sequence[int]) -> None:
        cpu = tx.cpu
        cpu.work(self.costs.call_ns)
        n = len(values)
        st = cpu.store
        if obj in tx.fresh:
            for i, v in enumerate(values):
                st(addr + 8 * i, v)
            tx.dirty.update(lines_of(addr, 8 * n))
            return
        ld = cpu.load
        old = [ld(addr + 8 * i) for i in range(n)]
        self._append(tx, [SENTINEL, tx.version, addr, (DATA << 56) | n, *old])
        for i, v in enumerate(values):
            st(addr + 8 * i, v)
        for line in lines_of(addr, 8 * n):
            cpu.clwb(line)
        tx.records.append((addr, old))
        tx.writes += 1

    def _commit(self, tx: Tx) -> None:
        assert isinstance(tx, UndoTx)
        cpu = tx.cpu
        if not tx.modified:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            return
        for line in tx.dirty:
            cpu.clwb(line)
        self._flush_alog(tx)
        if not self.two_pb:  # (i); the 2-PB append's first PB doubles as (i)
            if "U5" not in self.mutations:
                cpu.persist_barrier()
        self._append(tx, [SENTINEL, tx.version, 0, COMMIT << 56], commit_point=True)  # (ii)
        hdr = self.layout.desc[tx.tid]
        if tx.alog:
            if not self.eager_alloc:  # eager: the bits are durable already
                self._apply_alog(cpu, tx.alog)  # (iii)
                if "U7" not in self.mutations:
                    cpu.persist_barrier()
            # (iv): the next transaction's records may overwrite COMMIT before its header
            # persists; IDLE keeps recovery from reverting (eager) or replaying stale entries
            cpu.store(hdr + 8 * H_STATE, tx.version << 8 | IDLE)
            cpu.clwb(hdr)
            cpu.persist_barrier()
        self._release_frees(tx)

    def _abort(self, tx: Tx) -> None:
        assert isinstance(tx, UndoTx)
        cpu = tx.cpu
        lines: dict[int, None] = {}
        st = cpu.store
        for addr, old in reversed(tx.records):
            for i, v in enumerate(old):
                st(addr + 8 * i, v)
            lines.update(dict.fromkeys(lines_of(addr, 8 * len(old))))
        if tx.records:
            cpu.work(self.costs.copy_ns_per_byte * 8 * sum(len(o) for _, o in tx.records))
            for line in lines:
                cpu.clwb(line)
            cpu.persist_barrier()
        self._return_allocs(tx)
        hdr = self.layout.desc[tx.tid]
        cpu.store(hdr + 8 * H_STATE, tx.version << 8 | IDLE)
        cpu.clwb(hdr)
        if tx.records:
            cpu.persist_barrier()

    # -- recovery ------------------------------------------------------------------------------
    def scan(self, tid: int) -> tuple[list[tuple[int, list[int]]], bool]:
        """The records recovery accepts for a descriptor, and whether a COMMIT was found."""
        m = self.m
        hdr, head = self.layout.desc[tid], self.layout.log[tid]
        end = head + self.layout.log_bytes
        v = m.peek(hdr + 8 * H_STATE) >> 8
        trust_tail = self.two_pb or "U3" in self.mutations
        tail = m.peek(hdr + 8 * H_TAIL) if trust_tail else end
        tail = min(max(tail, head), end)
        check_v = "U4" not in self.mutations
        check_ck = not (trust_tail or "U2" in self.mutations)
        verify_hdr = "U3" not in self.mutations  # U3's recovery trusts everything before the tail
        recs: list[tuple[int, list[int]]] = []
        base = (head - m.pm.base) >> 3
        log = m.engine.mem.pm[base: base + ((end - head) >> 3)].tolist()  # one read of the log
        pos = head
        while pos + 8 * (HDR_WORDS + 1) <= tail:
            w0 = (pos - head) >> 3
            sent, ver, addr, tl = log[w0: w0 + HDR_WORDS]
            kind, n = tl >> 56, tl & ((1 << 56) - 1)
            if verify_hdr and (sent != SENTINEL or (check_v and ver != v)
                               or kind not in (DATA, COMMIT)):
                break
            if kind == COMMIT:
                n = 0
            rend = pos + 8 * (HDR_WORDS + n + 1)
            if rend > tail or n > self.layout.log_bytes // 8:
                break
            words = log[w0: w0 + HDR_WORDS + n]
            if check_ck and log[((rend - head) >> 3) - 1] != checksum(words):
                break
            if kind == COMMIT:
                return recs, True
            if self._addr_ok(addr, n):
                recs.append((addr, words[HDR_WORDS:]))
            pos = rend
        return recs, False

    def _addr_ok(self, addr: int, n: int) -> bool:
        return addr % 8 == 0 and self.layout.is_data(addr, 8 * n)

    def recover(self, cpu: Any) -> None:
        """Roll back uncommitted descriptors, finish committed ones, reset every header."""
        self._check_header()
        cpu.mark(Mark.RECOVERY_BEGIN, 0)
        lay = self.layout
        acted = False
        for t, hdr in enumerate(lay.desc):
            word = self.m.peek(hdr + 8 * H_STATE)
            if word & 0xFF == IDLE:
                continue
            recs, committed = self.scan(t)
            alog = self._read_alog(t, word >> 8)
            if committed:
                self._apply_alog(cpu, alog)
                acted = acted or bool(alog)
            else:
                lines: dict[int, None] = {}
                for addr, old in reversed(recs):
                    for i, v in enumerate(old):
                        cpu.store(addr + 8 * i, v)
                    lines.update(dict.fromkeys(lines_of(addr, 8 * len(old))))
                for line in lines:
                    cpu.clwb(line)
                if self.eager_alloc:
                    self._revert_alog(cpu, alog)
                acted = acted or bool(recs) or (self.eager_alloc and bool(alog))
        if acted:
            cpu.persist_barrier()
        for t, hdr in enumerate(lay.desc):
            v = (self.m.peek(hdr + 8 * H_STATE) >> 8) + 2
            cpu.store(hdr + 8 * H_TAIL, lay.log[t])
            cpu.store(hdr + 8 * H_NALLOC, v << COUNT_BITS)
            cpu.store(hdr + 8 * H_STATE, v << 8 | IDLE)
            cpu.clwb(hdr)
        cpu.persist_barrier()
        cpu.mark(Mark.RECOVERY_END, 0)
        self._load()

    def crash_irrelevant(self) -> list[int]:
        """The tail pointers: recovery finds the end of the log by verifying records (not so
        for the 2-PB variant and U2/U3, which trust the tail or skip the checksum)."""
        if self.two_pb or self.mutations & {"U2", "U3"}:
            return []
        return [d + 8 * H_TAIL for d in self.layout.desc]

    def _check_logs(self) -> list[str]:
        errs = []
        for t, hdr in enumerate(self.layout.desc):
            if self.m.peek(hdr + 8 * H_TAIL) != self.layout.log[t]:
                errs.append(f"descriptor {t}: undo log tail not reset")
        return errs


UNDO_2PB = variant(UndoRuntime, "undo-2pb", two_pb=True)
UNDO_EAGER = variant(UndoRuntime, "undo-eager", eager_alloc=True)

ALLOCS = "a transaction that allocates or frees"
register_mutant(UndoRuntime, "U1", "drop the per-record PB: an in-place write may persist before "
                "its undo record (torn transaction)", PB_DOMAINS)
register_mutant(UndoRuntime, "U2", "drop the checksum: a half-persisted record is accepted and "
                "garbage is restored")
register_mutant(UndoRuntime, "U3", "no checksum, tail persisted by the record's PB, recovery "
                "trusts records before the tail: garbage restored", PB_DOMAINS)
register_mutant(UndoRuntime, "U4", "drop the version check: a previous transaction's records "
                "are taken as the current one's")
register_mutant(UndoRuntime, "U5", "drop commit PB (i): COMMIT may persist before in-place "
                "writes (committed writes lost)", PB_DOMAINS)
register_mutant(UndoRuntime, "U6", "drop commit PB (ii): commit returns before COMMIT is durable "
                "(durability violation)", PB_DOMAINS)
register_mutant(UndoRuntime, "U7", "drop PB (iii): IDLE may persist before the bit flips "
                "(allocated blocks free, frees leak)", PB_DOMAINS, needs=ALLOCS)
register_alloc_mutants(UndoRuntime)
