"""Volatile-HTM, NV-HTM's non-durable reference (nv-htm.md §7): bodies run in hardware
transactions that update the data in place, with no logging and no flushes.

Every transaction goes through :class:`~pmsim.tm.htm.HtmRunner`: hardware attempts with
retries, then the single global lock. Inside a hardware attempt the hardware buffers the
stores and discards them on an abort; under the SGL the body writes memory directly and keeps
an undo record (read untimed: a modelling convenience, so that a body returning False after
writing can be undone). Allocation is volatile: ``tx.alloc`` takes a block from the
allocator's free lists and ``tx.free`` defers the free; an aborted attempt returns its blocks
and forgets its frees, a committed one frees its blocks and flips their bitmap bits after the
commit point (the bitmaps stay consistent with the data, so the allocator invariants hold).

Nothing is durable (``durable = False``): there is no recovery, and the crash fuzzer refuses
the runtime. Serialization order = commit order (the order of successful ``xend`` and SGL
releases), which is ``commit_order``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import fields
from typing import Any

from ...tm.htm import HtmRunner, check
from ...trace import Mark
from ..alloclog import ALLOC_STEPS, FreeListAlloc
from ..base import Body, Runtime, Tx
from ..registry import register_runtime


class HtmTx(Tx):
    """A transaction of the HTM runtime: plain loads and stores, checked for an abort."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.hw = False  # inside a hardware attempt (else under the SGL)
        self.undo: list[tuple[int, int]] = []  # SGL path: (address, old value), oldest first
        self._q = rt.runner.quantum  # type: ignore[attr-defined]

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        addr = obj + 8 * field
        vals = self.cpu.load_words(addr, n)
        if self.hw:
            check(self.cpu)
        return vals

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        cpu = self.cpu
        st = cpu.store_words
        addr = obj + 8 * field
        if not self.hw and obj not in self.fresh:
            peek = self.rt.m.peek
            self.undo.extend((addr + 8 * i, peek(addr + 8 * i)) for i in range(len(values)))
        st(addr, values)
        self.writes += 1
        if self.hw:
            check(cpu)

    def pause(self) -> Iterable[Any]:
        return self.cpu.maybe_yield(self._q)

    def reset(self) -> None:
        """Forget an aborted attempt: its blocks go back to the free lists."""
        for b in self.allocs:
            self.rt.heap.push(b)
        self.allocs.clear()
        self.frees.clear()
        self.fresh.clear()
        self.undo.clear()
        self.writes = 0


@register_runtime
class HtmRuntime(FreeListAlloc, Runtime):
    """Volatile-HTM: in-place updates inside hardware transactions, SGL fallback."""

    name = "htm"
    family = "htm"
    durable = False
    optimistic = True
    OMIT_STEPS = frozenset(ALLOC_STEPS)

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        super().__init__(machine, layout, costs)
        lock = machine.dram.base if machine.dram is not None else layout.log[0]
        self.runner = HtmRunner(machine, lock)

    def counters(self) -> dict[str, float]:
        """The runner's attempts, hardware commits, SGL fallbacks and aborts by cause."""
        return {f"htm.{f.name}": float(getattr(t, f.name))
                for t in (self.runner.total(),) for f in fields(t)}

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return HtmTx(self, cpu, txid)

    def _begin(self, tx: Tx) -> None:
        pass

    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Run ``body`` through the HTM runner (``locks`` are ignored: the hardware detects
        conflicts)."""
        tx = yield from self.begin(cpu)
        assert isinstance(tx, HtmTx)
        if on_begin is not None:
            on_begin(tx)

        def attempt(hw: bool) -> Any:
            tx.hw = hw
            return body(tx)

        def retry(status: int) -> None:
            tx.reset()

        yield from self.runner.run(cpu, attempt, lambda: self.commit(tx), lambda: self.abort(tx),
                                   retry)
        return tx

    # -- commit and abort --------------------------------------------------------------------------
    def _commit(self, tx: Tx) -> None:
        cpu = tx.cpu
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        for b in tx.allocs:
            self.heap.flip(cpu, b, True)
        for b in tx.frees:
            self.heap.flip(cpu, b, False)
            self.heap.push(b)

    def _abort(self, tx: Tx) -> None:
        assert isinstance(tx, HtmTx)
        st = tx.cpu.store
        for addr, old in reversed(tx.undo):
            st(addr, old)
        tx.reset()

    def _recover(self, cpu: Any) -> None:
        """Nothing to recover: the runtime keeps nothing durable."""


__all__ = ["HtmRuntime", "HtmTx"]
