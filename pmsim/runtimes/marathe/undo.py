"""Undo logging (card §3.1, §4.1): one persist barrier per log append, checksummed records.

Record: ``[sentinel][V][addr][type << 56 | words][old words ...][checksum]``; the checksum
(:meth:`UndoRuntime.checksum`, FNV-1a over the record's words) is stored last. The tail pointer
in the descriptor header is stored after each record's PB without a PB of its own, so it lags
at most one record; recovery does not trust it and accepts records from the head while
sentinel, version and checksum verify.

PBs: committed W + 2 (+2 when the transaction allocated or freed), read-only 0. ``undo-2pb``
is the two-PB-per-append variant (no checksum, recovery trusts the tail): 2W + 2 (+2).
``undo-eager`` (eager allocator baseline): W + 2 + one per alloc/free call + 1 for IDLE.

Deviations from the card, both [A]: abort persists IDLE with a second PB, because with one PB a
crash after another thread committed a newer value to a rolled-back address would let recovery
roll it back again; recovery persists V + 2 in every descriptor, so records of a transaction
whose header never persisted cannot pass as a later transaction's. V is kept in the state word
and tags the allocation-log count (:mod:`pmsim.runtimes.descriptor`), so the header stays consistent even
when the atoms of its line persist independently (px86 order).

The persistence protocol is written as the named steps of ``UndoRuntime.STEPS``; the card's
mutants (U1-U7, A1, A2, and U8, found by crash depth 2) are data over those names, at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ...cache import native
from ...errors import ConfigError
from ...trace import Mark
from ..alloclog import EAGER_STEPS
from ..allocmutants import register_alloc_mutants
from ..base import (
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
)
from ..labels import Label, Labeller, register_labels, walk_records
from ..layout import PMSpec
from ..mutation import Mutant, drop, patch, skip_check
from ..registry import register_mutant, register_runtime, variant

SENTINEL = 0x5EC0DE_0F_11F0_1065
DATA, COMMIT = 1, 2
HDR_WORDS = 4  # sentinel, V, addr, type|len
_NO_RECORDS = 1 << 62
"""``first_words`` when no committed record of a RUNNING descriptor is in the log: the header
persisted IDLE (or recovery reset it), so the head may be overwritten freely."""
LEN_MASK = (1 << 56) - 1
MASK64 = (1 << 64) - 1


def checksum_py(words: Sequence[int]) -> int:
    """64-bit FNV-1a over 8-byte words (the reference of the C core's ``pm_fnv1a_words``)."""
    h = 0xCBF29CE484222325
    for w in words:
        h = ((h ^ w) * 0x100000001B3) & MASK64
    return h


def _checksum_c(words: Sequence[int]) -> int:
    """:func:`checksum_py` in one C call; anything the call cannot take (a word that is not an
    int in 0..2**64-1) goes the Python way, for the same result or error."""
    try:
        return int(_fnv(words if words.__class__ is list else list(words), len(words)))
    except (OverflowError, TypeError):
        return checksum_py(words)


_fnv = native.lib.pm_fnv1a_words if native.lib is not None else None
checksum = _checksum_c if _fnv is not None else checksum_py
"""64-bit FNV-1a over 8-byte words: the undo log's record checksum (the C core's when built)."""


_MEMO: dict[tuple[Any, tuple[int, ...]], int] = {}
"""(checksum method, record words) -> checksum: recovery verifies the same records in many
crash images. Keyed by the method, so a mutant's replacement is memoised apart."""
_MEMO_MAX = 1 << 14
_APPEND_STEPS = ("undo.append.record", "undo.append.checksum", "undo.append.flush",
                 "undo.append.tail")
_COMMIT_STEPS = ("undo.commit.record", "undo.commit.checksum", "undo.commit.flush",
                 "undo.commit.tail")
"""The steps of appending a data record and the COMMIT record (record, checksum, flush, tail)."""


class UndoTx(Tx):
    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.records: list[tuple[int, list[int]]] = []
        self.tail = 0
        self.version = 0

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        cpu.work(self.rt.costs.call_ns)
        a = obj + 8 * field
        return cpu.load_words(a, n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.rt._write(self, obj, obj + 8 * field, values)  # type: ignore[attr-defined]


@register_runtime
class UndoRuntime(Runtime):
    """Undo logging with in-place writes; reads are plain loads."""

    name = "undo"
    family = "undo"
    two_pb: ClassVar[bool] = False

    STEPS = {
        "undo.begin.header": ("group", "reset the allocation-log count, tail and state (RUNNING, "
                              "new V); flush the header"),
        "undo.append.order-header": ("order", "the transaction's first record is longer than "
                                     "the previous one's: its header persistent before the "
                                     "record may overwrite the previous COMMIT"),
        "undo.append.record": ("group", "store a data record's header and old values at the tail"),
        "undo.append.checksum": ("store", "store the record's checksum, last"),
        "undo.append.flush": ("flush", "flush the record's lines"),
        "undo.append.pb": ("pb", "the record is persistent before the in-place write"),
        "undo.append.tail": ("group", "move the tail past the record; flush the header"),
        "undo.write.in-place": ("group", "write the new values in place"),
        "undo.write.flush": ("flush", "flush the written lines"),
        "undo.commit.flush-fresh": ("flush", "flush fields written in objects this tx allocated"),
        "undo.commit.pb1": ("pb", "(i) in-place writes persistent before COMMIT (undo-2pb: "
                            "the COMMIT record's first PB)"),
        "undo.commit.record": ("group", "store the COMMIT record's header"),
        "undo.commit.checksum": ("store", "store the COMMIT record's checksum: the commit point"),
        "undo.commit.flush": ("flush", "flush the COMMIT record"),
        "undo.commit.pb2": ("pb", "(ii) COMMIT persistent before the bit flips and the return"),
        "undo.commit.tail": ("group", "move the tail past COMMIT (undo-2pb: the commit point)"),
        "undo.commit.pb3": ("pb", "(iii) bit flips persistent before IDLE"),
        "undo.commit.store-idle": ("group", "store IDLE; flush the header"),
        "undo.commit.pb4": ("pb", "(iv) IDLE persistent before the next transaction's records"),
        "undo.abort.rollback": ("group", "restore the old values, newest first"),
        "undo.abort.flush": ("flush", "flush the restored lines"),
        "undo.abort.pb1": ("pb", "restored values persistent before IDLE"),
        "undo.abort.store-idle": ("group", "store IDLE; flush the header"),
        "undo.abort.pb2": ("pb", "IDLE persistent before the thread's next transaction"),
        "undo.recover.rollback": ("group", "roll back an uncommitted descriptor; flush"),
        "undo.recover.pb1": ("pb", "rollbacks and bit flips persistent before the reset"),
        "undo.recover.reset": ("group", "reset every header (IDLE, V + 2, empty log)"),
        "undo.recover.pb2": ("pb", "the reset is persistent before recovery returns"),
    }
    CHECKS = {
        "undo.recover.skip-idle": "an IDLE descriptor is skipped (its log is stale)",
        "undo.recover.record-header": "a record's sentinel and type must be valid",
        "undo.recover.version": "a record's version must be the descriptor's V",
        "undo.recover.checksum": "a record's checksum must match its words",
    }

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.version = [0] * self.layout.threads
        self.first_words = [_NO_RECORDS] * self.layout.threads

    def checksum(self, words: Sequence[int]) -> int:
        """A record's checksum, stored after its words and verified by recovery: 64-bit FNV-1a
        (:func:`checksum`). A mutant may replace it (``patch("checksum", ...)``); it must be a
        function of ``words`` alone, since recovery memoises it across crash images."""
        return checksum(words)

    def _verified_checksum(self, words: tuple[int, ...]) -> int:
        """:meth:`checksum` as recovery computes it, memoised per method."""
        fn = type(self).checksum
        key = (fn, words)
        v = _MEMO.get(key)
        if v is None:
            if len(_MEMO) >= _MEMO_MAX:
                _MEMO.clear()
            v = _MEMO[key] = fn(self, words)
        return v

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return 8 * (spec.max_tx_writes * (HDR_WORDS + 1) + spec.max_tx_words + 2 * (HDR_WORDS + 1))

    def _load(self) -> None:
        super()._load()
        self.version = [self.m.peek(d + 8 * H_STATE) >> 8 for d in self.layout.desc]
        self.first_words = [_NO_RECORDS] * self.layout.threads

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
        hdr = self.layout.desc[t]
        # V lives in the state word and tags the allocation-log count, so no persisted mix of
        # these atoms pairs a new state with an old V or an old count with a new V
        with self.step(tx.cpu, "undo.begin.header") as c:
            c.store(hdr + 8 * H_NALLOC, tx.version << COUNT_BITS)
            c.store(hdr + 8 * H_TAIL, tx.tail)
            c.store(hdr + 8 * H_STATE, tx.version << 8 | RUNNING)
            c.clwb(hdr)

    def _append(self, tx: UndoTx, words: list[int], phase: str) -> None:
        """Store a record at the tail, checksum last, flush it, PB, then move the tail.

        ``phase`` is ``append`` for data records, ``commit`` for the COMMIT record, whose
        checksum store is the commit point (in undo-2pb: the tail store after its first PB)."""
        cpu = tx.cpu
        rec = tx.tail
        commit = phase == "commit"
        end = rec + 8 * (len(words) + (0 if self.two_pb else 1))
        if end > self.layout.log[tx.tid] + self.layout.log_bytes:
            raise ConfigError(f"transaction {tx.txid:#x} overflowed its undo log "
                              f"({self.layout.log_bytes} bytes): raise PMSpec.max_tx_writes/words")
        if rec == self.layout.log[tx.tid]:
            # The first record overwrites the log's head while the new header (V + 1) may not
            # be persistent yet. Within the previous transaction's first record that only
            # breaks it (recovery then accepts none of V's records); past its end it could
            # leave V's first records intact and its COMMIT broken, and recovery would roll
            # back a committed transaction. Then order the header first (no PB in PDOM-1/2).
            n = (end - rec) >> 3
            if n > self.first_words[tx.tid]:
                self.order(cpu, "undo.append.order-header")
            self.first_words[tx.tid] = n
        names = _COMMIT_STEPS if commit else _APPEND_STEPS
        with self.step(cpu, names[0]) as c:
            c.store_words(rec, words)
        if not self.two_pb:
            if commit:
                cpu.mark(Mark.TX_COMMIT, tx.txid)
            with self.step(cpu, names[1]) as c:
                c.work(self.costs.checksum_ns_per_byte * 8 * len(words))
                c.store(rec + 8 * len(words), self.checksum(words))
        self.flush(cpu, names[2], lines_of(rec, end - rec))
        hdr = self.layout.desc[tx.tid]
        if self.two_pb:
            self.pb(cpu, "undo.commit.pb1" if commit else "undo.append.pb")
            if commit:
                cpu.mark(Mark.TX_COMMIT, tx.txid)
        else:
            self.pb(cpu, "undo.commit.pb2" if commit else "undo.append.pb")
        with self.step(cpu, names[3]) as c:
            c.store(hdr + 8 * H_TAIL, end)
            c.clwb(hdr)
        if self.two_pb:
            self.pb(cpu, "undo.commit.pb2" if commit else "undo.append.pb-tail")
        tx.tail = end

    def _write(self, tx: UndoTx, obj: int, addr: int, values: Sequence[int]) -> None:
        cpu = tx.cpu
        cpu.work(self.costs.call_ns)
        n = len(values)
        if obj in tx.fresh:
            cpu.store_words(addr, values)
            tx.dirty.update(lines_of(addr, 8 * n))
            return
        old = cpu.load_words(addr, n)
        self._append(tx, [SENTINEL, tx.version, addr, (DATA << 56) | n, *old], "append")
        with self.step(cpu, "undo.write.in-place") as c:
            c.store_words(addr, values)
        self.flush(cpu, "undo.write.flush", lines_of(addr, 8 * n))
        tx.records.append((addr, old))
        tx.writes += 1

    def _commit(self, tx: Tx) -> None:
        assert isinstance(tx, UndoTx)
        cpu = tx.cpu
        if not tx.modified:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            return
        self.flush(cpu, "undo.commit.flush-fresh", tx.dirty)
        self._flush_alog(tx)
        if not self.two_pb:  # (i); the 2-PB append's first PB doubles as (i)
            self.pb(cpu, "undo.commit.pb1")
        self._append(tx, [SENTINEL, tx.version, 0, COMMIT << 56], "commit")  # (ii)
        hdr = self.layout.desc[tx.tid]
        if tx.alog:
            if not self.eager_alloc:  # eager: the bits are durable already
                self._apply_alog(cpu, tx.alog)  # (iii)
                self.pb(cpu, "undo.commit.pb3")
            # (iv): the next transaction's records may overwrite COMMIT before its header
            # persists; IDLE keeps recovery from reverting (eager) or replaying stale entries
            with self.step(cpu, "undo.commit.store-idle") as c:
                c.store(hdr + 8 * H_STATE, tx.version << 8 | IDLE)
                c.clwb(hdr)
            self.pb(cpu, "undo.commit.pb4")
            self.first_words[tx.tid] = _NO_RECORDS
        self._release_frees(tx)

    def _abort(self, tx: Tx) -> None:
        assert isinstance(tx, UndoTx)
        cpu = tx.cpu
        lines: dict[int, None] = {}
        with self.step(cpu, "undo.abort.rollback") as c:
            st = c.store
            for addr, old in reversed(tx.records):
                for i, v in enumerate(old):
                    st(addr + 8 * i, v)
                lines.update(dict.fromkeys(lines_of(addr, 8 * len(old))))
            if tx.records:
                c.work(self.costs.copy_ns_per_byte * 8 * sum(len(o) for _, o in tx.records))
        if tx.records:
            self.flush(cpu, "undo.abort.flush", lines)
            self.pb(cpu, "undo.abort.pb1")
        self._return_allocs(tx)
        hdr = self.layout.desc[tx.tid]
        with self.step(cpu, "undo.abort.store-idle") as c:
            c.store(hdr + 8 * H_STATE, tx.version << 8 | IDLE)
            c.clwb(hdr)
        if tx.records:
            self.pb(cpu, "undo.abort.pb2")
            self.first_words[tx.tid] = _NO_RECORDS

    # -- recovery ------------------------------------------------------------------------------
    def scan(self, tid: int) -> tuple[list[tuple[int, list[int]]], bool]:
        """The records recovery accepts for a descriptor, and whether a COMMIT was found."""
        m, lay = self.m, self.layout
        hdr, head = lay.desc[tid], lay.log[tid]
        nwords = lay.log_bytes >> 3
        v = m.peek(hdr + 8 * H_STATE) >> 8
        ck = 0 if self.two_pb else 1
        if self.two_pb:  # undo-2pb persists the tail; no checksum verifies the end
            lim = (min(max(m.peek(hdr + 8 * H_TAIL), head), head + lay.log_bytes) - head) >> 3
        else:
            lim = nwords
        check_hdr = self.check("undo.recover.record-header")
        check_v = check_hdr and self.check("undo.recover.version")
        check_ck = ck and self.check("undo.recover.checksum")
        is_data = lay.is_data
        verified = self._verified_checksum
        recs: list[tuple[int, list[int]]] = []
        base = (head - m.pm.base) >> 3
        m.note_reads(range(base, base + nwords))
        log = m.engine.mem.pm[base: base + nwords].tolist()  # one read of the log
        w = 0  # the record's first word, counted from the head
        while w + HDR_WORDS + ck <= lim:
            sent, ver, addr, tl = log[w: w + HDR_WORDS]
            kind = tl >> 56
            if check_hdr and (sent != SENTINEL or (kind != DATA and kind != COMMIT)):
                break
            if check_v and ver != v:
                break
            n = 0 if kind == COMMIT else tl & LEN_MASK
            wend = w + HDR_WORDS + n + ck
            if wend > lim or n > nwords:
                break
            if check_ck and log[wend - 1] != verified(tuple(log[w: w + HDR_WORDS + n])):
                break
            if kind == COMMIT:
                return recs, True
            if not addr & 7 and is_data(addr, 8 * n):
                recs.append((addr, log[w + HDR_WORDS: w + HDR_WORDS + n]))
            w = wend
        return recs, False

    def _recover(self, cpu: Any) -> None:
        """Roll back uncommitted descriptors, finish committed ones, reset every header."""
        lay = self.layout
        acted = False
        skip_idle = self.check("undo.recover.skip-idle")
        for t, hdr in enumerate(lay.desc):
            word = self.m.peek(hdr + 8 * H_STATE)
            if skip_idle and word & 0xFF == IDLE:
                continue
            recs, committed = self.scan(t)
            if committed:
                alog = self._read_alog(t, word >> 8)
                self._apply_alog(cpu, alog, "alloc.recover-apply")
                acted = acted or bool(alog)
                continue
            if recs:
                with self.step(cpu, "undo.recover.rollback") as c:
                    st = c.store
                    lines: dict[int, None] = {}
                    for addr, old in reversed(recs):
                        for i, v in enumerate(old):
                            st(addr + 8 * i, v)
                        for line in lines_of(addr, 8 * len(old)):
                            lines[line] = None
                    fl = c.clwb
                    for line in lines:
                        fl(line)
                acted = True
            if self.eager_alloc:
                alog = self._read_alog(t, word >> 8)
                if alog:
                    self._revert_alog(cpu, alog)
                    acted = True
        if acted:
            self.pb(cpu, "undo.recover.pb1")
        with self.step(cpu, "undo.recover.reset") as c:
            for t, hdr in enumerate(lay.desc):
                v = (self.m.peek(hdr + 8 * H_STATE) >> 8) + 2
                c.store(hdr + 8 * H_TAIL, lay.log[t])
                c.store(hdr + 8 * H_NALLOC, v << COUNT_BITS)
                c.store(hdr + 8 * H_STATE, v << 8 | IDLE)
                c.clwb(hdr)
        self.pb(cpu, "undo.recover.pb2")

    def crash_irrelevant(self) -> list[int]:
        """The tail pointers: recovery finds the end of the log by verifying records (not so
        for the 2-PB variant, which trusts the tail)."""
        if self.two_pb:
            return []
        return [d + 8 * H_TAIL for d in self.layout.desc]

    def _check_logs(self) -> list[str]:
        errs = []
        for t, hdr in enumerate(self.layout.desc):
            if self.m.peek(hdr + 8 * H_TAIL) != self.layout.log[t]:
                errs.append(f"descriptor {t}: undo log tail not reset")
        return errs


UNDO_2PB = variant(UndoRuntime, "undo-2pb", two_pb=True, STEPS={
    "undo.append.pb-tail": ("pb", "the tail is persistent before the in-place write")},
    OMIT_STEPS=frozenset({"undo.append.checksum", "undo.commit.checksum"}))
UNDO_EAGER = variant(UndoRuntime, "undo-eager", eager_alloc=True, STEPS=EAGER_STEPS,
                     OMIT_STEPS=frozenset({"alloc.apply", "undo.commit.pb3"}))
UNDO_EADR = variant(UndoRuntime, "undo-eadr", elide_flushes=True)  # no flushes in PDOM-2


def _undo_log(lab: Labeller, tid: int, word: int) -> Label:
    ck = 0 if getattr(lab.runtime, "two_pb", False) else 1
    names = ("sentinel", "version", "address", "type/length")

    def step(addr: int, left: int) -> tuple[int, str, Callable[[int], str]] | None:
        if lab.read(addr) != SENTINEL:
            return None
        tl = lab.read(addr + 8 * 3) or 0
        kind = tl >> 56
        if kind not in (DATA, COMMIT):
            return None
        n = 0 if kind == COMMIT else tl & LEN_MASK
        size = HDR_WORDS + n + ck
        if size > left:
            return None

        def role(j: int) -> str:
            return names[j] if j < HDR_WORDS else "checksum" if j == size - 1 and ck else (
                f"old value {j - HDR_WORDS}")
        return size, "COMMIT" if kind == COMMIT else "", role

    return walk_records(lab, tid, word, "undo log", step)


register_labels("undo", log=_undo_log)

def _version_restarts(orig: Any) -> Any:
    """U8: the volatile version restarts at 0 whenever the runtime attaches to PM."""
    def _load(self: UndoRuntime) -> None:
        orig(self)
        self.version = [0] * self.layout.threads
    return _load


ALLOCS = "a transaction that allocates or frees"
for _m in (
    Mutant("undo:U1", UndoRuntime, (drop("undo.append.pb"),), PB_DOMAINS,
           "drop the per-record PB: an in-place write may persist before its undo record "
           "(torn transaction)"),
    Mutant("undo:U2", UndoRuntime, (drop("undo.append.checksum"), drop("undo.commit.checksum"),
                                     skip_check("undo.recover.checksum")), why=
           "drop the checksum: a half-persisted record is accepted and garbage is restored"),
    Mutant("undo:U3", UNDO_2PB, (drop("undo.append.pb"), skip_check("undo.recover.record-header")),
           PB_DOMAINS, "no checksum, tail persisted by the record's PB, recovery trusts records "
           "before the tail: garbage restored"),
    Mutant("undo:U4", UndoRuntime, (skip_check("undo.recover.version"),), why=
           "drop the version check: a previous transaction's records are taken as the current "
           "one's"),
    Mutant("undo:U5", UndoRuntime, (drop("undo.commit.pb1"),), PB_DOMAINS,
           "drop commit PB (i): COMMIT may persist before in-place writes (committed writes lost)"),
    Mutant("undo:U6", UndoRuntime, (drop("undo.commit.pb2"),), PB_DOMAINS,
           "drop commit PB (ii): commit returns before COMMIT is durable (durability violation)"),
    Mutant("undo:U7", UndoRuntime, (drop("undo.commit.pb3"),), PB_DOMAINS,
           "drop PB (iii): IDLE may persist before the bit flips (allocated blocks free, frees "
           "leak)", needs=ALLOCS),
    Mutant("undo:U8", UndoRuntime, (patch("_load", _version_restarts, "V restarts at 1"),),
           why="the transaction version restarts at 1 after a restart: a transaction run after "
           "recovery reuses a version that stale records further down the log still carry, and "
           "a second crash inside it makes recovery accept them and a stale COMMIT (torn)",
           needs="a crash inside a transaction run after recovery (crash depth 2)"),
):
    register_mutant(_m)
register_alloc_mutants(UndoRuntime)
