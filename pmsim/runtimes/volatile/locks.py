"""Volatile lock-based baseline: bodies run under the workload's locks, no persistence.

The "volatile lock-based" program of DUDETx's Fig. 7 (papers/dudetx-decoupled.md §8, §9 D13):
data at its home locations, no logs, flushes or fences. It takes the workload's ``locks_of``
up front (two-phase locking), or, for a workload whose body locks (``body_locks``), exactly the
locks the body takes and releases (``tx.lock``/``tx.unlock``, lock coupling: a release is
immediate). A user abort restores the words the body wrote. Markers: TX_BEGIN, then TX_COMMIT
and TX_DURABLE together at the end of the body, before the locks still held are released.
There is nothing to recover, and the crash fuzzer refuses the runtime (``durable = False``).

:class:`CouplingLocks` is the lock-coupling half, shared with lock-based DUDETx
(:mod:`pmsim.runtimes.dudetx.locks`): it takes and releases body locks at once and calls hooks a runtime
uses to track lock hand-offs.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from ...errors import ConfigError, PmsimError
from ...trace import Mark
from ..alloclog import FreeListAlloc
from ..base import Runtime, Tx
from ..registry import register_runtime


class CouplingLocks:
    """``tx.lock``/``tx.unlock`` that take and release the real lock at once (lock coupling);
    :meth:`_acquired` and :meth:`_releasing` see every hand-off."""

    lock_coupling = True

    def lock_in_body(self, tx: Tx, i: int) -> Generator[Any, Any, None]:
        table = tx.lock_table
        if not table:
            return
        lock = Runtime._table_lock(tx, i)
        if any(held is lock for held, _ in tx.locks):
            raise PmsimError(f"transaction {tx.txid:#x} takes lock {i} it already holds: a body "
                             "that locks must release a lock before taking it again")
        req = yield from tx.cpu.acquire(lock)
        tx.locks.append((lock, req))
        self._acquired(tx, lock)

    def unlock_in_body(self, tx: Tx, i: int) -> Generator[Any, Any, None]:
        table = tx.lock_table
        if not table:
            return
        lock = Runtime._table_lock(tx, i)
        for k, (held, req) in enumerate(tx.locks):
            if held is lock:
                del tx.locks[k]
                self._releasing(tx, lock)
                yield from tx.cpu.release(lock, req)
                return
        raise PmsimError(f"transaction {tx.txid:#x} releases lock {i}, which it does not hold")

    def _acquired(self, tx: Tx, lock: Any) -> None:
        """A transaction took ``lock`` (in the body or up front)."""

    def _releasing(self, tx: Tx, lock: Any) -> None:
        """A transaction is about to release ``lock``."""


class LocksTx(Tx):
    """Plain loads and stores at the data's homes; an undo list for a user abort."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.undo: list[tuple[int, int]] = []

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        """The words of one read: independent loads (their misses overlap on the out-of-order
        core), as every runtime's read is."""
        self.cpu.work(self.rt.costs.call_ns)
        return self.cpu.load_words(obj + 8 * field, n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.cpu.work(self.rt.costs.call_ns)
        a = obj + 8 * field
        st, peek = self.cpu.store, self.rt.m.peek
        for i, v in enumerate(values):
            self.undo.append((a + 8 * i, peek(a + 8 * i)))
            st(a + 8 * i, v)
        self.writes += 1


@register_runtime
class LocksRuntime(FreeListAlloc, CouplingLocks, Runtime):
    """Volatile lock-based: the body under its locks (2PL or coupling); no persistence."""

    name = "locks"
    family = "locks"
    durable = False

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return LocksTx(self, cpu, txid)

    def _begin(self, tx: Tx) -> None:
        pass

    def _commit(self, tx: Tx) -> None:
        cpu = tx.cpu
        for b in tx.allocs:
            self.heap.flip(cpu, b, True)
        for b in tx.frees:
            self.heap.flip(cpu, b, False)
            self.heap.push(b)
        cpu.mark(Mark.TX_COMMIT, tx.txid)

    def _abort(self, tx: Tx) -> None:
        assert isinstance(tx, LocksTx)
        st = tx.cpu.store
        for a, old in reversed(tx.undo):
            st(a, old)
        for b in tx.allocs:
            self.heap.push(b)

    def _recover(self, cpu: Any) -> None:
        raise ConfigError(f"runtime {self.name!r} is a volatile baseline: it keeps nothing in PM "
                          "to recover from")


__all__ = ["CouplingLocks", "LocksRuntime", "LocksTx"]
