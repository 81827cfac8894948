"""The transaction's allocation log (card §4.4, §5), shared by every runtime.

``pm_alloc``/``pm_free`` touch volatile free lists only and append ``addr | ALLOC/FREE`` to the
descriptor's allocation log. The log and its length are persisted by the first commit barrier
(``alloc.flush-log``); after the commit point the entries are applied to the persistent bitmaps
(``alloc.apply``), and recovery applies the log of a committed descriptor again
(``alloc.recover-apply``). Freed blocks return to the volatile lists only once the freeing
transaction's IDLE is durable.

The eager baseline (``*-eager``) persists each entry and its bit flip at call time
(``alloc.eager.*``), and reverts the flips of an aborted or uncommitted transaction. The card
gives it one PB per call and leaves the entry -> count -> flip order to fences. Fences order
persistence only while the WPQ is in the persistence domain; in PDOM-0 such a baseline leaks
blocks (a flip persisted without its log). So the two edges are ordering points
(``alloc.eager.order-entry``, ``alloc.eager.order-count``): fences in PDOM-1/2, as the card has
it, and PBs in PDOM-0, where the baseline pays three PBs per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from ..errors import ConfigError
from .alloc import ALLOC, FREE
from .descriptor import COUNT_BITS, H_NALLOC, count_of, lines_of


class LoggedTx(Protocol):
    """What the allocation log reads and records of a transaction (:class:`~.base.Tx` has it;
    a protocol, so that this mixin of :class:`~.base.Runtime` need not import the base)."""

    cpu: Any
    tid: int
    txid: int
    alog: list[int]
    allocs: list[int]
    frees: list[int]
    fresh: set[int]

ALLOC_STEPS: dict[str, tuple[str, str]] = {
    "alloc.log-entry": ("store", "append ALLOC/FREE to the allocation log (no flush yet)"),
    "alloc.flush-log": ("group", "store the log length in the header, flush the log lines and "
                        "the header (before the first commit barrier)"),
    "alloc.apply": ("group", "after the commit point: flip the logged bits in the bitmaps, flush"),
    "alloc.recover-apply": ("group", "recovery: flip the bits of a committed descriptor's log"),
}

EAGER_STEPS: dict[str, tuple[str, str]] = {
    "alloc.eager.flush-entry": ("flush", "flush the new log entry"),
    "alloc.eager.order-entry": ("order", "the entry persistent before the count"),
    "alloc.eager.count": ("group", "store the log length, flush the header"),
    "alloc.eager.order-count": ("order", "the count persistent before the flip"),
    "alloc.eager.flip": ("group", "flip the block's bit (CAS) and flush it"),
    "alloc.eager.pb": ("pb", "persist entry, count and flip before pm_alloc/pm_free returns"),
    "alloc.revert": ("group", "abort or recovery: revert the flips of an uncommitted log"),
    "alloc.eager.pb-revert": ("pb", "abort: persist the reverted flips"),
}


class AllocLog:
    """Allocation and the allocation log (mixed into :class:`~.base.Runtime`)."""

    eager_alloc: ClassVar[bool] = False
    """Eager allocator baseline (card §5): each alloc/free call persists its log entry and bit
    with 1 PB (and an ordering sfence); an abort reverts each flip with 1 PB."""

    STEPS = ALLOC_STEPS

    def _alloc(self, tx: LoggedTx, words: int) -> int:
        addr = self.heap.pop(tx.tid, self.obj_bytes(words))  # type: ignore[attr-defined]
        tx.cpu.work(self.costs.alloc_ns)  # type: ignore[attr-defined]
        self._log_alloc(tx, addr, ALLOC)
        tx.allocs.append(addr)
        tx.fresh.add(addr)
        self._init_object(tx, addr, words)
        return addr

    def _free(self, tx: LoggedTx, obj: int) -> None:
        tx.cpu.work(self.costs.alloc_ns)  # type: ignore[attr-defined]
        for block in self._blocks_to_free(tx, obj):
            self._log_alloc(tx, block, FREE)
            tx.frees.append(block)

    def _blocks_to_free(self, tx: LoggedTx, obj: int) -> list[int]:
        return [obj]

    def _init_object(self, tx: LoggedTx, obj: int, words: int) -> None:
        """Reset runtime metadata of a fresh block (redo header, COW wrapper)."""

    def _log_alloc(self, tx: LoggedTx, addr: int, kind: int) -> None:
        """Append ALLOC/FREE to the allocation log (no flush, no PB: the first commit PB
        persists it), or persist it at once in the eager baseline."""
        lay = self.layout  # type: ignore[attr-defined]
        i = len(tx.alog)
        if i >= lay.alloc_cap:
            raise ConfigError(f"transaction {tx.txid:#x} made more than {lay.alloc_cap} "
                              "alloc/free calls: raise PMSpec.max_tx_allocs")
        cpu = tx.cpu
        entry = addr | kind
        slot = lay.alloc_log[tx.tid] + 8 * i
        self.st(cpu, "alloc.log-entry", slot, entry)  # type: ignore[attr-defined]
        tx.alog.append(entry)
        if self.eager_alloc:
            # entry before count, count before the flip, each by an ordering point: a persisted
            # count never covers a stale entry, a persisted flip is always logged.
            hdr = lay.desc[tx.tid]
            self.flush(cpu, "alloc.eager.flush-entry", (slot,))  # type: ignore[attr-defined]
            self.order(cpu, "alloc.eager.order-entry")  # type: ignore[attr-defined]
            with self.step(cpu, "alloc.eager.count") as c:  # type: ignore[attr-defined]
                c.store(hdr + 8 * H_NALLOC, self._tag(tx) << COUNT_BITS | (i + 1))
                c.clwb(hdr)
            self.order(cpu, "alloc.eager.order-count")  # type: ignore[attr-defined]
            with self.step(cpu, "alloc.eager.flip") as c:  # type: ignore[attr-defined]
                c.clwb(self.heap.flip(c, addr, kind == ALLOC))  # type: ignore[attr-defined]
            self.pb(cpu, "alloc.eager.pb")  # type: ignore[attr-defined]

    def _flush_alog(self, tx: LoggedTx) -> None:
        """Store the log length in the header and flush the log lines (before commit PB 1)."""
        if not tx.alog:
            return
        lay = self.layout  # type: ignore[attr-defined]
        hdr = lay.desc[tx.tid]
        with self.step(tx.cpu, "alloc.flush-log") as c:  # type: ignore[attr-defined]
            c.store(hdr + 8 * H_NALLOC, self._tag(tx) << COUNT_BITS | len(tx.alog))
            for line in lines_of(lay.alloc_log[tx.tid], 8 * len(tx.alog)):
                c.clwb(line)
            c.clwb(hdr)

    def _apply_alog(self, cpu: Any, entries: Sequence[int], step: str = "alloc.apply") -> None:
        """Flip the bits of a committed allocation log (in order) and flush them."""
        if self.eager_alloc or not entries:
            return
        heap = self.heap  # type: ignore[attr-defined]
        with self.step(cpu, step) as c:  # type: ignore[attr-defined]
            lines: dict[int, None] = {}
            for e in entries:
                lines[heap.flip(c, e & ~1, (e & 1) == ALLOC)] = None
            for line in lines:
                c.clwb(line)

    def _revert_alog(self, cpu: Any, entries: Sequence[int]) -> None:
        """Undo the bit flips of an uncommitted log, newest first (eager baseline)."""
        heap = self.heap  # type: ignore[attr-defined]
        with self.step(cpu, "alloc.revert") as c:  # type: ignore[attr-defined]
            for e in reversed(entries):
                c.clwb(heap.flip(c, e & ~1, (e & 1) != ALLOC))

    def _release_frees(self, tx: LoggedTx) -> None:
        """After IDLE is durable: freed blocks go back to the volatile lists."""
        for b in tx.frees:
            self.heap.push(b)  # type: ignore[attr-defined]

    def _return_allocs(self, tx: LoggedTx) -> None:
        """On abort: allocated blocks go back to the volatile lists; frees are dropped."""
        for b in tx.allocs:
            self.heap.push(b)  # type: ignore[attr-defined]
        if tx.alog and self.eager_alloc:
            self._revert_alog(tx.cpu, tx.alog)
            self.pb(tx.cpu, "alloc.eager.pb-revert")  # type: ignore[attr-defined]

    def _tag(self, tx: LoggedTx) -> int:
        """The version tag of a transaction's header words (0: the runtime needs none)."""
        return 0

    def _read_alog(self, tid: int, tag: int = 0) -> list[int]:
        """The persisted allocation log of a descriptor (untimed read for recovery); empty when
        the count belongs to another transaction than ``tag``."""
        lay = self.layout  # type: ignore[attr-defined]
        m = self.m  # type: ignore[attr-defined]
        word = m.peek(lay.desc[tid] + 8 * H_NALLOC)
        if word >> COUNT_BITS != tag:
            return []
        n = min(count_of(word), lay.alloc_cap)
        base = lay.alloc_log[tid]
        entries = [m.peek(base + 8 * i) for i in range(n)]
        return [e for e in entries if self.heap.is_block(e & ~1)]  # type: ignore[attr-defined]


__all__ = ["ALLOC", "ALLOC_STEPS", "AllocLog", "EAGER_STEPS", "FREE"]


class FreeListAlloc:
    """Allocation for the TM runtimes (mixed in before :class:`~.base.Runtime`): a block comes
    from the thread's volatile free list and is recorded on the transaction, with no allocation
    log; a runtime that keeps the bitmap in its transactions' write set sets the block's bit
    inside the transaction through :meth:`_set_bit` (default: nothing, the bits are applied at
    commit)."""

    def _alloc(self, tx: LoggedTx, words: int) -> int:
        addr = self.heap.pop(tx.tid, self.obj_bytes(words))  # type: ignore[attr-defined]
        tx.cpu.work(self.costs.alloc_ns)  # type: ignore[attr-defined]
        tx.allocs.append(addr)
        tx.fresh.add(addr)
        self._set_bit(tx, addr, True)
        return addr

    def _free(self, tx: LoggedTx, obj: int) -> None:
        self.heap.owner(obj)  # type: ignore[attr-defined]  # a clear error for a non-block
        tx.cpu.work(self.costs.alloc_ns)  # type: ignore[attr-defined]
        self._set_bit(tx, obj, False)
        tx.frees.append(obj)

    def _set_bit(self, tx: LoggedTx, block: int, allocated: bool) -> None:
        """Set or clear ``block``'s bitmap bit as part of ``tx`` (default: not in the
        transaction)."""
