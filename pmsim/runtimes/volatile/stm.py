"""Volatile-STM: transactions under the TinySTM-like STM (:mod:`pmsim.tm.stm`), no persistence.

The upper bound DUDETx is measured against (papers/dudetx-decoupled.md §8, "Volatile-STM"):
data at its home locations, no logs, no flushes, no fences; concurrency control only. The STM
keeps its clock and lock table in the machine's DRAM (write-back design by default; the class
attribute ``stm_config`` selects another, e.g. in a :func:`~pmsim.runtimes.registry.variant`).

It is optimistic: :meth:`StmRuntime.run` runs a workload's body under the STM and re-executes it
after a conflict, ignoring the workload's locks; the body's ``tx.pause()`` yields once the
thread is a quantum ahead, so transactions overlap and conflict. Markers: TX_BEGIN once, when
the first attempt begins (one txid for every attempt); conflict aborts emit none; then
TX_COMMIT and TX_DURABLE together when an attempt commits, or TX_ABORT when the body returns
False. ``commit_order`` is the serialization order: update transactions by commit timestamp, a
read-only one right after the update it read last (its snapshot), which need not be where its
markers are. Allocation has no allocation log: blocks an attempt allocated return to the free
lists when it aborts; a commit flips the bitmap bits of its allocations and frees (unflushed,
so the allocator's invariants hold, as in the ``htm`` runtime) and frees its blocks. There is
nothing to recover, and the crash fuzzer refuses the runtime (``durable = False``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, ClassVar

from ...errors import ConfigError
from ...tm.stm import Stm, StmConfig, StmTx, place_serial
from ...trace import Mark
from ..alloclog import FreeListAlloc
from ..base import Body, OptimisticRuntime, Runtime, RuntimeCosts, Tx
from ..layout import Layout
from ..registry import register_runtime


class StmRuntimeTx(Tx):
    """The object API over one STM attempt: fields are words at their home addresses."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int, stx: StmTx) -> None:
        super().__init__(rt, cpu, txid)
        self.stx = stx

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        self.cpu.work(self.rt.costs.call_ns)
        return self.stx.read_range(obj + 8 * field, n)

    def read_plain(self, obj: int, field: int, n: int) -> list[int]:
        """Loads of the words' home addresses without the STM's read barriers (untracked:
        the STM neither validates nor locks them)."""
        self.cpu.work(self.rt.costs.call_ns)
        return self.cpu.load_words(obj + 8 * field, n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.cpu.work(self.rt.costs.call_ns)
        wr = self.stx.write
        home = obj + 8 * field
        for i, v in enumerate(values):
            wr(home + 8 * i, v)
        self.writes += 1

    def pause(self) -> Iterable[Any]:
        return self.cpu.maybe_yield()


@register_runtime
class StmRuntime(FreeListAlloc, OptimisticRuntime):
    """Volatile-STM: the body runs under the STM, retried on conflicts; no persistence."""

    name = "stm"
    family = "stm"
    durable = False
    stm_config: ClassVar[StmConfig] = StmConfig()

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        self.stm = Stm(machine, self.stm_config)
        self._serial: list[tuple[int, int]] = []  # serial keys of commit_order's entries

    def counters(self) -> dict[str, float]:
        """The STM's attempts, commits and aborts by cause (``stm.aborts.<cause>``)."""
        return {f"stm.{k}": float(v) for k, v in self.stm.totals().as_dict().items()}

    # -- transactions ----------------------------------------------------------------------------
    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Run ``body`` under the STM until an attempt commits (durably, for a subclass that
        persists in the STM's ``on_commit`` hook) or the body returns False."""
        start = cpu.clock
        txid = self._next_txid(cpu)
        tid = cpu.tid
        cpu.mark(Mark.TX_BEGIN, txid)
        view: list[Tx] = []

        def attempt(stx: StmTx) -> Any:
            tx = StmRuntimeTx(self, cpu, txid, stx)
            tx.start = start
            view[:] = [tx]
            self.active[tid] = tx
            if on_begin is not None:
                on_begin(tx)
            return body(tx)

        try:
            stx = yield from self.stm.atomic(cpu, attempt, lambda _: self._drop_allocs(view[0]))
        except BaseException:
            if view:
                self._drop_allocs(view[0])
                self.active[tid] = None
            raise
        tx = view[0]
        if stx.committed:
            self._committed(cpu, tx, stx)
            self.commits += 1
            place_serial(self._serial, self.commit_order, stx.serial, txid)
            cpu.mark(Mark.TX_DURABLE, txid)
        else:
            self._drop_allocs(tx)
            self.aborts += 1
            cpu.mark(Mark.TX_ABORT, txid)
        yield from self._finish(tx)
        return tx

    def _committed(self, cpu: Any, tx: Tx, stx: StmTx) -> None:
        """After an attempt committed (a durable subclass has logged and persisted it in its
        ``on_commit`` hook): apply its allocations and frees, mark TX_COMMIT if not marked."""
        flip = self.heap.flip
        for b in tx.allocs:
            flip(cpu, b, True)
        for b in tx.frees:
            flip(cpu, b, False)
            self.heap.push(b)
        cpu.mark(Mark.TX_COMMIT, tx.txid)

    # -- allocation: volatile free lists only ----------------------------------------------------
    def _drop_allocs(self, tx: Tx) -> None:
        """An attempt ended without committing: its blocks go back to the free lists."""
        for b in tx.allocs:
            self.heap.push(b)
        tx.allocs.clear()

    # -- no persistence ----------------------------------------------------------------------------
    def _recover(self, cpu: Any) -> None:
        raise ConfigError(f"runtime {self.name!r} is a volatile baseline: it keeps nothing in PM "
                          "to recover from")


class StmLoggedBitmap(StmRuntime):
    """Base of durable STM runtimes whose allocator bitmap lives in PM: a block's bit is set or
    cleared through the STM, so it is logged with the data and commits or aborts with it."""

    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        assert isinstance(tx, StmRuntimeTx)
        word, mask = self.heap.bit_of(block)
        old = tx.stx.read(word)
        tx.stx.write(word, old | mask if allocated else old & ~mask)


__all__ = ["StmLoggedBitmap", "StmRuntime", "StmRuntimeTx"]
