"""DUDETx with HTM Perform (papers/dudetx-decoupled.md §5 "HTM", paper §4.2 and §6.7).

Perform runs the body in a hardware transaction (:class:`~pmsim.tm.htm.HtmRunner`: retries,
then the single global lock) with plain loads and stores on the DRAM shadow. Each write first
appends ``(home, value)`` to the thread's vlog *inside* the region: the entry joins the write
set (so log entries add to the HTM footprint and capacity aborts grow with them) and the
hardware discards it on an abort, where the runtime also pops its own cursor.

XEND returns no ID, and a software counter read and written inside the region would conflict
on every transaction. The card's fix is a hardware tweak: the counter's line is
**conflict-exempt** (:meth:`htm_exempt`, modelled in both engines, pmsim.hw.htm): an access to
it from a live transaction is plain (applied at once, in no read or write set, never rolled
back) and aborts nobody. The ID is taken by a fetch-and-add on it as the **last action before
XEND**: the runner calls :meth:`DudeTxHtmRuntime._end_record` after the body's last yield and
issues ``xend`` right after it, so no other thread runs in between. The END slot is stored
once before the ID is taken (its line joins the write set there, so writing the ID into it
cannot overflow the set), the ID is taken only if the transaction is still live, and nothing
after it can abort: a taken ID always commits, IDs stay dense, and the ID order is the XEND
order, which is a serialization order (conflicts are eager, requester-wins: of two conflicting
transactions the one that commits later saw the other's writes or aborted). On the SGL path
the body runs non-transactionally and takes its ID under the lock, to which every hardware
attempt subscribes, so no hardware transaction commits meanwhile.

Persist, Reproduce and recovery are DUDETx's (:mod:`.dudetx`); the serialization order is the
ID order (``commit_order`` and TX_COMMIT are emitted when the ID is taken) and durability is D
passing the ID (TX_DURABLE), so crashfuzz's oracle needs nothing new.

Mutants: M12 (the ID is taken after XEND, and other threads run in between) and M11 (the vlog
appends are not transactional: an aborted attempt's entries stay in the vlog and travel with
the next record).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any

from ...errors import ConfigError, PmsimError
from ...tm.htm import HtmRunner, check
from ...trace import Mark
from ..base import Body, Tx
from ..mutation import Mutant, patch
from ..registry import register_mutant, register_runtime, variant
from .dudetx import SLOT, DudeTxRuntime, Record, end_word


class DudeTxHtmTx(Tx):
    """One transaction of HTM Perform: plain loads and stores on the shadow, logged writes."""

    def __init__(self, rt: DudeTxHtmRuntime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.drt = rt
        self.hw = False  # inside a hardware attempt (else under the SGL)
        self.undo: list[tuple[int, int]] = []  # SGL path: (shadow address, old value)
        self.ident = 0  # the ID taken for this transaction (0: none yet)
        self._q = rt.runner.quantum

    def load(self, saddr: int) -> int:
        """A load of the shadow (checked for an abort in hardware)."""
        v = int(self.cpu.load(saddr))
        if self.hw:
            check(self.cpu)
        return v

    def store(self, saddr: int, value: int) -> None:
        """dtmWrite: append ``(home, value)`` to the vlog, then store to the shadow."""
        rt, cpu = self.drt, self.cpu
        rt._append(cpu, self.tid, saddr, value)
        if not self.hw:
            self.undo.append((saddr, rt.m.peek(saddr)))
        cpu.store(saddr, value)
        if self.hw:
            check(cpu)

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        rt = self.drt
        self.cpu.work(rt.costs.call_ns)
        a = rt._shadow(obj + 8 * field, n)
        ld = self.cpu.load
        vals = [int(ld(a + 8 * i)) for i in range(n)]
        if self.hw:
            check(self.cpu)
        return vals

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        rt = self.drt
        self.cpu.work(rt.costs.call_ns)
        a = rt._shadow(obj + 8 * field, len(values))
        for i, v in enumerate(values):
            self.store(a + 8 * i, v)
        self.writes += 1

    def pause(self) -> Iterable[Any]:
        return self.cpu.maybe_yield(self._q)


@register_runtime
class DudeTxHtmRuntime(DudeTxRuntime):
    """DUDETx with Perform in hardware transactions; the ID by a conflict-exempt fetch-and-add."""

    name = "dudetx-htm"
    family = "dudetx"
    htm_budget = 5
    """Hardware attempts before the SGL (card §5: fallback after more than 5 failures)."""

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        super().__init__(machine, layout, costs)
        dram = machine.config.dram_region
        # the SGL takes the first line of the STM metadata area (HTM Perform uses no STM)
        self.runner = HtmRunner(machine, dram.base, budget=self.htm_budget)
        self._exempt_counter(machine)

    def _exempt_counter(self, machine: Any) -> None:
        """The hardware tweak of card §5: the ID counter's line is conflict-exempt."""
        machine.engine.htm_exempt(self._ctr)

    # -- Perform ---------------------------------------------------------------------------------
    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Perform ``body`` in hardware transactions (then under the SGL) on the shadow."""
        start = cpu.clock
        txid = self._next_txid(cpu)
        tid = cpu.tid
        cpu.mark(Mark.TX_BEGIN, txid)
        yield from self._wait_vlog(cpu, tid)
        tx = DudeTxHtmTx(self, cpu, txid)
        tx.start = start
        self.active[tid] = tx

        def attempt(hw: bool) -> Any:
            tx.hw = hw
            self._begin_attempt(tx)
            if on_begin is not None:
                on_begin(tx)
            return body(tx)

        def before_end(hw: bool) -> None:
            self._end_record(tx)

        def on_commit() -> Any:
            return self._committed(tx)

        def on_abort() -> None:
            st = cpu.store
            for a, old in reversed(tx.undo):
                st(a, old)
            self._vtail[tid] -= len(self._cur[tid])  # dtmAbort: pop the vlog
            self._cur[tid] = []
            self._discard(tx)

        def on_retry(status: int) -> None:
            if tx.ident:
                raise PmsimError(f"{self.name}: transaction {txid:#x} aborted after taking ID "
                                 f"{tx.ident}: the ID would be lost (a gap)")
            self._pop_attempt(tid)
            self._discard(tx)

        try:
            ok = yield from self.runner.run(cpu, attempt, on_commit, on_abort, on_retry,
                                            before_end)
        except BaseException:
            self._discard(tx)
            self._pop_attempt(tid)
            self.active[tid] = None
            raise
        if ok:
            self._release_frees(tx)
            self.commits += 1
        else:
            self.aborts += 1
            cpu.mark(Mark.TX_ABORT, txid)
        yield from self._finish(tx)
        return tx

    def _begin_attempt(self, tx: DudeTxHtmTx) -> None:
        """Start of an attempt (after XBEGIN or with the SGL held): nothing to take yet."""
        tx.undo.clear()

    def _discard(self, tx: DudeTxHtmTx) -> None:
        """An attempt ended without committing: its blocks go back, its frees are forgotten."""
        self._drop_allocs(tx)
        tx.frees.clear()
        tx.fresh.clear()
        tx.undo.clear()
        tx.writes = 0

    def _pop_attempt(self, t: int) -> None:
        """dtmAbort: pop the aborted attempt's vlog entries (the hardware discarded their
        stores; the runtime's cursor follows)."""
        self._vtail[t] -= len(self._cur[t])
        self._cur[t] = []

    def _append(self, cpu: Any, t: int, saddr: int, value: int) -> None:
        """Append ``(home, value)`` to thread ``t``'s vlog (transactional stores in hardware)."""
        slot = self._vtail[t]
        if slot + 1 - self._vhead[t] >= self._vslots:
            raise ConfigError(f"{self.name}: a transaction of thread {t} wrote more words than its "
                              f"PMSpec declares (the vlog of {self._vslots} slots is full): raise "
                              "PMSpec.max_tx_words")
        va = self._vlog[t] + SLOT * (slot % self._vslots)
        home = saddr - self._off
        cpu.store(va, home)
        cpu.store(va + 8, value)
        self._vtail[t] = slot + 1
        self._cur[t].append((home, value))

    def _end_slot(self, t: int) -> int:
        return self._vlog[t] + SLOT * (self._vtail[t] % self._vslots)

    def _end_record(self, tx: DudeTxHtmTx) -> None:
        """The last action before XEND (or, under the SGL, before the release): store the END
        slot (its line joins the write set), then, if still live, take the ID with the
        conflict-exempt fetch-and-add and write it into END. A read-only body takes no ID."""
        t, cpu = tx.tid, tx.cpu
        if not self._cur[t]:
            return
        va = self._end_slot(t)
        n = len(self._cur[t])
        cpu.store(va, end_word(0, n))
        cpu.store(va + 8, 0)
        if tx.hw and cpu.xstatus():
            return  # aborted by the END slot (capacity): no ID taken, xend reports the abort
        if not tx.ident:
            tx.ident = self._take_id(cpu)
        cpu.store(va, end_word(tx.ident, n))

    def _committed(self, tx: DudeTxHtmTx) -> Any:
        """After XEND (or before the SGL release): queue the record for Persist; the ID order is
        the serialization order (commit_order, TX_COMMIT)."""
        self._queue(tx)

    def _queue(self, tx: DudeTxHtmTx) -> None:
        t, cpu = tx.tid, tx.cpu
        entries = self._cur[t]
        if not entries:
            self._commit_read_only(cpu, tx)
            return
        if not tx.ident:
            raise PmsimError(f"{self.name}: transaction {tx.txid:#x} committed writes without an "
                             "ID")
        self._cur[t] = []
        slot = self._vtail[t]
        self._vtail[t] = slot + 1
        self._vq[t].append(Record(tx.ident, t, tx.txid, entries, slot - len(entries)))
        self.logged_entries += len(entries)
        self.commit_order.append(tx.txid)
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        self._queue_ack(t, tx.ident, tx)

    # -- allocation: bits in the shadow bitmap, logged like any write ---------------------------
    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        assert isinstance(tx, DudeTxHtmTx)
        word, mask = self.heap.bit_of(block)
        s = word + self._off
        old = tx.load(s)
        tx.store(s, old | mask if allocated else old & ~mask)

    def counters(self) -> dict[str, float]:
        """The base counters plus the HTM runner's (attempts, aborts by cause, fallbacks)."""
        out = dict(super().counters())
        for k, v in self.runner.total().as_dict().items():
            out[f"htm_{k}"] = float(v)
        return out


DUDETX_HTM_FINE = variant(DudeTxHtmRuntime, "dudetx-htm-fine", persist_batch_bytes=1,
                          reproduce_batch=2, persist_fair=False)
"""Persist batches of one record and Reproduce batches of two: every crash point's states can
be enumerated (as ``dudetx-fine``)."""


# -- mutants (card §6 M11, M12) ----------------------------------------------------------------

def id_after_xend(orig: Callable[..., Any]) -> Callable[..., Any]:
    """M12: END is written without an ID; the ID is taken after XEND, once other threads ran."""
    def _end_record(self: Any, tx: Any) -> None:
        t = tx.tid
        if self._cur[t]:
            va = self._end_slot(t)
            tx.cpu.store(va, end_word(0, len(self._cur[t])))
            tx.cpu.store(va + 8, 0)
    return _end_record


M12_DELAY_NS = 300.0
"""M12: simulated time an even thread spends between XEND and the late fetch-and-add (an
interrupt, or the contended counter line's miss; odd threads take it at once): in the model
nothing runs between two instructions of a thread unless it yields, so the mutant waits and
other threads commit and take IDs meanwhile."""


def take_id_late(orig: Callable[..., Any]) -> Callable[..., Any]:
    """M12: ``_committed`` is delayed after XEND (other threads run), then takes the ID."""
    def _committed(self: Any, tx: Any) -> Generator[Any, Any, None]:
        cpu = tx.cpu
        if self._cur[tx.tid]:
            if tx.tid % 2 == 0:
                yield from self.idle(cpu, M12_DELAY_NS)
            tx.ident = self._take_id(cpu)
            cpu.store(self._end_slot(tx.tid), end_word(tx.ident, len(self._cur[tx.tid])))
        self._queue(tx)
    return _committed


def keep_aborted_entries(orig: Callable[..., Any]) -> Callable[..., Any]:
    """M11: the vlog appends are not transactional, so a hardware abort leaves the attempt's
    entries in the vlog and the next record carries them (only a user abort pops)."""
    def _pop_attempt(self: Any, t: int) -> None:
        return None
    return _pop_attempt


for _m in (
    Mutant("dudetx-htm:M12", DudeTxHtmRuntime,
           (patch("_end_record", id_after_xend, "no ID before XEND"),
            patch("_committed", take_id_late, "ID after XEND")),
           why="the ID is taken after XEND and other threads run in between: a later committer "
               "gets the lower ID and Reproduce applies the older write last (no crash needed: "
               "the final NVM differs from the serial oracle)", needs="two worker threads "
               "whose transactions read each other's writes", threads=2,
           workload="pmsim.runtimes.dudetx.mutants:Claim"),
    Mutant("dudetx-htm:M11", DUDETX_HTM_FINE,
           (patch("_pop_attempt", keep_aborted_entries, "vlog appends outside the region"),),
           why="vlog appends are non-transactional: an aborted attempt's entries are persisted "
               "and reproduced with the next record", needs="two worker threads with a conflict "
               "abort whose retry writes another word", threads=2,
           workload="pmsim.runtimes.dudetx.mutants:Claim"),
):
    register_mutant(_m)

__all__ = ["DUDETX_HTM_FINE", "DudeTxHtmRuntime", "DudeTxHtmTx"]
