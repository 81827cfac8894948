"""The software side every hardware undo-logging runtime shares (Proteus, ATOM): ``tx-begin``,
the stores the hardware logs, ``clwb`` of every modified line + ``sfence`` + ``tx-end`` at
commit, allocation bits logged at tx-end, aborts that store the logged old values back, and the
format/restart hooks of the hardware unit. A subclass supplies its unit (``_make_unit``), how a
store is logged (``_log_stores``), its recovery and its edges; its step and check names carry
its ``name`` family as prefix (``proteus.end.flush``, ``atom.recover.whole-entry``).

Locks serialise transactions (the workloads' per-structure locks). The papers assume allocation
failure-safe; here a block's bitmap bit changes as a logged store at tx-end, under one allocator
lock when several threads run (bitmap words of different structures share blocks). Objects and
static elements are padded to ``pad`` bytes so that data under different locks never share a
logged block. The memory controller's queues must be in the persistence domain: PDOM-0 is
refused (``supported_domains``, enforced by :meth:`~pmsim.runtimes.base.Runtime.check_domain` for every
runtime).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, ClassVar

import simpy

from ...errors import ConfigError
from ...hw.proteus.proteus import EntryFormat, LogOverflow, decode_log
from ...trace import Mark
from ..alloclog import ALLOC_STEPS, FreeListAlloc
from ..base import Runtime, Tx
from ..layout import PMSpec


class HwUndoTx(Tx):
    """A transaction whose stores the hardware logs: plain loads, logged stores."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.bits: list[tuple[int, bool]] = []  # bitmap changes applied at tx-end
        self.stores = 0  # logged stores, for context switches

    def pause(self) -> Any:
        """Let other threads run once this one is ``pause_ns`` ahead: cores run in parallel,
        and transactions under different locks overlap (their logs share the controller)."""
        return self.cpu.maybe_yield(self.rt.pause_ns)  # type: ignore[attr-defined]

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        a = obj + 8 * field
        return self.cpu.load_words(a, n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.rt._write(self, obj + 8 * field, values)  # type: ignore[attr-defined]
        self.writes += 1


def _round(n: int, to: int) -> int:
    return -(-n // to) * to


class HwUndoRuntime(FreeListAlloc, Runtime):
    """Base of the hardware undo-logging runtimes (not registered itself)."""

    unit_format: ClassVar[EntryFormat]
    pad: ClassVar[int] = 64
    """Bytes objects and static elements are padded to (the hardware's logging granularity)."""
    log_slots = 0
    """Entries in each thread's circular log (0: room for two of the largest transactions)."""
    supported_domains = ("pdom1", "pdom2")
    domain_reason: ClassVar[str] = "the memory controller's queues in the persistence domain"
    domain_alternatives: ClassVar[tuple[str, ...]] = ("pmem-pcommit",)
    """The software baseline for a volatile WPQ (the family's ``-pcommit`` switch, where there
    is one, is suggested too)."""
    pause_ns = 50.0
    """Scheduling quantum at a body's pause points (ns)."""
    OMIT_STEPS = frozenset(ALLOC_STEPS)

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        super().__init__(machine, layout, costs)
        self.unit = self._make_unit(machine, layout, self._slots(layout.spec))
        self._alloc_lock = simpy.Resource(machine.env, 1) if layout.threads > 1 else None

    def _make_unit(self, machine: Any, layout: Any, slots: int) -> Any:
        raise NotImplementedError

    # -- layout ------------------------------------------------------------------------------
    @classmethod
    def obj_bytes(cls, words: int) -> int:
        return _round(8 * words, cls.pad)

    @classmethod
    def static_stride(cls, words: int) -> int:
        return _round(8 * words, cls.pad)

    @classmethod
    def _slots(cls, spec: PMSpec) -> int:
        if cls.log_slots:
            return cls.log_slots
        per_tx = spec.max_tx_words + spec.max_tx_writes + 2 * spec.max_tx_allocs + 2
        return 2 * per_tx + 2

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return cls._slots(spec) * cls.unit_format.nbytes

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return HwUndoTx(self, cpu, txid)

    # -- transactions --------------------------------------------------------------------------
    def _begin(self, tx: Tx) -> None:
        tx.cpu.work(self.costs.call_ns)
        self.unit.tx_begin(tx.cpu)

    def _write(self, tx: Tx, addr: int, values: Sequence[int]) -> None:
        try:
            self._log_stores(tx, addr, values)
        except LogOverflow as e:
            raise ConfigError(f"{e}: raise PMSpec.max_tx_words or the runtime's log_slots") from None

    def _log_stores(self, tx: Tx, addr: int, values: Sequence[int]) -> None:
        """Store ``values`` from ``addr`` on, each logged as the hardware does."""
        raise NotImplementedError

    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        """Recorded now, stored (logged) at tx-end under the allocator lock."""
        tx.bits.append((block, allocated))  # type: ignore[attr-defined]

    def _apply_bits(self, tx: HwUndoTx) -> None:
        for block, allocated in tx.bits:
            word, mask = self.heap.bit_of(block)
            old = tx.cpu.load(word)
            self._write(tx, word, [old | mask if allocated else old & ~mask])

    def _tx_end(self, tx: Tx) -> None:
        cpu = tx.cpu
        f = self.family
        self.unit.tx_end(cpu, lambda lines: self.flush(cpu, f"{f}.end.flush", lines),
                         lambda: self.fence(cpu, f"{f}.end.fence"))

    def commit(self, tx: Tx) -> Generator[Any, Any, None]:
        """Apply the bitmap changes, tx-end (the commit point at the MC), then unlock."""
        self._check_live(tx)
        assert isinstance(tx, HwUndoTx)
        req = None
        if tx.bits and self._alloc_lock is not None:
            req = yield from tx.cpu.acquire(self._alloc_lock)
        self._apply_bits(tx)
        tx.cpu.mark(Mark.TX_COMMIT, tx.txid)
        self._tx_end(tx)
        self.end_steps(tx.tid)
        self.commits += 1
        self.commit_order.append(tx.txid)
        tx.cpu.mark(Mark.TX_DURABLE, tx.txid)
        if req is not None:
            yield from tx.cpu.release(self._alloc_lock, req)
        self._release_frees(tx)
        yield from self._finish(tx)

    def _abort(self, tx: Tx) -> None:
        """Store the logged old values back, then end the transaction (END commits nothing)."""
        self.unit.abort_restore(tx.cpu)
        self._tx_end(tx)
        self._return_allocs(tx)

    # -- format and recovery ---------------------------------------------------------------------
    def format(self, cpu: Any = None) -> None:
        super().format(cpu)
        self.unit.load()

    def _load(self) -> None:
        super()._load()
        self.unit.load()

    def _entries(self, tid: int) -> list[Any]:
        """The whole entries of thread ``tid``'s log (untimed, for recovery)."""
        lay = self.layout
        words = self.m.pm_words(lay.log[tid], lay.log_bytes // 8).tolist()
        return decode_log(words, self.unit_format, self.check(f"{self.family}.recover.whole-entry"))


__all__ = ["HwUndoRuntime", "HwUndoTx"]
